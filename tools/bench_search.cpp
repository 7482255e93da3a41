// bench_search: how close each search strategy gets to the exhaustive optimum within a
// small share of the valid space, on recorded spaces (replay files) or, without any, on the
// synthetic GEMM landscapes. For each strategy: the median over seeds of
// optimum_time / best_time_found after 1, 2, 5 and 10 % of the valid space's evaluations, and
// after 1, 2, 5 and 10 % of the simulated GPU time an exhaustive search of it takes (each
// config costs its recorded measure seconds, plus its compile seconds over the recording's
// compile threads; where the recording holds no times, the estimate a replay charges:
// replay_measurer.hpp); the worst seed at 5 %, and the strategy's own wall time per proposal.
#include "tune/driver.hpp"
#include "base/errors.hpp"
#include "replay/replay.hpp"
#include "replay/replay_measurer.hpp"
#include "strategies/strategy.hpp"
#include "replay/synthetic.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>
#include <thread>
#include <tuple>

using namespace gt;
using namespace gt::search;

namespace {

constexpr double kFractions[] = {0.01, 0.02, 0.05, 0.10};
constexpr double kTarget = 0.97;  // of the optimum, within 5 % of the valid space
constexpr double kInf = std::numeric_limits<double>::infinity();

struct BenchSpace {
  std::string name;
  Space space;
  Objective objective;
  std::function<double(const Config&)> cost;  // simulated GPU seconds of evaluating a config
  uint64_t valid = 0, ok = 0;
  double optimum = kInf;
  double total_s = 0;  // simulated GPU seconds of evaluating every valid config
  std::vector<double> ok_times;  // sorted
  std::vector<std::pair<double, Config>> top;  // the fastest few, fastest first
};

// What a config costs the recorded GPU: its recorded times, else the replay's estimate.
std::function<double(const Config&)> recorded_cost(const RecordedSpace& r, unsigned compile_threads) {
  return [&r, threads = std::max(1u, compile_threads)](const Config& c) {
    auto x = r.recorded(c);
    if (!x) return 0.0;
    const double measure = std::isfinite(x->measure_s) ? x->measure_s : estimated_measure_s(x->explored.median_us, x->quick);
    return measure + (std::isfinite(x->compile_s) ? x->compile_s / threads : 0.0);
  };
}

// Valid points, successes, the optimum and the whole space's simulated time, by enumerating
// the space's raw points.
void survey(BenchSpace& b) {
  for (uint64_t i = 0, raw = b.space.raw_size(); i < raw; ++i) {
    Config c = b.space.at(i);
    if (!b.space.valid(c)) continue;
    ++b.valid;
    b.total_s += b.cost(c);
    Observation o = to_observation(c, b.objective(c));
    if (!o.ok) continue;
    ++b.ok;
    b.ok_times.push_back(o.value);
    b.top.emplace_back(o.value, c);
  }
  std::sort(b.ok_times.begin(), b.ok_times.end());
  size_t keep = std::min<size_t>(b.top.size(), 20);
  std::partial_sort(b.top.begin(), b.top.begin() + std::ptrdiff_t(keep), b.top.end());
  b.top.resize(keep);
  if (!b.ok_times.empty()) b.optimum = b.ok_times.front();
}

size_t within(const BenchSpace& b, double rel) {
  return size_t(std::upper_bound(b.ok_times.begin(), b.ok_times.end(), b.optimum * (1 + rel)) - b.ok_times.begin());
}

double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct RunResult {
  double reached[std::size(kFractions)] = {};    // at a fraction of the evaluations
  double reached_t[std::size(kFractions)] = {};  // at a fraction of the simulated GPU time
  double ms_per_proposal = 0;      // wall
  double cpu_ms_per_proposal = 0;  // this thread's CPU time: what a busy machine does not inflate
};

// The objective on a simulated clock, running until both the evaluations and the GPU time of
// the last checkpoint are spent.
class Simulated : public Evaluator {
 public:
  Simulated(const BenchSpace& b, double fraction)
      : b_(b), stop_n_(uint64_t(std::ceil(fraction * double(b.valid)))), stop_s_(fraction * b.total_s) {}
  Outcome evaluate(const Config& c) override {
    clock_ += b_.cost(c);
    ++n_;
    return b_.objective(c);
  }
  double seconds() const override { return clock_; }
  bool stop_requested() const override { return n_ >= stop_n_ && clock_ >= stop_s_; }

