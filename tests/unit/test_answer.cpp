// One answer from a table. `gemmtune lookup --json`, the runtime library's dry run and its C
// API give the same config, match kind and rule over a grid of shapes on the committed H200
// table: with the build's plugins (without a GPU cuBLASLt cannot be asked) and with the
// stand-in cuBLASLt where a GPU would be needed; the committed table has no evidence, so with the
// rule as it is (transfers backed) every shape it does not hold is the default, and with
// --transfers any the transfers answer as they did before evidence. Then the rule's steps one at a
// time (with transfers unbacked: test_backed.cpp has the backing): the distance limit, the M
// regime, the architecture tier and the exact-device option, cuBLASLt's pick as the default (never
// naive unless named), and a config adapted in one parameter.
#include "base/errors.hpp"
#include "gemmtune_runtime.h"
#include "gemmtune_runtime.hpp"
#include "build/plugin.hpp"
#include "table/table.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <map>

using namespace gt;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const char* kH200 = "NVIDIA H200";

fs::path committed_table() { return test::source_dir() / "docs" / "results" / "h200-llm-table.toml"; }

const PluginRegistry& standin_plugins() {
  static PluginRegistry r = PluginRegistry::load({test::standin_dir()});
  return r;
}

struct Asked {
  int64_t m, n, k;
  DType in = DType::bf16;
  Layout layout = Layout::nn;
  Problem problem() const { return Problem::make(m, n, k, in, Problem::default_out(in), layout); }
  std::string text() const { return fmt::format("{}x{}x{} {} {}", m, n, k, to_string(in), to_string(layout)); }
};

// What `gemmtune lookup --json` answers (the exit code must be 0).
json cli_answer(const fs::path& plugins, const Asked& a, const std::string& device, const std::string& extra = "") {
  auto r = test::run_command(fmt::format("'{}' --plugin-dir '{}' --json lookup --table '{}' --shape {}x{}x{} "
                                         "--dtype {} --layout {}{}{}",
                                         test::gemmtune_binary().string(), plugins.string(), committed_table().string(),
                                         a.m, a.n, a.k, to_string(a.in), to_string(a.layout),
                                         device.empty() ? "" : " --device '" + device + "'", extra));
  INFO(a.text() << ": " << r.out);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

gemmtune::Options dry_run(const fs::path& plugins, const fs::path& cache, const std::string& device,
                          bool unbacked = false) {
  gemmtune::Options o;
  o.plugin_dirs = {plugins.string()};
  o.cache_dir = cache.string();
  o.dry_run = true;
  o.device_name = device;
  o.unbacked_transfers = unbacked;
  return o;
}

gemmtune::GemmArgs args_of(const Asked& a) {
  Problem p = a.problem();
  gemmtune::GemmArgs g;
  g.m = p.m;
  g.n = p.n;
  g.k = p.k;
  g.in = gemmtune_dtype(p.in);
  g.out = gemmtune_dtype(p.out);
  g.layout = gemmtune_layout(p.layout);
  g.a = reinterpret_cast<const void*>(uintptr_t(1) << 20);  // 256-byte aligned, as from cudaMalloc
  g.b = reinterpret_cast<const void*>(uintptr_t(2) << 20);
  g.c = reinterpret_cast<void*>(uintptr_t(3) << 20);
  g.lda = p.lda;
  g.ldb = p.ldb;
  g.ldc = p.ldc;
  return g;
}

const char* match_name(gemmtune_match m) {
  return m == GEMMTUNE_MATCH_EXACT ? "exact" : m == GEMMTUNE_MATCH_NEAREST ? "nearest" : "default";
}

// The grid: decode and prefill M, the table's N and K and others, and problems no entry serves.
std::vector<Asked> grid() {
  std::vector<Asked> g;
  for (int64_t m : {1, 3, 16, 32, 100, 1000, 4000, 16384})
    for (auto [n, k] : std::vector<std::pair<int64_t, int64_t>>{
             {4096, 4096}, {12288, 4096}, {4096, 11008}, {22016, 4096}, {5000, 3000}, {64, 128}})
      g.push_back({m, n, k});
  g.push_back({4095, 4097, 4096, DType::f16});             // misaligned, and no f16 entry
  g.push_back({4096, 4096, 4096, DType::f32});             // no f32 entry
  g.push_back({4096, 4096, 4096, DType::bf16, Layout::tn});  // no tn entry
  return g;
}

// Every shape of the grid, through the command line and through the runtime's dry run: with
// transfers backed (the rule) and unbacked (--transfers any, the rule before evidence).
void check_agreement(const fs::path& plugins, const std::string& device, bool unbacked) {
  test::TempDir cache;
  gemmtune::Runtime rt(committed_table().string(), dry_run(plugins, cache.path, device, unbacked));
  std::map<std::string, int> rules;
  for (const Asked& a : grid()) {
    json j = cli_answer(plugins, a, device, unbacked ? " --transfers any" : "");
    const gemmtune::Choice& c = rt.prepare(args_of(a));
    INFO(a.text() << " on '" << device << "' from " << plugins.string() << ": lookup " << j.dump() << "; runtime "
                  << c.config << " (" << c.how << ")");
    CHECK(j["config"] == c.config);
    CHECK(j["family"] == c.family);
    CHECK(j["match"] == match_name(c.match));
    CHECK(j["rule"] == c.rule);
    CHECK(j["backing"] == c.backing);
    CHECK(j["how"] == c.how);
    CHECK(j["problem"]["key"] == c.problem);
    CHECK((j["reason"].is_null() ? std::string() : j["reason"].get<std::string>()) == c.reason);
    CHECK((j["unchecked"].is_null() ? std::string() : j["unchecked"].get<std::string>()) == c.unchecked);
    ++rules[c.rule];
  }
  // The grid reaches every kind of answer the committed table gives: without evidence, no transfer.
  INFO(json(rules).dump());
  CHECK(rules["exact"] > 0);
  if (unbacked)
    CHECK(rules["nearest"] + rules["transferred"] > 0);
  else
    CHECK(rules["nearest"] + rules["adapted"] == 0);  // transferred, where a GPU has one, is the default itself
  CHECK(rules["library default"] > 0);
}

}  // namespace

