// The first hour of a newcomer without a GPU: the README's tour runs as written and shows what
// the README says it shows (replayed winners, the recording's pick beside them, a report, a
// table, a lookup, configs readable throughout); --help explains the problem notation; a
// command that needs a GPU says what runs without one.
#include "test_util.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using gt::test::run_command;

namespace {

// The command lines of the README's code block after `heading`.
std::vector<std::string> readme_block(const std::string& heading) {
  const std::string readme = gt::test::read_file(gt::test::source_dir() / "README.md");
  const size_t at = readme.find(heading);
  REQUIRE(at != std::string::npos);
  const size_t open = readme.find("```sh\n", at);
  const size_t close = readme.find("```", open + 6);
  REQUIRE(open != std::string::npos);
  REQUIRE(close != std::string::npos);
  std::istringstream in(readme.substr(open + 6, close - open - 6));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("build/gemmtune ", 0) != 0) continue;
    line = line.substr(0, line.find("  #"));  // the comment
    lines.push_back(line.substr(std::string("build/gemmtune ").size()));
  }
  return lines;
}

std::string gemmtune() { return fmt::format("'{}'", gt::test::gemmtune_binary().string()); }

}  // namespace

TEST_CASE("the README's tour without a GPU runs as written and shows what it says", "[cli][docs][replay]") {
  if (gt::test::have_gpu()) {
    WARN("not run: this machine has a GPU, and the tour is the one without (the GPU tour is the [gpu] checks')");
    return;
  }
  const auto tour = readme_block("## A ten-minute tour without a GPU");
  REQUIRE(tour.size() == 5);
  // In a fresh directory that sees the checkout's configs and docs, as the README's reader does.
  gt::test::TempDir dir;
  fs::create_directory_symlink(gt::test::source_dir() / "configs", dir.path / "configs");
  fs::create_directory_symlink(gt::test::source_dir() / "docs", dir.path / "docs");
  std::vector<gt::test::CommandResult> out;
  for (auto& args : tour) {
    out.push_back(run_command(fmt::format("cd '{}' && env XDG_CACHE_HOME='{}' {} --plugin-dir '{}' {}",
                                          dir.path.string(), (dir.path / "cache").string(), gemmtune(),
                                          gt::test::plugin_dir().string(), args)));
    INFO(args << "\n" << out.back().out);
    const bool report_without_matplotlib =
        args.find("report") == 0 && out.back().out.find("matplotlib is missing") != std::string::npos;
    CHECK((out.back().exit_code == 0 || report_without_matplotlib));
  }
  const std::string &tune = out[0].out, &compare = out[1].out, &exported = out[3].out, &lookup = out[4].out;
  // 1. Replayed, labelled, readable configs, and the simulated time.
  CHECK_THAT(tune, Catch::Contains("[REPLAY of ") && Catch::Contains("recorded on NVIDIA H200"));
  CHECK_THAT(tune, Catch::Contains("4096x4096x4096 f16>f16 nn a16"));
  CHECK_THAT(tune, Catch::Contains("algo=66 tile=256x128") && Catch::Contains("cluster=1x2x1"));
  CHECK_THAT(tune, !Catch::Contains("cublaslt_algo"));
  CHECK_THAT(tune, Catch::Contains("this run would have taken about"));
  // 2. The recording's pick beside each family and cuBLASLt's best.
  CHECK_THAT(compare, Catch::Contains("cublaslt (pick)") && Catch::Contains("cublaslt (best)"));
  CHECK_THAT(compare, Catch::Contains("x pick"));
  CHECK_THAT(compare, !Catch::Contains("cublaslt_algo"));
  // 3. The page (where matplotlib is).
  if (out[2].exit_code == 0) CHECK(fs::exists(dir.path / "tour-report" / "index.html"));
  // 4. The table, its configs spelled out without a GPU (the names the store noted).
  CHECK_THAT(exported, Catch::Contains("exported 3 entries"));
  const std::string table = gt::test::read_file(dir.path / "tour-table.toml");
  CHECK_THAT(table, Catch::Contains("params = \"algo=66,tile=256x128"));
  CHECK_THAT(table, Catch::Contains("config = \"cublaslt_algo66_tile256x128"));
  // 5. The answer: the family first, then how it was found: the default, since the table holds
  // no evidence that its 4096x4096x4096 entry serves 4000 rows (and no GPU names a device here).
  CHECK_THAT(lookup, Catch::StartsWith("cublaslt  (cublaslt's own choice"));
  CHECK_THAT(lookup, Catch::Contains("default (cuBLASLt's heuristic pick") &&
                         Catch::Contains("4096x4096x4096 (nearest, distance 0.024), is not"));
}

