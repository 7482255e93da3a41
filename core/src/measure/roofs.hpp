// The device's roofs, measured (never the datasheet): the fp32 FMA peak, memory bandwidth
// (a streaming read kernel and a device-to-device copy), and the tensor roof per dtype: the
// best cuBLASLt result at a large shape, measured through the cublaslt plugin.
#pragma once

#include "gpu/device.hpp"
#include "measure/measurement.hpp"
#include "base/problem.hpp"

#include <optional>
#include <string>

namespace gt {

struct Roof {
  std::string name;   // "fp32_fma", "mem_read", "mem_copy", "tensor_f16", ...
  double value = 0;   // FLOP/s or bytes/s
  std::string unit;   // "FLOP/s" | "B/s"
  std::string how;    // what was run
  GpuSensors sensors; // while it ran
};

// Settled, sustained runs; each takes about `seconds`.
Roof measure_fp32_roof(const DeviceInfo& dev, double seconds = 1.0);
Roof measure_read_roof(const DeviceInfo& dev, double seconds = 0.5);
Roof measure_copy_roof(const DeviceInfo& dev, double seconds = 0.5);

class Family;
class Measurer;
// The tensor roof of p's input type ("tensor_<dtype>"): the fastest of cuBLASLt's top
// `candidates` heuristic algorithms at p, on iid normal inputs, with the clock settled once,
// on any measurer (in process, or a worker).
// nullopt when none of them ran.
std::optional<Roof> measure_tensor_roof(const Family& cublaslt, Measurer& svc, const Problem& p, int candidates);

// The roofline at a problem: the fastest FLOP rate the measured roofs allow it,
// min(compute roof, intensity x memory roof), where the intensity is 2MNK per byte of A, B
// and C each moved once (Problem::min_bytes, as on the report's roofline). Without a memory
// roof, the compute roof alone (bound unknown); without a compute roof, NaN: a memory roof
// alone would rate a compute-bound problem against a rate no kernel reaches.
struct Roofline {
  double flops_per_s = 0;     // the attainable rate (NaN: unknown)
  double intensity = 0;       // FLOP per byte
  enum class Bound { unknown, compute, memory } bound = Bound::unknown;  // known when both roofs are
};
const char* to_string(Roofline::Bound b);  // "unknown", "compute", "memory"
// The compute roof a problem is rated against: "fp32_fma" for f32 inputs, else "tensor_<in>".
std::string compute_roof_name(const Problem& p);
Roofline roofline_at(const Problem& p, double compute_roof, double memory_roof);

}  // namespace gt
