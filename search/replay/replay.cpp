#include "replay/replay.hpp"

#include "base/errors.hpp"
#include "base/files.hpp"
#include "base/json_text.hpp"
#include "build/plugin.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>

namespace gt::search {

using nlohmann::json;

struct RecordedSpace::Results {
  std::map<uint64_t, std::pair<Config, RecordedResult>> by_index;
};

namespace {

bool refused(Status s) { return s == Status::cannot_implement || s == Status::resources; }

// Mixed-radix index of a config whose values are all in their lists (Space's order).
std::optional<uint64_t> index_in(const std::vector<Param>& params, const Config& c) {
  if (c.size() != params.size()) return std::nullopt;
  uint64_t idx = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    auto j = params[i].index_of(c[i]);
    if (!j) return std::nullopt;
    idx = idx * params[i].values.size() + *j;
  }
  return idx;
}

const char* type_name(const json& j) {
  if (j.is_number_integer()) return "an integer";
  if (j.is_number()) return "a number";
  return j.type_name();
}

// Reads one document, every error naming the source and the path inside it.
struct Reader {
  std::string source;

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw InputError(fmt::format("{}: {}: {}", source, where, what));
  }
  const json& at(const json& obj, const std::string& where, const char* key) const {
    if (!obj.is_object()) fail(where, fmt::format("expected an object, got {}", type_name(obj)));
    auto it = obj.find(key);
    if (it == obj.end()) fail(where, fmt::format("missing key '{}'", key));
    return *it;
  }
  static std::string sub(const std::string& where, const char* key) { return where + "." + key; }
  std::string str(const json& obj, const std::string& where, const char* key) const {
    const json& v = at(obj, where, key);
    if (!v.is_string()) fail(sub(where, key), fmt::format("expected a string, got {}", type_name(v)));
    return v.get<std::string>();
  }
  int64_t integer(const json& v, const std::string& where) const {
    if (!v.is_number_integer()) fail(where, fmt::format("expected an integer, got {}", type_name(v)));
    return v.get<int64_t>();
  }
  int64_t integer(const json& obj, const std::string& where, const char* key) const {
    return integer(at(obj, where, key), sub(where, key));
  }
  const json& array(const json& obj, const std::string& where, const char* key) const {
    const json& v = at(obj, where, key);
    if (!v.is_array()) fail(sub(where, key), fmt::format("expected an array, got {}", type_name(v)));
    return v;
  }
  const json& object(const json& obj, const std::string& where, const char* key) const {
    const json& v = at(obj, where, key);
    if (!v.is_object()) fail(sub(where, key), fmt::format("expected an object, got {}", type_name(v)));
    return v;
  }

  Problem problem(const json& j, const std::string& where) const {
    auto dims = [&](const char* k) {
      int64_t v = integer(j, where, k);
      if (v < 1 || v > kMaxDim) fail(sub(where, k), fmt::format("{} is out of range [1, {}]", v, kMaxDim));
      return v;
    };
    int64_t m = dims("m"), n = dims("n"), k = dims("k");
    try {
      // FP8: B's type and the scale mode, written only where they say something (problem_json).
      std::optional<DType> in_b;
      std::optional<ScaleMode> scale;
      if (j.contains("in_b")) in_b = parse_dtype(str(j, where, "in_b"), sub(where, "in_b"));
      if (j.contains("scale")) scale = parse_scale_mode(str(j, where, "scale"), sub(where, "scale"));
      Problem p = Problem::make(m, n, k, parse_dtype(str(j, where, "in"), sub(where, "in")),
                                parse_dtype(str(j, where, "out"), sub(where, "out")),
                                parse_layout(str(j, where, "layout"), sub(where, "layout")), in_b, scale);
      if (j.contains("lda") || j.contains("ldb") || j.contains("ldc")) {
        p.lda = integer(j, where, "lda");
        p.ldb = integer(j, where, "ldb");
        p.ldc = integer(j, where, "ldc");
        p.validate();
      }
      int64_t align = integer(j, where, "align");
      if (align != 1 && align != 2 && align != 4 && align != 8 && align != 16)
        fail(sub(where, "align"), fmt::format("{} is not 1, 2, 4, 8 or 16", align));
      if (align > alignment_of(p))
        fail(sub(where, "align"), fmt::format("{} bytes is more than the leading dimensions allow ({})", align,
                                              alignment_of(p)));
      p.align = int32_t(align);
      return p;
    } catch (const InputError& e) {
      if (std::string(e.what()).rfind(source, 0) == 0) throw;  // already ours
      fail(where, e.what());
    }
  }

