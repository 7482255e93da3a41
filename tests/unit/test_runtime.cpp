// The runtime library: choices (exact / nearest / default), one preparation per problem,
// nothing allocated on the hot path, the C API's statuses and messages (CPU, dry run);
// bench_runtime's exit code against its overhead target (dry run); and on a GPU, GEMMs on
// the caller's buffers checked against float64.
#include "base/errors.hpp"
#include "gemmtune_runtime.h"
#include "gemmtune_runtime.hpp"
#include "gpu/gpu_kernels.hpp"
#include "build/plugin.hpp"
#include "table/table.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <new>

// Counting allocations on this thread while asked to: the hot path must not allocate.
// GCC pairs the replaced operator new's malloc with std::allocator's inlined delete and warns
// of a mismatch that is not one (both sides below are malloc/free).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
namespace {
thread_local bool t_count_allocs = false;
thread_local size_t t_allocs = 0;
}  // namespace
void* operator new(std::size_t n) {
  if (t_count_allocs) ++t_allocs;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

using namespace gt;
namespace fs = std::filesystem;

namespace {

const char* kDevice = "NVIDIA Test GPU";

const std::string& config_at(const LookupTable& t, int64_t m, int64_t n, int64_t k) {
  for (auto& e : t.entries)
    if (e.key.m == m && e.key.n == n && e.key.k == k) return e.config;
  FAIL("no entry for " << m << "x" << n << "x" << k);
  throw std::logic_error("unreachable");
}

struct AllocCounter {
  AllocCounter() {
    t_allocs = 0;
    t_count_allocs = true;
  }
  ~AllocCounter() { t_count_allocs = false; }
  size_t count() const { return t_allocs; }
};

TableEntry naive_entry(const std::string& device, int64_t m, int64_t n, int64_t k, DType in,
                       const std::string& assignments) {
  Problem p = Problem::make(m, n, k, in, Problem::default_out(in), Layout::nn);
  const Family& fam = test::plugins().get("naive");
  Space s = fam.space(p, arch_limits("sm_90"));
  std::string err;
  auto c = s.parse(assignments, &err);
  REQUIRE(c);
  TableEntry e;
  e.key = ResultKey::of(device, p);
  e.family = "naive";
  e.family_version = fam.version();
  e.config = s.name(*c);
  e.params = s.assignments(*c);
  e.time_us = 10;
  e.tflops = p.flops() / 10e-6 / 1e12;
  return e;
}

// Tight leading dimensions, pointers as given.
gemmtune::GemmArgs args_for(const Problem& p, const void* a, const void* b, void* c) {
  gemmtune::GemmArgs g;
  g.m = p.m;
  g.n = p.n;
  g.k = p.k;
  g.in = gemmtune_dtype(p.in);
  g.out = gemmtune_dtype(p.out);
  g.layout = gemmtune_layout(p.layout);
  g.a = a;
  g.lda = p.lda;
  g.b = b;
  g.ldb = p.ldb;
  g.c = c;
  g.ldc = p.ldc;
  return g;
}

// 256-byte aligned like cudaMalloc's pointers; never dereferenced in a dry run.
void* fake(uintptr_t i) { return reinterpret_cast<void*>(i << 20); }

gemmtune_gemm_args c_args(const gemmtune::GemmArgs& g) {
  gemmtune_gemm_args a{};
  a.m = g.m;
  a.n = g.n;
  a.k = g.k;
  a.in_dtype = g.in;
  a.out_dtype = g.out;
  a.layout = g.layout;
  a.a = g.a;
  a.lda = g.lda;
  a.b = g.b;
  a.ldb = g.ldb;
  a.c = g.c;
  a.ldc = g.ldc;
  return a;
}

struct TableFile {
  test::TempDir dir;
  fs::path path;
  LookupTable table;
  TableFile(std::vector<TableEntry> entries, const std::string& name = "table.json") {
    table.entries = std::move(entries);
    table.sort();
    path = dir.path / name;
    table.save(path, name.ends_with(".toml") ? TableFormat::toml : TableFormat::json);
  }
};

gemmtune::Options dry_options(const fs::path& cache) {
  gemmtune::Options o;
  o.plugin_dirs = {test::naive_only_dir().string()};
  o.cache_dir = cache.string();
  o.dry_run = true;
  o.arch = "sm_90";
  o.device_name = kDevice;
  o.default_family = "naive";  // named: the default where no entry serves (cuBLASLt is not loaded)
  o.unbacked_transfers = true;  // the runtime's machinery, nearest answers included (test_backed.cpp: the backing)
  return o;
}

}  // namespace

TEST_CASE("runtime (dry run): exact, nearest and default; prepared once; the hot path allocates nothing",
          "[runtime]") {
  TableFile tf({naive_entry(kDevice, 256, 256, 128, DType::f32, "bx=16,by=16"),
                naive_entry(kDevice, 1024, 512, 256, DType::f32, "bx=64,by=4")},
               "table.toml");
  test::TempDir cache;
  gemmtune::Runtime rt(tf.path.string(), dry_options(cache.path));
  CHECK(rt.dry_run());
  CHECK(rt.arch() == "sm_90");

  Problem exact = Problem::make(256, 256, 128, DType::f32, DType::f32, Layout::nn);
  Problem near = Problem::make(300, 200, 100, DType::f32, DType::f32, Layout::nn);
  Problem other = Problem::make(300, 200, 100, DType::f16, DType::f16, Layout::nn);
  auto ge = args_for(exact, fake(1), fake(2), fake(3));
  auto gn = args_for(near, fake(1), fake(2), fake(3));
  auto go = args_for(other, fake(1), fake(2), fake(3));

  const gemmtune::Choice& ce = rt.prepare(ge);
  CHECK(ce.match == GEMMTUNE_MATCH_EXACT);
  CHECK(ce.how == "exact");
  CHECK(ce.family == "naive");
  CHECK(ce.config == config_at(tf.table, 256, 256, 128));
  CHECK(ce.params == "map=coalesced,bx=16,by=16");
  CHECK(ce.problem == "256x256x128 f32>f32 nn a16");
  CHECK(ce.tuned_time_us == 10);
  CHECK(ce.compiled);  // a fresh cache: NVRTC ran
  CHECK_FALSE(ce.launchable);
  rt.gemm(gn, nullptr);
  const gemmtune::Choice& cn = rt.prepare(gn);
  CHECK(cn.match == GEMMTUNE_MATCH_NEAREST);
  CHECK(cn.how == "nearest (from 256x256x128)");
  CHECK(cn.config == ce.config);
  const gemmtune::Choice& co = rt.prepare(go);
  CHECK(co.match == GEMMTUNE_MATCH_DEFAULT);
  CHECK(co.how.rfind("default (", 0) == 0);
  CHECK(rt.prepared() == 3);
  size_t compiles = rt.compiles();
  CHECK(compiles == 2);  // the f32 config (its two problems share one kernel source) and the f16 default

  SECTION("later calls: no compile, no preparation, no allocation") {
    {
      AllocCounter count;
      for (int i = 0; i < 1000; ++i) {
        rt.gemm(ge, nullptr);
        rt.gemm(gn, nullptr);
        rt.gemm(go, nullptr);
      }
      CHECK(count.count() == 0);
    }
    CHECK(rt.compiles() == compiles);
    CHECK(rt.prepared() == 3);
    {
      // The counter does count: a first call for a new problem allocates (the lookup, the
      // prepared entry).
      AllocCounter count;
      rt.gemm(args_for(Problem::make(64, 64, 64, DType::f32, DType::f32, Layout::nn), fake(1), fake(2), fake(3)),
              nullptr);
      CHECK(count.count() > 0);
    }
    // The same through the C API's handle path: the status and the message, no allocation.
    gemmtune_runtime* h = nullptr;
    gemmtune_options o;
    gemmtune_options_init(&o);
    std::string dirs = test::naive_only_dir().string(), cdir = cache.path.string();
    o.plugin_dirs = dirs.c_str();
    o.cache_dir = cdir.c_str();
    o.dry_run = 1;
    o.device_name = kDevice;
    REQUIRE(gemmtune_create(tf.path.c_str(), &o, &h) == GEMMTUNE_SUCCESS);
    gemmtune_gemm_args a = c_args(ge);
    REQUIRE(gemmtune_gemm(h, &a, nullptr) == GEMMTUNE_SUCCESS);
    {
      AllocCounter count;
      for (int i = 0; i < 1000; ++i) REQUIRE(gemmtune_gemm(h, &a, nullptr) == GEMMTUNE_SUCCESS);
      CHECK(count.count() == 0);
    }
    gemmtune_destroy(h);
  }
  SECTION("the alignment of the actual pointers is part of the problem") {
    // C one float past a 256-byte boundary: 4-byte alignment, a key the table does not have.
    void* c4 = reinterpret_cast<void*>((uintptr_t(3) << 20) + 4);
    auto g = args_for(exact, fake(1), fake(2), c4);
    const gemmtune::Choice& c = rt.prepare(g);
    CHECK(c.problem == "256x256x128 f32>f32 nn a4");
    CHECK(c.match == GEMMTUNE_MATCH_DEFAULT);
    CHECK(rt.prepared() == 4);
    // Other leading dimensions, same key class: the same entry, prepared on its own.
    auto gl = ge;
    gl.lda = 132;
    CHECK(rt.prepare(gl).match == GEMMTUNE_MATCH_EXACT);
    CHECK(rt.prepared() == 5);
  }
  SECTION("a second runtime finds the kernels in the cubin cache") {
    gemmtune::Runtime rt2(tf.path.string(), dry_options(cache.path));
    CHECK_FALSE(rt2.prepare(ge).compiled);
    CHECK_FALSE(rt2.prepare(gn).compiled);
    CHECK(rt2.compiles() == 0);
  }
  SECTION("bad arguments are refused before anything else") {
    auto bad = ge;
    bad.m = 0;
    CHECK_THROWS_MATCHES(rt.gemm(bad, nullptr), gemmtune::Error,
                         Catch::Predicate<gemmtune::Error>([](const gemmtune::Error& e) {
                           return e.status() == GEMMTUNE_ERROR_INVALID_ARGUMENT;
                         }));
    bad = ge;
    bad.lda = 100;  // < K
    CHECK_THROWS_WITH(rt.gemm(bad, nullptr), Catch::Contains("leading dimensions"));
    bad = ge;
    bad.out = GEMMTUNE_TF32;
    CHECK_THROWS_WITH(rt.gemm(bad, nullptr), Catch::Contains("output dtype"));
    bad = ge;
    bad.layout = gemmtune_layout(9);
    CHECK_THROWS_WITH(rt.gemm(bad, nullptr), Catch::Contains("layout"));
    CHECK(rt.prepared() == 3);
  }
}

TEST_CASE("runtime C API: statuses and messages", "[runtime]") {
  test::TempDir cache;
  std::string dirs = test::naive_only_dir().string(), cdir = cache.path.string();
  gemmtune_options o;
  gemmtune_options_init(&o);
  CHECK(o.struct_size == sizeof(gemmtune_options));
  CHECK(o.device == -1);
  o.plugin_dirs = dirs.c_str();
  o.cache_dir = cdir.c_str();
  o.dry_run = 1;
  gemmtune_runtime* h = reinterpret_cast<gemmtune_runtime*>(0x1);

  SECTION("a table that cannot be read") {
    CHECK(gemmtune_create("/nonexistent/table.json", &o, &h) == GEMMTUNE_ERROR_BAD_TABLE);
    CHECK(h == nullptr);
    CHECK(std::string(gemmtune_last_error()).find("/nonexistent/table.json") != std::string::npos);
    CHECK(std::string(gemmtune_status_string(GEMMTUNE_ERROR_BAD_TABLE)) == "bad table");
  }
  SECTION("null arguments and a stale options struct") {
    CHECK(gemmtune_create(nullptr, &o, &h) == GEMMTUNE_ERROR_INVALID_ARGUMENT);
    CHECK(gemmtune_create("x.json", &o, nullptr) == GEMMTUNE_ERROR_INVALID_ARGUMENT);
    gemmtune_options old = o;
    old.struct_size = 8;
    TableFile tf({});
    CHECK(gemmtune_create(tf.path.c_str(), &old, &h) == GEMMTUNE_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(gemmtune_last_error()).find("struct_size") != std::string::npos);
    CHECK(gemmtune_gemm(nullptr, nullptr, nullptr) == GEMMTUNE_ERROR_INVALID_ARGUMENT);
  }
  SECTION("no plugins where it was told to look") {
    TableFile tf({});
    test::TempDir empty;
    std::string e = empty.path.string();
    o.plugin_dirs = e.c_str();
    CHECK(gemmtune_create(tf.path.c_str(), &o, &h) == GEMMTUNE_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(gemmtune_last_error()).find("no gemmtune plugins") != std::string::npos);
  }
  SECTION("a real run needs a GPU") {
    if (test::have_gpu()) {
      WARN("a GPU is present: the no-GPU status is not exercised here");
    } else {
      TableFile tf({});
      o.dry_run = 0;
      CHECK(gemmtune_create(tf.path.c_str(), &o, &h) == GEMMTUNE_ERROR_NO_GPU);
      CHECK(std::string(gemmtune_last_error()).find("no GPU") != std::string::npos);
    }
  }
  SECTION("choices, bad arguments, a vanished config, nothing to run") {
    TableEntry good = naive_entry(kDevice, 256, 256, 128, DType::f32, "bx=32,by=4");
    TableEntry stale = naive_entry(kDevice, 4096, 4096, 4096, DType::f32, "bx=32,by=4");
    stale.config = "naive_mapcoalesced_bx48_by4";  // bx=48 is no value of naive's
    TableFile tf({good, stale});
    o.default_family = "no_such_family";  // so that a problem no entry serves has no default
    o.device_name = kDevice;
    REQUIRE(gemmtune_create(tf.path.c_str(), &o, &h) == GEMMTUNE_SUCCESS);
    REQUIRE(h != nullptr);

    Problem p = Problem::make(256, 256, 128, DType::f32, DType::f32, Layout::nn);
    gemmtune_gemm_args a = c_args(args_for(p, fake(1), fake(2), fake(3)));
    int32_t match = -1;
    char config[256], how[8];
    REQUIRE(gemmtune_choice(h, &a, &match, config, sizeof config, how, sizeof how) == GEMMTUNE_SUCCESS);
    CHECK(match == GEMMTUNE_MATCH_EXACT);
    CHECK(std::string(config) == good.config);
    CHECK(std::string(how) == "exact");
    CHECK(std::string(gemmtune_last_error()).empty());
    // Truncated to the capacity, always terminated.
    Problem pn = Problem::make(200, 256, 128, DType::f32, DType::f32, Layout::nn);
    gemmtune_gemm_args an = c_args(args_for(pn, fake(1), fake(2), fake(3)));
    REQUIRE(gemmtune_choice(h, &an, &match, nullptr, 0, how, sizeof how) == GEMMTUNE_SUCCESS);
    CHECK(match == GEMMTUNE_MATCH_NEAREST);
    CHECK(std::string(how) == "nearest");  // "nearest (from 256x256x128)" cut to 7 characters

    gemmtune_gemm_args bad = a;
    bad.k = -5;
    CHECK(gemmtune_gemm(h, &bad, nullptr) == GEMMTUNE_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(gemmtune_last_error()).find("-5") != std::string::npos);

    Problem ps = Problem::make(4096, 4096, 4096, DType::f32, DType::f32, Layout::nn);
    gemmtune_gemm_args as = c_args(args_for(ps, fake(1), fake(2), fake(3)));
    CHECK(gemmtune_gemm(h, &as, nullptr) == GEMMTUNE_ERROR_BAD_TABLE);
    std::string msg = gemmtune_last_error();
    CHECK(msg.find(tf.path.string()) != std::string::npos);
    CHECK(msg.find("naive_mapcoalesced_bx48_by4") != std::string::npos);
    CHECK(msg.find("no longer exists") != std::string::npos);

    Problem pf = Problem::make(64, 64, 64, DType::bf16, DType::bf16, Layout::tt);
    gemmtune_gemm_args af = c_args(args_for(pf, fake(1), fake(2), fake(3)));
    CHECK(gemmtune_gemm(h, &af, nullptr) == GEMMTUNE_ERROR_NOT_SUPPORTED);
    CHECK(std::string(gemmtune_last_error()).find("no_such_family") != std::string::npos);
    // Still usable after failures.
    CHECK(gemmtune_gemm(h, &a, nullptr) == GEMMTUNE_SUCCESS);
    gemmtune_destroy(h);
  }
}

// ---------------------------------------------------------------------------------------
// GPU

namespace {

// Runs the runtime's GEMM on fresh caller buffers (C poisoned with NaN) and checks it
// against the float64 reference. `c_offset` elements shift C off its 256-byte alignment.
gemmtune::Choice run_and_check(gemmtune::Runtime& rt, const Problem& p, uint64_t seed, size_t c_offset = 0) {
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  DeviceBuffer a(p.bytes_a()), b(p.bytes_b()), c(p.bytes_c() + 64);
  DeviceBuffer ref(size_t(p.m) * size_t(p.n) * sizeof(double)), scratch(64);
  fill_random(a.get(), p.in, size_t(p.a_rows()) * size_t(p.lda), seed, Distribution::normal, s);
  fill_random(b.get(), p.in, size_t(p.b_rows()) * size_t(p.ldb), seed + 1, Distribution::normal, s);
  void* cp = static_cast<char*>(c.get()) + c_offset * size_of(p.out);
  fill_nan(cp, p.out, size_t(p.m) * size_t(p.ldc), s);
  auto g = args_for(p, a.get(), b.get(), cp);
  rt.gemm(g, s);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  const gemmtune::Choice choice = rt.prepare(g);
  reference_gemm(p, Operands{a.get(), b.get(), nullptr, {}}, static_cast<double*>(ref.get()), s);
  ErrorSums e = compare_to_reference(p, cp, static_cast<const double*>(ref.get()), scratch.get(), s);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  cudaStreamDestroy(s);
  double rel = e.sum_sq_ref > 0 ? std::sqrt(e.sum_sq_diff / e.sum_sq_ref) : std::sqrt(e.sum_sq_diff);
  double mx = e.max_abs_ref > 0 ? e.max_abs_diff / e.max_abs_ref : e.max_abs_diff;
  Tolerance tol = tolerance_for(p);
  INFO(choice.problem << ": " << choice.config << " (" << choice.how << "): relative Frobenius " << rel
                      << ", normalised max " << mx);
  CHECK(e.nonfinite == 0);
  CHECK(rel <= tol.rel_fro);
  CHECK(mx <= tol.max_norm);
  return choice;
}

gemmtune::Options gpu_options(const fs::path& cache) {
  gemmtune::Options o;
  o.plugin_dirs = {test::plugin_dir().string()};
  o.cache_dir = cache.string();
  o.device = 0;
  o.device_name = kDevice;
  o.unbacked_transfers = true;  // running the nearest entries' configs is what is checked here
  return o;
}

}  // namespace

TEST_CASE("runtime on a GPU: a naive table's configs on caller buffers match float64", "[gpu][runtime]") {
  GT_REQUIRE_GPU();
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  TableFile tf({naive_entry(kDevice, 256, 256, 128, DType::f32, "bx=16,by=16"),
                naive_entry(kDevice, 1024, 512, 256, DType::f32, "map=uncoalesced,bx=64,by=4"),
                naive_entry(kDevice, 128, 64, 96, DType::f16, "bx=32,by=2")});
  test::TempDir cache;
  gemmtune::Runtime rt(tf.path.string(), gpu_options(cache.path));

  Problem exact = Problem::make(256, 256, 128, DType::f32, DType::f32, Layout::nn);
  auto c = run_and_check(rt, exact, 11);
  CHECK(c.match == GEMMTUNE_MATCH_EXACT);
  CHECK(c.config == config_at(tf.table, 256, 256, 128));
  CHECK(c.launchable);

  // Held out: nearer 256x256x128 than 1024x512x256, and not a multiple of any block size.
  Problem near = Problem::make(300, 200, 100, DType::f32, DType::f32, Layout::nn);
  c = run_and_check(rt, near, 12);
  CHECK(c.match == GEMMTUNE_MATCH_NEAREST);
  CHECK(c.how == "nearest (from 256x256x128)");
  // Held out, nearer the uncoalesced entry (K = 336 keeps the rows 16-byte aligned: the class).
  c = run_and_check(rt, Problem::make(900, 700, 336, DType::f32, DType::f32, Layout::nn), 13);
  CHECK(c.how == "nearest (from 1024x512x256)");
  CHECK(c.params.find("map=uncoalesced") != std::string::npos);
  // f16: exact and nearest.
  c = run_and_check(rt, Problem::make(128, 64, 96, DType::f16, DType::f16, Layout::nn), 14);
  CHECK(c.match == GEMMTUNE_MATCH_EXACT);
  c = run_and_check(rt, Problem::make(100, 72, 88, DType::f16, DType::f16, Layout::nn), 15);
  CHECK(c.match == GEMMTUNE_MATCH_NEAREST);
  // Padded leading dimensions: the same key class, its own prepared kernel.
  Problem padded = exact;
  padded.lda = 132;
  padded.ldb = 260;
  padded.ldc = 264;
  padded.align = alignment_of(padded);
  c = run_and_check(rt, padded, 16);
  CHECK(c.match == GEMMTUNE_MATCH_EXACT);
  // C one element off its alignment: the key changes to a4 and the default runs.
  c = run_and_check(rt, exact, 17, 1);
  CHECK(c.problem == "256x256x128 f32>f32 nn a4");
  CHECK(c.match == GEMMTUNE_MATCH_DEFAULT);
  for (const Problem& q : {near, padded}) CHECK(q.align == 16);
  size_t prepared = rt.prepared(), compiles = rt.compiles();
  CHECK(prepared == 7);

  SECTION("later calls: new inputs, right answers, no compile, no allocation") {
    run_and_check(rt, exact, 21);
    run_and_check(rt, near, 22);
    CHECK(rt.prepared() == prepared);
    CHECK(rt.compiles() == compiles);
    DeviceBuffer a(exact.bytes_a()), b(exact.bytes_b()), cc(exact.bytes_c());
    auto g = args_for(exact, a.get(), b.get(), cc.get());
    rt.gemm(g, nullptr);
    {
      AllocCounter count;
      for (int i = 0; i < 200; ++i) rt.gemm(g, nullptr);
      CHECK(count.count() == 0);
    }
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  }
}

TEST_CASE("runtime on a GPU: a cuBLASLt config from the table, re-created through the plugin", "[gpu][runtime]") {
  GT_REQUIRE_GPU();
  const Family* lt = test::plugins().find("cublaslt");
  if (!lt) {
    WARN("SKIPPED: the cublaslt plugin is not built here");
    return;
  }
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  DeviceInfo dev = device_info(0);
  Problem tuned = Problem::make(512, 512, 512, DType::f16, DType::f16, Layout::nn);
  Space s = lt->space(tuned, dev.limits);
  auto picks = lt->suggest(tuned, dev.limits, 1, s.dims());
  REQUIRE(!picks.empty());
  TableEntry e;
  e.key = ResultKey::of(kDevice, tuned);
  e.family = "cublaslt";
  e.family_version = lt->version();
  e.config = s.name(picks[0]);
  e.params = s.assignments(picks[0]);
  e.time_us = 10;
  e.tflops = tuned.flops() / 10e-6 / 1e12;
  TableFile tf({e});
  test::TempDir cache;
  gemmtune::Runtime rt(tf.path.string(), gpu_options(cache.path));
  auto c = run_and_check(rt, tuned, 31);
  CHECK(c.match == GEMMTUNE_MATCH_EXACT);
  CHECK(c.family == "cublaslt");
  CHECK(c.config == e.config);
  CHECK(c.launchable);
  // A held-out shape: the entry was the heuristic's pick at 512^3, so the answer is the
  // heuristic's pick for this shape (plugin_transfer), built and right.
  Problem held = Problem::make(500, 520, 480, DType::f16, DType::f16, Layout::nn);
  c = run_and_check(rt, held, 32);
  INFO(c.how);
  CHECK(c.family == "cublaslt");
  CHECK(c.match == GEMMTUNE_MATCH_NEAREST);
  CHECK(c.how == "nearest (from 512x512x512, whose winner was cuBLASLt's heuristic pick, so cuBLASLt's heuristic "
                 "pick for this shape)");
  {
    Space sh = lt->space(held, dev.limits);
    CHECK(c.config == sh.name(sh.default_config()));
  }
  {
    DeviceBuffer a(tuned.bytes_a()), b(tuned.bytes_b()), cc(tuned.bytes_c());
    auto g = args_for(tuned, a.get(), b.get(), cc.get());
    rt.gemm(g, nullptr);
    AllocCounter count;
    for (int i = 0; i < 200; ++i) rt.gemm(g, nullptr);
    CHECK(count.count() == 0);
  }
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
}

// ---------------------------------------------------------------------------------------
// bench_runtime (dry run: the dispatch path alone, on any machine)

TEST_CASE("bench_runtime: exit 1 when the per-call overhead target is missed, 0 when met", "[runtime][cli]") {
  test::TempDir cache;
  const fs::path bench = test::gemmtune_binary().parent_path() / "tools" / "bench_runtime";
  REQUIRE(fs::exists(bench));
  const std::string cmd = fmt::format("'{}' --dry-run --plugin-dir '{}' --cache-dir '{}' --shapes 64x64x64 --samples 5 "
                                      "--max-seconds 0.05 --default-family naive",
                                      bench.string(), test::naive_only_dir().string(), cache.path.string());
  // No dispatch takes under a picosecond: missed, and the exit code says so.
  auto r = test::run_command(cmd + " --target-us 0.000001");
  INFO(r.out);
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("MISSED for 64x64x64") != std::string::npos);
  r = test::run_command(cmd + " --target-us 0.000001 --json");
  INFO(r.out);
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("\"target_met\": false") != std::string::npos);
  // Every dispatch takes under a second: met.
  r = test::run_command(cmd + " --target-us 1000000");
  INFO(r.out);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("— met") != std::string::npos);
  r = test::run_command(cmd + " --target-us 1000000 --json");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("\"target_met\": true") != std::string::npos);
  r = test::run_command(cmd + " --target-us nan");
  CHECK(r.exit_code == 2);
  CHECK(r.out.find("--target-us: got nan") != std::string::npos);
}

