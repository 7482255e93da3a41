// The runtime's online check (docs/lookup.md, "Backed answers"): where a table's nearest answer
// for a problem is a transfer no evidence backs, the runtime may time it against the library's
// default on the problem's first calls, keep the faster, and write the decision to a file, so
// that the next process that uses the table answers the same without timing again.
#pragma once

#include "gpu/device.hpp"
#include "table/table.hpp"

#include <cuda_runtime_api.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

namespace gt {

class Runnable;

// Where a table's decisions go unless named: beside it, "TABLE.online.jsonl".
std::filesystem::path default_online_file(const std::filesystem::path& table);

// Whether the online check keeps the transfer: it must run faster than the default by the margin
// (kOnlineMargin, 1 %). Why: the promise is never to be slower than the default, and a transfer
// within the timing's noise of it gains nothing worth that risk; a tie keeps the default.
inline bool keep_candidate(double candidate_us, double default_us) {
  return candidate_us * (1.0 + kOnlineMargin) <= default_us;
}

// The decisions of one file: one JSON object per line, {"device", "problem" (the key text),
// "candidate", "default", "kept": "candidate" | "default", "candidate_us", "default_us", "at"};
// the last line of a (device, problem, candidate) counts. Several processes may append to it.
class OnlineDecisions {
 public:
  // Reads what `file` holds (nothing when it does not exist). Lines that are not decisions are
  // skipped, and warning() says so.
  explicit OnlineDecisions(std::filesystem::path file);
  std::optional<OnlineVerdict> find(const std::string& device, const std::string& problem,
                                    const std::string& candidate) const;
  // Keeps the verdict, and appends it to the file. Where the file cannot be written, the
  // decisions are kept in this process only, and warning() says why (once).
  void record(const std::string& device, const std::string& problem, OnlineVerdict v);
  const std::filesystem::path& file() const { return file_; }
  // What went wrong with the file since the last call ("": nothing), each problem once.
  std::string take_warning();

 private:
  using Key = std::tuple<std::string, std::string, std::string>;  // device, problem, candidate
  std::filesystem::path file_;
  mutable std::mutex mu_;
  std::map<Key, OnlineVerdict> decided_;
  bool writable_ = true;
  std::string warning_;
};

// Operands of a problem in buffers of their own (A, B, C and an FP8 problem's scales), A and B
// drawn iid normal (zeros run faster than real data): what the online check times on, never the
// caller's buffers.
class ScratchOperands {
 public:
  ScratchOperands(const Problem& p, cudaStream_t s);
  Operands operands() const;

 private:
  DeviceBuffer a_, b_, c_, sa_, sb_;
};

// Median time per call, in microseconds, of `a` and of `b` on `stream`, in interleaved rounds of
// `calls` back-to-back calls each (after one warm-up round), timed with CUDA events on the
// stream. Synchronises the stream. RuntimeFailure with CUDA's reason on a failed launch.
std::pair<double, double> time_interleaved(const Runnable& a, const Runnable& b, const Operands& ops,
                                           cudaStream_t stream, int rounds = 7, int calls = 3);

}  // namespace gt
