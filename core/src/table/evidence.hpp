// Evidence for transfers (docs/lookup.md, "Backed answers"). `gemmtune validate` times, on a GPU,
// each entry's neighbours' answers at the entry's shape (leave-one-out: the table without that
// entry, asked for its problem) against the library's default there, and stores every timing;
// `export` turns them into the table's evidence: per (entry, rule), the neighbourhood in which
// every answer timed held within the tolerance.
#pragma once

#include "store/store.hpp"
#include "table/table.hpp"

#include <string>
#include <vector>

namespace gt {

// How much slower than the default a transfer's answer may run and still count as held: 1 %,
// the noise of one interleaved timing and the bound tools/bench_lookup.py and bench_torch.py
// hold the answers to.
inline constexpr double kDefaultTolerance = 0.01;

// One timing of validate: the answer of entry `from` at entry `at`'s problem, against the default.
struct Validation {
  ResultKey at;    // the problem timed (the held-out entry's key; its device: the GPU)
  ResultKey from;  // the neighbour entry whose answer was timed
  std::string from_family, from_config;  // its family and config (the family's name)
  Transform from_transform = Transform::none;
  Rule rule = Rule::nearest;            // how it answered at `at`: nearest, transferred or adapted
  std::string family, config;           // the answer timed (the family's config name) ...
  Transform transform = Transform::none;  // ... and its transform
  std::string default_config;           // the default timed beside it (its transformed name)
  double distance = 0;                  // log-space, from `from` to `at`
  double answer_us = 0, default_us = 0;  // the interleaved figures (answer NaN: it failed to run or verify)
  std::string answer_status = "ok";     // the answer's measurement status (not ok: never held)
  double tolerance = kDefaultTolerance;
  bool held = false;                    // answer_us <= default_us * (1 + tolerance)
  bool replay = false;                  // timed on a recording, not a GPU
  std::string measured_at;              // UTC ISO 8601
  double time_unix = 0;
  std::string tune_id;

  double ratio() const { return answer_us / default_us; }
  ValidationRow row() const;
  // InputError naming the store when the record does not read as a validation.
  static Validation from_row(const ValidationRow& r);
};

// Whether an answer timed at `answer_us` holds against the default's `default_us`.
inline bool transfer_held(double answer_us, double default_us, double tolerance) {
  return answer_us <= default_us * (1.0 + tolerance);  // NaN (failed) never holds
}

// The table's evidence from validations of its entries: for each entry and rule, the timings of
// its answers (the entry's own config, family and transform when timed: others are stale), in
// order of distance, up to the first that did not hold; kept where at least one held. Replayed
// timings count only with include_replay. `notes` (optional) says what was left out and why.
std::vector<TransferEvidence> evidence_of(const LookupTable& t, const std::vector<Validation>& vs, bool include_replay,
                                          std::vector<std::string>* notes = nullptr);

// The store's validations (all, or one device's), read.
std::vector<Validation> stored_validations(const Store& s, const std::optional<std::string>& device = std::nullopt);

}  // namespace gt
