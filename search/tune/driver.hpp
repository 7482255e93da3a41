// The search loop, the one every search runs: propose -> (answered ahead, or queued) ->
// evaluate -> observe, until a budget stops it. The tune loop drives it with compile +
// verify + measure behind an Evaluator (search/tune/tuner.cpp); the strategy tests and
// bench_search with a CPU objective or a recording (run_search).
#pragma once

#include "tune/budget.hpp"
#include "measure/measurement.hpp"
#include "strategies/strategy.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gt::search {

// What an objective says about one config: a measurement reduced to what a search needs.
struct Outcome {
  Status status = Status::ok;
  double median_us = kNaN;  // the figure: the median, or the mean at the power cap
  std::string message;
  // An answer given ahead from the store: the seconds the GPU spent on it when it was measured,
  // charged to the budget's clock in its turn. Free, a resumed search under a time budget would
  // run on past the point where the first run stopped, measuring what that run never chose to.
  double cost_s = 0;
};
using Objective = std::function<Outcome(const Config&)>;

// A failed or nonsensical outcome (not ok, or a time that is not a positive number) is an
// Observation with ok = false: it can never be the best.
Observation to_observation(const Config& c, const Outcome& o);

// What stands behind a search: the loop asks it about each config it proposes.
class Evaluator {
 public:
  virtual ~Evaluator() = default;
  // A config as it is proposed, before its turn: an answer now (the store already holds one,
  // the family refuses it), or nullopt: what can run ahead of its turn (its compile) starts
  // now. Either way the config keeps its place in the queue, and the strategy learns its
  // outcome in its turn: a search that the store answers in part or whole (a resumed or
  // repeated tune) observes what a first run observed, in the same order, and so proposes the
  // same configs.
  virtual std::optional<Outcome> ahead(const Config&) { return std::nullopt; }
  // Its turn: verify and time it, or ask the objective.
  virtual Outcome evaluate(const Config& c) = 0;
  // Seconds since the search began: the wall clock, or the simulated clock of a replay (the
  // seconds the recorded GPU would have spent). The budget reads them plus the stored answers'
  // costs (Outcome::cost_s).
  virtual double seconds() const = 0;
  // True when the search must stop after the evaluation in flight (Ctrl-C).
  virtual bool stop_requested() const { return false; }
};

struct SearchOptions {
  // Proposals kept outstanding: the tune loop compiles a batch ahead of the GPU, so a
  // strategy is asked again before the results of its previous proposals are in.
  size_t lookahead = 1;
  // Valid points in the space, for Budget::max_fraction (0: unknown, the fraction is ignored).
  uint64_t valid_space = 0;
  // Set: each batch of proposals runs in a freshly shuffled order drawn from this seed, so a
  // card warming up over the sweep cannot pass for an effect of the config. Unset: the
  // strategy's order.
  std::optional<uint64_t> shuffle_seed;
  // After every evaluation (answered ahead or evaluated): a progress display.
  std::function<void(const Observation&, const Progress&)> on_evaluated;
};

struct SearchResult {
  std::vector<Observation> history;  // evaluation order
  std::vector<double> best_trace;    // best ok value after each evaluation (+inf: none yet)
  std::vector<double> seconds_trace; // the evaluator's clock after each evaluation
  std::optional<Observation> best;   // never a failed observation
  std::string stop_reason;           // "interrupted", the budget's reason, or "space exhausted"
  double seconds = 0;                // the evaluator's clock at the end
  double strategy_seconds = 0;       // wall time spent inside propose() and observe()
  double strategy_cpu_seconds = 0;   // CPU time of this thread in there (robust to a busy machine)
  uint64_t proposed = 0;             // configs proposed (evaluated or not)
};

SearchResult drive(Strategy& strategy, Evaluator& evaluator, const Budget& budget, const SearchOptions& options = {});

// drive() over a CPU objective, with the wall clock.
SearchResult run_search(Strategy& strategy, const Objective& objective, const Budget& budget,
                        const SearchOptions& options = {});

}  // namespace gt::search
