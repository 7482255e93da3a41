// Finalists: exploration timings are short and can flatter a config; the interleaved re-timing
// decides. The family's own first choice (its default here) is always re-timed beside the
// fastest explored configs, so a config that only looked faster cannot beat it.
#include "replay/replay_measurer.hpp"
#include "job/run.hpp"
#include "store/store.hpp"
#include "test_util.hpp"
#include "tune/tuner.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <set>

using namespace gt;
using namespace gt::search;

namespace {

// A re-timed figure t (every statistic) with a 95 % interval of +-ci (relative).
Stats flat(double t, double ci, int count) {
  Stats s;
  s.count = count;
  s.median = s.mean = s.min = s.max = s.p10 = s.p90 = t;
  s.ci_low = t * (1 - ci);
  s.ci_high = t * (1 + ci);
  return s;
}

// Explores from a recording, but re-times with "true" times that differ from the explored
// ones, as a GPU whose clock drops under sustained load would.
class RetimingMeasurer : public ReplayMeasurer {
 public:
  RetimingMeasurer(const Recording& rec, std::function<double(const Config&)> truth)
      : ReplayMeasurer(rec), truth_(std::move(truth)) {}
  bool is_replay() const override { return false; }
  Retimed retime(const std::vector<Candidate>& cs, const Interleave& how, uint64_t) override {
    ++retimes;
    last.clear();
    std::vector<Stats> out;
    for (auto& c : cs) {
      out.push_back(flat(truth_(c.config), ci, how.rounds));
      last.push_back(c.config);
    }
    return out;
  }
  int retimes = 0;
  std::vector<Config> last;
  double ci = 0;  // relative half-width of every re-timed median's interval

 private:
  std::function<double(const Config&)> truth_;
};

// Recorded toy spaces on "Test GPU": one knob x = 0..n-1 (default `def`) for each family and
// problem, x explored at explored(x) µs; and the spaces and provenance a Tuner reads from them.
struct Toys {
  Recording rec;
  Toys(const std::vector<Problem>& ps, const std::vector<std::string>& families, int64_t n = 8, size_t def = 5,
       const std::function<double(int64_t)>& explored = [](int64_t x) { return 100.0 + double(x); }) {
    std::vector<int64_t> values;
    for (int64_t i = 0; i < n; ++i) values.push_back(i);
    std::vector<Param> params = {{"x", "a knob", values, {}, def}};
    for (auto& p : ps)
      for (auto& fam : families) {
        RecordedSpace& rs = rec.space_for({"Test GPU", "GPU-test", "sm_90"}, p, fam, "1.0", params);
        for (int64_t i = 0; i < n; ++i) rs.add({i}, Outcome{Status::ok, explored(i), ""});
      }
  }
  SpaceSource spaces() const {
    return [this](const std::string& fam, const Problem& q) { return rec.find(q.key(), fam)->space(); };
  }
  ProvenanceSource prov() const {
    return [this](const std::string& fam, bool quick) { return replay_provenance(rec, fam, "normal", quick); };
  }
};

const Problem k512 = Problem::make(512, 512, 512, DType::f32, DType::f32, Layout::nn);

// A toy tune: every config explored, two finalists, no settle.
TuneOptions toy_options() {
  TuneOptions o;
  o.strategy = "exhaustive";
  o.finalists = 2;
  o.settle_s = 0;
  o.tune_id = "test";
  return o;
}

}  // namespace

