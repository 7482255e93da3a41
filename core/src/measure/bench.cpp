#include "measure/bench.hpp"

#include <limits>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cmath>

namespace gt {

using Clock = std::chrono::steady_clock;
static double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

LaunchError::LaunchError(cudaError_t e, const std::string& what)
    : RuntimeFailure(fmt::format("{}: {} ({})", what, cudaGetErrorString(e), cudaGetErrorName(e))),
      code(e),
      sticky(is_sticky(e)) {}

Tolerance tolerance_for(const Problem& p) {
  const double u_acc = p.fp8() ? std::ldexp(1.0, -13) : std::ldexp(1.0, -24);  // see bench.hpp
  double u_in = p.in == DType::tf32 ? std::ldexp(1.0, -11) : 0.0;  // operands rounded to tf32
  double u_out = p.out == DType::f16    ? std::ldexp(1.0, -11)
                 : p.out == DType::bf16 ? std::ldexp(1.0, -8)
                 : p.out == DType::e4m3 ? std::ldexp(1.0, -4)
                 : p.out == DType::e5m2 ? std::ldexp(1.0, -3)
                                        : std::ldexp(1.0, -24);
  double fro = 4.0 * u_in + 2.0 * u_out + 4.0 * u_acc * std::sqrt(double(p.k)) + 1e-12;
  return {fro, 8.0 * fro};
}

double fp8_output_scale(const Problem& p) { return 1.0 / std::sqrt(double(p.k)); }

size_t ProblemBench::min_bytes(const Problem& p) {
  // In floating point: near 2^31 per dimension the byte counts overflow 64 bits, and the
  // refusal below must still see them as too large.
  const double a = double(p.a_rows()) * double(p.lda) * double(size_of(p.in));
  const double b = double(p.b_rows()) * double(p.ldb) * double(size_of(p.in_b));
  const double c = double(p.m) * double(p.ldc) * double(size_of(p.out));
  const double ref = double(p.m) * double(p.n) * double(sizeof(double));
  const double total = a + b + c + ref + 4096.0;
  return total >= 1.8e19 ? std::numeric_limits<size_t>::max() : size_t(total);
}

// Enough sets that their total is at least twice the L2.
size_t ProblemBench::wanted_sets(const Problem& p, const DeviceInfo& dev) {
  const double set_bytes = double(p.bytes_a() + p.bytes_b() + p.bytes_c());
  return std::clamp<size_t>(size_t(std::ceil(2.0 * double(dev.limits.l2_bytes) / set_bytes)) + 1, 1, 64);
}

size_t ProblemBench::full_bytes(const Problem& p, const DeviceInfo& dev) {
  const size_t need = min_bytes(p);
  if (need == std::numeric_limits<size_t>::max()) return need;
  return need + (wanted_sets(p, dev) - 1) * (p.bytes_a() + p.bytes_b() + p.bytes_c());
}

ProblemBench::ProblemBench(const Problem& p, const DeviceInfo& dev, Distribution dist, uint64_t seed, size_t max_bytes)
    : p_(p), dev_(dev), dist_(dist), seed_(seed) {
  cuda_check(cudaSetDevice(dev.index), "cudaSetDevice");
  auto [free_b, total_b] = memory_info();
  size_t need = min_bytes(p);
  if (need > free_b)
    throw RuntimeFailure(fmt::format("{} needs {:.2f} GiB of device memory (inputs, output, float64 reference); "
                                     "{:.2f} GiB of {:.2f} GiB are free",
                                     p.key(), double(need) / (1ull << 30), double(free_b) / (1ull << 30),
                                     double(total_b) / (1ull << 30)));
  size_t set_bytes = p.bytes_a() + p.bytes_b() + p.bytes_c();
  size_t want = wanted_sets(p, dev);
  size_t cap = max_bytes ? max_bytes : size_t(double(free_b) * 0.8);
  size_t fit = cap > need ? 1 + (cap - need) / set_bytes : 1;
  size_t nsets = std::clamp<size_t>(std::min(want, fit), 1, 64);
  cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  events_.assign(size_t(2 * 2 * kMaxBatch), nullptr);
  for (auto& e : events_) cuda_check(cudaEventCreate(&e), "cudaEventCreate");
  for (auto& e : done_) cuda_check(cudaEventCreate(&e), "cudaEventCreate");
  cuda_check(cudaEventCreate(&t_ref_), "cudaEventCreate");
  for (size_t i = 0; i < nsets; ++i) {
    Set s{DeviceBuffer(p.bytes_a()), DeviceBuffer(p.bytes_b()), DeviceBuffer(p.bytes_c()), {}, {}, {}};
    // Every set is random (never zeros unless asked: zeros run faster and hide bugs).
    const uint64_t seed_a = seed * 0x9e3779b97f4a7c15ull + 2 * i + 1, seed_b = seed_a + 1;
    if (p.fp8()) {
      // Drawn like the others, then quantised with scales derived from each group's amax.
      s.scale_a = DeviceBuffer(p.scale_count_a() * sizeof(float));
      s.scale_b = DeviceBuffer(p.scale_count_b() * sizeof(float));
      fill_quantised(p, GT_OPERAND_A, s.a.get(), static_cast<float*>(s.scale_a.get()), seed_a, dist, stream_);
      fill_quantised(p, GT_OPERAND_B, s.b.get(), static_cast<float*>(s.scale_b.get()), seed_b, dist, stream_);
      if (is_fp8(p.out)) {
        const float d = float(fp8_output_scale(p));
        s.scale_d = DeviceBuffer(sizeof(float));
        cuda_check(cudaMemcpyAsync(s.scale_d.get(), &d, sizeof d, cudaMemcpyHostToDevice, stream_), "the output's scale");
        cuda_check(cudaStreamSynchronize(stream_), "the output's scale");  // `d` is on this stack
      }
    } else {
      fill_random(s.a.get(), p.in, p.bytes_a() / size_of(p.in), seed_a, dist, stream_);
      fill_random(s.b.get(), p.in_b, p.bytes_b() / size_of(p.in_b), seed_b, dist, stream_);
    }
    fill_nan(s.c.get(), p.out, p.bytes_c() / size_of(p.out), stream_);
    sets_.push_back(std::move(s));
  }
  // The stream hold's flags. Without mapped memory timing still works, unheld (Timed::note).
  void* h = nullptr;
  if (cudaHostAlloc(&h, 4 * sizeof(int), cudaHostAllocMapped) == cudaSuccess) {
    void* d = nullptr;
    if (cudaHostGetDevicePointer(&d, h, 0) == cudaSuccess) {
      hold_ = static_cast<volatile int*>(h);
      hold_dev_ = static_cast<int*>(d);
    } else {
      cudaFreeHost(h);
    }
  }
  cudaGetLastError();
  ref_ = DeviceBuffer(size_t(p.m) * size_t(p.n) * sizeof(double));
  scratch_ = DeviceBuffer(4096);
  reference_gemm(p, operands(0), static_cast<double*>(ref_.get()), stream_);
  cuda_check(cudaStreamSynchronize(stream_), "preparing inputs and the float64 reference");
}

Operands ProblemBench::operands(int set) const {
  const Set& s = sets_.at(size_t(set));
  // A constant operand is one buffer a program passes on every call (its weights), which a
  // transform copies once: every set passes set 0's, so that rotating does not make it look
  // changed (and copied) on each call.
  const Set& first = sets_.front();
  Operands o{p_.constant & kConstantA ? first.a.get() : s.a.get(), p_.constant & kConstantB ? first.b.get() : s.b.get(),
             s.c.get(), {}};
  o.scales.a = static_cast<const float*>(s.scale_a.get());
  o.scales.b = static_cast<const float*>(s.scale_b.get());
  o.scales.d = static_cast<const float*>(s.scale_d.get());
  return o;
}

ProblemBench::~ProblemBench() {
  for (auto e : events_)
    if (e) cudaEventDestroy(e);
  for (auto e : done_)
    if (e) cudaEventDestroy(e);
  if (t_ref_) cudaEventDestroy(t_ref_);
  if (stream_) cudaStreamDestroy(stream_);
  if (hold_) cudaFreeHost(const_cast<int*>(hold_));
}

void ProblemBench::check_launch(cudaError_t e, const char* what) {
  if (e == cudaSuccess) e = cudaGetLastError();
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw LaunchError(e, what);
  }
}

