// A steady-state genetic algorithm over parameter positions.
#pragma once

#include "strategies/strategy_basic.hpp"

#include <random>
#include <utility>

namespace gt::search {

// Each proposal is one child bred from the best configs evaluated so far (the population):
// two parents picked by tournament, uniform crossover of their parameters, a one- or
// two-position mutation per parameter with probability 1/dims, repaired by retrying when the
// child is invalid or already seen; now and then a random immigrant keeps the population
// diverse. Steady state (no generations) means proposals never wait for a generation's
// results. Failures never join the population.
class Genetic : public Strategy {
 public:
  Genetic(const Space& space, uint64_t seed, std::vector<Config> first);
  std::string name() const override { return "genetic"; }
  std::vector<Config> propose(size_t max) override;
  void observe(const Observation& o) override;

 private:
  std::optional<Config> child();
  const Config& tournament();
  const Space& space_;
  std::mt19937_64 rng_;
  SeededQueue q_;
  ValidPool pool_;
  size_t population_;
  std::vector<std::pair<double, Config>> members_;  // best first, at most population_
};

}  // namespace gt::search
