// Recorded measurements as the tune loop's Measurer: `gemmtune tune --replay FILE` runs the
// same search, finalists' re-timing, margin, store and summary with no GPU, and says
// everywhere that it is a replay. It simulates the recorded run:
//  - a measurement answers the recorded exploration outcome;
//  - a re-timing answers each config's recorded re-timing where the recording has one, else
//    its exploration figure (times the space's re-timed / explored ratio where the recording
//    has both for some configs), never faster than the recording's measured roofline at the
//    problem (exploration timings may catch the boost clock; the roofs are sustained); every
//    figure says which it was (Retimed::notes);
//  - a clock advances by what the recorded GPU would have spent: each config's recorded
//    compile seconds (on the recording's compile threads, ahead of the GPU) and measure
//    seconds, the settle, and the re-timings' turns. Where the recording holds no times
//    (version 1), they are estimated from the timing method (estimated_measure_s): the clock
//    then says so (clock_estimated()). Time budgets read this clock (Tuner::now).
#pragma once

#include "measure/measurer.hpp"
#include "measure/provenance.hpp"
#include "replay/replay.hpp"
#include "store/store.hpp"

#include <deque>
#include <functional>
#include <set>

namespace gt::search {

// Where the figures of a replay's re-timings came from, per distinct (problem, family, config).
struct ReplayFigures {
  std::set<std::string> recorded;   // a recorded re-timing
  std::set<std::string> explored;   // an exploration timing (or an estimate from it)
  std::set<std::string> bounded;    // of those, faster than the roofline: reported at it
};

class ReplayMeasurer : public Measurer {
 public:
  // compile_threads: the compile pool the simulation assumes (0: the recording's).
  explicit ReplayMeasurer(const Recording& rec, unsigned compile_threads = 0);
  std::string describe() const override;
  bool is_replay() const override { return true; }
  const DeviceInfo& device() const override { return dev_; }
  void set_problem(const Problem& p, Distribution d, uint64_t seed) override;
  Measurement measure(const Candidate& c, bool quick) override;
  double settle(const Candidate&, double cap_s) override;
  Retimed retime(const std::vector<Candidate>& cs, const Interleave& how, uint64_t seed) override;
  std::optional<double> simulated_seconds() const override { return clock_; }

  // True when some of the clock's seconds were estimated (the recording held no times).
  bool clock_estimated() const { return estimated_; }
  const ReplayFigures& figures() const { return figures_; }
  // The fastest time the recording's roofs allow the current problem (NaN: no roofs).

 private:
  const RecordedSpace* space_of(const std::string& family) const;
  // Charges the clock for one measured config: its compile on the pool, then its turn on the GPU.
  void charge(const RecordedResult& r, bool quick);
  std::pair<Stats, std::string> retimed_figure(const Candidate& c);

  const Recording& rec_;
  DeviceInfo dev_;
  Problem problem_;
  std::string problem_key_;
  double roofline_us_ = kNaN;
  std::string roof_text_;  // "tensor_f16 688 TFLOP/s"
  double clock_ = 0;
  bool estimated_ = false;
  std::vector<double> compile_free_;  // when each compile thread is free, on the clock
  std::deque<double> turn_starts_;    // the GPU's recent turns: a compile is queued as the lookahead allows
  ReplayFigures figures_;
};

// A measurement's verification and timing, in seconds, estimated from the timing method
// (TimingOptions: warm-up, a typical sample count within the floor and cap, verification)
// for a config that runs `us` µs: what a replay charges where the recording holds no time.
double estimated_measure_s(double us, bool quick);

// The provenance of replayed rows: the recording's device, "replay" as the toolchain.
Provenance replay_provenance(const Recording& rec, const std::string& family, const std::string& input_dist, bool quick);

// What a tune run (tune_id) measured, as a recording: one space per (problem, family), per
// config its exploration outcome (the config's first row of the run) with its compile and
// measure seconds, and its finalists' re-timing (the config's second row of the run, where
// there is one); the devices' roofs from the store; the run's compile threads. Of replayed
// rows only the exploration outcome (their times and re-timings were simulated). Rows of
// transformed configs are left out: a recording holds the problem as it was measured.
Recording recording_from_store(const Store& store, const std::string& tune_id,
                               const std::function<Space(const std::string&, const Problem&)>& space_of,
                               unsigned compile_threads = 0);

}  // namespace gt::search
