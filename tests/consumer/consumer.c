/* An out-of-tree C program on an installed gemmtune: loads a table, looks a problem up
 * and, where there is a GPU, runs it once and checks that C was written.
 *   consumer_c TABLE M N K DTYPE LAYOUT      DTYPE 0..3 (gemmtune_dtype), LAYOUT 0..3
 * Prints "match=<n> config=<name> how=<text>"; exit 0 on success, 1 with the C API's
 * message on a failure. Without a GPU it looks up as a dry run and launches nothing. */
#include <gemmtune_runtime.h>

#include <cuda_runtime_api.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char* what, gemmtune_status s) {
  fprintf(stderr, "%s: %s: %s\n", what, gemmtune_status_string(s), gemmtune_last_error());
  return 1;
}

static size_t element_size(int dtype) { return dtype == GEMMTUNE_F16 || dtype == GEMMTUNE_BF16 ? 2 : 4; }

/* C filled with 0xff bytes (NaN in every type), A and B with zeros: after the GEMM every
 * element of C must be zero. */
static int run_once(gemmtune_runtime* rt, gemmtune_gemm_args* g) {
  size_t in = element_size(g->in_dtype), out = element_size(g->out_dtype);
  size_t a_bytes = (size_t)g->m * g->k * in, b_bytes = (size_t)g->k * g->n * in, c_bytes = (size_t)g->m * g->n * out;
  void *a = NULL, *b = NULL, *c = NULL;
  if (cudaMalloc(&a, a_bytes) || cudaMalloc(&b, b_bytes) || cudaMalloc(&c, c_bytes)) {
    fprintf(stderr, "cudaMalloc failed\n");
    return 1;
  }
  cudaMemset(a, 0, a_bytes);
  cudaMemset(b, 0, b_bytes);
  cudaMemset(c, 0xff, c_bytes);
  g->a = a;
  g->b = b;
  g->c = c;
  gemmtune_status s = gemmtune_gemm(rt, g, NULL);
  if (s != GEMMTUNE_SUCCESS) return fail("gemmtune_gemm", s);
  unsigned char* host = malloc(c_bytes);
  if (!host || cudaMemcpy(host, c, c_bytes, cudaMemcpyDeviceToHost) != cudaSuccess) {
    fprintf(stderr, "copying C back failed\n");
    return 1;
  }
  for (size_t i = 0; i < c_bytes; ++i)
    if (host[i] != 0) {
      fprintf(stderr, "C[%zu] was not written as 0 (byte %u)\n", i / out, host[i]);
      return 1;
    }
  printf("ran on the GPU: C written\n");
  free(host);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: %s TABLE M N K DTYPE LAYOUT\n", argv[0]);
    return 2;
  }
  int gpus = 0;
  int have_gpu = cudaGetDeviceCount(&gpus) == cudaSuccess && gpus > 0;
  gemmtune_options o;
  gemmtune_options_init(&o);
  o.dry_run = !have_gpu;  /* plugins: found by the library beside itself, no path given */
  gemmtune_runtime* rt = NULL;
  gemmtune_status s = gemmtune_create(argv[1], &o, &rt);
  if (s != GEMMTUNE_SUCCESS) return fail("gemmtune_create", s);

  gemmtune_gemm_args g;
  memset(&g, 0, sizeof g);
  g.m = atoll(argv[2]);
  g.n = atoll(argv[3]);
  g.k = atoll(argv[4]);
  g.in_dtype = g.out_dtype = atoi(argv[5]);
  if (g.in_dtype == GEMMTUNE_TF32) g.out_dtype = GEMMTUNE_F32;
  g.layout = atoi(argv[6]);
  int a_t = g.layout == GEMMTUNE_TN || g.layout == GEMMTUNE_TT, b_t = g.layout == GEMMTUNE_NT || g.layout == GEMMTUNE_TT;
  g.lda = a_t ? g.m : g.k;
  g.ldb = b_t ? g.k : g.n;
  g.ldc = g.n;
  int32_t match = -1;
  char config[512], how[512];
  s = gemmtune_choice(rt, &g, &match, config, sizeof config, how, sizeof how);
  if (s != GEMMTUNE_SUCCESS) return fail("gemmtune_choice", s);
  printf("gemmtune %s\nmatch=%d config=%s how=%s\n", gemmtune_version(), (int)match, config, how);
  int rc = have_gpu ? run_once(rt, &g) : (printf("no GPU: looked up as a dry run, nothing launched\n"), 0);
  gemmtune_destroy(rt);
  return rc;
}
