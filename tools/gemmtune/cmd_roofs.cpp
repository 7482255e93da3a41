// gemmtune roofs: the device's roofs measured in one run and stored: the fp32 FMA peak,
// memory bandwidth (a streaming read and a device copy) and the tensor roof per dtype (the
// best of cuBLASLt's top heuristic algorithms at a large shape; FP8: e4m3 with tensor scales,
// on GPUs that have it). compare and the report use these, never datasheet numbers.
#include "measure/bench.hpp"
#include "cli.hpp"
#include "measure/measure_service.hpp"
#include "measure/roofs.hpp"
#include "store/store.hpp"

#include <cmath>
#include <random>

namespace gt::cli {

// The accepted ranges of --candidates and --seconds, checked before any GPU work.
constexpr int kMaxCandidates = 1000;
constexpr double kMaxSeconds = 600;

static Command add_roofs(CLI::App& app, Globals& g);
static Registrar reg_roofs(70, add_roofs);

static Command add_roofs(CLI::App& app, Globals& g) {
  auto* sub = app.add_subcommand("roofs", "measures and stores the device's fp32, tensor (per dtype, e4m3 included) and memory roofs "
                                          "(needs a GPU)");
  static int device = 0;
  static std::string shape = "8192x8192x8192";
  static int candidates = 8;
  static double seconds = 1.0;
  sub->add_option("--device", device, "GPU index")->default_val(0)->check(whole_in(kDeviceRange));
  sub->add_option("--tensor-shape", shape, "MxNxK at which the tensor roofs are measured")->default_val("8192x8192x8192");
  sub->add_option("--candidates", candidates,
                  fmt::format("cuBLASLt heuristic algorithms tried per dtype (1 to {})", kMaxCandidates))
      ->default_val(8)
      ->check(whole_in(search::WholeRange{1, uint64_t(kMaxCandidates)}));
  sub->add_option("--seconds", seconds,
                  fmt::format("sustained seconds per memory / fp32 roof (above 0, at most {:g})", kMaxSeconds))
      ->default_val(1.0)
      ->check(number_in(search::RealRange{0, double(kMaxSeconds), true, "number of seconds"}));
  return {sub, [&g] {
            // Bad input is refused before any GPU work (CLI11's range checks let NaN through).
            if (candidates < 1 || candidates > kMaxCandidates)
              throw InputError(fmt::format("--candidates: got {}; it must be a whole number from 1 to {}",
                                           candidates, kMaxCandidates));
            if (!(std::isfinite(seconds) && seconds > 0 && seconds <= kMaxSeconds))
              throw InputError(fmt::format("--seconds: got {}; it must be a number of seconds above 0 and at most {:g}",
                                           seconds, kMaxSeconds));
            auto dims = parse_shape(shape, "--tensor-shape");
            check_file_roles({{FileUse::store, g.db_flag(), g.db_path()}});
            DeviceInfo dev = require_device(device);
            Store store = Store::open(g.db_path());
            std::vector<RoofRow> rows;
            auto keep = [&](const Roof& r) {
              RoofRow row{dev.name, r.name, r.value, r.unit, r.how, r.sensors.sm_clock_mhz, r.sensors.power_w, r.sensors.temp_c, "", 0};
              store.put_roof(row);
              rows.push_back(row);
              if (!g.json)
                fmt::print("{:<12} {:>10.2f} {}   ({}; SM {} MHz, {} W)\n", r.name,
                           r.unit == "FLOP/s" ? r.value / 1e12 : r.value / 1e12, r.unit == "FLOP/s" ? "TFLOP/s" : "TB/s  ",
                           r.how, std::isfinite(r.sensors.sm_clock_mhz) ? fmt::format("{:.0f}", r.sensors.sm_clock_mhz) : "?",
                           std::isfinite(r.sensors.power_w) ? fmt::format("{:.0f}", r.sensors.power_w) : "?");
            };
            if (!g.json) fmt::print("roofs of GPU {} ({}), measured now:\n", dev.index, dev.name);
            keep(measure_fp32_roof(dev, seconds));
            keep(measure_read_roof(dev, seconds / 2));
            keep(measure_copy_roof(dev, seconds / 2));
            const Family* lt = g.plugins().find("cublaslt");
            if (!lt) {
              fmt::print(stderr, "note: the cublaslt plugin is not loaded: no tensor roofs\n");
            } else {
              CubinCache cache = g.cache();
              MeasureService svc(g.plugins(), cache, device);
              std::random_device rd;
              for (DType dt : {DType::tf32, DType::f16, DType::bf16, DType::e4m3}) {
                // FP8 (tensor scales, the one layout it has) where the GPU has FP8 tensor cores.
                const Layout layout = is_fp8(dt) ? Layout::nt : Layout::nn;
                Problem p = Problem::make(dims[0], dims[1], dims[2], dt, Problem::default_out(dt), layout);
                if (fp8_device_refusal(p, dev.limits.cc_major, dev.limits.cc_minor)) continue;
                Space s = lt->space(p, dev.limits);
                auto picks = lt->suggest(p, dev.limits, candidates, s.dims());
                svc.set_problem(p, Distribution::normal, (uint64_t(rd()) << 32) | rd());
                bool settled = false;
                double best = kNaN;
                Measurement bm;
                std::string best_name;
                for (auto& c : picks) {
                  Candidate cand{"cublaslt", lt, c};
                  if (!settled) {
                    try {
                      svc.settle(cand, kSettleCapS);
                      settled = true;
                    } catch (const std::exception&) {
                      continue;
                    }
                  }
                  Measurement m = svc.measure(cand, false);
                  if (m.status == Status::ok && !(m.time_us() >= best)) {
                    best = m.time_us();
                    bm = m;
                    best_name = s.readable(c);
                  }
                }
                if (!std::isfinite(best)) {
                  fmt::print(stderr, "note: no cuBLASLt algorithm ran for {}: no tensor roof for {}\n", p.key(), to_string(dt));
                  continue;
                }
                Roof r{fmt::format("tensor_{}", to_string(dt)), p.flops() / (best * 1e-6), "FLOP/s",
                       fmt::format("best of cuBLASLt's top {} heuristic algorithms at {} ({}), iid normal inputs", picks.size(),
                                   p.key(), best_name),
                       bm.sensors};
                keep(r);
              }
            }
            if (!g.json) {
              for (auto& r : rows)
                if (r.name == "fp32_fma")
                  for (auto& m : rows)
                    if (m.name == "mem_read")
                      fmt::print("ridge point (fp32 FMA / streaming read): {:.1f} FLOP per byte\n", r.value / m.value);
              fmt::print("stored in {}\n", g.db_path().string());
            } else {
              nlohmann::json j = nlohmann::json::array();
              for (auto& r : rows)
                j.push_back({{"device", r.device_name}, {"name", r.name}, {"value", r.value}, {"unit", r.unit}, {"how", r.how}});
              print_json(j);
            }
            return 0;
          }};
}

}  // namespace gt::cli