TEST_CASE("lookup and the runtime give one answer over a grid of shapes on the committed table",
          "[table][runtime][cli]") {
  for (bool unbacked : {false, true}) {
    INFO((unbacked ? "--transfers any" : "transfers backed"));
    SECTION(std::string("the build's plugins (without a GPU, cuBLASLt's entries and pick are answered unchecked)") +
            (unbacked ? ", unbacked" : "")) {
      check_agreement(test::plugin_dir(), kH200, unbacked);
      check_agreement(test::plugin_dir(), "", unbacked);  // the GPU's name where there is one, else none named
    }
    SECTION(std::string("the stand-in cuBLASLt where the GPU would be") + (unbacked ? ", unbacked" : "")) {
      check_agreement(test::standin_dir(), kH200, unbacked);
    }
  }
}

TEST_CASE("the committed table answers prefill shapes from prefill entries only with --transfers any (it has no "
          "evidence), a misaligned problem with the pick",
          "[table][runtime][cli]") {
  for (const fs::path& plugins : {test::plugin_dir(), test::standin_dir()}) {
    const bool standin = plugins == test::standin_dir();
    INFO((standin ? "stand-in cuBLASLt" : "the build's plugins"));
    test::TempDir cache;
    gemmtune::Runtime rt(committed_table().string(), dry_run(plugins, cache.path, kH200, true));
    gemmtune::Runtime backed(committed_table().string(), dry_run(plugins, cache.path, kH200));
    for (auto [asked, from] : std::vector<std::pair<Asked, std::string>>{{{4000, 4096, 4096}, "4096x4096x4096"},
                                                                         {{32, 4096, 4096}, "64x4096x4096"}}) {
      json b = cli_answer(plugins, asked, kH200);
      INFO(b.dump());
      CHECK(b["rule"] == "library default");
      CHECK_THAT(b["reason"].get<std::string>(),
                 Catch::Contains(from + " (nearest, distance") &&
                     Catch::Contains("the table has no evidence that its nearest answers hold on NVIDIA H200"));
      CHECK(backed.prepare(args_of(asked)).rule == "library default");
      json j = cli_answer(plugins, asked, kH200, " --transfers any");
      INFO(j.dump());
      CHECK(j["match"] == "nearest");
      REQUIRE(j["entry"].is_object());
      CHECK(fmt::format("{}x{}x{}", j["entry"]["m"].get<int64_t>(), j["entry"]["n"].get<int64_t>(),
                        j["entry"]["k"].get<int64_t>()) == from);
      CHECK(j["entry"]["m"].get<int64_t>() > kDefaultDecodeMaxM);  // a prefill entry
      CHECK(j["family"] == "cublaslt");
      const gemmtune::Choice& c = rt.prepare(args_of(asked));
      CHECK(c.tuned_key == fmt::format("NVIDIA H200 {} bf16>bf16 nn a16", from));
      CHECK(c.config == j["config"]);
    }
    // 4095x4097x4096 f16: leading dimensions of 2-byte alignment, and no entry of that class.
    Asked odd{4095, 4097, 4096, DType::f16};
    json j = cli_answer(plugins, odd, kH200);
    INFO(j.dump());
    CHECK(j["problem"]["key"] == "4095x4097x4096 f16>f16 nn a2");
    CHECK(j["match"] == "default");
    CHECK(j["rule"] == "library default");
    CHECK(j["family"] == "cublaslt");
    CHECK(j["how"].get<std::string>().rfind("default (cuBLASLt's heuristic pick", 0) == 0);
    CHECK_THAT(j["reason"].get<std::string>(), Catch::Contains("no entry for f16>f16 nn alignment 2"));
    if (standin || test::have_gpu()) {
      const PluginRegistry& reg = standin ? standin_plugins() : test::plugins();
      const Family& lt = reg.get("cublaslt");
      Space s = lt.space(odd.problem(), arch_limits("sm_90"));
      CHECK(j["config"] == s.name(lt.suggest(odd.problem(), arch_limits("sm_90"), 1, s.dims()).at(0)));
      CHECK(j["unchecked"].is_null());
    } else {
      CHECK(j["config"] == "");  // cuBLASLt cannot be asked which algorithm it would pick
      CHECK_THAT(j["unchecked"].get<std::string>(), Catch::Contains("GPU") || Catch::Contains("CUDA"));
    }
    const gemmtune::Choice& c = rt.prepare(args_of(odd));
    CHECK(c.match == GEMMTUNE_MATCH_DEFAULT);
    CHECK(c.family == "cublaslt");
    CHECK(c.config == j["config"]);
  }
}