  Param param(const json& j, const std::string& where) const {
    Param p;
    p.name = str(j, where, "name");
    if (p.name.empty()) fail(sub(where, "name"), "is empty");
    if (j.contains("help")) p.help = str(j, where, "help");
    const json& values = array(j, where, "values");
    if (values.empty()) fail(sub(where, "values"), "is empty");
    std::set<int64_t> distinct;
    for (size_t i = 0; i < values.size(); ++i) {
      int64_t v = integer(values[i], fmt::format("{}.values[{}]", where, i));
      if (!distinct.insert(v).second) fail(fmt::format("{}.values[{}]", where, i), fmt::format("{} appears twice", v));
      p.values.push_back(v);
    }
    if (j.contains("labels")) {
      const json& labels = array(j, where, "labels");
      for (size_t i = 0; i < labels.size(); ++i) {
        if (!labels[i].is_string())
          fail(fmt::format("{}.labels[{}]", where, i), fmt::format("expected a string, got {}", type_name(labels[i])));
        p.labels.push_back(labels[i].get<std::string>());
      }
      if (!p.labels.empty() && p.labels.size() != p.values.size())
        fail(sub(where, "labels"), fmt::format("has {} labels for {} values", p.labels.size(), p.values.size()));
    }
    int64_t def = integer(j, where, "default");
    if (def < 0 || def >= int64_t(p.values.size()))
      fail(sub(where, "default"), fmt::format("index {} is not in [0, {}]", def, p.values.size() - 1));
    p.default_index = size_t(def);
    return p;
  }

  Outcome outcome(const json& j, const std::string& where) const {
    Outcome o;
    std::string s = str(j, where, "status");
    try {
      o.status = parse_status(s);
    } catch (const RuntimeFailure&) {
      fail(sub(where, "status"), fmt::format("unknown status '{}' (expected ok, cannot_implement, resources, "
                                             "compile_failed, verify_failed, runtime_fault or timeout)", s));
    }
    const json& t = at(j, where, "median_us");
    if (t.is_null()) {
      o.median_us = kNaN;
    } else if (t.is_number()) {
      o.median_us = t.get<double>();
    } else {
      fail(sub(where, "median_us"), fmt::format("expected a number or null, got {}", type_name(t)));
    }
    if (!t.is_null() && !(o.median_us > 0 && std::isfinite(o.median_us)))
      fail(sub(where, "median_us"), fmt::format("{} is not a positive time", t.dump()));
    if (o.status == Status::ok && !(o.median_us >= kMinRecordedTimeUs))
      fail(sub(where, "median_us"),
           t.is_null() ? std::string("an ok result needs a positive time")
                       : fmt::format("{} us is too short to be a measured time (at least {:g} us)", t.dump(),
                                     kMinRecordedTimeUs));
    if (j.contains("message")) o.message = str(j, where, "message");
    return o;
  }

  double seconds(const json& j, const std::string& where, const char* key) const {
    if (!j.contains(key)) return kNaN;
    const json& v = j.at(key);
    if (!v.is_number() || !(v.get<double>() >= 0 && std::isfinite(v.get<double>())))
      fail(sub(where, key), fmt::format("expected a number of seconds, got {}", v.dump()));
    return v.get<double>();
  }

  // A result of version 2: the exploration outcome and what else was recorded of it.
  RecordedResult result(const json& j, const std::string& where) const {
    RecordedResult r;
    r.explored = outcome(j, where);
    if (j.contains("quick")) {
      if (!j.at("quick").is_boolean()) fail(sub(where, "quick"), "expected true or false");
      r.quick = j.at("quick").get<bool>();
    }
    r.compile_s = seconds(j, where, "compile_s");
    r.measure_s = seconds(j, where, "measure_s");
    if (j.contains("retimed")) {
      Stats st;
      try {
        st = j.at("retimed").get<Stats>();
      } catch (const std::exception& e) {
        fail(sub(where, "retimed"), fmt::format("not a timing's statistics: {}", e.what()));
      }
      if (st.count < 0) fail(sub(where, "retimed"), fmt::format("a count of {} samples", st.count));
      if (!(st.value() >= kMinRecordedTimeUs && std::isfinite(st.value())))
        fail(sub(where, "retimed"),
             fmt::format("a re-timing needs a measured figure of at least {:g} us", kMinRecordedTimeUs));
      r.retimed = st;
    }
    return r;
  }

