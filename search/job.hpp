// A tuning job: the problems to tune (a TOML file, or one problem from the command line)
// and how to search them. Every error names the file, line, column and field, and is found
// before any GPU work starts.
#pragma once

#include "budget.hpp"
#include "gpu_kernels.hpp"
#include "problem.hpp"

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gt::search {

struct JobProblem {
  Problem problem;
  std::vector<std::string> families;  // empty: the job's (or every) family
  // Fixed configs per family (canonical names or "K=V,..."): those families measure exactly
  // these instead of searching (the lab's experiments measure named kernels).
  std::map<std::string, std::vector<std::string>> configs;
};

// How long a search may run: [tune]'s keys, or a family's own in [tune.budget.FAMILY].
struct JobBudget {
  std::optional<uint64_t> evaluations;
  std::optional<double> seconds;
  std::optional<double> fraction;
  std::optional<uint64_t> patience;
};

struct JobSettings : JobBudget {
  std::optional<std::string> strategy;
  // [tune.budget.FAMILY]: what it sets replaces [tune]'s budget for that family (a flag on the
  // command line replaces both).
  std::map<std::string, JobBudget> family_budgets;
  std::optional<uint64_t> seed;
  std::optional<bool> quick;
  std::optional<int> finalists;
  std::optional<double> min_gain;  // percent
  std::optional<std::string> dist;
  std::vector<std::string> families;
};

struct Job {
  std::string name;
  std::string description;
  std::string source;  // file name (or "<embedded default>")
  JobSettings settings;
  std::vector<JobProblem> problems;  // expanded and de-duplicated, in file order
  // "FILE:LINE:COL" of strings the job names, keyed "ARRAY:TEXT" ("families:wmma",
  // "register_tile:bm=64,..." for a configs list), first occurrence: later checks (a family
  // that is not loaded, a config not in its space) point at the line.
  std::map<std::string, std::string> where;
  // The position of `what`, or the file name when it is not known.
  std::string at(const std::string& what) const;
};

// Parses a job; InputError "FILE:LINE:COL: ..." on malformed TOML, unknown keys, wrong
// types, bad shapes / dtypes / layouts, empty problem lists.
Job parse_job(std::string_view toml_text, const std::string& source_name);
Job load_job(const std::filesystem::path& file);

// The job the README's main command runs (configs/default.toml, compiled into the binary).
std::string_view default_job_text();

}  // namespace gt::search
