// PyTorch TunableOp results files (`gemmtune export --format tunableop`): the cuBLASLt
// winners of a store in the form PyTorch's TunableOp reads with PYTORCH_TUNABLEOP_FILENAME,
// so that torch.matmul runs the tuned cuBLASLt algorithms with no code at all.
//
// The file, as PyTorch 2.14 and 2.15 read it (aten/src/ATen/cuda/tunable/Tunable.cpp,
// TuningContext::ReadFile): comma-separated lines;
//   Validator,KEY,VALUE         every key PyTorch registers, and no other: PT_VERSION (its
//                               TORCH_VERSION, "2.15.0"), CUBLASLT_VERSION (cublasLtGetVersion()
//                               of the process, "130100"), CUDA_DEVICE ("9.0:NVIDIA H200":
//                               major.minor:name); one mismatch and the whole file is ignored;
//   OP,PARAMS,SOLUTION,TIME     OP "GemmTunableOp_<BFloat16|Half|float|tf32>_<N|T><N|T>",
//                               PARAMS "<t><t>_M_N_K_ld_LDA_LDB_LDC" (GemmParams::Signature),
//                               SOLUTION "Gemm_Cublaslt_id_..._cluster_C" (GemmCublaslt.h: any
//                               algorithm named so is re-created from its attributes and checked
//                               with cublasLtMatmulAlgoCheck), TIME in milliseconds.
// The transposes, sizes and leading dimensions are those of the cuBLAS call PyTorch makes for
// row-major tensors: column-major, with the operands swapped (C^T = B^T A^T), so cuBLAS's
// m is our N, its first operand our B (aten/src/ATen/native/cuda/Blas.cpp, cublasCommonArgs).
//
// FP8 (torch._scaled_mm) rows exist from PyTorch 2.15 on, whose TunableOp first offers cuBLASLt
// algorithms for scaled GEMMs on CUDA (2.14 has only its default there): OP
// "ScaledGemmTunableOp_<A>_<B>_<C>_TN" (A, B: mat1's and mat2's types, Float8_e4m3fn or
// Float8_e5m2; C the output's), PARAMS
// "tn_M_N_K_ld_LDA_LDB_LDC_a_<T>_b_<T>_c_<T>_as_Float_bs_Float_ast_<S>_bst_<S>_dscale_<0|1>_fast_<0|1>_bias_None"
// in cuBLAS's terms (its a is mat2, our B; ScalingType: TensorWise 0, RowWise 1,
// BlockWise1x128 4, BlockWise128x128 5). Read off PyTorch 2.15's headers and library strings,
// not from a file PyTorch wrote: the first GPU run with 2.15 should compare one.
#pragma once

#include "store/store.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gt {

// A cuBLASLt algorithm by its attributes, as the cublaslt family's configs hold them.
struct CublasltAlgo {
  int32_t id = 0;
  uint32_t tile = 0, stages = 0;
  int32_t split_k = 1;
  uint32_t reduction = 0, swizzle = 0, custom = 0;
  uint16_t cluster = 0, inner = 0;
  uint64_t workspace = 0;  // bytes the config lets the algorithm use
  bool fast_accum = false;  // FP8 configs: CUBLASLT_MATMUL_DESC_FAST_ACCUM
};

// The cublaslt family's parameters, in the order of its configs (plugins/cublaslt, family
// version 1.x); tests check them against the plugin's own space.
inline constexpr const char* kCublasltParams[] = {"algo",   "tile",   "stages",  "split_k", "reduction",
                                                  "swizzle", "custom", "cluster", "inner",   "workspace"};

// The attributes of a cublaslt config (values in kCublasltParams order, and an FP8 problem's
// fast_accum after them). nullopt, with the reason in *why, when the config is not one of
// family version 1.x, or its name disagrees with its values.
std::optional<CublasltAlgo> cublaslt_algo_of(const Config& config, const std::string& config_name,
                                             const std::string& family_version, std::string* why);

// "Gemm_Cublaslt_id_66_tile_..._inner_0_cluster_3": the name PyTorch gives the algorithm.
std::string tunableop_solution(const CublasltAlgo& a);

// The TunableOp op and parameter signatures of a problem run as torch.matmul(A, B) on
// freshly allocated row-major tensors (A M×K, B K×N; 't' a transposed view) writing C in the
// input type. nullopt, with why, when PyTorch would key it otherwise: another output type,
// leading dimensions that are not tight, or sizes of 1 that make PyTorch read a transposed
// operand as not transposed.
struct TunableOpKey {
  std::string op;      // "GemmTunableOp_BFloat16_NN"
  std::string params;  // "nn_4096_1_4096_ld_4096_4096_4096"
};
std::optional<TunableOpKey> tunableop_key(const Problem& p, std::string* why);
// The same for an FP8 problem run as torch._scaled_mm(A, B.t(), scale_a, scale_b, out_dtype=...)
// (layout nt; a D scale for an FP8 output; fast_accum as the config has it).
std::optional<TunableOpKey> tunableop_scaled_key(const Problem& p, bool fast_accum, std::string* why);

// "9.0:NVIDIA H200" (the CUDA_DEVICE validator) from a device name and "sm_90"; nullopt
// when the architecture is not sm_<major><minor>.
std::optional<std::string> tunableop_device(const std::string& device_name, const std::string& arch);

// Whether a PT_VERSION ("2.15.0", "2.16.0a0") is at least major.minor.
bool torch_at_least(std::string_view version, int major, int minor);

// The PT_VERSION validator from what --torch-version gives. PyTorch's TORCH_VERSION has no
// local part ("2.15.0", where torch.__version__ says "2.15.0+cu132"), so a "+..." suffix is
// dropped (and *note says so). InputError for a version that is not MAJOR.MINOR.PATCH with
// an optional suffix ("2.16.0a0"), and for PyTorch before 2.14, whose TunableOp cannot run a
// cuBLASLt algorithm named in a file.
std::string tunableop_torch_version(std::string_view given, std::string* note);

struct TunableOpOptions {
  std::string torch_version;    // PT_VERSION: exactly PyTorch's TORCH_VERSION ("2.15.0")
  std::string cublaslt_version;  // CUBLASLT_VERSION; "": the version the rows were tuned with
};

struct TunableOpFile {
  std::string text;
  size_t lines = 0;                 // result lines written
  std::vector<std::string> notes;   // rows left out and why, and what the reader must know
};

// The file for `rows` (cublaslt rows of one device, one per key). InputError when the rows
// span several devices, architectures or cuBLASLt versions without an override, or when no
// row can be written.
TunableOpFile tunableop_file(const std::vector<StoredRow>& rows, const TunableOpOptions& o);

}  // namespace gt
