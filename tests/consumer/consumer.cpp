// An out-of-tree C++ program on an installed gemmtune (the C++ API): loads a table, looks a
// problem up, checks that bad arguments come back as gemmtune::Error with the C API's
// status, and with a GPU runs the problem once.
//   consumer_cpp TABLE M N K DTYPE LAYOUT     (as consumer_c)
// Built against the shared library and against the archive; the archive's build names the
// installed plugins (CONSUMER_PLUGIN_DIR, from the package's gemmtune_PLUGIN_DIR).
#include <gemmtune_runtime.hpp>

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <iostream>
#include <vector>

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
    size_t in = g.in == GEMMTUNE_F16 || g.in == GEMMTUNE_BF16 ? 2 : 4, out = g.out == GEMMTUNE_F32 ? 4 : 2;
    size_t c_bytes = size_t(g.m) * size_t(g.n) * out;
    void *a = nullptr, *b = nullptr, *d = nullptr;
    if (cudaMalloc(&a, size_t(g.m) * size_t(g.k) * in) || cudaMalloc(&b, size_t(g.k) * size_t(g.n) * in) ||
        cudaMalloc(&d, c_bytes)) {
      std::cerr << "cudaMalloc failed\n";
      return 1;
    }
    cudaMemset(a, 0, size_t(g.m) * size_t(g.k) * in);
    cudaMemset(b, 0, size_t(g.k) * size_t(g.n) * in);
    cudaMemset(d, 0xff, c_bytes);  // NaN in every type: every element must be written
    g.a = a;
    g.b = b;
    g.c = d;
    rt.gemm(g, nullptr);
    std::vector<unsigned char> host(c_bytes);
    cudaMemcpy(host.data(), d, c_bytes, cudaMemcpyDeviceToHost);
    for (size_t i = 0; i < c_bytes; ++i)
      if (host[i] != 0) {
        std::cerr << "C[" << i / out << "] was not written as 0\n";
        return 1;
      }
    std::cout << "ran on the GPU: C written\n";
    cudaFree(a);
    cudaFree(b);
    cudaFree(d);
  } catch (const gemmtune::Error& e) {
    std::cerr << "gemmtune::Error (status " << e.status() << "): " << e.what() << "\n";
    return 1;
  }
  return 0;
}