VerifyResult ProblemBench::verify(const LaunchFn& fn) {
  VerifyResult v;
  fill_nan(sets_[0].c.get(), p_.out, p_.bytes_c() / size_of(p_.out), stream_);
  auto t0 = Clock::now();
  check_launch(fn(operands(0), stream_), "launch");
  check_launch(cudaStreamSynchronize(stream_), "running the candidate");
  if (on_call) on_call(since(t0));
  ErrorSums e = compare_to_reference(p_, sets_[0].c.get(), static_cast<const double*>(ref_.get()), scratch_.get(), stream_);
  Tolerance tol = tolerance_for(p_);
  v.nonfinite = e.nonfinite;
  v.rel_fro = e.sum_sq_ref > 0 ? std::sqrt(e.sum_sq_diff / e.sum_sq_ref) : std::sqrt(e.sum_sq_diff);
  v.max_norm = e.max_abs_ref > 0 ? e.max_abs_diff / e.max_abs_ref : e.max_abs_diff;
  if (e.nonfinite > 0) {
    v.message = fmt::format("{} of {} outputs are NaN or Inf (unwritten or overflowed)", e.nonfinite, p_.m * p_.n);
    v.rel_fro = v.max_norm = kNaN;
  } else if (!(v.rel_fro <= tol.rel_fro)) {
    v.message = fmt::format("relative Frobenius error {:.3e} exceeds {:.3e}", v.rel_fro, tol.rel_fro);
  } else if (!(v.max_norm <= tol.max_norm)) {
    v.message = fmt::format("normalised max error {:.3e} exceeds {:.3e}", v.max_norm, tol.max_norm);
  } else {
    v.ok = true;
  }
  return v;
}

