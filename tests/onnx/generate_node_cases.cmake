# Writes the ONNX conformance suite's node cases into the build folder, from the onnx package
# (pinned) installed from PyPI into a virtual environment there (tools/onnx_node_tests.py), once
# per version. Fails loudly when pip cannot install it: the node cases must not pass silently.
#   -D PYTHON=python3 -D VENV=<dir> -D OUT=<dir> -D SCRIPT=<tools/onnx_node_tests.py>
cmake_minimum_required(VERSION 3.25)
set(version 1.23.2)
if(EXISTS ${OUT}/written_by_onnx_${version})
  return()
endif()
include(${CMAKE_CURRENT_LIST_DIR}/../models/make_venv.cmake)
execute_process(COMMAND ${python} -m pip install --disable-pip-version-check -q onnx==${version} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "onnx==${version} COULD NOT BE INSTALLED FROM PyPI: the ONNX node cases cannot be written")
endif()
file(REMOVE_RECURSE ${OUT})
execute_process(COMMAND ${python} -W ignore ${SCRIPT} ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${SCRIPT} failed")
endif()
file(TOUCH ${OUT}/written_by_onnx_${version})
