// A compile that takes longer than --compile-timeout: the candidate is stored as `timeout` with
// the limit named, it never wins, and the tune goes on with the next one. On the CPU: real NVRTC
// compiles of the naive family against a limit no compile can meet, a stand-in GPU measuring.
#include "build/compiler.hpp"
#include "build/plugin.hpp"
#include "measure/provenance.hpp"
#include "test_util.hpp"
#include "tune/tuner.hpp"

#include <catch2/catch.hpp>

using namespace gt;
using namespace gt::search;


TEST_CASE("a compile past --compile-timeout is stored as timeout and never wins", "[tune][reliability]") {
  test::TempDir tmp;
  const PluginRegistry& plugins = test::plugins();
  const Family& naive = plugins.get("naive");
  CubinCache cache(tmp.path / "cache");
  Compiler compiler(&cache);
  CompilePool pool(compiler, 1);
  Store store = Store::open(tmp.path / "r.db");
  test::StandInGpu gpu;
  const Problem p = Problem::make(256, 256, 256, DType::f32, DType::f32, Layout::nn);
  SpaceSource spaces = [&](const std::string& fam, const Problem& q) {
    return plugins.get(fam).space(q, gpu.device().limits);
  };
  ProvenanceSource prov = [&](const std::string& fam, bool quick) {
    return Provenance::collect(gpu.device(), plugins.get(fam), "normal", 1, quick);
  };
  TuneOptions o;
  o.strategy = "exhaustive";
  o.budget.max_evaluations = 3;
  o.settle_s = 0;
  o.compile_timeout_s = 1e-6;  // no NVRTC compile finishes in a microsecond
  o.tune_id = "timeout-test";
  Tuner t(&plugins, gpu, &store, &pool, spaces, prov, o);
  Space s = naive.space(p, gpu.device().limits);
  std::vector<Config> three;
  for (const char* text : {"map=coalesced,bx=32,by=8", "map=coalesced,bx=32,by=4", "map=coalesced,bx=64,by=4"}) {
    std::string err;
    auto c = s.parse(text, &err);
    REQUIRE(c);
    three.push_back(*c);
  }
  ProblemOutcome po = t.tune(p, {"naive"}, {{"naive", three}});
  REQUIRE(po.families.size() == 1);
  const FamilyOutcome& f = po.families[0];
  CHECK(f.evaluated == 3);
  // The first candidate's compile cannot have finished when its microsecond was up.
  REQUIRE(f.by_status.count(Status::timeout));
  CHECK(f.by_status.at(Status::timeout) >= 1);
  bool named = false;
  for (auto& r : store.rows())
    if (r.m.status == Status::timeout) {
      named = named || r.m.message.find("compilation took longer than 1e-06 s") != std::string::npos;
      if (f.best) CHECK(r.config_name != f.best_name);  // a timed-out candidate never wins
    }
  CHECK(named);
  // Only candidates whose compile was ready were measured.
  CHECK(uint64_t(gpu.measured) <= 3 - f.by_status.at(Status::timeout) + 1);
}
