# Unpacks wgpu-native (the library and its C headers) from PyPI's pinned `wgpu` wheel into the
# build folder: once per version. Fails loudly when pip cannot download it: the WebGPU tests must
# not pass silently.
# (pip runs in a virtual environment of the build folder: Debian's python3 has no pip of its own)
#   -D PYTHON=python3 -D VENV=<dir> -D OUT=<dir> -D WHEEL=wgpu==0.32.0
cmake_minimum_required(VERSION 3.25)
if(EXISTS ${OUT}/unpacked_${WHEEL})
  return()
endif()
file(REMOVE_RECURSE ${OUT})
include(${CMAKE_CURRENT_LIST_DIR}/../models/make_venv.cmake)
execute_process(COMMAND ${python} -m pip download --disable-pip-version-check -q --no-deps --only-binary=:all: ${WHEEL} -d ${OUT}/download
                RESULT_VARIABLE rc)
file(GLOB wheel ${OUT}/download/*.whl)
if(NOT rc EQUAL 0 OR NOT wheel)
  message(FATAL_ERROR "${WHEEL} COULD NOT BE DOWNLOADED FROM PyPI: the WebGPU library is missing")
endif()
# the wheel's wgpu/resources/: libwgpu_native-release.so, webgpu.h, wgpu.h
execute_process(COMMAND ${python} -c "
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for name in ('libwgpu_native-release.so', 'webgpu.h', 'wgpu.h'):
        with open(sys.argv[2] + '/' + name, 'wb') as f:
            f.write(z.read('wgpu/resources/' + name))
" ${wheel} ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${wheel} has no wgpu/resources/libwgpu_native-release.so")
endif()
file(REMOVE_RECURSE ${OUT}/download)
file(TOUCH ${OUT}/unpacked_${WHEEL})
