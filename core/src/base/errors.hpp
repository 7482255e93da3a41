// The three kinds of failure the command line distinguishes (cli.md exit codes).
#pragma once
#include <stdexcept>
#include <string>

namespace gt {

// Bad input or usage: what was wrong and where. Exit code 2. Thrown before any GPU work.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A GPU is needed and none was found. Exit code 3.
struct NoGpuError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Anything else that went wrong at run time (CUDA, NVRTC, SQLite, a plugin). Exit code 1.
struct RuntimeFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace gt
