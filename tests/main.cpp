// doctest's main(), compiled once and linked into every test executable.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

// A check a test executable may run after its tests (test_cuda.cpp's: every kernel the run
// compiled also compiles for CUDA); absent in executables that do not define it.
int tinyt_test_after_run() __attribute__((weak));

// LeakSanitizer (sanitizer builds) reads its default suppressions here: leaks inside vendor
// libraries tinyt opens, not in tinyt. PoCL, the OpenCL driver the tests run, keeps 16 bytes of a
// program build it never frees.
extern "C" const char* __lsan_default_suppressions() { return "leak:libpocl.so\n"; }

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int failed = context.run();
  if (context.shouldExit()) return failed;
  return failed != 0 ? failed : tinyt_test_after_run ? tinyt_test_after_run() : 0;
}
