// Shared pieces of the gemmtune command line: global options, problem options, output.
#pragma once

#include "build/compiler.hpp"
#include "gpu/device.hpp"
#include "base/errors.hpp"
#include "base/files.hpp"
#include "job/job.hpp"
#include "measure/measurer.hpp"
#include "build/plugin.hpp"
#include "base/problem.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gt::cli {

struct Globals {
  std::vector<std::string> plugin_dirs;
  std::string db;
  std::string cache_dir;
  bool json = false;
  bool quiet = false;

  std::filesystem::path db_path() const;
  // Whether the store was named (--db, GEMMTUNE_DB), and what named it, for messages.
  bool db_named() const;
  std::string db_flag() const;
  std::filesystem::path cache_path() const;
  // Loads plugins; reports skipped ones on stderr (once).
  const PluginRegistry& plugins() const;
  // The compile cache, its folder checked first (created when missing; exit 1 naming it when it
  // is a file or cannot be written).
  CubinCache cache() const;
};

// The environment variables and plugin folders every command depends on, checked before any
// work: a value that would be silently ignored (or load nothing) is bad input (InputError).
void check_environment(const Globals& g);

struct ProblemArgs {
  std::string shape;
  std::string dtype = "f32";
  std::string out_dtype;
  std::string layout;  // "": nn, or nt for FP8 inputs (the only layout FP8 has)
  std::string scale;     // FP8: tensor (default), row or block
  std::string constant;  // the operands kept constant from call to call ("b"; "": none)
  bool given() const { return !shape.empty(); }
  // InputError naming the flag on bad input.
  Problem resolve(const std::string& default_shape = "") const;
};

void add_problem_options(CLI::App* app, ProblemArgs& a, bool shape_required = false);

// Numeric flags: the text read exactly (decimal digits for a whole number: no wrap-around of
// -1, no 1e3 taken as 1; a real number is finite) and held to the range, the job file's for
// the key a flag replaces (search/job/job.hpp); the help shows the range.
CLI::Validator whole_in(const search::WholeRange& r);
CLI::Validator number_in(const search::RealRange& r);
// Ranges of flags that no job key shares.
inline constexpr search::WholeRange kDeviceRange{0, 1023};
inline constexpr search::WholeRange kRoundsRange{1, 1000};
inline constexpr search::RealRange kSettleRange{0, 600, false, "number of seconds"};
inline constexpr search::RealRange kTurnWarmupRange{0, 10, false, "number of seconds"};

// --rounds and --turn-warmup: how candidates are re-timed interleaved (Interleave).
void add_interleave_options(CLI::App* app, int& rounds, double& turn_warmup);
// --min-gain PCT (search::TuneOptions::min_gain); min_gain stays < 0 unless given. `where`
// completes the help: when the margin applies in this command.
void add_min_gain_option(CLI::App* app, double& min_gain, const std::string& where);

// A command registers itself: it adds a subcommand and returns the function that runs it
// (an exit code). Everything is validated before any GPU work.
using Runner = std::function<int()>;
struct Command {
  CLI::App* app;
  Runner run;
};
using CommandFactory = Command (*)(CLI::App& app, Globals& g);

// The one shape of a command: its options are a struct `XArgs`; `add_X_options` declares them
// (options only, each default written once: in the struct); `run_X` resolves them, does the
// work and prints. The arguments live as long as the command (the runner shares them).
template <class Args>
Command make_command(CLI::App& app, Globals& g, const std::string& name, const std::string& help,
                     void (*add_options)(CLI::App*, Args&), int (*run)(Globals&, const Args&)) {
  auto* sub = app.add_subcommand(name, help);
  auto args = std::make_shared<Args>();
  add_options(sub, *args);
  return {sub, [&g, args, run] { return run(g, *args); }};
}

// Each cmd_*.cpp registers its command with a static Registrar; `order` sorts --help.
// A new command is a new file: main.cpp does not change.
struct Registrar {
  Registrar(int order, CommandFactory f);
};
std::vector<std::pair<int, CommandFactory>>& command_registry();

// Progress on stderr for long work (only when stderr is a terminal, or forced).
class Progress {
 public:
  Progress(std::string what, uint64_t total, bool enabled);
  void update(uint64_t done, const std::string& note = "");
  void finish();
  const std::string& what() const { return what_; }

 private:
  std::string what_;
  uint64_t total_;
  bool enabled_, tty_;
  double t0_, last_ = -1;
};

std::string human_seconds(double s);
// The configs/ folder: beside the binary's parent (a build inside the checkout, or an
// install), else the source tree this binary was built from.
std::filesystem::path config_dir();
void print_json(const nlohmann::json& j);
// What to run instead when `command` found no GPU (the lines after the exit-3 message): the
// replays, and the commands that need none.
std::string no_gpu_hint(const std::string& command);
// The problem notation every table prints, explained (for --help and messages).
extern const char* const kProblemNotation;
// The device to measure on, or NoGpuError (exit 3) with the reason.
DeviceInfo gpu_or_exit(int index);
// Device limits for constraints: the GPU's when there is one, else the named arch's.
gt_device limits_for(const std::string& arch, std::string* arch_used);

}  // namespace gt::cli
