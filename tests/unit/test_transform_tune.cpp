// Transforms in the tune (a toy family on a stand-in GPU): a misaligned problem explored padded
// beside plain with one re-timing deciding, round against pad, each form's own budget and stop
// reason, and constant operands from the tune to the table and the runtime. CPU only.
#include <nlohmann/json.hpp>

#include "measure/bench.hpp"
#include "build/compiler.hpp"
#include "base/errors.hpp"
#include "tune/forms.hpp"
#include "tune/tuner.hpp"
#include "gemmtune_runtime.h"
#include "gemmtune_runtime.hpp"
#include "build/plugin.hpp"
#include "store/store.hpp"
#include "table/table.hpp"
#include "test_util.hpp"
#include "transform/transform.hpp"
#include "unit/transform_fixtures.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

using namespace gt;
namespace fs = std::filesystem;
using namespace gt::transform_test;

namespace {
// A GPU stand-in for the tune: a toy family (one knob x = 0..7, default 5) whose time depends on
// x and on the transform it runs through, the same in exploration and re-timing; it records
// what it was asked.
class FormsMeasurer : public Measurer {
 public:
  explicit FormsMeasurer(std::function<double(const Candidate&)> us) : us_(std::move(us)) { dev_.name = "Test GPU"; }
  std::string describe() const override { return "forms stand-in"; }
  const DeviceInfo& device() const override { return dev_; }
  void set_problem(const Problem&, Distribution, uint64_t) override {}
  Measurement measure(const Candidate& c, bool quick) override {
    measured.push_back(c);
    Measurement m;
    m.quick = quick;
    m.time = test::flat_stats(us_(c));
    return m;
  }
  double settle(const Candidate&, double) override { return 0; }
  Retimed retime(const std::vector<Candidate>& cs, const Interleave&, uint64_t) override {
    retimings.push_back(cs);
    std::vector<Stats> out;
    for (auto& c : cs) out.push_back(test::flat_stats(us_(c)));
    return out;
  }
  std::vector<Candidate> measured;
  std::vector<std::vector<Candidate>> retimings;

 private:
  DeviceInfo dev_;
  std::function<double(const Candidate&)> us_;
};

search::SpaceSource toy_spaces() {
  return [](const std::string& fam, const Problem&) {
    return Space(fam, "1.0", {Param{"x", "a knob", {0, 1, 2, 3, 4, 5, 6, 7}, {}, 5}});
  };
}
search::TuneOptions toy_tune() {
  search::TuneOptions o;
  o.strategy = "exhaustive";
  o.finalists = 2;
  o.settle_s = 0;
  o.tune_id = "forms";
  return o;
}
}  // namespace

