# Writes the random LLaMA models of tests/models/test_llama_geometries.cpp into OUT with
# tests/data/make_llama_geometries.py, in a virtual environment VENV with NumPy and the pinned
# gguf package (pip, once). A file already there with its sha256 file is kept. Fails loudly when
# pip or the script fails: the tests that read the files must not pass silently.
#   -D PYTHON=python3 -D VENV=<dir> -D SCRIPT=<make_llama_geometries.py> -D OUT=<dir>
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/make_venv.cmake)
execute_process(COMMAND ${python} -c "import numpy, gguf" RESULT_VARIABLE rc ERROR_QUIET)
if(NOT rc EQUAL 0)
  message(STATUS "installing numpy and gguf==0.19.0 from PyPI into ${VENV}")
  execute_process(COMMAND ${python} -m pip install --disable-pip-version-check numpy gguf==0.19.0 RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "NUMPY AND GGUF COULD NOT BE INSTALLED FROM PyPI: the tests that read the models fail")
  endif()
endif()
# SmolLM's geometry with 2 layers in every type, TinyLlama's with 1 in Q4_0 (test_llama_geometries.cpp)
foreach(model "smollm;2;f16,q8_0,q4_0" "tinyllama;1;q4_0")
  list(GET model 0 geometry)
  list(GET model 1 layers)
  list(GET model 2 types)
  execute_process(COMMAND ${python} ${SCRIPT} ${OUT} --geometry ${geometry} --layers ${layers} --types ${types} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${SCRIPT} failed for ${geometry}: the tests that read the models fail")
  endif()
endforeach()
