// Simulated annealing over neighbour moves in the parameters' ordered value lists.
#pragma once

#include "strategies/strategy_basic.hpp"

#include <optional>
#include <random>

namespace gt::search {

// A Metropolis walk on log(time): a move to a slower config is accepted with probability
// exp(-Δlog t / T), T cooling geometrically per evaluation. The walk starts from the best of
// a few random configs; after `patience` evaluations without a new best, or when every
// config near the state has been proposed, it reheats and restarts, half of the time from the
// best config and half from a random one. Proposals are neighbours of the current state, so
// several can be outstanding at once; results arriving late still move the walk.
class Annealing : public Strategy {
 public:
  Annealing(const Space& space, uint64_t seed, std::vector<Config> first);
  std::string name() const override { return "anneal"; }
  std::vector<Config> propose(size_t max) override;
  void observe(const Observation& o) override;

 private:
  void restart();
  const Space& space_;
  std::mt19937_64 rng_;
  SeededQueue q_;
  ValidPool pool_;
  size_t initial_;  // random configs before the walk starts
  size_t observed_ = 0;
  std::optional<Config> current_;
  double current_log_ = 0;
  std::optional<Config> best_;
  double best_log_ = 0;
  double temperature_;
  size_t since_best_ = 0;
  bool fresh_start_ = false;    // the next ok result becomes the state (a random restart)
  std::optional<Config> jump_;  // a random restart's landing config, to propose next
};

}  // namespace gt::search
