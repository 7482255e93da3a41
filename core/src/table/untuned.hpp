// The runtime's record of untuned problems (GEMMTUNE_RECORD_UNTUNED, Options::record_untuned):
// every problem it answered without an exact entry, appended to a job file that
// `gemmtune tune --config FILE` reads as it is. Record, then tune, merge and export: the next
// table holds the exact entries (docs/using-tables.md, "Record, then tune").
#pragma once

#include "base/problem.hpp"

#include <filesystem>
#include <string>

namespace gt {

// The job text of one problem: a [[problems]] set of its own, with its leading dimensions and
// alignment, so that a tune of it stores results under the problem's own key. Its first line,
// "[[problems]]  # KEY lda=.. ldb=.. ldc=..", names it (a file holds each problem once).
std::string untuned_job_block(const Problem& p);

// Appends p's block to `file` unless the file holds it already, under an exclusive lock
// (several processes may record into one file); a new file starts with a comment saying what
// it is. true: appended. RuntimeFailure with the system's reason when it cannot be written.
bool record_untuned(const std::filesystem::path& file, const Problem& p);

}  // namespace gt
