#include "cli.hpp"

#include "tune/tuner.hpp"

#include <charconv>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <unistd.h>

namespace gt::cli {
namespace fs = std::filesystem;

std::vector<std::pair<int, CommandFactory>>& command_registry() {
  static std::vector<std::pair<int, CommandFactory>> r;
  return r;
}
Registrar::Registrar(int order, CommandFactory f) { command_registry().emplace_back(order, f); }

static fs::path xdg(const char* var, const char* fallback_under_home) {
  if (const char* v = std::getenv(var); v && *v) return fs::path(v) / "gemmtune";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / fallback_under_home / "gemmtune";
  return fs::temp_directory_path() / "gemmtune";
}

fs::path Globals::db_path() const {
  if (!db.empty()) return db;
  if (const char* e = std::getenv("GEMMTUNE_DB"); e && *e) return e;
  return xdg("XDG_DATA_HOME", ".local/share") / "results.db";
}

bool Globals::db_named() const {
  const char* e = std::getenv("GEMMTUNE_DB");
  return !db.empty() || (e && *e);
}

std::string Globals::db_flag() const {
  if (!db.empty()) return "--db";
  if (const char* e = std::getenv("GEMMTUNE_DB"); e && *e) return "GEMMTUNE_DB";
  return "the default store";
}

fs::path Globals::cache_path() const {
  if (!cache_dir.empty()) return cache_dir;
  if (const char* e = std::getenv("GEMMTUNE_CACHE_DIR"); e && *e) return e;
  return default_cache_dir();
}

CubinCache Globals::cache() const {
  const fs::path dir = cache_path();
  const char* flag = !cache_dir.empty() ? "--cache-dir"
                     : (std::getenv("GEMMTUNE_CACHE_DIR") && *std::getenv("GEMMTUNE_CACHE_DIR")) ? "GEMMTUNE_CACHE_DIR"
                                                                                                 : "the compile cache";
  require_writable_folder(dir, flag);
  return CubinCache(dir);
}

// The plugin folders the user named (--plugin-dir, else GEMMTUNE_PLUGIN_PATH) must be folders:
// a typo would otherwise load nothing and every family would read as unknown.
static void check_plugin_dirs(const std::vector<std::string>& flags) {
  const char* env = std::getenv("GEMMTUNE_PLUGIN_PATH");
  const bool from_flag = !flags.empty();
  if (!from_flag && !(env && *env)) return;  // the plugins beside the binary
  for (auto& dir : gt::plugin_dirs(flags)) {
    std::error_code ec;
    if (fs::is_directory(dir, ec)) continue;
    throw InputError(fmt::format("{} {}: {}", from_flag ? "--plugin-dir" : "GEMMTUNE_PLUGIN_PATH entry", dir.string(),
                                 fs::exists(dir, ec) ? "not a directory" : "no such directory"));
  }
}

void check_environment(const Globals& g) {
  if (const char* hold = std::getenv("GEMMTUNE_TIMING_HOLD"); hold && *hold && std::string(hold) != "0" &&
                                                               std::string(hold) != "1")
    throw InputError(fmt::format("GEMMTUNE_TIMING_HOLD='{}' is not 0 (time unheld) or 1 (hold the stream while a "
                                 "batch is queued: the default)", hold));
  if (const char* inc = std::getenv("GEMMTUNE_CUDA_INCLUDE"); inc && *inc) {
    std::error_code ec;
    if (!fs::exists(fs::path(inc) / "cuda_fp16.h", ec))
      throw InputError(fmt::format("GEMMTUNE_CUDA_INCLUDE={}: no cuda_fp16.h there; name the CUDA toolkit's include "
                                   "folder (e.g. /usr/local/cuda/include) or unset it", inc));
  }
  check_plugin_dirs(g.plugin_dirs);
}

const PluginRegistry& Globals::plugins() const {
  static std::optional<PluginRegistry> reg;
  if (!reg) {
    reg = PluginRegistry::load(gt::plugin_dirs(plugin_dirs));
    for (auto& s : reg->skipped())
      fmt::print(stderr, "gemmtune: skipped plugin {}: {}\n", s.path.string(), s.reason);
  }
  return *reg;
}

Problem ProblemArgs::resolve(const std::string& default_shape) const {
  std::string s = shape.empty() ? default_shape : shape;
  if (s.empty()) throw InputError("--shape is required (MxNxK, e.g. 4096x4096x4096)");
  auto d = parse_shape(s, "--shape");
  auto [in, in_b] = parse_in_types(dtype, "--dtype");
  DType out = out_dtype.empty() ? Problem::default_out(in) : parse_dtype(out_dtype, "--out-dtype");
  if (out == DType::tf32) throw InputError("--out-dtype: tf32 is an input mode, not a storage type; use f32");
  Layout l = layout.empty() ? (is_fp8(in) ? Layout::nt : Layout::nn) : parse_layout(layout, "--layout");
  std::optional<ScaleMode> mode;
  if (!scale.empty()) {
    if (!is_fp8(in)) throw InputError(fmt::format("--scale {}: scales are for FP8 inputs (e4m3, e5m2), not {}", scale, dtype));
    mode = parse_scale_mode(scale, "--scale");
  }
  try {
    Problem p = Problem::make(d[0], d[1], d[2], in, out, l, in_b, mode);
    p.constant = parse_constant(constant, "--constant");
    return p;
  } catch (const InputError& e) {
    throw InputError(fmt::format("--dtype {} --layout {}{}: {}", dtype, to_string(l),
                                 scale.empty() ? "" : " --scale " + scale, e.what()));
  }
}

CLI::Validator whole_in(const search::WholeRange& r) {
  return CLI::Validator(
      [r](std::string& v) -> std::string {
        const bool negative = !v.empty() && v[0] == '-';
        const std::string digits = negative ? v.substr(1) : v;
        if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos)
          return fmt::format("'{}' is not {}", v, r.text());
        uint64_t x = 0;
        auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), x);
        if (ec == std::errc::result_out_of_range || end != digits.data() + digits.size())
          return fmt::format("{} is too large (at most {})", v, r.hi);
        if (negative && x != 0) return fmt::format("{} must not be negative ({})", v, r.text());
        return r.check("", x).value_or("");
      },
      fmt::format("[{}, {}]", r.lo, r.hi));
}

