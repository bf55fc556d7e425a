// doctest's main(), compiled once and linked into every test executable.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

// A check a test executable may run after its tests (test_cuda.cpp's: every kernel the run
// compiled also compiles for CUDA); absent in executables that do not define it.
int tinyt_test_after_run() __attribute__((weak));

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int failed = context.run();
  if (context.shouldExit()) return failed;
  return failed != 0 ? failed : tinyt_test_after_run ? tinyt_test_after_run() : 0;
}
