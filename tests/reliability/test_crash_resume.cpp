// Crash safety, on the CPU with replay: a tune killed with SIGKILL at random moments, many
// times, leaves a store that passes its integrity check; started again it continues where
// it stopped, re-measures nothing it already has, and ends with the same winner as a run
// that was never interrupted. Ctrl-C stops after the measurement in flight and prints the
// summary.
#include "replay/replay.hpp"
#include "store/store.hpp"
#include "replay/synthetic.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <fcntl.h>
#include <fstream>
#include <csignal>
#include <random>
#include <set>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

using namespace gt;

namespace {

// A recording of a synthetic register_tile landscape: every valid config, with failures.
std::filesystem::path make_recording(const std::filesystem::path& dir) {
  Problem p = Problem::make(1024, 1024, 1024, DType::f32, DType::f32, Layout::nn);
  search::SyntheticGemm g(search::SyntheticKind::register_tile, p, arch_limits("sm_90"), 5);
  search::Recording rec;
  auto& rs = rec.space_for({"NVIDIA H200", "GPU-synthetic", "sm_90"}, p, "register_tile", "1.0", g.space().params());
  const Space& s = g.space();
  for (uint64_t i = 0; i < s.raw_size(); ++i) {
    Config c = s.at(i);
    if (s.valid(c)) rs.add(c, g.evaluate(c));
  }
  auto path = dir / "rec.json";
  rec.save(path);
  return path;
}

std::vector<std::string> tune_args(const std::filesystem::path& rec, const std::filesystem::path& db) {
  return {test::gemmtune_binary().string(), "--quiet", "--json", "--db", db.string(), "tune", "--replay", rec.string(),
          "--shape", "1024x1024x1024", "--family", "register_tile", "--strategy", "random", "--budget", "250", "--seed",
          "3"};
}

pid_t spawn(const std::vector<std::string>& args, const std::string& out_file) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  REQUIRE(rc == 0);
  return pid;
}

int wait_exit(pid_t pid) {
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

nlohmann::json read_json(const std::string& file) {
  std::ifstream f(file);
  return nlohmann::json::parse(f);
}

// Exploration rows (quick: not the finalists' and confirmations' full re-timings) per config,
// of final outcomes: a runtime fault or a timeout may be transient and is measured once more
// on resume.
std::map<std::string, int> explored(const Store& s) {
  std::map<std::string, int> n;
  for (auto& r : s.rows())
    if (r.m.quick && r.m.status != Status::runtime_fault && r.m.status != Status::timeout) ++n[r.config_hash];
  return n;
}

}  // namespace

TEST_CASE("a tune killed at random moments resumes and ends like an uninterrupted one", "[reliability][replay]") {
  test::TempDir tmp;
  auto rec = make_recording(tmp.path);

  auto clean_db = tmp.path / "clean.db";
  pid_t p = spawn(tune_args(rec, clean_db), (tmp.path / "clean.json").string());
  REQUIRE(wait_exit(p) == 0);
  auto clean = read_json((tmp.path / "clean.json").string());
  std::string winner = clean["problems"][0]["families"][0]["best"];
  REQUIRE_FALSE(winner.empty());

  auto db = tmp.path / "killed.db";
  std::mt19937 rng(11);
  int kills = 0;
  for (int i = 0; i < 15; ++i) {
    pid_t k = spawn(tune_args(rec, db), (tmp.path / "killed.json").string());
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(30, 600)(rng)));
    if (::kill(k, SIGKILL) == 0) ++kills;
    wait_exit(k);
    // Killed while it checked its input (no store yet), or between creating the database and
    // its schema (an empty database, which the next open for writing makes a store): nothing
    // to check yet.
    if (!std::filesystem::exists(db)) continue;
    std::optional<Store> opened;
    try {
      opened.emplace(Store::open_readonly(db.string()));
    } catch (const InputError& e) {
      INFO(e.what());
      REQUIRE(std::string(e.what()).find("is empty, not a gemmtune store") != std::string::npos);
      continue;
    }
    Store& s = *opened;
    std::string why;
    INFO("after kill " << i << ": " << why);
    REQUIRE(s.check_integrity(&why));
    for (auto& [hash, n] : explored(s)) REQUIRE(n == 1);  // nothing measured twice
  }
  CHECK(kills > 0);
  pid_t f = spawn(tune_args(rec, db), (tmp.path / "final.json").string());
  REQUIRE(wait_exit(f) == 0);
  auto fin = read_json((tmp.path / "final.json").string());
  CHECK(fin["problems"][0]["families"][0]["best"] == winner);
  Store a = Store::open_readonly(clean_db.string()), b = Store::open_readonly(db.string());
  auto ea = explored(a), eb = explored(b);
  CHECK(ea.size() == eb.size());  // the same configs explored, each exactly once
  for (auto& [hash, n] : eb) CHECK(n == 1);
  CHECK(fin["problems"][0]["families"][0]["reused"].get<int>() > 0);
}

TEST_CASE("Ctrl-C stops after the measurement in flight and prints the summary", "[reliability][replay]") {
  test::TempDir tmp;
  auto rec = make_recording(tmp.path);
  auto args = tune_args(rec, tmp.path / "int.db");
  args.erase(args.begin() + 2);  // no --json: read the human summary
  pid_t p = spawn(args, (tmp.path / "out.txt").string());
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  ::kill(p, SIGINT);
  int rc = wait_exit(p);
  std::ifstream f(tmp.path / "out.txt");
  std::string out((std::istreambuf_iterator<char>(f)), {});
  INFO(out);
  if (rc == 0) {
    WARN("the tune finished before the interrupt arrived");
  } else {
    CHECK(rc == 130);
    CHECK_THAT(out, Catch::Contains("interrupted"));
  }
  Store s = Store::open_readonly((tmp.path / "int.db").string());
  CHECK(s.check_integrity());
}
