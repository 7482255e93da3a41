#include "tune/tuner.hpp"

#include "tune/driver.hpp"
#include "base/errors.hpp"
#include "measure/evaluate.hpp"
#include "store/legacy_description.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <future>

namespace gt::search {

std::string describe(const TuneOptions& o) {
  std::string own;  // families with a budget of their own
  for (auto& [family, b] : o.family_budgets) own += fmt::format("{}{}: {}", own.empty() ? " (" : "; ", family, b.describe());
  if (!own.empty()) own += ")";
  return fmt::format("strategy {}, budget {} per family{}{}, seed {}, {} exploration, {} finalists x {} rounds{}, "
                     "switching from the baseline needs {:g} %{}",
                     o.strategy, o.budget.describe(), o.budget_is_default ? " (the default)" : "", own, o.seed,
                     o.quick_explore ? "quick" : "full", o.finalists,
                     o.retime.rounds,
                     o.retime.cap_aware() ? fmt::format(" (at the power cap {}, each turn after {:g} s alone)",
                                                        o.retime.rounds_at_cap(), o.retime.capped_warmup_s)
                                          : "",
                     100 * o.min_gain,
                     o.transforms.automatic ? std::string()
                                            : fmt::format(", transforms {}", o.transforms.describe()));
}

// ---------------------------------------------------------------------------------------
// The pieces the phases share

struct Tuner::FormSetup {
  std::string family;
  Transform transform = Transform::none;  // the form: the problem as it is, or through this
  TransformPlan xplan;                     // the transform's plan; xplan.inner is the problem the family runs
  std::string label;                       // "wmma", "wmma+pad": the form in notes and progress
  Space space;                             // the family's, for xplan.inner
  const Family* fam = nullptr;  // null in replay
  bool source = false;          // compiled by NVRTC (not a library)
  Budget budget;
  std::unique_ptr<Strategy> strategy;
  std::optional<Config> baseline;  // the family's first choice (none for a fixed list)
  Provenance prov_quick, prov_full;
  std::string fingerprint;
  uint64_t planned = 0;  // evaluations at most (0: unknown)
  double t0 = 0;         // the run's clock when the family began
  double compile_wait_s = 0;  // the GPU waiting on this form's compiles: not on its budget's clock
  Candidate candidate(const Config& c) const { return Candidate{family, fam, c, transform}; }
  std::string name(const Config& c) const { return transformed_name(space.name(c), transform); }
};

struct Tuner::Result {
  Config config;
  Measurement m;
  int64_t row = 0;
  std::string name;         // with its transform (FormSetup::name)
  std::string figure_note;  // how the measurer had its re-timed figure, where it says (replay)
  const FormSetup* setup = nullptr;  // its form
  Candidate candidate() const { return setup->candidate(config); }
};

struct Tuner::Finalists {
  std::vector<Result> list;  // fastest first (by the figures they have)
  bool retimed = false;      // the figures are the finalists' re-timing
  bool from_store = false;   // a warm re-tune: the stored winner stands, first in the list
};

namespace {
// By time (the figure), ties by name: deterministic.
template <class R>
bool faster(const R& a, const R& b) {
  return a.m.time_us() != b.m.time_us() ? a.m.time_us() < b.m.time_us() : a.name < b.name;
}

// The "strategy" of a fixed list: exactly these configs, in order.
class FixedList : public Strategy {
 public:
  explicit FixedList(std::vector<Config> cs) : cs_(std::move(cs)) {}
  std::string name() const override { return "list"; }
  std::vector<Config> propose(size_t max) override {
    std::vector<Config> out;
    while (out.size() < max && next_ < cs_.size()) out.push_back(cs_[next_++]);
    return out;
  }
  void observe(const Observation&) override {}

