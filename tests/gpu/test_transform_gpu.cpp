// Transforms on a GPU: every family under pad and swap verified against float64 at misaligned
// shapes, and the runtime running a padded entry on the caller's misaligned buffers ([gpu]).
#include <nlohmann/json.hpp>

#include "measure/bench.hpp"
#include "build/compiler.hpp"
#include "base/errors.hpp"
#include "tune/forms.hpp"
#include "tune/tuner.hpp"
#include "gemmtune_runtime.h"
#include "gemmtune_runtime.hpp"
#include "build/plugin.hpp"
#include "store/store.hpp"
#include "table/table.hpp"
#include "test_util.hpp"
#include "transform/transform.hpp"
#include "unit/transform_fixtures.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

using namespace gt;
namespace fs = std::filesystem;
namespace {
// A config of the family for the transformed problem: its default, else its first suggestion,
// else the first valid point of a sample of its space (nullopt: the family runs no config of it).
std::optional<Config> some_config(const Family& fam, const Problem& q, const gt_device& lim) {
  Space s;
  try {
    s = fam.space(q, lim);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (s.raw_size() == 0) return std::nullopt;
  if (s.valid(s.default_config())) return s.default_config();
  for (const Config& c : fam.suggest(q, lim, 4, s.dims()))
    if (s.valid(c)) return c;
  auto sample = test::every_kth_valid(s, std::max<uint64_t>(1, s.raw_size() / 4000), 0);
  if (!sample.empty()) return sample.front();
  return std::nullopt;
}
}  // namespace

TEST_CASE("transforms on a GPU: every family under pad and swap verifies against float64 at misaligned shapes",
          "[gpu][transform]") {
  GT_REQUIRE_GPU();
  const DeviceInfo dev = device_info(0);
  struct Case {
    Problem p;
    Transform t;
  };
  std::vector<Case> cases;
  for (auto [in, out] : {std::pair{DType::f16, DType::f16}, {DType::bf16, DType::f32}, {DType::f32, DType::f32}})
    for (Layout lay : {Layout::nn, Layout::nt, Layout::tn, Layout::tt}) {
      cases.push_back({Problem::make(257, 131, 77, in, out, lay), Transform::pad});    // every ld and K misaligned
      cases.push_back({Problem::make(1, 1001, 515, in, out, lay), Transform::pad});    // a decode row: B copied, C relabelled
      cases.push_back({Problem::make(515, 1, 257, in, out, lay), Transform::swap});    // a column GEMV: the swapped row
      cases.push_back({Problem::make(1, 333, 129, in, out, lay), Transform::swap});    // a row: the swapped column
      cases.push_back({Problem::make(301, 16, 129, in, out, lay), Transform::pad_swap});  // C^T written back transposed
    }
  std::map<std::string, int> verified, planned;
  for (const Family& fam : test::plugins().families()) {
    for (const Case& k : cases) {
      auto plan = plan_transform(k.p, k.t);
      if (!plan) continue;
      auto c = some_config(fam, plan->inner, dev.limits);
      if (!c) continue;  // the family runs nothing of this transformed problem (a dtype, a layout)
      ++planned[fam.name()];
      Measurement m = test::gpu_check(fam, k.p, *c, false, k.t);
      INFO(fam.name() << " " << to_string(k.t) << " " << k.p.key() << ": " << plan->describe() << "\n"
                      << to_string(m.status) << " " << m.message);
      CHECK(m.status == Status::ok);
      CHECK(m.err_rel_fro <= tolerance_for(k.p).rel_fro);
      if (m.status == Status::ok) ++verified[fam.name()];
    }
  }
  for (const Family& fam : test::plugins().families()) {
    INFO(fam.name() << ": " << verified[fam.name()] << " of " << planned[fam.name()] << " transformed cases verified");
    CHECK(verified[fam.name()] > 0);  // every family served some misaligned problem through a transform
  }
}

TEST_CASE("transforms on a GPU: the runtime runs a padded entry on the caller's misaligned buffers", "[gpu][transform][runtime]") {
  GT_REQUIRE_GPU();
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  const DeviceInfo dev = device_info(0);
  const Problem p = Problem::make(101, 101, 101, DType::f32, DType::f32, Layout::nn);
  test::TempDir d, cache;
  LookupTable t;
  t.entries = {transform_test::padded_naive_entry(p, dev.name, dev.limits)};
  t.save(d.path / "table.json", TableFormat::json);
  gemmtune::Options o;
  o.plugin_dirs = {test::naive_only_dir().string()};
  o.cache_dir = cache.path.string();
  o.device = 0;
  gemmtune::Runtime rt((d.path / "table.json").string(), o);
  DeviceBuffer a(p.bytes_a()), b(p.bytes_b()), c(p.bytes_c()), ref(size_t(p.m * p.n) * sizeof(double)), scratch(64);
  cudaStream_t st = nullptr;
  REQUIRE(cudaStreamCreate(&st) == cudaSuccess);
  fill_random(a.get(), p.in, size_t(p.m * p.lda), 5, Distribution::normal, st);
  fill_random(b.get(), p.in, size_t(p.k * p.ldb), 6, Distribution::normal, st);
  reference_gemm(p, Operands{a.get(), b.get(), nullptr, {}}, static_cast<double*>(ref.get()), st);
  for (int call = 0; call < 3; ++call) {  // the buffers of the copies are the runtime's, reused
    fill_nan(c.get(), p.out, size_t(p.m * p.ldc), st);
    gemmtune::GemmArgs g;
    g.m = p.m, g.n = p.n, g.k = p.k;
    g.in = g.out = GEMMTUNE_F32;
    g.layout = GEMMTUNE_NN;
    g.a = a.get(), g.b = b.get(), g.c = c.get();
    g.lda = p.lda, g.ldb = p.ldb, g.ldc = p.ldc;
    rt.gemm(g, st);
    ErrorSums err = compare_to_reference(p, c.get(), static_cast<const double*>(ref.get()), scratch.get(), st);
    CHECK(err.nonfinite == 0);
    CHECK(std::sqrt(err.sum_sq_diff / err.sum_sq_ref) <= tolerance_for(p).rel_fro);
    CHECK(rt.prepare(g).transform == "pad");
  }
  CHECK(rt.prepared() == 1);
  cudaStreamDestroy(st);
}

