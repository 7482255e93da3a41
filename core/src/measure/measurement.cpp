#include "measure/measurement.hpp"

#include "base/errors.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <iterator>

namespace gt {

const char* to_string(Status s) {
  switch (s) {
    case Status::ok: return "ok";
    case Status::cannot_implement: return "cannot_implement";
    case Status::resources: return "resources";
    case Status::compile_failed: return "compile_failed";
    case Status::verify_failed: return "verify_failed";
    case Status::runtime_fault: return "runtime_fault";
    case Status::timeout: return "timeout";
  }
  return "?";
}

Status parse_status(const std::string& s) {
  for (Status x : {Status::ok, Status::cannot_implement, Status::resources, Status::compile_failed,
                   Status::verify_failed, Status::runtime_fault, Status::timeout})
    if (s == to_string(x)) return x;
  throw RuntimeFailure("unknown measurement status '" + s + "'");
}

static double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return kNaN;
  double pos = q * double(sorted.size() - 1);
  size_t lo = size_t(std::floor(pos)), hi = size_t(std::ceil(pos));
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - double(lo));
}

const char* to_string(Center c) { return c == Center::mean ? "mean" : "median"; }

// Half-width of the mean's 95 % interval from block means: consecutive blocks of the samples
// (sizes `groups`, else ten equal ones), each block's mean one observation (Student's t with
// blocks - 1 degrees of freedom). NaN with fewer than two blocks.
static double mean_half_width(const std::vector<double>& x, const std::vector<size_t>& groups) {
  static constexpr double kT975[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262,
                                     2.228,  2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101,
                                     2.093,  2.086};  // 1 ... 20 degrees of freedom; 1.96 beyond
  std::vector<size_t> sizes = groups;
  if (sizes.empty())
    for (size_t b = 0, n = std::min<size_t>(10, x.size()); b < n; ++b)
      sizes.push_back((b + 1) * x.size() / n - b * x.size() / n);
  std::vector<double> means;
  size_t at = 0;
  for (size_t len : sizes) {
    if (len == 0 || at + len > x.size()) continue;
    double sum = 0;
    for (size_t i = at; i < at + len; ++i) sum += x[i];
    means.push_back(sum / double(len));
    at += len;
  }
  const size_t k = means.size();
  if (k < 2) return kNaN;
  double m = 0, ss = 0;
  for (double v : means) m += v;
  m /= double(k);
  for (double v : means) ss += (v - m) * (v - m);
  const double t = k - 2 < std::size(kT975) ? kT975[k - 2] : 1.96;
  return t * std::sqrt(ss / double(k - 1) / double(k));
}

Stats summarize(std::vector<double> x, Center center, const std::vector<size_t>& groups) {
  Stats s;
  s.center = center;
  s.count = int64_t(x.size());
  if (x.empty()) return s;
  const double mean_half = center == Center::mean ? mean_half_width(x, groups) : kNaN;
  std::sort(x.begin(), x.end());
  s.min = x.front();
  s.max = x.back();
  s.median = quantile(x, 0.5);
  s.p10 = quantile(x, 0.1);
  s.p90 = quantile(x, 0.9);
  double sum = 0;
  for (double v : x) sum += v;
  s.mean = sum / double(x.size());
  double n = double(x.size());
  double half = 1.96 * std::sqrt(n) / 2.0;
  long lo = long(std::floor(n / 2.0 - half)), hi = long(std::ceil(n / 2.0 + half));
  lo = std::clamp(lo, 0L, long(x.size()) - 1);
  hi = std::clamp(hi, 0L, long(x.size()) - 1);
  s.ci_low = x[size_t(lo)];
  s.ci_high = x[size_t(hi)];
  if (center == Center::mean) {  // centred on the reported mean
    s.ci_low = s.mean - mean_half;
    s.ci_high = s.mean + mean_half;
  }
  return s;
}

bool tie(const Stats& a, const Stats& b) { return !(a.ci_high < b.ci_low || b.ci_high < a.ci_low); }