void ProblemBench::launch_next(const LaunchFn& fn) {
  next_set_ = (next_set_ + 1) % rotation();
  check_launch(fn(operands(next_set_), stream_), "launch");
}

// Calls of one batch are queued back to back; a batch lasts about kBatchTargetS (by the first
// call's wall time) and has at most kMaxBatch calls (bench.hpp).
static int batch_size(double call_s, int cap) {
  const int b = int(std::ceil(kBatchTargetS / std::max(call_s, 1e-7)));
  return std::clamp(b, 1, std::max(1, std::min(cap, kMaxBatch)));
}

std::pair<double, double> ProblemBench::settle(const LaunchFn& fn, double cap_s) {
  auto t0 = Clock::now();
  Nvml& nvml = Nvml::get();
  std::vector<double> clocks;
  bool capped = false;
  auto last_read = Clock::now();
  // One call alone sizes the batches; then batches back to back with the next one queued before
  // the last is waited for, so the GPU never idles: the power and clock of continuous use.
  launch_next(fn);
  check_launch(cudaStreamSynchronize(stream_), "settling the clock");
  if (on_call) on_call(since(t0));
  const int batch = batch_size(since(t0), kMaxBatch);
  int slot = 0;
  bool in_flight = false;
  auto b0 = Clock::now();
  while (since(t0) < cap_s) {
    for (int i = 0; i < batch; ++i) launch_next(fn);
    check_launch(cudaEventRecord(done_[slot], stream_), "cudaEventRecord");
    if (in_flight) {
      check_launch(cudaEventSynchronize(done_[1 - slot]), "settling the clock");
      if (on_call) on_call(since(b0));
      b0 = Clock::now();
    }
    in_flight = true;
    slot = 1 - slot;
    if (!nvml.available()) {
      if (since(t0) >= std::min(cap_s, kSettleMinS)) break;  // no clock to watch: the minimum
      continue;
    }
    if (std::chrono::duration<double>(Clock::now() - last_read).count() >= 0.05) {
      last_read = Clock::now();
      clocks.push_back(nvml.read(dev_.uuid).sm_clock_mhz);
      if (!capped && at_power_cap(nvml.throttle_reasons(dev_.uuid))) capped = true;
      // Stable: the last ten readings (500 ms) within 1 % of each other, after kSettleMinS
      // (a power cap can take about a second to engage; a boost clock is stable before that),
      // or kCappedSettleMinS once the cap has engaged.
      if (clocks.size() >= 10) {
        auto first = clocks.end() - 10;
        auto [lo, hi] = std::minmax_element(first, clocks.end());
        if (*hi - *lo <= 0.01 * *hi && since(t0) >= std::min(cap_s, capped ? kCappedSettleMinS : kSettleMinS)) break;
      }
    }
  }
  check_launch(cudaStreamSynchronize(stream_), "settling the clock");
  return {since(t0), clocks.empty() ? kNaN : clocks.back()};
}

