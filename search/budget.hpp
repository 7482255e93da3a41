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
  double seconds = 0;              // wall time since the search started
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
};

}  // namespace gt::search