CLI::Validator number_in(const search::RealRange& r) {
  const std::string range = r.hi == std::numeric_limits<double>::max()
                                ? fmt::format("{}{:g}, inf)", r.lo_open ? "(" : "[", r.lo)
                                : fmt::format("{}{:g}, {:g}]", r.lo_open ? "(" : "[", r.lo, r.hi);
  return CLI::Validator(
      [r](std::string& v) -> std::string {
        // Decimal only, as TOML writes a float: strtod would also read 0x10 as 16.
        if (v.empty() || v.find_first_of("xX") != std::string::npos) return fmt::format("'{}' is not {}", v, r.text());
        char* end = nullptr;
        errno = 0;
        const double x = std::strtod(v.c_str(), &end);
        if (end != v.c_str() + v.size()) return fmt::format("'{}' is not {}", v, r.text());
        if (errno == ERANGE && std::isinf(x)) return fmt::format("{} is too large to be a number", v);
        return r.check("", x).value_or("");
      },
      range);
}

void add_interleave_options(CLI::App* app, int& rounds, double& turn_warmup) {
  const Interleave d;
  app->add_option("--rounds", rounds,
                  fmt::format("rounds of interleaved timing (at the power cap at most {})", d.capped_rounds))
      ->capture_default_str()
      ->check(whole_in(kRoundsRange));
  app->add_option("--turn-warmup", turn_warmup,
                  fmt::format("once NVML reports the power cap: seconds each config runs alone, untimed, before its "
                              "samples in each turn (the clock follows the power of the last tens of ms; below the "
                              "cap {:g} s; {:g} or less: as below the cap, the older method)",
                              d.warmup_s, d.warmup_s))
      ->capture_default_str()
      ->check(number_in(kTurnWarmupRange));
}

void add_min_gain_option(CLI::App* app, double& min_gain, const std::string& where) {
  app->add_option("--min-gain", min_gain,
                  fmt::format("percent a config must gain to replace its family's baseline (cuBLASLt's pick, a "
                              "hand-written family's default), in a confirmation re-timing of the two alone{} "
                              "(default {:g}; the job's [tune] min_gain; 0: measurably faster suffices)",
                              where, 100 * search::TuneOptions{}.min_gain))
      ->check(number_in(search::kMinGainRange));
}

void add_problem_options(CLI::App* app, ProblemArgs& a, bool shape_required) {
  app->footer(kProblemNotation);
  auto* o = app->add_option("--shape", a.shape,
                            "MxNxK: C is MxN, the reduction is over K. Each dimension 1..2147483647 (kernels take "
                            "32-bit sizes and index in 64 bits)");
  if (shape_required) o->required();
  app->add_option("--dtype", a.dtype,
                  "input type: f32, tf32 (fp32 data on tensor cores), f16, bf16, or FP8: e4m3, e5m2, and A:B for "
                  "FP8 operands of two types (e4m3:e5m2)")
      ->capture_default_str();
  app->add_option("--out-dtype", a.out_dtype,
                  "output type (default: the input type; tf32 -> f32; FP8 -> bf16; e4m3/e5m2 with tensor scales)");
  app->add_option("--layout", a.layout,
                  "nn|nt|tn|tt: first letter A, second B; n = as written (A MxK, B KxN row-major), t = stored "
                  "transposed (default nn; FP8: nt, the one layout it has, as torch._scaled_mm takes it)");
  app->add_option("--scale", a.scale,
                  "FP8 scales: tensor (one per operand, the default), row (one per row of A and per column of C) or "
                  "block (1x128 blocks of A along K, 128x128 blocks of B)");
  app->add_option("--constant", a.constant,
                  "operands the program keeps constant from call to call (its weights): b, a or a,b. A transform "
                  "then copies them once, not per call, and the result serves only calls that declare them "
                  "constant (default: none)");
}

