# Builds the consumer project (tests/consumers/CMakeLists.txt) in BUILD with HOW and runs its
# programs, which must print "tinyt VERSION: ok". The same compiler as tinyt's build (CXX) and
# its ccache (LAUNCHER, may be empty); no build type, so tinyt's own code builds fastest (kernels
# are compiled at run time whatever it is). With HEADER_ONLY off only the library's program is
# built (the header-only one compiles all of tinyt into it: a minute more).
# With REFUSED on, find_package must refuse REQUIRE_VERSION instead, with CMake's message.
# FetchContent takes a commit, so that a build folder from an earlier HEAD fetches the new one
if(HOW STREQUAL "fetch_content")
  execute_process(COMMAND git -C ${TINYT_SOURCE} rev-parse ${TINYT_COMMIT} OUTPUT_VARIABLE TINYT_COMMIT
                  OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
endif()
set(configure ${CMAKE_COMMAND} -S ${SOURCE} -B ${BUILD} -DHOW=${HOW} -DEXPECTED_VERSION=${VERSION}
    -DREQUIRE_VERSION=${REQUIRE_VERSION} -DTINYT_SOURCE=${TINYT_SOURCE} -DTINYT_COMMIT=${TINYT_COMMIT}
    -DCMAKE_PREFIX_PATH=${PREFIX} -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
include(${CMAKE_CURRENT_LIST_DIR}/targets.cmake)
tinyt_query_targets(${BUILD})
execute_process(COMMAND ${configure} RESULT_VARIABLE failed OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(REFUSED)
  # find_package must refuse the version asked for, naming it and the one it found; any other
  # failure (a typo, a missing dependency) is not the refusal this checks
  set(refusal "compatible with requested version \"${REQUIRE_VERSION}\".*considered but not accepted:.*tinytConfig\\.cmake, version: ${VERSION}")
  string(REGEX REPLACE "[ \n]+" " " flat "${out}")  # CMake wraps its messages
  if(failed AND flat MATCHES "${refusal}")
    message(STATUS "consumer (${HOW}): version ${REQUIRE_VERSION} refused, as it must be")
    return()
  endif()
  message(FATAL_ERROR "consumer (${HOW}): configuring did not refuse version ${REQUIRE_VERSION} as find_package does "
                      "(exit ${failed}); expected a match of '${refusal}'")
endif()
if(failed)
  message(FATAL_ERROR "consumer (${HOW}): configuring failed")
endif()
# tinyt is not the top-level project here: it defines its library, none of its tests, examples
# or tools
tinyt_targets(${BUILD} targets)
list(REMOVE_ITEM targets consumer consumer_header_only)
if(NOT targets STREQUAL "" AND NOT targets STREQUAL "tinyt")
  message(FATAL_ERROR "consumer (${HOW}): tinyt defined the targets '${targets}' besides its library")
endif()
set(programs consumer)
if(HEADER_ONLY)
  list(APPEND programs consumer_header_only)
endif()
foreach(program ${programs})
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD} --target ${program} -j 2 RESULT_VARIABLE failed)
  if(failed)
    message(FATAL_ERROR "consumer (${HOW}): building ${program} failed")
  endif()
  execute_process(COMMAND ${BUILD}/${program} OUTPUT_VARIABLE out RESULT_VARIABLE failed)
  if(failed OR NOT out STREQUAL "tinyt ${VERSION}: ok\n")
    message(FATAL_ERROR "consumer (${HOW}): ${program} exited with ${failed} and printed '${out}'")
  endif()
endforeach()