TEST_CASE("transforms in the tune: a misaligned problem is explored padded beside plain, one re-timing decides",
          "[transform][tune]") {
  const Problem cliff = Problem::make(4097, 4097, 4097, DType::f16, DType::f16, Layout::nn);
  // Plain: 100 + x us; padded: 60 + x us (the copies included), except where a test says.
  double pad_base = 60;
  FormsMeasurer meas([&](const Candidate& c) {
    return (c.transform == Transform::pad ? pad_base : 100.0) + double(c.config[0]);
  });
  test::TempDir d;
  Store store = Store::open(d.path / "store.db");
  search::Tuner t(nullptr, meas, &store, nullptr, toy_spaces(), test::toy_provenance, toy_tune());
  search::ProblemOutcome po = t.tune(cliff, {"toy"});
  REQUIRE(po.families.size() == 1);
  const search::FamilyOutcome& f = po.families[0];
  REQUIRE(f.forms.size() == 2);  // plain and pad; swap cannot serve a matrix C, pad+swap is not needed
  CHECK(f.forms[0].transform == Transform::none);
  CHECK(f.forms[1].transform == Transform::pad);
  CHECK_THAT(f.forms[1].plan, Catch::Contains("K 4097 -> 4104"));
  CHECK(f.forms[0].evaluated == 8);
  CHECK(f.forms[1].evaluated == 8);
  CHECK(f.evaluated == 16);
  // One re-timing holds both forms: the fastest of each, and the plain baseline (x = 5).
  REQUIRE(meas.retimings.size() >= 1);
  std::set<std::string> retimed;
  for (auto& c : meas.retimings[0]) retimed.insert(transformed_name("toy_x" + std::to_string(c.config[0]), c.transform));
  CHECK(retimed.count("toy_x5"));
  CHECK(retimed.count("toy_x0"));
  CHECK(retimed.count("toy_x0+pad"));
  REQUIRE(f.best);
  CHECK(f.best_transform == Transform::pad);
  CHECK(f.best_name == "toy_x0+pad");
  CHECK(*f.best == Config{0});
  // Stored: each form's rows under their own names, hashes and transform; the winner is the padded row.
  RowFilter padded;
  padded.transform = Transform::pad;
  CHECK(store.count(padded) >= 8);
  auto w = store.winner(ResultKey::of("Test GPU", cliff), "toy");
  REQUIRE(w);
  CHECK(w->config_name == "toy_x0+pad");
  CHECK(w->transform == Transform::pad);
  std::set<std::string> plain_hashes, pad_hashes;
  for (auto& r : store.rows()) {
    CHECK((r.transform == Transform::pad) == r.config_name.ends_with("+pad"));
    (r.transform == Transform::pad ? pad_hashes : plain_hashes).insert(r.config_hash);
  }
  CHECK(plain_hashes.size() == 8);
  CHECK(pad_hashes.size() == 8);
  for (auto& h : pad_hashes) CHECK_FALSE(plain_hashes.count(h));  // x = 0 padded is not x = 0

  SECTION("a warm re-tune reuses both forms and keeps the winner") {
    meas.measured.clear();
    search::Tuner again(nullptr, meas, &store, nullptr, toy_spaces(), test::toy_provenance, toy_tune());
    search::ProblemOutcome po2 = again.tune(cliff, {"toy"});
    CHECK(meas.measured.empty());
    CHECK(po2.families[0].reused == 16);
    CHECK(po2.families[0].best_name == "toy_x0+pad");
  }
  SECTION("a padded config 7 % faster than the plain baseline keeps it under a 10 % margin") {
    pad_base = 104 - 5 - 1.05;  // padded x = 0 at 97.95 us against the baseline's 105: 7 % ...
    search::TuneOptions o = toy_tune();
    o.min_gain = 0.1;           // ... under a 10 % margin
    search::Tuner margin(nullptr, meas, nullptr, nullptr, toy_spaces(), test::toy_provenance, o);
    search::ProblemOutcome pm = margin.tune(cliff, {"toy"});
    CHECK(pm.families[0].best_name == "toy_x5");
    CHECK(pm.families[0].decision.runner_up == "toy_x0+pad");
  }
  SECTION("--transforms none explores the plain problem only; an aligned problem needs no pad") {
    search::TuneOptions o = toy_tune();
    o.transforms = search::TransformPolicy::parse("none");
    search::Tuner plain(nullptr, meas, nullptr, nullptr, toy_spaces(), test::toy_provenance, o);
    CHECK(plain.tune(cliff, {"toy"}).families[0].forms.size() == 1);
    search::Tuner aligned(nullptr, meas, nullptr, nullptr, toy_spaces(), test::toy_provenance, toy_tune());
    const Problem a16 = Problem::make(4096, 4096, 4096, DType::f16, DType::f16, Layout::nn);
    auto fa = aligned.tune(a16, {"toy"}).families[0];
    CHECK(fa.forms.size() == 1);
    CHECK(fa.best_transform == Transform::none);
  }
  SECTION("a list names the forms; those that cannot serve are reported with the reason") {
    search::TuneOptions o = toy_tune();
    o.transforms = search::TransformPolicy::parse("swap,pad+swap");
    search::Tuner listed(nullptr, meas, nullptr, nullptr, toy_spaces(), test::toy_provenance, o);
    auto fl = listed.tune(cliff, {"toy"}).families[0];
    REQUIRE(fl.forms.size() == 5);
    CHECK_THAT(fl.forms[1].skipped, Catch::Contains("not asked for"));
    CHECK(fl.forms[2].transform == Transform::round);
    CHECK_THAT(fl.forms[2].skipped, Catch::Contains("not asked for"));
    CHECK_THAT(fl.forms[3].skipped, Catch::Contains("single row (M = 1)"));
    CHECK(fl.forms[4].skipped.empty());
    CHECK(fl.forms[4].evaluated == 8);
  }
}

