// A tuning job: the problems to tune (a TOML file, or one problem from the command line)
// and how to search them. Every error names the file, line, column and field, and is found
// before any GPU work starts.
#pragma once

#include "tune/budget.hpp"
#include "gpu/gpu_kernels.hpp"
#include "base/problem.hpp"

#include <cstdint>
#include <filesystem>
#include <limits>
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

// The range of a numeric setting. A job's key and the flag that replaces it are checked by the
// same rule, so a flag accepts exactly what the job file accepts, and the flag's help prints
// the range. `check` returns why a value is out of range (nullopt: within), worded for `name`
// ("'evaluations'" in a job, "--budget" on the command line).
struct WholeRange {
  uint64_t lo, hi;
  std::string text() const;  // "a whole number from 1 to 18446744073709551615"
  std::optional<std::string> check(const std::string& name, int64_t v) const;
  std::optional<std::string> check(const std::string& name, uint64_t v) const;
};
struct RealRange {
  double lo, hi;          // hi inclusive; lo inclusive unless lo_open
  bool lo_open = false;
  const char* what = "number";  // what the value is: "number of seconds", "fraction"
  std::string text() const;       // "a number of seconds above 0", "a number from 0 to 99"
  std::optional<std::string> check(const std::string& name, double v) const;
};
// The job's numeric keys ([tune], [tune.budget.FAMILY]).
inline constexpr WholeRange kEvaluationsRange{1, INT64_MAX};  // a TOML integer is at most INT64_MAX
inline constexpr WholeRange kPatienceRange{1, INT64_MAX};
inline constexpr WholeRange kSeedRange{0, INT64_MAX};
// At least one: the best config is always re-timed against the baseline. A thousand already
// takes hours of interleaved re-timing per family.
inline constexpr WholeRange kFinalistsRange{1, 1000};
inline constexpr RealRange kSecondsRange{0, std::numeric_limits<double>::max(), true, "number of seconds"};
inline constexpr RealRange kFractionRange{0, 1, true, "fraction"};
inline constexpr RealRange kMinGainRange{0, 99, false, "percentage"};

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
  // FP8: also explore configs with fast accumulation (a parameter `fast_accum`, cuBLASLt's
  // FAST_ACCUM: no periodic promotion to fp32, faster and less exact). Off unless asked.
  std::optional<bool> fast_accum;
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

// How many problems a job may expand to unless told otherwise (tune --max-problems): a
// problem takes seconds to hours to tune, so ten thousand are already more than a week of GPU
// time, and a few lines of `m = n = k = [...]` can name a billion (12 GB of problems before the
// first one is tuned).
inline constexpr uint64_t kDefaultMaxProblems = 10000;

// Parses a job; InputError "FILE:LINE:COL: ..." on malformed TOML, unknown keys, wrong
// types, bad shapes / dtypes / layouts, empty problem lists, and a job whose problem sets
// expand to more than `max_problems` problems (counted before any is expanded).
Job parse_job(std::string_view toml_text, const std::string& source_name,
              uint64_t max_problems = kDefaultMaxProblems);
// `flag` names the file in messages ("--config: cannot read '...'").
Job load_job(const std::filesystem::path& file, uint64_t max_problems = kDefaultMaxProblems,
             const std::string& flag = "--config");

// The job the README's main command runs (configs/default.toml, compiled into the binary).
std::string_view default_job_text();

}  // namespace gt::search