TEST_CASE("runtime (dry run, no GPU): an entry it cannot check is answered as lookup answers it, marked unchecked",
          "[runtime]") {
  if (device_count() > 0) {
    WARN("SKIPPED: a GPU is present, so cuBLASLt's entries can be checked (the [gpu] runtime tests cover that)");
    return;
  }
  // A near cuBLASLt entry (its spaces need a GPU) and a farther naive one: the dry run answers
  // what `gemmtune lookup` answers, the first, and says it was not checked. Nothing runs in a
  // dry run; a real run has a GPU, and there cuBLASLt's spaces are checked.
  Problem tuned = Problem::make(64, 48, 4096, DType::f32, DType::f32, Layout::nn);
  TableEntry lt;
  lt.key = ResultKey::of(kDevice, tuned);
  lt.family = "cublaslt";
  lt.config = "cublaslt_algo66_tile128x8_stages64xauto_split_k1_reductionnone_swizzle0_custom1_cluster4x1x1_innerundef_"
              "workspace0";
  lt.time_us = 10;
  lt.tflops = tuned.flops() / 10e-6 / 1e12;
  TableFile tf({lt, naive_entry(kDevice, 4096, 48, 1024, DType::f32, "bx=32,by=8")});
  test::TempDir cache;
  gemmtune::Options o = dry_options(cache.path);
  o.plugin_dirs = {test::plugin_dir().string()};
  o.max_distance = 10;  // both entries within reach
  gemmtune::Runtime rt(tf.path.string(), o);
  Problem asked = Problem::make(64, 48, 1024, DType::f32, DType::f32, Layout::nn);
  const gemmtune::Choice& c = rt.prepare(args_for(asked, fake(1), fake(2), fake(3)));
  CHECK(c.match == GEMMTUNE_MATCH_NEAREST);
  CHECK(c.family == "cublaslt");
  CHECK(c.config == lt.config);
  CHECK(c.how == "nearest (from 64x48x4096; not checked on this machine)");
  CHECK_FALSE(c.unchecked.empty());
  CHECK_FALSE(c.launchable);
  auto r = test::run_command(fmt::format("'{}' --plugin-dir '{}' --json lookup --table '{}' --device '{}' --shape "
                                         "64x48x1024 --dtype f32 --max-distance 10 --transfers any",
                                         test::gemmtune_binary().string(), test::plugin_dir().string(),
                                         tf.path.string(), kDevice));
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["config"] == c.config);
  CHECK(j["how"] == c.how);
  CHECK(j["unchecked"] == c.unchecked);
}