TEST_CASE("the C API answers what lookup answers", "[table][runtime][cli]") {
  test::TempDir cache;
  std::string dirs = test::plugin_dir().string(), cdir = cache.path.string(), table = committed_table().string();
  gemmtune_options o;
  gemmtune_options_init(&o);
  CHECK(o.max_distance == kDefaultMaxDistance);
  CHECK(o.decode_max_m == kDefaultDecodeMaxM);
  CHECK(o.exact_device == 0);
  o.plugin_dirs = dirs.c_str();
  o.cache_dir = cdir.c_str();
  o.dry_run = 1;
  o.device_name = kH200;
  gemmtune_runtime* h = nullptr;
  REQUIRE(gemmtune_create(table.c_str(), &o, &h) == GEMMTUNE_SUCCESS);
  for (const Asked& a : {Asked{4000, 4096, 4096}, Asked{32, 4096, 4096}, Asked{16, 4096, 4096},
                         Asked{4095, 4097, 4096, DType::f16}, Asked{1, 64, 128}}) {
    json j = cli_answer(test::plugin_dir(), a, kH200);
    gemmtune_gemm_args ca{};
    gemmtune::GemmArgs g = args_of(a);
    ca = {g.m, g.n, g.k, g.in, g.out, g.layout, g.a, g.lda, g.b, g.ldb, g.c, g.ldc};
    int32_t match = -1;
    char config[512], how[512];
    REQUIRE(gemmtune_choice(h, &ca, &match, config, sizeof config, how, sizeof how) == GEMMTUNE_SUCCESS);
    INFO(a.text() << ": " << j.dump());
    CHECK(j["config"] == config);
    CHECK(j["how"] == how);
    CHECK(j["match"] == match_name(gemmtune_match(match)));
  }
  gemmtune_destroy(h);
  // Options the runtime cannot honour are refused at creation.
  o.max_distance = std::nan("");
  CHECK(gemmtune_create(table.c_str(), &o, &h) == GEMMTUNE_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(gemmtune_last_error(), Catch::Contains("max_distance"));
  o.max_distance = kDefaultMaxDistance;
  o.exact_device = 1;
  o.device_name = nullptr;
  if (!test::have_gpu()) {
    CHECK(gemmtune_create(table.c_str(), &o, &h) == GEMMTUNE_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(gemmtune_last_error(), Catch::Contains("exact_device needs a device"));
  }
}

TEST_CASE("an H100 answers from the H200's entries by architecture, unless an exact device match is asked for",
          "[table][runtime][cli]") {
  const std::string h100 = "NVIDIA H100 80GB HBM3";
  Asked a{4096, 4096, 4096};
  json j = cli_answer(test::plugin_dir(), a, h100);
  INFO(j.dump());
  CHECK(j["match"] == "exact");
  CHECK(j["tier"] == "arch");
  CHECK_THAT(j["notes"].dump(), Catch::Contains("no entries for 'NVIDIA H100 80GB HBM3'") &&
                                    Catch::Contains("same architecture (sm_90: 'NVIDIA H200')"));
  test::TempDir cache;
  gemmtune::Options o = dry_run(test::plugin_dir(), cache.path, h100);
  gemmtune::Runtime rt(committed_table().string(), o);
  const gemmtune::Choice& c = rt.prepare(args_of(a));
  CHECK(c.config == j["config"]);
  CHECK(c.note == j["notes"][0]);

  json x = cli_answer(test::plugin_dir(), a, h100, " --exact-device");
  INFO(x.dump());
  CHECK(x["match"] == "default");
  CHECK(x["tier"] == "device");
  CHECK_THAT(x["reason"].get<std::string>(), Catch::Contains("the table has no entry") &&
                                                 Catch::Contains("an exact device match was asked for"));
  o.exact_device = true;
  gemmtune::Runtime exact(committed_table().string(), o);
  const gemmtune::Choice& ce = exact.prepare(args_of(a));
  CHECK(ce.match == GEMMTUNE_MATCH_DEFAULT);
  CHECK(ce.config == x["config"]);
  CHECK(ce.reason == x["reason"]);
  // Another architecture's limits: the sm_90 entries are not that architecture's, so every entry
  // is considered, and that is said.
  json y = cli_answer(test::plugin_dir(), a, h100, " --arch sm_80");
  CHECK(y["tier"] == "any");
  CHECK_THAT(y["notes"].dump(), Catch::Contains("none measured on sm_80"));
}

TEST_CASE("lookup flags of the rule: distance, regime, exact device and the default family are checked and used",
          "[table][cli]") {
  std::string bin = fmt::format("'{}' --plugin-dir '{}' lookup --transfers any --table '{}' --device '{}'",
                                test::gemmtune_binary().string(), test::plugin_dir().string(),
                                committed_table().string(), kH200);
  // Far from every entry: no nearest answer, cuBLASLt's pick, and why.
  auto r = test::run_command(bin + " --shape 1x4096x64 --dtype bf16 --json");
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  json j = json::parse(r.out);
  CHECK(j["match"] == "default");
  CHECK_THAT(j["reason"].get<std::string>(), Catch::Contains("beyond the limit 1.386 (max_distance)"));
  // With no limit the nearest entry answers however far it is.
  r = test::run_command(bin + " --shape 1x4096x64 --dtype bf16 --max-distance inf --json");
  REQUIRE(r.exit_code == 0);
  j = json::parse(r.out);
  CHECK(j["match"] == "nearest");
  CHECK(j["policy"]["max_distance"] == "inf");
  // At decode only an entry of the problem's N serves, however near the others (16x12288x4096
  // and 16x4096x4096 lie ln 1.5 and ln 2 away from 16x8192x4096), with no limit too; another K does.
  for (const char* limit : {"", " --max-distance inf"}) {
    r = test::run_command(bin + " --shape 16x8192x4096 --dtype bf16 --json" + limit);
    REQUIRE(r.exit_code == 0);
    j = json::parse(r.out);
    CHECK(j["match"] == "default");
    CHECK_THAT(j["passed_over"].dump(), Catch::Contains("a decode entry of N = 12288, the problem's N is 8192: decode "
                                                        "entries serve their own N"));
  }
  r = test::run_command(bin + " --shape 8x4096x8192 --dtype bf16 --json");
  REQUIRE(r.exit_code == 0);
  j = json::parse(r.out);
  CHECK(j["match"] == "nearest");
  CHECK(j["entry"]["n"] == 4096);
  // Prefill entries still serve another N.
  r = test::run_command(bin + " --shape 512x8192x4096 --dtype bf16 --json");
  REQUIRE(r.exit_code == 0);
  j = json::parse(r.out);
  CHECK(j["match"] == "nearest");
  CHECK(j["entry"]["n"] != 8192);
  // One regime: the decode entry 16x4096x4096 ties with 64x4096x4096 at 32 rows and is faster.
  r = test::run_command(bin + " --shape 32x4096x4096 --dtype bf16 --decode-max-m 0 --json");
  REQUIRE(r.exit_code == 0);
  j = json::parse(r.out);
  CHECK(j["entry"]["m"] == 16);
  r = test::run_command(bin + " --shape 32x4096x4096 --dtype bf16 --json");
  REQUIRE(r.exit_code == 0);
  j = json::parse(r.out);
  CHECK(j["entry"]["m"] == 64);
  CHECK_THAT(j["passed_over"].dump(), Catch::Contains("an entry of the decode (M <= 16) regime"));
  // The human-readable answer says the distance, the limit and the regime.
  r = test::run_command(bin + " --shape 4000x4096x4096 --dtype bf16");
  INFO(r.out);
  CHECK_THAT(r.out, Catch::Contains("from 4096x4096x4096") && Catch::Contains("(limit 1.386), prefill (M > 16)"));
  // Bad values are bad input, named.
  for (auto [flag, what] : std::vector<std::pair<std::string, std::string>>{
           {"--max-distance -1", "--max-distance: must be a distance from 0 to inf, not -1"},
           {"--max-distance nan", "--max-distance: must be a distance from 0 to inf, not nan"},
           {"--decode-max-m -3", "--decode-max-m: -3 must not be negative"}}) {
    r = test::run_command(bin + " --shape 64x64x64 " + flag);
    INFO(flag << ": " << r.out);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.out, Catch::Contains(what));
  }
  r = test::run_command(fmt::format("'{}' --plugin-dir '{}' lookup --table '{}' --exact-device",
                                    test::gemmtune_binary().string(), test::plugin_dir().string(),
                                    committed_table().string()));
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.out, Catch::Contains("--exact-device is about a problem"));
  for (const char* flag : {"--transfers any", "--online"}) {
    r = test::run_command(fmt::format("'{}' lookup --table '{}' {}", test::gemmtune_binary().string(),
                                      committed_table().string(), flag));
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.out, Catch::Contains("is about a problem"));
  }
  r = test::run_command(bin + " --shape 64x64x64 --transfers some");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.out, Catch::Contains("--transfers"));
}

