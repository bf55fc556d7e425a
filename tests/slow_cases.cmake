# Run by ctest as it reads the tests (TEST_INCLUDE_FILES, tests/CMakeLists.txt), after doctest's
# list of tinyt_tests' cases: labels "slow" the cases of test_backends_agree.cpp, which `make test`
# leaves to `make test-all`, and "same_in_every_build": they compare kernels that the C compiler and
# libLLVM build at run time, the same in the g++ and the clang build, so `make test-clang` leaves
# them out. Their names start with "backends: " (one prefix per file).
foreach(test IN LISTS tinyt_tests_TESTS)
  if(test MATCHES "^backends: ")
    set_tests_properties("${test}" PROPERTIES LABELS "slow;same_in_every_build")
  endif()
endforeach()