// JSON cannot hold NaN: unknown numbers are written as null and read back as NaN.
static nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
static double num(const nlohmann::json& j, const char* k) {
  auto it = j.find(k);
  return (it == j.end() || it->is_null()) ? kNaN : it->get<double>();
}

void to_json(nlohmann::json& j, const Stats& s) {
  j = {{"count", s.count}, {"median", num(s.median)}, {"mean", num(s.mean)}, {"min", num(s.min)},
       {"max", num(s.max)}, {"p10", num(s.p10)}, {"p90", num(s.p90)}, {"ci_low", num(s.ci_low)},
       {"ci_high", num(s.ci_high)}, {"center", to_string(s.center)}, {"value", num(s.value())}};
}

void from_json(const nlohmann::json& j, Stats& s) {
  // The type first: nlohmann converts a float count (1e308) to an integer out of range (UB).
  const auto count = j.find("count");
  if (count != j.end() && !count->is_number_integer())
    throw RuntimeFailure("timing statistics: 'count' is not a whole number");
  s.count = count == j.end() ? 0 : count->get<int64_t>();
  s.median = num(j, "median");
  s.mean = num(j, "mean");
  s.min = num(j, "min");
  s.max = num(j, "max");
  s.p10 = num(j, "p10");
  s.p90 = num(j, "p90");
  s.ci_low = num(j, "ci_low");
  s.ci_high = num(j, "ci_high");
  const std::string c = j.value("center", std::string("median"));
  if (c != "median" && c != "mean") throw RuntimeFailure("timing statistics: unknown center '" + c + "' (median or mean)");
  s.center = c == "mean" ? Center::mean : Center::median;
}

void to_json(nlohmann::json& j, const Measurement& m) {
  j = {{"status", to_string(m.status)},
       {"message", m.message},
       {"time_us", m.time},
       {"err_rel_fro", num(m.err_rel_fro)},
       {"err_max_norm", num(m.err_max_norm)},
       {"sm_clock_mhz", num(m.sensors.sm_clock_mhz)},
       {"mem_clock_mhz", num(m.sensors.mem_clock_mhz)},
       {"power_w", num(m.sensors.power_w)},
       {"temp_c", num(m.sensors.temp_c)},
       {"power_limit_w", num(m.sensors.power_limit_w)},
       {"throttle", m.throttle},
       {"registers", m.res.registers},
       {"spill_stores", m.res.spill_stores},
       {"spill_loads", m.res.spill_loads},
       {"stack_bytes", m.res.stack_bytes},
       {"static_smem", m.res.static_smem},
       {"compile_s", m.compile_s},
       {"from_cache", m.compiled_from_cache},
       {"measure_s", m.measure_s},
       {"quick", m.quick}};
}

void from_json(const nlohmann::json& j, Measurement& m) {
  m.status = parse_status(j.at("status").get<std::string>());
  m.message = j.value("message", std::string());
  if (j.contains("time_us")) m.time = j.at("time_us").get<Stats>();
  m.err_rel_fro = num(j, "err_rel_fro");
  m.err_max_norm = num(j, "err_max_norm");
  m.sensors.sm_clock_mhz = num(j, "sm_clock_mhz");
  m.sensors.mem_clock_mhz = num(j, "mem_clock_mhz");
  m.sensors.power_w = num(j, "power_w");
  m.sensors.temp_c = num(j, "temp_c");
  m.sensors.power_limit_w = num(j, "power_limit_w");
  m.throttle = j.value("throttle", std::string());
  m.res.registers = j.value("registers", -1);
  m.res.spill_stores = j.value("spill_stores", -1);
  m.res.spill_loads = j.value("spill_loads", -1);
  m.res.stack_bytes = j.value("stack_bytes", -1);
  m.res.static_smem = j.value("static_smem", -1);
  m.compile_s = j.value("compile_s", 0.0);
  m.compiled_from_cache = j.value("from_cache", false);
  m.measure_s = j.value("measure_s", 0.0);
  m.quick = j.value("quick", false);
}

}  // namespace gt