// ---------------------------------------------------------------------------------------
// The rule's steps, through LookupTable::lookup with the plugins' hooks.

namespace {

const char* kDevice = "NVIDIA Test GPU";

TableEntry entry_of(const Family& fam, const std::string& device, const Problem& p, const std::string& assignments,
                    double time_us, const std::string& arch = "sm_90") {
  Space s = fam.space(p, arch_limits("sm_90"));
  Config c = test::parse_config(s, assignments);
  TableEntry e;
  e.key = ResultKey::of(device, p);
  e.family = fam.name();
  e.family_version = fam.version();
  e.config = s.name(c);
  e.params = s.assignments(c);
  e.time_us = time_us;
  e.tflops = p.flops() / (time_us * 1e-6) / 1e12;
  e.arch = arch;
  return e;
}

Problem f32(int64_t m, int64_t n, int64_t k) { return Problem::make(m, n, k, DType::f32, DType::f32, Layout::nn); }

LookupHooks hooks_of(const PluginRegistry& reg, const std::string& default_family = "") {
  gt_device lim = arch_limits("sm_90");
  return {plugin_can_implement(reg, lim), plugin_default(reg, lim, default_family), plugin_transfer(reg, lim),
          plugin_adapt(reg, lim)};
}

const PluginRegistry& naive_only() {
  static PluginRegistry r = PluginRegistry::load({test::naive_only_dir()});
  return r;
}

}  // namespace

