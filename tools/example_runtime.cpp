// example_runtime: the gemmtune runtime in a small program. It loads a lookup table, runs a
// GEMM on its own buffers through the C API (gemmtune_runtime.h), checks the result against
// a float64 reference, and prints the config the runtime chose, how it found it, and the
// time per call.
//
//   example_runtime --table table.json --shape 1000x1000x1000 --dtype f32
//
// Exit codes as gemmtune's: 0 success, 1 a run-time failure (or a wrong result), 2 bad
// input, 3 no GPU. Input (the flags and the table file) is checked before the GPU is asked
// for, so bad input is exit 2 on any machine.
#include "gemmtune_runtime.h"

#include "measure/bench.hpp"
#include "gpu/device.hpp"
#include "base/errors.hpp"
#include "gpu/gpu_kernels.hpp"
#include "build/plugin.hpp"
#include "table/table.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <vector>

namespace {

int exit_code_of(gemmtune_status s) {
  switch (s) {
    case GEMMTUNE_SUCCESS: return 0;
    case GEMMTUNE_ERROR_INVALID_ARGUMENT:
    case GEMMTUNE_ERROR_BAD_TABLE:
    case GEMMTUNE_ERROR_NOT_SUPPORTED: return 2;
    case GEMMTUNE_ERROR_NO_GPU: return 3;
    default: return 1;
  }
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw gt::RuntimeFailure(fmt::format("{}: {}", what, cudaGetErrorString(e)));
}

// The command line's values.
struct Settings {
  std::string table, shape = "1024x1024x1024", dtype = "f32", out_dtype, layout = "nn", plugin_dir, cache_dir;
  int iters = 50, device = 0;
};

void add_options(CLI::App& app, Settings& s) {
  app.add_option("--table", s.table, "lookup table written by `gemmtune export` (JSON or TOML)")->required();
  app.add_option("--shape", s.shape, "MxNxK")->default_str("1024x1024x1024");
  app.add_option("--dtype", s.dtype, "input type: f32, tf32, f16, bf16")->default_str("f32");
  app.add_option("--out-dtype", s.out_dtype, "output type (default: the input type; tf32 -> f32)");
  app.add_option("--layout", s.layout, "nn|nt|tn|tt")->default_str("nn");
  app.add_option("--plugin-dir", s.plugin_dir,
                 "plugins (colon-separated; default: GEMMTUNE_PLUGIN_PATH, else the build's plugins beside tools/)");
  app.add_option("--cache-dir", s.cache_dir, "compiled-kernel cache (default: GEMMTUNE_CACHE_DIR, else XDG cache)");
  app.add_option("--iters", s.iters, "timed calls")->default_val(50)->check(CLI::Range(1, 100000));
  app.add_option("--device", s.device, "GPU index")->default_val(0);
}

// The problem the flags name; throws InputError for bad input, an unloadable table included.
gt::Problem problem_from(const Settings& s) {
  auto d = gt::parse_shape(s.shape, "--shape");
  gt::DType in = gt::parse_dtype(s.dtype, "--dtype");
  gt::DType out = s.out_dtype.empty() ? gt::Problem::default_out(in) : gt::parse_dtype(s.out_dtype, "--out-dtype");
  if (out == gt::DType::tf32) throw gt::InputError("--out-dtype: tf32 is not a storage type; use f32");
  gt::Problem p = gt::Problem::make(d[0], d[1], d[2], in, out, gt::parse_layout(s.layout, "--layout"));
  // The table as the runtime will load it: a missing, unreadable or malformed file is named
  // here, before any GPU work (gemmtune_create loads it again).
  try {
    gt::LookupTable::load(s.table);
  } catch (const gt::InputError& e) {
    throw gt::InputError(fmt::format("--table: {}", e.what()));
  }
  return p;
}

gemmtune_status create_runtime(const Settings& s, gemmtune_runtime** rt) {
  check(cudaSetDevice(s.device), "cudaSetDevice");
  gemmtune_options o;
  gemmtune_options_init(&o);
  o.plugin_dirs = s.plugin_dir.empty() ? nullptr : s.plugin_dir.c_str();
  o.cache_dir = s.cache_dir.empty() ? nullptr : s.cache_dir.c_str();
  o.device = s.device;
  return gemmtune_create(s.table.c_str(), &o, rt);
}

gemmtune_gemm_args gemm_args(const gt::Problem& p, const void* a, const void* b, void* c) {
  gemmtune_gemm_args args{};
  args.m = p.m;
  args.n = p.n;
  args.k = p.k;
  args.in_dtype = int32_t(p.in);
  args.out_dtype = int32_t(p.out);
  args.layout = int32_t(p.layout);
  args.a = a;
  args.lda = p.lda;
  args.b = b;
  args.ldb = p.ldb;
  args.c = c;
  args.ldc = p.ldc;
  return args;
}

// How far C is from the float64 reference, against the problem's tolerance.
struct Accuracy {
  gt::ErrorSums e;
  double rel_fro = 0, max_norm = 0;
  gt::Tolerance tol{};
  bool ok = false;
};

Accuracy check_against_reference(const gt::Problem& p, const gt::Operands& ops, gt::DeviceBuffer& ref,
                                 gt::DeviceBuffer& scratch, cudaStream_t stream) {
  Accuracy r;
  gt::reference_gemm(p, ops, static_cast<double*>(ref.get()), stream);
  r.e = gt::compare_to_reference(p, ops.c, static_cast<const double*>(ref.get()), scratch.get(), stream);
  r.rel_fro = r.e.sum_sq_ref > 0 ? std::sqrt(r.e.sum_sq_diff / r.e.sum_sq_ref) : std::sqrt(r.e.sum_sq_diff);
  r.max_norm = r.e.max_abs_ref > 0 ? r.e.max_abs_diff / r.e.max_abs_ref : r.e.max_abs_diff;
  r.tol = gt::tolerance_for(p);
  r.ok = r.e.nonfinite == 0 && r.rel_fro <= r.tol.rel_fro && r.max_norm <= r.tol.max_norm;
  return r;
}

// The median GPU time of `iters` calls, each timed alone by events.
double median_call_us(gemmtune_runtime* rt, const gemmtune_gemm_args& args, cudaStream_t stream, int iters) {
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "cudaEventCreate");
  check(cudaEventCreate(&e1), "cudaEventCreate");
  std::vector<double> us;
  for (int i = 0; i < iters; ++i) {
    check(cudaEventRecord(e0, stream), "cudaEventRecord");
    gemmtune_status st = gemmtune_gemm(rt, &args, stream);
    if (st != GEMMTUNE_SUCCESS) throw gt::RuntimeFailure(gemmtune_last_error());
    check(cudaEventRecord(e1, stream), "cudaEventRecord");
    check(cudaEventSynchronize(e1), "a timed GEMM");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
    us.push_back(double(ms) * 1e3);
  }
  std::sort(us.begin(), us.end());
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return us[us.size() / 2];
}

