// PyTorch TunableOp results files; the format and PyTorch's rules are at the top of
// tunableop.hpp.
#include "table/tunableop.hpp"

#include "base/errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <regex>
#include <set>

namespace gt {

namespace {

template <class T>
bool fits(int64_t v) {
  return v >= int64_t(std::numeric_limits<T>::min()) && uint64_t(v) <= uint64_t(std::numeric_limits<T>::max());
}

// The name spells the numeric parameters; they must agree with the values, or the values
// are not in the order this file reads them in.
bool name_agrees(const std::string& name, const CublasltAlgo& a) {
  auto has = [&name](const std::string& part) { return name.find(part) != std::string::npos; };
  return name.rfind(fmt::format("cublaslt_algo{}_", a.id), 0) == 0 && has(fmt::format("_split_k{}_", a.split_k)) &&
         has(fmt::format("_swizzle{}_custom{}_", a.swizzle, a.custom));
}

}  // namespace

std::optional<CublasltAlgo> cublaslt_algo_of(const Config& c, const std::string& config_name,
                                             const std::string& family_version, std::string* why) {
  auto refuse = [why](std::string s) -> std::optional<CublasltAlgo> {
    if (why) *why = std::move(s);
    return std::nullopt;
  };
  if (family_version.rfind("1.", 0) != 0)
    return refuse(fmt::format("cublaslt family version '{}' is not 1.x, whose parameters this export reads",
                              family_version));
  constexpr size_t n = std::size(kCublasltParams);
  if (c.size() != n && c.size() != n + 1)
    return refuse(fmt::format("the config has {} values, cublaslt 1.x configs have {} ({} with FP8's fast_accum)",
                              c.size(), n, n + 1));
  enum { kAlgo, kTile, kStages, kSplitK, kReduction, kSwizzle, kCustom, kCluster, kInner, kWorkspace };
  if (!fits<int32_t>(c[kAlgo]) || !fits<uint32_t>(c[kTile]) || !fits<uint32_t>(c[kStages]) ||
      !fits<int32_t>(c[kSplitK]) || c[kSplitK] < 1 || !fits<uint32_t>(c[kReduction]) || !fits<uint32_t>(c[kSwizzle]) ||
      !fits<uint32_t>(c[kCustom]) || !fits<uint16_t>(c[kCluster]) || !fits<uint16_t>(c[kInner]) || c[kWorkspace] < 0)
    return refuse("a value is out of the range of its cuBLASLt attribute");
  CublasltAlgo a;
  a.id = int32_t(c[kAlgo]);
  a.tile = uint32_t(c[kTile]);
  a.stages = uint32_t(c[kStages]);
  a.split_k = int32_t(c[kSplitK]);
  a.reduction = uint32_t(c[kReduction]);
  a.swizzle = uint32_t(c[kSwizzle]);
  a.custom = uint32_t(c[kCustom]);
  a.cluster = uint16_t(c[kCluster]);
  a.inner = uint16_t(c[kInner]);
  a.workspace = uint64_t(c[kWorkspace]);
  a.fast_accum = c.size() > n && c[n] != 0;
  if (!name_agrees(config_name, a))
    return refuse(fmt::format("its name {} does not spell its values (algo {}, split_k {}, swizzle {}, custom {})",
                              config_name, a.id, a.split_k, a.swizzle, a.custom));
  return a;
}

std::string tunableop_solution(const CublasltAlgo& a) {
  // GemmCublaslt.h, CublasltAlgoConfigName (cuBLAS >= 12: inner and cluster shapes too).
  return fmt::format("Gemm_Cublaslt_id_{}_tile_{}_stages_{}_splitk_{}_red_{}_swizzle_{}_custom_{}_inner_{}_cluster_{}",
                     a.id, a.tile, a.stages, a.split_k, a.reduction, a.swizzle, a.custom, a.inner, a.cluster);
}

namespace {

// PyTorch's Tensor::is_contiguous for a matrix: strides of size-1 dimensions do not count.
bool contiguous(std::array<int64_t, 2> size, std::array<int64_t, 2> stride) {
  int64_t expected = 1;
  for (int d = 1; d >= 0; --d) {
    if (size[d] == 1) continue;
    if (stride[d] != expected) return false;
    expected *= size[d];
  }
  return true;
}

// How cublasCommonArgs passes one operand of a row-major result (transpose_result is true
// then): transposed when the tensor is not contiguous, with the stride of dimension 1 as
// its leading dimension, else the stride of dimension 0. Holds for dense tensors, which
// tight ones are.
struct CublasOperand {
  char op;  // 'n' or 't'
  int64_t ld;
};
CublasOperand cublas_operand(std::array<int64_t, 2> size, std::array<int64_t, 2> stride) {
  bool trans = !contiguous(size, stride);
  return {trans ? 't' : 'n', trans ? stride[1] : stride[0]};
}

const char* torch_type_name(DType in) {
  switch (in) {
    case DType::f32: return "float";  // TypeName<float> without TF32 (PyTorch >= 2.14)
    case DType::tf32: return "tf32";  // ... with TF32 matmuls allowed
    case DType::f16: return "Half";
    case DType::bf16: return "BFloat16";
    case DType::e4m3: return "Float8_e4m3fn";
    case DType::e5m2: return "Float8_e5m2";
  }
  return "?";
}

char upper(char c) { return c == 't' ? 'T' : 'N'; }

}  // namespace

std::optional<TunableOpKey> tunableop_key(const Problem& p, std::string* why) {
  auto refuse = [why](std::string s) -> std::optional<TunableOpKey> {
    if (why) *why = std::move(s);
    return std::nullopt;
  };
  if (p.out != Problem::default_out(p.in))
    return refuse(fmt::format("writes C as {} from {} inputs; PyTorch's TunableOp GEMM writes C in the input type",
                              to_string(p.out), to_string(p.in)));
  Problem tight = Problem::make(p.m, p.n, p.k, p.in, p.out, p.layout);
  if (p.lda != tight.lda || p.ldb != tight.ldb || p.ldc != tight.ldc)
    return refuse(fmt::format("was tuned with leading dimensions lda={} ldb={} ldc={}, not the tight ones of fresh "
                              "tensors ({} {} {})",
                              p.lda, p.ldb, p.ldc, tight.lda, tight.ldb, tight.ldc));
  if (p.align != tight.align)
    return refuse(fmt::format("was tuned for {}-byte alignment; PyTorch's tensors of this shape are {}-byte aligned",
                              p.align, tight.align));
  // Our A (M×K) and B (K×N) as PyTorch holds them: 'n' row-major, 't' a transposed view of
  // a row-major K×M (N×K) tensor.
  std::array<int64_t, 2> a_stride = p.a_trans() ? std::array<int64_t, 2>{1, p.m} : std::array<int64_t, 2>{p.k, 1};
  std::array<int64_t, 2> b_stride = p.b_trans() ? std::array<int64_t, 2>{1, p.k} : std::array<int64_t, 2>{p.n, 1};
  // cuBLAS computes C^T (N×M) = B^T A^T: its first operand is B, its second A.
  CublasOperand first = cublas_operand({p.k, p.n}, b_stride);
  CublasOperand second = cublas_operand({p.m, p.k}, a_stride);
  if ((first.op == 't') != p.b_trans() || (second.op == 't') != p.a_trans())
    return refuse(fmt::format("has a size of 1 that makes PyTorch pass the transposed operand of layout {} as not "
                              "transposed, a problem cuBLASLt was not asked here",
                              to_string(p.layout)));
  TunableOpKey key;
  key.op = fmt::format("GemmTunableOp_{}_{}{}", torch_type_name(p.in), upper(first.op), upper(second.op));
  // GemmParams::Signature: transa transb _ m _ n _ k _ld_ lda _ ldb _ ldc, in cuBLAS's terms.
  key.params = fmt::format("{}{}_{}_{}_{}_ld_{}_{}_{}", first.op, second.op, p.n, p.m, p.k, first.ld, second.ld, p.n);
  return key;
}

std::optional<TunableOpKey> tunableop_scaled_key(const Problem& p, bool fast_accum, std::string* why) {
  auto refuse = [why](std::string s) -> std::optional<TunableOpKey> {
    if (why) *why = std::move(s);
    return std::nullopt;
  };
  if (!p.fp8()) return refuse(fmt::format("{} is not an FP8 problem", p.key()));
  // torch._scaled_mm takes A row-major and B column-major (a transposed N x K weight): nt, tight.
  const Problem tight = Problem::make(p.m, p.n, p.k, p.in, p.out, p.layout, p.in_b, p.scale);
  if (p.lda != tight.lda || p.ldb != tight.ldb || p.ldc != tight.ldc || p.align != tight.align)
    return refuse(fmt::format("was tuned with leading dimensions lda={} ldb={} ldc={} (a{}), not those of fresh "
                              "tensors ({} {} {})",
                              p.lda, p.ldb, p.ldc, p.align, tight.lda, tight.ldb, tight.ldc));
  // ScalingType of each operand as cuBLAS sees them: its a is our B (128x128 blocks), its b our A (1x128).
  auto scaling = [&](bool weights) {
    switch (p.scale) {
      case ScaleMode::row: return 1;
      case ScaleMode::block: return weights ? 5 : 4;
      default: return 0;
    }
  };
  TunableOpKey key;
  key.op = fmt::format("ScaledGemmTunableOp_{}_{}_{}_TN", torch_type_name(p.in), torch_type_name(p.in_b),
                       torch_type_name(p.out));
  key.params = fmt::format("tn_{}_{}_{}_ld_{}_{}_{}_a_{}_b_{}_c_{}_as_Float_bs_Float_ast_{}_bst_{}_dscale_{}_fast_{}_bias_None",
                           p.n, p.m, p.k, p.ldb, p.lda, p.ldc, torch_type_name(p.in_b), torch_type_name(p.in),
                           torch_type_name(p.out), scaling(true), scaling(false), is_fp8(p.out) ? 1 : 0,
                           fast_accum ? 1 : 0);
  return key;
}

bool torch_at_least(std::string_view version, int major, int minor) {
  static const std::regex form(R"((\d+)\.(\d+).*)");
  std::cmatch m;
  if (!std::regex_match(version.begin(), version.end(), m, form)) return false;
  const int a = std::stoi(m[1].str()), b = std::stoi(m[2].str());
  return a > major || (a == major && b >= minor);
}

std::optional<std::string> tunableop_device(const std::string& device_name, const std::string& arch) {
  static const std::regex sm(R"(sm_(\d+)(\d)[a-z]?)");
  std::smatch m;
  if (!std::regex_match(arch, m, sm)) return std::nullopt;
  return fmt::format("{}.{}:{}", m[1].str(), m[2].str(), device_name);
}

std::string tunableop_torch_version(std::string_view given, std::string* note) {
  std::string v(given);
  if (size_t plus = v.find('+'); plus != std::string::npos) {
    if (note)
      *note = fmt::format("--torch-version: PyTorch's PT_VERSION is '{}' ('{}' without its local part)", v.substr(0, plus),
                          v);
    v.resize(plus);
  }
  static const std::regex form(R"((\d{1,4})\.(\d{1,4})\.\d{1,4}[0-9A-Za-z.]{0,32})");
  std::smatch m;
  if (!std::regex_match(v, m, form))
    throw InputError(fmt::format("--torch-version: '{}' is not a PyTorch version such as 2.15.0", given));
  int major = std::stoi(m[1].str()), minor = std::stoi(m[2].str());
  if (major < 2 || (major == 2 && minor < 14))
    throw InputError(fmt::format("--torch-version: PyTorch {} cannot run cuBLASLt algorithms named in a TunableOp "
                                 "file; that came with PyTorch 2.14",
                                 v));
  return v;
}

namespace {

// The cuBLASLt version a row was tuned with: the cublaslt family's version carries it
// ("1.0+cublasLt130100").
std::optional<std::string> tuned_cublaslt_version(const StoredRow& r) {
  static const std::regex v(R"(cublasLt(\d+))", std::regex::icase);
  std::smatch m;
  for (const std::string* s : {&r.prov.family_version, &r.prov.library})
    if (std::regex_search(*s, m, v)) return m[1].str();
  return std::nullopt;
}

// The one value every row has, or InputError naming all of them.
std::string the_one(const std::map<std::string, size_t>& seen, const std::string& what, const std::string& hint) {
  if (seen.size() == 1) return seen.begin()->first;
  std::string all;
  for (auto& [v, n] : seen) all += fmt::format("{}'{}' ({} row{})", all.empty() ? "" : ", ", v, n, n == 1 ? "" : "s");
  throw InputError(fmt::format("--format tunableop: one file serves one {}; the rows have {}{}", what, all, hint));
}

}  // namespace

TunableOpFile tunableop_file(const std::vector<StoredRow>& rows, const TunableOpOptions& o) {
  if (o.torch_version.empty()) throw InputError("--torch-version: the PyTorch version that reads the file is needed");
  TunableOpFile f;
  std::map<std::string, size_t> devices, versions;
  std::vector<std::string> lines;
  std::set<std::pair<std::string, std::string>> keys;
  uint64_t max_workspace = 0;
  for (const StoredRow& r : rows) {
    std::string why;
    if (r.transform != Transform::none) {
      // TunableOp re-creates a cuBLASLt algorithm for the problem PyTorch has; it has no way to
      // copy operands into padded buffers or exchange them first.
      f.notes.push_back(fmt::format("left out {}: its cuBLASLt winner {} runs through the transform '{}', which a "
                                    "TunableOp file cannot express (PyTorch runs its own choice there)",
                                    r.key().text(), r.config_name, to_string(r.transform)));
      continue;
    }
    if (r.problem.fp8() && !torch_at_least(o.torch_version, 2, 15)) {
      f.notes.push_back(fmt::format("left out {}: PyTorch {}'s TunableOp has no cuBLASLt algorithms for "
                                    "torch._scaled_mm (its FP8 GEMM); PyTorch 2.15 has",
                                    r.key().text(), o.torch_version));
      continue;
    }
    auto algo = cublaslt_algo_of(r.config, r.config_name, r.prov.family_version, &why);
    auto key = !algo                ? std::nullopt
               : r.problem.fp8() ? tunableop_scaled_key(r.problem, algo->fast_accum, &why)
                                 : tunableop_key(r.problem, &why);
    auto device = tunableop_device(r.prov.device_name, r.prov.arch);
    if (key && !device) why = fmt::format("its architecture '{}' is not sm_<major><minor>", r.prov.arch);
    if (!key || !device) {
      f.notes.push_back(fmt::format("left out {}: {}", r.key().text(), why));
      continue;
    }
    if (!keys.insert({key->op, key->params}).second) {
      f.notes.push_back(fmt::format("left out {}: another row already has PyTorch's key {} {}", r.key().text(), key->op,
                                    key->params));
      continue;
    }
    ++devices[*device];
    if (auto v = tuned_cublaslt_version(r)) ++versions[*v];
    max_workspace = std::max(max_workspace, algo->workspace);
    lines.push_back(fmt::format("{},{},{},{}", key->op, key->params, tunableop_solution(*algo), r.m.time_us() / 1e3));
  }
  if (lines.empty())
    throw InputError("--format tunableop: no cuBLASLt result can be written (TunableOp runs cuBLASLt algorithms "
                     "only)" + std::string(f.notes.empty() ? "" : "; " + f.notes.front()));
  std::string device = the_one(devices, "device", " (name one with --device)");
  std::string cublaslt = o.cublaslt_version;
  if (cublaslt.empty()) {
    if (versions.empty())
      throw InputError("--format tunableop: the rows do not say which cuBLASLt they were tuned with; give "
                       "--cublaslt-version");
    cublaslt = the_one(versions, "cuBLASLt version", " (give --cublaslt-version to write one anyway)");
  } else if (versions.size() != 1 || versions.begin()->first != cublaslt) {
    std::string tuned;
    for (auto& [v, n] : versions) tuned += (tuned.empty() ? "" : ", ") + v;
    f.notes.push_back(fmt::format("the file claims cuBLASLt {}; the algorithms were tuned with {}: their ids and "
                                  "speed may differ there",
                                  cublaslt, tuned.empty() ? "an unknown version" : tuned));
  }
  // PyTorch writes its validators first, then the results; the order of the results does
  // not matter to it. Sorted here so that the same store gives the same file.
  std::sort(lines.begin(), lines.end());
  f.text = fmt::format("Validator,PT_VERSION,{}\nValidator,CUBLASLT_VERSION,{}\nValidator,CUDA_DEVICE,{}\n",
                       o.torch_version, cublaslt, device);
  for (auto& l : lines) f.text += l + "\n";
  f.lines = lines.size();
  if (max_workspace > 0)
    f.notes.push_back(fmt::format("some algorithms may use up to {} MiB of cuBLASLt workspace; PyTorch refuses one "
                                  "that needs more than its own (CUBLASLT_WORKSPACE_SIZE, in KiB)",
                                  double(max_workspace) / double(1 << 20)));
  return f;
}

}  // namespace gt