TEST_CASE("transforms: round copies B too where pad leaves K odd, and the tune explores both", "[transform][tune]") {
  // 4096x4096x4097 bf16 nn: A (4096 x 4097) is misaligned, B (4097 x 4096) and C are not.
  const Problem p = Problem::make(4096, 4096, 4097, DType::bf16, DType::bf16, Layout::nn);
  REQUIRE(p.align == 2);
  auto pad = plan_transform(p, Transform::pad);
  auto round = plan_transform(p, Transform::round);
  REQUIRE(pad);
  REQUIRE(round);
  CHECK(pad->a.copy);
  CHECK_FALSE(pad->b.copy);
  CHECK(pad->inner.k == 4097);  // an aligned operand is never copied for a size alone ...
  CHECK(round->a.copy);
  CHECK(round->b.copy);         // ... round copies it: K becomes 4104
  CHECK_FALSE(round->c.copy);
  CHECK(round->inner.key() == "4096x4096x4104 bf16>bf16 nn a16");
  CHECK_THAT(round->describe(), Catch::Contains("K 4097 -> 4104") && Catch::Contains("B copied (ldb 4096 -> 4096)"));
  // The forms rule: round where it differs from pad; at 4097^3 pad already rounds everything.
  const search::TransformPolicy autom;
  CHECK_FALSE(search::skip_form(autom, p, Transform::round, {true, true}));
  const Problem cube = Problem::make(4097, 4097, 4097, DType::f16, DType::f16, Layout::nn);
  CHECK_THAT(search::skip_form(autom, cube, Transform::round, {true, true}).value_or(""), Catch::Contains("it is pad here"));
  const Problem aligned = Problem::make(4096, 4096, 4096, DType::f16, DType::f16, Layout::nn);
  std::string why;
  CHECK_FALSE(plan_transform(aligned, Transform::round, &why));
  CHECK_THAT(why, Catch::Contains("round copies nothing"));
  CHECK(parse_transform("round") == Transform::round);

  // The tune: plain 100 + x, pad 90 + x (K stays odd), round 40 + x (copies included).
  FormsMeasurer meas([](const Candidate& c) {
    return (c.transform == Transform::round ? 40.0 : c.transform == Transform::pad ? 90.0 : 100.0) + double(c.config[0]);
  });
  test::TempDir d;
  Store store = Store::open(d.path / "store.db");
  search::Tuner t(nullptr, meas, &store, nullptr, toy_spaces(), test::toy_provenance, toy_tune());
  const search::FamilyOutcome f = t.tune(p, {"toy"}).families.at(0);
  REQUIRE(f.forms.size() == 3);
  CHECK(f.forms[1].transform == Transform::pad);
  CHECK(f.forms[2].transform == Transform::round);
  for (const auto& form : f.forms) {
    CHECK(form.evaluated == 8);
    CHECK(form.stop_reason == "space exhausted");  // each form's own search, its own stop
  }
  CHECK(f.best_name == "toy_x0+round");
  auto w = store.winner(ResultKey::of("Test GPU", p), "toy");
  REQUIRE(w);
  CHECK(w->transform == Transform::round);  // the store keeps the new transform (schema v7's CHECK)
}

TEST_CASE("transforms: the stand-in cuBLASLt offers the aligned problem's algorithm under round, not under pad",
          "[transform][cublaslt]") {
  const Family& f = standin_cublaslt();
  const gt_device d = arch_limits("sm_90");
  // Only A misaligned (lda 65), K odd: pad copies A alone and K stays 65.
  const Problem p = Problem::make(64, 48, 65, DType::bf16, DType::bf16, Layout::nn);
  auto has_66 = [&](const Problem& q) {
    Space s = f.space(q, d);
    for (const Config& c : f.suggest(q, d, 32, s.dims()))
      if (c[0] == 66) return true;
    return false;
  };
  const Problem aligned_twin = Problem::make(64, 48, 72, DType::bf16, DType::bf16, Layout::nn);
  REQUIRE(has_66(aligned_twin));
  CHECK_FALSE(has_66(p));
  auto pad = plan_transform(p, Transform::pad);
  auto round = plan_transform(p, Transform::round);
  REQUIRE(pad);
  REQUIRE(round);
  CHECK(pad->inner.k == 65);
  CHECK_FALSE(has_66(pad->inner));  // a 16-byte lda is not enough: K must be a multiple of 8
  CHECK(round->inner.key() == aligned_twin.key());
  CHECK(has_66(round->inner));
  // And round's copies compute the problem as given, through algorithm 66 (small integers: exact).
  std::mt19937_64 rng(55);
  std::vector<uint8_t> abuf(size_t(p.a_rows() * p.lda) * 2), bbuf(size_t(p.b_rows() * p.ldb) * 2);
  for (size_t i = 0; i < abuf.size() / 2; ++i) set_int(abuf.data(), 2, i, float_bits(DType::bf16, float(int(rng() % 7) - 3)));
  for (size_t i = 0; i < bbuf.size() / 2; ++i) set_int(bbuf.data(), 2, i, float_bits(DType::bf16, float(int(rng() % 7) - 3)));
  Space s = f.space(round->inner, d);
  Config c66;
  for (const Config& c : f.suggest(round->inner, d, 32, s.dims()))
    if (c[0] == 66 && !f.can_implement(round->inner, c, d)) {
      c66 = c;
      break;
    }
  REQUIRE_FALSE(c66.empty());
  Refused why;
  auto op = f.create_op(round->inner, c66, &why);
  INFO(why.why);
  REQUIRE(op);
  CHECK(wrong_through(*op, *round, p, abuf, bbuf) == 0);
}

