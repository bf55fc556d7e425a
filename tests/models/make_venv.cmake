# Included by the scripts that install from PyPI: makes the virtual environment VENV with PYTHON
# unless it is there, and sets `python` to its interpreter.
set(python ${VENV}/bin/python)
if(NOT EXISTS ${python})
  execute_process(COMMAND ${PYTHON} -m venv ${VENV} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cannot make a virtual environment at ${VENV} (python3-venv installed?)")
  endif()
endif()
