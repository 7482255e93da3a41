#pragma once

#include "strategy.hpp"

#include <deque>
#include <random>
#include <unordered_map>
#include <unordered_set>

namespace gt::search {

// The configs a strategy must try first, and the set of configs already proposed.
class SeededQueue {
 public:
  SeededQueue(const Space& space, std::vector<Config> first);
  bool next(Config* out);         // the next not-yet-proposed seed config
  bool mark(const Config& c);     // true when c had not been proposed before
  bool seen(const Config& c) const;
  size_t proposed() const { return seen_.size(); }

 private:
  const Space& space_;
  std::deque<Config> queue_;
  std::unordered_set<uint64_t> seen_;
};

// Every valid point in index order.
class Exhaustive : public Strategy {
 public:
  Exhaustive(const Space& space, std::vector<Config> first);
  std::string name() const override { return "exhaustive"; }
  std::vector<Config> propose(size_t max) override;
  void observe(const Observation&) override {}

 private:
  const Space& space_;
  SeededQueue q_;
  uint64_t next_ = 0;
};

// Uniformly random valid points, without replacement.
class RandomSearch : public Strategy {
 public:
  RandomSearch(const Space& space, uint64_t seed, std::vector<Config> first);
  std::string name() const override { return "random"; }
  std::vector<Config> propose(size_t max) override;
  void observe(const Observation&) override {}

 private:
  uint64_t swapped(uint64_t i) const;
  const Space& space_;
  std::mt19937_64 rng_;
  SeededQueue q_;
  uint64_t drawn_ = 0;
  std::unordered_map<uint64_t, uint64_t> swaps_;  // sparse Fisher-Yates
};

}  // namespace gt::search