// What the runtime chose and what it measured.
struct Report {
  std::string config, how;
  double first_s = 0, median_us = 0;
  Accuracy acc;
};

void print_report(const gt::Problem& p, const Settings& s, const Report& r) {
  gt::DeviceInfo dev = gt::device_info(s.device);
  fmt::print("problem: {} on {}\n", p.key(), dev.name);
  fmt::print("config:  {}\n", r.config);
  fmt::print("match:   {}\n", r.how);
  fmt::print("first call (lookup, build, launch): {:.3f} ms\n", r.first_s * 1e3);
  fmt::print("time:    median {:.3f} us over {} calls, {:.2f} TFLOP/s\n", r.median_us, s.iters,
             p.flops() / (r.median_us * 1e-6) / 1e12);
  fmt::print("check:   relative Frobenius error {:.2e} (bound {:.2e}), normalised max error {:.2e} (bound {:.2e}){}: "
             "{}\n",
             r.acc.rel_fro, r.acc.tol.rel_fro, r.acc.max_norm, r.acc.tol.max_norm,
             r.acc.e.nonfinite ? fmt::format(", {} non-finite elements", r.acc.e.nonfinite) : std::string(),
             r.acc.ok ? "ok" : "WRONG");
}

void print_failure(gemmtune_status st) {
  fmt::print(stderr, "example_runtime: {}: {}\n", gemmtune_status_string(st), gemmtune_last_error());
}

