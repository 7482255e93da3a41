// Plugin ABI v2's launch requests on the CPU, through the `requests` test family (a TMA
// tensor map of A, a 2x1 cluster, a workspace zeroed once, launch scalars, the sm_90a target):
// what its build hands core, what core checks and refuses, how a persistent grid is sized,
// how each operand's tensor map is shaped, and the exact build fingerprint: a change of host
// code that changes what is built makes the stored measurements stale, with no version bump.
// On a GPU, the family's kernel traps unless each request was provided ([gpu][conformance]).
#include "compiler.hpp"
#include "device.hpp"
#include "evaluate.hpp"
#include "plugin.hpp"
#include "provenance.hpp"
#include "store.hpp"
#include "tensor_map.hpp"
#include "test_util.hpp"
#include "tuner.hpp"

#include <catch2/catch.hpp>
#include <cuda.h>  // the tensor map enums

#include <cstdlib>
#include <set>

using namespace gt;
using namespace gt::search;

namespace {

const PluginRegistry& registry() {
  static const PluginRegistry reg = PluginRegistry::load({test::test_plugin_dir() / "requests"});
  return reg;
}
const Family& requests() { return registry().get("requests"); }

const Problem kProblem = Problem::make(512, 1000, 384, DType::f32, DType::f32, Layout::nn);

KernelSpec build_of(const Problem& p, const gt_device& d) {
  Space s = requests().space(p, d);
  Refused why;
  auto ks = requests().build(p, s.default_config(), d, &why);
  INFO(why.why);
  REQUIRE(ks);
  return *ks;
}

// Sets an environment variable for the life of the object.
struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }
  const char* name_;
};

}  // namespace

TEST_CASE("requests: a build hands core every v2 request", "[requests]") {
  const gt_device d = arch_limits("sm_90");
  KernelSpec ks = build_of(kProblem, d);
  CHECK(ks.clustered());
  CHECK(ks.cluster[0] == 2);
  CHECK(ks.grid[0] % 2 == 0);  // a whole number of clusters
  CHECK(ks.arch_specific);
  CHECK(ks.compile_arch("sm_90") == "sm_90a");
  CHECK(ks.compile_arch("sm_90a") == "sm_90a");
  CHECK(ks.workspace_bytes == 256);
  CHECK(ks.workspace_zero == GT_WORKSPACE_ZERO_ONCE);
  CHECK(ks.scalars[0] == 12345);
  REQUIRE(ks.tensor_maps.size() == 1);
  CHECK(ks.tensor_maps[0].operand == GT_OPERAND_A);
  CHECK(ks.tensor_maps[0].box[0] == 8);
  CHECK(ks.tensor_maps[0].box[1] == 8);
  CHECK_THAT(ks.describe_requests(), Catch::Contains("cluster 2x1x1") && Catch::Contains("tensor map A box 8x8") &&
                                         Catch::Contains("workspace") && Catch::Contains("zeroed once") &&
                                         Catch::Contains("sm_XYa"));
  // It compiles for the architecture-specific target it asks for; sm_80 is refused by code.
  test::CompileSample sample(requests());
  REQUIRE(sample.add(kProblem, requests().space(kProblem, d).default_config(), "sm_90").empty());
  for (auto& j : sample.results()) {
    INFO(j.result.log);
    CHECK(j.result.ok);
    CHECK_THAT(j.result.log, !Catch::Contains("sm_90 ") || Catch::Contains("sm_90a"));
  }
  const gt_device ampere = arch_limits("sm_80");
  auto why = requests().refusal(kProblem, requests().space(kProblem, ampere).default_config(), ampere);
  REQUIRE(why);
  CHECK(why->code == GT_REFUSAL_ARCH);
}

