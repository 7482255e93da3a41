#include "base/problem.hpp"

#include "base/errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace gt {

const char* to_string(DType d) {
  switch (d) {
    case DType::f32: return "f32";
    case DType::tf32: return "tf32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::e4m3: return "e4m3";
    case DType::e5m2: return "e5m2";
  }
  return "?";
}
const char* to_string(ScaleMode s) {
  switch (s) {
    case ScaleMode::none: return "none";
    case ScaleMode::tensor: return "tensor";
    case ScaleMode::row: return "row";
    case ScaleMode::block: return "block";
  }
  return "?";
}
const char* to_string(Layout l) {
  switch (l) {
    case Layout::nn: return "nn";
    case Layout::nt: return "nt";
    case Layout::tn: return "tn";
    case Layout::tt: return "tt";
  }
  return "?";
}
size_t size_of(DType d) { return is_fp8(d) ? 1 : (d == DType::f16 || d == DType::bf16) ? 2 : 4; }
double fp8_max(DType d) { return d == DType::e4m3 ? 448.0 : d == DType::e5m2 ? 57344.0 : 0.0; }
DType storage_of(DType d) { return d == DType::tf32 ? DType::f32 : d; }

DType parse_dtype(std::string_view s, std::string_view where) {
  for (DType d : {DType::f32, DType::tf32, DType::f16, DType::bf16, DType::e4m3, DType::e5m2})
    if (s == to_string(d)) return d;
  throw InputError(fmt::format("{}: unknown dtype '{}' (expected f32, tf32, f16, bf16, e4m3 or e5m2)", where, s));
}

std::pair<DType, DType> parse_in_types(std::string_view s, std::string_view where) {
  const size_t colon = s.find(':');
  if (colon == std::string_view::npos) return {parse_dtype(s, where), parse_dtype(s, where)};
  DType a = parse_dtype(s.substr(0, colon), where), b = parse_dtype(s.substr(colon + 1), where);
  if (!is_fp8(a) || !is_fp8(b))
    throw InputError(fmt::format("{}: '{}': only FP8 operands may differ in type (e4m3:e5m2 or e5m2:e4m3)", where, s));
  if (a == DType::e5m2 && b == DType::e5m2)
    throw InputError(fmt::format("{}: '{}': e5m2 x e5m2 has no tensor-core or cuBLASLt path; make one operand e4m3",
                                 where, s));
  return {a, b};
}

std::string in_types_text(DType a, DType b) {
  return a == b ? std::string(to_string(a)) : fmt::format("{}:{}", to_string(a), to_string(b));
}

ScaleMode parse_scale_mode(std::string_view s, std::string_view where) {
  for (ScaleMode m : {ScaleMode::tensor, ScaleMode::row, ScaleMode::block})
    if (s == to_string(m)) return m;
  throw InputError(fmt::format("{}: unknown scale mode '{}' (expected tensor, row or block)", where, s));
}

Layout parse_layout(std::string_view s, std::string_view where) {
  for (Layout l : {Layout::nn, Layout::nt, Layout::tn, Layout::tt})
    if (s == to_string(l)) return l;
  throw InputError(fmt::format("{}: unknown layout '{}' (expected nn, nt, tn or tt)", where, s));
}

std::array<int64_t, 3> parse_shape(std::string_view s, std::string_view where) {
  std::array<int64_t, 3> dims{};
  const char* names = "MNK";
  size_t pos = 0;
  for (int i = 0; i < 3; ++i) {
    size_t end = s.find_first_of("xX", pos);
    if (i < 2 && end == std::string_view::npos)
      throw InputError(fmt::format("{}: '{}' is not a shape; expected MxNxK, e.g. 4096x4096x4096",
                                   where, s));
    if (i == 2) end = s.size();
    std::string_view part = s.substr(pos, end - pos);
    if (part.empty())
      throw InputError(fmt::format("{}: '{}': {} is empty (expected MxNxK)", where, s, names[i]));
    if (part[0] == '-')
      throw InputError(fmt::format("{}: '{}': {} = {} is negative", where, s, names[i], part));
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (ec == std::errc::result_out_of_range)
      throw InputError(fmt::format("{}: '{}': {} = {} is too large (at most {})", where, s,
                                   names[i], part, kMaxDim));
    if (ec != std::errc() || ptr != part.data() + part.size())
      throw InputError(fmt::format("{}: '{}': {} = '{}' is not a whole number", where, s, names[i], part));
    if (v == 0)
      throw InputError(fmt::format("{}: '{}': {} is 0; every dimension must be at least 1", where, s, names[i]));
    if (v > kMaxDim)
      throw InputError(fmt::format("{}: '{}': {} = {} is too large (at most {}: kernels take 32-bit sizes)",
                                   where, s, names[i], v, kMaxDim));
    dims[size_t(i)] = v;
    pos = end + 1;
  }
  return dims;
}

