// gemmtune: a plugin-based GEMM kernel autotuner. The command contract is docs/cli.md;
// exit codes: 0 success, 1 run-time failure, 2 bad input or usage, 3 no GPU.
#include "cli.hpp"

#include <algorithm>
#include <iostream>

namespace {
// An error's lines on stderr. A stderr that cannot be written (redirected to a full disk) must
// not turn the exit code into an abort: fmt throws when the write fails.
template <class... T>
void say(fmt::format_string<T...> f, T&&... args) noexcept {
  try {
    fmt::print(stderr, f, std::forward<T>(args)...);
  } catch (...) {
  }
}
}  // namespace

int main(int argc, char** argv) {
  using namespace gt;
  using namespace gt::cli;
  CLI::App app{"gemmtune: tune GEMM kernels per shape on NVIDIA GPUs, compare with cuBLASLt, export lookup tables.\n"
               "Exit codes: 0 success, 1 run-time failure, 2 bad input or usage, 3 no GPU found."};
  app.set_version_flag("--version", "gemmtune 0.1.0 (plugin ABI v" + std::to_string(GT_ABI_VERSION) + ")");
  app.footer(std::string(kProblemNotation) +
             "\nWithout a GPU: `gemmtune tune --default-job` replays recorded H200 measurements. The command-line "
             "contract: docs/cli.md; `gemmtune COMMAND --help` for each command.");
  app.require_subcommand(1);
  app.fallthrough();
  Globals g;
  app.add_option("--plugin-dir", g.plugin_dirs,
                 "directory to load plugins from (repeatable; else GEMMTUNE_PLUGIN_PATH, colon-separated; else the "
                 "'plugins' folder beside the gemmtune binary). The current directory is never searched unless named.");
  app.add_option("--db", g.db, "results store (SQLite); also GEMMTUNE_DB; default $XDG_DATA_HOME/gemmtune/results.db");
  app.add_option("--cache-dir", g.cache_dir,
                 "compiled-kernel cache; also GEMMTUNE_CACHE_DIR; default $XDG_CACHE_HOME/gemmtune");
  app.add_flag("--json", g.json, "machine-readable output where a command prints a table");
  app.add_flag("--quiet", g.quiet, "no progress display");

  auto factories = command_registry();
  std::sort(factories.begin(), factories.end(), [](auto& a, auto& b) { return a.first < b.first; });
  std::vector<Command> commands;
  for (auto& [order, make] : factories) commands.push_back(make(app, g));
  // An empty value reads as "not given" and would quietly mean the default (--strategy "" as
  // auto, -o "" as standard output, --db "" as the user's own store): refused, naming the option.
  const CLI::Validator non_empty(
      [](std::string& v) { return v.empty() ? std::string("is empty: give a value, or leave the option out") : std::string(); },
      "");
  auto refuse_empty = [&](CLI::App* a) {
    for (CLI::Option* o : a->get_options())
      if (o->get_type_size() != 0) o->check(non_empty);
  };
  refuse_empty(&app);
  for (CLI::App* sub : app.get_subcommands({})) refuse_empty(sub);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // The same prefix as every other error, so that scripts and people find it one way.
    say("gemmtune: error: {}\nRun with --help for more information.\n", e.what());
    return 2;
  }
  const Command* chosen = nullptr;
  for (auto& c : commands)
    if (c.app->parsed()) chosen = &c;
  if (!chosen) return 2;
  try {
    check_environment(g);
    return chosen->run();
  } catch (const InputError& e) {
    say("gemmtune: error: {}\n", e.what());
    return 2;
  } catch (const NoGpuError& e) {
    say("gemmtune: {}\n{}\n", e.what(), no_gpu_hint(chosen->app->get_name()));
    return 3;
  } catch (const std::exception& e) {
    say("gemmtune: failed: {}\n", e.what());
    return 1;
  }
}
