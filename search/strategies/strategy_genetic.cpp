#include "strategies/strategy_genetic.hpp"

#include <algorithm>

namespace gt::search {
namespace {
constexpr double kImmigrants = 0.08;  // share of proposals drawn at random
constexpr size_t kTournament = 3;
constexpr int kRepairTries = 40;
}  // namespace

Genetic::Genetic(const Space& space, uint64_t seed, std::vector<Config> first)
    : space_(space), rng_(seed), q_(space, std::move(first)), pool_(space) {
  size_t movable = 0;
  for (auto& p : space_.params()) movable += p.values.size() > 1;
  population_ = std::clamp<size_t>(2 * movable, 8, 32);
}

std::vector<Config> Genetic::propose(size_t max) {
  std::vector<Config> out;
  Config c;
  while (out.size() < max && q_.next(&c)) out.push_back(c);
  std::uniform_real_distribution<double> u(0, 1);
  while (out.size() < max) {
    std::optional<Config> x;
    // The first population is random; so is every proposal while fewer than two parents exist.
    bool breed = q_.proposed() >= population_ && members_.size() >= 2 && u(rng_) >= kImmigrants;
    if (breed) x = child();
    if (!x) x = pool_.draw_unseen(rng_, q_);
    if (!x) break;
    q_.mark(*x);
    out.push_back(std::move(*x));
  }
  return out;
}

const Config& Genetic::tournament() {
  // members_ is sorted best first, so the smallest drawn rank wins.
  std::uniform_int_distribution<size_t> pick(0, members_.size() - 1);
  size_t win = pick(rng_);
  for (size_t i = 1; i < kTournament; ++i) win = std::min(win, pick(rng_));
  return members_[win].second;
}

std::optional<Config> Genetic::child() {
  const auto& params = space_.params();
  std::uniform_real_distribution<double> u(0, 1);
  double p_mutate = 1.0 / double(std::max<size_t>(1, params.size()));
  for (int t = 0; t < kRepairTries; ++t) {
    const Config& a = tournament();
    const Config& b = tournament();
    auto pa = space_.positions(a), pb = space_.positions(b);
    std::vector<size_t> pos(params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      pos[i] = u(rng_) < 0.5 ? pa[i] : pb[i];
      int64_t n = int64_t(params[i].values.size());
      if (n > 1 && u(rng_) < p_mutate) {
        int64_t step = u(rng_) < 0.75 ? 1 : 2;
        int64_t p = int64_t(pos[i]) + (u(rng_) < 0.5 ? -step : step);
        pos[i] = size_t(std::clamp<int64_t>(p, 0, n - 1));
      }
    }
    Config x = space_.from_positions(pos);
    if (!q_.seen(x) && space_.valid(x)) return x;
  }
  // Crossover keeps producing seen or invalid children (a converged population): mutate a
  // good parent instead.
  return pool_.mutate(tournament(), rng_, q_);
}

void Genetic::observe(const Observation& o) {
  if (!usable(o)) return;
  auto at = std::upper_bound(members_.begin(), members_.end(), o.value,
                             [](double v, const std::pair<double, Config>& m) { return v < m.first; });
  if (size_t(at - members_.begin()) >= population_) return;
  members_.insert(at, {o.value, o.config});
  if (members_.size() > population_) members_.pop_back();
}

}  // namespace gt::search
