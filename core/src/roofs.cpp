#include "roofs.hpp"

#include "bench.hpp"
#include "gpu_kernels.hpp"
#include "nvml.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace gt {

namespace {
using Clock = std::chrono::steady_clock;

// Runs `launch` back to back for `seconds` (after the same time to settle), synchronising
// every few calls; returns seconds per call from CUDA events and the sensors meanwhile.
template <class F>
std::pair<double, GpuSensors> sustained(const DeviceInfo& dev, F launch, double seconds) {
  cudaStream_t s;
  cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  cudaEvent_t e0, e1;
  cuda_check(cudaEventCreate(&e0), "cudaEventCreate");
  cuda_check(cudaEventCreate(&e1), "cudaEventCreate");
  auto run_for = [&](double sec, bool timed) {
    std::vector<double> clocks, power, temp;
    if (timed) cuda_check(cudaEventRecord(e0, s), "cudaEventRecord");
    auto t0 = Clock::now();
    long n = 0;
    while (std::chrono::duration<double>(Clock::now() - t0).count() < sec) {
      launch(s);
      ++n;
      if (n % 4 == 0) cuda_check(cudaStreamSynchronize(s), "roof run");
      if (timed && n % 8 == 0) {
        GpuSensors g = Nvml::get().read(dev.uuid);
        clocks.push_back(g.sm_clock_mhz);
        power.push_back(g.power_w);
        temp.push_back(g.temp_c);
      }
    }
    float ms = 0;
    if (timed) {
      cuda_check(cudaEventRecord(e1, s), "cudaEventRecord");
      cuda_check(cudaEventSynchronize(e1), "roof run");
      cuda_check(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
    } else {
      cuda_check(cudaStreamSynchronize(s), "roof run");
    }
    GpuSensors g;
    auto med = [](std::vector<double> v) { return v.empty() ? kNaN : summarize(std::move(v)).median; };
    g.sm_clock_mhz = med(clocks);
    g.power_w = med(power);
    g.temp_c = med(temp);
    return std::pair{double(ms) * 1e-3 / double(n), g};
  };
  run_for(seconds, false);  // settle
  auto r = run_for(seconds, true);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaStreamDestroy(s);
  return r;
}
}  // namespace

Roof measure_fp32_roof(const DeviceInfo& dev, double seconds) {
  cuda_check(cudaSetDevice(dev.index), "cudaSetDevice");
  int per_sm = dev.limits.max_threads_per_sm / 256;
  int blocks = dev.limits.sm_count * per_sm * 8;
  int iters = 2048;
  DeviceBuffer out(size_t(blocks) * 256 * sizeof(float));
  auto [t, g] = sustained(dev, [&](cudaStream_t s) { launch_fma_peak(static_cast<float*>(out.get()), blocks, 256, iters, s); },
                          seconds);
  double flop = double(blocks) * 256 * iters * 32;
  return {"fp32_fma", flop / t, "FLOP/s", fmt::format("{} blocks x 256 threads x {} iterations of 16 independent FMAs", blocks, iters), g};
}

Roof measure_read_roof(const DeviceInfo& dev, double seconds) {
  cuda_check(cudaSetDevice(dev.index), "cudaSetDevice");
  size_t bytes = std::max<size_t>(size_t(1) << 30, size_t(dev.limits.l2_bytes) * 16) & ~size_t(255);
  DeviceBuffer x(bytes), sink(256);
  fill_random(x.get(), DType::f32, bytes / 4, 7, Distribution::uniform, nullptr);
  cuda_check(cudaDeviceSynchronize(), "fill");
  // One wave of each engine (gpu_kernels.hpp); the roof is the faster. Plain loads: as many
  // 256-thread blocks as an SM holds. Bulk copies (sm_90): one CTA per SM with 192 KiB in flight.
  std::vector<std::pair<StreamRead, std::string>> ways;
  std::string skipped;
  StreamRead loads;
  loads.blocks = dev.limits.sm_count * std::max(1, dev.limits.max_threads_per_sm / 256);
  ways.push_back({loads, fmt::format("16-byte loads, {} blocks of 256 threads", loads.blocks)});
  if (dev.limits.cc_major >= 9) {
    StreamRead bulk;
    bulk.engine = StreamRead::Engine::bulk;
    bulk.blocks = dev.limits.sm_count;
    bulk.stages = 6;
    bulk.chunk_bytes = 32 * 1024;
    try {  // a build without sm_90 code has no bulk copies: the roof is the loads' then, and says why
      launch_stream_read(x.get(), 0, static_cast<float*>(sink.get()), bulk, nullptr);
      cuda_check(cudaDeviceSynchronize(), "stream_read probe");
      ways.push_back({bulk, fmt::format("bulk copies, {} blocks of {} x {} KiB in flight", bulk.blocks, bulk.stages,
                                        bulk.chunk_bytes / 1024)});
    } catch (const RuntimeFailure& e) {
      skipped = fmt::format("; bulk copies not measured: {}", e.what());
    }
  }
  Roof best;
  const double each = seconds / double(ways.size());  // the whole measurement still takes about `seconds`
  for (auto& [how, what] : ways) {
    auto [t, g] = sustained(
        dev, [&, how = how](cudaStream_t s) { launch_stream_read(x.get(), bytes, static_cast<float*>(sink.get()), how, s); },
        each);
    Roof r{"mem_read", double(bytes) / t, "B/s", fmt::format("streaming reads of {:.2f} GiB ({})", double(bytes) / (1 << 30), what), g};
    if (!(r.value <= best.value)) best = r;
  }
  best.how += skipped;
  return best;
}

Roof measure_copy_roof(const DeviceInfo& dev, double seconds) {
  cuda_check(cudaSetDevice(dev.index), "cudaSetDevice");
  size_t bytes = std::max<size_t>(size_t(1) << 30, size_t(dev.limits.l2_bytes) * 16) & ~size_t(255);
  DeviceBuffer a(bytes), b(bytes);
  cuda_check(cudaMemset(a.get(), 1, bytes), "memset");
  auto [t, g] = sustained(dev, [&](cudaStream_t s) { cuda_check(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice, s), "copy"); },
                          seconds);
  return {"mem_copy", 2.0 * double(bytes) / t, "B/s",
          fmt::format("cudaMemcpy device to device of {:.2f} GiB, counting bytes read plus written", double(bytes) / (1 << 30)), g};
}

std::string compute_roof_name(const Problem& p) {
  return p.in == DType::f32 ? std::string("fp32_fma") : "tensor_" + std::string(to_string(p.in));
}

Roofline roofline_at(const Problem& p, double compute_roof, double memory_roof) {
  Roofline r;
  r.intensity = p.flops() / p.min_bytes();
  double mem = memory_roof * r.intensity;
  r.flops_per_s = compute_roof;  // NaN without it
  if (std::isnan(compute_roof) || std::isnan(mem)) return r;
  r.bound = mem < compute_roof ? Roofline::Bound::memory : Roofline::Bound::compute;
  r.flops_per_s = std::min(mem, compute_roof);
  return r;
}

const char* to_string(Roofline::Bound b) {
  switch (b) {
    case Roofline::Bound::compute: return "compute";
    case Roofline::Bound::memory: return "memory";
    default: return "unknown";
  }
}

}  // namespace gt
