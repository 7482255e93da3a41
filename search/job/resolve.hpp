// A resolved job: everything a tuning run is to do, resolved once from the job file (or the one
// problem of the command line, or a recording's problems), the command's flags, the job's
// [tune] settings and per-family budgets, the families each problem searches, the devices and
// the shard, and checked before any GPU work. `tune`, `compare`, `report` and the scale-out
// path (run.hpp) all read a resolved job; none resolves a job on its own.
//
// Precedence, for every setting: a flag on the command line, else the job's (for a budget: the
// family's [tune.budget.FAMILY], then [tune]), else the command's default. Families of a
// problem: --family, else its problem set's, else the job's [tune] families, else the
// command's default list (tune: every family the catalog knows).
#pragma once

#include "job/job.hpp"
#include "job/shard.hpp"
#include "tune/tuner.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gt::search {

// What a run can use: the families it knows (the loaded plugins, or a recording's) and a way
// to check fixed configs against their spaces.
struct Catalog {
  std::vector<std::string> families;
  std::string known_as = "loaded";  // how error messages name the list: "loaded", "recorded in FILE"
  // Families that exist though this run cannot tune them (a replay's plugins): a job may give
  // them a budget of their own. Empty: only `families` exist.
  std::function<bool(const std::string&)> exists;
  // True for a library family (cuBLASLt): its fixed configs are resolved at run time.
  std::function<bool(const std::string&)> is_library;
  // The space of a source family for a problem (device limits of sm_90 before any GPU is
  // known), or a replay's recorded space of any family; unset: fixed configs cannot be checked
  // ahead. RuntimeFailure when there is none (the family's tune says why it is skipped).
  std::function<Space(const std::string&, const Problem&)> space;
  bool library_spaces = false;  // `space` answers for library families too (a recording's)
  // A recording's problems with their recorded families: `tune --replay` without a problem.
  std::vector<std::pair<Problem, std::vector<std::string>>> recorded;
  // Family names are not checked (a report of a store, with no plugins to ask).
  bool unchecked = false;
};

// What the command line asked. Unset optionals and empty strings are "not given".
struct JobRequest {
  std::string config;              // --config FILE
  std::string config_flag = "--config";  // what named it, for messages (report: --job)
  uint64_t max_problems = kDefaultMaxProblems;  // --max-problems: the most a job may expand to
  bool default_job = false;        // --default-job
  std::optional<Problem> problem;  // --shape / --dtype / ... when --shape is given
  std::vector<std::string> families;          // --family
  std::vector<std::string> default_families;  // the command's default (empty: the catalog's)
  std::string strategy;
  std::optional<uint64_t> evaluations, patience;
  std::optional<double> seconds, fraction;
  std::optional<uint64_t> seed;
  bool full = false;                // --full: full timings while exploring
  std::optional<int> finalists;
  std::optional<double> min_gain_pct;
  bool fast_accum = false;  // --fast-accum (else the job's [tune] fast_accum)
  std::string dist;
  std::string shard;                // --shard I/N ("": from the environment, else 0/1)
  std::map<std::string, std::string> environment;  // for the shard (shard.hpp)
  std::string devices;              // --devices all|0,1,... ("": --device)
  int device = 0;                   // --device
  int consistency = -1;             // --consistency N (< 0: the default)
  TuneOptions base;                 // the command's defaults and the settings only flags give
  // The command's default budget (tune: kDefaultTuneBudget), used whole when neither a flag
  // (--budget, --time, --fraction, --patience) nor the job's [tune] names any budget; once one
  // is named, only what is named limits the search. Unset: base.budget.
  std::optional<Budget> default_budget;
};

// tune's budget when none is named: per (problem, family), 100 evaluations or 30 s, whichever
// comes first: with every family loaded, a few minutes per problem (30 s per family, plus the
// settle and the finalists' re-timing).
inline Budget default_tune_budget() {
  Budget b;
  b.max_evaluations = 100;
  b.max_seconds = 30;
  return b;
}

struct ResolvedProblem {
  Problem problem;
  std::vector<std::string> families;
  // Fixed configs per family, as written (canonical names, "K=V,...", "@pick"); each checked
  // against its space where the catalog can, and resolved per device by fixed_configs().
  std::map<std::string, std::vector<std::string>> configs;
};

struct ResolvedJob {
  Job job;                              // name, description, source, positions for messages
  TuneOptions options;                  // resolved settings (budgets per family included)
  std::vector<ResolvedProblem> problems; // every problem of the job, in its order
  Shard shard;
  std::vector<size_t> mine;             // indices of the problems this shard tunes
  std::vector<int> devices;             // GPU indices (empty with all_devices: every GPU)
  bool all_devices = false;
  bool devices_flag = false;            // the GPUs came from --devices (for messages)
  // Problems whose winners are timed on every GPU of a multi-GPU run (run.hpp); unset: one
  // per GPU (the first each decided).
  std::optional<size_t> consistency_sample;
};

// Resolves and checks the job; InputError naming the flag, or the job's file, line and key.
ResolvedJob resolve_job(const JobRequest& r, const Catalog& cat);

// The job a request names: its file, the built-in default job, or the one problem of the
// command line (or, neither given, the catalog's recorded problems). InputError when it names
// two or none.
Job job_of(const JobRequest& r, const Catalog& cat);

// InputError "WHERE: unknown family 'F' (KNOWN_AS: ...)" unless F is one of `known`.
void require_known_family(const std::string& f, const std::vector<std::string>& known, const std::string& where,
                          const std::string& known_as);

// "0,1,..." as GPU indices (InputError when malformed or repeated; "all" is not a list).
std::vector<int> parse_device_list(const std::string& s);

// The fixed configs of a planned problem as configs of their spaces, for one device: "@pick"
// (a library's own choice) is asked of the plugin there. InputError for a config not in its
// space, at its file, line and column in `job`. A family whose space cannot be had here (a
// replay that did not record it) gets none: its tune says why it was skipped.
std::map<std::string, std::vector<Config>> fixed_configs(const ResolvedProblem& pp, const SpaceSource& spaces,
                                                         const PluginRegistry* plugins, const gt_device& limits,
                                                         const Job& job);

}  // namespace gt::search