TEST_CASE("transforms in the tune: each form has the family's whole time budget and its own stop reason",
          "[transform][tune]") {
  // 20 ms a measurement, 70 ms a form: each form runs on a clock of its own, so pad (explored
  // after the plain form spent its 70 ms) measures about as many configs as the plain form.
  const Problem cliff = Problem::make(4097, 4097, 4097, DType::f16, DType::f16, Layout::nn);
  FormsMeasurer meas([](const Candidate& c) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return (c.transform == Transform::pad ? 60.0 : 100.0) + double(c.config[0]);
  });
  search::TuneOptions o = toy_tune();
  o.strategy = "random";
  o.budget.max_seconds = 0.07;
  o.lookahead = 1;
  search::Tuner t(nullptr, meas, nullptr, nullptr, toy_spaces(), test::toy_provenance, o);
  const search::FamilyOutcome f = t.tune(cliff, {"toy"}).families.at(0);
  REQUIRE(f.forms.size() == 2);
  for (const auto& form : f.forms) {
    INFO(to_string(form.transform));
    CHECK(form.evaluated >= 2);
    CHECK(form.evaluated < 8);
    CHECK(form.stop_reason == "0.07 s");
    CHECK(form.compile_wait_s == 0);  // nothing compiled: a stand-in family
  }
}

