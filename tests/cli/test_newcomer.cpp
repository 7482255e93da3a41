// What a newcomer hit on a CPU machine (issue 52), each case one that failed before its fix:
// an unwritable store or compile cache is refused before any work, with exit 1 and the path
// named; a store in a folder nobody may write is still read; a recording of nothing is not
// written; parse errors carry the prefix every other error has; repeated list entries are
// refused. File modes mean nothing to root, so the cases about them
// run the command as an unprivileged user (setpriv) when the tests run as root.
#include "test_util.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <optional>
#include <unistd.h>

using namespace gt;
namespace fs = std::filesystem;

namespace {

// The prefix that runs a command as an unprivileged user: "" when the tests already run as
// one, setpriv as nobody when they run as root, nullopt when root has no setpriv.
std::optional<std::string> unprivileged() {
  if (::geteuid() != 0) return std::string();
  if (test::run_command("command -v setpriv >/dev/null").exit_code != 0) return std::nullopt;
  return std::string("setpriv --reuid=65534 --regid=65534 --clear-groups ");
}

std::string digest(const fs::path& p) {
  const std::string all = test::read_file(p) + "|" + test::read_file(p.string() + "-wal");
  return fmt::format("{}:{:016x}", all.size(), std::hash<std::string>{}(all));
}

// A store with the toy recording's rows, in its own folder, and a cache folder anybody may write.
struct Setup {
  test::TempDir tmp;
  fs::path rec = tmp.path / "rec.json", store_dir = tmp.path / "stores", db = store_dir / "results.db",
           cache = tmp.path / "cache";
  std::string bin = fmt::format("{} --quiet", test::shell_quote(test::gemmtune_binary()));
  Setup() {
    test::write_file(rec, test::kToyRecording);
    fs::create_directories(store_dir);
    fs::create_directories(cache);
    fs::permissions(tmp.path, fs::perms::all);  // others may reach what is inside
    fs::permissions(cache, fs::perms::all);
    REQUIRE(run("", "tune --replay " + q(rec) + " --shape 64x64x64").exit_code == 0);
  }
  static std::string q(const fs::path& p) { return test::shell_quote(p.string()); }
  test::CommandResult run(const std::string& as, const std::string& args, const fs::path& cache_dir = {}) const {
    return test::run_command(fmt::format("{}{} --db {} --cache-dir {} {}", as, bin, q(db),
                                         q(cache_dir.empty() ? cache : cache_dir), args));
  }
};

}  // namespace

TEST_CASE("a store that cannot be written is refused before any work: exit 1, the store named, nothing changed",
          "[cli][store]") {
  const auto as = unprivileged();
  if (!as) {
    WARN("SKIPPED: running as root without setpriv, file modes cannot be tried");
    return;
  }
  Setup s;
  fs::permissions(s.store_dir, fs::perms::all);  // the folder may be written, the store may not
  fs::permissions(s.db, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  const std::string before = digest(s.db);
  const auto r = s.run(*as, "tune --replay " + Setup::q(s.rec) + " --shape 64x64x64 --no-reuse");
  INFO(r.out);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains(s.db.string()) && Catch::Contains("cannot be written"));
  CHECK_THAT(r.out, !Catch::Contains("skipped"));  // refused before any family ran
  CHECK(digest(s.db) == before);
}

