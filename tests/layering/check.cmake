# Fails when HEADER, alone, includes a header under one of the folders FORBID names (a list):
# includes point one way, down the pipeline (docs: DESIGN.md), so a low layer that reached up
# into a later stage's folder would tie the two together again. The compiler lists what the
# header really includes (-M), through every header in between.
cmake_minimum_required(VERSION 3.25)  # cmake_path
list(TRANSFORM INCLUDE_DIRS PREPEND "-I")
execute_process(COMMAND ${CXX} -std=c++20 ${INCLUDE_DIRS} -M -x c++ ${ROOT}/include/tinyt/${HEADER}
                OUTPUT_VARIABLE deps RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "listing the headers of ${HEADER} failed:\n${err}")
endif()
string(REGEX MATCHALL "include/tinyt/[A-Za-z0-9_./]+\\.hpp" included "${deps}")
set(found 0)
foreach(path IN LISTS included)
  cmake_path(NORMAL_PATH path)  # backend/../device.hpp is device.hpp
  foreach(folder IN LISTS FORBID)
    if(path MATCHES "^include/tinyt/${folder}/")
      message(SEND_ERROR "${HEADER} includes ${path}, from ${folder}/, a later stage")
      set(found 1)
    endif()
  endforeach()
endforeach()
list(LENGTH included count)
if(count EQUAL 0)
  message(FATAL_ERROR "found no tinyt header in what ${HEADER} includes: the listing is not what this check reads")
endif()
if(NOT found)
  message(STATUS "${HEADER}: ${count} headers, none from ${FORBID}")
endif()
