# Thin wrapper over CMake; run from the repository root.
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
MAKEFLAGS += --no-print-directory
CMAKE_CONFIGURE = cmake --log-level=WARNING -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)
FORMAT_DIRS = $(wildcard include tests examples benchmarks)

.PHONY: test example bench sanitize amalgamate format clean
.DEFAULT_GOAL := test

test:
	tools/setup.sh
	$(CMAKE_CONFIGURE) -S . -B build
	cmake --build build -j$(JOBS)
	ctest --test-dir build --output-on-failure -j$(JOBS)

example:
	tools/setup.sh
	$(CMAKE_CONFIGURE) -S . -B build
	cmake --build build -j$(JOBS) --target demo fashion_mnist
	build/examples/demo
	build/examples/fashion_mnist

bench:
	tools/setup.sh
	$(CMAKE_CONFIGURE) -S . -B build
	cmake --build build -j$(JOBS) --target $(patsubst benchmarks/%.cpp,bench_%,$(wildcard benchmarks/*.cpp))

sanitize:
	tools/setup.sh
	$(CMAKE_CONFIGURE) -DTINYT_SANITIZE=ON -S . -B build-asan
	cmake --build build-asan -j$(JOBS)
	ctest --test-dir build-asan --output-on-failure -j$(JOBS)

amalgamate:
	python3 tools/amalgamate.py

format:
	find $(FORMAT_DIRS) -name '*.hpp' -o -name '*.cpp' | xargs -r clang-format -i

clean:
	rm -rf build build-asan