Problem Problem::make(int64_t m, int64_t n, int64_t k, DType in, DType out, Layout layout, std::optional<DType> in_b,
                      std::optional<ScaleMode> scale) {
  Problem p;
  p.m = m; p.n = n; p.k = k;
  p.in = in; p.out = out; p.layout = layout;
  p.in_b = in_b.value_or(in);
  p.scale = scale.value_or(is_fp8(in) ? ScaleMode::tensor : ScaleMode::none);
  p.lda = p.a_trans() ? m : k;
  p.ldb = p.b_trans() ? k : n;
  p.ldc = n;
  p.align = alignment_of(p);
  p.validate();
  return p;
}

void Problem::validate() const {
  for (auto [v, name] : {std::pair{m, "M"}, {n, "N"}, {k, "K"}}) {
    if (v < 1 || v > kMaxDim)
      throw InputError(fmt::format("{} = {} is out of range [1, {}]", name, v, kMaxDim));
  }
  if (out == DType::tf32) throw InputError("output dtype tf32 does not exist; use f32");
  if (is_fp8(in) != is_fp8(in_b) || (!is_fp8(in) && in != in_b))
    throw InputError(fmt::format("A is {} and B is {}: only FP8 operands may differ in type", to_string(in), to_string(in_b)));
  if (fp8()) {
    if (in == DType::e5m2 && in_b == DType::e5m2)
      throw InputError("e5m2 x e5m2 has no tensor-core or cuBLASLt path; make one operand e4m3");
    if (scale == ScaleMode::none)
      throw InputError(fmt::format("{} inputs need a scale mode (tensor, row or block)", in_types_text(in, in_b)));
    if (layout != Layout::nt)
      throw InputError(fmt::format("FP8 multiplies K-major operands only: layout nt (A stored MxK, B stored NxK, as "
                                   "torch._scaled_mm takes them), not {}",
                                   to_string(layout)));
    if (is_fp8(out) && scale != ScaleMode::tensor)
      throw InputError(fmt::format("an FP8 output ({}) takes tensor scales only, not {}", to_string(out), to_string(scale)));
  } else if (scale != ScaleMode::none) {
    throw InputError(fmt::format("scale mode {} is for FP8 inputs; {} takes none", to_string(scale), to_string(in)));
  } else if (is_fp8(out)) {
    throw InputError(fmt::format("an FP8 output ({}) needs FP8 inputs", to_string(out)));
  }
  if (lda < a_cols() || ldb < b_cols() || ldc < n)
    throw InputError(fmt::format("leading dimensions lda={} ldb={} ldc={} are smaller than the rows they hold",
                                 lda, ldb, ldc));
  if (lda > kMaxDim || ldb > kMaxDim || ldc > kMaxDim)
    throw InputError("a leading dimension exceeds 2^31-1");
}

std::string Problem::shape() const { return fmt::format("{}x{}x{}", m, n, k); }

std::string Problem::key() const {
  std::string k = fmt::format("{} {}>{} {} a{}", shape(), in_types_text(in, in_b), to_string(out), to_string(layout), align);
  if (scale != ScaleMode::none) k += fmt::format(" {}", to_string(scale));
  if (constant) k += " const=" + constant_text(constant);
  return k;
}

std::string constant_text(int32_t constant) {
  std::string s;
  if (constant & kConstantA) s = "a";
  if (constant & kConstantB) s += s.empty() ? "b" : ",b";
  return s;
}

int32_t parse_constant(std::string_view s, std::string_view where) {
  if (s.empty() || s == "none") return 0;
  int32_t bits = 0;
  size_t at = 0;
  while (at <= s.size()) {
    size_t end = std::min(s.find(',', at), s.size());
    const std::string_view item = s.substr(at, end - at);
    const int32_t bit = item == "a" ? kConstantA : item == "b" ? kConstantB : 0;
    if (!bit) throw InputError(fmt::format("{}: unknown operand '{}' (expected a, b or a,b: the operands that stay constant "
                                           "from call to call)", where, item));
    if (bits & bit) throw InputError(fmt::format("{}: operand '{}' is named twice", where, item));
    bits |= bit;
    at = end + 1;
  }
  return bits;
}

std::optional<std::string> fp8_device_refusal(const Problem& p, int cc_major, int cc_minor) {
  if (!p.fp8()) return std::nullopt;
  const int cc = cc_major * 10 + cc_minor;
  if (cc < 89)
    return fmt::format("{}: FP8 needs a GPU of compute capability 8.9 or newer (Ada, Hopper); this one is {}.{}",
                       p.key(), cc_major, cc_minor);
  if (p.scale != ScaleMode::tensor && cc != 90)
    return fmt::format("{}: {} scales run on Hopper (compute capability 9.0) only; this GPU is {}.{} (tensor scales "
                       "run here)",
                       p.key(), to_string(p.scale), cc_major, cc_minor);
  return std::nullopt;
}

