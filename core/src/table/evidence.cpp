#include "table/evidence.hpp"

#include "base/errors.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace gt {

namespace {

nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }
double number_of(const nlohmann::json& j) { return j.is_null() ? std::numeric_limits<double>::quiet_NaN() : j.get<double>(); }

}  // namespace

ValidationRow Validation::row() const {
  nlohmann::json j = {{"at", at},
                      {"from", from},
                      {"from_family", from_family},
                      {"from_config", from_config},
                      {"from_transform", to_string(from_transform)},
                      {"rule", to_string(rule)},
                      {"family", family},
                      {"config", config},
                      {"transform", to_string(transform)},
                      {"default_config", default_config},
                      {"distance", distance},
                      {"answer_us", number(answer_us)},
                      {"default_us", number(default_us)},
                      {"answer_status", answer_status},
                      {"tolerance", tolerance},
                      {"held", held},
                      {"replay", replay},
                      {"measured_at", measured_at},
                      {"time_unix", time_unix},
                      {"tune_id", tune_id}};
  return {at.device_name, at.text(), from.text(), transformed_name(from_config, from_transform), time_unix, j.dump()};
}

Validation Validation::from_row(const ValidationRow& r) {
  try {
    const nlohmann::json j = nlohmann::json::parse(r.record);
    Validation v;
    v.at = j.at("at").get<ResultKey>();
    v.from = j.at("from").get<ResultKey>();
    v.from_family = j.at("from_family").get<std::string>();
    v.from_config = j.at("from_config").get<std::string>();
    v.from_transform = parse_transform(j.at("from_transform").get<std::string>(), "from_transform");
    v.rule = parse_rule(j.at("rule").get<std::string>());
    v.family = j.at("family").get<std::string>();
    v.config = j.at("config").get<std::string>();
    v.transform = parse_transform(j.at("transform").get<std::string>(), "transform");
    v.default_config = j.at("default_config").get<std::string>();
    v.distance = j.at("distance").get<double>();
    v.answer_us = number_of(j.at("answer_us"));
    v.default_us = number_of(j.at("default_us"));
    v.answer_status = j.at("answer_status").get<std::string>();
    v.tolerance = j.at("tolerance").get<double>();
    v.held = j.at("held").get<bool>();
    v.replay = j.at("replay").get<bool>();
    v.measured_at = j.at("measured_at").get<std::string>();
    v.time_unix = j.at("time_unix").get<double>();
    v.tune_id = j.at("tune_id").get<std::string>();
    return v;
  } catch (const std::exception& e) {
    throw InputError(fmt::format("a stored validation of {} from {} does not read: {}", r.at, r.from, e.what()));
  }
}

std::vector<Validation> stored_validations(const Store& s, const std::optional<std::string>& device) {
  std::vector<Validation> out;
  for (const ValidationRow& r : s.validations(device)) out.push_back(Validation::from_row(r));
  return out;
}

std::vector<TransferEvidence> evidence_of(const LookupTable& t, const std::vector<Validation>& vs, bool include_replay,
                                          std::vector<std::string>* notes) {
  auto note = [&](std::string s) {
    if (notes) notes->push_back(std::move(s));
  };
  std::vector<TransferEvidence> out;
  size_t stale = 0, replayed = 0;
  for (const TableEntry& e : t.entries) {
    std::map<Rule, std::vector<const Validation*>> by_rule;
    for (const Validation& v : vs) {
      if (v.from != e.key) continue;
      if (v.from_family != e.family || v.from_config != e.config || v.from_transform != e.transform) {
        ++stale;  // timed with a config the entry no longer has
        continue;
      }
      if (v.replay && !include_replay) {
        ++replayed;
        continue;
      }
      by_rule[v.rule].push_back(&v);
    }
    for (auto& [rule, timed] : by_rule) {
      // Nearest first, and at one distance a loss before what held there: the radius never
      // reaches a distance at which an answer was slower than the default.
      std::sort(timed.begin(), timed.end(), [](const Validation* a, const Validation* b) {
        return std::tie(a->distance, a->held, a->at) < std::tie(b->distance, b->held, b->at);
      });
      TransferEvidence ev{e.key, e.family, e.config, e.transform, rule, 0, 0, 0, 0, ""};
      for (const Validation* v : timed) {
        if (!v->held) {
          note(fmt::format("{}: its {} answer at {} ran {} against the default: {}", e.text(), to_string(rule),
                           v->at.text(),
                           v->answer_status != "ok" ? v->answer_status : fmt::format("{:.3f}x the time", v->ratio()),
                           ev.neighbours ? fmt::format("its evidence ends at distance {:.3f}", ev.radius)
                                         : std::string("no evidence for that rule")));
          break;
        }
        ev.radius = v->distance;
        ++ev.neighbours;
        ev.worst = std::max(ev.worst, v->ratio());
        ev.tolerance = std::max(ev.tolerance, v->tolerance);
        ev.measured_at = std::max(ev.measured_at, v->measured_at);
      }
      if (ev.neighbours > 0) out.push_back(std::move(ev));
    }
  }
  if (stale)
    note(fmt::format("{} validation{} of configs the table's entries no longer have were left out (validate again)",
                     stale, stale == 1 ? "" : "s"));
  if (replayed)
    note(fmt::format("{} replayed validation{} left out (a replay is not a measurement on a GPU; --include-replay "
                     "keeps them)",
                     replayed, replayed == 1 ? " was" : "s were"));
  std::sort(out.begin(), out.end(), [](const TransferEvidence& a, const TransferEvidence& b) {
    return std::tie(a.from, a.family, a.config, a.rule) < std::tie(b.from, b.family, b.config, b.rule);
  });
  return out;
}

}  // namespace gt
