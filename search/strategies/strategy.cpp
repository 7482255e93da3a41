#include "strategies/strategy.hpp"

#include "base/errors.hpp"
#include "strategies/strategy_anneal.hpp"
#include "strategies/strategy_basic.hpp"
#include "strategies/strategy_bayes.hpp"
#include "strategies/strategy_genetic.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace gt::search {

std::vector<std::string> strategy_names() { return {"exhaustive", "random", "anneal", "genetic", "bayes"}; }

static std::string known_strategies() {
  std::string known;
  for (auto& n : strategy_names()) known += (known.empty() ? "" : ", ") + n;
  return known;
}

std::unique_ptr<Strategy> make_strategy(std::string_view name, const Space& space, uint64_t seed,
                                        std::vector<Config> first) {
  if (name == "exhaustive") return std::make_unique<Exhaustive>(space, std::move(first));
  if (name == "random") return std::make_unique<RandomSearch>(space, seed, std::move(first));
  if (name == "anneal") return std::make_unique<Annealing>(space, seed, std::move(first));
  if (name == "genetic") return std::make_unique<Genetic>(space, seed, std::move(first));
  if (name == "bayes") return std::make_unique<BayesOpt>(space, seed, std::move(first));
  throw InputError(fmt::format("--strategy: unknown strategy '{}' (known: {})", name, known_strategies()));
}

void require_strategy(const std::string& name, const std::string& where) {
  auto names = strategy_names();
  if (name == "auto" || std::find(names.begin(), names.end(), name) != names.end()) return;
  throw InputError(fmt::format("{}: unknown strategy '{}' (known: auto, {})", where, name, known_strategies()));
}

}  // namespace gt::search
