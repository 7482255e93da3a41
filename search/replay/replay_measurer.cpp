#include "replay/replay_measurer.hpp"

#include "measure/bench.hpp"
#include "base/errors.hpp"
#include "measure/roofs.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>

namespace gt::search {

namespace {

// Verifying a candidate besides its one call: filling C with NaN, the float64 comparison on
// the GPU, the worker's round trip (a few ms).
constexpr double kVerifyOverheadS = 0.003;

Stats point(double us) {
  Stats s;
  s.count = 1;
  s.median = s.mean = s.min = s.max = s.p10 = s.p90 = s.ci_low = s.ci_high = us;
  return s;
}

// The GPU's seconds for one turn of a re-timing (MeasureService::retime): its warm-up, two
// calls alone, then samples until kTurnMaxSamples or kTurnMaxTimeS (at least kTurnMinSamples).
double turn_s(double us, double warmup_s) {
  const double call = us * 1e-6;
  const double floor = kTurnMinSamples * call;
  return warmup_s + 2 * call + std::clamp(kTurnMaxSamples * call, floor, std::max(kTurnMaxTimeS, floor));
}

}  // namespace

double estimated_measure_s(double us, bool quick) {
  if (!(us > 0 && std::isfinite(us))) return kVerifyOverheadS;  // a failure: at most the verification
  const TimingOptions t = quick ? TimingOptions::quick() : TimingOptions{};
  const double call = us * 1e-6;
  // Sampling stops once the interval is narrow: assumed after twice its floor (the minimum
  // samples, or one batch of queued calls), within the sampling cap (which gives way to the
  // minimum samples).
  const double floor = t.min_samples * call;
  const double sampling = std::clamp(2 * std::max(floor, kBatchTargetS), floor, std::max(t.max_time_s, floor));
  return kVerifyOverheadS + call + t.warmup_s + 2 * call + sampling;
}

ReplayMeasurer::ReplayMeasurer(const Recording& rec, unsigned compile_threads) : rec_(rec) {
  if (rec.spaces().empty()) throw InputError("--replay: the recording holds no spaces");
  const RecordedDevice& d = rec.spaces().front().device();
  dev_.index = -1;
  dev_.name = d.name;
  dev_.uuid = d.uuid;
  try {
    dev_.limits = arch_limits(d.arch);
  } catch (const InputError&) {
    dev_.limits = arch_limits("sm_90");
  }
  dev_.driver_version = "replay";
  dev_.runtime_version = "replay";
  compile_free_.assign(std::max(1u, compile_threads ? compile_threads : rec.compile_threads), 0.0);
}

std::string ReplayMeasurer::describe() const {
  return fmt::format("REPLAY of {} recorded spaces ({}), no GPU", rec_.spaces().size(), dev_.name);
}

void ReplayMeasurer::set_problem(const Problem& p, Distribution, uint64_t) {
  problem_ = p;
  problem_key_ = p.key();
  std::map<std::string, double> roofs;
  for (auto& r : rec_.roofs())
    if (r.device_name == dev_.name) roofs[r.name] = r.value;
  const std::string name = compute_roof_name(p);
  const double compute = roofs.count(name) ? roofs[name] : kNaN;
  const double memory = roofs.count("mem_read") ? roofs["mem_read"] : kNaN;
  Roofline line = roofline_at(p, compute, memory);
  roofline_us_ = std::isfinite(line.flops_per_s) && line.flops_per_s > 0 ? p.flops() / line.flops_per_s * 1e6 : kNaN;
  roof_text_ = line.bound == Roofline::Bound::memory
                   ? fmt::format("mem_read {:.2f} TB/s at {:.1f} FLOP per byte", memory / 1e12, line.intensity)
                   : fmt::format("{} {:.0f} TFLOP/s", name, compute / 1e12);
}

const RecordedSpace* ReplayMeasurer::space_of(const std::string& family) const {
  return rec_.find(problem_key_, family);
}

void ReplayMeasurer::charge(const RecordedResult& r, bool quick) {
  double measure = r.measure_s;
  if (!std::isfinite(measure)) {
    measure = r.explored.status == Status::compile_failed ? 0 : estimated_measure_s(r.explored.median_us, quick);
    estimated_ = true;
  }
  if (std::isfinite(r.compile_s) && r.compile_s > 0) {
    // Compiled ahead: queued when the config `lookahead` turns earlier went to the GPU (the
    // tune loop keeps two per compile thread in flight), on the first compile thread free.
    const size_t lookahead = 2 * compile_free_.size();
    const double queued = turn_starts_.size() >= lookahead ? turn_starts_[turn_starts_.size() - lookahead] : 0.0;
    auto thread = std::min_element(compile_free_.begin(), compile_free_.end());
    *thread = std::max(*thread, queued) + r.compile_s;
    clock_ = std::max(clock_, *thread);  // the GPU waits for the compile
  }
  turn_starts_.push_back(clock_);
  if (turn_starts_.size() > 4 * compile_free_.size() + 4) turn_starts_.pop_front();
  clock_ += measure;
}

Measurement ReplayMeasurer::measure(const Candidate& c, bool quick) {
  Measurement m;
  m.quick = quick;
  if (c.transform != Transform::none) {  // a recording holds the problem as it was measured
    m.status = Status::cannot_implement;
    m.message = fmt::format("replay: a recording holds no transformed ({}) measurements", to_string(c.transform));
    return m;
  }
  const RecordedSpace* rs = space_of(c.family);
  if (!rs) {
    m.status = Status::cannot_implement;
    m.message = fmt::format("nothing recorded for {} on {}", c.family, problem_key_);
    return m;
  }
  auto r = rs->recorded(c.config);
  if (!r) {
    m.status = Status::cannot_implement;
    m.message = "not recorded";
    return m;
  }
  const double before = clock_;
  charge(*r, quick);
  m.status = r->explored.status;
  m.message = r->explored.message;
  if (r->explored.status == Status::ok) m.time = point(r->explored.median_us);
  m.compile_s = std::isfinite(r->compile_s) ? r->compile_s : 0;
  m.measure_s = clock_ - before;
  return m;
}

double ReplayMeasurer::settle(const Candidate&, double cap_s) {
  // The settle is not recorded; at the power cap it runs to its cap, below it at least
  // kSettleMinS: charged at its cap.
  clock_ += cap_s;
  return cap_s;
}

std::pair<Stats, std::string> ReplayMeasurer::retimed_figure(const Candidate& c) {
  if (c.transform != Transform::none)
    throw RuntimeFailure(fmt::format("replay: a recording holds no transformed ({}) measurements", to_string(c.transform)));
  const RecordedSpace* rs = space_of(c.family);
  auto r = rs ? rs->recorded(c.config) : std::nullopt;
  if (!r || r->explored.status != Status::ok)
    throw RuntimeFailure(fmt::format("replay: {} {} is not recorded as a config that passed", c.family,
                                     nlohmann::json(c.config).dump()));
  const std::string key = fmt::format("{} {} {}", problem_key_, c.family, nlohmann::json(c.config).dump());
  if (r->retimed) {
    figures_.recorded.insert(key);
    return {*r->retimed, "replay: the recorded re-timing"};
  }
  figures_.explored.insert(key);
  double us = r->explored.median_us;
  std::string note = "replay: the exploration timing";
  if (auto ratio = rs->retime_ratio(); ratio && *ratio > 0) {
    us *= *ratio;
    note += fmt::format(" x {:.3f} (this recording's re-timed / explored)", *ratio);
  }
  if (us < roofline_us_) {
    us = roofline_us_;
    note += ", bounded by the measured roofline (" + roof_text_ + ")";
    figures_.bounded.insert(key);
  }
  return {point(us), note};
}

Retimed ReplayMeasurer::retime(const std::vector<Candidate>& cs, const Interleave& how, uint64_t) {
  Retimed out;
  for (auto& c : cs) {
    auto [st, note] = retimed_figure(c);
    out.stats.push_back(st);
    out.notes.push_back(note);
    out.capped = out.capped || st.center == Center::mean;  // a recorded re-timing at the power cap
  }
  const int rounds = out.capped ? how.rounds_at_cap() : how.rounds;
  const double warmup = out.capped && how.cap_aware() ? how.capped_warmup_s : how.warmup_s;
  for (auto& st : out.stats) clock_ += rounds * turn_s(st.value(), warmup);
  return out;
}

Provenance replay_provenance(const Recording& rec, const std::string& family, const std::string& input_dist, bool quick) {
  Provenance p;
  const RecordedSpace* any = nullptr;
  for (auto& s : rec.spaces())
    if (s.family() == family) {
      any = &s;
      break;
    }
  if (!any && !rec.spaces().empty()) any = &rec.spaces().front();
  if (any) {
    p.device_name = any->device().name;
    p.device_uuid = any->device().uuid;
    p.arch = any->device().arch;
    p.family_version = any->family() == family ? any->family_version() : "";
  }
  p.driver = p.cuda_runtime = p.nvrtc = "replay";
  p.family = family;
  p.input_dist = input_dist;
  p.mode = quick ? "quick" : "full";
  p.host = host_name();
  return p;
}

Recording recording_from_store(const Store& store, const std::string& tune_id,
                               const std::function<Space(const std::string&, const Problem&)>& space_of,
                               unsigned compile_threads) {
  Recording rec;
  rec.compile_threads = compile_threads;
  RowFilter f;
  f.tune_id = tune_id;
  std::set<std::string> devices;
  for (const StoredRow& r : store.rows(f)) {  // oldest first: a config's exploration, then its re-timings
    // A recording is of the problem as measured: a transformed config's rows (its config is of
    // another problem's space) have no place in it, and a replay explores no transforms.
    if (r.transform != Transform::none) continue;
    RecordedDevice dev{r.prov.device_name, r.prov.device_uuid, r.prov.arch};
    devices.insert(dev.name);
    RecordedSpace* rs = rec.find(r.problem.key(), r.family, dev.uuid);
    if (!rs) {
      Space s = space_of(r.family, r.problem);
      rs = &rec.space_for(dev, r.problem, r.family, r.prov.family_version, s.params(), r.time_utc);
    }
    // A replayed row's times and re-timings are the simulation's, not measurements: a
    // recording of a replay keeps only what the replay was given, the exploration figures.
    auto known = rs->recorded(r.config);
    if (!known) {
      RecordedResult x;
      x.explored = Outcome{r.m.status, r.m.status == Status::ok ? r.m.time_us() : kNaN, r.m.message};
      x.quick = r.m.quick;
      if (!r.replay) {
        x.compile_s = r.m.compiled_from_cache ? 0.0 : r.m.compile_s;
        x.measure_s = r.m.measure_s;
      }
      rs->record(r.config, x);
    } else if (!r.replay && !known->retimed && r.m.status == Status::ok && known->explored.status == Status::ok) {
      known->retimed = r.m.time;  // the config's second row: the finalists' re-timing
      rs->record(r.config, *known);
    }
  }
  for (auto& d : devices)
    for (auto& roof : store.roofs(d)) rec.roofs().push_back(roof);
  return rec;
}

}  // namespace gt::search
