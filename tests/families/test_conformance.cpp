// The conformance suite: what every kernel family must do, checked the same way for each
// family the build loads (and the `requests` test family, which makes every plugin ABI v2
// request), so that a new family folder is tested without new test code. Per-family test
// files keep only what is particular to their family.
//
// On the CPU: the default config is valid wherever any config is (squares, odd sizes, M = 1,
// K = 1, every type and layout); every suggest() config is valid; can_implement agrees with
// the build; names round-trip; refusals carry a code; a sample compiles with NVRTC for every
// architecture the family claims, and the kernel source compiles on its own (the defaults of
// its defines). cuBLASLt answers without a GPU through its stand-in build.
// On a GPU ([gpu][conformance]): the same sample verifies against float64 for every input,
// output and layout the family runs, at odd shapes, M = 1 and K = 1.
#include "build/compiler.hpp"
#include "gpu/device.hpp"
#include "measure/evaluate.hpp"
#include "build/plugin.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <random>
#include <set>

using namespace gt;

namespace {

struct Combo {
  DType in, out;
  Layout layout;
};

std::vector<Combo> all_combos() {
  std::vector<Combo> v;
  for (auto in : {DType::f32, DType::tf32, DType::f16, DType::bf16})
    for (auto out : {DType::f32, DType::f16, DType::bf16})
      for (auto lay : {Layout::nn, Layout::nt, Layout::tn, Layout::tt}) v.push_back({in, out, lay});
  return v;
}

using Shape = std::array<int64_t, 3>;
// Squares, odd sizes (tails in every dimension; tight leading dimensions of every alignment),
// M = 1 and K = 1.
const std::vector<Shape> kShapes = {{512, 512, 512},   {1000, 1504, 776}, {1100, 1504, 776}, {7, 13, 17},
                                    {1, 4096, 4096},   {64, 4096, 4096},  {4096, 4096, 1},   {33, 65, 4099},
                                    {4096, 4096, 4096}};

// The families under test with a GPU: the build's plugins and the test family. Without one,
// cuBLASLt is its stand-in build (the real library needs the GPU to describe anything).
struct Families {
  std::vector<const Family*> all;
};
const Families& families() {
  static const PluginRegistry build = PluginRegistry::load({test::plugin_dir()});
  static const PluginRegistry extra = [] {
    std::vector<std::filesystem::path> dirs = {test::test_plugin_dir() / "requests"};
    if (!test::have_gpu()) dirs.push_back(test::plugin_dir() / "cublaslt" / "standin");
    return PluginRegistry::load(dirs);
  }();
  static const Families f = [] {
    Families r;
    for (auto& fam : extra.families()) r.all.push_back(&fam);
    for (auto& fam : build.families())
      if (!extra.find(fam.name())) r.all.push_back(&fam);
    // Source families first: a library's fault (in this process, fatal to the context) then
    // cannot hide whether the others verify.
    std::stable_partition(r.all.begin(), r.all.end(), [](const Family* f) { return !f->is_library(); });
    return r;
  }();
  return f;
}

std::string label(const Family& f, const Problem& p) { return f.name() + " " + p.key(); }

// A space for the problem, or nullopt when the family cannot describe one (cuBLASLt refusing
// the types, say).
std::optional<Space> space_of(const Family& f, const Problem& p, const gt_device& d) {
  try {
    return f.space(p, d);
  } catch (const RuntimeFailure&) {
    return std::nullopt;
  }
}

// Some valid config of the space, if there is one. A refusal of the problem itself (its types,
// layout or architecture) is checked on a sample; any other by enumeration.
std::optional<Config> any_valid(const Family& f, const Space& s, const Problem& p, const gt_device& d, gt_refusal why) {
  const bool whole_problem = why == GT_REFUSAL_DTYPE || why == GT_REFUSAL_LAYOUT || why == GT_REFUSAL_ARCH;
  const uint64_t n = s.raw_size();
  const uint64_t step = whole_problem ? std::max<uint64_t>(1, n / 97) : 1;
  for (uint64_t i = 0; i < n; i += step)
    if (Config c = s.at(i); !f.refusal(p, c, d)) return c;
  return std::nullopt;
}

// The problems of the family that its default serves on `arch`: (combo, shape) pairs.
std::vector<Problem> served(const Family& f, const gt_device& d) {
  std::vector<Problem> out;
  for (auto& c : all_combos())
    for (auto& sh : kShapes) {
      Problem p = Problem::make(sh[0], sh[1], sh[2], c.in, c.out, c.layout);
      auto s = space_of(f, p, d);
      if (s && !f.refusal(p, s->default_config(), d)) out.push_back(p);
    }
  return out;
}

// A deterministic sample of raw points (valid or not) of a space.
std::vector<Config> raw_sample(const Space& s, size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Config> v;
  const uint64_t n = s.raw_size();
  for (size_t i = 0; i < count && n > 0; ++i) v.push_back(s.at(rng() % n));
  return v;
}

}  // namespace

