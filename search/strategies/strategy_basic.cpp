// exhaustive and random: the baselines every other strategy is measured against.
#include "strategies/strategy_basic.hpp"

#include <algorithm>
#include <cmath>

namespace gt::search {

bool usable(const Observation& o) { return o.ok && std::isfinite(o.value) && o.value > 0; }

SeededQueue::SeededQueue(const Space& space, std::vector<Config> first) : space_(space) {
  for (auto& c : first)
    if (space_.valid(c)) queue_.push_back(std::move(c));
}

bool SeededQueue::next(Config* out) {
  while (!queue_.empty()) {
    Config c = std::move(queue_.front());
    queue_.pop_front();
    if (mark(c)) {
      *out = std::move(c);
      return true;
    }
  }
  return false;
}

bool SeededQueue::mark(const Config& c) { return seen_.insert(space_.index_of(c)).second; }
bool SeededQueue::seen(const Config& c) const { return seen_.count(space_.index_of(c)) > 0; }

ValidPool::ValidPool(const Space& space) : space_(space) {
  uint64_t raw = space_.raw_size();
  if (raw > kMaterialiseLimit) return;
  materialised_ = true;
  for (uint64_t i = 0; i < raw; ++i) {
    Config c = space_.at(i);
    if (space_.valid(c)) points_.push_back(std::move(c));
  }
}

std::optional<Config> ValidPool::draw_unseen(std::mt19937_64& rng, const SeededQueue& q, int tries) const {
  if (materialised_) {
    if (points_.empty()) return std::nullopt;
    std::uniform_int_distribution<size_t> pick(0, points_.size() - 1);
    for (int t = 0; t < 32; ++t) {
      const Config& c = points_[pick(rng)];
      if (!q.seen(c)) return c;
    }
    // Mostly seen: scan from a random start so late draws stay spread over the space.
    size_t start = pick(rng);
    for (size_t i = 0; i < points_.size(); ++i) {
      const Config& c = points_[(start + i) % points_.size()];
      if (!q.seen(c)) return c;
    }
    return std::nullopt;
  }
  uint64_t raw = space_.raw_size();
  if (raw == 0) return std::nullopt;
  std::uniform_int_distribution<uint64_t> pick(0, raw - 1);
  for (int t = 0; t < tries; ++t) {
    Config c = space_.at(pick(rng));
    if (!q.seen(c) && space_.valid(c)) return c;
  }
  return std::nullopt;
}

std::optional<Config> ValidPool::mutate(const Config& c, std::mt19937_64& rng, const SeededQueue& q, int tries) const {
  const auto& params = space_.params();
  std::vector<size_t> movable;
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].values.size() > 1) movable.push_back(i);
  if (movable.empty()) return std::nullopt;
  auto base = space_.positions(c);
  std::uniform_real_distribution<double> u(0, 1);
  for (int t = 0; t < tries; ++t) {
    // Constraints couple parameters (a warp tile must divide its block tile), so a single
    // step is often invalid where a joint move of two or three is not.
    double r = u(rng);
    size_t moves = r < 0.5 ? 1 : r < 0.85 ? 2 : 3;
    moves = std::min(moves, movable.size());
    auto pos = base;
    for (size_t m = 0; m < moves; ++m) {
      size_t i = movable[std::uniform_int_distribution<size_t>(0, movable.size() - 1)(rng)];
      int64_t n = int64_t(params[i].values.size());
      int64_t step = u(rng) < 0.75 ? 1 : 2;
      if (u(rng) < 0.5) step = -step;
      int64_t p = int64_t(pos[i]) + step;
      if (p < 0 || p >= n) p = int64_t(pos[i]) - step;  // bounce off the end of the list
      pos[i] = size_t(std::clamp<int64_t>(p, 0, n - 1));
    }
    if (pos == base) continue;
    Config x = space_.from_positions(pos);
    if (!q.seen(x) && space_.valid(x)) return x;
  }
  return std::nullopt;
}

Exhaustive::Exhaustive(const Space& space, std::vector<Config> first) : space_(space), q_(space, std::move(first)) {}

std::vector<Config> Exhaustive::propose(size_t max) {
  std::vector<Config> out;
  Config c;
  while (out.size() < max && q_.next(&c)) out.push_back(c);
  uint64_t raw = space_.raw_size();
  while (out.size() < max && next_ < raw) {
    Config x = space_.at(next_++);
    if (space_.valid(x) && q_.mark(x)) out.push_back(std::move(x));
  }
  return out;
}

RandomSearch::RandomSearch(const Space& space, uint64_t seed, std::vector<Config> first)
    : space_(space), rng_(seed), q_(space, std::move(first)) {}

std::vector<Config> RandomSearch::propose(size_t max) {
  std::vector<Config> out;
  Config c;
  while (out.size() < max && q_.next(&c)) out.push_back(c);
  // Sample without replacement over a random permutation of raw indices, drawn lazily
  // (a space may be far too large to shuffle up front).
  uint64_t raw = space_.raw_size();
  while (out.size() < max && drawn_ < raw) {
    uint64_t j = drawn_ + std::uniform_int_distribution<uint64_t>(0, raw - 1 - drawn_)(rng_);
    uint64_t xj = swapped(j), xi = swapped(drawn_);
    swaps_[j] = xi;
    swaps_[drawn_] = xj;
    ++drawn_;
    Config x = space_.at(xj);
    if (space_.valid(x) && q_.mark(x)) out.push_back(std::move(x));
  }
  return out;
}

uint64_t RandomSearch::swapped(uint64_t i) const {
  auto it = swaps_.find(i);
  return it == swaps_.end() ? i : it->second;
}

}  // namespace gt::search
