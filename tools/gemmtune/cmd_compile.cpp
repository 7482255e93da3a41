// gemmtune compile: NVRTC-compile every valid candidate of a family for a problem (no GPU).
#include "cli.hpp"
#include "measure/evaluate.hpp"

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <random>

namespace gt::cli {

namespace {

// One distinct build: the candidates whose compile requests are identical (configs that differ
// only in what needs no recompile, such as launch scalars) share it.
struct Build {
  CompileRequest request;
  std::string first_name;  // the first candidate that asks for it (named in failures)
  uint64_t candidates = 0;
  std::shared_future<CompileResult> result;
};

struct FamilyCounts {
  uint64_t candidates = 0, refused = 0, builds = 0, compiled = 0, cached = 0, failed = 0;
  uint64_t all_builds = 0;  // before --limit
  double compile_s = 0, wall_s = 0;
  std::vector<std::pair<std::string, std::string>> failures;  // first few: a candidate's name, the log
};

// The family's valid candidates as distinct builds, in a shuffled order (fixed seed): the
// progress estimate is the rate so far, which holds only if the builds done so far are like
// those left (in index order the larger tiles, which compile slower, come last). `limit`:
// at most this many builds, a sample spread over the space.
std::vector<Build> builds_of(const Family& f, const Problem& p, const gt_device& lim, const std::string& arch,
                             uint64_t limit, FamilyCounts& n) {
  Space s = f.space(p, lim);
  std::vector<Build> builds;
  std::map<std::string, size_t> by_key;
  for (uint64_t i = 0; i < s.raw_size(); ++i) {
    Config c = s.at(i);
    if (!s.valid(c)) continue;
    Refused why;
    auto req = compile_request(f, p, c, lim, arch, nullptr, &why);
    if (!req) {
      ++n.refused;
      continue;
    }
    ++n.candidates;
    auto [it, fresh] = by_key.emplace(Compiler::key_of(*req), builds.size());
    if (fresh) builds.push_back({std::move(*req), s.name(c), 0, {}});
    ++builds[it->second].candidates;
  }
  std::mt19937_64 rng(stable_hash(f.name() + p.key()));
  std::shuffle(builds.begin(), builds.end(), rng);
  n.all_builds = builds.size();
  if (limit && builds.size() > limit) builds.resize(size_t(limit));
  n.builds = builds.size();
  return builds;
}

// Compiles the builds on the pool: those in the cache first (instant), then the rest with a
// progress display whose estimate is the rate of the compiles so far.
void compile_builds(std::vector<Build>& builds, CompilePool& pool, const CubinCache& cache, const std::string& what,
                    bool progress, FamilyCounts& n) {
  auto t0 = std::chrono::steady_clock::now();
  const auto in_cache = std::stable_partition(builds.begin(), builds.end(), [&](const Build& b) {
    return std::filesystem::exists(cache.cubin_path(Compiler::key_of(b.request)));
  });
  const size_t cached_ahead = size_t(in_cache - builds.begin());
  for (auto& b : builds) b.result = pool.submit(b.request);
  Progress prog(what, builds.size() - cached_ahead, progress);
  for (size_t i = 0; i < builds.size(); ++i) {
    const CompileResult& r = builds[i].result.get();
    if (!r.ok) {
      ++n.failed;
      if (n.failures.size() < 3) n.failures.emplace_back(builds[i].first_name, r.log);
    } else if (r.from_cache) {
      ++n.cached;
    } else {
      ++n.compiled;
      n.compile_s += r.seconds;
    }
    if (i >= cached_ahead) prog.update(i + 1 - cached_ahead);
  }
  prog.finish();
  n.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void print_counts(const Family& f, const Problem& p, const std::string& arch, const FamilyCounts& n,
                  const CubinCache& cache, unsigned threads) {
  fmt::print("{} for {} on {}: {} candidates in {} distinct builds{}{}: {} compiled, {} from cache, {} failed, in {}",
             f.name(), p.key(), arch, n.candidates, n.all_builds,
             n.all_builds < n.candidates ? " (candidates that differ only in launch values share one)" : "",
             n.builds < n.all_builds ? fmt::format("; {} of them (--limit, a sample)", n.builds) : "", n.compiled,
             n.cached, n.failed, human_seconds(n.wall_s));
  if (n.compiled)
    fmt::print(" ({} of NVRTC time on {} threads, {} per kernel)", human_seconds(n.compile_s), threads,
               human_seconds(n.compile_s / double(n.compiled)));
  fmt::print("\n");
  if (n.cached == n.builds && n.builds) fmt::print("  all {} came from the cache ({})\n", n.cached, cache.dir().string());
  for (auto& [name, log] : n.failures)
    fmt::print("  FAILED {}:\n{}\n", name, log.size() > 2000 ? log.substr(0, 2000) + "\n  [log truncated]" : log);
}

struct CompileArgs {
  std::vector<std::string> families;
  std::string arch;
  ProblemArgs problem;
  unsigned threads = 0;  // one per core
  uint64_t limit = 0;    // all
};

void add_compile_options(CLI::App* sub, CompileArgs& a) {
  sub->add_option("--family", a.families, "families to compile (repeatable; default: every source family)");
  sub->add_option("--arch", a.arch, "target architecture, sm_XY (default: the GPU's, else sm_90)");
  sub->add_option("--threads", a.threads, "compile threads (default: one per core)")
      ->check(whole_in(search::WholeRange{0, 1024}));
  sub->add_option("--limit", a.limit,
                  "compile at most this many distinct builds per family, a sample spread over the space (0: all)")
      ->check(whole_in(search::WholeRange{0, UINT64_MAX}));
  add_problem_options(sub, a.problem);
}

int run_compile(Globals& g, const CompileArgs& a) {
  Problem p = a.problem.resolve("4096x4096x4096");
  std::string arch_used;
  gt_device lim = limits_for(a.arch, &arch_used);
  const auto& reg = g.plugins();
  std::vector<const Family*> fams;
  for (auto& f : a.families) {
    if (std::count(a.families.begin(), a.families.end(), f) > 1)
      throw InputError(fmt::format("--family: '{}' is named twice", f));
    fams.push_back(&reg.get(f));
  }
  if (a.families.empty())
    for (auto& f : reg.families())
      if (!f.is_library()) fams.push_back(&f);
  CubinCache cache = g.cache();
  Compiler compiler(&cache);
  CompilePool pool(compiler, a.threads);
  nlohmann::json out = nlohmann::json::array();
  int exit_code = 0;
  for (auto* f : fams) {
    if (f->is_library()) {
      if (!g.json) fmt::print("{}: a library family; nothing to compile\n", f->name());
      continue;
    }
    FamilyCounts n;
    std::vector<Build> builds = builds_of(*f, p, lim, arch_used, a.limit, n);
    compile_builds(builds, pool, cache, fmt::format("compiling {} ({})", f->name(), arch_used),
                   !g.quiet && !g.json, n);
    out.push_back({{"family", f->name()}, {"problem", p.key()}, {"arch", arch_used},
                   {"candidates", n.candidates}, {"distinct_builds", n.all_builds}, {"builds", n.builds},
                   {"compiled", n.compiled},
                   {"from_cache", n.cached}, {"failed", n.failed}, {"refused_at_build", n.refused},
                   {"compile_seconds", n.compile_s}, {"wall_seconds", n.wall_s}, {"threads", pool.threads()}});
    if (!g.json) print_counts(*f, p, arch_used, n, cache, pool.threads());
    if (n.failed) exit_code = 1;
  }
  if (g.json) print_json(out);
  return exit_code;
}

Registrar reg_compile(30, [](CLI::App& app, Globals& g) {
  return make_command<CompileArgs>(app, g, "compile",
      "NVRTC-compiles every valid candidate (each distinct build once: candidates that differ only in "
      "launch values share one); prints the candidates, builds, compiled / from cache / failed counts "
      "and the first failures with their log (no GPU needed). Exit 1 when any build failed.",
      add_compile_options, run_compile);
});

}  // namespace

}  // namespace gt::cli
