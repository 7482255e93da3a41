// The store's rows and problems as JSON (export, report, recordings).
#include "store/store_sql.hpp"

#include "base/errors.hpp"
#include "base/files.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <variant>

namespace gt {
namespace fs = std::filesystem;
using namespace store_sql;  // the store's SQL, shared by its files (store_sql.hpp)

// ---------------------------------------------------------------------------------------
// JSON

static nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json problem_to_json(const Problem& p) {
  nlohmann::json j = p;  // problem.cpp's fields (in_b and scale where they say something)
  j["key"] = p.key();
  return j;
}

Problem problem_from_json(const nlohmann::json& j) {
  Problem p;
  p.m = j.at("m").get<int64_t>();
  p.n = j.at("n").get<int64_t>();
  p.k = j.at("k").get<int64_t>();
  p.in = parse_dtype(j.at("in").get<std::string>(), "problem.in");
  p.out = parse_dtype(j.at("out").get<std::string>(), "problem.out");
  p.layout = parse_layout(j.at("layout").get<std::string>(), "problem.layout");
  p.lda = j.at("lda").get<int64_t>();
  p.ldb = j.at("ldb").get<int64_t>();
  p.ldc = j.at("ldc").get<int64_t>();
  p.align = j.at("align").get<int32_t>();
  p.in_b = j.contains("in_b") ? parse_dtype(j.at("in_b").get<std::string>(), "problem.in_b") : p.in;
  p.scale = j.contains("scale") ? parse_scale_mode(j.at("scale").get<std::string>(), "problem.scale") : ScaleMode::none;
  p.constant = j.contains("constant") ? parse_constant(j.at("constant").get<std::string>(), "problem.constant") : 0;
  p.validate();
  return p;
}

void to_json(nlohmann::json& j, const ResultKey& k) {
  j = {{"device_name", k.device_name}, {"m", k.m}, {"n", k.n}, {"k", k.k}, {"in", to_string(k.in)},
       {"out", to_string(k.out)}, {"layout", to_string(k.layout)}, {"align", k.align}, {"text", k.text()}};
  if (k.in_b != k.in) j["in_b"] = to_string(k.in_b);
  if (k.scale != ScaleMode::none) j["scale"] = to_string(k.scale);
  if (k.constant) j["constant"] = constant_text(k.constant);
}

void from_json(const nlohmann::json& j, ResultKey& k) {
  k.device_name = j.at("device_name").get<std::string>();
  k.m = j.at("m").get<int64_t>();
  k.n = j.at("n").get<int64_t>();
  k.k = j.at("k").get<int64_t>();
  k.in = parse_dtype(j.at("in").get<std::string>(), "key.in");
  k.out = parse_dtype(j.at("out").get<std::string>(), "key.out");
  k.layout = parse_layout(j.at("layout").get<std::string>(), "key.layout");
  k.align = j.at("align").get<int32_t>();
  k.in_b = j.contains("in_b") ? parse_dtype(j.at("in_b").get<std::string>(), "key.in_b") : k.in;
  k.scale = j.contains("scale") ? parse_scale_mode(j.at("scale").get<std::string>(), "key.scale") : ScaleMode::none;
  k.constant = j.contains("constant") ? parse_constant(j.at("constant").get<std::string>(), "key.constant") : 0;
}

void to_json(nlohmann::json& j, const StoredRow& r) {
  j = {{"id", r.id},
       {"row_uuid", r.row_uuid},
       {"time_utc", r.time_utc},
       {"time_unix", r.time_unix},
       {"tune_id", r.tune_id},
       {"replay", r.replay},
       {"key", r.key().text()},
       {"device_name", r.prov.device_name},
       {"problem", problem_to_json(r.problem)},
       {"family", r.family},
       {"config", r.config},
       {"config_name", r.config_name},
       {"config_hash", r.config_hash},
       {"transform", to_string(r.transform)},
       {"params", r.params},
       {"params_from", r.params_from},
       {"heuristic_rank", r.heuristic_rank ? nlohmann::json(*r.heuristic_rank) : nlohmann::json()},
       {"pick", r.pick()},
       {"measurement", r.m},
       {"tflops", num(r.tflops())},
       {"provenance", r.prov},
       {"fingerprint", r.fingerprint}};
}

void from_json(const nlohmann::json& j, StoredRow& r) {
  r.id = j.value("id", int64_t(0));
  r.row_uuid = j.value("row_uuid", "");
  r.time_utc = j.value("time_utc", "");
  r.time_unix = j.value("time_unix", 0.0);
  r.tune_id = j.value("tune_id", "");
  r.replay = j.value("replay", false);
  r.problem = problem_from_json(j.at("problem"));
  r.family = j.at("family").get<std::string>();
  r.config = j.at("config").get<Config>();
  r.config_name = j.value("config_name", "");
  r.config_hash = j.value("config_hash", "");
  r.transform = parse_transform(j.value("transform", std::string("none")), "row transform");
  r.params = j.value("params", "");
  r.params_from = j.value("params_from", "");
  if (auto it = j.find("heuristic_rank"); it != j.end() && !it->is_null()) r.heuristic_rank = it->get<int32_t>();
  r.m = j.at("measurement").get<Measurement>();
  r.prov = j.at("provenance").get<Provenance>();
  if (r.prov.device_name.empty()) r.prov.device_name = j.value("device_name", "");
  r.fingerprint = j.value("fingerprint", r.prov.fingerprint());
}

void to_json(nlohmann::json& j, const Winner& w) {
  const Decision& d = w.decision;
  j = {{"key", w.key},           {"family", w.family},     {"config_name", w.config_name},
       {"transform", to_string(w.transform)},
       {"row_id", w.row_id},     {"row_uuid", w.row_uuid}, {"note", w.note},
       {"time_utc", w.time_utc}, {"time_unix", w.time_unix},
       {"tie", d.tie},           {"tie_with", d.tie_with}, {"runner_up", d.runner_up},
       {"margin", std::isfinite(d.margin) ? nlohmann::json(d.margin) : nlohmann::json()}};
}

void from_json(const nlohmann::json& j, Winner& w) {
  w.key = j.at("key").get<ResultKey>();
  w.family = j.at("family").get<std::string>();
  w.config_name = j.at("config_name").get<std::string>();
  w.transform = parse_transform(j.value("transform", std::string("none")), "winner transform");
  w.row_id = j.value("row_id", int64_t(0));
  w.row_uuid = j.at("row_uuid").get<std::string>();
  w.note = j.value("note", "");
  w.time_utc = j.value("time_utc", "");
  w.time_unix = j.value("time_unix", 0.0);
  w.decision.tie = j.value("tie", false);
  w.decision.tie_with = j.value("tie_with", "");
  w.decision.runner_up = j.value("runner_up", "");
  auto m = j.find("margin");
  w.decision.margin = m != j.end() && m->is_number() ? m->get<double>() : kNaN;
}

}  // namespace gt