TEST_CASE("the default is always a finalist: a config that only explored faster cannot beat it", "[tune]") {
  const Problem p = k512;
  // Explored: x=0..3 look fastest (100..103 us), the default x=5 looks slow (110 us).
  Toys toys({p}, {"toy"}, 8, 5, [](int64_t x) { return x == 5 ? 110.0 : 100.0 + double(x); });
  // Re-timed side by side: the default is in truth the fastest.
  RetimingMeasurer meas(toys.rec, [](const Config& c) { return c[0] == 5 ? 90.0 : 100.0 + double(c[0]); });

  TuneOptions o = toy_options();
  Tuner t(nullptr, meas, nullptr, nullptr, toys.spaces(), toys.prov(), o);
  ProblemOutcome po = t.tune(p, {"toy"});
  REQUIRE(po.families.size() == 1);
  const FamilyOutcome& f = po.families[0];
  REQUIRE(meas.retimes == 1);
  // Re-timed: the two fastest explored (x=0, x=1) and the default beside them.
  CHECK(meas.last.size() == 3);
  CHECK(std::count(meas.last.begin(), meas.last.end(), Config{5}) == 1);
  REQUIRE(f.best);
  CHECK(*f.best == Config{5});
  CHECK(f.best_m.time.median == Approx(90.0));
}

TEST_CASE("a tie goes to the baseline: another config wins only when measurably faster", "[tune]") {
  const Problem p = k512;
  Toys toys({p}, {"toy"});  // default: x=5
  TuneOptions o = toy_options();
  o.min_gain = 0;  // the tie rule alone (the margin: the next test)
  auto winner = [&](double x0_us, double ci) {
    // Re-timed: x=0 at x0_us, the default x=5 at 101 us, the rest slower.
    RetimingMeasurer meas(toys.rec, [x0_us](const Config& c) { return c[0] == 0 ? x0_us : c[0] == 5 ? 101.0 : 110.0; });
    meas.ci = ci;
    Tuner t(nullptr, meas, nullptr, nullptr, toys.spaces(), toys.prov(), o);
    ProblemOutcome po = t.tune(p, {"toy"});
    REQUIRE(po.families.size() == 1);
    return po.families[0];
  };
  // 100 vs 101 us with +-2 % intervals: a tie, and the default stays.
  FamilyOutcome tied = winner(100.0, 0.02);
  REQUIRE(tied.best);
  CHECK(*tied.best == Config{5});
  CHECK(tied.decision.tie);
  // The same medians with +-0.1 % intervals: x=0 is measurably faster and wins.
  FamilyOutcome apart = winner(100.0, 0.001);
  REQUIRE(apart.best);
  CHECK(*apart.best == Config{0});
  CHECK_FALSE(apart.decision.tie);
  // Tied configs other than the baseline are still broken by median.
  FamilyOutcome faster = winner(90.0, 0.02);
  REQUIRE(faster.best);
  CHECK(*faster.best == Config{0});
}

namespace {
// A board of a multi-GPU tune: counts what it was asked to do.
class Board : public RetimingMeasurer {
 public:
  using RetimingMeasurer::RetimingMeasurer;
  void set_problem(const Problem& p, Distribution d, uint64_t seed) override {
    ++problems_set;
    ReplayMeasurer::set_problem(p, d, seed);
  }
  double settle(const Candidate&, double) override { return double(++settles); }
  int problems_set = 0, settles = 0;
};
}  // namespace

