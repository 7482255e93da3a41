// gemmtune roofs: the device's roofs measured in one run and stored: the fp32 FMA peak,
// memory bandwidth (a streaming read and a device copy) and the tensor roof per dtype (the
// best of cuBLASLt's top heuristic algorithms at a large shape; FP8: e4m3 with tensor scales,
// on GPUs that have it). compare and the report use these, never datasheet numbers.
#include "cli.hpp"
#include "measure/bench.hpp"
#include "measure/roofs.hpp"
#include "session.hpp"
#include "store/store.hpp"

#include <cmath>

namespace gt::cli {

namespace {

// The accepted ranges of --candidates and --seconds, checked before any GPU work.
constexpr int kMaxCandidates = 1000;
constexpr double kMaxSeconds = 600;

struct RoofsArgs {
  int device = 0;
  std::string shape = "8192x8192x8192";
  int candidates = 8;
  double seconds = 1.0;
};

void add_roofs_options(CLI::App* sub, RoofsArgs& a) {
  sub->add_option("--device", a.device, "GPU index")->capture_default_str()->check(whole_in(kDeviceRange));
  sub->add_option("--tensor-shape", a.shape, "MxNxK at which the tensor roofs are measured")->capture_default_str();
  sub->add_option("--candidates", a.candidates,
                  fmt::format("cuBLASLt heuristic algorithms tried per dtype (1 to {})", kMaxCandidates))
      ->capture_default_str()
      ->check(whole_in(search::WholeRange{1, uint64_t(kMaxCandidates)}));
  sub->add_option("--seconds", a.seconds,
                  fmt::format("sustained seconds per memory / fp32 roof (above 0, at most {:g})", kMaxSeconds))
      ->capture_default_str()
      ->check(number_in(search::RealRange{0, double(kMaxSeconds), true, "number of seconds"}));
}

void print_roof(const Roof& r) {
  auto known = [](double v) { return std::isfinite(v) ? fmt::format("{:.0f}", v) : std::string("?"); };
  fmt::print("{:<12} {:>10.2f} {}   ({}; SM {} MHz, {} W)\n", r.name, r.value / 1e12,
             r.unit == "FLOP/s" ? "TFLOP/s" : "TB/s  ", r.how, known(r.sensors.sm_clock_mhz), known(r.sensors.power_w));
}

// The tensor roofs, one per input type the device has tensor cores for (FP8: tensor scales,
// the one layout it has), measured on the session's measurer: in a worker process, as every
// measurement of a plugin's kernels is.
std::vector<Roof> tensor_roofs(Globals& g, const RoofsArgs& a, const DeviceInfo& dev, const std::array<int64_t, 3>& dims,
                               Measurer& svc) {
  std::vector<Roof> out;
  const Family* lt = g.plugins().find("cublaslt");
  if (!lt) {
    fmt::print(stderr, "note: the cublaslt plugin is not loaded: no tensor roofs\n");
    return out;
  }
  for (DType dt : {DType::tf32, DType::f16, DType::bf16, DType::e4m3}) {
    const Layout layout = is_fp8(dt) ? Layout::nt : Layout::nn;
    Problem p = Problem::make(dims[0], dims[1], dims[2], dt, Problem::default_out(dt), layout);
    if (fp8_device_refusal(p, dev.limits.cc_major, dev.limits.cc_minor)) continue;
    if (auto r = measure_tensor_roof(*lt, svc, p, a.candidates))
      out.push_back(*r);
    else
      fmt::print(stderr, "note: no cuBLASLt algorithm ran for {}: no tensor roof for {}\n", p.key(), to_string(dt));
  }
  return out;
}

int run_roofs(Globals& g, const RoofsArgs& a) {
  // Bad input is refused before any GPU work (CLI11's range checks let NaN through).
  if (!(std::isfinite(a.seconds) && a.seconds > 0 && a.seconds <= kMaxSeconds))
    throw InputError(fmt::format("--seconds: got {}; it must be a number of seconds above 0 and at most {:g}",
                                 a.seconds, kMaxSeconds));
  const auto dims = parse_shape(a.shape, "--tensor-shape");
  check_file_roles({{FileUse::store, g.db_flag(), g.db_path()}});
  DeviceInfo dev = require_device(a.device);
  SessionOptions so;
  so.devices = {a.device};
  Session session(g, so);  // the store, and a measurement worker for the plugins' kernels
  Store& store = session.store();
  if (!g.json) fmt::print("roofs of GPU {} ({}), measured now:\n", dev.index, dev.name);
  std::vector<Roof> roofs;
  auto keep = [&](const Roof& r) {
    store.put_roof(RoofRow{dev.name, r.name, r.value, r.unit, r.how, r.sensors.sm_clock_mhz, r.sensors.power_w,
                           r.sensors.temp_c, "", 0});
    roofs.push_back(r);
    if (!g.json) print_roof(r);
  };
  keep(measure_fp32_roof(dev, a.seconds));
  keep(measure_read_roof(dev, a.seconds / 2));
  keep(measure_copy_roof(dev, a.seconds / 2));
  for (auto& r : tensor_roofs(g, a, dev, dims, session.measurer(0))) keep(r);
  if (g.json) {
    nlohmann::json j = nlohmann::json::array();
    for (auto& r : roofs) j.push_back({{"device", dev.name}, {"name", r.name}, {"value", r.value}, {"unit", r.unit}, {"how", r.how}});
    print_json(j);
    return 0;
  }
  const double fma = roofs[0].value, read = roofs[1].value;
  fmt::print("ridge point (fp32 FMA / streaming read): {:.1f} FLOP per byte\n", fma / read);
  fmt::print("stored in {}\n", g.db_path().string());
  return 0;
}

Registrar reg_roofs(70, [](CLI::App& app, Globals& g) {
  return make_command<RoofsArgs>(app, g, "roofs",
      "measures and stores the device's fp32, tensor (per dtype, e4m3 included) and memory roofs (needs a GPU)",
      add_roofs_options, run_roofs);
});

}  // namespace

}  // namespace gt::cli