TEST_CASE("constant operands: tuned with B constant, recorded in the table, refused for a call that keeps B changing",
          "[transform][constant][table][runtime]") {
  // The LM head's shape class, small: B (the weights, 64 x 1001) is misaligned.
  Problem p = Problem::make(16, 1001, 64, DType::f32, DType::f32, Layout::nn);
  p.constant = parse_constant("b");
  CHECK(p.key() == "16x1001x64 f32>f32 nn a4 const=b");
  CHECK_THROWS_WITH(parse_constant("c", "constant"), Catch::Contains("constant: unknown operand 'c'"));
  CHECK_THROWS_WITH(parse_constant("b,b"), Catch::Contains("'b' is named twice"));
  // tune -> store: the key carries the assumption, apart from the same shape without it.
  FormsMeasurer meas([](const Candidate& c) { return (c.transform == Transform::pad ? 50.0 : 100.0) + double(c.config[0]); });
  test::TempDir d;
  Store store = Store::open(d.path / "store.db");
  search::Tuner t(nullptr, meas, &store, nullptr, toy_spaces(), test::toy_provenance, toy_tune());
  CHECK(t.tune(p, {"toy"}).families.at(0).best_name == "toy_x0+pad");
  Problem changing = p;
  changing.constant = 0;
  auto w = store.winner(ResultKey::of("Test GPU", p), "toy");
  REQUIRE(w);
  CHECK(w->key.constant == kConstantB);
  CHECK_FALSE(store.winner(ResultKey::of("Test GPU", changing), "toy"));
  // -> table: the entry carries constant = "b" in TOML and JSON (format 4), and reads back.
  LookupTable table = table_from_store(store, ExportOptions{});
  REQUIRE_FALSE(table.entries.empty());
  CHECK(table.entries[0].key.constant == kConstantB);
  CHECK_THAT(table.serialize(TableFormat::toml), Catch::Contains("constant = \"b\"") && Catch::Contains(fmt::format("gemmtune_table = {}", kTableFormatVersion)));
  LookupTable back = LookupTable::parse(table.serialize(TableFormat::json), TableFormat::json, "mem");
  CHECK(back.entries[0] == table.entries[0]);
  CHECK_THAT(table.serialize(TableFormat::cpp), Catch::Contains("e.constant.empty() || e.constant == constant"));

  // -> runtime (dry run): a naive entry of the same kind, tuned with B constant, serves a call
  // that declares B constant and never one that does not.
  const gt_device lim = arch_limits("sm_90");
  const TableEntry e = padded_naive_entry(p, kH200, lim);
  LookupTable rt_table;
  rt_table.entries = {e};
  const fs::path file = d.path / "table.toml";
  rt_table.save(file, TableFormat::toml);
  test::TempDir cache;
  gemmtune::Options o;
  o.plugin_dirs = {test::naive_only_dir().string()};
  o.cache_dir = cache.path.string();
  o.dry_run = true;
  o.arch = "sm_90";
  o.device_name = kH200;
  o.default_family = "naive";
  gemmtune::Runtime rt(file.string(), o);
  gemmtune::GemmArgs g;
  g.m = 16;
  g.n = 1001;
  g.k = 64;
  g.in = g.out = GEMMTUNE_F32;
  g.layout = GEMMTUNE_NN;
  g.a = reinterpret_cast<const void*>(uintptr_t(1) << 20);
  g.b = reinterpret_cast<const void*>(uintptr_t(2) << 20);
  g.c = reinterpret_cast<void*>(uintptr_t(3) << 20);
  g.lda = 64;
  g.ldb = g.ldc = 1001;
  const gemmtune::Choice plain = rt.prepare(g);  // B not declared constant
  CHECK(plain.match == GEMMTUNE_MATCH_DEFAULT);
  CHECK(plain.transform == "none");
  g.constant = GEMMTUNE_CONSTANT_B;
  const gemmtune::Choice weights = rt.prepare(g);
  CHECK(weights.match == GEMMTUNE_MATCH_EXACT);
  CHECK(weights.transform == "pad");
  CHECK(weights.config == e.config);
  CHECK(rt.prepared() == 2);  // two prepared problems: the constant call has its own
  // lookup says why the entry was passed over for the plain call.
  LookupPolicy policy;
  policy.device = kH200;
  policy.arch = "sm_90";
  LookupResult a = answer(rt_table, changing, test::plugins(), lim, policy);
  REQUIRE_FALSE(a.passed_over.empty());
  CHECK_THAT(a.passed_over[0].second, Catch::Contains("timed with b constant") &&
                                          Catch::Contains("the call did not declare b constant"));
  // The C API: gemmtune_choice (nothing constant) never gets the entry; gemmtune_choice_constant does.
  gemmtune_options co;
  gemmtune_options_init(&co);
  const std::string dirs = test::naive_only_dir().string(), cdir = cache.path.string();
  co.plugin_dirs = dirs.c_str();
  co.cache_dir = cdir.c_str();
  co.dry_run = 1;
  co.arch = "sm_90";
  co.device_name = kH200;
  co.default_family = "naive";
  gemmtune_runtime* h = nullptr;
  REQUIRE(gemmtune_create(file.c_str(), &co, &h) == GEMMTUNE_SUCCESS);
  gemmtune_gemm_args ca{};
  ca.m = 16;
  ca.n = 1001;
  ca.k = 64;
  ca.in_dtype = ca.out_dtype = GEMMTUNE_F32;
  ca.layout = GEMMTUNE_NN;
  ca.a = g.a;
  ca.b = g.b;
  ca.c = g.c;
  ca.lda = 64;
  ca.ldb = ca.ldc = 1001;
  char name[512] = {0};
  int32_t match = -1;
  REQUIRE(gemmtune_choice(h, &ca, &match, name, sizeof name, nullptr, 0) == GEMMTUNE_SUCCESS);
  CHECK(match == GEMMTUNE_MATCH_DEFAULT);
  REQUIRE(gemmtune_choice_constant(h, &ca, GEMMTUNE_CONSTANT_B, &match, name, sizeof name, nullptr, 0) ==
          GEMMTUNE_SUCCESS);
  CHECK(match == GEMMTUNE_MATCH_EXACT);
  CHECK(std::string(name) == e.config + "+pad");
  CHECK(gemmtune_choice_constant(h, &ca, 7, &match, name, sizeof name, nullptr, 0) == GEMMTUNE_ERROR_INVALID_ARGUMENT);
  gemmtune_destroy(h);
}

