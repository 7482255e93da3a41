#include "strategies/strategy_anneal.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gt::search {
namespace {
// On log(time): at T0 a move 5 % slower is accepted with probability 1/e.
constexpr double kT0 = 0.05;
constexpr double kTmin = 0.002;
constexpr double kCooling = 0.96;  // per evaluation
constexpr size_t kPatience = 40;
}  // namespace

Annealing::Annealing(const Space& space, uint64_t seed, std::vector<Config> first)
    : space_(space), rng_(seed), q_(space, std::move(first)), pool_(space), temperature_(kT0) {
  size_t movable = 0;
  for (auto& p : space_.params()) movable += p.values.size() > 1;
  initial_ = std::max<size_t>(4, movable);
}

std::vector<Config> Annealing::propose(size_t max) {
  std::vector<Config> out;
  Config c;
  while (out.size() < max && q_.next(&c)) out.push_back(c);
  while (out.size() < max) {
    bool walking = current_ && q_.proposed() >= initial_;
    std::optional<Config> x;
    if (jump_ && !q_.seen(*jump_)) x = std::move(jump_);
    jump_.reset();
    if (!x && walking) x = pool_.mutate(*current_, rng_, q_);
    if (!x && walking) {  // every config near the state is taken
      restart();
      if (jump_) x = std::move(jump_);
      jump_.reset();
    }
    if (!x) x = pool_.draw_unseen(rng_, q_);  // before the walk, or a restart from the best
    if (!x) break;                           // nothing left anywhere
    q_.mark(*x);
    out.push_back(std::move(*x));
  }
  return out;
}

void Annealing::restart() {
  temperature_ = kT0;
  since_best_ = 0;
  if (best_ && std::uniform_real_distribution<double>(0, 1)(rng_) < 0.5) {
    current_ = best_;
    current_log_ = best_log_;
    fresh_start_ = false;
    return;
  }
  // Jump to a random config, proposed next; the walk continues around it, and the first ok
  // result there becomes the state.
  jump_ = pool_.draw_unseen(rng_, q_);
  if (!jump_) return;
  current_ = jump_;
  current_log_ = std::numeric_limits<double>::infinity();
  fresh_start_ = true;
}

void Annealing::observe(const Observation& o) {
  ++observed_;
  temperature_ = std::max(kTmin, temperature_ * kCooling);
  if (!usable(o)) {  // a failure is never a state of the walk
    if (++since_best_ >= kPatience) restart();
    return;
  }
  double v = std::log(o.value);
  if (!best_ || v < best_log_) {
    best_ = o.config;
    best_log_ = v;
    since_best_ = 0;
  } else if (++since_best_ >= kPatience) {
    restart();
  }
  if (!current_ || fresh_start_ || (observed_ <= initial_ && v < current_log_)) {
    // Before the walk starts its position is the best result so far; after a restart into
    // a random region, the first result there.
    current_ = o.config;
    current_log_ = v;
    fresh_start_ = false;
    return;
  }
  if (observed_ <= initial_) return;
  double delta = v - current_log_;
  if (delta <= 0 || std::uniform_real_distribution<double>(0, 1)(rng_) < std::exp(-delta / temperature_)) {
    current_ = o.config;
    current_log_ = v;
  }
}

}  // namespace gt::search
