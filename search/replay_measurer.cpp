#include "replay_measurer.hpp"

#include "errors.hpp"

#include <fmt/format.h>

namespace gt::search {

ReplayMeasurer::ReplayMeasurer(const Recording& rec) : rec_(rec) {
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
}

std::string ReplayMeasurer::describe() const {
  return fmt::format("REPLAY of {} recorded spaces ({}), no GPU", rec_.spaces().size(), dev_.name);
}

void ReplayMeasurer::set_problem(const Problem& p, Distribution, uint64_t) { problem_key_ = p.key(); }

static Stats point(double us) {
  Stats s;
  s.count = 1;
  s.median = s.mean = s.min = s.max = s.p10 = s.p90 = s.ci_low = s.ci_high = us;
  return s;
}

Measurement ReplayMeasurer::measure(const Candidate& c, bool quick) {
  Measurement m;
  m.quick = quick;
  const RecordedSpace* rs = rec_.find(problem_key_, c.family);
  if (!rs) {
    m.status = Status::cannot_implement;
    m.message = fmt::format("nothing recorded for {} on {}", c.family, problem_key_);
    return m;
  }
  auto o = rs->lookup(c.config);
  if (!o) {
    m.status = Status::cannot_implement;
    m.message = "not recorded";
    return m;
  }
  m.status = o->status;
  m.message = o->message;
  if (o->status == Status::ok) m.time = point(o->median_us);
  return m;
}

Retimed ReplayMeasurer::retime(const std::vector<Candidate>& cs, const Interleave&, uint64_t) {
  std::vector<Stats> out;
  for (auto& c : cs) out.push_back(measure(c, false).time);
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
                               const std::function<Space(const std::string&, const Problem&)>& space_of) {
  Recording rec;
  RowFilter f;
  f.tune_id = tune_id;
  for (const StoredRow& r : store.rows(f)) {
    RecordedDevice dev{r.prov.device_name, r.prov.device_uuid, r.prov.arch};
    RecordedSpace* rs = rec.find(r.problem.key(), r.family, dev.uuid);
    if (!rs) {
      Space s = space_of(r.family, r.problem);
      rs = &rec.space_for(dev, r.problem, r.family, r.prov.family_version, s.params(), r.time_utc);
    }
    if (rs->lookup(r.config)) continue;  // the exploration outcome is recorded; re-timings are not
    rs->add(r.config, Outcome{r.m.status, r.m.status == Status::ok ? r.m.time_us() : kNaN, r.m.message});
  }
  return rec;
}

}  // namespace gt::search
