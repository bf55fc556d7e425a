# Builds the consumer project (tests/consumers/CMakeLists.txt) in BUILD with HOW and runs its
# programs, which must print "tinyt VERSION: ok". The same compiler as tinyt's build (CXX) and
# its ccache (LAUNCHER, may be empty); no build type, so tinyt's own code builds fastest (kernels
# are compiled at run time whatever it is). With HEADER_ONLY off only the library's program is
# built (the header-only one compiles all of tinyt into it: a minute more).
# FetchContent takes a commit, so that a build folder from an earlier HEAD fetches the new one
if(HOW STREQUAL "fetch_content")
  execute_process(COMMAND git -C ${TINYT_SOURCE} rev-parse ${TINYT_COMMIT} OUTPUT_VARIABLE TINYT_COMMIT
                  OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
endif()
set(configure ${CMAKE_COMMAND} -S ${SOURCE} -B ${BUILD} -DHOW=${HOW} -DEXPECTED_VERSION=${VERSION}
    -DREQUIRE_VERSION=${REQUIRE_VERSION} -DTINYT_SOURCE=${TINYT_SOURCE} -DTINYT_COMMIT=${TINYT_COMMIT}
    -DCMAKE_PREFIX_PATH=${PREFIX} -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
execute_process(COMMAND ${configure} RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "consumer (${HOW}): configuring failed")
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
