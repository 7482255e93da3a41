#include "tune/driver.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <deque>
#include <limits>
#include <random>

namespace gt::search {

Observation to_observation(const Config& c, const Outcome& o) {
  Observation obs;
  obs.config = c;
  obs.ok = o.status == Status::ok && std::isfinite(o.median_us) && o.median_us > 0;
  obs.value = o.median_us;
  return obs;
}

namespace {

using WallClock = std::chrono::steady_clock;
double since(WallClock::time_point t) { return std::chrono::duration<double>(WallClock::now() - t).count(); }
double thread_cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// One search's state: what is queued, how far the budget is, the best so far.
class Loop {
 public:
  Loop(Strategy& s, Evaluator& ev, const Budget& b, const SearchOptions& o)
      : strategy_(s), ev_(ev), budget_(b), o_(o), lookahead_(std::max<size_t>(1, o.lookahead)) {
    progress_.valid_space = o.valid_space;
    if (o.shuffle_seed) rng_.seed(*o.shuffle_seed);
  }

  SearchResult run() {
    for (;;) {
      refill();
      progress_.seconds = clock();
      if (ev_.stop_requested()) {
        r_.stop_reason = "interrupted";
        break;
      }
      if (std::string why = budget_.reason(progress_); !why.empty()) {
        r_.stop_reason = why;
        break;
      }
      if (pending_.empty()) {
        r_.stop_reason = exhausted_ ? "space exhausted" : "budget reached";
        break;
      }
      Pending p = std::move(pending_.front());
      pending_.pop_front();
      observe(p.config, p.answer ? *p.answer : ev_.evaluate(p.config));
    }
    r_.seconds = clock();
    return std::move(r_);
  }

 private:
  // Runs f, counting its time as the strategy's.
  template <class F>
  auto timed(F&& f) {
    auto t = WallClock::now();
    const double c0 = thread_cpu_now();
    auto out = f();
    r_.strategy_cpu_seconds += thread_cpu_now() - c0;
    r_.strategy_seconds += since(t);
    return out;
  }

  // Keeps `lookahead` proposals outstanding while the budget allows. An answer given ahead
  // waits for its turn like the others: observed at once, it would reach the strategy before
  // the outcomes of configs proposed earlier, and a strategy that learns from the order
  // (bayes) would take another path than the run that measured them.
  void refill() {
    while (!exhausted_ && pending_.size() < lookahead_) {
      progress_.seconds = clock();
      if (budget_.exhausted(progress_) || ev_.stop_requested()) return;
      const size_t want = std::min<uint64_t>(lookahead_ - pending_.size(), budget_.remaining(progress_, pending_.size()));
      if (want == 0) return;
      std::vector<Config> batch = timed([&] { return strategy_.propose(want); });
      r_.proposed += batch.size();
      if (batch.empty()) {
        exhausted_ = true;
        return;
      }
      if (o_.shuffle_seed) std::shuffle(batch.begin(), batch.end(), rng_);
      for (auto& c : batch) {
        std::optional<Outcome> answer = ev_.ahead(c);
        pending_.push_back({std::move(c), std::move(answer)});
      }
    }
  }

  // The budget's clock: the evaluator's, plus what the stored answers observed so far cost.
  double clock() const { return ev_.seconds() + charged_s_; }

  void observe(const Config& c, const Outcome& o) {
    charged_s_ += o.cost_s;
    Observation obs = to_observation(c, o);
    timed([&] {
      strategy_.observe(obs);
      return 0;
    });
    ++progress_.evaluations;
    if (obs.ok && obs.value < best_) {
      best_ = obs.value;
      r_.best = obs;
      progress_.since_improvement = 0;
    } else {
      ++progress_.since_improvement;
    }
    progress_.seconds = clock();
    r_.best_trace.push_back(best_);
    r_.seconds_trace.push_back(progress_.seconds);
    if (o_.on_evaluated) o_.on_evaluated(obs, progress_);
    r_.history.push_back(std::move(obs));
  }

  Strategy& strategy_;
  Evaluator& ev_;
  const Budget& budget_;
  const SearchOptions& o_;
  const size_t lookahead_;
  std::mt19937_64 rng_;
  struct Pending {
    Config config;
    std::optional<Outcome> answer;  // given ahead (the store's): observed in its turn, not evaluated
  };
  std::deque<Pending> pending_;
  Progress progress_;
  double charged_s_ = 0;  // the stored answers' costs, observed so far
  bool exhausted_ = false;
  double best_ = std::numeric_limits<double>::infinity();
  SearchResult r_;
};

// An objective as an evaluator, on the wall clock.
class ObjectiveEvaluator : public Evaluator {
 public:
  explicit ObjectiveEvaluator(const Objective& f) : f_(f) {}
  Outcome evaluate(const Config& c) override { return f_(c); }
  double seconds() const override { return since(start_); }

 private:
  const Objective& f_;
  WallClock::time_point start_ = WallClock::now();
};

}  // namespace

SearchResult drive(Strategy& strategy, Evaluator& evaluator, const Budget& budget, const SearchOptions& options) {
  return Loop(strategy, evaluator, budget, options).run();
}

SearchResult run_search(Strategy& strategy, const Objective& objective, const Budget& budget,
                        const SearchOptions& options) {
  ObjectiveEvaluator ev(objective);
  return drive(strategy, ev, budget, options);
}

}  // namespace gt::search
