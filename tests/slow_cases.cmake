# Run by ctest as it reads the tests (TEST_INCLUDE_FILES, tests/CMakeLists.txt), after doctest's
# list of tinyt_tests' cases: labels "slow" the cases of test_backends_agree.cpp, which `make test`
# (and so `make test-clang`) leaves to `make test-all`. Their names start with "backends: " (one
# prefix per file).
foreach(test IN LISTS tinyt_tests_TESTS)
  if(test MATCHES "^backends: ")
    set_tests_properties("${test}" PROPERTIES LABELS "slow")
  endif()
endforeach()