TEST_CASE("lookup rule: the distance limit, with the reason when it falls to the default", "[table]") {
  const Family& naive = naive_only().get("naive");
  LookupTable t;
  t.entries = {entry_of(naive, kDevice, f32(1024, 1024, 1024), "bx=16,by=16", 50)};
  LookupPolicy policy;
  policy.device = kDevice;
  policy.default_family = "naive";
  policy.unbacked_transfers = true;  // the reach alone (test_backed.cpp: the backing)
  LookupHooks h = hooks_of(naive_only(), "naive");
  // ln(2048/1024) = 0.69: within ln 4.
  LookupResult r = t.lookup(f32(2048, 1024, 1024), policy, h);
  CHECK(r.rule == Rule::nearest);
  CHECK(r.distance == Approx(std::log(2.0)));
  // sqrt(3) ln 4 = 2.4: beyond; the default, and why.
  r = t.lookup(f32(4096, 4096, 4096), policy, h);
  CHECK(r.kind == MatchKind::fallback);
  CHECK(r.rule == Rule::family_default);
  CHECK(r.how == "default (naive's default config)");
  CHECK(r.reason == "none of its 1 entries for f32>f32 nn alignment 16 is within reach: the nearest, 1024x1024x1024, "
                    "log-space distance 2.401 is beyond the limit 1.386 (max_distance)");
  REQUIRE(r.passed_over.size() == 1);
  // Overridable: 0 answers exact keys only; infinity any entry.
  policy.max_distance = 0;
  CHECK(t.lookup(f32(1024, 1024, 1024), policy, h).rule == Rule::exact);
  CHECK(t.lookup(f32(1025, 1024, 1024), policy, h).rule == Rule::family_default);
  policy.max_distance = std::numeric_limits<double>::infinity();
  CHECK(t.lookup(f32(16384, 16384, 16384), policy, h).rule == Rule::nearest);
}

TEST_CASE("lookup rule: a nearest entry serves its own M regime only", "[table]") {
  const Family& naive = naive_only().get("naive");
  TableEntry decode = entry_of(naive, kDevice, f32(1, 4096, 4096), "bx=32,by=1", 10),
             small = entry_of(naive, kDevice, f32(64, 4096, 4096), "bx=32,by=4", 20),
             large = entry_of(naive, kDevice, f32(1024, 4096, 4096), "bx=32,by=8", 100);
  LookupTable t;
  t.entries = {decode, small, large};
  t.sort();
  LookupPolicy policy;
  policy.device = kDevice;
  policy.max_distance = std::numeric_limits<double>::infinity();
  policy.unbacked_transfers = true;
  LookupHooks h = hooks_of(naive_only(), "naive");
  // 12 rows is decode: 64 rows is nearer (ln 5.3 = 1.67 against ln 12 = 2.48) but prefill.
  LookupResult r = t.lookup(f32(12, 4096, 4096), policy, h);
  CHECK(r.how == "nearest (from 1x4096x4096)");
  REQUIRE_FALSE(r.passed_over.empty());
  CHECK(r.passed_over[0].first == small.text());
  CHECK(r.passed_over[0].second == "an entry of the prefill (M > 16) regime, the problem is of the decode (M <= 16) "
                                   "regime (decode_max_m)");
  // One regime (decode_max_m 0): the nearest in log space.
  policy.decode_max_m = 0;
  CHECK(t.lookup(f32(12, 4096, 4096), policy, h).how == "nearest (from 64x4096x4096)");
  policy.decode_max_m = kDefaultDecodeMaxM;
  // 17 rows is prefill: without the 64-row entry, 1 row is nearer (ln 17 = 2.83 against ln 60 = 4.1).
  LookupTable two;
  two.entries = {decode, large};
  r = two.lookup(f32(17, 4096, 4096), policy, h);
  CHECK(r.how == "nearest (from 1024x4096x4096)");
  // No entry of the problem's regime: the default, however near the others are.
  LookupTable prefill_only;
  prefill_only.entries = {small, large};
  r = prefill_only.lookup(f32(1, 4096, 4096), policy, h);
  CHECK(r.kind == MatchKind::fallback);
  CHECK_THAT(r.reason, Catch::Contains("the nearest, 64x4096x4096, an entry of the prefill (M > 16) regime"));
}

TEST_CASE("lookup rule: the device's entries, else its architecture's, else any device's", "[table]") {
  const Family& naive = naive_only().get("naive");
  LookupTable t;
  t.entries = {entry_of(naive, "GPU A", f32(1024, 1024, 1024), "bx=16,by=16", 50, "sm_90"),
               entry_of(naive, "GPU B", f32(1024, 1024, 1024), "bx=32,by=8", 40, "sm_80")};
  t.sort();
  LookupHooks h = hooks_of(naive_only(), "naive");
  auto ask = [&](std::optional<std::string> device, std::string arch, bool exact = false) {
    LookupPolicy policy;
    policy.device = std::move(device);
    policy.arch = std::move(arch);
    policy.exact_device = exact;
    policy.default_family = "naive";
    return t.lookup(f32(1024, 1024, 1024), policy, h);
  };
  LookupResult r = ask("GPU A", "sm_90");
  CHECK(r.tier == Tier::device);
  CHECK(r.entry->key.device_name == "GPU A");
  CHECK(r.device_note.empty());
  r = ask("GPU C", "sm_90");  // another sm_90 part: the sm_90 entries, though GPU B's is faster
  CHECK(r.tier == Tier::arch);
  CHECK(r.entry->key.device_name == "GPU A");
  CHECK(r.device_note == "the table has no entries for 'GPU C'; entries measured on the same architecture (sm_90: "
                         "'GPU A') were used");
  r = ask("GPU D", "sm_100");
  CHECK(r.tier == Tier::any);
  CHECK(r.entry->key.device_name == "GPU B");  // every entry: the faster
  CHECK(r.device_note == "the table has no entries for 'GPU D' (it has 'GPU A', 'GPU B'), none measured on sm_100; "
                         "entries of every device were considered");
  r = ask(std::nullopt, "sm_80");  // no device named: the architecture's entries
  CHECK(r.tier == Tier::arch);
  CHECK(r.entry->key.device_name == "GPU B");
  CHECK(r.device_note.empty());
  r = ask("GPU C", "sm_90", true);
  CHECK(r.kind == MatchKind::fallback);
  CHECK_THAT(r.reason, Catch::Contains("an exact device match was asked for"));
  CHECK_THROWS_AS(ask(std::nullopt, "sm_90", true), InputError);
}

