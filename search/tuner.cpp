#include "tuner.hpp"

#include "errors.hpp"
#include "evaluate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <random>
#include <string_view>

namespace gt::search {

using Clock = std::chrono::steady_clock;
static double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
// A GPU that finished a measurement less than this long ago counts as busy (clock sustained).
constexpr double kBusyWindowS = 0.25;
// How a winner's note starts when its re-timing called a tie: a warm re-tune reads it back.
constexpr std::string_view kTieWith = "tie with ";          // a family's: "tie with CONFIG (...); ..."
constexpr std::string_view kTieBetween = "tie between ";    // a problem's: "tie between F1 and F2..."
static bool starts_with(const std::string& s, std::string_view p) { return s.rfind(p, 0) == 0; }

std::string describe(const TuneOptions& o) {
  std::string own;  // families with a budget of their own
  for (auto& [family, b] : o.family_budgets) own += fmt::format("{}{}: {}", own.empty() ? " (" : "; ", family, b.describe());
  if (!own.empty()) own += ")";
  return fmt::format("strategy {}, budget {} per family{}, seed {}, {} exploration, {} finalists x {} rounds{}, "
                     "switching from the baseline needs {:g} %",
                     o.strategy, o.budget.describe(), own, o.seed, o.quick_explore ? "quick" : "full", o.finalists,
                     o.retime.rounds,
                     o.retime.cap_aware() ? fmt::format(" (at the power cap {}, each turn after {:g} s alone)",
                                                        o.retime.rounds_at_cap(), o.retime.capped_warmup_s)
                                          : "",
                     100 * o.min_gain);
}

Tuner::Tuner(const PluginRegistry* plugins, Measurer& measurer, Store* store, CompilePool* pool, SpaceSource spaces,
             ProvenanceSource provenance, TuneOptions o)
    : plugins_(plugins),
      measurer_(measurer),
      store_(store),
      pool_(pool),
      spaces_(std::move(spaces)),
      provenance_(std::move(provenance)),
      o_(std::move(o)) {}

const Family* Tuner::plugin(const std::string& family) const { return plugins_ ? plugins_->find(family) : nullptr; }

// When this tuner's GPU is also the reference GPU, the other tuners re-time their finalists on
// it: every use of its measurer then holds the reference's lock (a worker answers one request
// at a time), and the problem its buffers hold is the reference's record, which the others
// change.
bool Tuner::is_reference() const { return reference_ && reference_->measurer == &measurer_; }
std::unique_lock<std::mutex> Tuner::hold_measurer() {
  return is_reference() ? std::unique_lock<std::mutex>(reference_->mu) : std::unique_lock<std::mutex>();
}

void Tuner::ensure_problem(const Problem& p) {
  std::optional<std::string>& prepared = is_reference() ? reference_->prepared : prepared_;
  if (prepared && *prepared == p.key()) return;
  measurer_.set_problem(p, o_.dist, o_.input_seed);
  prepared = p.key();
  // A problem new to this tuner settles the clock again. Coming back to it on the reference
  // GPU after re-timing another GPU's finalists does not: the GPU stayed busy.
  if (prepared_ != p.key()) settled_ = false;
  prepared_ = p.key();  // also for a reference GPU: this tuner has prepared a problem
}

void Tuner::mark_busy() {
  if (reference_ && is_reference()) reference_->last_busy = Clock::now();
}

Retimed Tuner::retime(const Problem& p, const std::vector<Candidate>& cs, uint64_t seed) {
  if (!reference_ || is_reference()) {
    auto lock = hold_measurer();
    ensure_problem(p);
    auto st = measurer_.retime(cs, o_.retime, seed);
    mark_busy();
    return st;
  }
  std::lock_guard lock(reference_->mu);
  if (reference_->prepared != p.key()) {
    reference_->measurer->set_problem(p, o_.dist, o_.input_seed);
    reference_->prepared = p.key();
  }
  // Settle first unless the reference GPU was measuring a moment ago (its own problem or
  // another GPU's finalists): an idle GPU's clock has dropped, a busy one's has not.
  if (since(reference_->last_busy) > kBusyWindowS) reference_->measurer->settle(cs.front(), o_.settle_s);
  auto st = reference_->measurer->retime(cs, o_.retime, seed);
  reference_->last_busy = Clock::now();
  return st;
}

// A re-timed measurement: full, with what it was re-timed against. Re-timed on the reference
// GPU, the row says so and has that GPU's provenance, and no sensor readings (those came from
// this GPU's exploration).
int64_t Tuner::record_retimed(const Problem& p, const Space& s, const Config& c, Measurement& m, Provenance prov,
                              const std::string& what) {
  const bool elsewhere = reference_ && !is_reference();
  m.quick = false;
  m.message = what + (elsewhere ? " on the reference GPU" : "");
  if (elsewhere) {
    const DeviceInfo& rd = reference_->measurer->device();
    prov.device_name = rd.name;
    prov.device_uuid = rd.uuid;
    prov.sm_count = rd.limits.sm_count;
    m.sensors = GpuSensors{};
    m.throttle.clear();
  }
  return record(p, s, c, m, prov);
}

int64_t Tuner::record(const Problem& p, const Space& s, const Config& c, const Measurement& m, const Provenance& prov) {
  if (!store_) return 0;
  StoredRow r;
  r.tune_id = o_.tune_id;
  r.replay = measurer_.is_replay();
  r.problem = p;
  r.family = s.family();
  r.config = c;
  r.config_name = s.name(c);
  r.config_hash = hex64(s.hash(c));
  r.m = m;
  // What the config is, readably (cuBLASLt's algorithm: tile, stages, split-K, ...), kept
  // with every successful row so a report can name the kernel without the plugin.
  if (m.status == Status::ok)
    if (const Family* fam = plugin(s.family()))
      if (std::string d = fam->describe(p, c); !d.empty()) r.m.message += (r.m.message.empty() ? "" : "; ") + d;
  r.prov = prov;
  r.prov.mode = m.quick ? "quick" : "full";
  r.prov.build_hash = build_hash_of(p, s.family(), c);
  return store_->insert(r);
}

uint64_t Tuner::build_hash_of(const Problem& p, const std::string& family, const Config& c) const {
  const Family* fam = plugin(family);
  if (!fam) return 0;  // a stand-in objective (tests) builds nothing
  try {
    return fam->build_hash(p, c, measurer_.device().limits).value_or(0);
  } catch (const std::exception&) {
    return 0;  // a plugin error: the row records no build, and is never reused by build
  }
}

namespace {
struct Result {
  Config config;
  Measurement m;
  int64_t row = 0;
  std::string name;
};
// By time (the figure), ties by name: deterministic.
bool faster(const Result& a, const Result& b) {
  return a.m.time_us() != b.m.time_us() ? a.m.time_us() < b.m.time_us() : a.name < b.name;
}
}  // namespace

namespace {
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
}  // namespace

FamilyOutcome Tuner::tune_family(const Problem& p, const std::string& family, const std::vector<Config>* fixed) {
  const Budget& budget = o_.budget_for(family);
  FamilyOutcome out;
  out.family = family;
  auto t0 = Clock::now();
  const DeviceInfo& dev = measurer_.device();
  Space space;
  try {
    space = spaces_(family, p);
  } catch (const std::exception& e) {
    out.skipped = e.what();
    return out;
  }
  const Family* fam = plugin(family);
  const bool source = fam && !fam->is_library();
  const uint64_t raw = space.raw_size();
  if (raw == 0) {
    out.skipped = "its parameter space is empty for this problem";
    return out;
  }
  if (raw <= 300000) {
    out.valid_space = space.count_valid();
    if (out.valid_space == 0) {
      auto why = space.check(space.default_config());
      out.skipped = "no valid config for this problem" + (why ? " (e.g. the default: " + *why + ")" : std::string());
      return out;
    }
  }
  std::string strategy_name = o_.strategy;
  if (strategy_name == "auto") {
    auto names = strategy_names();
    bool have_bayes = std::find(names.begin(), names.end(), "bayes") != names.end();
    // Exhaustive only where the budget lets it finish: cut short, it would have searched a
    // prefix of the enumeration order (cuBLASLt: its heuristic's picks, then whatever comes next).
    const bool whole = out.valid_space && out.valid_space <= o_.auto_exhaustive_below &&
                       out.valid_space <= budget.max_evaluations && budget.max_fraction >= 1.0;
    strategy_name = whole ? "exhaustive" : have_bayes ? "bayes" : "random";
  }
  std::unique_ptr<Strategy> strategy;
  // The family's own first choice (its first suggestion, e.g. cuBLASLt's heuristic pick, else
  // its default): always a finalist, so the winner is never one that only looked faster than
  // it in the short exploration timings.
  std::optional<Config> baseline;
  if (fixed) {
    strategy_name = "list";
    strategy = std::make_unique<FixedList>(*fixed);
  } else {
    std::vector<Config> first;
    if (fam) first = fam->suggest(p, dev.limits, 32, space.dims());
    first.push_back(space.default_config());
    baseline = first.front();
    strategy = make_strategy(strategy_name, space, o_.seed, first);
  }
  out.strategy = strategy_name;

  Provenance prov_quick = provenance_(family, true), prov_full = provenance_(family, false);
  const std::string fingerprint = prov_full.fingerprint();
  if (store_) {
    out.stale = uint64_t(store_->count_stale(p, dev.name, family, fingerprint));
    if (out.stale && on_note)
      on_note(fmt::format("{}: {} stored measurements were made with another toolchain or plugin source: "
                          "they are stale and are measured again",
                          family, out.stale));
  }

  Progress prog;
  prog.valid_space = out.valid_space;
  std::vector<Result> ok;
  double best_us = kNaN;
  std::string best_name;
  std::mt19937_64 rng(o_.seed ^ stable_hash(p.key() + family));
  const size_t lookahead = o_.lookahead ? o_.lookahead : (pool_ ? 2 * size_t(pool_->threads()) : 8);
  uint64_t planned_total = fixed ? fixed->size() : out.valid_space;
  if (budget.max_evaluations < std::numeric_limits<uint64_t>::max())
    planned_total = planned_total ? std::min(planned_total, budget.max_evaluations) : budget.max_evaluations;
  if (budget.max_fraction < 1.0 && out.valid_space)
    planned_total = std::min<uint64_t>(planned_total, uint64_t(std::ceil(budget.max_fraction * double(out.valid_space))));

  auto observe = [&](const Config& c, const Measurement& m, int64_t row) {
    ++prog.evaluations;
    ++out.evaluated;
    ++out.by_status[m.status];
    bool good = m.status == Status::ok && std::isfinite(m.time_us());
    strategy->observe(Observation{c, good, good ? m.time_us() : 0.0});
    if (good) {
      ok.push_back({c, m, row, space.name(c)});
      if (!(m.time_us() >= best_us)) {
        best_us = m.time_us();
        best_name = ok.back().name;
        prog.since_improvement = 0;
      } else {
        ++prog.since_improvement;
      }
    } else {
      ++prog.since_improvement;
    }
    if (on_progress) {
      double el = since(t0);
      double left = planned_total > prog.evaluations ? el / double(prog.evaluations) * double(planned_total - prog.evaluations) : kNaN;
      on_progress(TuneEvent{&p, family, prog.evaluations, planned_total, best_us, best_name, el, left});
    }
  };

  struct Pending {
    Config config;
    std::optional<std::shared_future<CompileResult>> compile;
  };
  std::deque<Pending> queue;
  bool exhausted = false;
  auto remaining = [&]() -> uint64_t {
    uint64_t used = prog.evaluations + queue.size();
    uint64_t r = std::numeric_limits<uint64_t>::max();
    if (budget.max_evaluations < r) r = budget.max_evaluations > used ? budget.max_evaluations - used : 0;
    if (budget.max_fraction < 1.0 && out.valid_space) {
      uint64_t cap = uint64_t(std::ceil(budget.max_fraction * double(out.valid_space)));
      r = std::min(r, cap > used ? cap - used : 0);
    }
    return r;
  };
  auto refill = [&] {
    while (!exhausted && queue.size() < lookahead) {
      prog.seconds = since(t0);
      if (budget.exhausted(prog) || (o_.stop && o_.stop->load())) return;
      size_t want = std::min<uint64_t>(lookahead - queue.size(), remaining());
      if (want == 0) return;
      std::vector<Config> batch = strategy->propose(want);
      if (batch.empty()) {
        exhausted = true;
        return;
      }
      // Each round in a freshly shuffled order, so a card warming up over the sweep cannot
      // pass for an effect of the config.
      std::shuffle(batch.begin(), batch.end(), rng);
      for (auto& c : batch) {
        if (store_ && o_.reuse) {
          // The same config built the same way: its build hash (source, defines, launch,
          // requests) pins what a change of host code would change.
          const std::string config_hash = hex64(space.hash(c));
          const uint64_t build = build_hash_of(p, family, c);
          auto hit = store_->find_reusable(p, dev.name, family, config_hash, fingerprint, !o_.quick_explore,
                                           measurer_.is_replay(), build);
          if (hit) {
            ++out.reused;
            observe(c, hit->m, hit->id);
            continue;
          }
          if (build && store_->find_reusable(p, dev.name, family, config_hash, fingerprint, false,
                                             measurer_.is_replay()))
            ++out.stale_builds;  // measured before with another build of this config: measured again
        }
        Pending pe{c, std::nullopt};
        if (source && pool_) {
          Refused why;
          auto req = compile_request(*fam, p, c, dev.limits, dev.arch(), nullptr, &why);
          if (!req) {
            Measurement m;
            m.status = refusal_status(why.code);
            m.message = why.why;
            observe(c, m, record(p, space, c, m, prov_full));
            continue;
          }
          pe.compile = pool_->submit(std::move(*req));
        }
        queue.push_back(std::move(pe));
      }
    }
  };

  refill();
  while (!queue.empty()) {
    prog.seconds = since(t0);
    if (o_.stop && o_.stop->load()) {
      out.stop_reason = "interrupted";
      break;
    }
    if (budget.exhausted(prog)) break;
    Pending pe = std::move(queue.front());
    queue.pop_front();
    Measurement m;
    m.quick = o_.quick_explore;
    CompileResult cr;
    bool runnable = true;
    if (pe.compile) {
      if (pe.compile->wait_for(std::chrono::duration<double>(o_.compile_timeout_s)) != std::future_status::ready) {
        m.status = Status::timeout;
        m.message = fmt::format("compilation took longer than {:g} s", o_.compile_timeout_s);
        runnable = false;
      } else {
        cr = pe.compile->get();
        m.res = cr.res;
        m.compile_s = cr.seconds;
        m.compiled_from_cache = cr.from_cache;
        if (!cr.ok) {
          m.status = Status::compile_failed;
          m.message = cr.log;
          runnable = false;
        }
      }
    }
    if (runnable) {
      auto lock = hold_measurer();
      ensure_problem(p);
      Candidate cand{family, fam, pe.config};
      m = measurer_.measure(cand, o_.quick_explore);
      mark_busy();
      if (m.status == Status::ok && !settled_) {
        // Settle the clock on the first candidate that works, then measure it again: every
        // number compared with another is taken in the same (sustained) state.
        try {
          measurer_.settle(cand, o_.settle_s);
          settled_ = true;
          m = measurer_.measure(cand, o_.quick_explore);
          mark_busy();
        } catch (const RuntimeFailure& e) {
          if (on_note) on_note(fmt::format("could not settle the clock: {}", e.what()));
          settled_ = true;
        }
      }
      if (pe.compile) {
        m.compile_s = cr.seconds;
        m.compiled_from_cache = cr.from_cache;
        if (m.res.registers < 0) m.res = cr.res;
      }
    }
    if (!m.compiled_from_cache) out.compile_s += m.compile_s;
    out.measure_s += m.measure_s;
    observe(pe.config, m, record(p, space, pe.config, m, m.quick ? prov_quick : prov_full));
    refill();
  }
  prog.seconds = since(t0);
  if (out.stop_reason.empty()) {
    std::string r = budget.reason(prog);
    out.stop_reason = !r.empty() ? r : (exhausted ? "space exhausted" : "budget reached");
  }

  // Finalists: the fastest distinct configs, re-timed interleaved (A B C A B C ...).
  std::sort(ok.begin(), ok.end(), faster);
  if (ok.empty()) {
    out.seconds = since(t0);
    return out;
  }
  std::vector<Result> fin;
  for (auto& r : ok)
    if (fin.size() < size_t(std::max(1, o_.finalists)) &&
        std::none_of(fin.begin(), fin.end(), [&](const Result& f) { return f.name == r.name; }))
      fin.push_back(r);
  if (baseline) {
    const std::string bname = space.name(*baseline);
    auto b = std::find_if(ok.begin(), ok.end(), [&](const Result& r) { return r.name == bname; });
    if (b != ok.end() && std::none_of(fin.begin(), fin.end(), [&](const Result& f) { return f.name == bname; }))
      fin.push_back(*b);
  }
  ResultKey key = ResultKey::of(dev.name, p);
  bool all_reused = out.reused == out.evaluated;
  std::optional<Winner> stored;
  if (store_ && all_reused && o_.reuse) stored = store_->winner(key, family);
  bool from_store = false;
  if (stored) {
    // A warm re-tune that measured nothing new: the winner settled last time stands. Its
    // reused row is its re-timed one, which at the power cap can read slower than other
    // configs' quick exploration rows, so it need not rank among the fastest explored.
    auto it = std::find_if(fin.begin(), fin.end(), [&](const Result& x) { return x.name == stored->config_name; });
    if (it == fin.end()) {
      auto o = std::find_if(ok.begin(), ok.end(), [&](const Result& x) { return x.name == stored->config_name; });
      if (o != ok.end()) it = fin.insert(fin.begin(), *o);
    }
    if (it != fin.end())
      if (auto row = store_->get(stored->row_id)) {
        it->m = row->m;
        it->row = row->id;
        std::iter_swap(fin.begin(), it);
        from_store = true;
      }
  }
  // The confirmation: a winner other than the baseline (fin[0]) against the baseline (*b)
  // alone, in a re-timing of their own: the finalists' re-timing chose the fastest of several
  // noisy figures, which overstates its lead. Both get the confirmation's figures and rows.
  // Returns why the baseline stays ("" when the winner leads measurably and by the margin): a
  // tie, a lead below TuneOptions::min_gain, a stop request or a failed re-timing.
  auto confirm = [&](std::vector<Result>::iterator b) -> std::string {
    if (o_.stop && o_.stop->load()) return "stopped before the confirmation against the baseline; the baseline kept";
    Retimed d;
    try {
      d = retime(p, {Candidate{family, fam, fin[0].config}, Candidate{family, fam, b->config}}, o_.seed + 2);
    } catch (const RuntimeFailure& e) {
      return fmt::format("the confirmation of {} against the baseline failed ({}); the baseline kept", fin[0].name,
                         e.what());
    }
    const std::string what = "confirmation: the winner and the baseline re-timed alone " + describe(o_.retime, d.capped);
    fin[0].m.time = d.stats[0];
    b->m.time = d.stats[1];
    fin[0].row = record_retimed(p, space, fin[0].config, fin[0].m, prov_full, what);
    b->row = record_retimed(p, space, b->config, b->m, prov_full, what);
    const double gain = b->m.time_us() / fin[0].m.time_us() - 1;
    if (tie(fin[0].m.time, b->m.time))
      return fmt::format("{}{} (overlapping intervals in the confirmation, {:+.1f} %); the baseline kept", kTieWith,
                         fin[0].name, 100 * gain);
    if (!(gain >= o_.min_gain))
      return fmt::format("{} {:+.1f} % against the baseline in the confirmation (switching needs {:g} %); the baseline kept",
                         fin[0].name, 100 * gain, 100 * o_.min_gain);
    return "";
  };
  bool kept_baseline = false;
  bool retimed = false;     // the finalists' re-timing decided (out.tie and runner_up are its)
  std::string margin_note;  // the baseline kept in the confirmation (below the margin)
  if (!from_store && !measurer_.is_replay() && !(o_.stop && o_.stop->load())) {
    std::vector<Candidate> cs;
    for (auto& f : fin) cs.push_back(Candidate{family, fam, f.config});
    try {
      Retimed rt = retime(p, cs, o_.seed);
      for (size_t i = 0; i < fin.size(); ++i) {
        fin[i].m.time = rt.stats[i];
        fin[i].row = record_retimed(p, space, fin[i].config, fin[i].m, prov_full,
                                    fmt::format("finalist: re-timed interleaved with {} others {}", fin.size() - 1,
                                                describe(o_.retime, rt.capped)));
      }
      std::sort(fin.begin(), fin.end(), faster);
      // A tie goes to the baseline (the family's first suggestion: cuBLASLt's heuristic pick, a
      // hand-written family's default): another config wins only when measurably faster.
      auto find_baseline = [&] {
        const std::string bname = baseline ? space.name(*baseline) : "";
        return std::find_if(fin.begin(), fin.end(), [&](const Result& r) { return baseline && r.name == bname; });
      };
      auto b = find_baseline();
      if (b != fin.begin() && b != fin.end() && tie(fin[0].m.time, b->m.time)) {
        std::rotate(fin.begin(), b, b + 1);
        kept_baseline = true;
      }
      if (fin.size() > 1) {
        out.tie = tie(fin[0].m.time, fin[1].m.time);
        out.runner_up = fin[1].name;
      }
      retimed = true;
      // A winner other than the baseline must also pass the confirmation (`confirm`).
      b = find_baseline();
      if (!kept_baseline && o_.min_gain > 0 && b != fin.begin() && b != fin.end()) margin_note = confirm(b);
      if (!margin_note.empty()) {  // `confirm` re-times in place: b still points at the baseline
        std::rotate(fin.begin(), b, b + 1);
        kept_baseline = true;
        out.tie = starts_with(margin_note, kTieWith);
        out.runner_up = fin[1].name;
      }
    } catch (const RuntimeFailure& e) {
      if (on_note) on_note(fmt::format("{}: re-timing the finalists failed ({}); keeping the exploration timings", family, e.what()));
    }
  }
  out.best = fin[0].config;
  out.best_name = fin[0].name;
  out.best_m = fin[0].m;
  out.best_row = fin[0].row;
  if (fam) out.best_description = fam->describe(p, fin[0].config);
  if (from_store) {
    // As the re-timing that chose it said (its note): the other reused rows were not re-timed
    // beside it.
    out.note = stored->note;
    out.tie = starts_with(out.note, kTieWith);
    if (out.tie) out.runner_up = out.note.substr(kTieWith.size(), out.note.find(" (") - kTieWith.size());
  } else {
    if (!retimed && fin.size() > 1) {  // the exploration timings decide
      out.tie = tie(fin[0].m.time, fin[1].m.time);
      out.runner_up = fin[1].name;
    }
    if (!margin_note.empty())
      out.note = margin_note;
    else if (out.tie)
      out.note = std::string(kTieWith) + out.runner_up +
                 (kept_baseline ? " (overlapping intervals); the baseline kept" : " (overlapping intervals); broken by time");
  }
  if (store_ && out.best_row && !from_store) store_->set_winner(key, family, out.best_name, out.best_row, out.note);
  out.seconds = since(t0);
  return out;
}

ProblemOutcome Tuner::tune(const Problem& p, const std::vector<std::string>& families,
                           const std::map<std::string, std::vector<Config>>& fixed) {
  ProblemOutcome po;
  po.problem = p;
  auto t0 = Clock::now();
  for (auto& f : families) {
    if (o_.stop && o_.stop->load()) break;
    try {
      auto it = fixed.find(f);
      po.families.push_back(tune_family(p, f, it == fixed.end() ? nullptr : &it->second));
    } catch (const RuntimeFailure& e) {
      // The problem itself could not be prepared (e.g. not enough memory): no family can run.
      FamilyOutcome fo;
      fo.family = f;
      fo.skipped = e.what();
      po.families.push_back(fo);
      if (!prepared_) break;
    }
  }
  // The families' winners, against each other, interleaved.
  std::vector<size_t> idx;
  for (size_t i = 0; i < po.families.size(); ++i)
    if (po.families[i].best) idx.push_back(i);
  if (idx.empty()) {
    po.note = "no config passed";
    po.seconds = since(t0);
    return po;
  }
  bool all_reused = std::all_of(idx.begin(), idx.end(), [&](size_t i) { return po.families[i].reused == po.families[i].evaluated; });
  const ResultKey key = ResultKey::of(measurer_.device().name, p);
  if (store_ && idx.size() > 1 && all_reused && o_.reuse && !measurer_.is_replay()) {
    // A warm re-tune that measured nothing new: the problem's winner as the families' re-timing
    // left it stands, with its note. Each family's own winner row was re-timed apart from the
    // others (at the power cap, at a clock of its own), so they are not ranked against each other.
    if (auto stored = store_->winner(key, kAllFamilies))
      if (auto row = store_->get(stored->row_id)) {
        auto it = std::find_if(idx.begin(), idx.end(), [&](size_t i) {
          return po.families[i].family == row->family && po.families[i].best_name == stored->config_name;
        });
        if (it != idx.end()) {
          FamilyOutcome& f = po.families[*it];
          f.best_m = row->m;
          f.best_row = row->id;
          po.winner = int(*it);
          po.note = stored->note;
          po.tie = starts_with(po.note, kTieBetween);
          po.seconds = since(t0);
          return po;
        }
      }
  }
  if (idx.size() > 1 && !measurer_.is_replay() && !(all_reused && o_.reuse) && !(o_.stop && o_.stop->load())) {
    std::vector<Candidate> cs;
    for (size_t i : idx) cs.push_back(Candidate{po.families[i].family, plugin(po.families[i].family), *po.families[i].best});
    try {
      Retimed rt = retime(p, cs, o_.seed + 1);
      // Stored as measurements of their own: the times printed and the winner's row agree.
      for (size_t j = 0; j < idx.size(); ++j) {
        FamilyOutcome& f = po.families[idx[j]];
        f.best_m.time = rt.stats[j];
        if (store_) {
          Space space = spaces_(f.family, p);
          f.best_row = record_retimed(p, space, *f.best, f.best_m, provenance_(f.family, false),
                                      fmt::format("family winner: re-timed interleaved with the {} other families' winners {}",
                                                  idx.size() - 1, describe(o_.retime, rt.capped)));
        }
      }
    } catch (const RuntimeFailure& e) {
      if (on_note) on_note(fmt::format("re-timing the families' winners failed ({})", e.what()));
    }
  }
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    const auto& x = po.families[a];
    const auto& y = po.families[b];
    return x.best_m.time_us() != y.best_m.time_us() ? x.best_m.time_us() < y.best_m.time_us() : x.family < y.family;
  });
  auto ref = std::find_if(idx.begin(), idx.end(), [&](size_t i) { return po.families[i].family == o_.tie_family; });
  const bool other_first = ref != idx.begin() && ref != idx.end();
  const bool kept_ref = other_first && tie(po.families[idx[0]].best_m.time, po.families[*ref].best_m.time);
  // Another family replaces the reference family only by the margin (TuneOptions::min_gain).
  const double gain = other_first ? po.families[*ref].best_m.time_us() / po.families[idx[0]].best_m.time_us() - 1 : 0;
  const bool kept_for_margin = other_first && !kept_ref && !(gain >= o_.min_gain);
  const std::string leader = po.families[idx[0]].family;
  if (kept_ref || kept_for_margin) std::rotate(idx.begin(), ref, ref + 1);
  po.winner = int(idx[0]);
  if (idx.size() > 1) {
    po.tie = tie(po.families[idx[0]].best_m.time, po.families[idx[1]].best_m.time);
    if (po.tie)
      po.note = std::string(kTieBetween) + po.families[idx[0]].family + " and " + po.families[idx[1]].family +
                (kept_ref ? ": " + o_.tie_family + " kept" : "");
    else if (kept_for_margin)
      po.note = fmt::format("{} {:+.1f} % against {} (switching needs {:g} %): {} kept", leader, 100 * gain, o_.tie_family,
                            100 * o_.min_gain, o_.tie_family);
  }
  const FamilyOutcome& w = po.families[idx[0]];
  if (store_ && w.best_row)
    store_->set_winner(key, kAllFamilies, w.best_name, w.best_row, po.note);
  po.seconds = since(t0);
  return po;
}

}  // namespace gt::search