  RoofRow roof(const json& j, const std::string& where) const {
    RoofRow r;
    r.device_name = str(j, where, "device");
    r.name = str(j, where, "name");
    const json& v = at(j, where, "value");
    if (!v.is_number() || !(v.get<double>() > 0 && std::isfinite(v.get<double>())))
      fail(sub(where, "value"), "expected a positive number");
    r.value = v.get<double>();
    r.unit = str(j, where, "unit");
    if (j.contains("how")) r.how = str(j, where, "how");
    return r;
  }
};

json param_json(const Param& p) {
  return {{"name", p.name}, {"help", p.help}, {"values", p.values}, {"labels", p.labels}, {"default", p.default_index}};
}

json problem_json(const Problem& p) {
  json j = {{"m", p.m}, {"n", p.n}, {"k", p.k}, {"in", to_string(p.in)}, {"out", to_string(p.out)},
            {"layout", to_string(p.layout)}, {"align", p.align}};
  if (p.in_b != p.in) j["in_b"] = to_string(p.in_b);
  if (p.scale != ScaleMode::none) j["scale"] = to_string(p.scale);
  Problem tight = Problem::make(p.m, p.n, p.k, p.in, p.out, p.layout, p.in_b, p.scale);
  if (p.lda != tight.lda || p.ldb != tight.ldb || p.ldc != tight.ldc) {
    j["lda"] = p.lda;
    j["ldb"] = p.ldb;
    j["ldc"] = p.ldc;
  }
  return j;
}

bool same_params(const std::vector<Param>& a, const std::vector<Param>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].name != b[i].name || a[i].values != b[i].values) return false;
  return true;
}

}  // namespace

RecordedSpace::RecordedSpace(std::string recorded, RecordedDevice device, Problem problem, std::string family,
                             std::string family_version, std::vector<Param> params)
    : recorded_(std::move(recorded)),
      device_(std::move(device)),
      problem_(problem),
      family_(std::move(family)),
      family_version_(std::move(family_version)),
      params_(std::move(params)),
      results_(std::make_shared<Results>()) {}

RecordedSpace::RecordedSpace(const RecordedSpace& o)
    : recorded_(o.recorded_),
      device_(o.device_),
      problem_(o.problem_),
      family_(o.family_),
      family_version_(o.family_version_),
      params_(o.params_),
      results_(std::make_shared<Results>(*o.results_)) {}

RecordedSpace& RecordedSpace::operator=(const RecordedSpace& o) {
  if (this != &o) *this = RecordedSpace(o);
  return *this;
}

uint64_t RecordedSpace::index_of(const Config& c) const {
  auto idx = index_in(params_, c);
  if (!idx) {
    std::string why = fmt::format("config has {} values, the space has {} parameters", c.size(), params_.size());
    for (size_t i = 0; c.size() == params_.size() && i < c.size(); ++i)
      if (!params_[i].index_of(c[i])) why = fmt::format("{}={} is not one of its values", params_[i].name, c[i]);
    throw InputError(fmt::format("{} {} on {}: {}", family_, problem_.key(), device_.name, why));
  }
  return *idx;
}

Space RecordedSpace::space() const {
  Space s(family_, family_version_, params_);
  std::shared_ptr<const Results> results = results_;
  s.add_constraint([results, params = params_, device = device_.name,
                    key = problem_.key()](const Config& c) -> std::optional<std::string> {
    auto idx = index_in(params, c);
    auto it = idx ? results->by_index.find(*idx) : results->by_index.end();
    if (it == results->by_index.end()) return fmt::format("not recorded on {} for {}", device, key);
    const Outcome& o = it->second.second.explored;
    if (refused(o.status))
      return fmt::format("recorded as {} on {}: {}", to_string(o.status), device,
                         o.message.empty() ? "(no message)" : o.message);
    return std::nullopt;
  });
  return s;
}

std::optional<Outcome> RecordedSpace::lookup(const Config& c) const {
  auto r = recorded(c);
  if (!r) return std::nullopt;
  return r->explored;
}

std::optional<RecordedResult> RecordedSpace::recorded(const Config& c) const {
  auto idx = index_in(params_, c);
  if (!idx) return std::nullopt;
  auto it = results_->by_index.find(*idx);
  if (it == results_->by_index.end()) return std::nullopt;
  return it->second.second;
}