static double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Progress::Progress(std::string what, uint64_t total, bool enabled)
    : what_(std::move(what)), total_(total), enabled_(enabled), tty_(isatty(2)), t0_(now_s()) {}

void Progress::update(uint64_t done, const std::string& note) {
  if (!enabled_) return;
  double t = now_s();
  if (t - last_ < (tty_ ? 0.1 : 5.0) && done < total_) return;
  last_ = t;
  double el = t - t0_;
  std::string eta = (done > 0 && total_ > done) ? " ~" + human_seconds(el / double(done) * double(total_ - done)) + " left" : "";
  std::string line = fmt::format("{}: {}/{} ({:.0f} %) {}{}{}", what_, done, total_,
                                 total_ ? 100.0 * double(done) / double(total_) : 100.0, human_seconds(el), eta,
                                 note.empty() ? "" : "  " + note);
  if (tty_)
    fmt::print(stderr, "\r\033[K{}", line);
  else
    fmt::print(stderr, "{}\n", line);
  std::fflush(stderr);
}

void Progress::finish() {
  if (enabled_ && tty_) fmt::print(stderr, "\r\033[K");
}

std::string human_seconds(double s) {
  if (s < 1e-3) return fmt::format("{:.1f} us", s * 1e6);
  if (s < 1) return fmt::format("{:.1f} ms", s * 1e3);
  if (s < 120) return fmt::format("{:.1f} s", s);
  if (s < 7200) return fmt::format("{:.1f} min", s / 60);
  return fmt::format("{:.1f} h", s / 3600);
}

std::filesystem::path config_dir() {
  for (fs::path p : {executable_dir() / ".." / "configs", executable_dir() / ".." / "share" / "gemmtune" / "configs",
                     fs::path(GEMMTUNE_SOURCE_DIR) / "configs"})
    if (fs::is_directory(p)) return fs::weakly_canonical(p);
  return fs::path(GEMMTUNE_SOURCE_DIR) / "configs";
}

void print_json(const nlohmann::json& j) { std::cout << j.dump(2) << "\n"; }

const char* const kProblemNotation =
    "A problem is written MxNxK IN>OUT LAYOUT aALIGN, e.g. 4096x4096x4096 f16>f16 nn a16: C (M x N) = A (M x K) "
    "times B (K x N); IN>OUT: the input type and the output type (accumulation is fp32); LAYOUT: A's letter then "
    "B's, n = stored as written (row-major), t = stored transposed; aALIGN: the largest power of two, at most 16, "
    "that divides every leading dimension times the element size, in bytes. An FP8 problem adds its scale mode and "
    "may name B's type after A's: 4096x4096x4096 e4m3:e5m2>bf16 nt a16 row.";

std::string no_gpu_hint(const std::string& command) {
  const std::string rec = (config_dir() / "default_job.replay.json").string();
  if (command == "tune")
    return fmt::format("gemmtune: without a GPU, `gemmtune tune --default-job` runs the default job as a replay of "
                       "its recorded H200 measurements, and `gemmtune tune --replay FILE` replays any recording (e.g. "
                       "{}); add --db FILE to keep the replay's results for compare, report and export",
                       rec);
  if (command == "compare")
    return fmt::format("gemmtune: without a GPU, `gemmtune compare --replay FILE` compares from a recording (e.g. {})",
                       rec);
  return fmt::format("gemmtune: without a GPU, `gemmtune tune --default-job` replays the default job's recorded H200 "
                     "measurements (--replay FILE: any recording); list, compile, export, lookup, report and merge "
                     "need no GPU");
}

DeviceInfo gpu_or_exit(int index) { return require_device(index); }

gt_device limits_for(const std::string& arch, std::string* arch_used) {
  if (!arch.empty()) {
    if (arch_used) *arch_used = arch;
    if (device_count() > 0) {
      DeviceInfo d = device_info(0);
      if (d.arch() == arch) return d.limits;
    }
    return arch_limits(arch);
  }
  if (device_count() > 0) {
    DeviceInfo d = device_info(0);
    if (arch_used) *arch_used = d.arch();
    return d.limits;
  }
  if (arch_used) *arch_used = "sm_90";
  return arch_limits("sm_90");
}

}  // namespace gt::cli
