#include "driver.hpp"

#include <chrono>
#include <ctime>
#include <cmath>
#include <deque>
#include <limits>

namespace gt::search {

Observation to_observation(const Config& c, const Outcome& o) {
  Observation obs;
  obs.config = c;
  obs.ok = o.status == Status::ok && std::isfinite(o.median_us) && o.median_us > 0;
  obs.value = o.median_us;
  return obs;
}

SearchResult run_search(Strategy& strategy, const Objective& objective, const Budget& budget,
                        const SearchOptions& options) {
  using clock = std::chrono::steady_clock;
  auto since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };
  const size_t lookahead = options.lookahead == 0 ? 1 : options.lookahead;
  const auto start = clock::now();
  auto cpu_now = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
  };

  SearchResult r;
  std::deque<Config> pending;
  Progress p;
  p.valid_space = options.valid_space;
  double best = std::numeric_limits<double>::infinity();
  for (;;) {
    p.seconds = since(start);
    if (std::string why = budget.reason(p); !why.empty()) {
      r.stop_reason = why;
      break;
    }
    if (pending.size() < lookahead) {
      auto t = clock::now();
      double c0 = cpu_now();
      auto batch = strategy.propose(lookahead - pending.size());
      r.strategy_cpu_seconds += cpu_now() - c0;
      r.strategy_seconds += since(t);
      r.proposed += batch.size();
      for (auto& c : batch) pending.push_back(std::move(c));
    }
    if (pending.empty()) {
      r.stop_reason = "space exhausted";
      break;
    }
    Config c = std::move(pending.front());
    pending.pop_front();
    Observation obs = to_observation(c, objective(c));
    auto t = clock::now();
    double c0 = cpu_now();
    strategy.observe(obs);
    r.strategy_cpu_seconds += cpu_now() - c0;
    r.strategy_seconds += since(t);
    ++p.evaluations;
    if (obs.ok && obs.value < best) {
      best = obs.value;
      r.best = obs;
      p.since_improvement = 0;
    } else {
      ++p.since_improvement;
    }
    r.best_trace.push_back(best);
    r.history.push_back(std::move(obs));
  }
  r.seconds = since(start);
  return r;
}

}  // namespace gt::search
