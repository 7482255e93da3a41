#include "job/run.hpp"

#include "base/errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

namespace gt::search {

namespace {

// Runs f(gpu) for every GPU, each in its own thread (one GPU: in this thread). The first
// exception a GPU's thread ends with (a write to the store that failed) is rethrown here once
// every thread has finished; `failed` tells the others to stop taking work.
template <class F>
void on_every_gpu(size_t n, std::atomic<bool>& failed, F&& f) {
  if (n == 1) {
    f(size_t(0));
    return;
  }
  std::exception_ptr first;
  std::mutex mu;
  std::vector<std::thread> threads;
  for (size_t i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      try {
        f(i);
      } catch (...) {
        failed = true;
        std::lock_guard lock(mu);
        if (!first) first = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace

RunResult run_job(const ResolvedJob& resolved, const std::vector<RunGpu>& gpus, const RunContext& ctx) {
  // An FP8 problem a GPU cannot run at all is bad input, found before the first measurement.
  for (const RunGpu& gpu : gpus)
    for (size_t i : resolved.mine) {
      const gt_device& d = gpu.measurer->device().limits;
      if (auto why = fp8_device_refusal(resolved.problems[i].problem, d.cc_major, d.cc_minor)) throw InputError(*why);
    }
  RunResult res;
  res.outcomes.resize(resolved.problems.size());
  res.gpu_of.assign(resolved.problems.size(), -1);
  std::atomic<size_t> next{0};
  std::mutex mu;  // guards res and ctx.on_problem
  std::atomic<bool> failed{false};
  auto stopped = [&] { return (resolved.options.stop && resolved.options.stop->load()) || failed; };
  // Every problem's fixed configs on every GPU, before the first measurement: a config a
  // library family (cuBLASLt, asked on the GPU) does not have is bad input, found now and not
  // after the problems before it were tuned.
  std::vector<std::map<size_t, std::map<std::string, std::vector<Config>>>> fixed(gpus.size());
  for (size_t g = 0; g < gpus.size(); ++g)
    for (size_t i : resolved.mine)
      if (!resolved.problems[i].configs.empty())
        fixed[g][i] = fixed_configs(resolved.problems[i], gpus[g].spaces, ctx.plugins, gpus[g].measurer->device().limits,
                                    resolved.job);
  on_every_gpu(gpus.size(), failed, [&](size_t g) {
    const RunGpu& gpu = gpus[g];
    Tuner tuner(ctx.plugins, *gpu.measurer, ctx.store, ctx.pool, gpu.spaces, gpu.provenance, resolved.options);
    if (ctx.on_tuner) ctx.on_tuner(tuner, g);
    for (size_t j; (j = next++) < resolved.mine.size() && !stopped();) {
      const size_t i = resolved.mine[j];
      const ResolvedProblem& pp = resolved.problems[i];
      ProblemOutcome po = tuner.tune(pp.problem, pp.families, fixed[g][i]);
      std::lock_guard lock(mu);
      if (ctx.on_problem) ctx.on_problem(po, g);
      res.outcomes[i] = std::move(po);
      res.gpu_of[i] = int(g);
    }
  });
  res.stopped = stopped();
  if (gpus.size() > 1 && resolved.consistency_sample.value_or(gpus.size()) > 0 && !res.stopped)
    res.consistency = check_consistency(resolved, gpus, ctx, res);
  return res;
}

std::string consistency_tune_id(const std::string& tune_id) { return tune_id + "/consistency"; }

std::vector<ConsistencySample> check_consistency(const ResolvedJob& resolved, const std::vector<RunGpu>& gpus,
                                                 const RunContext& ctx, const RunResult& done) {
  // The sample: the first problem each GPU decided (in the job's order), then the next ones,
  // up to the sample size; each its problem's winner.
  std::vector<ConsistencySample> sample;
  const size_t want = resolved.consistency_sample.value_or(gpus.size());
  for (size_t round = 0; sample.size() < want; ++round) {
    bool any = false;
    for (size_t g = 0; g < gpus.size() && sample.size() < want; ++g) {
      size_t seen = 0;
      for (size_t i = 0; i < done.outcomes.size(); ++i) {
        if (done.gpu_of[i] != int(g) || !done.outcomes[i] || done.outcomes[i]->winner < 0) continue;
        if (seen++ != round) continue;
        const FamilyOutcome& w = done.outcomes[i]->families[size_t(done.outcomes[i]->winner)];
        sample.push_back(
            {done.outcomes[i]->problem, w.family, w.best_name, w.best_transform, g, {}, kNaN, w.best_params});
        any = true;
        break;
      }
    }
    if (!any) break;
  }
  for (auto& s : sample) s.per_gpu.resize(gpus.size());
  // Each GPU fills its own slot of every sample; the store is safe to share.
  std::atomic<bool> failed{false};
  on_every_gpu(gpus.size(), failed, [&](size_t g) {
    const RunGpu& gpu = gpus[g];
    for (auto& s : sample) {
      Measurement& m = s.per_gpu[g];
      try {
        Space space = gpu.spaces(s.family, transformed_problem(s.problem, s.transform));
        std::string err;
        auto c = space.parse(family_config_name(s.config_name, s.transform), &err);
        if (!c) throw RuntimeFailure(err);
        Candidate cand{s.family, ctx.plugins ? ctx.plugins->find(s.family) : nullptr, *c, s.transform};
        gpu.measurer->set_problem(s.problem, resolved.options.dist, resolved.options.input_seed);
        gpu.measurer->settle(cand, resolved.options.settle_s);
        m = gpu.measurer->measure(cand, false);
        m.message = fmt::format("consistency: the winner of GPU {}'s problem, timed on each of {} GPUs", s.decided_on,
                                gpus.size());
        if (ctx.store) {
          StoredRow row = measured_row(s.problem, space, *c, m, gpu.provenance(s.family, false),
                                       consistency_tune_id(resolved.options.tune_id), gpu.measurer->is_replay(),
                                       s.transform);
          note_rank(row, cand.plugin, transformed_problem(s.problem, s.transform), gpu.measurer->device().limits);
          ctx.store->insert(row);
        }
      } catch (const StoreWriteError&) {
        throw;
      } catch (const std::exception& e) {
        m.status = Status::runtime_fault;
        m.message = e.what();
      }
    }
  });
  for (auto& s : sample) {
    double lo = kNaN, hi = kNaN;
    for (auto& m : s.per_gpu)
      if (m.status == Status::ok) {
        lo = std::isnan(lo) ? m.time_us() : std::min(lo, m.time_us());
        hi = std::isnan(hi) ? m.time_us() : std::max(hi, m.time_us());
      }
    s.spread = hi / lo - 1;
  }
  return sample;
}

}  // namespace gt::search
