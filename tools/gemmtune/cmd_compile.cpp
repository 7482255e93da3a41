// gemmtune compile: NVRTC-compile every valid candidate of a family for a problem (no GPU).
#include "cli.hpp"
#include "evaluate.hpp"

#include <future>

namespace gt::cli {

static Command add_compile(CLI::App& app, Globals& g);
static Registrar reg_compile(30, add_compile);

static Command add_compile(CLI::App& app, Globals& g) {
  auto* sub = app.add_subcommand("compile", "NVRTC-compiles every valid candidate; prints compiled / from cache / "
                                            "failed counts and the first failures with their log (no GPU needed). "
                                            "Exit 1 when any candidate failed to compile.");
  static std::vector<std::string> families;
  static std::string arch;
  static ProblemArgs pa;
  static unsigned threads = 0;
  static uint64_t limit = 0;
  sub->add_option("--family", families, "families to compile (repeatable; default: every source family)");
  sub->add_option("--arch", arch, "target architecture, sm_XY (default: the GPU's, else sm_90)");
  sub->add_option("--threads", threads, "compile threads (default: one per core)")
      ->check(whole_in(search::WholeRange{0, 1024}));
  sub->add_option("--limit", limit, "compile at most this many candidates per family (0: all)")
      ->check(whole_in(search::WholeRange{0, UINT64_MAX}));
  add_problem_options(sub, pa);
  return {sub, [&g] {
            Problem p = pa.resolve("4096x4096x4096");
            std::string arch_used;
            gt_device lim = limits_for(arch, &arch_used);
            const auto& reg = g.plugins();
            std::vector<const Family*> fams;
            for (auto& f : families) fams.push_back(&reg.get(f));
            if (families.empty())
              for (auto& f : reg.families())
                if (!f.is_library()) fams.push_back(&f);
            CubinCache cache = g.cache();
            Compiler compiler(&cache);
            CompilePool pool(compiler, threads);
            nlohmann::json out = nlohmann::json::array();
            int exit_code = 0;
            for (auto* f : fams) {
              if (f->is_library()) {
                if (!g.json) fmt::print("{}: a library family; nothing to compile\n", f->name());
                continue;
              }
              Space s = f->space(p, lim);
              struct Job {
                std::string name;
                std::shared_future<CompileResult> fut;
              };
              std::vector<Job> jobs;
              uint64_t refused = 0;
              for (uint64_t i = 0; i < s.raw_size() && (limit == 0 || jobs.size() < limit); ++i) {
                Config c = s.at(i);
                if (!s.valid(c)) continue;
                Refused why;
                auto req = compile_request(*f, p, c, lim, arch_used, nullptr, &why);
                if (!req) {
                  ++refused;
                  continue;
                }
                jobs.push_back({s.name(c), pool.submit(std::move(*req))});
              }
              Progress prog(fmt::format("compiling {} ({})", f->name(), arch_used), jobs.size(), !g.quiet && !g.json);
              uint64_t compiled = 0, cached = 0, failed = 0;
              double compile_s = 0;
              std::vector<std::pair<std::string, std::string>> failures;
              for (size_t i = 0; i < jobs.size(); ++i) {
                const CompileResult& r = jobs[i].fut.get();
                if (!r.ok) {
                  ++failed;
                  if (failures.size() < 3) failures.emplace_back(jobs[i].name, r.log);
                } else if (r.from_cache) {
                  ++cached;
                } else {
                  ++compiled;
                  compile_s += r.seconds;
                }
                prog.update(i + 1);
              }
              prog.finish();
              out.push_back({{"family", f->name()}, {"problem", p.key()}, {"arch", arch_used},
                             {"candidates", jobs.size()}, {"compiled", compiled}, {"from_cache", cached},
                             {"failed", failed}, {"refused_at_build", refused}, {"compile_seconds", compile_s}});
              if (!g.json) {
                fmt::print("{} for {} on {}: {} candidates: {} compiled, {} from cache, {} failed", f->name(), p.key(),
                           arch_used, jobs.size(), compiled, cached, failed);
                if (compiled) fmt::print(" ({} of NVRTC time, {} per kernel)", human_seconds(compile_s), human_seconds(compile_s / double(compiled)));
                fmt::print("\n");
                if (cached == jobs.size() && !jobs.empty()) fmt::print("  all {} came from the cache ({})\n", cached, cache.dir().string());
                for (auto& [name, log] : failures)
                  fmt::print("  FAILED {}:\n{}\n", name, log.size() > 2000 ? log.substr(0, 2000) + "\n  [log truncated]" : log);
              }
              if (failed) exit_code = 1;
            }
            if (g.json) print_json(out);
            return exit_code;
          }};
}

}  // namespace gt::cli
