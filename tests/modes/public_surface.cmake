# Fails when a file that includes tinyt.hpp in the compiled mode parses more than the public
# headers: an engine header there (the scheduler, codegen, a backend) or a system header for
# processes, files, threads or dynamic loading would bring back the compile time that the split
# into declarations and implementation (include/tinyt/config.hpp) took away.
cmake_minimum_required(VERSION 3.25)  # if(IN_LIST)
list(TRANSFORM INCLUDE_DIRS PREPEND "-I")
execute_process(COMMAND ${CXX} -std=c++20 ${INCLUDE_DIRS} -M ${SOURCE}
                OUTPUT_VARIABLE deps RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "listing the headers of ${SOURCE} failed:\n${err}")
endif()
set(public config version error dtype uop shape helpers device dist profile viz tensor expr static_tensor jit nn/state nn/layers nn/optim
    nn/safetensors nn/gguf nn/datasets)
string(REGEX MATCHALL "include/tinyt/[A-Za-z0-9_/]+\\.hpp" tinyt_headers "${deps}")
foreach(header IN LISTS tinyt_headers)
  string(REGEX REPLACE "include/tinyt/(.+)\\.hpp" "\\1" name "${header}")
  if(NOT name IN_LIST public)
    message(FATAL_ERROR "tinyt.hpp includes ${header}, which is not a public header")
  endif()
endforeach()
foreach(system filesystem thread fstream spawn.h dlfcn.h sys/wait.h)
  if(deps MATCHES "/${system}[ \n]")
    message(FATAL_ERROR "tinyt.hpp includes <${system}>")
  endif()
endforeach()