namespace {
// NVML's readings while sampling: every one kept in Timed::readings, their medians and the
// throttle reasons seen summarised at the end.
struct SensorLog {
  std::vector<double> clocks, mclocks, power, temp;
  std::string throttle;  // every reason seen, ';'-separated
  void read(Nvml& nvml, const std::string& uuid, Clock::time_point t1, Timed& t) {
    GpuSensors g = nvml.read(uuid);
    t.readings.push_back({since(t1), g.sm_clock_mhz, g.power_w, g.temp_c});  // when the reading was taken
    clocks.push_back(g.sm_clock_mhz);
    mclocks.push_back(g.mem_clock_mhz);
    power.push_back(g.power_w);
    temp.push_back(g.temp_c);
    t.sensors.power_limit_w = g.power_limit_w;
    std::string r = nvml.throttle_reasons(uuid);
    if (!r.empty() && r != "none" && throttle.find(r) == std::string::npos) throttle += (throttle.empty() ? "" : ";") + r;
  }
  void finish(bool nvml_available, Timed& t) const {
    auto med = [](std::vector<double> v) { return v.empty() ? kNaN : summarize(std::move(v)).median; };
    t.sensors.sm_clock_mhz = med(clocks);
    t.sensors.mem_clock_mhz = med(mclocks);
    t.sensors.power_w = med(power);
    t.sensors.temp_c = med(temp);
    t.throttle = throttle.empty() ? (nvml_available ? "none" : "") : throttle;
  }
};

// Whether sampling may stop: max_samples reached, or min_samples and max_time_s, or a
// confidence interval within target_ci; never before min_time_s (longer at the power cap).
bool enough_samples(const std::vector<double>& samples, double elapsed, const std::string& throttle, int batch,
                    const TimingOptions& o) {
  const int n = int(samples.size());
  const double min_time = std::max(o.min_time_s, at_power_cap(throttle) ? o.capped_min_time_s : 0.0);
  if (n >= o.max_samples && elapsed >= min_time) return true;
  if (n < o.min_samples) return false;
  if (elapsed >= std::max(o.max_time_s, min_time)) return true;
  // The interval costs a sort: unbatched, it is computed every fifth sample.
  return elapsed >= min_time && (batch > 1 || n % 5 == 0) &&
         summarize(samples, center_for(throttle)).ci_rel() <= o.target_ci;
}
}  // namespace

// Warm-up: two calls alone (the faster one's wall time sizes the batches), then batches
// until warmup_s from t0. Returns the batch size the samples use.
int ProblemBench::warm_up(const LaunchFn& fn, const TimingOptions& o, bool hold, Clock::time_point t0) {
  double first_s = 0;
  for (int i = 0; i < 2; ++i) {
    auto c0 = Clock::now();
    launch_next(fn);
    check_launch(cudaStreamSynchronize(stream_), "warm-up");
    first_s = i == 0 ? since(c0) : std::min(first_s, since(c0));
    if (on_call) on_call(since(c0));
  }
  // Held, the calls of a batch run back to back, as in continuous use; unheld, one at a time
  // with the GPU idle in between (the older method, whose intervals include the launch).
  const int batch = hold ? batch_size(first_s, o.max_samples) : 1;
  do {
    auto b0 = Clock::now();
    for (int i = 0; i < batch; ++i) launch_next(fn);
    check_launch(cudaStreamSynchronize(stream_), "warm-up");
    if (on_call) on_call(since(b0));
  } while (since(t0) < o.warmup_s);
  return batch;
}

