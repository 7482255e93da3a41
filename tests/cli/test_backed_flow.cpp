// The flows of issue 54 through the command line, without a GPU: cuBLASLt's spaces are the
// stand-in's, recorded with made-up times, and the commands replay them.
//  - record, then tune: the runtime records the problems it answered without an exact entry (a
//    padded leading dimension among them); `tune --config` of that file, `merge` with the old
//    store and `export` make a table that holds each of them exactly.
//  - validate, then export: each entry's neighbours' answers timed at its shape against cuBLASLt's
//    pick; the table's evidence is the neighbourhoods where they held, and lookup answers a shape
//    the table does not hold from an entry only inside them, on that GPU model.
#include "gemmtune_runtime.hpp"
#include "replay/replay.hpp"
#include "table/table.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <functional>

using namespace gt;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const char* kH200 = "NVIDIA H200";

const Family& standin_lt() {
  static PluginRegistry reg = PluginRegistry::load({test::plugin_dir() / "cublaslt" / "standin"});
  return reg.get("cublaslt");
}

Problem bf16(int64_t m, int64_t n, int64_t k) { return Problem::make(m, n, k, DType::bf16, DType::bf16, Layout::nn); }

// A recording of the stand-in cuBLASLt's whole space at each problem on an H200, each config's
// time from `us(problem, config name, is the pick)`.
fs::path record(const fs::path& file, const std::vector<Problem>& problems,
                const std::function<double(const Problem&, const std::string&, bool)>& us) {
  search::Recording rec;
  const Family& f = standin_lt();
  for (const Problem& p : problems) {
    Space s = f.space(p, arch_limits("sm_90"));
    const Config pick = s.default_config();
    auto& rs = rec.space_for({kH200, "GPU-synthetic", "sm_90"}, p, "cublaslt", f.version(), s.params());
    for (uint64_t i = 0; i < s.raw_size(); ++i) {
      Config c = s.at(i);
      if (s.valid(c)) rs.add(c, search::Outcome{Status::ok, us(p, s.name(c), c == pick), "synthetic", 0});
    }
  }
  rec.save(file);
  return file;
}

std::string cli(const fs::path& db) {
  return fmt::format("{} --quiet --plugin-dir {} --db {}", test::gemmtune_binary().string(),
                     test::shell_quote(test::standin_dir()), test::shell_quote(db));
}

test::CommandResult ok(const std::string& cmd) {
  auto r = test::run_command(cmd);
  INFO(cmd << "\n" << r.out);
  REQUIRE(r.exit_code == 0);
  return r;
}

gemmtune::GemmArgs args_of(const Problem& p) {
  gemmtune::GemmArgs g;
  g.m = p.m;
  g.n = p.n;
  g.k = p.k;
  g.in = g.out = GEMMTUNE_BF16;
  g.layout = GEMMTUNE_NN;
  g.lda = p.lda;
  g.ldb = p.ldb;
  g.ldc = p.ldc;
  g.a = g.b = g.c = reinterpret_cast<void*>(uintptr_t(1) << 20);
  return g;
}

gemmtune::Options dry_run(const fs::path& cache) {
  gemmtune::Options o;
  o.plugin_dirs = {test::standin_dir().string()};
  o.cache_dir = cache.string();
  o.dry_run = true;
  o.device_name = kH200;
  return o;
}

// Configs of the stand-in's space valid at every one of `problems` (by name), other than its picks.
std::vector<std::string> common_configs(const std::vector<Problem>& problems, size_t n) {
  const Family& f = standin_lt();
  std::vector<Space> spaces;
  for (auto& p : problems) spaces.push_back(f.space(p, arch_limits("sm_90")));
  std::vector<std::string> out;
  for (uint64_t i = 0; i < spaces[0].raw_size() && out.size() < n; ++i) {
    const Config c = spaces[0].at(i);
    if (!spaces[0].valid(c)) continue;
    const std::string name = spaces[0].name(c);
    bool everywhere = true;
    for (auto& s : spaces) {
      auto parsed = s.parse(name, nullptr);
      everywhere = everywhere && parsed && s.valid(*parsed) && *parsed != s.default_config();
    }
    if (everywhere) out.push_back(name);
  }
  REQUIRE(out.size() == n);
  return out;
}

}  // namespace