 private:
  std::vector<Config> cs_;
  size_t next_ = 0;
};

Outcome outcome_of(const Measurement& m) { return {m.status, m.status == Status::ok ? m.time_us() : kNaN, m.message}; }
// Refuses configs whose `fast_accum` is on (TuneOptions::fast_accum).
void rule_out_fast_accum(Space& space) {
  for (size_t i = 0; i < space.dims(); ++i)
    if (space.params()[i].name == "fast_accum")
      space.add_constraint([i](const Config& c) -> std::optional<std::string> {
        if (c[i] == 0) return std::nullopt;
        return std::string("fast accumulation (fast_accum=1) is explored only when asked: --fast-accum, or the job's "
                           "[tune] fast_accum = true");
      });
}

}  // namespace

Tuner::Tuner(const PluginRegistry* plugins, Measurer& measurer, Store* store, CompilePool* pool, SpaceSource spaces,
             ProvenanceSource provenance, TuneOptions o)
    : plugins_(plugins),
      measurer_(measurer),
      store_(store),
      pool_(pool),
      spaces_(std::move(spaces)),
      provenance_(std::move(provenance)),
      o_(std::move(o)) {}

Tuner::~Tuner() = default;

double Tuner::now() const {
  if (auto s = measurer_.simulated_seconds()) return *s;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

const Family* Tuner::plugin(const std::string& family) const { return plugins_ ? plugins_->find(family) : nullptr; }

void Tuner::ensure_problem(const Problem& p) {
  if (prepared_ == p.key()) return;
  measurer_.set_problem(p, o_.dist, o_.input_seed);
  prepared_ = p.key();
  settled_ = false;  // a new problem settles the clock again
}

Measurement Tuner::measure_settled(const Candidate& c) {
  Measurement m = measurer_.measure(c, o_.quick_explore);
  if (m.status != Status::ok || settled_) return m;
  // Settle the clock on the first candidate that works, then measure it again: every number
  // compared with another is taken in the same (sustained) state.
  settled_ = true;
  try {
    measurer_.settle(c, o_.settle_s);
    return measurer_.measure(c, o_.quick_explore);
  } catch (const RuntimeFailure& e) {
    if (on_note) on_note(fmt::format("could not settle the clock: {}", e.what()));
    return m;
  }
}

Retimed Tuner::retime(const Problem& p, const std::vector<Candidate>& cs, uint64_t seed) {
  ensure_problem(p);
  return measurer_.retime(cs, o_.retime, seed);
}

std::optional<StoredRow> Tuner::reusable(const Problem& p, const FormSetup& setup, const Config& c,
                                         bool* stale_build) const {
  if (!store_ || !o_.reuse) return std::nullopt;
  // The same config built the same way: its build hash (source, defines, launch, requests)
  // pins what a change of host code would change.
  const std::string& device = measurer_.device().name;
  const std::string config_hash = hex64(transformed_hash(setup.space.hash(c), setup.transform));
  const uint64_t build = build_hash_of(p, setup.family, c, setup.transform);
  auto hit = store_->find_reusable(p, device, setup.family, config_hash, setup.fingerprint, !o_.quick_explore,
                                   measurer_.is_replay(), build);
  if (!hit && build && stale_build)
    *stale_build = bool(store_->find_reusable(p, device, setup.family, config_hash, setup.fingerprint, false,
                                              measurer_.is_replay()));
  return hit;
}

uint64_t Tuner::build_hash_of(const Problem& p, const std::string& family, const Config& c, Transform t) const {
  const Family* fam = plugin(family);
  if (!fam) return 0;  // a stand-in objective (tests) builds nothing
  try {
    const uint64_t h = fam->build_hash(transformed_problem(p, t), c, measurer_.device().limits).value_or(0);
    // A transformed build is the family's build and core's copies (their version).
    return h && t != Transform::none ? transformed_hash(h ^ (kTransformVersion * 0x5851f42d4c957f2dull), t) : h;
  } catch (const std::exception&) {
    return 0;  // a plugin error: the row records no build and is never reused by its build
  }
}

// A re-timed measurement: full, with what it was re-timed against.
int64_t Tuner::record_retimed(const Problem& p, const Space& s, Transform t, const Config& c, Measurement& m,
                              const Provenance& prov, const std::string& what) {
  m.quick = false;
  m.message = what;
  return record(p, s, t, c, m, prov);
}

StoredRow measured_row(const Problem& p, const Space& s, const Config& c, const Measurement& m, const Provenance& prov,
                       const std::string& tune_id, bool replay, Transform t) {
  StoredRow r;
  r.tune_id = tune_id;
  r.replay = replay;
  r.problem = p;
  r.family = s.family();
  r.config = c;
  r.config_name = transformed_name(s.name(c), t);
  r.config_hash = hex64(transformed_hash(s.hash(c), t));
  r.transform = t;
  r.params = s.assignments(c);
  r.params_from = "space";
  r.m = m;
  r.prov = prov;
  r.prov.mode = m.quick ? "quick" : "full";
  return r;
}

std::optional<int32_t> library_rank(const Family* fam, const Problem& fp, const Config& c, const gt_device& dev) {
  if (!fam || !fam->is_library()) return std::nullopt;
  // More than cuBLASLt's heuristic is asked for: beyond them a config is "not among them".
  constexpr int kRanked = 64;
  const std::vector<Config> picks = fam->suggest(fp, dev, kRanked, c.size());
  if (picks.empty()) return std::nullopt;  // it cannot be asked here
  auto it = std::find(picks.begin(), picks.end(), c);
  return it == picks.end() ? -1 : int32_t(it - picks.begin());
}

void note_rank(StoredRow& r, const Family* fam, const Problem& fp, const gt_device& dev) {
  r.heuristic_rank = library_rank(fam, fp, r.config, dev);
  if (!r.heuristic_rank && r.replay) r.heuristic_rank = rank_from_description(r.m.message);
}

int64_t Tuner::record(const Problem& p, const Space& s, Transform t, const Config& c, const Measurement& m,
                      const Provenance& prov, bool exploration) {
  if (!store_) return 0;
  StoredRow r = measured_row(p, s, c, m, prov, o_.tune_id, measurer_.is_replay(), t);
  r.prov.build_hash = build_hash_of(p, s.family(), c, t);
  // What the config is, readably (cuBLASLt's algorithm: tile, stages, split-K, ...), kept
  // with every successful row so a report can name the kernel without the plugin; and what
  // the transform does for the problem.
  auto xplan = plan_transform(p, t);
  if (m.status == Status::ok) {
    if (const Family* fam = plugin(s.family()); fam && xplan)
      if (std::string d = fam->describe(xplan->inner, c); !d.empty()) r.m.message += (r.m.message.empty() ? "" : "; ") + d;
    if (xplan && t != Transform::none)
      r.m.message += fmt::format("{}{}: {}", r.m.message.empty() ? "" : "; ", to_string(t), xplan->describe());
  }
  // The library's ranking of the config, as data (the description says it in words too).
  note_rank(r, plugin(s.family()), xplan ? xplan->inner : p, measurer_.device().limits);
  return store_->insert(r, exploration && o_.reuse);
}

// ---------------------------------------------------------------------------------------
// One family: setup -> explore -> finalists -> decide

FamilyOutcome Tuner::tune_family(const Problem& p, const std::string& family, const std::vector<Config>* fixed) {
  FamilyOutcome out;
  out.family = family;
  const double t0 = now();
  Setups setups;
  std::vector<Result> ok;
  FormsSoFar sofar;
  for (Transform t : kTransforms) {
    if (t != Transform::none) {
      // A fixed list measures exactly its configs; a replay has no transformed measurements.
      if (fixed || measurer_.is_replay() || stopping()) break;
      if (auto why = skip_form(o_.transforms, p, t, sofar)) {
        if (!o_.transforms.automatic && !o_.transforms.forms.empty()) {  // a list names the forms: say why not
          FormOutcome skipped;
          skipped.transform = t;
          skipped.skipped = *why;
          out.forms.push_back(std::move(skipped));
        }
        continue;
      }
    }
    FormOutcome form = tune_form(p, family, t, fixed, setups, ok, out);
    const bool runs = form.skipped.empty();
    if (t == Transform::none) sofar.plain_runs = runs;
    sofar.any_runs = sofar.any_runs || runs;
    out.forms.push_back(std::move(form));
  }
  if (!sofar.any_runs) out.skipped = out.forms.front().skipped;  // the plain form's reason
  if (!ok.empty()) {
    Finalists fin = finalists(p, setups, std::move(ok), out);
    decide_family(p, setups, fin, out);
  }
  out.seconds = now() - t0;
  return out;
}

FormOutcome Tuner::tune_form(const Problem& p, const std::string& family, Transform t, const std::vector<Config>* fixed,
                             Setups& setups, std::vector<Result>& ok, FamilyOutcome& out) {
  FormOutcome form;
  form.transform = t;
  FamilyOutcome part;  // this form's own counts
  part.family = family;
  FormSetup& setup = setups.emplace_back();
  setup.t0 = now();
  if (!set_up_form(p, family, t, fixed, setup, part)) {
    setups.pop_back();  // the last one, never referenced: nothing moves
    form.skipped = part.skipped;
    if (t != Transform::none && on_note) on_note(fmt::format("{}: {} not explored: {}", family, to_string(t), part.skipped));
    return form;
  }
  if (t != Transform::none) {
    form.plan = setup.xplan.describe();
    if (on_note) on_note(fmt::format("{}: exploring {} beside the plain problem: {}", family, to_string(t), form.plan));
  }
  std::vector<Result> found = explore(p, setup, part);
  for (const Result& r : found)
    if (!(r.m.time_us() >= form.best_us)) {
      form.best_us = r.m.time_us();
      form.best_name = r.name;
    }
  ok.insert(ok.end(), std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
  form.valid_space = part.valid_space;
  form.evaluated = part.evaluated;
  form.stop_reason = part.stop_reason;
  form.compile_wait_s = setup.compile_wait_s;
  // The family's figures are its plain form's, or the first form's that ran.
  const bool first = std::none_of(out.forms.begin(), out.forms.end(), [](const FormOutcome& f) { return f.skipped.empty(); });
  if (first) {
    out.strategy = part.strategy;
    out.valid_space = part.valid_space;
    out.stop_reason = part.stop_reason;
  }
  out.evaluated += part.evaluated;
  out.reused += part.reused;
  out.stale += part.stale;
  out.stale_builds += part.stale_builds;
  for (auto& [status, n] : part.by_status) out.by_status[status] += n;
  out.compile_s += part.compile_s;
  out.measure_s += part.measure_s;
  return form;
}

bool Tuner::set_up_form(const Problem& p, const std::string& family, Transform t, const std::vector<Config>* fixed,
                        FormSetup& setup, FamilyOutcome& out) {
  setup.family = family;
  setup.transform = t;
  setup.label = transformed_name(family, t);
  std::string why;
  auto xplan = plan_transform(p, t, &why);
  if (!xplan) {
    out.skipped = why;
    return false;
  }
  setup.xplan = *xplan;
  const Problem& q = setup.xplan.inner;  // what the family runs (p itself for the plain form)
  try {
    setup.space = spaces_(family, q);
  } catch (const std::exception& e) {
    out.skipped = e.what();
    return false;
  }
  if (!o_.fast_accum) rule_out_fast_accum(setup.space);
  const Space& space = setup.space;
  if (space.raw_size() == 0) {
    out.skipped = "its parameter space is empty for this problem";
    return false;
  }
  if (space.raw_size() <= 300000) {
    out.valid_space = space.count_valid();
    if (out.valid_space == 0) {
      auto why = space.check(space.default_config());
      out.skipped = "no valid config for this problem" + (why ? " (e.g. the default: " + *why + ")" : std::string());
      return false;
    }
  }
  setup.fam = plugin(family);
  setup.source = setup.fam && !setup.fam->is_library();
  setup.budget = o_.budget_for(family);
  out.strategy = fixed ? "list" : o_.strategy;
  if (out.strategy == "auto") {
    // Exhaustive only where the budget lets it finish: cut short, it would have searched a
    // prefix of the enumeration order (cuBLASLt: its heuristic's picks, then whatever comes next).
    auto names = strategy_names();
    const bool whole = out.valid_space && out.valid_space <= o_.auto_exhaustive_below &&
                       out.valid_space <= setup.budget.max_evaluations && setup.budget.max_fraction >= 1.0;
    out.strategy = whole ? "exhaustive" : std::count(names.begin(), names.end(), "bayes") ? "bayes" : "random";
  }
  if (fixed) {
    setup.strategy = std::make_unique<FixedList>(*fixed);
  } else {
    // The family's own first choice (its first suggestion, e.g. cuBLASLt's heuristic pick,
    // else its default): always a finalist, so the winner is never one that only looked
    // faster than it in the short exploration timings.
    std::vector<Config> first;
    if (setup.fam) first = setup.fam->suggest(q, measurer_.device().limits, 32, space.dims());
    first.push_back(space.default_config());
    setup.baseline = first.front();
    setup.strategy = make_strategy(out.strategy, space, o_.seed, first);
  }
  setup.planned = fixed ? std::min<uint64_t>(fixed->size(), setup.budget.planned(fixed->size()))
                       : setup.budget.planned(out.valid_space);
  setup.prov_quick = provenance_(family, true);
  setup.prov_full = provenance_(family, false);
  setup.fingerprint = setup.prov_full.fingerprint();
  if (store_) {
    // So that an export can spell the configs readably where the space cannot be had again.
    std::vector<std::string> names;
    for (auto& prm : space.params()) names.push_back(prm.name);
    store_->note_param_names(family, setup.prov_full.family_version, names);
  }
  if (store_ && t == Transform::none) {  // the family's stale rows, all forms': counted once
    out.stale = uint64_t(store_->count_stale(p, measurer_.device().name, family, setup.fingerprint));
    if (out.stale && on_note)
      on_note(fmt::format("{}: {} stored measurements were made with another toolchain or plugin source: "
                          "they are stale and are measured again",
                          family, out.stale));
  }
  return true;
}

// The search loop's evaluator for one family: the store answers first, a refusal or a
// compile starts ahead of the GPU, then the config is verified and timed, and every outcome
// is stored and counted in the family's outcome.
class Tuner::Explorer : public Evaluator {
 public:
  Explorer(Tuner& t, const Problem& p, FormSetup& setup, FamilyOutcome& out) : t_(t), p_(p), setup_(setup), out_(out) {}

  std::optional<Outcome> ahead(const Config& c) override {
    bool stale_build = false;
    if (auto hit = t_.reusable(p_, setup_, c, &stale_build)) {
      ++out_.reused;
      Outcome o = counted(c, hit->m, hit->id);
      // Its GPU seconds only: its compile overlapped other configs' measuring then.
      o.cost_s = hit->m.measure_s;
      return o;
    }
    if (stale_build) ++out_.stale_builds;  // stored with another build of this config: measured again
    std::shared_future<CompileResult> compile;  // invalid: nothing to compile
    if (setup_.source && t_.pool_) {
      Refused why;
      const DeviceInfo& dev = t_.measurer_.device();
      auto req = compile_request(*setup_.fam, setup_.xplan.inner, c, dev.limits, dev.arch(), nullptr, &why);
      if (!req) {
        Measurement m;
        m.status = refusal_status(why.code);
        m.message = setup_.transform == Transform::none
                        ? why.why
                        : fmt::format("under {} ({}): {}", to_string(setup_.transform), setup_.xplan.inner.key(), why.why);
        return counted(c, m, t_.record(p_, setup_.space, setup_.transform, c, m, setup_.prov_full, true));
      }
      compile = t_.pool_->submit(std::move(*req));
    }
    compiles_.push_back(std::move(compile));  // the loop evaluates in the order it queues
    return std::nullopt;
  }

  Outcome evaluate(const Config& c) override {
    std::shared_future<CompileResult> compile = std::move(compiles_.front());
    compiles_.pop_front();
    Measurement m;
    m.quick = t_.o_.quick_explore;
    CompileResult cr;
    bool runnable = true;
    if (compile.valid()) {
      const double limit = t_.o_.compile_timeout_s;
      const double waited_from = t_.now();
      const bool ready = compile.wait_for(std::chrono::duration<double>(limit)) == std::future_status::ready;
      setup_.compile_wait_s += t_.now() - waited_from;
      if (!ready) {
        m.status = Status::timeout;
        m.message = fmt::format("compilation took longer than {:g} s", limit);
        runnable = false;
      } else {
        cr = compile.get();
        m.res = cr.res;
        if (!cr.ok) {
          m.status = Status::compile_failed;
          m.message = cr.log;
          runnable = false;
        }
      }
    }
    if (runnable) {
      t_.ensure_problem(p_);
      m = t_.measure_settled(setup_.candidate(c));
      if (m.res.registers < 0) m.res = cr.res;
    }
    if (compile.valid()) {
      m.compile_s = cr.seconds;
      m.compiled_from_cache = cr.from_cache;
    }
    if (!m.compiled_from_cache) out_.compile_s += m.compile_s;
    out_.measure_s += m.measure_s;
    return counted(c, m, t_.record(p_, setup_.space, setup_.transform, c, m, m.quick ? setup_.prov_quick : setup_.prov_full,
                                   true));
  }

  // The form's budget counts what the GPU does for it, not the time it stood waiting for a
  // compile: at 4096x4096x4097 wgmma_tma's pad form spent its 4 s compiling and measured one
  // config (issue 55). Compiles still run ahead on the pool while the GPU measures others.
  double seconds() const override { return t_.now() - setup_.t0 - setup_.compile_wait_s; }
  bool stop_requested() const override { return t_.stopping(); }

  std::vector<Result> ok;  // every config that passed
  double best_us = kNaN;
  std::string best_name;

 private:
  Outcome counted(const Config& c, const Measurement& m, int64_t row) {
    ++out_.by_status[m.status];
    if (m.status == Status::ok && std::isfinite(m.time_us())) {
      ok.push_back({c, m, row, setup_.name(c), "", &setup_});
      if (!(m.time_us() >= best_us)) {
        best_us = m.time_us();
        best_name = setup_.space.readable(c);  // shown in the progress display
      }
    }
    return outcome_of(m);
  }

  Tuner& t_;
  const Problem& p_;
  FormSetup& setup_;
  FamilyOutcome& out_;
  std::deque<std::shared_future<CompileResult>> compiles_;
};

std::vector<Tuner::Result> Tuner::explore(const Problem& p, FormSetup& setup, FamilyOutcome& out) {
  Explorer ev(*this, p, setup, out);
  SearchOptions so;
  so.lookahead = o_.lookahead ? o_.lookahead : (pool_ ? 2 * size_t(pool_->threads()) : 8);
  so.valid_space = out.valid_space;
  so.shuffle_seed = o_.seed ^ stable_hash(p.key() + setup.label);  // the label is the family for the plain form
  so.on_evaluated = [&](const Observation&, const Progress& prog) {
    if (!on_progress) return;
    const uint64_t total = setup.planned, done = prog.evaluations;
    const double left = total > done ? prog.seconds / double(done) * double(total - done) : kNaN;
    on_progress(TuneEvent{&p, setup.label, done, total, ev.best_us, ev.best_name, prog.seconds, left});
  };
  SearchResult r = drive(*setup.strategy, ev, setup.budget, so);
  out.evaluated = r.history.size();
  out.stop_reason = r.stop_reason;
  return std::move(ev.ok);
}

namespace {
// The name of a setup's baseline (its family's first choice for its problem), "" without one.
template <class Setup>
std::string baseline_name(const Setup& setup) {
  return setup.baseline ? setup.name(*setup.baseline) : std::string();
}
}  // namespace

Tuner::Finalists Tuner::finalists(const Problem& p, const Setups& setups, std::vector<Result> ok, FamilyOutcome& out) {
  // The fastest distinct configs of every form, and beside them each form's baseline and fastest
  // config: every form is in the one re-timing.
  std::sort(ok.begin(), ok.end(), faster<Result>);
  Finalists fin;
  auto in = [&](const std::string& name) {
    return std::find_if(fin.list.begin(), fin.list.end(), [&](const Result& r) { return r.name == name; });
  };
  for (auto& r : ok)
    if (fin.list.size() < size_t(std::max(1, o_.finalists)) && in(r.name) == fin.list.end()) fin.list.push_back(r);
  for (const FormSetup& setup : setups) {
    const std::string bname = baseline_name(setup);
    auto b = std::find_if(ok.begin(), ok.end(), [&](const Result& r) { return !bname.empty() && r.name == bname; });
    if (b != ok.end() && in(bname) == fin.list.end()) fin.list.push_back(*b);
    auto fastest = std::find_if(ok.begin(), ok.end(), [&](const Result& r) { return r.setup == &setup; });
    if (fastest != ok.end() && in(fastest->name) == fin.list.end()) fin.list.push_back(*fastest);
  }
  // A warm re-tune that measured nothing new: the winner settled last time stands. Its reused
  // row is its re-timed one, which at the power cap can read slower than other configs' quick
  // exploration rows, so it need not rank among the fastest explored.
  const ResultKey key = ResultKey::of(measurer_.device().name, p);
  if (store_ && o_.reuse && out.reused == out.evaluated)
    if (auto stored = store_->winner(key, setups.front().family)) {
      auto it = in(stored->config_name);
      if (it == fin.list.end()) {
        auto o = std::find_if(ok.begin(), ok.end(), [&](const Result& x) { return x.name == stored->config_name; });
        if (o != ok.end()) it = fin.list.insert(fin.list.begin(), *o);
      }
      if (it != fin.list.end())
        if (auto row = store_->get(stored->row_id)) {
          it->m = row->m;
          it->row = row->id;
          std::iter_swap(fin.list.begin(), it);
          fin.from_store = true;
          out.decision = stored->decision;
          out.note = stored->note;
          return fin;
        }
    }
  if (stopping()) return fin;
  std::vector<Candidate> cs;
  for (auto& f : fin.list) cs.push_back(f.candidate());
  try {
    Retimed rt = retime(p, cs, o_.seed);
    for (size_t i = 0; i < fin.list.size(); ++i) {
      Result& f = fin.list[i];
      f.m.time = rt.stats[i];
      if (i < rt.notes.size()) f.figure_note = rt.notes[i];
      f.row = record_retimed(p, f.setup->space, f.setup->transform, f.config, f.m, f.setup->prov_full,
                             fmt::format("finalist: re-timed interleaved with {} others {}{}", fin.list.size() - 1,
                                         describe(o_.retime, rt.capped),
                                         f.figure_note.empty() ? "" : " (" + f.figure_note + ")"));
    }
    std::sort(fin.list.begin(), fin.list.end(), faster<Result>);
    fin.retimed = true;
  } catch (const StoreWriteError&) {
    throw;  // a measurement not kept stops the tune (a full disk is no reason to go on)
  } catch (const RuntimeFailure& e) {
    if (on_note)
      on_note(fmt::format("{}: re-timing the finalists failed ({}); keeping the exploration timings", setups.front().family,
                          e.what()));
  }
  return fin;
}

std::optional<std::pair<Verdict, std::string>> Tuner::confirm(const Problem& p, Result& leader, Result& baseline) {
  // The finalists' re-timing chose the fastest of several noisy figures, which overstates its
  // lead: the leader is re-timed against the baseline alone, and that decides. Both get the
  // confirmation's figures and rows.
  auto kept = [&](const std::string& why) {
    Verdict v;
    v.winner = 1;
    v.leader = 0;
    v.kept = Kept::margin;
    v.decision.runner_up = leader.name;
    v.decision.margin = leader.m.time_us() / baseline.m.time_us() - 1;
    return std::make_pair(v, why);
  };
  if (stopping()) return kept("stopped before the confirmation against the baseline; the baseline kept");
  Retimed d;
  try {
    d = retime(p, {leader.candidate(), baseline.candidate()}, o_.seed + 2);
  } catch (const RuntimeFailure& e) {
    return kept(fmt::format("the confirmation of {} against the baseline failed ({}); the baseline kept",
                            leader.setup->space.readable(leader.config),
                            e.what()));
  }
  const std::string what = "confirmation: the winner and the baseline re-timed alone " + describe(o_.retime, d.capped);
  leader.m.time = d.stats[0];
  baseline.m.time = d.stats[1];
  leader.row = record_retimed(p, leader.setup->space, leader.setup->transform, leader.config, leader.m,
                              leader.setup->prov_full, what);
  baseline.row = record_retimed(p, baseline.setup->space, baseline.setup->transform, baseline.config, baseline.m,
                                baseline.setup->prov_full, what);
  const std::vector<Contender> pair = {{leader.name, leader.m.time, leader.setup->space.readable(leader.config)},
                                       {baseline.name, baseline.m.time, baseline.setup->space.readable(baseline.config)}};
  Verdict v = decide(pair, size_t(1), o_.min_gain);
  if (v.kept == Kept::no) return std::nullopt;
  return std::make_pair(v, family_note(v, pair, o_.min_gain, true));
}

void Tuner::decide_family(const Problem& p, const Setups& setups, Finalists& fin, FamilyOutcome& out) {
  std::vector<Result>& list = fin.list;
  size_t w = 0;
  if (!fin.from_store) {
    std::vector<Contender> cs;
    for (auto& f : list) cs.push_back({f.name, f.m.time, f.setup->space.readable(f.config)});
    // The reference: the plain form's baseline (the first form's, where the plain problem
    // could not be planned). A transformed config replaces it only by the rule, as any other.
    const std::string bname = baseline_name(setups.front());
    auto b = std::find_if(list.begin(), list.end(), [&](const Result& r) { return !bname.empty() && r.name == bname; });
    std::optional<size_t> ref;
    if (b != list.end()) ref = size_t(b - list.begin());
    Verdict v = decide(cs, ref, o_.min_gain);
    w = v.winner;
    out.decision = v.decision;
    out.note = family_note(v, cs, o_.min_gain, false);
    // A winner other than the baseline must also pass the confirmation against it alone.
    if (fin.retimed && ref && w != *ref && o_.min_gain > 0)
      if (auto kept = confirm(p, list[w], list[*ref])) {
        out.decision = kept->first.decision;
        out.note = kept->second;
        w = *ref;
      }
  }
  const Result& best = list[w];
  const FormSetup& form = *best.setup;
  out.best = best.config;
  out.best_transform = form.transform;
  out.best_name = best.name;
  out.best_params = form.space.readable(best.config);
  out.best_m = best.m;
  out.best_row = best.row;
  out.figure_note = best.figure_note;
  if (form.fam) out.best_description = form.fam->describe(form.xplan.inner, best.config);
  if (form.transform != Transform::none)
    out.best_description += (out.best_description.empty() ? "" : "; ") +
                            fmt::format("{}: {}", to_string(form.transform), form.xplan.describe());
  if (store_ && out.best_row && !fin.from_store)
    store_->set_winner(ResultKey::of(measurer_.device().name, p), form.family, out.best_name, out.best_row, out.note,
                       out.decision);
}

// ---------------------------------------------------------------------------------------
// One problem: its families, then their winners against each other

ProblemOutcome Tuner::tune(const Problem& p, const std::vector<std::string>& families,
                           const std::map<std::string, std::vector<Config>>& fixed) {
  ProblemOutcome po;
  po.problem = p;
  const double t0 = now();
  for (auto& f : families) {
    if (stopping()) break;
    try {
      auto it = fixed.find(f);
      po.families.push_back(tune_family(p, f, it == fixed.end() ? nullptr : &it->second));
    } catch (const StoreWriteError&) {
      throw;  // not this family's failure: every later write would fail too
    } catch (const RuntimeFailure& e) {
      // The problem itself could not be prepared (e.g. not enough memory): no family can run.
      FamilyOutcome fo;
      fo.family = f;
      fo.skipped = e.what();
      po.families.push_back(fo);
      if (!prepared_) break;
    }
  }
  decide_problem(po);
  po.seconds = now() - t0;
  return po;
}

// A warm re-tune that measured nothing new: the problem's winner as the families' re-timing
// left it stands, with its decision. Each family's own winner row was re-timed apart from the
// others (at the power cap, at a clock of its own), so they are not ranked against each other.
bool Tuner::reuse_problem_winner(ProblemOutcome& po, const std::vector<size_t>& idx) {
  auto stored = store_->winner(ResultKey::of(measurer_.device().name, po.problem), kAllFamilies);
  if (!stored) return false;
  auto row = store_->get(stored->row_id);
  if (!row) return false;
  auto it = std::find_if(idx.begin(), idx.end(), [&](size_t i) {
    return po.families[i].family == row->family && po.families[i].best_name == stored->config_name;
  });
  if (it == idx.end()) return false;
  FamilyOutcome& f = po.families[*it];
  f.best_m = row->m;
  f.best_row = row->id;
  po.winner = int(*it);
  po.decision = stored->decision;
  po.note = stored->note;
  return true;
}

// The families' winners re-timed interleaved, stored as measurements of their own: the times
// printed and the winner's row agree.
void Tuner::retime_family_winners(ProblemOutcome& po, const std::vector<size_t>& idx) {
  std::vector<Candidate> cs;
  for (size_t i : idx)
    cs.push_back(Candidate{po.families[i].family, plugin(po.families[i].family), *po.families[i].best,
                           po.families[i].best_transform});
  try {
    Retimed rt = retime(po.problem, cs, o_.seed + 1);
    for (size_t j = 0; j < idx.size(); ++j) {
      FamilyOutcome& f = po.families[idx[j]];
      f.best_m.time = rt.stats[j];
      if (j < rt.notes.size()) f.figure_note = rt.notes[j];
      if (store_)
        f.best_row = record_retimed(po.problem, spaces_(f.family, transformed_problem(po.problem, f.best_transform)),
                                    f.best_transform, *f.best, f.best_m, provenance_(f.family, false),
                                    fmt::format("family winner: re-timed interleaved with the {} other families' winners {}",
                                                idx.size() - 1, describe(o_.retime, rt.capped)));
    }
  } catch (const StoreWriteError&) {
    throw;
  } catch (const RuntimeFailure& e) {
    if (on_note) on_note(fmt::format("re-timing the families' winners failed ({})", e.what()));
  }
}

// The families this run did not tune whose winner for the problem the store holds and is still
// current (the same fingerprint and build): the problem's winner is decided over every family
// measured, not over this run's alone. Else a tune of one family hands it the problem over a
// faster family tuned before (shared_tile at 16491 us over register_tile at 3007 us).
void Tuner::add_stored_families(ProblemOutcome& po) {
  if (!store_) return;
  for (const Winner& w : store_->winners_of(ResultKey::of(measurer_.device().name, po.problem))) {
    if (w.family == kAllFamilies ||
        std::any_of(po.families.begin(), po.families.end(), [&](const FamilyOutcome& f) { return f.family == w.family; }))
      continue;
    auto row = store_->get(w.row_id);
    if (!row || row->replay != measurer_.is_replay()) continue;
    FamilyOutcome f;
    Problem ran = po.problem;  // the transformed problem the family ran
    try {
      if (row->fingerprint != provenance_(w.family, false).fingerprint()) continue;  // stale: another toolchain
      // The family ran the transformed problem: its config is of that problem's space.
      ran = transformed_problem(po.problem, row->transform);
      const Space& space = spaces_(w.family, ran);
      if (!space.valid(row->config)) continue;  // the family's space no longer has it
      f.best = row->config;
      const uint64_t build = build_hash_of(po.problem, w.family, *f.best, row->transform);
      if (build && row->prov.build_hash && build != row->prov.build_hash) continue;  // built differently now
    } catch (const std::exception&) {
      continue;  // the family is not loaded here, or not recorded in this replay
    }
    f.family = w.family;
    f.stored_only = true;
    f.strategy = "stored";
    f.stop_reason = "not tuned in this run: its winner in the store";
    f.best_name = w.config_name;
    f.best_transform = row->transform;
    f.best_m = row->m;
    f.best_row = row->id;
    f.decision = w.decision;
    f.note = "not tuned in this run: the store's current winner of the family, re-timed beside this run's";
    if (const Family* fam = plugin(w.family)) f.best_description = fam->describe(ran, *f.best);
    po.families.push_back(std::move(f));
  }
}

void Tuner::decide_problem(ProblemOutcome& po) {
  add_stored_families(po);
  std::vector<size_t> idx;
  for (size_t i = 0; i < po.families.size(); ++i)
    if (po.families[i].best) idx.push_back(i);
  if (idx.empty()) {
    po.note = "no config passed";
    return;
  }
  const bool all_reused = std::all_of(idx.begin(), idx.end(), [&](size_t i) {
    return po.families[i].reused == po.families[i].evaluated;
  });
  if (idx.size() > 1 && all_reused && o_.reuse) {
    if (store_ && !measurer_.is_replay() && reuse_problem_winner(po, idx)) return;
  } else if (idx.size() > 1 && !stopping()) {
    retime_family_winners(po, idx);
  }
  // Another family replaces the reference family (cuBLASLt) only measurably and by the margin.
  std::vector<Contender> cs;
  std::optional<size_t> ref;
  for (size_t j = 0; j < idx.size(); ++j) {
    cs.push_back({po.families[idx[j]].family, po.families[idx[j]].best_m.time});
    if (po.families[idx[j]].family == o_.tie_family) ref = j;
  }
  Verdict v = decide(cs, ref, o_.min_gain);
  po.winner = int(idx[v.winner]);
  po.decision = v.decision;
  po.note = problem_note(v, cs, o_.min_gain);
  const FamilyOutcome& w = po.families[size_t(po.winner)];
  if (store_ && w.best_row)
    store_->set_winner(ResultKey::of(measurer_.device().name, po.problem), kAllFamilies, w.best_name, w.best_row,
                       po.note, po.decision);
}

}  // namespace gt::search
