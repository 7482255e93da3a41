#include "job/resolve.hpp"

#include "base/errors.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace gt::search {

void require_known_family(const std::string& f, const std::vector<std::string>& known, const std::string& where,
                          const std::string& known_as) {
  if (std::find(known.begin(), known.end(), f) != known.end()) return;
  std::string list;
  for (auto& x : known) list += (list.empty() ? "" : ", ") + x;
  throw InputError(fmt::format("{}: unknown family '{}' ({}: {})", where, f, known_as, list.empty() ? "none" : list));
}

std::vector<int> parse_device_list(const std::string& s) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(pos, end - pos);
    int v = -1;
    try {
      size_t used = 0;
      v = std::stoi(item, &used);
      if (used != item.size()) v = -1;
    } catch (const std::exception&) {
    }
    if (v < 0) throw InputError(fmt::format("--devices: '{}' is not a GPU index (expected all, or 0,1,...)", item));
    if (std::find(out.begin(), out.end(), v) != out.end())
      throw InputError(fmt::format("--devices: GPU {} is named twice", v));
    out.push_back(v);
    pos = end + 1;
  }
  return out;
}

Job job_of(const JobRequest& r, const Catalog& cat) {
  if (!r.config.empty() && r.default_job) throw InputError("--config and --default-job: give one of them");
  if (!r.config.empty()) {
    if (r.problem) throw InputError("--config and --shape: the job file names the problems; give one of them");
    return load_job(r.config, r.max_problems, r.config_flag);
  }
  if (r.default_job) {
    if (r.problem) throw InputError("--default-job and --shape: the default job names the problems; give one of them");
    return parse_job(default_job_text(), "<default job>", r.max_problems);
  }
  Job job;
  job.name = "command line";
  job.source = "<command line>";
  if (r.problem) {
    job.problems.push_back({*r.problem, {}, {}});
  } else if (!cat.recorded.empty()) {
    // A replay with no problem named: the recording's problems, each over its recorded families.
    job.name = "recording";
    for (auto& [p, families] : cat.recorded) job.problems.push_back({p, families, {}});
  } else {
    throw InputError("--shape is required (MxNxK, e.g. 4096x4096x4096)");
  }
  return job;
}

namespace {

// The job's budget over `b`, then the command line's over that.
Budget budget_of(Budget b, const JobBudget& jb, const JobRequest& r) {
  if (jb.evaluations) b.max_evaluations = *jb.evaluations;
  if (jb.seconds) b.max_seconds = *jb.seconds;
  if (jb.fraction) b.max_fraction = *jb.fraction;
  if (jb.patience) b.patience = *jb.patience;
  if (r.evaluations) b.max_evaluations = *r.evaluations;
  if (r.seconds) b.max_seconds = *r.seconds;
  if (r.fraction) b.max_fraction = *r.fraction;
  if (r.patience) b.patience = *r.patience;
  return b;
}

TuneOptions resolve_options(const JobRequest& r, const Job& job) {
  const JobSettings& js = job.settings;
  TuneOptions o = r.base;
  o.strategy = !r.strategy.empty() ? r.strategy : js.strategy.value_or(o.strategy);
  require_strategy(o.strategy, r.strategy.empty() ? job.at("strategy") : "--strategy");
  // The flags are held to the ranges of the job's keys they replace (job.hpp).
  auto in_range = [](const char* flag, const auto& range, const auto& v) {
    if (v)
      if (auto why = range.check("", *v)) throw InputError(fmt::format("{}: {}", flag, *why));
  };
  in_range("--fraction", kFractionRange, r.fraction);
  in_range("--time", kSecondsRange, r.seconds);
  in_range("--budget", kEvaluationsRange, r.evaluations);
  in_range("--patience", kPatienceRange, r.patience);
  in_range("--seed", kSeedRange, r.seed);
  in_range("--finalists", kFinalistsRange, r.finalists ? std::optional<int64_t>(*r.finalists) : std::nullopt);
  in_range("--min-gain", kMinGainRange, r.min_gain_pct);
  const bool named = r.evaluations || r.seconds || r.fraction || r.patience || js.evaluations || js.seconds ||
                     js.fraction || js.patience;
  o.budget_is_default = !named && r.default_budget.has_value();
  o.budget = budget_of(o.budget_is_default ? *r.default_budget : r.base.budget, js, r);
  for (auto& [family, jb] : js.family_budgets) o.family_budgets[family] = budget_of(o.budget, jb, r);
  o.seed = r.seed.value_or(js.seed.value_or(o.seed));
  o.quick_explore = r.full ? false : js.quick.value_or(o.quick_explore);
  o.finalists = r.finalists.value_or(js.finalists.value_or(o.finalists));
  o.fast_accum = r.fast_accum || js.fast_accum.value_or(false);
  if (r.min_gain_pct) o.min_gain = *r.min_gain_pct / 100;
  else if (js.min_gain) o.min_gain = *js.min_gain / 100;
  o.dist = parse_distribution((!r.dist.empty() ? r.dist : js.dist.value_or(std::string(to_string(o.dist)))).c_str());
  return o;
}

// Every family the resolved job names must be known; a family's own budget may name one this run does
// not tune (a replay records only some; --family picks some), but it must exist.
void check_families(const ResolvedJob& resolved, const JobRequest& r, const Catalog& cat) {
  if (cat.unchecked) return;
  for (size_t i = 0; i < r.families.size(); ++i) {
    require_known_family(r.families[i], cat.families, "--family", cat.known_as);
    if (std::find(r.families.begin(), r.families.begin() + i, r.families[i]) != r.families.begin() + i)
      throw InputError(fmt::format("--family: '{}' is named twice", r.families[i]));
  }
  for (auto& pp : resolved.problems)
    for (auto& f : pp.families)
      require_known_family(f, cat.families, r.families.empty() ? resolved.job.at("families:" + f) : "--family",
                           cat.known_as);
  for (auto& [f, jb] : resolved.job.settings.family_budgets) {
    const bool known = std::find(cat.families.begin(), cat.families.end(), f) != cat.families.end() ||
                       (cat.exists && cat.exists(f));
    if (!known)
      require_known_family(f, cat.families, fmt::format("{}: [tune.budget.{}]", resolved.job.at("budget:" + f), f),
                           cat.known_as);
  }
}

// Fixed config lists, checked against the families' spaces where the catalog has them (a
// library family's live space needs its GPU: run_job checks those before the first
// measurement); "@pick" (a library's own choice) is resolved on the device.
void check_fixed(const ResolvedJob& resolved, const Catalog& cat) {
  if (!cat.space) return;
  for (auto& pp : resolved.problems)
    for (auto& [fam, texts] : pp.configs) {
      if (cat.is_library && cat.is_library(fam) && !cat.library_spaces) continue;
      Space s;
      try {
        s = cat.space(fam, pp.problem);
      } catch (const RuntimeFailure&) {
        continue;  // no space here (not recorded for this problem): the family is skipped, and says why
      }
      for (auto& t : texts) {
        std::string err;
        if (t != "@pick" && !s.parse(t, &err))
          throw InputError(fmt::format("{}: configs.{} for {}: {}", resolved.job.at(fam + ":" + t), fam, pp.problem.key(), err));
      }
    }
}

}  // namespace

