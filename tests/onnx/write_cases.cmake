# Writes test cases into the build folder with a script of the project (tools/onnx_node_tests.py,
# tools/onnx_model_references.py) run in a virtual environment there, into which pip installs the
# pinned packages it needs from PyPI: once per set of versions and version of the script. Fails
# loudly when pip cannot install them: the tests of those cases must not pass silently.
#   -D PYTHON=python3 -D VENV=<dir> -D OUT=<dir> -D SCRIPT=<script.py> -D PACKAGES=a==1,b==2
#   [-D FILES_ONLY=c==3,d==4]   (packages whose files are used, installed without their dependencies)
cmake_minimum_required(VERSION 3.25)
string(REPLACE "," ";" packages "${PACKAGES}")
string(REPLACE "," ";" files_only "${FILES_ONLY}")
file(MD5 ${SCRIPT} script_hash)
string(MD5 stamp "${PACKAGES};${FILES_ONLY};${script_hash}")
if(EXISTS ${OUT}/written_${stamp})
  return()
endif()
include(${CMAKE_CURRENT_LIST_DIR}/../models/make_venv.cmake)
execute_process(COMMAND ${python} -m pip install --disable-pip-version-check -q ${packages} RESULT_VARIABLE rc)
if(rc EQUAL 0 AND files_only)
  execute_process(COMMAND ${python} -m pip install --disable-pip-version-check -q --no-deps ${files_only} RESULT_VARIABLE rc)
endif()
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PACKAGES} ${FILES_ONLY} COULD NOT BE INSTALLED FROM PyPI: the cases of ${SCRIPT} cannot be written")
endif()
file(REMOVE_RECURSE ${OUT})
execute_process(COMMAND ${python} -W ignore ${SCRIPT} ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${SCRIPT} failed")
endif()
file(TOUCH ${OUT}/written_${stamp})
