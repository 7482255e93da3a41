// Helpers shared by the tests: GPU skipping, paths to the build's plugins and binary,
// temporary directories, running the CLI.
#pragma once

#include <filesystem>
#include <string>

namespace gt::test {

bool have_gpu();
std::string no_gpu_reason();
int gpu_skips();
void count_gpu_skip();

std::filesystem::path plugin_dir();       // the build's plugins
std::filesystem::path test_plugin_dir();  // the deliberately broken ones
std::filesystem::path gemmtune_binary();
std::filesystem::path source_dir();

// A fresh directory under the system's temp dir, removed on destruction.
struct TempDir {
  TempDir();
  ~TempDir();
  std::filesystem::path path;
};

struct CommandResult {
  int exit_code;
  std::string out;  // stdout and stderr together
};
// Runs a shell command line, capturing its output.
CommandResult run_command(const std::string& cmdline);

}  // namespace gt::test

// First line of a [gpu] test: without a GPU the test is counted as skipped, says why, and
// returns (Catch2 v2 has no SKIP).
#define GT_REQUIRE_GPU()                                                   \
  do {                                                                     \
    if (!gt::test::have_gpu()) {                                           \
      gt::test::count_gpu_skip();                                          \
      WARN("SKIPPED (no GPU): " << gt::test::no_gpu_reason());             \
      return;                                                              \
    }                                                                      \
  } while (0)

#include "evaluate.hpp"

namespace gt::test {
// Verifies (and, with time_it, times quickly) one config on GPU 0 with fresh inputs.
Measurement gpu_check(const Family& fam, const Problem& p, const Config& c, bool time_it = false);
// The plugins of the build, loaded once.
const PluginRegistry& plugins();
}  // namespace gt::test