ResolvedJob resolve_job(const JobRequest& r, const Catalog& cat) {
  ResolvedJob resolved;
  resolved.job = job_of(r, cat);
  resolved.options = resolve_options(r, resolved.job);
  const std::vector<std::string>& fallback = !r.default_families.empty() ? r.default_families : cat.families;
  for (const JobProblem& jp : resolved.job.problems) {
    ResolvedProblem pp{jp.problem, {}, jp.configs};
    pp.families = !r.families.empty()                    ? r.families
                  : !jp.families.empty()                 ? jp.families
                  : !resolved.job.settings.families.empty() ? resolved.job.settings.families
                                                         : fallback;
    resolved.problems.push_back(std::move(pp));
  }
  check_families(resolved, r, cat);
  check_fixed(resolved, cat);
  resolved.shard = resolve_shard(r.shard, r.environment);
  resolved.mine = shard_indices(resolved.problems.size(), resolved.shard);
  resolved.devices_flag = !r.devices.empty();
  resolved.all_devices = r.devices == "all";
  if (r.devices.empty()) resolved.devices = {r.device};
  else if (!resolved.all_devices) resolved.devices = parse_device_list(r.devices);
  if (r.consistency >= 0) resolved.consistency_sample = size_t(r.consistency);
  return resolved;
}

std::map<std::string, std::vector<Config>> fixed_configs(const ResolvedProblem& pp, const SpaceSource& spaces,
                                                         const PluginRegistry* plugins, const gt_device& limits,
                                                         const Job& job) {
  std::map<std::string, std::vector<Config>> fixed;
  for (auto& [fam, texts] : pp.configs) {
    Space s;
    try {
      s = spaces(fam, pp.problem);
    } catch (const RuntimeFailure&) {
      continue;  // the tune of the family fails the same way, and says so
    }
    for (auto& t : texts) {
      std::string err;
      if (t == "@pick") {
        const Family* f = plugins ? plugins->find(fam) : nullptr;
        auto picks = f ? f->suggest(pp.problem, limits, 1, s.dims()) : std::vector<Config>{};
        if (!picks.empty()) fixed[fam].push_back(picks[0]);
      } else if (auto c = s.parse(t, &err)) {
        fixed[fam].push_back(*c);
      } else {
        throw InputError(fmt::format("{}: configs.{} for {}: {}", job.at(fam + ":" + t), fam, pp.problem.key(), err));
      }
    }
  }
  return fixed;
}

}  // namespace gt::search