// A table's key keeps one alignment, but wgmma_tma 1.10 runs a C-only misaligned problem only
// while A and B are 16-byte aligned (TMA reads them). The runtime asks the family with the
// call's own pointers (plugin ABI v4's align_a/b/c), so an entry tuned with A and B aligned is
// passed over for a call of the same key whose A or B is not, and the default runs instead; and
// two calls of one key and one least alignment, misaligned in different operands, are prepared apart.
TEST_CASE("runtime (dry run): a masked-epilogue entry is never run on a call whose A or B is misaligned",
          "[runtime][mask]") {
  const Problem p = Problem::make(256, 1001, 512, DType::bf16, DType::bf16, Layout::nt);  // ldc odd: a2
  REQUIRE(p.align == 2);
  const Family& wg = test::plugins().get("wgmma_tma");
  const Space s = wg.space(p, arch_limits("sm_90"));
  TableEntry e;
  e.key = ResultKey::of(kDevice, p);
  e.family = "wgmma_tma";
  e.family_version = wg.version();
  e.config = s.name(s.default_config());
  e.params = s.assignments(s.default_config());
  e.time_us = 10;
  e.tflops = p.flops() / 10e-6 / 1e12;
  TableFile tf({e});
  test::TempDir cache;
  gemmtune::Options o = dry_options(cache.path);
  o.plugin_dirs = {test::plugin_dir().string()};
  gemmtune::Runtime rt(tf.path.string(), o);
  auto off = [](const void* ptr, uintptr_t bytes) {
    return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(ptr) + bytes);
  };
  // A and B aligned, C's ld odd (and then its pointer 2 bytes off too): the entry runs.
  for (uintptr_t c_off : {0u, 2u}) {
    INFO("C " << c_off << " bytes off");
    const gemmtune::Choice& c = rt.prepare(args_for(p, fake(1), fake(2), off(fake(3), c_off)));
    CHECK(c.match == GEMMTUNE_MATCH_EXACT);
    CHECK(c.family == "wgmma_tma");
    CHECK(c.config == e.config);
  }
  // A 2 bytes off (the same key and least alignment as C 2 bytes off), or B 8 bytes off: passed
  // over, and the default prepared instead.
  for (auto [a_off, b_off] : {std::pair{uintptr_t(2), uintptr_t(0)}, std::pair{uintptr_t(0), uintptr_t(8)}}) {
    INFO("A " << a_off << ", B " << b_off << " bytes off");
    const gemmtune::Choice& c = rt.prepare(args_for(p, off(fake(1), a_off), off(fake(2), b_off), fake(3)));
    CHECK(c.match == GEMMTUNE_MATCH_DEFAULT);
    CHECK(c.family != "wgmma_tma");
    CHECK_THAT(c.reason, Catch::Contains("1 cannot run it"));
  }
  CHECK(rt.prepared() == 4);
  // The reason it was passed over is the family's (lookup's list, for the problem the runtime forms).
  Problem a_off = p;
  a_off.operand_pointer_align = {2, 16, 16};
  a_off.pointer_align = 2;
  LookupPolicy policy;
  policy.device = kDevice;
  policy.arch = "sm_90";
  const LookupResult r = answer(tf.table, a_off, test::plugins(), arch_limits("sm_90"), policy);
  CHECK(r.kind == MatchKind::fallback);
  REQUIRE(r.passed_over.size() == 1);
  CHECK_THAT(r.passed_over[0].second, Catch::Contains("A is aligned to 2 bytes"));
}