std::optional<double> RecordedSpace::retime_ratio() const {
  std::vector<double> ratios;
  for (auto& [idx, r] : results_->by_index) {
    const RecordedResult& x = r.second;
    if (x.retimed && x.explored.status == Status::ok) ratios.push_back(x.retimed->value() / x.explored.median_us);
  }
  if (ratios.empty()) return std::nullopt;
  std::nth_element(ratios.begin(), ratios.begin() + std::ptrdiff_t(ratios.size() / 2), ratios.end());
  return ratios[ratios.size() / 2];
}

Objective RecordedSpace::objective() const {
  std::shared_ptr<const Results> results = results_;
  return [results, params = params_, device = device_.name](const Config& c) -> Outcome {
    auto idx = index_in(params, c);
    auto it = idx ? results->by_index.find(*idx) : results->by_index.end();
    if (it == results->by_index.end()) return {Status::cannot_implement, kNaN, "not recorded on " + device};
    return it->second.second.explored;
  };
}

void RecordedSpace::add(const Config& c, Outcome o) {
  RecordedResult r;
  r.explored = std::move(o);
  record(c, std::move(r));
}

void RecordedSpace::record(const Config& c, RecordedResult r) { results_->by_index[index_of(c)] = {c, std::move(r)}; }

size_t RecordedSpace::size() const { return results_->by_index.size(); }

size_t RecordedSpace::valid_count() const {
  size_t n = 0;
  for (auto& [idx, r] : results_->by_index) n += !refused(r.second.explored.status);
  return n;
}

std::vector<std::pair<Config, Outcome>> RecordedSpace::results() const {
  std::vector<std::pair<Config, Outcome>> out;
  out.reserve(results_->by_index.size());
  for (auto& [idx, r] : results_->by_index) out.emplace_back(r.first, r.second.explored);
  return out;
}

std::vector<std::pair<Config, RecordedResult>> RecordedSpace::recorded_results() const {
  std::vector<std::pair<Config, RecordedResult>> out;
  out.reserve(results_->by_index.size());
  for (auto& [idx, r] : results_->by_index) out.push_back(r);
  return out;
}

Recording Recording::load(const std::filesystem::path& file) {
  check_input_file(file, file.string());
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open the replay file", file.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), file.string());
}

Recording Recording::parse(std::string_view text, const std::string& source) {
  // Strict: a key given twice in one object is refused (json_text.hpp).
  return from_json(parse_json_text(text, source), source);
}