// The GEMM on buffers of its own: the first call, the check, the timed calls; the exit code.
int run_example(const Settings& s, const gt::Problem& p) {
  gemmtune_runtime* rt = nullptr;
  try {
    gemmtune_status st = create_runtime(s, &rt);
    if (st != GEMMTUNE_SUCCESS) {
      print_failure(st);
      return exit_code_of(st);
    }

    cudaStream_t stream = nullptr;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    gt::DeviceBuffer a(p.bytes_a()), b(p.bytes_b()), c(p.bytes_c());
    gt::DeviceBuffer ref(size_t(p.m) * size_t(p.n) * sizeof(double)), scratch(64);
    uint64_t seed = 0x5eed;
    gt::fill_random(a.get(), p.in, size_t(p.a_rows()) * size_t(p.lda), seed, gt::Distribution::normal, stream);
    gt::fill_random(b.get(), p.in, size_t(p.b_rows()) * size_t(p.ldb), seed + 1, gt::Distribution::normal, stream);
    gt::fill_nan(c.get(), p.out, size_t(p.m) * size_t(p.ldc), stream);
    const gemmtune_gemm_args args = gemm_args(p, a.get(), b.get(), c.get());

    // The first call looks the problem up and builds its config; later ones only launch.
    Report r;
    auto t0 = std::chrono::steady_clock::now();
    st = gemmtune_gemm(rt, &args, stream);
    if (st == GEMMTUNE_SUCCESS) check(cudaStreamSynchronize(stream), "the first GEMM");
    r.first_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (st != GEMMTUNE_SUCCESS) {
      print_failure(st);
      gemmtune_destroy(rt);
      return exit_code_of(st);
    }
    int32_t match = 0;
    char config[1024], how[512];
    st = gemmtune_choice(rt, &args, &match, config, sizeof config, how, sizeof how);
    if (st != GEMMTUNE_SUCCESS) throw gt::RuntimeFailure(gemmtune_last_error());
    r.config = config;
    r.how = how;

    r.acc = check_against_reference(p, gt::Operands{a.get(), b.get(), c.get(), {}}, ref, scratch, stream);
    r.median_us = median_call_us(rt, args, stream, s.iters);
    print_report(p, s, r);
    cudaStreamDestroy(stream);
    gemmtune_destroy(rt);
    return r.acc.ok ? 0 : 1;
  } catch (const std::exception& ex) {
    fmt::print(stderr, "example_runtime: failed: {}\n", ex.what());
    gemmtune_destroy(rt);
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Runs one GEMM through the gemmtune runtime with the config a lookup table names for it, checks it "
               "against float64 and prints the config and its time. Exit codes: 0 ok, 1 failure, 2 bad input, 3 no "
               "GPU."};
  Settings s;
  add_options(app, s);
  CLI11_PARSE(app, argc, argv);

  gt::Problem p;
  try {
    p = problem_from(s);
  } catch (const gt::InputError& e) {
    fmt::print(stderr, "example_runtime: error: {}\n", e.what());
    return 2;
  }

  std::string why;
  if (gt::device_count(&why) <= s.device) {
    if (why.empty()) why = fmt::format("there is no GPU {}", s.device);
    fmt::print(stderr, "example_runtime: needs a GPU: {}\n", why);
    return 3;
  }

  // The build's plugins sit in ../plugins beside tools/, unless the environment says otherwise.
  if (s.plugin_dir.empty() && !std::getenv("GEMMTUNE_PLUGIN_PATH"))
    s.plugin_dir = (gt::executable_dir() / ".." / "plugins").lexically_normal().string();
  return run_example(s, p);
}