Timed ProblemBench::time(const LaunchFn& fn, const TimingOptions& o) {
  Timed t;
  auto t0 = Clock::now();
  Nvml& nvml = Nvml::get();
  // Longer than any host needs to queue a batch; a call that blocks the host (a synchronising
  // allocation) meets it, and timing goes on unheld.
  constexpr double kHoldTimeout = 0.05;
  // GEMMTUNE_TIMING_HOLD=0 times unheld (to see what the host's launch latency adds).
  const char* env = std::getenv("GEMMTUNE_TIMING_HOLD");
  const bool want = o.hold && !(env && std::string(env) == "0");
  bool hold = want && hold_ != nullptr;
  t.note = !o.hold  ? ""
           : !want  ? "timed unheld: GEMMTUNE_TIMING_HOLD=0"
           : hold   ? ""
                    : "timed unheld: no mapped host memory for the stream hold";
  int batch = warm_up(fn, o, hold, t0);

  std::vector<double> samples;
  SensorLog sensors;
  std::string& throttle = sensors.throttle;
  auto t1 = Clock::now();
  auto last_read = Clock::now() - std::chrono::seconds(1);
  bool have_ref = false;
  int queued[2] = {0, 0};
  Clock::time_point queued_at[2];
  // One batch on slot k: [hold k] (e0 call e1) x batch, then the hold released. Queued behind
  // the batch before it, its hold is already released when the GPU reaches it, so the two
  // batches run back to back; the first one waits until all of its calls are queued.
  auto queue = [&](int k) {
    cudaEvent_t* ev = &events_[size_t(k) * 2 * kMaxBatch];
    if (hold) {
      hold_[2 * k] = 0;
      hold_[2 * k + 1] = 0;
      std::atomic_thread_fence(std::memory_order_seq_cst);
      launch_hold(hold_dev_ + 2 * k, hold_dev_ + 2 * k + 1, kHoldTimeout, stream_);
    }
    if (!have_ref) {
      check_launch(cudaEventRecord(t_ref_, stream_), "cudaEventRecord");
      have_ref = true;
    }
    for (int i = 0; i < batch; ++i) {
      check_launch(cudaEventRecord(ev[2 * i], stream_), "cudaEventRecord");
      launch_next(fn);
      check_launch(cudaEventRecord(ev[2 * i + 1], stream_), "cudaEventRecord");
    }
    if (hold) {
      std::atomic_thread_fence(std::memory_order_seq_cst);
      hold_[2 * k] = 1;  // release: everything of this batch is queued behind the hold
    }
    queued[k] = batch;
    queued_at[k] = Clock::now();
  };
  // Waits for slot k's batch; false when its hold timed out (its samples are dropped).
  auto collect = [&](int k) {
    cudaEvent_t* ev = &events_[size_t(k) * 2 * kMaxBatch];
    const int n = queued[k];
    check_launch(cudaEventSynchronize(ev[2 * n - 1]), "running the candidate");
    if (on_call) on_call(since(queued_at[k]));
    if (hold && hold_[2 * k + 1] != 0) return false;
    for (int i = 0; i < n; ++i) {
      float ms = 0, end_ms = 0;
      check_launch(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]), "cudaEventElapsedTime");
      check_launch(cudaEventElapsedTime(&end_ms, t_ref_, ev[2 * i + 1]), "cudaEventElapsedTime");
      samples.push_back(double(ms) * 1000.0);
      t.sample_t.push_back(double(end_ms) * 1e-3);
    }
    return true;
  };
  // Batches in flight: two, so that the next is queued while one runs; one for a call long
  // enough to fill a batch alone (the host's gap is then negligible) or unheld.
  int depth = hold && batch > 1 ? 2 : 1;
  int slot = 0;
  queue(slot);
  for (;;) {
    if (depth == 2) queue(1 - slot);
    if (!collect(slot)) {
      // The hold gave up: the host could not queue the batch in time (a call that blocks it).
      check_launch(cudaStreamSynchronize(stream_), "running the candidate");
      samples.clear();  // keep one method: the rest are timed unheld, one call at a time
      t.sample_t.clear();
      hold = false;
      batch = depth = 1;
      t.note = fmt::format("timed unheld: queueing a batch took over {:.0f} ms (the call blocks the host)",
                           kHoldTimeout * 1e3);
      slot = 0;
      queue(slot);
      continue;
    }
    if (nvml.available() && std::chrono::duration<double>(Clock::now() - last_read).count() >= 0.02) {
      last_read = Clock::now();
      sensors.read(nvml, dev_.uuid, t1, t);
    }
    if (enough_samples(samples, since(t1), throttle, batch, o)) break;
    if (depth == 2) slot = 1 - slot;
    else queue(slot);
  }
  // The batch queued beyond the last one collected still runs: wait, and drop it.
  check_launch(cudaStreamSynchronize(stream_), "running the candidate");
  t.samples = samples;
  t.time = summarize(std::move(samples), center_for(throttle));
  sensors.finish(nvml.available(), t);
  t.held = hold;
  t.wall_s = since(t0);
  return t;
}

}  // namespace gt