TEST_CASE("record, then tune: the runtime's record of untuned problems goes through tune --config, merge and "
          "export to exact entries",
          "[backed][cli][replay]") {
  test::TempDir d, cache;
  const Problem old_p = bf16(256, 1024, 1024), tight = bf16(300, 1024, 1024);
  Problem padded = bf16(256, 1024, 1024);
  padded.lda = 1028;  // rows of 2056 bytes: alignment 8, another key than the tight 256x1024x1024
  padded.align = alignment_of(padded);
  REQUIRE(padded.align == 8);
  const fs::path rec = record(d.path / "rec.json", {old_p, tight, padded},
                              [](const Problem& p, const std::string& name, bool pick) {
                                return double(p.m) / 10 * (pick ? 1.0 : 0.9 + double(name.size() % 7) / 50);
                              });
  // The old store and its table: the one problem tuned before.
  ok(cli(d.path / "old.db") + " tune --replay " + rec.string() + " --shape 256x1024x1024 --dtype bf16 --family "
     "cublaslt --budget 20");
  ok(cli(d.path / "old.db") + " export --include-replay -o " + (d.path / "t0.json").string());
  // A program's problems on that table: recorded where no exact entry answers.
  const fs::path job = d.path / "untuned.toml";
  {
    gemmtune::Options o = dry_run(cache.path);
    o.record_untuned = job.string();
    gemmtune::Runtime rt((d.path / "t0.json").string(), o);
    CHECK(rt.prepare(args_of(old_p)).match == GEMMTUNE_MATCH_EXACT);
    CHECK(rt.prepare(args_of(tight)).match != GEMMTUNE_MATCH_EXACT);
    CHECK(rt.prepare(args_of(padded)).match != GEMMTUNE_MATCH_EXACT);
  }
  const std::string text = test::read_file(job);
  INFO(text);
  CHECK_THAT(text, Catch::Contains("# 300x1024x1024 bf16>bf16 nn a16 lda=1024") &&
                       Catch::Contains("# 256x1024x1024 bf16>bf16 nn a8 lda=1028 ldb=1024 ldc=1024") &&
                       !Catch::Contains("a16 lda=1024 ldb=1024 ldc=1024\nshapes = [\"256x1024x1024\"]"));
  // Tuned as it is, merged with the old store, exported: both exactly.
  ok(cli(d.path / "new.db") + " tune --replay " + rec.string() + " --config " + job.string() +
     " --family cublaslt --budget 20");
  ok(fmt::format("{} merge {} {} -o {}", test::gemmtune_binary().string(), (d.path / "old.db").string(),
                 (d.path / "new.db").string(), (d.path / "merged.db").string()));
  ok(cli(d.path / "merged.db") + " export --include-replay -o " + (d.path / "t1.json").string());
  LookupTable t1 = LookupTable::load(d.path / "t1.json");
  CHECK(t1.entries.size() == 3);
  gemmtune::Runtime rt((d.path / "t1.json").string(), dry_run(cache.path));
  for (const Problem& p : {old_p, tight, padded}) {
    INFO(p.key());
    const gemmtune::Choice& c = rt.prepare(args_of(p));
    CHECK(c.match == GEMMTUNE_MATCH_EXACT);
    CHECK(c.problem == p.key());
  }
}

