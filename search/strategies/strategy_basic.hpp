#pragma once

#include "strategies/strategy.hpp"

#include <deque>
#include <optional>
#include <random>
#include <unordered_map>
#include <unordered_set>

namespace gt::search {

// An observation a strategy may learn a time from: ok, with a positive finite time. Anything
// else counts as a failure, whatever its `ok` says.
bool usable(const Observation& o);

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

// Where strategies draw fresh valid configs from. A space of at most kMaterialiseLimit raw
// points has its valid points listed once (uniform draws are then exact and cheap); a larger
// one is sampled by rejection, with a bounded number of tries per draw, since most of its
// raw points may be invalid and listing it could take far too long.
class ValidPool {
 public:
  static constexpr uint64_t kMaterialiseLimit = uint64_t(1) << 18;  // ~2.6e5: register_tile has 2.25e5
  static constexpr int kRejectionTries = 20000;

  explicit ValidPool(const Space& space);
  bool materialised() const { return materialised_; }
  // The valid points in index order (materialised spaces only).
  const std::vector<Config>& points() const { return points_; }

  // A uniformly drawn valid config that `q` has not seen; nullopt when none is left (or,
  // in a space too large to list, none was found within the tries).
  std::optional<Config> draw_unseen(std::mt19937_64& rng, const SeededQueue& q, int tries = kRejectionTries) const;
  // A valid config that `q` has not seen near c: 1 to 3 parameters (fewer more likely)
  // moved by one or two positions in their ordered lists. nullopt after `tries` misses.
  std::optional<Config> mutate(const Config& c, std::mt19937_64& rng, const SeededQueue& q, int tries = 64) const;

 private:
  const Space& space_;
  bool materialised_ = false;
  std::vector<Config> points_;
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
