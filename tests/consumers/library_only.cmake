# `cmake -DBUILD_TESTING=OFF`, build, install: what someone who only installs tinyt runs. It must
# define the library's two targets and nothing else (no test, example, benchmark or tool: the
# CMake file API lists every target the configure made, whether built by default or not), compile
# src/tinyt.cpp and src/onnx.cpp alone, and install the library with its CMake package. A fresh folder each time,
# BUILD; tinyt's sources at TINYT_SOURCE, the compiler CXX and its launcher LAUNCHER (may be empty).
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/targets.cmake)
file(REMOVE_RECURSE ${BUILD})
tinyt_query_targets(${BUILD})
execute_process(COMMAND ${CMAKE_COMMAND} -S ${TINYT_SOURCE} -B ${BUILD} -DBUILD_TESTING=OFF -DCMAKE_CXX_COMPILER=${CXX}
                        -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER}
                RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "library only: configuring with BUILD_TESTING=OFF failed")
endif()

tinyt_targets(${BUILD} targets)
if(NOT targets STREQUAL "tinyt")
  message(FATAL_ERROR "library only: BUILD_TESTING=OFF defines the targets '${targets}', not the library alone")
endif()

execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD} -j 2 RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "library only: building failed")
endif()
file(GLOB_RECURSE objects RELATIVE ${BUILD} ${BUILD}/*.o)
list(SORT objects)
if(NOT objects STREQUAL "CMakeFiles/tinyt.dir/src/onnx.cpp.o;CMakeFiles/tinyt.dir/src/tinyt.cpp.o")
  message(FATAL_ERROR "library only: the build compiled '${objects}', not src/tinyt.cpp and src/onnx.cpp alone")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD} --prefix ${BUILD}/prefix RESULT_VARIABLE failed)
file(GLOB_RECURSE installed RELATIVE ${BUILD}/prefix ${BUILD}/prefix/*libtinyt.a ${BUILD}/prefix/*/tinytConfig.cmake)
list(LENGTH installed found)
if(failed OR NOT found EQUAL 2)
  message(FATAL_ERROR "library only: installing failed (${failed}) or left out the library or its package: '${installed}'")
endif()
message(STATUS "library only: targets ${targets}, compiled ${objects}, installed ${installed}")