TEST_CASE("validate, then export: evidence where the neighbours' answers held, and lookup answers from it only "
          "there, on that GPU model",
          "[backed][cli][replay]") {
  test::TempDir d;
  const Problem s1 = bf16(256, 1024, 1024), s2 = bf16(512, 1024, 1024), s3 = bf16(1024, 1024, 1024);
  const std::vector<std::string> w = common_configs({s1, s2, s3, bf16(384, 1024, 1024), bf16(900, 1024, 1024)}, 3);
  // Each shape's winner (0.8 of the pick there); at the neighbours: w1 at s2 0.9 and w2 at s1 0.95,
  // w2 at s3 0.97 (held); w3 at s2 1.2, w1 at s3 and w3 at s1 1.1 (lost).
  auto factor = [&](const Problem& p, const std::string& name, bool pick) {
    const int at = p.m == 256 ? 0 : p.m == 512 ? 1 : 2;
    if (pick) return 1.0;
    if (name == w[size_t(at)]) return 0.8;
    if (name == w[0] && at == 1) return 0.9;
    if (name == w[1] && at == 0) return 0.95;
    if (name == w[1] && at == 2) return 0.97;
    if (name == w[2] && at == 1) return 1.2;
    return 1.1;
  };
  const fs::path rec = record(d.path / "rec.json", {s1, s2, s3}, [&](const Problem& p, const std::string& n, bool pick) {
    return double(p.m) / 10 * factor(p, n, pick);
  });
  std::string job = "[tune]\nfamilies = [\"cublaslt\"]\n";
  for (size_t i = 0; i < 3; ++i)
    job += fmt::format("[[problems]]\nshapes = [\"{}x1024x1024\"]\ndtypes = [\"bf16\"]\nconfigs = {{ cublaslt = "
                       "[\"{}\"] }}\n",
                       256 << i, w[i]);
  test::write_file(d.path / "job.toml", job);
  const std::string gt = cli(d.path / "s.db");
  ok(gt + " tune --replay " + rec.string() + " --config " + (d.path / "job.toml").string());
  auto v = ok(gt + " validate --replay " + rec.string() + " --include-replay");
  CHECK_THAT(v.out, Catch::Contains("3 entries of NVIDIA H200") && Catch::Contains("6 answers of their neighbours"));
  CHECK_THAT(v.out, Catch::Matches("(.|\n)*256x1024x1024 bf16>bf16 nn a16 +512x1024x1024 +nearest +0\\.693 +24\\.32 "
                                   "+25\\.60 +0\\.950 held(.|\n)*"));
  CHECK_THAT(v.out, Catch::Matches("(.|\n)*512x1024x1024 bf16>bf16 nn a16 +1024x1024x1024 +nearest +0\\.693 +61\\.44 "
                                   "+51\\.20 +1\\.200 LOST(.|\n)*"));
  // The store's table with its evidence: 256's and 512's nearest answers, 1024's none.
  auto ex = ok(gt + " --json export --include-replay -o " + (d.path / "t.json").string());
  CHECK(json::parse(ex.out)["evidence"] == 2);
  LookupTable t = LookupTable::load(d.path / "t.json");
  REQUIRE(t.evidence.size() == 2);
  CHECK(t.evidence[0].from.m == 256);
  CHECK(t.evidence[0].radius == Approx(std::log(2.0)));
  CHECK(t.evidence[0].neighbours == 1);
  CHECK(t.evidence[1].from.m == 512);
  CHECK(t.evidence[1].neighbours == 2);
  CHECK(t.evidence[1].worst == Approx(0.97));
  auto lookup = [&](const std::string& shape, const std::string& extra = " --device 'NVIDIA H200'") {
    auto r = ok(fmt::format("{} --plugin-dir {} --json lookup --table {} --shape {} --dtype bf16{}",
                            test::gemmtune_binary().string(), test::shell_quote(test::standin_dir()),
                            (d.path / "t.json").string(), shape, extra));
    return json::parse(r.out);
  };
  json j = lookup("384x1024x1024");  // nearest 512 (0.288), backed up to 0.693
  INFO(j.dump());
  CHECK(j["rule"] == "nearest");
  CHECK(j["backing"] == "evidence");
  CHECK(j["entry"]["m"] == 512);
  j = lookup("900x1024x1024");  // nearest 1024 (0.129) is not backed; 512 (0.564) is
  CHECK(j["backing"] == "evidence");
  CHECK(j["entry"]["m"] == 512);
  CHECK_THAT(j["passed_over"].dump(), Catch::Contains("1024x1024x1024") && Catch::Contains("not backed"));
  j = lookup("1536x1024x1024");  // only 1024 within reach of 512's evidence? no: 1.099 > 0.693
  CHECK(j["rule"] == "library default");
  CHECK(j["backing"] == "none");
  j = lookup("384x1024x1024", " --device 'NVIDIA H100 80GB HBM3'");  // another model: the default
  CHECK(j["rule"] == "library default");
  j = lookup("384x1024x1024", " --device 'NVIDIA H100 80GB HBM3' --transfers any");
  CHECK(j["rule"] == "nearest");
  CHECK(j["backing"] == "unbacked");
  // validate -o writes the table it validated with its evidence; bad input is exit 2.
  ok(gt + " validate --replay " + rec.string() + " --table " + (d.path / "t.json").string() + " -o " +
     (d.path / "t2.toml").string());
  const LookupTable t2 = LookupTable::load(d.path / "t2.toml");
  REQUIRE(t2.evidence.size() == t.evidence.size());
  for (size_t i = 0; i < t.evidence.size(); ++i) {
    CHECK(t2.evidence[i].from == t.evidence[i].from);
    CHECK(t2.evidence[i].radius == t.evidence[i].radius);
    CHECK(t2.evidence[i].neighbours == t.evidence[i].neighbours);
  }
  for (auto [args, says] : std::vector<std::pair<std::string, std::string>>{
           {" --tolerance -1", "--tolerance"},
           {" --neighbours 0", "--neighbours"},
           {" --table " + (d.path / "t.json").string() + " -o " + (d.path / "t2.csv").string(), "name the table"}}) {
    auto r = test::run_command(gt + " validate --replay " + rec.string() + args);
    INFO(args << ": " << r.out);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.out, Catch::Contains(says));
  }
}