TEST_CASE("a tie between families goes to the reference family (cuBLASLt): another wins only when measurably faster",
          "[tune]") {
  const Problem p = k512;
  Toys toys({p}, {"hand", "lib"});  // default: x=5
  // Re-timed: hand's x=0 at hand_us (its other configs 110), lib's default at 101 (others 110).
  class ByFamily : public RetimingMeasurer {
   public:
    ByFamily(const Recording& r, double hand_us) : RetimingMeasurer(r, [](const Config&) { return 0.0; }), hand_(hand_us) {}
    Retimed retime(const std::vector<Candidate>& cs, const Interleave& how, uint64_t) override {
      std::vector<Stats> out;
      for (auto& c : cs) {
        const double t = c.family == "hand" ? (c.config[0] == 0 ? hand_ : 110.0) : (c.config[0] == 5 ? 101.0 : 110.0);
        out.push_back(flat(t, ci, how.rounds));
      }
      return out;
    }

   private:
    double hand_;
  };
  auto outcome = [&](double hand_us, double ci, const std::string& tie_family, double min_gain = 0) {
    ByFamily meas(toys.rec, hand_us);
    meas.ci = ci;
    TuneOptions o = toy_options();
    o.tie_family = tie_family;
    o.min_gain = min_gain;
    Tuner t(nullptr, meas, nullptr, nullptr, toys.spaces(), toys.prov(), o);
    ProblemOutcome po = t.tune(p, {"hand", "lib"});
    REQUIRE(po.winner >= 0);
    return po;
  };
  // 100 vs 101 us with +-2 % intervals: a tie, and the reference family stays.
  ProblemOutcome tied = outcome(100.0, 0.02, "lib");
  CHECK(tied.families[size_t(tied.winner)].family == "lib");
  CHECK(tied.decision.tie);
  CHECK_THAT(tied.note, Catch::Contains("lib kept"));
  // Without a reference family the same tie is broken by median.
  ProblemOutcome by_median = outcome(100.0, 0.02, "");
  CHECK(by_median.families[size_t(by_median.winner)].family == "hand");
  CHECK_THAT(by_median.note, !Catch::Contains("kept"));
  // Measurably faster (+-0.1 %): the hand-written family wins.
  ProblemOutcome apart = outcome(100.0, 0.001, "lib");
  CHECK(apart.families[size_t(apart.winner)].family == "hand");
  CHECK_FALSE(apart.decision.tie);
  // With a 2 % margin, 1 % measurably faster is not enough: the reference family stays, and
  // the note says why; 5 % is.
  ProblemOutcome small = outcome(100.0, 0.001, "lib", 0.02);
  CHECK(small.families[size_t(small.winner)].family == "lib");
  CHECK_FALSE(small.decision.tie);
  CHECK_THAT(small.note, Catch::Contains("hand +1.0 % against lib (switching needs 2 %): lib kept"));
  ProblemOutcome large = outcome(96.0, 0.001, "lib", 0.02);
  CHECK(large.families[size_t(large.winner)].family == "hand");
  CHECK(large.note.empty());
}

