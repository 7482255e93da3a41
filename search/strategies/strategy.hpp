// A search strategy: proposes configs of a parameter space and learns from their results.
// Strategies see a Space and numbers only -- never CUDA -- so every one of them runs on a
// CPU against recorded measurements (replay).
#pragma once

#include "base/space.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gt::search {

// The objective's answer for one evaluated config. Lower `value` is better (the measurement's figure, µs).
struct Observation {
  Config config;
  bool ok = false;  // false: invalid, failed to compile/verify/run -- never wins
  double value = 0;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  // Up to `max` configs to evaluate next, each valid (space.valid) and never proposed
  // before. Empty when the strategy has nothing left to propose.
  virtual std::vector<Config> propose(size_t max) = 0;
  // The result of a proposed config, in any order.
  virtual void observe(const Observation& o) = 0;
};

// `first`: configs to try before anything else (e.g. cuBLASLt's heuristic list, the
// family's default); invalid or repeated ones are skipped. Deterministic for a seed.
// Throws InputError for an unknown name.
std::unique_ptr<Strategy> make_strategy(std::string_view name, const Space& space, uint64_t seed,
                                        std::vector<Config> first = {});
std::vector<std::string> strategy_names();
// InputError "WHERE: unknown strategy 'NAME' (known: auto, exhaustive, ...)" unless NAME is
// "auto" or one of strategy_names().
void require_strategy(const std::string& name, const std::string& where);

}  // namespace gt::search
