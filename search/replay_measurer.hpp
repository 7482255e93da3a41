// Recorded measurements as the tune loop's Measurer: `gemmtune tune --replay FILE` runs the
// same search, store and summary with no GPU, and says everywhere that it is a replay.
#pragma once

#include "measurer.hpp"
#include "provenance.hpp"
#include "replay.hpp"
#include "store.hpp"

#include <functional>

namespace gt::search {

class ReplayMeasurer : public Measurer {
 public:
  explicit ReplayMeasurer(const Recording& rec);
  std::string describe() const override;
  bool is_replay() const override { return true; }
  const DeviceInfo& device() const override { return dev_; }
  void set_problem(const Problem& p, Distribution d, uint64_t seed) override;
  Measurement measure(const Candidate& c, bool quick) override;
  double settle(const Candidate&, double) override { return 0; }
  Retimed retime(const std::vector<Candidate>& cs, const Interleave& how, uint64_t seed) override;

 private:
  const Recording& rec_;
  DeviceInfo dev_;
  std::string problem_key_;
};

// The provenance of replayed rows: the recording's device, "replay" as the toolchain.
Provenance replay_provenance(const Recording& rec, const std::string& family, const std::string& input_dist, bool quick);

// What a tune run (tune_id) measured, as a recording: one space per (problem, family), the
// exploration outcome of every config (finalists' re-timings are not recorded again).
Recording recording_from_store(const Store& store, const std::string& tune_id,
                               const std::function<Space(const std::string&, const Problem&)>& space_of);

}  // namespace gt::search
