# Runs PROGRAM and fails unless what it prints is EXPECTED, byte for byte.
execute_process(COMMAND ${PROGRAM} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} exited with ${rc}; it printed:\n${out}")
endif()
file(READ ${EXPECTED} expected)
if(NOT out STREQUAL expected)
  message(FATAL_ERROR "${PROGRAM} printed\n${out}\ninstead of (${EXPECTED})\n${expected}")
endif()