TEST_CASE("conformance: the families under test load, each with a space and a default", "[conformance]") {
  const auto& fams = families();
  REQUIRE(fams.all.size() >= 9);  // the build's eight families and the test family
  std::set<std::string> names;
  for (auto* f : fams.all) names.insert(f->name());
  for (auto n : {"naive", "shared_tile", "register_tile", "wmma", "skinny", "skinny_mma", "cublaslt", "wgmma_tma",
                 "requests"}) {
    INFO(n);
    CHECK(names.count(n) == 1);
  }
  for (auto* f : fams.all) {
    INFO(f->name());
    CHECK_FALSE(f->version().empty());
    CHECK_FALSE(f->summary().empty());
    CHECK_FALSE(served(*f, arch_limits("sm_90")).empty());
  }
}

TEST_CASE("conformance: the default config is valid wherever any config is", "[conformance]") {
  const gt_device d = arch_limits("sm_90");
  for (auto* f : families().all)
    for (auto& c : all_combos())
      for (auto& sh : kShapes) {
        Problem p = Problem::make(sh[0], sh[1], sh[2], c.in, c.out, c.layout);
        auto s = space_of(*f, p, d);
        if (!s) continue;
        auto why = f->refusal(p, s->default_config(), d);
        if (!why) continue;
        INFO(label(*f, p) << ": the default " << s->name(s->default_config()) << " is refused: " << why->why);
        CHECK(why->code != GT_REFUSAL_NONE);
        auto other = any_valid(*f, *s, p, d, why->code);
        CHECK_FALSE(other);
        if (other) WARN("but " << s->name(*other) << " is valid");
      }
}

TEST_CASE("conformance: suggestions are valid, can_implement agrees with the build, names round-trip, refusals "
          "carry codes",
          "[conformance]") {
  const gt_device d = arch_limits("sm_90");
  for (auto* f : families().all) {
    auto problems = served(*f, d);
    // A few of the problems it serves: the first, the last and one between (types and shapes vary).
    std::vector<Problem> pick = {problems.front(), problems[problems.size() / 2], problems.back()};
    size_t refusals = 0, valid = 0;
    for (auto& p : pick) {
      Space s = f->space(p, d);
      for (auto& c : f->suggest(p, d, 32, s.dims())) {
        INFO(label(*f, p) << " suggests " << s.name(c) << ": " << s.check(c).value_or("valid"));
        CHECK(s.valid(c));
      }
      for (auto& c : raw_sample(s, 120, std::hash<std::string>{}(label(*f, p)))) {
        const std::string name = s.name(c);
        INFO(label(*f, p) << " " << name);
        std::string err;
        CHECK(s.parse(name, &err) == c);
        CHECK(s.parse(s.assignments(c), &err) == c);
        auto why = f->refusal(p, c, d);
        if (why) {
          ++refusals;
          CHECK(why->code > GT_REFUSAL_NONE);
          CHECK(why->code < GT_REFUSAL_COUNT);
          CHECK_FALSE(why->why.empty());
        } else {
          ++valid;
        }
        if (f->is_library()) continue;
        Refused built_why;
        auto ks = f->build(p, c, d, &built_why);
        CHECK(ks.has_value() == !why);
        if (why && !ks) CHECK(built_why.code == why->code);
        if (ks) CHECK(f->build_hash(p, c, d) == build_hash(*ks));
      }
    }
    INFO(f->name() << ": " << valid << " valid and " << refusals << " refused in the sample");
    CHECK(valid + refusals > 0);
  }
}

