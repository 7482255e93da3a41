#include "tune/budget.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace gt::search {

bool Budget::exhausted(const Progress& p) const { return !reason(p).empty(); }

std::string Budget::reason(const Progress& p) const {
  if (p.evaluations >= max_evaluations) return fmt::format("{} evaluations", max_evaluations);
  if (p.seconds >= max_seconds) return fmt::format("{:g} s", max_seconds);
  if (p.valid_space > 0 && max_fraction < 1.0 &&
      double(p.evaluations) >= std::ceil(max_fraction * double(p.valid_space)))
    return fmt::format("{:g} % of the valid space", 100 * max_fraction);
  if (p.since_improvement >= patience) return fmt::format("no improvement in {} evaluations", patience);
  return "";
}

uint64_t Budget::remaining(const Progress& p, uint64_t in_flight) const {
  const uint64_t used = p.evaluations + in_flight;
  uint64_t r = std::numeric_limits<uint64_t>::max();
  if (max_evaluations < r) r = max_evaluations > used ? max_evaluations - used : 0;
  if (max_fraction < 1.0 && p.valid_space) {
    const auto cap = uint64_t(std::ceil(max_fraction * double(p.valid_space)));
    r = std::min(r, cap > used ? cap - used : 0);
  }
  return r;
}

uint64_t Budget::planned(uint64_t valid_space) const {
  uint64_t n = valid_space;
  if (max_evaluations < std::numeric_limits<uint64_t>::max()) n = n ? std::min(n, max_evaluations) : max_evaluations;
  if (max_fraction < 1.0 && valid_space)
    n = std::min<uint64_t>(n, uint64_t(std::ceil(max_fraction * double(valid_space))));
  return n;
}

std::string Budget::describe() const {
  std::string s;
  auto add = [&](const std::string& x) { s += (s.empty() ? "" : " or ") + x; };  // the first reached stops
  if (max_evaluations != std::numeric_limits<uint64_t>::max()) add(fmt::format("{} evaluations", max_evaluations));
  if (std::isfinite(max_seconds)) add(fmt::format("{:g} s", max_seconds));
  if (max_fraction < 1.0) add(fmt::format("{:g} % of the space", 100 * max_fraction));
  if (patience != std::numeric_limits<uint64_t>::max()) add(fmt::format("patience {}", patience));
  return s.empty() ? "the whole space" : s;
}

}  // namespace gt::search