TEST_CASE("a config replaces the baseline only by the margin, confirmed against the baseline alone", "[tune][store]") {
  const Problem p = k512;
  Toys toys({p}, {"toy"});  // default (the baseline): x=5
  // The finalists' re-timing (three configs) flatters x=0 at `fin_us`; re-timed against the
  // baseline alone (two configs) it reads `duel_us`. The baseline reads 101 us both times,
  // the others 110; intervals +-0.1 %.
  struct Duel : RetimingMeasurer {
    double fin_us, duel_us;  // duel_us NaN: the confirmation fails
    Duel(const Recording& r, double f, double d)
        : RetimingMeasurer(r, [](const Config&) { return 0.0; }), fin_us(f), duel_us(d) {}
    Retimed retime(const std::vector<Candidate>& cs, const Interleave& how, uint64_t) override {
      ++retimes;
      if (cs.size() == 2 && std::isnan(duel_us)) throw RuntimeFailure("the GPU went away");
      std::vector<Stats> out;
      for (auto& c : cs) {
        const double t = c.config[0] == 0 ? (cs.size() == 2 ? duel_us : fin_us) : c.config[0] == 5 ? 101.0 : 110.0;
        out.push_back(flat(t, 0.001, how.rounds));
      }
      return out;
    }
  };
  auto tune = [&](double fin_us, double duel_us, double min_gain, Store* store = nullptr) {
    Duel meas(toys.rec, fin_us, duel_us);
    TuneOptions o = toy_options();
    o.min_gain = min_gain;
    Tuner t(nullptr, meas, store, nullptr, toys.spaces(), toys.prov(), o);
    ProblemOutcome po = t.tune(p, {"toy"});
    REQUIRE(po.families.size() == 1);
    REQUIRE(po.families[0].best);
    return std::make_pair(po.families[0], meas.retimes);
  };
  // 5 % ahead among the finalists, 1 % alone against the baseline: the baseline stays.
  test::TempDir tmp;
  Store store = Store::open(tmp.path / "r.db");
  auto [kept, n_kept] = tune(96.0, 100.0, 0.02, &store);
  CHECK(n_kept == 2);
  CHECK(*kept.best == Config{5});
  CHECK(kept.best_m.time.median == Approx(101.0));  // the confirmation's figure
  CHECK(kept.decision.runner_up == "toy_x0");
  CHECK_FALSE(kept.decision.tie);
  // Notes are for people: configs in them read as the tables print them.
  CHECK_THAT(kept.note, Catch::Contains("x=0 +1.0 % against the baseline in the confirmation (switching needs 2 %)"));
  auto w = store.winner(ResultKey::of("Test GPU", p), "toy");
  REQUIRE(w);
  CHECK(w->config_name == "toy_x5");
  CHECK(w->note == kept.note);
  auto row = store.get(w->row_id);
  REQUIRE(row);
  CHECK_THAT(row->m.message, Catch::StartsWith("confirmation: the winner and the baseline re-timed alone"));
  // A warm re-tune re-times nothing and keeps the baseline with the note.
  auto [warm, n_warm] = tune(96.0, 100.0, 0.02, &store);
  CHECK(n_warm == 0);
  CHECK(*warm.best == Config{5});
  CHECK(warm.note == kept.note);
  CHECK_FALSE(warm.decision.tie);
  // Ahead by 4 % alone (5 % among the finalists): it replaces the baseline, with the
  // confirmation's figure and row.
  test::TempDir tmp2;
  Store store2 = Store::open(tmp2.path / "r.db");
  auto [won, n_won] = tune(96.0, 97.0, 0.02, &store2);
  CHECK(n_won == 2);
  CHECK(*won.best == Config{0});
  CHECK(won.best_m.time.median == Approx(97.0));
  CHECK(won.note.empty());
  auto won_row = store2.get(won.best_row);
  REQUIRE(won_row);
  CHECK(won_row->config_name == "toy_x0");
  CHECK(won_row->m.time.median == Approx(97.0));
  CHECK_THAT(won_row->m.message, Catch::StartsWith("confirmation:"));
  // The confirmation fails: the baseline stays (its finalists' figure), and the note says why.
  auto [failed, n_failed] = tune(96.0, std::nan(""), 0.02);
  CHECK(*failed.best == Config{5});
  CHECK(failed.best_m.time.median == Approx(101.0));
  CHECK_THAT(failed.note, Catch::Contains("the confirmation of x=0 against the baseline failed (the GPU went away)"));
  // Overlapping intervals in the confirmation: a tie, the baseline kept.
  auto [tied, n_tied] = tune(96.0, 100.95, 0.02);
  CHECK(*tied.best == Config{5});
  CHECK(tied.decision.tie);
  CHECK_THAT(tied.note, Catch::StartsWith("tie with x=0 (overlapping intervals in the confirmation"));
  // No margin: measurably faster among the finalists decides, without a confirmation.
  auto [plain, n_plain] = tune(96.0, 100.0, 0.0);
  CHECK(n_plain == 1);
  CHECK(*plain.best == Config{0});
}

