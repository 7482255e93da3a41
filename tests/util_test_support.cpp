#include "test_util.hpp"

#include "gpu/device.hpp"

#include <catch2/catch.hpp>

#include <boost/dll/runtime_symbol_info.hpp>
#include <cstdlib>

#include <array>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <random>
#include <sys/wait.h>

namespace gt::test {
namespace fs = std::filesystem;

std::string shell_quote(const fs::path& p) {
  std::string out = "'";
  for (char c : p.string()) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

const char* const kToyRecording = R"({"format": "gemmtune-replay/2", "spaces": [{
  "recorded": "2026-11-29T12:00:00Z",
  "device": {"name": "NVIDIA H200", "uuid": "GPU-00000000-0000-0000-0000-000000000000", "arch": "sm_90"},
  "problem": {"m": 64, "n": 64, "k": 64, "in": "f32", "out": "f32", "layout": "nn", "align": 16},
  "family": "toy", "family_version": "1.0",
  "params": [{"name": "bx", "help": "block width", "values": [16, 32], "labels": [], "default": 0}],
  "results": [{"config": [16], "status": "ok", "median_us": 10.0, "message": ""},
              {"config": [32], "status": "ok", "median_us": 8.0, "message": ""}]}]})";

static std::atomic<int> g_skips{0};

bool have_gpu() { return device_count() > 0; }
std::string no_gpu_reason() {
  std::string why;
  device_count(&why);
  return why.empty() ? "a GPU is present" : why;
}
int gpu_skips() { return g_skips.load(); }
void count_gpu_skip() { ++g_skips; }

// Paths relative to the test binary (build/tests/gemmtune_tests), so a build carried to
// another machine (the GPU machine) finds its plugins wherever it lands; the compiled-in
// paths are the fallback.
static fs::path exe_dir() { return fs::path(boost::dll::program_location().parent_path().string()); }
static fs::path pick(const fs::path& relative, const char* compiled_in) {
  return fs::exists(relative) ? relative : fs::path(compiled_in);
}
fs::path plugin_dir() { return pick(exe_dir() / ".." / "plugins", GEMMTUNE_PLUGIN_DIR); }
fs::path test_plugin_dir() { return pick(exe_dir() / "test_plugins", GEMMTUNE_TEST_PLUGIN_DIR); }
fs::path gemmtune_binary() { return pick(exe_dir() / ".." / "gemmtune", GEMMTUNE_BINARY); }
fs::path source_dir() {
  if (const char* s = std::getenv("GEMMTUNE_SOURCE_DIR"); s && *s) return s;
  return GEMMTUNE_SOURCE_DIR;
}

TempDir::TempDir() {
  std::random_device rd;
  path = fs::temp_directory_path() / ("gemmtune-test-" + std::to_string(rd()) + std::to_string(rd()));
  fs::create_directories(path);
}
TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path, ec);
}

CommandResult run_command(const std::string& cmdline) {
  CommandResult r{-1, {}};
  FILE* f = popen((cmdline + " 2>&1").c_str(), "r");
  if (!f) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) r.out.append(buf.data(), n);
  int st = pclose(f);
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

std::string cuobjdump() {
  for (const char* cmd : {"command -v cuobjdump",
                          "python3 -c \"import glob, nvidia; print([p for d in nvidia.__path__ for p in "
                          "glob.glob(d + '/*/bin/cuobjdump')][0])\""}) {
    auto r = run_command(cmd);
    std::string path = r.out.substr(0, r.out.find('\n'));
    if (r.exit_code == 0 && !path.empty()) return path;
  }
  return "";
}

std::string require_cuobjdump() {
  const std::string tool = cuobjdump();
  INFO("cuobjdump is needed (tools/install_deps.sh installs it from PyPI: nvidia-cuda-cuobjdump)");
  REQUIRE_FALSE(tool.empty());
  return tool;
}

std::string sass_of(const std::string& cubin, const std::string& tool) {
  TempDir tmp;
  auto file = tmp.path / "k.cubin";
  write_file(file, cubin);
  // cuobjdump runs nvdisasm from PATH; PyPI's copies share the folder cuobjdump is in.
  const std::string dir = fs::path(tool).parent_path().string();
  auto r = run_command((dir.empty() ? "" : "PATH='" + dir + "':\"$PATH\" ") + tool + " -sass " + file.string());
  REQUIRE(r.exit_code == 0);
  return r.out;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const fs::path& p, const std::string& bytes) {
  if (p.has_parent_path()) fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out << bytes;
}