TEST_CASE("--help explains the problem notation, and tune's its default budget", "[cli][docs]") {
  auto top = run_command(gemmtune() + " --help");
  CHECK(top.exit_code == 0);
  CHECK_THAT(top.out, Catch::Contains("4096x4096x4096 f16>f16 nn a16") && Catch::Contains("aALIGN"));
  auto tune = run_command(gemmtune() + " tune --help");
  CHECK(tune.exit_code == 0);
  CHECK_THAT(tune.out, Catch::Contains("100 evaluations or 30 s"));
  CHECK_THAT(tune.out, Catch::Contains("IN>OUT"));
}

TEST_CASE("every command answers --version and --help, before or after it, required options or not",
          "[cli][docs]") {
  // Every command listed by --help; lookup requires --table, and once checked it before these.
  const auto top = run_command(gemmtune() + " --help");
  std::vector<std::string> commands;
  std::istringstream in(top.out.substr(top.out.find("Subcommands:")));
  for (std::string line; std::getline(in, line);)
    if (line.rfind("  ", 0) == 0 && line.size() > 2 && line[2] != ' ') commands.push_back(line.substr(2, line.find(' ', 2) - 2));
  REQUIRE(commands.size() >= 12);
  for (const auto& c : commands) {
    INFO(c);
    auto version = run_command(gemmtune() + " " + c + " --version");
    CHECK(version.exit_code == 0);
    CHECK_THAT(version.out, Catch::StartsWith("gemmtune "));
    auto help = run_command(gemmtune() + " --help " + c);
    CHECK(help.exit_code == 0);
  }
}

TEST_CASE("a command that needs a GPU says what runs without one", "[cli]") {
  if (gt::test::have_gpu()) {
    WARN("not run: this machine has a GPU");
    return;
  }
  auto tune = run_command(gemmtune() + " tune --shape 256x256x256");
  CHECK(tune.exit_code == 3);
  CHECK_THAT(tune.out, Catch::Contains("--default-job") && Catch::Contains("--replay FILE") &&
                           Catch::Contains("default_job.replay.json"));
  auto compare = run_command(gemmtune() + " compare --shape 256x256x256");
  CHECK(compare.exit_code == 3);
  CHECK_THAT(compare.out, Catch::Contains("compare --replay FILE"));
  auto roofs = run_command(gemmtune() + " roofs");
  CHECK(roofs.exit_code == 3);
  CHECK_THAT(roofs.out, Catch::Contains("tune --default-job") && Catch::Contains("need no GPU"));
}

TEST_CASE("the README's compile figures are what compile counts", "[cli][docs][compile]") {
  // The README quotes how many distinct builds and candidates wgmma_tma has at 4096³ f16 on
  // sm_90; a change of the space must change the README with it. One build is compiled here.
  std::string readme = gt::test::read_file(gt::test::source_dir() / "README.md");
  std::replace(readme.begin(), readme.end(), '\n', ' ');  // wherever its lines wrap
  gt::test::TempDir dir;
  auto out = run_command(fmt::format("env GEMMTUNE_CACHE_DIR='{}' {} --plugin-dir '{}' compile --family wgmma_tma "
                                     "--shape 4096x4096x4096 --dtype f16 --arch sm_90 --limit 1",
                                     (dir.path / "cache").string(), gemmtune(), gt::test::plugin_dir().string()));
  INFO(out.out);
  REQUIRE(out.exit_code == 0);
  std::smatch m;
  REQUIRE(std::regex_search(out.out, m, std::regex(R"((\d+) candidates in (\d+) distinct builds)")));
  auto with_commas = [](std::string d) {
    for (int i = int(d.size()) - 3; i > 0; i -= 3) d.insert(size_t(i), ",");
    return d;
  };
  CHECK_THAT(readme, Catch::Contains(fmt::format("of its {} distinct builds — {} candidates share them",
                                                 with_commas(m[2]), with_commas(m[1]))));
}