TEST_CASE("requests: core refuses what TMA, clusters and the device cannot give, with a code", "[requests]") {
  const gt_device d = arch_limits("sm_90");
  const KernelSpec good = build_of(kProblem, d);
  REQUIRE_FALSE(check_requests(good, kProblem, d));
  auto refused = [&](auto change, const Problem& p = kProblem, const gt_device& dev = arch_limits("sm_90")) {
    KernelSpec ks = good;
    change(ks);
    return check_requests(ks, p, dev);
  };
  // The family's own mistakes are CONFIG.
  auto box = refused([](KernelSpec& k) { k.tensor_maps[0].box[0] = 3; });  // 12-byte rows
  REQUIRE(box);
  CHECK(box->code == GT_REFUSAL_CONFIG);
  CHECK_THAT(box->why, Catch::Contains("multiple of 16"));
  auto span = refused([](KernelSpec& k) {
    k.tensor_maps[0].box[0] = 64;  // 256 bytes of f32 under a 128-byte swizzle
    k.tensor_maps[0].swizzle = 3;
  });
  REQUIRE(span);
  CHECK(span->code == GT_REFUSAL_CONFIG);
  CHECK(refused([](KernelSpec& k) { k.tensor_maps[0].box[1] = 300; })->code == GT_REFUSAL_CONFIG);
  CHECK(refused([](KernelSpec& k) { k.tensor_maps[0].rank = 3; })->code == GT_REFUSAL_CONFIG);
  CHECK(refused([](KernelSpec& k) { k.tensor_maps[0].operand = 7; })->code == GT_REFUSAL_CONFIG);
  CHECK(refused([](KernelSpec& k) { k.grid[0] += 1; })->code == GT_REFUSAL_CONFIG);  // not whole clusters
  CHECK(refused([](KernelSpec& k) { k.cluster[0] = 16, k.grid[0] = 32; })->code == GT_REFUSAL_CONFIG);
  CHECK(refused([](KernelSpec& k) { k.grid_per_sm = 1; })->code == GT_REFUSAL_CONFIG);  // a 2-D persistent grid
  // What the problem cannot give is SHAPE: rows of A 1001 floats apart, a 4-byte alignment.
  Problem odd_ld = Problem::make(512, 1000, 1001, DType::f32, DType::f32, Layout::nn);
  auto ld = refused([](KernelSpec&) {}, odd_ld);
  REQUIRE(ld);
  CHECK(ld->code == GT_REFUSAL_SHAPE);
  CHECK_THAT(ld->why, Catch::Contains("lda = 1001"));
  Problem misaligned = kProblem;
  misaligned.align = 4;
  CHECK(refused([](KernelSpec&) {}, misaligned)->code == GT_REFUSAL_SHAPE);
  // What the device lacks: clusters before Hopper (ARCH), shared memory past its limit.
  CHECK(refused([](KernelSpec&) {}, kProblem, arch_limits("sm_80"))->code == GT_REFUSAL_ARCH);
  CHECK(refused([](KernelSpec& k) { k.dynamic_smem = 300000; })->code == GT_REFUSAL_RESOURCES);
  // And the family's build refuses the odd leading dimension itself (it agrees with core).
  Space s = requests().space(odd_ld, d);
  auto own = requests().refusal(odd_ld, s.default_config(), d);
  REQUIRE(own);
  CHECK(own->code == GT_REFUSAL_SHAPE);
}

TEST_CASE("requests: a persistent grid is sized from the SM count in whole clusters", "[requests]") {
  KernelSpec ks;
  ks.grid[0] = 10000;
  ks.cluster[0] = 2;
  CHECK(ks.launch_grid(132)[0] == 10000);  // not persistent: as asked
  ks.grid_per_sm = 1;
  CHECK(ks.launch_grid(132)[0] == 132);
  CHECK(ks.launch_grid(133)[0] == 132);  // rounded down to whole clusters
  CHECK(ks.launch_grid(1)[0] == 2);      // at least one cluster
  // Clusters that fit at once (cudaOccupancyMaxActiveClusters x the cluster's size) cap it too:
  // where only 32 clusters of 4 fit at once on 132 SMs, 128 CTAs, not 33 clusters.
  ks.cluster[0] = 4;
  CHECK(ks.launch_grid(132)[0] == 132);
  CHECK(ks.launch_grid(132, 32 * 4)[0] == 128);
  CHECK(ks.launch_grid(132, 1000)[0] == 132);  // the SMs still cap it
  ks.cluster[0] = 2;
  ks.grid_per_sm = 2;
  CHECK(ks.launch_grid(114)[0] == 228);
  ks.grid[0] = 100;
  CHECK(ks.launch_grid(132)[0] == 100);  // fewer units than SMs: one CTA each
}

TEST_CASE("requests: each operand's tensor map has the dimensions and stride of the operand as stored",
          "[requests]") {
  gt_tensor_map_request r{};
  r.rank = 2;
  r.box[0] = 8;
  r.box[1] = 8;
  for (auto lay : {Layout::nn, Layout::nt, Layout::tn, Layout::tt}) {
    Problem p = Problem::make(96, 200, 40, DType::bf16, DType::f32, lay);
    const bool at = p.a_trans(), bt = p.b_trans();
    struct Want {
      gt_operand op;
      uint64_t cols, rows, stride;
      int bytes;
    };
    for (Want w : {Want{GT_OPERAND_A, uint64_t(at ? 96 : 40), uint64_t(at ? 40 : 96), uint64_t(p.lda * 2), 2},
                   Want{GT_OPERAND_B, uint64_t(bt ? 40 : 200), uint64_t(bt ? 200 : 40), uint64_t(p.ldb * 2), 2},
                   Want{GT_OPERAND_C, 200, 96, uint64_t(p.ldc * 4), 4}}) {
      r.operand = w.op;
      Refused why;
      auto s = tensor_map_shape(p, r, &why);
      INFO(p.key() << " " << operand_name(w.op) << ": " << why.why);
      REQUIRE(s);
      CHECK(s->dims[0] == w.cols);
      CHECK(s->dims[1] == w.rows);
      CHECK(s->row_stride_bytes == w.stride);
      CHECK(s->element_bytes == w.bytes);
    }
  }
}