TEST_CASE("lookup rule: the default is cuBLASLt's pick, a hand-written family's only when named", "[table]") {
  const Family& naive = naive_only().get("naive");
  LookupTable t;
  t.entries = {entry_of(naive, kDevice, f32(1024, 1024, 1024), "bx=16,by=16", 50)};
  LookupPolicy policy;
  policy.device = kDevice;
  Problem f16 = Problem::make(1024, 1024, 1024, DType::f16, DType::f16, Layout::nn);
  // Without cuBLASLt and without a named family there is no default: said, with the reasons.
  CHECK_THROWS_WITH(t.lookup(f16, policy, hooks_of(naive_only())),
                    Catch::Contains("nothing to run") && Catch::Contains("the cublaslt family is not loaded") &&
                        Catch::Contains("no default family was named"));
  // Named: its default config.
  LookupResult r = t.lookup(f16, policy, hooks_of(naive_only(), "naive"));
  CHECK(r.rule == Rule::family_default);
  CHECK(r.family == "naive");
  // With cuBLASLt (the stand-in): its pick, even where a family is named.
  r = t.lookup(f16, policy, hooks_of(standin_plugins(), "naive"));
  CHECK(r.rule == Rule::library_default);
  CHECK(r.family == "cublaslt");
  CHECK(r.how == "default (cuBLASLt's heuristic pick)");
  const Family& lt = standin_plugins().get("cublaslt");
  Space s = lt.space(f16, arch_limits("sm_90"));
  CHECK(r.config == s.name(s.default_config()));
  // Where cuBLASLt refuses the problem (f32 inputs, f16 output), the named family's default.
  Problem mixed = Problem::make(64, 64, 64, DType::f32, DType::f16, Layout::nn);
  r = t.lookup(mixed, policy, hooks_of(standin_plugins(), "naive"));
  CHECK(r.rule == Rule::family_default);
  CHECK_THROWS_WITH(t.lookup(mixed, policy, hooks_of(standin_plugins())),
                    Catch::Contains("cuBLASLt has no algorithm for f32 inputs with f16 output"));
}

TEST_CASE("lookup rule: a parameter the asked shape refuses is set to the family's default there", "[table]") {
  const PluginRegistry& reg = test::plugins();
  const Family& rt = reg.get("register_tile");
  Problem tuned = f32(4096, 4096, 4096), asked = f32(100, 4096, 4096);
  Space st = rt.space(tuned, arch_limits("sm_90"));
  Config c = st.default_config();
  REQUIRE(st.assignments(c).find("swz=8") != std::string::npos);
  TableEntry e = entry_of(rt, kDevice, tuned, st.assignments(c), 3000);
  // At 100 rows the grid is one block high: swz=8 walks it as swz=1 does, and is refused.
  Space sa = rt.space(asked, arch_limits("sm_90"));
  auto refusal = rt.can_implement(asked, *sa.parse(e.config, nullptr), arch_limits("sm_90"));
  REQUIRE(refusal);
  CHECK_THAT(*refusal, Catch::Contains("same as swz=1"));
  LookupTable t;
  t.entries = {e};
  LookupPolicy policy;
  policy.device = kDevice;
  policy.max_distance = std::numeric_limits<double>::infinity();
  policy.unbacked_transfers = true;
  LookupResult r = t.lookup(asked, policy, hooks_of(reg));
  CHECK(r.kind == MatchKind::nearest);
  CHECK(r.rule == Rule::adapted);
  CHECK(r.how == "nearest (from 4096x4096x4096, with swz=1 for swz=8)");
  CHECK_THAT(r.adapted, Catch::Contains("swz=1 for swz=8: swz=8 on a grid of 1x"));
  Config expect = *sa.parse(e.config, nullptr);
  expect[sa.dims() - 2] = 1;  // swz is register_tile's second-last parameter
  REQUIRE(sa.params()[sa.dims() - 2].name == "swz");
  CHECK(r.config == sa.name(expect));
  CHECK_FALSE(rt.can_implement(asked, expect, arch_limits("sm_90")));
  // Without the hook (the rule before), the entry is passed over.
  LookupResult old = t.lookup(asked, std::string(kDevice), plugin_can_implement(reg, arch_limits("sm_90")),
                              plugin_default(reg, arch_limits("sm_90")));
  CHECK(old.kind == MatchKind::fallback);
}

