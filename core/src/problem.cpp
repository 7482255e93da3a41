#include "problem.hpp"

#include "errors.hpp"

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
size_t size_of(DType d) { return (d == DType::f16 || d == DType::bf16) ? 2 : 4; }
DType storage_of(DType d) { return d == DType::tf32 ? DType::f32 : d; }

DType parse_dtype(std::string_view s, std::string_view where) {
  for (DType d : {DType::f32, DType::tf32, DType::f16, DType::bf16})
    if (s == to_string(d)) return d;
  throw InputError(fmt::format("{}: unknown dtype '{}' (expected f32, tf32, f16 or bf16)", where, s));
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

Problem Problem::make(int64_t m, int64_t n, int64_t k, DType in, DType out, Layout layout) {
  Problem p;
  p.m = m; p.n = n; p.k = k;
  p.in = in; p.out = out; p.layout = layout;
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
  if (lda < a_cols() || ldb < b_cols() || ldc < n)
    throw InputError(fmt::format("leading dimensions lda={} ldb={} ldc={} are smaller than the rows they hold",
                                 lda, ldb, ldc));
  if (lda > kMaxDim || ldb > kMaxDim || ldc > kMaxDim)
    throw InputError("a leading dimension exceeds 2^31-1");
}

std::string Problem::shape() const { return fmt::format("{}x{}x{}", m, n, k); }

std::string Problem::key() const {
  return fmt::format("{} {}>{} {} a{}", shape(), to_string(in), to_string(out), to_string(layout), align);
}

gt_problem Problem::abi() const {
  gt_problem g{};
  g.m = m; g.n = n; g.k = k;
  g.lda = lda; g.ldb = ldb; g.ldc = ldc;
  g.in_dtype = int32_t(in);
  g.out_dtype = int32_t(out);
  g.layout = int32_t(layout);
  g.align_bytes = align;
  return g;
}

static int32_t pow2_of(uint64_t v) {
  if (v == 0) return 16;
  int32_t r = 1;
  while (r < 16 && v % uint64_t(r * 2) == 0) r *= 2;
  return r;
}

int32_t alignment_of_pointers(uintptr_t a, uintptr_t b, uintptr_t c) {
  return std::min({pow2_of(uint64_t(a)), pow2_of(uint64_t(b)), pow2_of(uint64_t(c))});
}

int32_t alignment_of(const Problem& p, uintptr_t a, uintptr_t b, uintptr_t c) {
  auto pow2 = pow2_of;
  int32_t al = 16;
  for (uint64_t v : {uint64_t(p.lda) * size_of(p.in), uint64_t(p.ldb) * size_of(p.in),
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
}
void from_json(const nlohmann::json& j, Problem& p) {
  try {
    Problem q = Problem::make(j.at("m").get<int64_t>(), j.at("n").get<int64_t>(), j.at("k").get<int64_t>(),
                              parse_dtype(j.at("in").get<std::string>(), "problem.in"),
                              parse_dtype(j.at("out").get<std::string>(), "problem.out"),
                              parse_layout(j.at("layout").get<std::string>(), "problem.layout"));
    if (j.contains("lda")) {
      q.lda = j.at("lda").get<int64_t>();
      q.ldb = j.at("ldb").get<int64_t>();
      q.ldc = j.at("ldc").get<int64_t>();
      q.align = alignment_of(q);
    }
    if (j.contains("align")) q.align = std::min(q.align, j.at("align").get<int32_t>());
    q.validate();
    p = q;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("problem: ") + e.what());
  }
}
}  // namespace gt