TEST_CASE("with several GPUs each problem is explored, re-timed and decided on the GPU that took it", "[tune][scale]") {
  const Problem pa = k512;
  const Problem pb = Problem::make(1024, 512, 512, DType::f32, DType::f32, Layout::nn);
  Toys toys({pa, pb}, {"toy"});
  // Board 0 finds x=2 fastest side by side, board 1 x=0: which config wins a problem says which
  // board re-timed it.
  Board b0(toys.rec, [](const Config& c) { return c[0] == 2 ? 80.0 : 100.0 + double(c[0]); });
  Board b1(toys.rec, [](const Config& c) { return c[0] == 0 ? 40.0 : 100.0 + double(c[0]); });
  test::TempDir tmp;
  Store store = Store::open(tmp.path / "r.db");
  auto prov_of = [&](const std::string& uuid) -> ProvenanceSource {
    return [&, uuid](const std::string& fam, bool quick) {
      Provenance p = replay_provenance(toys.rec, fam, "normal", quick);
      p.device_uuid = uuid;
      return p;
    };
  };
  ResolvedJob resolved;
  resolved.problems = {{pa, {"toy"}, {}}, {pb, {"toy"}, {}}};
  resolved.mine = {0, 1};
  resolved.options.strategy = "exhaustive";
  resolved.options.finalists = 3;
  resolved.options.settle_s = 0;
  resolved.options.tune_id = "multi";
  resolved.consistency_sample = 2;
  std::vector<RunGpu> gpus = {{&b0, toys.spaces(), prov_of("GPU-b0")}, {&b1, toys.spaces(), prov_of("GPU-b1")}};
  RunContext ctx;
  ctx.store = &store;
  RunResult res = run_job(resolved, gpus, ctx);
  const Config truth[2] = {Config{2}, Config{0}};
  for (size_t i = 0; i < 2; ++i) {
    REQUIRE(res.outcomes[i]);
    REQUIRE(res.gpu_of[i] >= 0);
    const size_t g = size_t(res.gpu_of[i]);
    INFO("problem " << i << " on GPU " << g);
    REQUIRE(res.outcomes[i]->families[0].best);
    CHECK(*res.outcomes[i]->families[0].best == truth[g]);  // re-timed on its own GPU
    // Every row of the tune of this problem (exploration, finalists, confirmation) is its GPU's.
    RowFilter f = RowFilter::of(ResultKey::of("Test GPU", resolved.problems[i].problem));
    f.tune_id = "multi";
    auto rows = store.rows(f);
    CHECK(rows.size() > 8);
    for (auto& r : rows) CHECK(r.prov.device_uuid == (g == 0 ? "GPU-b0" : "GPU-b1"));
  }
  CHECK(b0.retimes + b1.retimes >= 2);
  // The cross-GPU check: each problem's winner timed once on each GPU, and stored.
  REQUIRE(res.consistency.size() >= 1);
  for (auto& s : res.consistency) {
    REQUIRE(s.per_gpu.size() == 2);
    CHECK(s.per_gpu[0].status == Status::ok);
    CHECK(s.per_gpu[1].status == Status::ok);
    CHECK(std::isfinite(s.spread));
    RowFilter f = RowFilter::of(ResultKey::of("Test GPU", s.problem));
    f.tune_id = consistency_tune_id("multi");
    std::set<std::string> uuids;
    for (auto& r : store.rows(f)) uuids.insert(r.prov.device_uuid);
    CHECK(uuids == std::set<std::string>{"GPU-b0", "GPU-b1"});
  }
}

TEST_CASE("the families' winners re-timed against each other are stored: the winner's row has the time printed",
          "[tune][store]") {
  const Problem p = k512;
  Toys toys({p}, {"toy", "toy2"}, 4, 0);
  // Every re-timing answers by config and by how many candidates it saw: the families'
  // finalists (4 at a time) and the two winners (2 at a time) get different times.
  class TwoStage : public RetimingMeasurer {
   public:
    TwoStage(const Recording& r) : RetimingMeasurer(r, [](const Config&) { return 0.0; }) {}
    Retimed retime(const std::vector<Candidate>& cs, const Interleave& how, uint64_t) override {
      ++retimes;
      std::vector<Stats> out;
      for (auto& c : cs) {
        Stats s;
        s.count = how.rounds;
        double t = (c.family == "toy2" ? 90.0 : 95.0) + double(c.config[0]) + (cs.size() == 2 ? 20.0 : 0.0);
        s.median = s.mean = s.min = s.max = s.p10 = s.p90 = s.ci_low = s.ci_high = t;
        out.push_back(s);
      }
      return out;
    }
  } meas(toys.rec);
  test::TempDir tmp;
  Store store = Store::open(tmp.path / "r.db");
  TuneOptions o;
  o.strategy = "exhaustive";
  o.tune_id = "test";
  Tuner t(nullptr, meas, &store, nullptr, toys.spaces(), toys.prov(), o);
  ProblemOutcome po = t.tune(p, {"toy", "toy2"});
  REQUIRE(po.winner >= 0);
  const FamilyOutcome& w = po.families[size_t(po.winner)];
  CHECK(w.family == "toy2");
  CHECK(w.best_m.time.median == Approx(110.0));  // the winners' re-timing
  auto overall = store.winner(ResultKey::of("Test GPU", p), kAllFamilies);
  REQUIRE(overall);
  auto row = store.get(overall->row_id);
  REQUIRE(row);
  CHECK(row->m.time.median == Approx(110.0));
  CHECK_THAT(row->m.message, Catch::Contains("family winner: re-timed"));
  // The family's own winner stays the finalists' re-timing.
  auto fam = store.winner(ResultKey::of("Test GPU", p), "toy2");
  REQUIRE(fam);
  CHECK(store.get(fam->row_id)->m.time.median == Approx(90.0));

  // A warm re-tune re-times nothing and keeps the problem's winner as the families' re-timing
  // left it, not re-ranked from each family's own finalist rows (timed apart).
  const int cold_retimes = meas.retimes;
  o.tune_id = "warm";
  Tuner warm(nullptr, meas, &store, nullptr, toys.spaces(), toys.prov(), o);
  ProblemOutcome again = warm.tune(p, {"toy", "toy2"});
  CHECK(meas.retimes == cold_retimes);
  REQUIRE(again.winner >= 0);
  CHECK(again.families[size_t(again.winner)].family == "toy2");
  CHECK(again.families[size_t(again.winner)].best_m.time.median == Approx(110.0));
  auto still = store.winner(ResultKey::of("Test GPU", p), kAllFamilies);
  REQUIRE(still);
  CHECK(still->row_id == overall->row_id);
}