Provenance toy_provenance(const std::string& family, bool quick) {
  Provenance p;
  p.device_name = "Test GPU";
  p.family = family;
  p.family_version = "1.0";
  p.mode = quick ? "quick" : "full";
  return p;
}

fs::path standin_dir() {
  static TempDir d;
  static bool copied = [] {
    for (auto& f : fs::directory_iterator(plugin_dir()))
      if (f.is_regular_file() && f.path().extension() == ".so" && f.path().filename() != "libgemmtune_cublaslt.so")
        fs::copy_file(f.path(), d.path / f.path().filename());
    fs::copy_file(plugin_dir() / "cublaslt" / "standin" / "libgemmtune_cublaslt.so", d.path / "libgemmtune_cublaslt.so");
    return true;
  }();
  (void)copied;
  return d.path;
}

fs::path naive_only_dir() {
  static TempDir d;
  static bool copied = [] {
    fs::copy_file(plugin_dir() / "libgemmtune_naive.so", d.path / "libgemmtune_naive.so");
    return true;
  }();
  (void)copied;
  return d.path;
}

}  // namespace gt::test

namespace gt::test {

const PluginRegistry& plugins() {
  static PluginRegistry reg = PluginRegistry::load({plugin_dir()});
  return reg;
}

// The cache gpu_check compiles into, and compile_ahead fills.
static fs::path gpu_check_cache_dir() { return fs::temp_directory_path() / "gemmtune-test-cubins"; }

Measurement gpu_check(const Family& fam, const Problem& p, const Config& c, bool time_it, Transform t) {
  static std::random_device rd;
  DeviceInfo dev = device_info(0);
  ProblemBench bench(p, dev, Distribution::normal, (uint64_t(rd()) << 32) | rd(), size_t(256) << 20);
  static CubinCache cache(gpu_check_cache_dir());
  Compiler compiler(&cache);
  EvaluateOptions o;
  o.time_it = time_it;
  o.quick = true;
  o.transform = t;
  return evaluate(fam, p, c, dev, bench, compiler, nullptr, o).m;
}

void check_correct(const Family& fam, const std::vector<std::pair<Problem, Config>>& jobs) {
  compile_ahead(fam, jobs);  // the checks below then only load cubins
  const gt_device d = device_info(0).limits;
  for (auto& [p, c] : jobs) {
    Measurement m = gpu_check(fam, p, c);
    INFO(p.key() << " " << fam.space(p, d).name(c) << ": " << to_string(m.status) << " " << m.message);
    CHECK(m.status == Status::ok);
    CHECK(m.err_rel_fro <= tolerance_for(p).rel_fro);
  }
}

std::string define_of(const KernelSpec& k, const std::string& name) {
  for (auto& o : k.options)
    if (o.rfind("-D" + name + "=", 0) == 0) return o.substr(name.size() + 3);
  return "";
}

Stats flat_stats(double us) {
  Stats s;
  s.count = 20;
  s.median = s.mean = s.min = s.max = s.p10 = s.p90 = us;
  s.ci_low = us * 0.999;
  s.ci_high = us * 1.001;
  return s;
}

Problem fp8_problem(int64_t m, int64_t n, int64_t k, ScaleMode scale, DType out, DType a, DType b) {
  return Problem::make(m, n, k, a, out, Layout::nt, b, scale);
}

std::vector<std::pair<Problem, Config>> fp8_jobs(const Family& fam, const gt_device& d,
                                                 const std::vector<ScaleMode>& modes,
                                                 const std::vector<std::array<int64_t, 3>>& shapes,
                                                 const std::function<std::vector<std::string>(ScaleMode)>& configs) {
  const std::array<std::pair<DType, DType>, 3> types = {
      {{DType::e4m3, DType::e4m3}, {DType::e4m3, DType::e5m2}, {DType::e5m2, DType::e4m3}}};
  const std::array<DType, 3> outs = {DType::bf16, DType::f32, DType::f16};
  std::vector<std::pair<Problem, Config>> jobs;
  size_t turn = 0;
  for (auto mode : modes)
    for (auto& sh : shapes)
      for (auto& text : configs(mode)) {
        const auto [a, b] = types[turn % types.size()];
        const DType out = outs[(turn / 2) % outs.size()];
        ++turn;
        Problem p = fp8_problem(sh[0], sh[1], sh[2], mode, out, a, b);
        Space s = fam.space(p, d);
        Config c = text.empty() ? s.default_config() : parse_config(s, text);
        if (!fam.refusal(p, c, d)) jobs.emplace_back(p, c);
      }
  return jobs;
}

Config parse_config(const Space& s, const std::string& text) {
  std::string err;
  auto c = s.parse(text, &err);
  if (!c) throw std::runtime_error("config '" + text + "' of " + s.family() + ": " + err);
  return *c;
}

bool says(const std::optional<std::string>& why, const std::string& words) {
  return why && why->find(words) != std::string::npos;
}
bool says(const std::optional<Refused>& why, const std::string& words) {
  return why && why->why.find(words) != std::string::npos;
}

std::vector<Config> every_kth_valid(const Space& s, uint64_t step, uint64_t offset) {
  std::vector<Config> out;
  uint64_t k = 0;
  for (uint64_t i = 0; i < s.raw_size(); ++i) {
    Config c = s.at(i);
    if (!s.valid(c)) continue;
    if (k++ % step == offset) out.push_back(std::move(c));
  }
  return out;
}

struct CompileSample::Impl {
  explicit Impl(const Family& f) : fam(f), cache(tmp.path), compiler(&cache), pool(compiler, 2) {}
  const Family& fam;
  TempDir tmp;
  CubinCache cache;
  Compiler compiler;
  CompilePool pool;
  std::vector<std::pair<std::string, std::shared_future<CompileResult>>> jobs;
};
CompileSample::CompileSample(const Family& fam) : impl_(std::make_unique<Impl>(fam)) {}
CompileSample::~CompileSample() = default;

std::string CompileSample::add(const Problem& p, const Config& c, const std::string& arch) {
  Refused why;
  auto req = compile_request(impl_->fam, p, c, arch_limits(arch), arch, nullptr, &why);
  if (!req) return why.why.empty() ? "refused" : why.why;
  impl_->jobs.emplace_back(arch + " " + p.key() + " " + impl_->fam.space(p, arch_limits(arch)).name(c),
                           impl_->pool.submit(*req));
  return "";
}

void CompileSample::check_no_local_memory(const Done& j) {
  INFO(j.what << "\n" << j.result.log);
  REQUIRE(j.result.ok);
  CHECK(j.result.res.spill_stores == 0);
  CHECK(j.result.res.spill_loads == 0);
  CHECK(j.result.res.stack_bytes == 0);
}

std::vector<CompileSample::Done> CompileSample::results() {
  std::vector<Done> out;
  for (auto& [what, f] : impl_->jobs) out.push_back({what, f.get()});
  return out;
}

void CompileSample::add_every_kth(const Problem& p, const std::string& arch, uint64_t step, uint64_t offset) {
  Space s = impl_->fam.space(p, arch_limits(arch));
  auto cs = every_kth_valid(s, step, offset);
  INFO(arch << " " << p.key());
  REQUIRE_FALSE(cs.empty());
  for (auto& c : cs) REQUIRE(add(p, c, arch).empty());
}

void CompileSample::require_all_compiled() {
  for (auto& j : results()) {
    INFO(j.what << "\n" << j.result.log);
    REQUIRE(j.result.ok);
    CHECK(j.result.res.registers > 0);
  }
}

void compile_ahead(const Family& fam, const std::vector<std::pair<Problem, Config>>& jobs) {
  if (fam.is_library()) return;  // nothing to compile
  const DeviceInfo dev = device_info(0);
  CubinCache cache(gpu_check_cache_dir());
  Compiler compiler(&cache);
  CompilePool pool(compiler);
  std::vector<std::shared_future<CompileResult>> ahead;
  for (auto& [p, c] : jobs)
    if (auto req = compile_request(fam, p, c, dev.limits, dev.arch(), nullptr, nullptr)) ahead.push_back(pool.submit(*req));
  for (auto& f : ahead) f.wait();
}

}  // namespace gt::test

namespace gt::test {

StandInGpu::StandInGpu() {
  dev_.name = "Test GPU";
  dev_.uuid = "GPU-test";
  dev_.limits = arch_limits("sm_90");
  dev_.driver_version = dev_.runtime_version = "13.0";
}

Measurement StandInGpu::measure(const Candidate&, bool quick) {
  ++measured;
  Measurement m;
  m.status = Status::ok;
  m.quick = quick;
  m.time.count = 5;
  m.time.median = m.time.mean = m.time.min = m.time.max = m.time.p10 = m.time.p90 = 100.0;
  m.time.ci_low = m.time.ci_high = 100.0;
  m.err_rel_fro = m.err_max_norm = 0.0;
  return m;
}

Retimed StandInGpu::retime(const std::vector<Candidate>& cs, const Interleave&, uint64_t) {
  std::vector<Stats> out(cs.size());
  for (auto& s : out) s.median = s.mean = s.min = s.max = s.p10 = s.p90 = s.ci_low = s.ci_high = 100.0;
  return out;
}

}  // namespace gt::test
