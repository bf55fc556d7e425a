# One file, one command: program.cpp (SOURCE) compiled as its own implementation file with nothing
# of tinyt on the include path but the amalgamated header (INCLUDE), then run.
file(MAKE_DIRECTORY ${BUILD})
execute_process(COMMAND ${CXX} -std=c++20 -DTINYT_IMPLEMENTATION "-DEXPECTED_VERSION=\"${VERSION}\"" -I${INCLUDE}
                        ${SOURCE} -o ${BUILD}/one_file -ldl -lpthread
                RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "consumer (single file): compiling failed")
endif()
execute_process(COMMAND ${BUILD}/one_file OUTPUT_VARIABLE out RESULT_VARIABLE failed)
if(failed OR NOT out STREQUAL "tinyt ${VERSION}: ok\n")
  message(FATAL_ERROR "consumer (single file): exited with ${failed} and printed '${out}'")
endif()
