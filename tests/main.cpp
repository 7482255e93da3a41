// Test runner: Catch2 v2 with a count of GPU tests skipped for want of a GPU.
#define CATCH_CONFIG_RUNNER
#include "test_util.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  int result = Catch::Session().run(argc, argv);
  int skipped = gt::test::gpu_skips();
  if (skipped > 0) {
    std::fprintf(stderr, "\n*** %d GPU test(s) SKIPPED: %s ***\n", skipped, gt::test::no_gpu_reason().c_str());
    if (result == 0 && std::getenv("GEMMTUNE_SKIP_CODE")) return std::atoi(std::getenv("GEMMTUNE_SKIP_CODE"));
  }
  return result;
}