Recording Recording::from_json(const json& j, const std::string& source) {
  Reader r{source};
  if (!j.is_object()) r.fail("top level", fmt::format("expected an object, got {}", type_name(j)));
  std::string format = r.str(j, "top level", "format");
  if (format != kReplayFormat && format != kReplayFormatV1)
    r.fail("format", fmt::format("'{}' is not a format this build reads ('{}' or '{}')", format, kReplayFormat,
                                 kReplayFormatV1));
  Recording rec;
  rec.format = format;
  if (j.contains("compile_threads")) {
    const int64_t n = r.integer(j, "top level", "compile_threads");
    if (n < 0 || n > kMaxCompileThreads)
      r.fail("compile_threads", fmt::format("{} is not a number of threads from 0 to {}", n, kMaxCompileThreads));
    rec.compile_threads = unsigned(n);
  }
  if (j.contains("roofs")) {
    const json& roofs = r.array(j, "top level", "roofs");
    for (size_t i = 0; i < roofs.size(); ++i) rec.roofs_.push_back(r.roof(roofs[i], fmt::format("roofs[{}]", i)));
  }
  const json& spaces = r.array(j, "top level", "spaces");
  for (size_t si = 0; si < spaces.size(); ++si) {
    std::string w = fmt::format("spaces[{}]", si);
    const json& s = spaces[si];
    if (!s.is_object()) r.fail(w, fmt::format("expected an object, got {}", type_name(s)));
    const json& dev = r.object(s, w, "device");
    RecordedDevice device{r.str(dev, w + ".device", "name"), r.str(dev, w + ".device", "uuid"),
                          r.str(dev, w + ".device", "arch")};
    if (device.name.empty()) r.fail(w + ".device.name", "is empty");
    Problem problem = r.problem(r.object(s, w, "problem"), w + ".problem");
    std::vector<Param> params;
    const json& pj = r.array(s, w, "params");
    if (pj.empty()) r.fail(w + ".params", "is empty");
    std::set<std::string> names;
    for (size_t pi = 0; pi < pj.size(); ++pi) {
      params.push_back(r.param(pj[pi], fmt::format("{}.params[{}]", w, pi)));
      if (!names.insert(params.back().name).second)
        r.fail(fmt::format("{}.params[{}].name", w, pi), fmt::format("'{}' appears twice", params.back().name));
    }
    const std::string family = r.str(s, w, "family");
    // The name starts every config name, which a table must accept (table.cpp) and a plugin own.
    if (!valid_family_name(family))
      r.fail(w + ".family", fmt::format("'{}' is not a family name (lower case letters, digits, '_')", family));
    for (size_t other = 0; other < rec.spaces_.size(); ++other) {
      const RecordedSpace& o = rec.spaces_[other];
      if (o.device().uuid == device.uuid && o.problem().key() == problem.key() && o.family() == family)
        r.fail(w, fmt::format("{} {} on {} is recorded already, in spaces[{}]: one space per device, problem and "
                              "family", family, problem.key(), device.name, other));
    }
    RecordedSpace space(r.str(s, w, "recorded"), device, problem, family, r.str(s, w, "family_version"), params);
    const json& results = r.array(s, w, "results");
    std::map<Config, size_t> seen;  // config -> its result's index
    for (size_t ri = 0; ri < results.size(); ++ri) {
      std::string rw = fmt::format("{}.results[{}]", w, ri);
      const json& cj = r.array(results[ri], rw, "config");
      Config c;
      for (size_t k = 0; k < cj.size(); ++k) c.push_back(r.integer(cj[k], fmt::format("{}.config[{}]", rw, k)));
      if (c.size() != params.size())
        r.fail(rw + ".config", fmt::format("has {} values for {} parameters", c.size(), params.size()));
      for (size_t k = 0; k < c.size(); ++k)
        if (!params[k].index_of(c[k]))
          r.fail(fmt::format("{}.config[{}]", rw, k), fmt::format("{}={} is not one of its values", params[k].name, c[k]));
      // One result per config: two would leave a replay to pick one of them without a word.
      if (auto [it, fresh] = seen.emplace(c, ri); !fresh)
        r.fail(rw + ".config", fmt::format("the config is recorded already, in {}.results[{}]: one result per config",
                                           w, it->second));
      space.record(c, r.result(results[ri], rw));
    }
    rec.spaces_.push_back(std::move(space));
  }
  return rec;
}

json Recording::to_json() const {
  json spaces = json::array();
  for (auto& s : spaces_) {
    json params = json::array();
    for (auto& p : s.params()) params.push_back(param_json(p));
    json results = json::array();
    for (auto& [c, x] : s.recorded_results()) {
      const Outcome& o = x.explored;
      json rj = {{"config", c},
                 {"status", to_string(o.status)},
                 {"median_us", std::isfinite(o.median_us) ? json(o.median_us) : json(nullptr)},
                 {"message", o.message},
                 {"quick", x.quick}};
      if (std::isfinite(x.compile_s)) rj["compile_s"] = x.compile_s;
      if (std::isfinite(x.measure_s)) rj["measure_s"] = x.measure_s;
      if (x.retimed) rj["retimed"] = *x.retimed;
      results.push_back(std::move(rj));
    }
    spaces.push_back({{"recorded", s.recorded()},
                      {"device", {{"name", s.device().name}, {"uuid", s.device().uuid}, {"arch", s.device().arch}}},
                      {"problem", problem_json(s.problem())},
                      {"family", s.family()},
                      {"family_version", s.family_version()},
                      {"params", std::move(params)},
                      {"results", std::move(results)}});
  }
  json roofs = json::array();
  for (auto& r : roofs_)
    roofs.push_back({{"device", r.device_name}, {"name", r.name}, {"value", r.value}, {"unit", r.unit}, {"how", r.how}});
  json out = {{"format", kReplayFormat}, {"roofs", std::move(roofs)}, {"spaces", std::move(spaces)}};
  if (compile_threads) out["compile_threads"] = compile_threads;
  return out;
}

void Recording::save(const std::filesystem::path& file) const { write_file_replacing(file, to_json().dump(1) + "\n"); }

const RecordedSpace* Recording::find(const std::string& problem_key, const std::string& family,
                                     const std::string& device_uuid) const {
  for (auto& s : spaces_)
    if (s.problem().key() == problem_key && s.family() == family && (device_uuid.empty() || s.device().uuid == device_uuid))
      return &s;
  return nullptr;
}

