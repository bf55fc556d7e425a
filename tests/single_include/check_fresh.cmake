# Regenerates the amalgamation into FRESH and fails when single_include/tinyt.hpp differs from it.
execute_process(COMMAND ${PYTHON} ${ROOT}/tools/amalgamate.py --output ${FRESH}
                COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${FRESH} ${ROOT}/single_include/tinyt.hpp
                RESULT_VARIABLE stale)
if(stale)
  message(FATAL_ERROR "single_include/tinyt.hpp is stale: run `make amalgamate` and commit it.")
endif()