TEST_CASE("requests: an FP8 operand's tensor map moves bytes, each operand of its own type", "[requests][fp8]") {
  gt_tensor_map_request r{};
  r.rank = 2;
  r.box[0] = 128;
  r.box[1] = 64;
  r.swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
  Problem p = Problem::make(256, 512, 1024, DType::e4m3, DType::bf16, Layout::nt, DType::e5m2, ScaleMode::row);
  for (gt_operand op : {GT_OPERAND_A, GT_OPERAND_B}) {
    r.operand = op;
    Refused why;
    auto s = tensor_map_shape(p, r, &why);
    INFO(operand_name(op) << ": " << why.why);
    REQUIRE(s);
    CHECK(s->data_type == CU_TENSOR_MAP_DATA_TYPE_UINT8);
    CHECK(s->element_bytes == 1);
    CHECK(s->dims[0] == 1024);  // K-major: a row is K bytes
    CHECK(s->row_stride_bytes == 1024);
  }
  r.operand = GT_OPERAND_C;
  r.box[0] = 64;
  auto c = tensor_map_shape(p, r, nullptr);
  REQUIRE(c);
  CHECK(c->data_type == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
}

TEST_CASE("requests: the build hash covers everything built and nothing else", "[requests][store]") {
  const KernelSpec base = build_of(kProblem, arch_limits("sm_90"));
  const uint64_t h = build_hash(base);
  CHECK(build_hash(base) == h);
  auto differs = [&](auto change) {
    KernelSpec ks = base;
    change(ks);
    return build_hash(ks) != h;
  };
  CHECK(differs([](KernelSpec& k) { k.options.push_back("-DX=1"); }));
  CHECK(differs([](KernelSpec& k) { k.options.back() += "0"; }));
  CHECK(differs([](KernelSpec& k) { k.kernel_name += "_"; }));
  CHECK(differs([](KernelSpec& k) { k.grid[0] += 2; }));
  CHECK(differs([](KernelSpec& k) { k.block[1] = 1; }));
  CHECK(differs([](KernelSpec& k) { k.dynamic_smem = 4096; }));
  CHECK(differs([](KernelSpec& k) { k.cluster[0] = 1; }));
  CHECK(differs([](KernelSpec& k) { k.grid_per_sm = 1; }));
  CHECK(differs([](KernelSpec& k) { k.arch_specific = false; }));
  CHECK(differs([](KernelSpec& k) { k.workspace_bytes = 512; }));
  CHECK(differs([](KernelSpec& k) { k.workspace_zero = GT_WORKSPACE_ZERO_EACH_CALL; }));
  CHECK(differs([](KernelSpec& k) { k.tensor_maps[0].box[1] = 16; }));
  CHECK(differs([](KernelSpec& k) { k.tensor_maps.clear(); }));
  CHECK(differs([](KernelSpec& k) { k.scalars[3] = 1; }));
  // The family's build hash is exactly that of its build.
  Space s = requests().space(kProblem, arch_limits("sm_90"));
  CHECK(requests().build_hash(kProblem, s.default_config(), arch_limits("sm_90")) == h);
}

TEST_CASE("requests: a change of host code that changes the build makes stored measurements stale",
          "[requests][store][tune]") {
  // The family's host code adds -DHOST_TAG=... when GEMMTUNE_TEST_HOST_TAG is set: the kernel
  // source, the family's version and its source hash stay the same, as with an edit of a
  // plugin's .cpp that changes a define.
  test::TempDir tmp;
  Store store = Store::open(tmp.path / "r.db");
  test::StandInGpu gpu;
  SpaceSource spaces = [&](const std::string& fam, const Problem& q) {
    return registry().get(fam).space(q, gpu.device().limits);
  };
  ProvenanceSource prov = [&](const std::string& fam, bool quick) {
    return Provenance::collect(gpu.device(), registry().get(fam), "normal", 1, quick);
  };
  TuneOptions o;
  o.strategy = "exhaustive";
  o.settle_s = 0;
  o.tune_id = "fingerprint-test";
  auto tune = [&] {
    Tuner t(&registry(), gpu, &store, nullptr, spaces, prov, o);
    ProblemOutcome po = t.tune(kProblem, {"requests"}, {});
    REQUIRE(po.families.size() == 1);
    return po.families[0];
  };
  const uint64_t source_hash = requests().source_hash();
  const FamilyOutcome first = tune();
  const int measured_first = gpu.measured;
  REQUIRE(first.evaluated == 4);
  CHECK(first.reused == 0);
  // The same build again: everything reused, nothing measured.
  const FamilyOutcome again = tune();
  CHECK(again.reused == 4);
  CHECK(again.stale_builds == 0);
  // The host code changes what it builds: every config is stale, counted and measured again.
  ScopedEnv tag("GEMMTUNE_TEST_HOST_TAG", "7");
  CHECK(requests().source_hash() == source_hash);
  const int measured_before = gpu.measured;
  const FamilyOutcome changed = tune();
  CHECK(changed.reused == 0);
  CHECK(changed.stale_builds == 4);
  CHECK(gpu.measured > measured_before);
  CHECK(measured_first > 0);
  // The rows say which build they measured.
  std::set<uint64_t> builds;
  for (auto& r : store.rows()) builds.insert(r.prov.build_hash);
  CHECK(builds.size() == 8);  // 4 configs x 2 builds
  CHECK(builds.count(0) == 0);
}
