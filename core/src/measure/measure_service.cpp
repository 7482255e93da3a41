#include "measure/measure_service.hpp"

#include "gpu/nvml.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <random>

namespace gt {

MeasureService::MeasureService(const PluginRegistry& plugins, const CubinCache& cache, int device_index)
    : plugins_(plugins), cache_(cache), compiler_(&cache_), dev_(require_device(device_index)) {
  cuda_check(cudaSetDevice(device_index), "cudaSetDevice");
}

std::string MeasureService::describe() const { return fmt::format("GPU {} ({}), in-process", dev_.index, dev_.name); }

// The CUDA runtime's current device belongs to the calling thread; with several GPUs in one
// process (--no-isolation) one service is called from more than one thread (the cross-GPU
// check runs in threads of its own, after the tuners'), so every entry point selects the
// device first.
void MeasureService::use_device() const { cuda_check(cudaSetDevice(dev_.index), "cudaSetDevice"); }

void MeasureService::set_problem(const Problem& p, Distribution d, uint64_t seed) {
  use_device();
  const std::string key = fmt::format("{} {} {}", p.key(), int(d), seed);
  if (bench_ && key == key_) return;
  if (parked_ && parked_->key == key) {
    std::swap(bench_, parked_->bench);
    std::swap(runnables_, parked_->runnables);
    std::swap(key_, parked_->key);
    std::swap(capped_, parked_->capped);
    return;
  }
  // Park the current problem if the new one still gets all its rotating sets beside it (and a
  // GiB to spare); otherwise free everything first.
  parked_.reset();
  if (bench_) {
    const size_t want = ProblemBench::full_bytes(p, dev_);
    const size_t free_b = memory_info().first;
    if (want < free_b && free_b - want > (size_t(1) << 30))
      parked_ = Prepared{key_, std::move(bench_), std::move(runnables_), capped_};
  }
  runnables_.clear();
  bench_.reset();
  key_.clear();
  capped_ = false;
  bench_ = std::make_unique<ProblemBench>(p, dev_, d, seed);
  bench_->on_call = heartbeat;
  key_ = key;
}

Measurement MeasureService::measure(const Candidate& c, bool quick) {
  if (!bench_) throw RuntimeFailure("measure before set_problem");
  use_device();
  EvaluateOptions o;
  o.quick = quick;
  o.timing = timing;
  o.transform = c.transform;
  o.on_built = built;
  Evaluation ev = evaluate(*c.plugin, bench_->problem(), c.config, dev_, *bench_, compiler_, nullptr, o);
  if (ev.context_lost) context_lost_ = true;
  note_throttle(ev.m.throttle);
  return ev.m;
}

void MeasureService::note_throttle(const std::string& reasons) {
  if (at_power_cap(reasons)) capped_ = true;
}

const Runnable& MeasureService::runnable(const Candidate& c) {
  std::string key = fmt::format("{} {}", c.plugin->name(), to_string(c.transform));
  for (auto v : c.config) key += fmt::format(",{}", v);
  for (auto it = runnables_.begin(); it != runnables_.end(); ++it)
    if (it->first == key) {
      runnables_.splice(runnables_.begin(), runnables_, it);
      return *runnables_.front().second;
    }
  Built b = build_runnable(*c.plugin, bench_->problem(), c.config, c.transform, dev_.limits, dev_.arch(), compiler_);
  if (!b.run)
    throw RuntimeFailure(fmt::format("{} cannot run this config{}: {}", c.plugin->name(),
                                     b.status == Status::compile_failed ? " (compile failed)" : "", b.message));
  runnables_.emplace_front(key, std::move(b.run));
  if (runnables_.size() > 16) runnables_.pop_back();
  return *runnables_.front().second;
}

double MeasureService::settle(const Candidate& c, double cap_s) {
  if (!bench_) throw RuntimeFailure("settle before set_problem");
  use_device();
  try {
    double s = bench_->settle(runnable(c).launch_fn(), cap_s).first;
    note_throttle(Nvml::get().throttle_reasons(dev_.uuid));  // the GPU has just run continuously
    return s;
  } catch (const LaunchError& e) {
    if (e.sticky) context_lost_ = true;
    throw;
  }
}

Retimed MeasureService::retime(const std::vector<Candidate>& cs, const Interleave& how, uint64_t seed) {
  if (!bench_) throw RuntimeFailure("retime before set_problem");
  use_device();
  std::vector<std::vector<double>> samples(cs.size());
  std::vector<std::vector<size_t>> turns(cs.size());  // samples per turn: the mean's blocks
  std::vector<size_t> order(cs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937_64 rng(seed);
  // Each turn samples briefly (a few ms): many alternations average out clock drift. At the
  // power cap each turn first runs its candidate long enough to reach its own clock
  // (Interleave): from the start when this problem has met the cap before, else from the turn
  // that first meets it (the turns before are discarded and the rounds start again).
  TimingOptions turn{how.warmup_s, kTurnMinSamples, kTurnMaxSamples, kTurnMaxTimeS, 0.0};
  bool capped = false;
  auto go_capped = [&] {
    capped = true;
    turn.warmup_s = how.capped_warmup_s;
    for (auto& s : samples) s.clear();
    for (auto& t : turns) t.clear();
  };
  if (how.cap_aware() && capped_) go_capped();
  try {
    for (int r = 0; r < (capped ? how.rounds_at_cap() : how.rounds); ++r) {
      std::shuffle(order.begin(), order.end(), rng);
      for (size_t i : order) {
        Timed t = bench_->time(runnable(cs[i]).launch_fn(), turn);
        note_throttle(t.throttle);
        if (!capped && how.cap_aware() && capped_) {
          go_capped();
          r = -1;
          break;
        }
        samples[i].insert(samples[i].end(), t.samples.begin(), t.samples.end());
        turns[i].push_back(t.samples.size());
      }
    }
  } catch (const LaunchError& e) {
    if (e.sticky) context_lost_ = true;
    throw;
  }
  Retimed out;
  // At the cap (known before, or met during this re-timing, whatever the turns' warm-up) each
  // turn samples one of the governor's clock levels at a random moment: the mean is the figure
  // (Center), its interval from the turns' means, the turns being what is independent.
  const bool at_cap = capped || capped_;
  for (size_t i = 0; i < cs.size(); ++i)
    out.stats.push_back(at_cap ? summarize(samples[i], Center::mean, turns[i]) : summarize(samples[i]));
  out.capped = capped;
  return out;
}

}  // namespace gt