size_t Problem::scale_count_a() const {
  switch (scale) {
    case ScaleMode::none: return 0;
    case ScaleMode::tensor: return 1;
    case ScaleMode::row: return size_t(m);
    case ScaleMode::block: return size_t(m) * size_t((k + 127) / 128);
  }
  return 0;
}
size_t Problem::scale_count_b() const {
  switch (scale) {
    case ScaleMode::none: return 0;
    case ScaleMode::tensor: return 1;
    case ScaleMode::row: return size_t(n);
    case ScaleMode::block: return size_t((n + 127) / 128) * size_t(block_scale_stride(k));
  }
  return 0;
}

gt_problem Problem::abi() const {
  gt_problem g{};
  g.m = m; g.n = n; g.k = k;
  g.lda = lda; g.ldb = ldb; g.ldc = ldc;
  g.in_dtype = int32_t(in);
  g.out_dtype = int32_t(out);
  g.layout = int32_t(layout);
  g.align_bytes = align;
  g.b_dtype = int32_t(in_b);
  g.scale_mode = int32_t(scale);
  g.align_a = operand_align(GT_OPERAND_A);
  g.align_b = operand_align(GT_OPERAND_B);
  g.align_c = operand_align(GT_OPERAND_C);
  return g;
}

static int32_t pow2_of(uint64_t v) {
  if (v == 0) return 16;
  int32_t r = 1;
  while (r < 16 && v % uint64_t(r * 2) == 0) r *= 2;
  return r;
}

int32_t Problem::pointer_align_of(gt_operand op) const {
  if (operand_pointer_align[op]) return operand_pointer_align[op];  // known: what the key says comes from these
  // The key less aligned than its leading dimensions explain names a misaligned pointer, not which.
  return align < alignment_of(*this) ? std::min(pointer_align, align) : pointer_align;
}

int32_t Problem::operand_align(gt_operand op) const {
  const int64_t ld = op == GT_OPERAND_A ? lda : op == GT_OPERAND_B ? ldb : ldc;
  const DType t = op == GT_OPERAND_A ? in : op == GT_OPERAND_B ? in_b : out;
  // Never below the key's alignment, which is every operand's least (a caller that set the
  // pointers' alignment without the key's is taken at the key's word).
  return std::max(align, std::min(pow2_of(uint64_t(ld) * size_of(t)), pointer_align_of(op)));
}

int32_t alignment_of_pointers(uintptr_t a, uintptr_t b, uintptr_t c) {
  return std::min({pow2_of(uint64_t(a)), pow2_of(uint64_t(b)), pow2_of(uint64_t(c))});
}

int32_t alignment_of(const Problem& p, uintptr_t a, uintptr_t b, uintptr_t c) {
  auto pow2 = pow2_of;
  int32_t al = 16;
  for (uint64_t v : {uint64_t(p.lda) * size_of(p.in), uint64_t(p.ldb) * size_of(p.in_b),
                     uint64_t(p.ldc) * size_of(p.out), uint64_t(a), uint64_t(b), uint64_t(c)})
    al = std::min(al, pow2(v));
  return al;
}

}  // namespace gt

#include <nlohmann/json.hpp>
namespace gt {
void to_json(nlohmann::json& j, const Problem& p) {
  j = {{"m", p.m}, {"n", p.n}, {"k", p.k}, {"in", to_string(p.in)}, {"out", to_string(p.out)},
       {"layout", to_string(p.layout)}, {"lda", p.lda}, {"ldb", p.ldb}, {"ldc", p.ldc}, {"align", p.align}};
  // Written only where they say something, so that older readers read every other problem.
  if (p.in_b != p.in) j["in_b"] = to_string(p.in_b);
  if (p.scale != ScaleMode::none) j["scale"] = to_string(p.scale);
  if (p.constant) j["constant"] = constant_text(p.constant);
}
void from_json(const nlohmann::json& j, Problem& p) {
  try {
    std::optional<DType> in_b;
    std::optional<ScaleMode> scale;
    if (j.contains("in_b")) in_b = parse_dtype(j.at("in_b").get<std::string>(), "problem.in_b");
    if (j.contains("scale")) scale = parse_scale_mode(j.at("scale").get<std::string>(), "problem.scale");
    Problem q = Problem::make(j.at("m").get<int64_t>(), j.at("n").get<int64_t>(), j.at("k").get<int64_t>(),
                              parse_dtype(j.at("in").get<std::string>(), "problem.in"),
                              parse_dtype(j.at("out").get<std::string>(), "problem.out"),
                              parse_layout(j.at("layout").get<std::string>(), "problem.layout"), in_b, scale);
    if (j.contains("lda")) {
      q.lda = j.at("lda").get<int64_t>();
      q.ldb = j.at("ldb").get<int64_t>();
      q.ldc = j.at("ldc").get<int64_t>();
      q.align = alignment_of(q);
    }
    if (j.contains("align")) q.align = std::min(q.align, j.at("align").get<int32_t>());
    if (j.contains("constant")) q.constant = parse_constant(j.at("constant").get<std::string>(), "problem.constant");
    q.validate();
    p = q;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("problem: ") + e.what());
  }
}
}  // namespace gt