// A warm re-tune re-times nothing: the stored winner stands even when its stored row (the
// re-timed one) reads slower than other configs' quick exploration rows, as at a power cap,
// where exploration catches the boost clock and the re-timing each config's own.
TEST_CASE("a warm re-tune keeps the stored winner even when exploration rows read faster than it", "[tune]") {
  const Problem p = k512;
  Toys toys({p}, {"toy"});  // default: x=5
  // Re-timed, every finalist reads ~50 % slower than explored; x=0 is still the fastest, tied
  // with x=1 (+-4 %: 144-156 against 154.6-167.4 us), apart from the default x=5 (158.4-171.6).
  RetimingMeasurer meas(toys.rec, [](const Config& c) { return c[0] == 0 ? 150.0 : 160.0 + double(c[0]); });
  meas.ci = 0.04;
  test::TempDir tmp;
  Store store = Store::open(tmp.path / "r.db");
  TuneOptions o = toy_options();
  o.tune_id = "cold";
  {
    Tuner t(nullptr, meas, &store, nullptr, toys.spaces(), toys.prov(), o);
    ProblemOutcome po = t.tune(p, {"toy"});
    REQUIRE(po.families.size() == 1);
    REQUIRE(po.families[0].best);
    CHECK(*po.families[0].best == Config{0});
    CHECK(po.families[0].decision.tie);
    CHECK(po.families[0].decision.runner_up == "toy_x1");
    CHECK(meas.retimes == 2);  // the finalists, then x=0 against the baseline alone
  }
  // Warm: x=0's reused row (150 us) is slower than x=2's and x=3's exploration rows.
  o.tune_id = "warm";
  Tuner t(nullptr, meas, &store, nullptr, toys.spaces(), toys.prov(), o);
  ProblemOutcome po = t.tune(p, {"toy"});
  REQUIRE(po.families.size() == 1);
  const FamilyOutcome& f = po.families[0];
  CHECK(f.reused == f.evaluated);
  CHECK(meas.retimes == 2);  // nothing re-timed
  REQUIRE(f.best);
  CHECK(*f.best == Config{0});
  CHECK(f.best_m.time.median == Approx(150.0));
  // The tie is the one the cold re-timing called, not one against an unre-timed row.
  CHECK(f.decision.tie);
  CHECK(f.decision.runner_up == "toy_x1");
}