TEST_CASE("lookup rule: an entry naming a config its family no longer has is a broken table", "[table]") {
  const Family& naive = naive_only().get("naive");
  LookupTable t;
  t.origin = "broken.json";
  t.entries = {entry_of(naive, kDevice, f32(1024, 1024, 1024), "bx=16,by=16", 50)};
  t.entries[0].config = "naive_mapcoalesced_bx48_by8";
  LookupPolicy policy;
  policy.device = kDevice;
  CHECK_THROWS_AS(t.lookup(f32(1024, 1024, 1024), policy, hooks_of(naive_only(), "naive")), BrokenEntryError);
  CHECK_THROWS_WITH(t.lookup(f32(1000, 1024, 1024), policy, hooks_of(naive_only(), "naive")),
                    Catch::Contains("broken.json: entries[0]") && Catch::Contains("no longer exists"));
}

// ---------------------------------------------------------------------------------------
// tools/bench_lookup.py, on the CPU: its lookups are the real binary's, its timings come from
// a stand-in for `gemmtune run` that answers from a file of times (and fails for any other run).

TEST_CASE("bench_lookup: held-out and asked problems, the rule per row, ratios and exit codes", "[table][cli]") {
  if (test::run_command("python3 -c 'import json'").exit_code != 0) {
    WARN("SKIPPED: python3 is not available here");
    return;
  }
  test::TempDir d;
  const Family& naive = naive_only().get("naive");
  LookupTable t;
  t.entries = {entry_of(naive, kDevice, f32(1024, 1024, 1024), "bx=16,by=16", 50),
               entry_of(naive, kDevice, f32(2048, 1024, 1024), "bx=32,by=8", 90),
               entry_of(naive, kDevice, f32(1, 4096, 4096), "bx=32,by=1", 20)};
  t.sort();
  fs::path table = d.path / "t.json";
  t.save(table, TableFormat::json);
  auto config = [&](int64_t m, int64_t n, int64_t k) {
    for (auto& e : t.entries)
      if (e.key.m == m && e.key.n == n && e.key.k == k) return e.config;
    return std::string();
  };
  Space s1 = naive.space(f32(1, 4096, 4096), arch_limits("sm_90"));
  const std::string naive_default_1 = s1.name(s1.default_config());
  // Times per (family, config, shape): what each run of the benchmark should ask for.
  json times = {
      {"naive|" + config(1024, 1024, 1024) + "|1024x1024x1024", 50.0},  // tuned, held out 1024
      {"naive|" + config(2048, 1024, 1024) + "|1024x1024x1024", 62.5},  // answer from 2048
      {"cublaslt||1024x1024x1024", 100.0},
      {"naive|" + config(2048, 1024, 1024) + "|2048x1024x1024", 90.0},   // tuned, held out 2048
      {"naive|" + config(1024, 1024, 1024) + "|2048x1024x1024", 100.0},  // answer from 1024
      {"cublaslt||2048x1024x1024", 180.0},
      {"naive|" + config(1, 4096, 4096) + "|1x4096x4096", 20.0},  // tuned, held out 1x4096: no other decode entry
      {"naive|" + naive_default_1 + "|1x4096x4096", 40.0},          // the named default family's default
      {"cublaslt||1x4096x4096", 10.0},
      {"naive|" + config(2048, 1024, 1024) + "|1500x1024x1024", 70.0},  // asked: from 2048 (0.31, nearer than 1024)
      {"cublaslt||1500x1024x1024", 140.0}};
  fs::path times_file = d.path / "times.json", fake = d.path / "fake_gemmtune";
  test::write_file(times_file, times.dump());
  test::write_file(fake, fmt::format(R"(#!/usr/bin/env python3
# A stand-in for gemmtune: lookup is the real binary's; run answers from {times}.
import json, os, sys
args = [a for a in sys.argv[1:] if a != "--json"]
if args[0] == "lookup":
    os.execv("{bin}", ["{bin}", "--plugin-dir", "{plugins}", "--json"] + args)
opt = {{args[i]: args[i + 1] for i in range(1, len(args) - 1, 2)}}
key = "|".join([opt["--family"], opt.get("--params", ""), opt["--shape"]])
times = json.load(open("{times}"))
with open("{times}.asked", "a") as f:
    f.write(key + "\n")
if key not in times:
    print(json.dumps({{"status": "runtime_fault", "message": "no time for " + key}}))
    sys.exit(1)
if times[key] == "cannot":
    print(json.dumps({{"status": "cannot_implement", "message": "not in this device's space: " + key}}))
    sys.exit(1)
print(json.dumps({{"status": "ok", "time_us": {{"value": times[key]}}}}))
)",
                                     fmt::arg("times", times_file.string()),
                                     fmt::arg("bin", test::gemmtune_binary().string()),
                                     fmt::arg("plugins", test::naive_only_dir().string())));
  fs::permissions(fake, fs::perms::owner_all);
  // --transfers any: the rules' answers as they would run without evidence (the table has none).
  std::string cmd = fmt::format("python3 '{}' --gemmtune '{}' --table '{}' --device '{}' --default-family naive "
                                "--transfers any",
                                (test::source_dir() / "tools" / "bench_lookup.py").string(), fake.string(),
                                table.string(), kDevice);
  auto r = test::run_command(cmd + " --limit 3 --shapes 1500x1024x1024");
  INFO(r.out);
  // The named family's default at 1x4096x4096 ran 4x cuBLASLt's pick: slower than the default, exit 1.
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains("SLOWER THAN THE DEFAULT: 1x4096x4096 f32: its family default answer ran 4.000x "
                                    "cuBLASLt's pick's time") &&
                        Catch::Contains("1 of 4 answers ran more than 1 % slower than the default"));
  // Held out 1024: answered from 2048 (nearest), tuned/answer 50/62.5, pick/answer 100/62.5.
  CHECK_THAT(r.out, Catch::Matches(
                        "(.|\n)*1024x1024x1024 f32 +yes +nearest +2048x1024x1024 +naive +50\\.0 +62\\.5 +100\\.0 +- +"
                        "0\\.800 +1\\.600(.|\n)*"));
  CHECK_THAT(r.out, Catch::Matches("(.|\n)*2048x1024x1024 f32 +yes +nearest +1024x1024x1024 +naive +90\\.0 +100\\.0 +"
                                   "180\\.0 +- +0\\.900 +1\\.800(.|\n)*"));
  // Held out 1x4096x4096: no decode entry is left, so the named family's default answers.
  CHECK_THAT(r.out, Catch::Matches("(.|\n)*1x4096x4096 f32 +yes +family default +- +naive +20\\.0 +40\\.0 +10\\.0 +- +"
                                   "0\\.500 +0\\.250(.|\n)*"));
  CHECK_THAT(r.out, Catch::Matches("(.|\n)*1500x1024x1024 f32 +no +nearest +2048x1024x1024 +naive +- +70\\.0 +140\\.0 "
                                   "+- +- +2\\.000(.|\n)*"));
  // geomean tuned/answer: (0.8 * 0.9 * 0.5)^(1/3) = 0.711; pick/answer over four: (1.6*1.8*0.25*2)^(1/4) = 1.095,
  // over the three nearest answers (1.6*1.8*2)^(1/3) = 1.793.
  CHECK_THAT(r.out, Catch::Contains("geomean tuned/answer over 3 held-out shapes: 0.711 (min 0.500)"));
  CHECK_THAT(r.out, Catch::Contains("geomean pick/answer over 4: 1.095 (min 0.250); answers more than 2 % slower than "
                                    "the pick: 1"));
  CHECK_THAT(r.out, Catch::Contains("family default     1: pick/answer 0.250, answer/default 4.000 (worst 4.000), "
                                    "tuned/answer 0.500 (min 0.500)"));
  CHECK_THAT(r.out, Catch::Contains("nearest            3: pick/answer 1.793, answer/default 0.558 (worst 0.625), "
                                    "tuned/answer 0.849 (min 0.800)"));
  // Every run it made was one the table of times expected, each once.
  std::string asked = test::read_file(times_file.string() + ".asked");
  CHECK(std::count(asked.begin(), asked.end(), '\n') == long(times.size()));

  // A held-out entry whose own config this GPU cannot run (a table tuned on another device, whose
  // cuBLASLt tiles the library here lacks): "cannot" in the row, left out of tuned/answer.
  times["naive|" + config(1024, 1024, 1024) + "|1024x1024x1024"] = "cannot";
  test::write_file(times_file, times.dump());
  r = test::run_command(cmd + " --limit 3");
  INFO(r.out);
  CHECK(r.exit_code == 1);  // the family default's row, as above
  CHECK_THAT(r.out, Catch::Matches("(.|\n)*1024x1024x1024 f32 +yes +nearest +2048x1024x1024 +naive +cannot +62\\.5 +"
                                   "100\\.0 +- +- +1\\.600(.|\n)*"));
  CHECK_THAT(r.out, Catch::Contains("geomean tuned/answer over 2 held-out shapes: 0.671 (min 0.500)"));
  CHECK_THAT(r.out, Catch::Contains("held-out entries whose own config this GPU's space lacks (not in tuned/answer): 1"));

  // With transfers backed (lookup's default) and no evidence, every answer is a default: the
  // named family's, slower than cuBLASLt's pick here (exit 1).
  Space s15 = naive.space(f32(1500, 1024, 1024), arch_limits("sm_90"));
  times["naive|" + s15.name(s15.default_config()) + "|1500x1024x1024"] = 150.0;
  test::write_file(times_file, times.dump());
  r = test::run_command(fmt::format("python3 '{}' --gemmtune '{}' --table '{}' --device '{}' --default-family naive "
                                    "--limit 0 --shapes 1500x1024x1024",
                                    (test::source_dir() / "tools" / "bench_lookup.py").string(), fake.string(),
                                    table.string(), kDevice));
  INFO(r.out);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Matches("(.|\n)*1500x1024x1024 f32 +no +family default +- +naive +- +150\\.0 +140\\.0 +- +- +"
                                   "0\\.933(.|\n)*"));
  // A problem that cannot be timed fails the run (exit 1) and is said; the others are still reported.
  r = test::run_command(cmd + " --limit 0 --shapes 1500x1024x1024,700x1024x1024");
  INFO(r.out);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Matches("(.|\n)*700x1024x1024 f32 +failed: gemmtune run --family cublaslt(.|\n)*") &&
                        Catch::Contains("no time for cublaslt||700x1024x1024"));
  CHECK_THAT(r.out, Catch::Contains("1 of 2 problems failed"));
  // Bad input: exit 2.
  r = test::run_command(cmd + " --shapes 10x10");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.out, Catch::Contains("--shapes: '10x10' is not MxNxK"));
  LookupTable one;
  one.entries = {t.entries[0]};
  one.save(d.path / "one.json", TableFormat::json);
  r = test::run_command(fmt::format("python3 '{}' --gemmtune '{}' --table '{}'",
                                    (test::source_dir() / "tools" / "bench_lookup.py").string(), fake.string(),
                                    (d.path / "one.json").string()));
  CHECK(r.exit_code == 2);
}