RecordedSpace* Recording::find(const std::string& problem_key, const std::string& family, const std::string& device_uuid) {
  return const_cast<RecordedSpace*>(std::as_const(*this).find(problem_key, family, device_uuid));
}

RecordedSpace& Recording::space_for(const RecordedDevice& device, const Problem& problem, const std::string& family,
                                    const std::string& family_version, const std::vector<Param>& params,
                                    const std::string& recorded) {
  for (auto& s : spaces_) {
    if (s.device().uuid != device.uuid || s.problem().key() != problem.key() || s.family() != family ||
        s.family_version() != family_version)
      continue;
    if (!same_params(s.params(), params))
      throw InputError(fmt::format("{} {} {} on {}: the recording has other parameter lists than this build's family",
                                   family, family_version, problem.key(), device.name));
    return s;
  }
  spaces_.emplace_back(recorded.empty() ? iso_time_now() : recorded, device, problem, family, family_version, params);
  return spaces_.back();
}

void Recording::merge(const Recording& other) {
  for (auto& o : other.spaces_) {
    RecordedSpace* s = nullptr;
    for (auto& mine : spaces_)
      if (mine.device().uuid == o.device().uuid && mine.problem().key() == o.problem().key() &&
          mine.family() == o.family() && mine.family_version() == o.family_version())
        s = &mine;
    if (!s) {
      spaces_.push_back(o);
      continue;
    }
    if (!same_params(s->params(), o.params()))
      throw InputError(fmt::format("cannot merge {} {} {} on {}: the two recordings have other parameter lists",
                                   o.family(), o.family_version(), o.problem().key(), o.device().name));
    for (auto& [c, r] : o.recorded_results()) s->record(c, r);
  }
  for (auto& theirs : other.roofs_) {
    auto mine = std::find_if(roofs_.begin(), roofs_.end(), [&](const RoofRow& r) {
      return r.device_name == theirs.device_name && r.name == theirs.name;
    });
    if (mine != roofs_.end()) *mine = theirs;
    else roofs_.push_back(theirs);
  }
  if (!compile_threads) compile_threads = other.compile_threads;
}

namespace {

std::string names_of(const std::vector<Param>& ps) {
  std::string out;
  for (auto& p : ps) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

// One recorded parameter list against the family's: InputError "SOURCE: WHERE: ..." at the
// first difference.
void check_params(const std::vector<Param>& rec, const Space& family, const std::string& at) {
  const std::vector<Param>& own = family.params();
  const std::string who = family.family() + " " + family.version();
  for (size_t i = 0; i < rec.size(); ++i) {
    const std::string w = fmt::format("{}.params[{}]", at, i);
    if (i >= own.size() || own[i].name != rec[i].name)
      throw InputError(fmt::format("{}.name: '{}' is not {}'s parameter {} (its parameters: {})", w, rec[i].name, who,
                                   i, names_of(own)));
    for (size_t v = 0; v < rec[i].values.size(); ++v) {
      auto j = own[i].index_of(rec[i].values[v]);
      if (!j)
        throw InputError(fmt::format("{}.values[{}]: {}={} is not one of {}'s values for this problem", w, v,
                                     rec[i].name, rec[i].values[v], who));
      if (rec[i].text(v) != own[i].text(*j))
        throw InputError(fmt::format("{}.labels[{}]: {}={} is spelled '{}', {} spells it '{}'", w, v, rec[i].name,
                                     rec[i].values[v], rec[i].text(v), who, own[i].text(*j)));
    }
  }
  if (rec.size() < own.size())
    throw InputError(fmt::format("{}.params: {} parameters recorded, {} has {} ({})", at, rec.size(), who, own.size(),
                                 names_of(own)));
}

}  // namespace

void Recording::check_spaces(const FamilySpace& space_of, const std::string& source) const {
  for (size_t i = 0; i < spaces_.size(); ++i) {
    const RecordedSpace& rs = spaces_[i];
    const std::string at = fmt::format("{}: spaces[{}]", source, i);
    std::optional<Space> own;
    try {
      own = space_of(rs);
    } catch (const std::exception& e) {
      throw InputError(fmt::format("{}: {}", at, e.what()));
    }
    if (own) check_params(rs.params(), *own, at);
  }
}

std::vector<Problem> Recording::problems() const {
  std::vector<Problem> out;
  for (auto& s : spaces_)
    if (std::none_of(out.begin(), out.end(), [&](const Problem& p) { return p.key() == s.problem().key(); }))
      out.push_back(s.problem());
  return out;
}

std::string iso_time_now() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace gt::search