TEST_CASE("a store in a folder nobody may write is still read: export works", "[cli][store]") {
  const auto as = unprivileged();
  if (!as) {
    WARN("SKIPPED: running as root without setpriv, file modes cannot be tried");
    return;
  }
  Setup s;
  const fs::path out = s.tmp.path / "out";
  fs::create_directories(out);
  fs::permissions(out, fs::perms::all);
  fs::permissions(s.store_dir, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                   fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  const auto r = s.run(*as, "export --include-replay -o " + Setup::q(out / "table.json"));
  INFO(r.out);
  CHECK(r.exit_code == 0);
  CHECK_THAT(test::read_file(out / "table.json"), Catch::Contains("\"family\": \"toy\""));
  CHECK_FALSE(fs::exists(s.db.string() + "-shm"));  // nothing was made beside the store
  fs::permissions(s.store_dir, fs::perms::all);     // so that the folder can be removed
}

TEST_CASE("a store that cannot be read is said so, naming it, before the report copies anything", "[cli][store]") {
  const auto as = unprivileged();
  if (!as) {
    WARN("SKIPPED: running as root without setpriv, file modes cannot be tried");
    return;
  }
  Setup s;
  fs::permissions(s.db, fs::perms::owner_read | fs::perms::owner_write);
  const fs::path out = s.tmp.path / "report";
  const auto r = s.run(*as, "report --no-plugins -o " + Setup::q(out));
  INFO(r.out);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains(s.db.string()) && Catch::Contains("cannot read the store"));
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("a compile cache that names a file is refused before any work: exit 1, the flag and the path named",
          "[cli]") {
  Setup s;
  const fs::path file = s.tmp.path / "not-a-folder";
  test::write_file(file, "x");
  const std::string before = digest(s.db);
  const auto r = s.run("", "tune --replay " + Setup::q(s.rec) + " --shape 64x64x64 --no-reuse", file);
  INFO(r.out);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains("--cache-dir") && Catch::Contains(file.string()) && Catch::Contains("not a folder"));
  CHECK(digest(s.db) == before);
  CHECK(test::read_file(file) == "x");
}

TEST_CASE("tune --record writes no recording of nothing: when every result was reused it says so and exits 1",
          "[cli][replay]") {
  Setup s;
  const fs::path rec_out = s.tmp.path / "again.json";
  const auto r = s.run("", "tune --replay " + Setup::q(s.rec) + " --shape 64x64x64 --record " + Setup::q(rec_out));
  INFO(r.out);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains("--record") && Catch::Contains("not written"));
  CHECK_FALSE(fs::exists(rec_out));
  // Measured again, the recording is written and replays.
  const auto again = s.run("", "tune --replay " + Setup::q(s.rec) + " --shape 64x64x64 --no-reuse --record " +
                                   Setup::q(rec_out));
  INFO(again.out);
  CHECK(again.exit_code == 0);
  CHECK(s.run("", "tune --replay " + Setup::q(rec_out)).exit_code == 0);
}

TEST_CASE("a command-line parse error has the prefix every error has", "[cli]") {
  Setup s;
  for (const char* args : {"tune --no-such-flag", "export --format", "no-such-command"}) {
    const auto r = s.run("", args);
    INFO(args << "\n" << r.out);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.out, Catch::StartsWith("gemmtune: error: "));
  }
}

TEST_CASE("a repeated entry in a job's list or a repeated --family is refused, named where it is", "[cli][jobs]") {
  Setup s;
  const fs::path job = s.tmp.path / "twice.toml";
  for (const char* list : {"shapes = [\"64x64x64\", \"64x64x64\"]", "m = [64, 64]\nn = [64]\nk = [64]",
                           "shapes = [\"64x64x64\"]\ndtypes = [\"f32\", \"f32\"]"}) {
    test::write_file(job, fmt::format("[[problems]]\n{}\n", list));
    const auto r = s.run("", "tune --replay " + Setup::q(s.rec) + " --config " + Setup::q(job));
    INFO(list << "\n" << r.out);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.out, Catch::Contains(job.string() + ":") && Catch::Contains("twice"));
  }
  const auto r = s.run("", "tune --replay " + Setup::q(s.rec) + " --shape 64x64x64 --family toy --family toy");
  INFO(r.out);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.out, Catch::Contains("--family") && Catch::Contains("twice"));
}

TEST_CASE("a compile cache named by GEMMTUNE_CACHE_DIR that is a device is refused, naming the variable", "[cli]") {
  Setup s;
  const auto r = test::run_command(fmt::format("GEMMTUNE_CACHE_DIR=/dev/null {} --db {} compile --family naive --limit 1",
                                               s.bin, Setup::q(s.db)));
  INFO(r.out);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains("GEMMTUNE_CACHE_DIR") && Catch::Contains("/dev/null"));
}
