# Runs PROGRAM with DEV=CPU and with DEV=${DEVICE}: both must succeed and print the same, once the
# device's name in printed tensors (device=CL) reads as the CPU's.
foreach(dev CPU ${DEVICE})
  execute_process(COMMAND ${CMAKE_COMMAND} -E env DEV=${dev} ${PROGRAM}
                  OUTPUT_VARIABLE out_${dev} ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${PROGRAM} with DEV=${dev} failed (${rc}):\n${out_${dev}}\n${err}")
  endif()
endforeach()
string(REPLACE "device=${DEVICE}" "device=CPU" normalized "${out_${DEVICE}}")
if(NOT normalized STREQUAL out_CPU)
  message(FATAL_ERROR "${PROGRAM} prints differently with DEV=${DEVICE}:\n--- CPU\n${out_CPU}\n--- ${DEVICE}\n${out_${DEVICE}}")
endif()
message(STATUS "the same output on CPU and ${DEVICE}")
