// A minimal search loop over a CPU objective: propose -> evaluate -> observe until a budget
// stops it. The strategy tests and bench_search share it; the GPU tune loop drives the same
// Strategy / Budget interfaces with compile + verify + measure as the objective.
#pragma once

#include "budget.hpp"
#include "measurement.hpp"
#include "strategy.hpp"

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
};
using Objective = std::function<Outcome(const Config&)>;

// A failed or nonsensical outcome (not ok, or a time that is not a positive number) is an
// Observation with ok = false: it can never be the best.
Observation to_observation(const Config& c, const Outcome& o);

struct SearchOptions {
  // Proposals kept outstanding: the tune loop compiles a batch ahead of the GPU, so a
  // strategy is asked again before the results of its previous proposals are in.
  size_t lookahead = 1;
  // Valid points in the space, for Budget::max_fraction (0: unknown, the fraction is ignored).
  uint64_t valid_space = 0;
};

struct SearchResult {
  std::vector<Observation> history;  // evaluation order
  std::vector<double> best_trace;    // best ok value after each evaluation (+inf: none yet)
  std::optional<Observation> best;   // never a failed observation
  std::string stop_reason;           // the budget's reason, or "space exhausted"
  double seconds = 0;                // wall time of the whole search
  double strategy_seconds = 0;       // wall time spent inside propose() and observe()
  double strategy_cpu_seconds = 0;   // CPU time of this thread in there (robust to a busy machine)
  uint64_t proposed = 0;             // configs proposed (evaluated or not)
};

SearchResult run_search(Strategy& strategy, const Objective& objective, const Budget& budget,
                        const SearchOptions& options = {});

}  // namespace gt::search