TEST_CASE("conformance: every source family's kernels compile for each architecture it claims", "[conformance][compile]") {
  // Per family and claimed architecture (sm_80, sm_90, sm_90a: where its default serves a
  // problem), the default, two suggestions and two other valid configs of one problem, and the
  // kernel source alone with no options (every define has a default). Each compiles, reports
  // registers, and spills nothing.
  for (auto* f : families().all) {
    if (f->is_library()) continue;
    test::CompileSample sample(*f);
    size_t claimed = 0;
    const char* source = nullptr;
    std::string kernel_name;
    for (std::string arch : {"sm_80", "sm_90", "sm_90a"}) {
      const gt_device d = arch_limits(arch);
      auto problems = served(*f, d);
      if (problems.empty()) continue;
      ++claimed;
      const Problem& p = problems.front();
      Space s = f->space(p, d);
      std::vector<Config> cs = {s.default_config()};
      for (auto& c : f->suggest(p, d, 2, s.dims())) cs.push_back(c);
      size_t others = 0;
      for (auto& c : raw_sample(s, 400, 7))
        if (others < 2 && s.valid(c) && std::find(cs.begin(), cs.end(), c) == cs.end()) cs.push_back(c), ++others;
      for (auto& c : cs) {
        INFO(f->name() << " " << arch << " " << s.name(c));
        REQUIRE(sample.add(p, c, arch).empty());
      }
      if (!source) {
        auto ks = f->build(p, s.default_config(), d, nullptr);
        REQUIRE(ks);
        source = ks->source;
        kernel_name = ks->kernel_name;
        // The source on its own, for the architecture the build compiles for.
        CompileRequest alone;
        alone.source = source;
        alone.source_name = ks->source_name;
        alone.kernel_name = kernel_name;
        alone.arch = ks->compile_arch(arch);
        alone.family = f->name() + "-alone";
        Compiler compiler(nullptr);
        CompileResult r = compiler.compile(alone);
        INFO(f->name() << ": the kernel source with no options, for " << alone.arch << "\n" << r.log);
        CHECK(r.ok);
      }
    }
    INFO(f->name());
    CHECK(claimed > 0);
    for (auto& j : sample.results()) {
      INFO(j.what << "\n" << j.result.log);
      REQUIRE(j.result.ok);
      CHECK(j.result.res.registers > 0);
      CHECK(j.result.res.spill_stores == 0);
      CHECK(j.result.res.spill_loads == 0);
    }
  }
}

TEST_CASE("conformance: every family verifies against float64 at every type and layout it runs, odd shapes, M = 1 "
          "and K = 1",
          "[gpu][conformance]") {
  GT_REQUIRE_GPU();
  const DeviceInfo dev = device_info(0);
  const gt_device& d = dev.limits;
  // Odd shapes small enough to verify quickly: tails in every dimension, M = 1, K = 1.
  const std::vector<Shape> shapes = {{1000, 1504, 776}, {1100, 1504, 776}, {7, 13, 17}, {1, 1504, 1000},
                                     {256, 512, 1},     {33, 65, 1031}};
  for (auto* f : families().all) {
    std::vector<std::pair<Problem, Config>> jobs;
    size_t turn = 0;
    for (auto& c : all_combos())
      for (auto& sh : shapes) {
        Problem p = Problem::make(sh[0], sh[1], sh[2], c.in, c.out, c.layout);
        auto s = space_of(*f, p, d);
        if (!s) continue;
        // The default everywhere; in turn one suggestion and a sampled valid config beside it.
        // A library family's sample is its suggestions (cuBLASLt: its heuristic's picks): a
        // config of cuBLASLt's algorithm space that AlgoCheck accepts can still fault (seen on
        // the H200: algo 21, tile 64x64, tf32 in, f16 out, 1000x1504x776), and in this process
        // a fault ends the test; the tuner measures such configs in an isolated worker.
        std::vector<Config> cs = {s->default_config()};
        auto sug = f->suggest(p, d, 4, s->dims());
        if (!sug.empty()) cs.push_back(sug[turn % sug.size()]);
        if (!f->is_library())
          for (auto& c2 : raw_sample(*s, 8, turn))
            if (s->valid(c2)) {
              cs.push_back(c2);
              break;
            }
        ++turn;
        for (auto& cfg : cs)
          if (!f->refusal(p, cfg, d)) jobs.emplace_back(p, cfg);
      }
    INFO(f->name() << ": " << jobs.size() << " checks");
    CHECK_FALSE(jobs.empty());
    test::check_correct(*f, jobs);
  }
}
