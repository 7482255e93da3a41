// The tune of one problem, as named phases. For each family:
//   set up    the space, the strategy, the baseline and the budget (set_up_form);
//   explore   the one search loop (driver.hpp): the store answers what it already knows, NVRTC
//             compiles ahead on a thread pool, the measurer verifies and times in a shuffled
//             order per batch, every outcome is stored, the strategy learns (explore);
//   finalists the fastest distinct configs and the baseline, re-timed interleaved (finalists);
//   decide    the decision rule (decide.hpp): the baseline stays unless beaten measurably and
//             by the margin, confirmed against the baseline alone (decide_family).
// A family is searched in more than one form where problem transforms can matter (forms.hpp):
// the plain problem, and the problem padded or swapped, each form a setup and an exploration of
// its own (its space is the family's for the transformed problem), all of them verified against
// the problem as given; the finalists of every form are re-timed together, the plain form's
// baseline the reference.
// Then the families' winners are re-timed against each other and decided by the same rule,
// with cuBLASLt as the reference (decide_problem). Everything of one problem runs on the one
// measurer (GPU) the tuner holds: ratios are taken within a GPU, never across two.
#pragma once

#include "tune/budget.hpp"
#include "build/compiler.hpp"
#include "tune/decide.hpp"
#include "tune/forms.hpp"
#include "measure/measurer.hpp"
#include "measure/provenance.hpp"
#include "store/store.hpp"
#include "strategies/strategy.hpp"

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gt::search {

struct TuneOptions {
  std::string strategy = "auto";  // "auto": exhaustive for small spaces, else the model-based one
  Budget budget;                  // per (problem, family)
  bool budget_is_default = false;  // `budget` is the command's default: no flag or job key named one
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
  TransformPolicy transforms;     // the forms explored beside the plain problem (forms.hpp)
  // FP8: configs with fast accumulation (a parameter `fast_accum` of value 1) are explored only
  // when asked: they trade accuracy for speed, which the user must choose, not the tuner.
  bool fast_accum = false;
};

// One form of a family's search: the family on the problem as it is, or through a transform.
struct FormOutcome {
  Transform transform = Transform::none;
  std::string plan;        // what the transform does for the problem (TransformPlan::describe); "" for none
  std::string skipped;    // why it was not searched ("" when it was)
  uint64_t valid_space = 0, evaluated = 0;
  std::string best_name;  // its fastest config by the figures it had ("" when none passed)
  double best_us = kNaN;
  // What stopped its search: each form has the family's whole budget, its own clock.
  std::string stop_reason;
  // Seconds the GPU waited on this form's compiles: left out of its budget's clock, so that a
  // form whose configs compile slowly (wgmma_tma's, tens of seconds) still gets its evaluations.
  double compile_wait_s = 0;
};

// A family's search over its forms. The counts add up every form's; skipped, strategy,
// valid_space and stop_reason are the plain form's (the first form searched, when it was not);
// each form's own stop reason is in `forms`.
struct FamilyOutcome {
  std::string family;
  std::string skipped;  // why the family was not tuned ("" when it was, in some form)
  std::string strategy;
  uint64_t valid_space = 0;  // 0: unknown (too large to count)
  uint64_t evaluated = 0, reused = 0, stale = 0;
  uint64_t stale_builds = 0;  // configs stored with another build (a host-code change): measured again
  std::map<Status, uint64_t> by_status;
  std::string stop_reason;
  double seconds = 0, compile_s = 0, measure_s = 0;
  std::optional<Config> best;   // of the family's space for best_transform's problem
  Transform best_transform = Transform::none;
  std::string best_name, best_description;  // the name with its transform (transformed_name)
  std::string best_params;  // the best's readable form, "p1=V1 p2=V2" (Space::readable)
  Measurement best_m;  // the best's measurement; time = its re-timed statistics
  int64_t best_row = 0;  // its row in the store (0: not stored)
  Decision decision;     // how the rule chose it: a tie (with whom), the runner-up, the margin
  std::string note;      // the winner's note in the store: a tie, or a baseline kept for the margin
  std::string figure_note;  // how the measurer had the best's figure, where it says (replay)
  std::vector<FormOutcome> forms;  // the plain form first, then each transform considered
  // Not tuned in this run: the family's current winner in the store (measured with this
  // toolchain, plugin source and build), which the problem's winner is decided against too.
  bool stored_only = false;
};

struct ProblemOutcome {
  Problem problem;
  std::vector<FamilyOutcome> families;
  int winner = -1;  // index into families, -1 when nothing passed
  Decision decision;
  std::string note;
  double seconds = 0;
};

// Progress of the current search: for a display.
struct TuneEvent {
  const Problem* problem;
  std::string family;
  uint64_t done, total;  // total: the budget's evaluations or the valid space (0: unknown)
  double best_us;        // NaN until something passed
  std::string best_name;  // the best's readable form (Space::readable)
  double elapsed_s, left_s;  // left_s: NaN when unknown
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
  ~Tuner();
  // `fixed`: families that measure exactly these configs instead of searching.
  ProblemOutcome tune(const Problem& p, const std::vector<std::string>& families,
                      const std::map<std::string, std::vector<Config>>& fixed = {});
  // The run's clock: seconds since this tuner began, on the wall clock, or in replay the
  // seconds the recorded GPU would have spent (Measurer::simulated_seconds).
  double now() const;
  std::function<void(const TuneEvent&)> on_progress;
  std::function<void(const std::string&)> on_note;  // one-line notes (skips, restarts, stale rows)

 private:
  struct Result;      // a config that passed, with its measurement and row
  struct FormSetup;  // what set_up_form settled for one family
  struct Finalists;   // the configs re-timed at the end, and how
  class Explorer;     // the search loop's evaluator: store, compile ahead, measure, record

  using Setups = std::deque<FormSetup>;  // a family's forms' setups (a setup never moves)

  FamilyOutcome tune_family(const Problem& p, const std::string& family, const std::vector<Config>* fixed);
  // One form: setup and explore it; its results are added to `ok`, its counts to `out`.
  FormOutcome tune_form(const Problem& p, const std::string& family, Transform t, const std::vector<Config>* fixed,
                        Setups& setups, std::vector<Result>& ok, FamilyOutcome& out);
  // False when the form is skipped (out.skipped says why). The setup's strategy holds its space:
  // a setup is filled in place, never moved.
  bool set_up_form(const Problem& p, const std::string& family, Transform t, const std::vector<Config>* fixed,
                   FormSetup& setup, FamilyOutcome& out);
  std::vector<Result> explore(const Problem& p, FormSetup& setup, FamilyOutcome& out);
  Finalists finalists(const Problem& p, const Setups& setups, std::vector<Result> ok, FamilyOutcome& out);
  void decide_family(const Problem& p, const Setups& setups, Finalists& fin, FamilyOutcome& out);
  // The confirmation of a family's leader against its baseline alone; nullopt when it stands.
  std::optional<std::pair<Verdict, std::string>> confirm(const Problem& p, Result& leader, Result& baseline);
  void decide_problem(ProblemOutcome& po);
  void add_stored_families(ProblemOutcome& po);
  bool reuse_problem_winner(ProblemOutcome& po, const std::vector<size_t>& idx);
  void retime_family_winners(ProblemOutcome& po, const std::vector<size_t>& idx);

  // The one question to the store while exploring: a stored measurement of the same build that
  // stands in for measuring config `c` again (a warm re-tune), or nullopt; *stale_build says
  // whether one of another build (a host-code change) was passed over.
  std::optional<StoredRow> reusable(const Problem& p, const FormSetup& setup, const Config& c,
                                    bool* stale_build = nullptr) const;
  // The config's build hash (Family::build_hash for the transform's problem, the transform
  // mixed in) on this tune's device; 0 without a plugin.
  uint64_t build_hash_of(const Problem& p, const std::string& family, const Config& c, Transform t) const;
  void ensure_problem(const Problem& p);
  // Measures one candidate; the first one of a problem that works settles the clock first.
  Measurement measure_settled(const Candidate& c);
  Retimed retime(const Problem& p, const std::vector<Candidate>& cs, uint64_t seed);
  // `s`: the family's space for the transform's problem; the row is of `p`. An exploration
  // (with reuse on) is stored once per config, however many tunes of the job run at once;
  // re-timings are rows of their own.
  int64_t record(const Problem& p, const Space& s, Transform t, const Config& c, const Measurement& m,
                 const Provenance& prov, bool exploration = false);
  int64_t record_retimed(const Problem& p, const Space& s, Transform t, const Config& c, Measurement& m,
                         const Provenance& prov, const std::string& what);
  const Family* plugin(const std::string& family) const;
  bool stopping() const { return o_.stop && o_.stop->load(); }

  const PluginRegistry* plugins_;
  Measurer& measurer_;
  Store* store_;
  CompilePool* pool_;
  SpaceSource spaces_;
  ProvenanceSource provenance_;
  TuneOptions o_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::optional<std::string> prepared_;  // key of the problem the measurer holds
  bool settled_ = false;
};

std::string describe(const TuneOptions& o);

// A measurement of a config as a row of the store, with the provenance it was made under. `s`
// is the family's space for the transform's problem; the row's key is `p`'s, its config's name
// and hash carry the transform.
StoredRow measured_row(const Problem& p, const Space& s, const Config& c, const Measurement& m, const Provenance& prov,
                       const std::string& tune_id, bool replay, Transform t = Transform::none);

// A library family's ranking of config `c` for `fp`, the problem the family ran (transformed where
// the row ran a transform): its position among the family's suggestions (cuBLASLt: its heuristic's
// picks, best first), -1 beyond them (StoredRow::heuristic_rank). nullopt for a source family, and
// where the family cannot be asked (no plugin, as in a replay; no GPU).
std::optional<int32_t> library_rank(const Family* fam, const Problem& fp, const Config& c, const gt_device& dev);
// The row's rank: the library's where it can be asked; else, for a replayed row, what its recorded
// description says (a recording keeps the plugin's description as text, store_sql's legacy reader).
void note_rank(StoredRow& r, const Family* fam, const Problem& fp, const gt_device& dev);

}  // namespace gt::search