 private:
  const BenchSpace& b_;
  uint64_t stop_n_, n_ = 0;
  double stop_s_, clock_ = 0;
};

RunResult run_one(const BenchSpace& b, const std::string& strategy, uint64_t seed, size_t lookahead, double fraction) {
  auto s = make_strategy(strategy, b.space, seed);
  SearchOptions opt;
  opt.lookahead = lookahead;
  opt.valid_space = b.valid;
  Simulated sim(b, fraction);
  SearchResult r = drive(*s, sim, Budget{}, opt);
  RunResult out;
  auto rate = [&](double best) { return std::isfinite(best) ? b.optimum / best : 0.0; };
  for (size_t i = 0; i < std::size(kFractions); ++i) {
    size_t n = size_t(std::ceil(kFractions[i] * double(b.valid)));
    if (r.best_trace.empty() || n == 0) continue;
    out.reached[i] = rate(r.best_trace[std::min(n, r.best_trace.size()) - 1]);
    // The best found by the last evaluation that ended within the time.
    const double t = kFractions[i] * b.total_s;
    auto end = std::upper_bound(r.seconds_trace.begin(), r.seconds_trace.end(), t);
    if (end != r.seconds_trace.begin()) out.reached_t[i] = rate(r.best_trace[size_t(end - r.seconds_trace.begin()) - 1]);
  }
  out.ms_per_proposal = r.proposed ? 1e3 * r.strategy_seconds / double(r.proposed) : 0;
  out.cpu_ms_per_proposal = r.proposed ? 1e3 * r.strategy_cpu_seconds / double(r.proposed) : 0;
  return out;
}

// The command line's values.
struct Settings {
  std::vector<std::string> files;
  std::vector<std::string> strategies = strategy_names();
  int seeds = 10;
  size_t lookahead = 1;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  uint64_t synthetic_seed = 1;
  std::string write_synthetic;
  bool check = false;
  std::string only;
  size_t show_top = 0;
};

void add_options(CLI::App& app, Settings& s) {
  app.add_option("replays", s.files, "replay files (gemmtune-replay/1 JSON); none: the synthetic spaces");
  app.add_option("--strategies", s.strategies, "strategies to compare")->delimiter(',');
  app.add_option("--seeds", s.seeds, "seeds per strategy")->default_val(10)->check(CLI::Range(1, 1000));
  app.add_option("--lookahead", s.lookahead,
                 "proposals kept outstanding (the tune loop compiles this many ahead of the GPU)")
      ->default_val(1)
      ->check(CLI::Range(1, 256));
  app.add_option("--threads", s.threads, "worker threads")->check(CLI::Range(1, 256));
  app.add_option("--synthetic-seed", s.synthetic_seed, "seed of the synthetic landscapes' failures and noise")
      ->default_val(1);
  app.add_option("--write-synthetic", s.write_synthetic, "write the synthetic spaces as a replay file and exit");
  app.add_option("--top", s.show_top, "also list the N fastest configs of each space (at most 20)");
  app.add_option("--only", s.only, "only the spaces whose name contains this text");
  app.add_flag("--check", s.check, "exit 1 unless the best strategy reaches 97 % of the optimum within 5 % of the valid "
                                   "space on every space, ahead of random");
}

// The spaces benchmarked, beside what their objectives and costs refer to (so it must outlive them).
struct Spaces {
  std::vector<SyntheticGemm> synthetic;
  std::vector<RecordedSpace> recorded;
  std::vector<BenchSpace> list;
};

void write_synthetic_suite(const std::vector<SyntheticGemm>& synthetic, const std::string& path) {
  Recording rec;
  for (auto& g : synthetic) {
    RecordedSpace& rs = rec.space_for({"synthetic sm_90", "synthetic", "sm_90"}, g.problem(), g.space().family(),
                                      g.space().version(), g.space().params());
    for (uint64_t i = 0, raw = g.space().raw_size(); i < raw; ++i) {
      Config c = g.space().at(i);
      Outcome o = g.evaluate(c);
      // Refusals are implied by absence; only what could run is worth the bytes.
      if (o.status != Status::cannot_implement && o.status != Status::resources) rs.add(c, o);
    }
  }
  rec.save(path);
  fmt::print("wrote {} synthetic spaces to {}\n", rec.spaces().size(), path);
}

void add_synthetic(Spaces& out) {
  for (auto& g : out.synthetic) {
    Objective f = g.objective();
    auto cost = [f](const Config& c) { return estimated_measure_s(f(c).median_us, true); };
    out.list.push_back({g.name(), g.space(), f, cost, 0, 0, kInf, 0, {}, {}});
  }
}

void add_recorded(const std::vector<std::string>& files, Spaces& out) {
  std::vector<unsigned> threads;
  for (auto& f : files) {
    Recording rec = Recording::load(f);
    for (auto& s : rec.spaces()) {
      out.recorded.push_back(std::move(s));
      threads.push_back(rec.compile_threads);
    }
  }
  for (size_t i = 0; i < out.recorded.size(); ++i) {
    const RecordedSpace& r = out.recorded[i];
    out.list.push_back({fmt::format("{} {} on {} ({})", r.family(), r.problem().key(), r.device().name, r.recorded()),
                        r.space(), r.objective(), recorded_cost(r, threads[i]), 0, 0, kInf, 0, {}, {}});
  }
}

// One job per (space, strategy, seed); exhaustive does not depend on the seed.
struct Job {
  size_t space, strategy;
  uint64_t seed;
};

std::vector<Job> make_jobs(const std::vector<BenchSpace>& spaces, const Settings& s) {
  std::vector<Job> jobs;
  for (size_t si = 0; si < spaces.size(); ++si) {
    if (spaces[si].ok == 0) continue;
    for (size_t k = 0; k < s.strategies.size(); ++k)
      for (int seed = 0; seed < (s.strategies[k] == "exhaustive" ? 1 : s.seeds); ++seed)
        jobs.push_back({si, k, uint64_t(seed)});
  }
  return jobs;
}

// Every job on --threads workers; throws the last failure, if any.
std::vector<RunResult> run_jobs(const std::vector<Job>& jobs, const std::vector<BenchSpace>& spaces,
                                const Settings& s) {
  std::vector<RunResult> results(jobs.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  std::mutex error_mu;
  std::string error;
  for (unsigned t = 0; t < std::min<size_t>(s.threads, jobs.size()); ++t)
    pool.emplace_back([&] {
      for (size_t j; (j = next++) < jobs.size();) {
        try {
          results[j] = run_one(spaces[jobs[j].space], s.strategies[jobs[j].strategy], jobs[j].seed, s.lookahead,
                               kFractions[std::size(kFractions) - 1]);
        } catch (const std::exception& e) {
          std::lock_guard lock(error_mu);
          error = e.what();
        }
      }
    });
  for (auto& t : pool) t.join();
  if (!error.empty()) throw RuntimeFailure(error);
  return results;
}

// The space's size, optimum and fastest configs.
void print_space_summary(const BenchSpace& b, size_t show_top) {
  fmt::print("\n{}\n", b.name);
  fmt::print("  raw {}, valid {}, ok {}, failed {}; optimum {:.2f} us; within 1/3/10 % of it: {}/{}/{} configs; "
             "all of it: {:.1f} s of simulated GPU time\n",
             b.space.raw_size(), b.valid, b.ok, b.valid - b.ok, b.optimum, within(b, 0.01), within(b, 0.03),
             within(b, 0.10), b.total_s);
  for (size_t i = 0; i < std::min(show_top, b.top.size()); ++i)
    fmt::print("  #{:<2} {:9.2f} us  {}\n", i + 1, b.top[i].first, b.space.name(b.top[i].second));
}

void print_strategy_header(const BenchSpace& b) {
  fmt::print("  {:<11} {:>7} {:>7} {:>7} {:>7} {:>10} {:>12} {:>8}   {:>7} {:>7} {:>7} {:>7}\n", "strategy", "1 %",
             "2 %", "5 %", "10 %", "worst@5%", "ms/proposal", "cpu ms", "1 %t", "2 %t", "5 %t", "10 %t");
  fmt::print("  {:<11} {:>7} {:>7} {:>7} {:>7} {:>10} {:>12} {:>8}   {:>6.1f}s {:>6.1f}s {:>6.1f}s {:>6.1f}s\n",
             "(evals; s)", size_t(std::ceil(0.01 * double(b.valid))), size_t(std::ceil(0.02 * double(b.valid))),
             size_t(std::ceil(0.05 * double(b.valid))), size_t(std::ceil(0.10 * double(b.valid))), "", "", "",
             0.01 * b.total_s, 0.02 * b.total_s, 0.05 * b.total_s, 0.10 * b.total_s);
}

// One strategy's results on one space, over its seeds.
struct Seeds {
  std::vector<double> at[std::size(kFractions)], at_t[std::size(kFractions)], ms, cpu;
};

Seeds seeds_of(const std::vector<Job>& jobs, const std::vector<RunResult>& results, size_t si, size_t k) {
  Seeds out;
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (jobs[j].space != si || jobs[j].strategy != k) continue;
    for (size_t i = 0; i < std::size(kFractions); ++i) {
      out.at[i].push_back(results[j].reached[i]);
      out.at_t[i].push_back(results[j].reached_t[i]);
    }
    out.ms.push_back(results[j].ms_per_proposal);
    out.cpu.push_back(results[j].cpu_ms_per_proposal);
  }
  return out;
}

// Each strategy's row on space si; returns whether the best one met the target, ahead of random.
bool print_strategies(size_t si, const Settings& s, const std::vector<Job>& jobs,
                      const std::vector<RunResult>& results) {
  // The best strategy: highest median at 5 %, then highest worst seed, then median at 2 %.
  std::tuple<double, double, double> best{-1, -1, -1};
  double best5 = 0, random5 = 0;
  std::string best_name;
  for (size_t k = 0; k < s.strategies.size(); ++k) {
    const Seeds r = seeds_of(jobs, results, si, k);
    double m5 = median(r.at[2]);
    fmt::print("  {:<11} {:>7.3f} {:>7.3f} {:>7.3f} {:>7.3f} {:>10.3f} {:>12.3f} {:>8.3f}   {:>7.3f} {:>7.3f} {:>7.3f} "
               "{:>7.3f}\n",
               s.strategies[k], median(r.at[0]), median(r.at[1]), m5, median(r.at[3]),
               *std::min_element(r.at[2].begin(), r.at[2].end()), median(r.ms), median(r.cpu), median(r.at_t[0]),
               median(r.at_t[1]), median(r.at_t[2]), median(r.at_t[3]));
    if (s.strategies[k] == "random") random5 = m5;
    std::tuple<double, double, double> rank{m5, *std::min_element(r.at[2].begin(), r.at[2].end()), median(r.at[1])};
    if (s.strategies[k] != "exhaustive" && rank > best) {
      best = rank;
      best5 = m5;
      best_name = s.strategies[k];
    }
  }
  bool met = best5 >= kTarget && best5 > random5;
  fmt::print("  best within 5 %: {} at {:.3f} of the optimum (target {:.2f}, ahead of random's {:.3f}): {}\n",
             best_name, best5, kTarget, random5, met ? "met" : "MISSED");
  return met;
}

// The whole benchmark; its exit code.
int run(const Settings& s) {
  for (auto& name : s.strategies) make_strategy(name, Space("probe", "0", {Param{"p", "", {0}, {}, 0}}), 0);

  Spaces spaces;
  if (s.files.empty()) {
    spaces.synthetic = SyntheticGemm::suite(s.synthetic_seed);
    if (!s.write_synthetic.empty()) {
      write_synthetic_suite(spaces.synthetic, s.write_synthetic);
      return 0;
    }
    add_synthetic(spaces);
  } else {
    add_recorded(s.files, spaces);
  }
  std::vector<BenchSpace>& list = spaces.list;
  std::erase_if(list, [&](const BenchSpace& b) { return b.name.find(s.only) == std::string::npos; });
  if (list.empty()) throw InputError(fmt::format("--only: no space's name contains '{}'", s.only));
  for (auto& b : list) survey(b);

  const std::vector<Job> jobs = make_jobs(list, s);
  const std::vector<RunResult> results = run_jobs(jobs, list, s);

  bool all_met = true;
  for (size_t si = 0; si < list.size(); ++si) {
    print_space_summary(list[si], s.show_top);
    if (list[si].ok == 0) {
      fmt::print("  no successful config: nothing to find\n");
      continue;
    }
    print_strategy_header(list[si]);
    all_met &= print_strategies(si, s, jobs, results);
  }
  return s.check && !all_met ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("bench_search: fraction of the exhaustive optimum each search strategy reaches after 1, 2, 5 and "
               "10 % of the valid space (median over seeds), on replay files or the synthetic GEMM landscapes");
  Settings s;
  add_options(app, s);
  CLI11_PARSE(app, argc, argv);

  try {
    return run(s);
  } catch (const InputError& e) {
    fmt::print(stderr, "bench_search: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_search: {}\n", e.what());
    return 1;
  }
}
