// The tune loop: for one problem and each family,
//   strategy proposes -> store answers what it already knows -> NVRTC compiles ahead on a
//   thread pool -> the measurer verifies and times (in a shuffled order per round) -> the
//   store records every outcome -> the strategy learns -> budget says when to stop;
// then the family's finalists are re-timed interleaved, and the families' winners against
// each other, and the winners are recorded.
#pragma once

#include "budget.hpp"
#include "compiler.hpp"
#include "measurer.hpp"
#include "provenance.hpp"
#include "store.hpp"
#include "strategy.hpp"

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace gt::search {

struct TuneOptions {
  std::string strategy = "auto";  // "auto": exhaustive for small spaces, else the model-based one
  Budget budget;                  // per (problem, family)
  // Families searched under a budget of their own (a job's [tune.budget.FAMILY]): cuBLASLt
  // compiles nothing, so hundreds of its configs cost what a few dozen compiled ones do.
  std::map<std::string, Budget> family_budgets;
  const Budget& budget_for(const std::string& family) const {
    auto it = family_budgets.find(family);
    return it != family_budgets.end() ? it->second : budget;
  }
  uint64_t seed = 1;              // strategy seed
  bool quick_explore = true;      // explore with quick timings; finalists always get full ones
  int finalists = 4;              // per family, re-timed interleaved
  Interleave retime;              // how finalists and families' winners are re-timed
  // A tie between families' winners goes to this family (the reference the table is measured
  // against): another family replaces it only when measurably faster. Empty: broken by time (the figure).
  std::string tie_family = "cublaslt";
  // Switching needs a margin: a config replaces its family's baseline (cuBLASLt's pick, a
  // hand-written family's default), and another family's winner replaces the tie family's,
  // only when faster by at least this fraction. A family's winner is first re-timed against
  // its baseline alone (the finalists' re-timing picked the fastest of several noisy figures,
  // which overstates its lead), and that confirmation decides. 0: measurably faster suffices.
  double min_gain = 0.02;
  Distribution dist = Distribution::normal;
  uint64_t input_seed = 1;
  bool reuse = true;              // answer from the store what it already holds (warm re-tune)
  double settle_s = 3.0;          // cap on settling the clock before a problem's first measurement (kSettleCapS)
  double compile_timeout_s = 120;
  size_t lookahead = 0;           // compiles in flight ahead of the GPU (0: 2 per compile thread)
  uint64_t auto_exhaustive_below = 400;  // "auto" searches spaces this small exhaustively
  std::string tune_id;
  const std::atomic<bool>* stop = nullptr;  // set by Ctrl-C: stop after the measurement in flight
};

struct FamilyOutcome {
  std::string family;
  std::string skipped;  // why the family was not tuned ("" when it was)
  std::string strategy;
  uint64_t valid_space = 0;  // 0: unknown (too large to count)
  uint64_t evaluated = 0, reused = 0, stale = 0;
  uint64_t stale_builds = 0;  // configs stored with another build (a host-code change): measured again
  std::map<Status, uint64_t> by_status;
  std::string stop_reason;
  double seconds = 0, compile_s = 0, measure_s = 0;
  std::optional<Config> best;
  std::string best_name, best_description;
  Measurement best_m;  // the best's measurement; time = its re-timed statistics
  int64_t best_row = 0;  // its row in the store (0: not stored)
  bool tie = false;    // the best could not be told apart from the runner-up
  std::string runner_up;
  std::string note;    // the winner's note in the store: a tie, or a baseline kept for the margin
};

struct ProblemOutcome {
  Problem problem;
  std::vector<FamilyOutcome> families;
  int winner = -1;  // index into families, -1 when nothing passed
  bool tie = false;
  std::string note;
  double seconds = 0;
};

// Progress of the current search: for a display.
struct TuneEvent {
  const Problem* problem;
  std::string family;
  uint64_t done, total;  // total: the budget's evaluations or the valid space (0: unknown)
  double best_us;        // NaN until something passed
  std::string best_name;
  double elapsed_s, left_s;  // left_s: NaN when unknown
};

// With several GPUs, finalists of every problem are re-timed on one reference GPU, so that
// board-to-board variation cannot pick the winner. Tuners on other GPUs share it.
struct ReferenceGpu {
  Measurer* measurer = nullptr;
  std::mutex mu;
  std::optional<std::string> prepared;  // the problem its buffers hold
  // When it last finished a measurement: a GPU busy until a moment ago is still in its
  // sustained clock state and needs no settling before re-timing another GPU's finalists.
  std::chrono::steady_clock::time_point last_busy{};
};

// Where the parameter space of a family comes from (a plugin, or a recording in replay).
using SpaceSource = std::function<Space(const std::string& family, const Problem& p)>;
// The provenance of measuring a family now (device, toolchain, plugin source, inputs, mode).
using ProvenanceSource = std::function<Provenance(const std::string& family, bool quick)>;

class Tuner {
 public:
  // store and pool may be null (no persistence / no source families to compile); plugins
  // is null in replay.
  Tuner(const PluginRegistry* plugins, Measurer& measurer, Store* store, CompilePool* pool, SpaceSource spaces,
        ProvenanceSource provenance, TuneOptions o);
  // `fixed`: families that measure exactly these configs instead of searching.
  ProblemOutcome tune(const Problem& p, const std::vector<std::string>& families,
                      const std::map<std::string, std::vector<Config>>& fixed = {});
  // Re-time finalists on this GPU instead of the tuner's own (several GPUs).
  void set_reference(ReferenceGpu* ref) { reference_ = ref; }
  std::function<void(const TuneEvent&)> on_progress;
  std::function<void(const std::string&)> on_note;  // one-line notes (skips, restarts, stale rows)

 private:
  FamilyOutcome tune_family(const Problem& p, const std::string& family, const std::vector<Config>* fixed);
  bool is_reference() const;
  std::unique_lock<std::mutex> hold_measurer();
  void ensure_problem(const Problem& p);  // the caller holds hold_measurer()
  void mark_busy();                       // after a measurement on the reference GPU
  // Re-times candidates on the reference GPU (or this tuner's own).
  Retimed retime(const Problem& p, const std::vector<Candidate>& cs, uint64_t seed);
  int64_t record(const Problem& p, const Space& s, const Config& c, const Measurement& m, const Provenance& prov);
  // The config's build hash (Family::build_hash) on this tune's device; 0 without a plugin.
  uint64_t build_hash_of(const Problem& p, const std::string& family, const Config& c) const;
  int64_t record_retimed(const Problem& p, const Space& s, const Config& c, Measurement& m, Provenance prov,
                         const std::string& what);
  const Family* plugin(const std::string& family) const;

  const PluginRegistry* plugins_;
  Measurer& measurer_;
  Store* store_;
  CompilePool* pool_;
  SpaceSource spaces_;
  ProvenanceSource provenance_;
  TuneOptions o_;
  std::optional<std::string> prepared_;  // key of the problem the measurer holds
  bool settled_ = false;
  ReferenceGpu* reference_ = nullptr;
};

std::string describe(const TuneOptions& o);

}  // namespace gt::search
