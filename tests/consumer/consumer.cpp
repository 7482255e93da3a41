// An out-of-tree C++ program on an installed gemmtune (the C++ API): loads a table, looks a
// problem up, checks that bad arguments come back as gemmtune::Error with the C API's
// status, and with a GPU runs the problem once on normal inputs and checks C against float64.
//   consumer_cpp TABLE M N K DTYPE LAYOUT     (as consumer_c)
// Built against the shared library and against the archive; the archive's build names the
// installed plugins (CONSUMER_PLUGIN_DIR, from the package's gemmtune_PLUGIN_DIR).
#include <gemmtune_runtime.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <vector>

namespace {
// One element in the table's storage type, and back (what the GPU reads is what the
// reference multiplies).
void store(gemmtune_dtype t, float v, unsigned char* at) {
  if (t == GEMMTUNE_F16) {
    __half h = __float2half_rn(v);
    std::memcpy(at, &h, 2);
  } else if (t == GEMMTUNE_BF16) {
    __nv_bfloat16 h = __float2bfloat16_rn(v);
    std::memcpy(at, &h, 2);
  } else {
    std::memcpy(at, &v, 4);
  }
}
double load(gemmtune_dtype t, const unsigned char* at) {
  if (t == GEMMTUNE_F16) {
    __half h;
    std::memcpy(&h, at, 2);
    return __half2float(h);
  }
  if (t == GEMMTUNE_BF16) {
    __nv_bfloat16 h;
    std::memcpy(&h, at, 2);
    return __bfloat162float(h);
  }
  float f;
  std::memcpy(&f, at, 4);
  return f;
}
size_t bytes_of(gemmtune_dtype t) { return t == GEMMTUNE_F16 || t == GEMMTUNE_BF16 ? 2 : 4; }

// The relative Frobenius bound the tuner verifies every candidate by (core's tolerance_for):
// input rounding (tf32), output rounding and fp32 accumulation growing with sqrt(K).
double tolerance(const gemmtune::GemmArgs& g) {
  const double u_acc = std::ldexp(1.0, -24);
  const double u_in = g.in == GEMMTUNE_TF32 ? std::ldexp(1.0, -11) : 0.0;
  const double u_out = g.out == GEMMTUNE_F16 ? std::ldexp(1.0, -11) : g.out == GEMMTUNE_BF16 ? std::ldexp(1.0, -8) : u_acc;
  return 4.0 * u_in + 2.0 * u_out + 4.0 * u_acc * std::sqrt(double(g.k)) + 1e-12;
}

// Runs the problem once on iid normal inputs (never zeros: a kernel that skips work must not
// pass) and checks C against a float64 product of the same rounded inputs.
int run_and_check(gemmtune::Runtime& rt, gemmtune::GemmArgs g) {
  const bool a_t = g.layout == GEMMTUNE_TN || g.layout == GEMMTUNE_TT, b_t = g.layout == GEMMTUNE_NT || g.layout == GEMMTUNE_TT;
  const size_t in = bytes_of(g.in), out = bytes_of(g.out);
  const size_t a_elems = size_t(g.m) * size_t(g.k), b_elems = size_t(g.k) * size_t(g.n), c_elems = size_t(g.m) * size_t(g.n);
  std::vector<unsigned char> ha(a_elems * in), hb(b_elems * in), hc(c_elems * out);
  std::mt19937_64 rng(20261202);
  std::normal_distribution<float> normal;
  for (size_t i = 0; i < a_elems; ++i) store(g.in, normal(rng), &ha[i * in]);
  for (size_t i = 0; i < b_elems; ++i) store(g.in, normal(rng), &hb[i * in]);
  void *a = nullptr, *b = nullptr, *d = nullptr;
  if (cudaMalloc(&a, ha.size()) || cudaMalloc(&b, hb.size()) || cudaMalloc(&d, hc.size())) {
    std::cerr << "cudaMalloc failed\n";
    return 1;
  }
  cudaMemcpy(a, ha.data(), ha.size(), cudaMemcpyHostToDevice);
  cudaMemcpy(b, hb.data(), hb.size(), cudaMemcpyHostToDevice);
  cudaMemset(d, 0xff, hc.size());  // NaN in every type: every element must be written
  g.a = a;
  g.b = b;
  g.c = d;
  rt.gemm(g, nullptr);
  if (cudaError_t e = cudaMemcpy(hc.data(), d, hc.size(), cudaMemcpyDeviceToHost); e != cudaSuccess) {
    std::cerr << "the GEMM failed: " << cudaGetErrorString(e) << "\n";
    return 1;
  }
  cudaFree(a);
  cudaFree(b);
  cudaFree(d);
  double err2 = 0, ref2 = 0;
  std::vector<double> row(size_t(g.n));
  for (int64_t i = 0; i < g.m; ++i) {
    std::fill(row.begin(), row.end(), 0.0);
    for (int64_t p = 0; p < g.k; ++p) {
      const double av = load(g.in, &ha[size_t(a_t ? p * g.lda + i : i * g.lda + p) * in]);
      for (int64_t j = 0; j < g.n; ++j) row[size_t(j)] += av * load(g.in, &hb[size_t(b_t ? j * g.ldb + p : p * g.ldb + j) * in]);
    }
    for (int64_t j = 0; j < g.n; ++j) {
      const double c = load(g.out, &hc[size_t(i * g.ldc + j) * out]);
      if (!std::isfinite(c)) {
        std::cerr << "C[" << i << "," << j << "] = " << c << ": not written, or not finite\n";
        return 1;
      }
      err2 += (c - row[size_t(j)]) * (c - row[size_t(j)]);
      ref2 += row[size_t(j)] * row[size_t(j)];
    }
  }
  const double rel = std::sqrt(err2 / ref2), tol = tolerance(g);
  std::cout << "ran on the GPU: ||C - C_float64||_F / ||C_float64||_F = " << rel << " (tolerance " << tol << ")\n";
  if (!(rel <= tol)) {
    std::cerr << "C differs from the float64 product beyond the tolerance\n";
    return 1;
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::cerr << "usage: " << argv[0] << " TABLE M N K DTYPE LAYOUT\n";
    return 2;
  }
  int gpus = 0;
  bool have_gpu = cudaGetDeviceCount(&gpus) == cudaSuccess && gpus > 0;
  try {
    gemmtune::Options o;
    o.dry_run = !have_gpu;
#ifdef CONSUMER_PLUGIN_DIR
    o.plugin_dirs = {CONSUMER_PLUGIN_DIR};
#endif
    gemmtune::Runtime rt(argv[1], o);
    gemmtune::GemmArgs g;
    g.m = std::atoll(argv[2]);
    g.n = std::atoll(argv[3]);
    g.k = std::atoll(argv[4]);
    g.in = g.out = gemmtune_dtype(std::atoi(argv[5]));
    if (g.in == GEMMTUNE_TF32) g.out = GEMMTUNE_F32;
    g.layout = gemmtune_layout(std::atoi(argv[6]));
    bool a_t = g.layout == GEMMTUNE_TN || g.layout == GEMMTUNE_TT, b_t = g.layout == GEMMTUNE_NT || g.layout == GEMMTUNE_TT;
    g.lda = a_t ? g.m : g.k;
    g.ldb = b_t ? g.k : g.n;
    g.ldc = g.n;
    const gemmtune::Choice& c = rt.prepare(g);
    std::cout << "match=" << c.match << " config=" << c.config << " how=" << c.how << " family=" << c.family << "\n";

    gemmtune::GemmArgs bad = g;
    bad.m = 0;
    try {
      rt.prepare(bad);
      std::cerr << "a problem with M = 0 was accepted\n";
      return 1;
    } catch (const gemmtune::Error& e) {
      if (e.status() != GEMMTUNE_ERROR_INVALID_ARGUMENT) {
        std::cerr << "M = 0: status " << e.status() << ", expected invalid argument: " << e.what() << "\n";
        return 1;
      }
      std::cout << "M = 0 refused: " << e.what() << "\n";
    }

    if (!have_gpu) {
      std::cout << "no GPU: looked up as a dry run, nothing launched\n";
      return 0;
    }
    return run_and_check(rt, g);
  } catch (const gemmtune::Error& e) {
    std::cerr << "gemmtune::Error (status " << e.status() << "): " << e.what() << "\n";
    return 1;
  }
  return 0;
}