// A search its time budget cut, tuned again from the store with the same budget (a resumed
// job): the stored answers cost their GPU seconds, so the search stops about where the first
// one stopped (free, it would run on through the rest of the space: the eleventh session's
// resumed LLM job searched cuBLASLt's space 15 s further on every problem it had finished).
TEST_CASE("a re-tune under a time budget charges the stored answers and stops about where the first run did", "[tune]") {
  const Problem p = k512;
  Toys toys({p}, {"toy"});
  RetimingMeasurer meas(toys.rec, [](const Config& c) { return 100.0 + double(c[0]); });
  test::TempDir tmp;
  Store store = Store::open(tmp.path / "r.db");
  TuneOptions o = toy_options();
  // About three and a half of the toy's eight configs' simulated seconds.
  o.budget.max_seconds = 3.5 * estimated_measure_s(100.0, o.quick_explore);
  o.tune_id = "cold";
  uint64_t cold_evaluated = 0;
  {
    Tuner t(nullptr, meas, &store, nullptr, toys.spaces(), toys.prov(), o);
    ProblemOutcome po = t.tune(p, {"toy"});
    REQUIRE(po.families.size() == 1);
    cold_evaluated = po.families[0].evaluated;
    CHECK(po.families[0].reused == 0);
    REQUIRE(cold_evaluated >= 2);
    REQUIRE(cold_evaluated < 8);  // the budget, not the space, ended it
  }
  o.tune_id = "resumed";
  Tuner t(nullptr, meas, &store, nullptr, toys.spaces(), toys.prov(), o);
  ProblemOutcome po = t.tune(p, {"toy"});
  REQUIRE(po.families.size() == 1);
  const FamilyOutcome& f = po.families[0];
  CHECK(f.reused == cold_evaluated);
  // No stored row holds the clock's settle and the unsettled first measurement before it, so
  // the resumed clock runs a little behind the first run's and may take one config more; free,
  // it took the rest of the space (8).
  CHECK(f.evaluated <= cold_evaluated + 1);
}

// The one decision rule (search/tune/decide.hpp), on its own: the fastest leads; the reference stays
// unless beaten measurably and by the margin; the runner-up, tie and margin are data.
TEST_CASE("the decision rule: a reference stays unless beaten measurably and by the margin", "[tune]") {
  auto c = [](const std::string& name, double us, double ci) { return Contender{name, flat(us, ci, 8)}; };
  // No reference: the fastest wins; equal figures by name.
  Verdict v = decide({c("b", 100, 0.001), c("a", 100, 0.001), c("c", 90, 0.001)}, std::nullopt, 0.02);
  CHECK(v.winner == 2);
  CHECK(v.kept == Kept::no);
  CHECK(v.decision.runner_up == "a");
  CHECK(v.decision.margin == Approx(100.0 / 90 - 1));
  CHECK_FALSE(v.decision.tie);
  // A reference tied with the leader stays; the decision says with whom.
  v = decide({c("ref", 101, 0.02), c("x", 100, 0.02)}, size_t(0), 0.0);
  CHECK(v.winner == 0);
  CHECK(v.kept == Kept::tie);
  CHECK(v.decision.tie);
  CHECK(v.decision.tie_with == "x");
  CHECK(v.decision.margin < 0);
  // Measurably faster, but below the margin: the reference stays; above it, the leader wins.
  v = decide({c("ref", 101, 0.001), c("x", 100, 0.001)}, size_t(0), 0.02);
  CHECK(v.kept == Kept::margin);
  CHECK(v.winner == 0);
  CHECK(v.lead == Approx(0.01));
  CHECK(family_note(v, {c("ref", 101, 0.001), c("x", 100, 0.001)}, 0.02, false) ==
        "x +1.0 % against the baseline (switching needs 2 %); the baseline kept");
  v = decide({c("ref", 105, 0.001), c("x", 100, 0.001)}, size_t(0), 0.02);
  CHECK(v.kept == Kept::no);
  CHECK(v.winner == 1);
  CHECK(v.decision.runner_up == "ref");
  CHECK(v.decision.margin == Approx(0.05));
  CHECK(problem_note(v, {c("ref", 105, 0.001), c("x", 100, 0.001)}, 0.02).empty());
}
