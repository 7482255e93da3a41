// Budgets: composable stop conditions for a search (any one reached stops it).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace gt::search {

struct Progress {
  uint64_t evaluations = 0;        // configs evaluated (failures included)
  double seconds = 0;              // since the search started, by the run's clock (wall, or simulated in replay)
  uint64_t valid_space = 0;        // valid points in the space (0: unknown)
  uint64_t since_improvement = 0;  // evaluations since the best improved
};

struct Budget {
  uint64_t max_evaluations = std::numeric_limits<uint64_t>::max();
  double max_seconds = std::numeric_limits<double>::infinity();
  double max_fraction = 1.0;  // of the valid space
  uint64_t patience = std::numeric_limits<uint64_t>::max();  // no improvement for N evaluations

  bool exhausted(const Progress& p) const;
  std::string reason(const Progress& p) const;  // which condition stopped it ("" if none)
  std::string describe() const;
  // How many more configs may be proposed with `in_flight` proposed but not yet evaluated:
  // what the evaluation and fraction limits leave (the others cannot be counted ahead).
  uint64_t remaining(const Progress& p, uint64_t in_flight) const;
  // How many evaluations the search will make at most in a space of `valid_space` configs (0:
  // unknown; then 0 unless the evaluation limit says).
  uint64_t planned(uint64_t valid_space) const;
};

}  // namespace gt::search
