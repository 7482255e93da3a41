// exhaustive and random: the baselines every other strategy is measured against.
#include "strategy_basic.hpp"

#include <algorithm>

namespace gt::search {

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
