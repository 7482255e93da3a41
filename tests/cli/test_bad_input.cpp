// Bad input through the real command line (issue "Reliability", items 5 and 6): every case
// exits with code 2 and a message that names the flag, or the file, line and field; the
// results store is byte-for-byte what it was; and it all happens before any GPU work (on a
// machine without a GPU a valid command would exit 3 instead); the runtime example's --table
// likewise. Also: broken plugins are named and skipped, plugins load only from the
// configured directories, and nothing in a job file is executed. CPU only.
//
// The loaders' own tests (test_jobs.cpp, test_table.cpp, test_store.cpp, test_plugins.cpp)
// cover the messages in more depth; here the point is the whole path a user takes.
#include "base/errors.hpp"
#include "store/store.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <chrono>
#include <fstream>
#include <sstream>

using namespace gt;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// A digest of what a store holds: the database file and its write-ahead log (committed rows
// may still be in the log while another connection is open). An empty log holds nothing: a
// read-only open leaves one behind, as SQLite does for every reader of a WAL database.
std::string store_bytes(const fs::path& db) {
  fs::path wal = db.string() + "-wal";
  std::string all = test::read_file(db) + "\n--wal--\n" + (fs::exists(wal) ? test::read_file(wal) : std::string());
  return fmt::format("{} bytes, hash {:016x}", all.size(), std::hash<std::string>{}(all));
}


// Everything a case needs: the binary with only the naive plugin (fast to start), a store
// that holds the rows and winners of a tune (replayed: no GPU needed), and its recording.
struct Fixture {
  test::TempDir tmp;
  fs::path plugins = tmp.path / "plugins", db = tmp.path / "results.db", rec = tmp.path / "rec.json";
  std::string bin;
  Fixture() {
    fs::create_directories(plugins);
    fs::copy_file(test::plugin_dir() / "libgemmtune_naive.so", plugins / "libgemmtune_naive.so");
    test::write_file(rec, test::kToyRecording);
    bin = fmt::format("{} --plugin-dir {} --db {} --quiet", test::shell_quote(test::gemmtune_binary()), test::shell_quote(plugins), test::shell_quote(db));
    auto r = test::run_command(bin + " tune --replay " + test::shell_quote(rec) + " --shape 64x64x64");
    INFO(r.out);
    REQUIRE(r.exit_code == 0);
  }
  fs::path file(const std::string& name, const std::string& content) const {
    fs::path p = tmp.path / name;
    test::write_file(p, content);
    return p;
  }
};

// Runs `args` after the binary and its global options; exit code 2, every phrase in the
// output, and the store exactly as it was.
void refused(const Fixture& f, const std::string& args, const std::vector<std::string>& phrases) {
  std::string before = store_bytes(f.db);
  REQUIRE_FALSE(before.empty());
  auto r = test::run_command(f.bin + " " + args);
  INFO("gemmtune " << args << "\n" << r.out);
  CHECK(r.exit_code == 2);
  for (auto& p : phrases) CHECK_THAT(r.out, Catch::Contains(p));
  CHECK(store_bytes(f.db) == before);
}

int64_t rows_in(const fs::path& db) { return Store::open_readonly(db).count(); }

}  // namespace

TEST_CASE("bad job files: exit 2 naming the file, line and field; the store untouched", "[reliability][cli]") {
  Fixture f;
  const int64_t rows = rows_in(f.db);
  REQUIRE(rows > 0);
  auto job = [&](const std::string& name, const std::string& text) {
    fs::path p = f.file(name, text);
    return std::pair{"tune --config " + test::shell_quote(p), p.string()};
  };
  const std::string ok_set = "[[problems]]\nshapes = [\"64x64x64\"]\n";
  struct Case {
    std::string file, text;
    std::vector<std::string> phrases;
  };
  std::vector<Case> cases = {
      {"malformed.toml", "name = \n" + ok_set, {":1:", "malformed TOML"}},
      {"unknown_key.toml", "nmae = \"x\"\n" + ok_set, {":1:1:", "unknown key 'nmae'"}},
      {"unknown_tune_key.toml", "[tune]\nbudgte = 3\n" + ok_set, {":2:1:", "unknown key 'budgte' in [tune]"}},
      {"budget_not_table.toml", "[tune]\nbudget = 3\n" + ok_set, {":2:10:", "[tune.budget] must be a table"}},
      {"budget_bad_key.toml", "[tune.budget.cublaslt]\nevals = 3\n" + ok_set, {":2:1:", "unknown key 'evals' in [tune.budget.cublaslt]"}},
      {"wrong_type.toml", "[tune]\nevaluations = \"many\"\n" + ok_set, {":2:", "'evaluations' must be a whole number"}},
      {"wrong_type_array.toml", "[[problems]]\nshapes = \"64x64x64\"\n", {":2:", "'shapes' must be an array"}},
      {"zero.toml", "[[problems]]\nshapes = [\"0x4x4\"]\n", {":2:", "shapes", "M is 0"}},
      {"negative.toml", "[[problems]]\nshapes = [\"4x-4x4\"]\n", {":2:", "shapes", "N = -4 is negative"}},
      {"huge.toml", "[[problems]]\nshapes = [\"4x4x2147483648\"]\n", {":2:", "shapes", "too large"}},
      {"not_numeric.toml", "[[problems]]\nshapes = [\"4xfourx4\"]\n", {":2:", "shapes", "not a whole number"}},
      {"m_zero.toml", "[[problems]]\nm = [0]\nn = [4]\nk = [4]\n", {":2:", "'m' = 0"}},
      {"m_huge.toml", "[[problems]]\nm = [4]\nn = [4]\nk = [4294967296]\n", {":4:", "'k' = 4294967296 is too large"}},
      {"dtype.toml", ok_set + "dtypes = [\"fp8\"]\n", {":3:", "dtypes", "unknown dtype 'fp8'"}},
      {"layout.toml", ok_set + "layouts = [\"nx\"]\n", {":3:", "layouts", "unknown layout 'nx'"}},
      {"out_dtype.toml", ok_set + "out_dtype = \"f64\"\n", {":3:", "out_dtype", "unknown dtype 'f64'"}},
      // Names that only the plugins and strategies can judge, checked after parsing: still the
      // line and column of the name.
      {"family.toml", ok_set + "families = [\"nope\"]\n", {":3:13:", "unknown family 'nope'", "loaded: naive"}},
      {"strategy.toml", "[tune]\nstrategy = \"nope\"\n" + ok_set, {":2:12:", "unknown strategy 'nope'"}},
      {"config.toml", ok_set + "[problems.configs]\nnaive = [\"naive_mapsideways\"]\n", {":4:10:", "configs.naive"}},
      {"no_problems.toml", "name = \"x\"\n", {"no [[problems]]"}},
      // Found by tests/fuzz: these were accepted.
      {"seconds_nan.toml", "[tune]\nseconds = nan\n" + ok_set, {":2:", "'seconds' must be a positive number"}},
      {"seconds_negative.toml", "[tune]\nseconds = -5.0\n" + ok_set, {":2:", "'seconds' must be a positive number"}},
      {"finalists_huge.toml", "[tune]\nfinalists = 4294967297\n" + ok_set, {":2:", "'finalists' = 4294967297 is too large"}},
      {"m_float.toml", "[[problems]]\nm = [4E96]\nn = [4]\nk = [4]\n", {":2:", "'m' must hold whole numbers"}},
  };
  for (auto& c : cases) {
    auto [args, path] = job(c.file, c.text);
    std::vector<std::string> phrases = c.phrases;
    phrases.push_back(path);  // every message names the file
    refused(f, args, phrases);
  }
  refused(f, "tune --config " + test::shell_quote(f.tmp.path / "missing.toml"), {"--config", "missing.toml", "cannot read"});
  // The same problems through `compare` (which needs a GPU for valid input) are refused first.
  refused(f, "compare --config " + test::shell_quote(f.tmp.path / "zero.toml"), {"zero.toml:2:", "M is 0"});
  // compare tunes and shows the families a job names for each problem: an unknown one is refused there too.
  refused(f, "compare --config " + test::shell_quote(f.tmp.path / "family.toml"), {"family.toml:3:13:", "unknown family 'nope'"});
  CHECK(rows_in(f.db) == rows);
}

TEST_CASE("bad flags: exit 2 naming the flag, before any GPU work; the store untouched", "[reliability][cli]") {
  Fixture f;
  const std::string tune = "tune --family naive ";
  std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {tune + "--shape 0x4x4", {"--shape", "M is 0"}},
      {tune + "--shape 4x-4x4", {"--shape", "N = -4 is negative"}},
      {tune + "--shape 4x4x2147483648", {"--shape", "too large"}},
      {tune + "--shape 4x4x99999999999999999999999", {"--shape", "too large"}},
      {tune + "--shape 4xfourx4", {"--shape", "'four' is not a whole number"}},
      {tune + "--shape 4x4", {"--shape", "not a shape"}},
      {tune + "--shape 64x64x64 --dtype fp8", {"--dtype", "unknown dtype 'fp8'"}},
      {tune + "--shape 64x64x64 --out-dtype tf32", {"--out-dtype", "tf32"}},
      {tune + "--shape 64x64x64 --layout nx", {"--layout", "unknown layout 'nx'"}},
      {"tune --shape 64x64x64 --family nope", {"--family", "unknown family 'nope'"}},
      {tune + "--shape 64x64x64 --strategy nope", {"--strategy", "unknown strategy 'nope'"}},
      {tune + "--shape 64x64x64 --fraction 1.5", {"--fraction"}},
      {tune + "--shape 64x64x64 --budget many", {"--budget"}},
      {tune + "--shape 64x64x64 --dist gaussian", {"gaussian"}},
      {tune + "--shape 64x64x64 --bogus-flag", {"--bogus-flag"}},
      // Commands that need a GPU for valid input refuse bad input first (exit 2, not 3).
      {"run --family naive --shape 64x0x64", {"--shape", "N is 0"}},
      {"run --family nope --shape 64x64x64", {"--family", "unknown family 'nope'"}},
      {"run --family naive --shape 64x64x64 --quick --min-time 1", {"--min-time", "not with --quick"}},
      {"run --family naive --shape 64x64x64 --min-time 100", {"--min-time", "100"}},
      {"run --family naive --shape 64x64x64 --trace /nonexistent-dir/trace.csv", {"--trace", "cannot write"}},
      {"compare --shape 64x64x64 --layout xx", {"--layout", "unknown layout 'xx'"}},
      {"compile --family naive --shape 64x64x64 --dtype f8", {"--dtype", "unknown dtype 'f8'"}},
      // roofs measures for seconds on a GPU: its numbers are checked first (these exited 3, no GPU).
      {"roofs --candidates 0", {"--candidates", "not 0", "from 1 to 1000"}},
      {"roofs --candidates -3", {"--candidates", "-3 must not be negative"}},
      {"roofs --candidates 1001", {"--candidates", "1001 is too large"}},
      {"roofs --seconds -1", {"--seconds", "not -1", "in (0, 600]"}},
      {"roofs --seconds 0", {"--seconds", "not 0"}},
      {"roofs --seconds nan", {"--seconds", "not nan"}},
      {"roofs --seconds inf", {"--seconds", "not inf"}},
      {"roofs --seconds 601", {"--seconds", "not 601"}},
  };
  // compare over a recording: its families and problems are checked against the recording (these
  // printed nothing, or "nothing to compare", and exited 0).
  const std::string over = "compare --replay " + test::shell_quote(f.rec) + " ";
  cases.push_back({over + "--shape 64x64x64 --family nope", {"--family", "unknown family 'nope'", "recorded in", "toy"}});
  cases.push_back({over + "--shape 128x64x64", {"--replay", "has no measurements of 128x64x64"}});
  cases.push_back({"tune --default-job --shape 64x64x64", {"--default-job and --shape"}});
  // lookup: a default family that does not exist is refused even when no default is needed; a
  // problem's flag without --shape (which lists the table) is refused.
  fs::path table = f.file("t.json", R"({"gemmtune_table": 1, "entries": []})");
  cases.push_back({"lookup --table " + test::shell_quote(table) + " --shape 64x64x64 --default-family nope",
                   {"--default-family", "unknown family 'nope'", "loaded: naive"}});
  cases.push_back({"lookup --table " + test::shell_quote(table) + " --dtype f16", {"--dtype", "give --shape too"}});
  for (auto& [args, phrases] : cases) refused(f, args, phrases);
}

TEST_CASE("a store of a newer schema, or a file that is not a database, is refused and left as it was",
          "[reliability][cli]") {
  Fixture f;
  auto set_schema = [](const fs::path& db, int version) {
    sqlite3* h = nullptr;
    REQUIRE(sqlite3_open(db.c_str(), &h) == SQLITE_OK);
    std::string sql = fmt::format("UPDATE meta SET value = '{}' WHERE key = 'schema_version'", version);
    int rc = sqlite3_exec(h, sql.c_str(), nullptr, nullptr, nullptr);
    sqlite3_close(h);
    REQUIRE(rc == SQLITE_OK);
  };
  fs::path newer = f.tmp.path / "newer.db";
  fs::copy_file(f.db, newer);
  set_schema(newer, 99);
  fs::path text = f.file("notes.db", "these are my notes, not a database\n" + std::string(4096, 'x'));
  const std::string bin = test::shell_quote(test::gemmtune_binary()) + " --plugin-dir " + test::shell_quote(f.plugins) + " --quiet";
  for (const fs::path& bad : {newer, text}) {
    const std::string phrase = bad == newer ? "has schema v99" : "not an SQLite database";
    const std::string before = store_bytes(bad), good_before = store_bytes(f.db);
    // As the store a tune writes to, an export reads, a merge reads, and a merge writes to.
    for (const std::string& cmd :
         {"--db " + test::shell_quote(bad) + " tune --replay " + test::shell_quote(f.rec) + " --shape 64x64x64",
          "--db " + test::shell_quote(bad) + " export --format json", "merge -o " + test::shell_quote(f.tmp.path / "merged.db") + " " + test::shell_quote(bad),
          "merge -o " + test::shell_quote(bad) + " " + test::shell_quote(f.db)}) {
      auto r = test::run_command(bin + " " + cmd);
      INFO("gemmtune " << cmd << "\n" << r.out);
      CHECK(r.exit_code == 2);
      CHECK_THAT(r.out, Catch::Contains(bad.string()) && Catch::Contains(phrase));
      CHECK(store_bytes(bad) == before);
      CHECK(store_bytes(f.db) == good_before);
    }
    CHECK_FALSE(fs::exists(f.tmp.path / "merged.db"));
  }
}

TEST_CASE("a bad table file: exit 2 naming the file, line and field", "[reliability][cli]") {
  Fixture f;
  fs::path t = f.file("table.toml",
                      "gemmtune_table = 1\n\n[[entries]]\ndevice = \"G\"\nm = \"64\"\nn = 64\nk = 64\ndtype = \"f32\"\n"
                      "out_dtype = \"f32\"\nlayout = \"nn\"\nalign = 16\nfamily = \"naive\"\n"
                      "config = \"naive_mapcoalesced_bx32_by8\"\ntime_us = 1.5\n");
  refused(f, "lookup --table " + test::shell_quote(t) + " --shape 64x64x64",
          {t.string(), "entries[0]", "(line 5)", "field 'm'", "expected an integer"});
  fs::path bad_syntax = f.file("bad.json", "{\"gemmtune_table\": 1,\n \"entries\": [ }");
  refused(f, "lookup --table " + test::shell_quote(bad_syntax) + " --shape 64x64x64", {bad_syntax.string() + ":2:", "not valid JSON"});
  // Found by tests/fuzz: a number beyond a double's range ended the program with a JSON
  // library exception (exit 1), and a time so small that its rate overflows was accepted
  // and made the table impossible to write out.
  fs::path overflow = f.file("overflow.json", "{\"gemmtune_table\": 1,\n \"x\": 1e999}");
  refused(f, "lookup --table " + test::shell_quote(overflow) + " --shape 64x64x64",
          {overflow.string() + ":2:7", "not valid JSON", "number overflow"});
  fs::path tiny = f.file("tiny.toml",
                         "gemmtune_table = 1\n\n[[entries]]\ndevice = \"G\"\nm = 64\nn = 64\nk = 64\ndtype = \"f32\"\n"
                         "out_dtype = \"f32\"\nlayout = \"nn\"\nalign = 16\nfamily = \"naive\"\n"
                         "config = \"naive_mapcoalesced_bx32_by8\"\ntime_us = 1e-300\n");
  refused(f, "lookup --table " + test::shell_quote(tiny) + " --shape 64x64x64", {tiny.string(), "(line 14)", "field 'time_us'", "too small"});
  // (A table naming a config its plugin no longer has: test_table.cpp, "a table naming a
  // config its family no longer has is reported, not crashed on".)

  // The runtime example checks its table before it asks for a GPU (a missing file exited 3,
  // "needs a GPU", on a machine without one).
  const fs::path example = test::gemmtune_binary().parent_path() / "tools" / "example_runtime";
  REQUIRE(fs::exists(example));
  for (auto& [table, phrases] : std::vector<std::pair<fs::path, std::vector<std::string>>>{
           {f.tmp.path / "missing.json", {"--table", (f.tmp.path / "missing.json").string(), "cannot be read"}},
           {f.tmp.path, {"--table", f.tmp.path.string(), "is a directory"}},
           {bad_syntax, {"--table", bad_syntax.string() + ":2:", "not valid JSON"}},
           {t, {"--table", t.string(), "(line 5)", "field 'm'"}}}) {
    auto r = test::run_command(test::shell_quote(example) + " --table " + test::shell_quote(table) + " --shape 64x64x64");
    INFO("example_runtime --table " << table << "\n" << r.out);
    CHECK(r.exit_code == 2);
    for (auto& p : phrases) CHECK_THAT(r.out, Catch::Contains(p));
    CHECK_THAT(r.out, !Catch::Contains("needs a GPU"));
  }
}

TEST_CASE("broken plugins are named with the reason and skipped; a family only they would give is unknown",
          "[reliability][cli][plugins]") {
  Fixture f;
  fs::path broken = test::test_plugin_dir() / "broken";
  std::string with_broken = fmt::format("{} --plugin-dir {} --plugin-dir {} --db {} --quiet",
                                        test::shell_quote(test::gemmtune_binary()), test::shell_quote(broken), test::shell_quote(f.plugins), test::shell_quote(f.db));
  auto r = test::run_command(with_broken + " list");
  INFO(r.out);
  CHECK(r.exit_code == 0);  // the good plugins still work
  CHECK_THAT(r.out, Catch::Contains("naive"));
  for (auto [file, reason] : {std::pair{"libnot_a_plugin.so", "not a gemmtune plugin"},
                              {"libwrong_abi.so", "family 'wrong_abi' is built for plugin ABI v99"},
                              {"libabi_v1.so", "family 'old_family' is built for plugin ABI v1; this gemmtune speaks v2"},
                              {"libthrowing_entry.so", "its entry point threw"},
                              {"libgarbage.so", "cannot be loaded"}})
    CHECK_THAT(r.out, Catch::Contains((broken / file).string() + ": " + reason));
  std::string before = store_bytes(f.db);
  r = test::run_command(with_broken + " tune --shape 64x64x64 --family wrong_abi");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.out, Catch::Contains("--family: unknown family 'wrong_abi' (loaded: naive)"));
  CHECK(store_bytes(f.db) == before);
}

TEST_CASE("plugins load only from the configured directories", "[reliability][cli][plugins]") {
  test::TempDir tmp;
  // A working directory holding plugins, loose and in a plugins/ folder, and a plugin
  // directory that holds one only in a subdirectory: none of them may be loaded.
  fs::path work = tmp.path / "work", empty = tmp.path / "empty";
  fs::create_directories(work / "plugins");
  fs::create_directories(empty / "nested");
  fs::path naive = test::plugin_dir() / "libgemmtune_naive.so";
  fs::copy_file(naive, work / "libgemmtune_naive.so");
  fs::copy_file(naive, work / "plugins" / "libgemmtune_naive.so");
  fs::copy_file(naive, empty / "nested" / "libgemmtune_naive.so");
  fs::copy_file(test::test_plugin_dir() / "broken" / "libwrong_abi.so", work / "plugins" / "libwrong_abi.so");
  const std::string bin = test::shell_quote(test::gemmtune_binary());
  auto in_work = [&](const std::string& env, const std::string& args) {
    return test::run_command(fmt::format("cd {} && env -u GEMMTUNE_PLUGIN_PATH {} {} {} list", test::shell_quote(work), env, bin, args));
  };
  auto r = in_work("", "--plugin-dir " + test::shell_quote(empty));
  INFO(r.out);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("naive") == std::string::npos);
  CHECK(r.out.find(work.string()) == std::string::npos);
  // The same through the environment variable.
  r = in_work("GEMMTUNE_PLUGIN_PATH=" + test::shell_quote(empty), "");
  INFO(r.out);
  CHECK(r.out.find("naive") == std::string::npos);
  // With neither, the plugins beside the binary, never the working directory's.
  r = in_work("", "");
  INFO(r.out);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("naive"));
  CHECK(r.out.find(work.string()) == std::string::npos);  // neither loaded nor even reported as skipped
  CHECK(r.out.find("wrong_abi") == std::string::npos);
}

TEST_CASE("environment variables and plugin folders are checked before any work: exit 2 naming them",
          "[reliability][cli][plugins]") {
  Fixture f;
  const std::string tune = " tune --replay " + test::shell_quote(f.rec) + " --shape 64x64x64";
  const std::string env_bin = "env -u GEMMTUNE_PLUGIN_PATH ";
  auto refused_with = [&](const std::string& env, const std::string& args, const std::vector<std::string>& phrases) {
    std::string before = store_bytes(f.db);
    auto r = test::run_command(env_bin + env + " " + f.bin + args);
    INFO(env << " gemmtune" << args << "\n" << r.out);
    CHECK(r.exit_code == 2);
    for (auto& p : phrases) CHECK_THAT(r.out, Catch::Contains(p));
    CHECK(store_bytes(f.db) == before);
  };
  // A value the tool would read as its default (hold on) or silently pass over.
  refused_with("GEMMTUNE_TIMING_HOLD=false", tune, {"GEMMTUNE_TIMING_HOLD='false'", "0", "1"});
  refused_with("GEMMTUNE_CUDA_INCLUDE=" + test::shell_quote(f.tmp.path), tune,
               {"GEMMTUNE_CUDA_INCLUDE=" + f.tmp.path.string(), "no cuda_fp16.h"});
  // A plugin folder that is not one, named by flag or by the environment (a typo loaded nothing,
  // and every family read as unknown).
  const fs::path missing = f.tmp.path / "plugns";
  refused_with("", " --plugin-dir " + test::shell_quote(missing) + " list",
               {"--plugin-dir " + missing.string(), "no such directory"});
  refused_with("", " --plugin-dir " + test::shell_quote(f.rec) + " list", {f.rec.string(), "not a directory"});
  {
    // GEMMTUNE_PLUGIN_PATH is read only without --plugin-dir: the binary alone.
    auto r = test::run_command("GEMMTUNE_PLUGIN_PATH=" + test::shell_quote(f.plugins) + ":" + test::shell_quote(missing) +
                               " " + test::shell_quote(test::gemmtune_binary()) + " list");
    INFO(r.out);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.out, Catch::Contains("GEMMTUNE_PLUGIN_PATH entry " + missing.string()));
  }
  // The accepted values still work.
  for (const char* ok : {"GEMMTUNE_TIMING_HOLD=0", "GEMMTUNE_TIMING_HOLD=1", "GEMMTUNE_TIMING_HOLD="}) {
    auto r = test::run_command(env_bin + ok + " " + f.bin + " list");
    INFO(ok << "\n" << r.out);
    CHECK(r.exit_code == 0);
  }
}

TEST_CASE("a plugin folder's links that lead nowhere and entries that are not files are named and skipped",
          "[reliability][cli][plugins]") {
  Fixture f;
  fs::create_symlink(f.tmp.path / "gone" / "libx.so", f.plugins / "libdangling.so");
  fs::create_symlink(f.plugins / "libloop.so", f.plugins / "libloop.so");
  fs::create_directories(f.plugins / "libfolder.so");
  auto r = test::run_command(f.bin + " list");
  INFO(r.out);
  CHECK(r.exit_code == 0);  // the good plugin still loads
  CHECK_THAT(r.out, Catch::Contains("naive"));
  CHECK_THAT(r.out, Catch::Contains((f.plugins / "libdangling.so").string() + ": a link to " +
                                    (f.tmp.path / "gone" / "libx.so").string() + ", which does not exist"));
  CHECK_THAT(r.out, Catch::Contains((f.plugins / "libloop.so").string() + ": a link to"));
  CHECK_THAT(r.out, Catch::Contains((f.plugins / "libfolder.so").string() + ": not a regular file"));
}

TEST_CASE("nothing in a job file is executed", "[reliability][cli]") {
  Fixture f;
  fs::path marker = f.tmp.path / "pwned";
  const std::string touch = "touch " + marker.string();
  // Strings that a shell, or a format string, would act on.
  std::vector<std::string> texts = {
      "name = \"$(" + touch + ")\"\n[[problems]]\nshapes = [\"64x64x64\"]\nfamilies = [\"`" + touch + "`\"]\n",
      "[[problems]]\nshapes = [\"64x64x64; " + touch + "\"]\n",
      "[[problems]]\nshapes = [\"64x64x64\"]\ndtypes = [\"f32 | " + touch + "\"]\n",
      "[[problems]]\nshapes = [\"64x64x64\"]\n[problems.configs]\nnaive = [\"$(" + touch + ")\", \"{}{:>999999}%n%s\"]\n",
  };
  for (size_t i = 0; i < texts.size(); ++i) {
    fs::path p = f.file(fmt::format("evil{}.toml", i), texts[i]);
    refused(f, "tune --config " + test::shell_quote(p), {p.string()});
  }
  CHECK_FALSE(fs::exists(marker));
}

TEST_CASE("bad input in any problem set is found before the first measurement: replays and library families too",
          "[reliability][cli][replay]") {
  Fixture f;
  // Two problems, a source family and a library one (cuBLASLt: its configs are known on the
  // GPU, or from a recording). Each bad set comes second: the first problem was tuned and
  // stored before, and the error named no line.
  auto space = [](const char* family, const char* param, int m) {
    return fmt::format(R"({{"recorded": "2026-11-29T12:00:00Z",
      "device": {{"name": "NVIDIA H200", "uuid": "GPU-0", "arch": "sm_90"}},
      "problem": {{"m": {}, "n": 64, "k": 64, "in": "f32", "out": "f32", "layout": "nn", "align": 16}},
      "family": "{}", "family_version": "1.0",
      "params": [{{"name": "{}", "help": "", "values": [1, 2], "labels": [], "default": 0}}],
      "results": [{{"config": [1], "status": "ok", "median_us": 10.0}}, {{"config": [2], "status": "ok", "median_us": 9.0}}]}})",
                       m, family, param);
  };
  fs::path rec = f.file("two.json", "{\"format\": \"gemmtune-replay/2\", \"spaces\": [" + space("toy", "bx", 64) + "," +
                                        space("toy", "bx", 128) + "," + space("cublaslt", "algo", 128) + "]}");
  const std::string first = "[[problems]]\nshapes = [\"64x64x64\"]\nfamilies = [\"toy\"]\n";
  fs::path source = f.file("second_source.toml", first + "[[problems]]\nshapes = [\"128x64x64\"]\nfamilies = [\"toy\"]\n"
                                                         "configs = { toy = [\"bx=7\"] }\n");
  fs::path library = f.file("second_library.toml", first + "[[problems]]\nshapes = [\"128x64x64\"]\n"
                                                           "families = [\"cublaslt\"]\nconfigs = { cublaslt = [\"algo=9\"] }\n");
  refused(f, "tune --replay " + test::shell_quote(rec) + " --config " + test::shell_quote(source),
          {source.string() + ":7:20:", "configs.toy for 128x64x64", "bx=7"});
  refused(f, "tune --replay " + test::shell_quote(rec) + " --config " + test::shell_quote(library),
          {library.string() + ":7:25:", "configs.cublaslt for 128x64x64", "algo=9"});
  refused(f, "compare --replay " + test::shell_quote(rec) + " --config " + test::shell_quote(source), {source.string() + ":7:20:"});
}

TEST_CASE("a job's problem count is bounded before it is expanded, with the limit and how to raise it",
          "[reliability][cli][jobs]") {
  Fixture f;
  // 30 x 30 x 30 sizes: 27,000 problems (m = n = k = [1..1000] in 11 KB named a billion: 12.6 GB,
  // then std::bad_alloc and exit 1).
  std::string sizes;
  for (int i = 1; i <= 1000; ++i) sizes += (i > 1 ? ", " : "") + std::to_string(i);
  fs::path huge = f.file("huge.toml", "[[problems]]\nm = [" + sizes + "]\nn = [" + sizes + "]\nk = [" + sizes + "]\n");
  const auto t0 = std::chrono::steady_clock::now();
  refused(f, "tune --config " + test::shell_quote(huge),
          {huge.string() + ":1:1:", "1000000000 problems", "at most 10000", "--max-problems N raises the limit"});
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
  // The limit counts every set; --max-problems moves it (tune and compare).
  fs::path four = f.file("four.toml", "[[problems]]\nshapes = [\"64x64x64\", \"128x64x64\"]\n"
                                      "[[problems]]\nshapes = [\"64x128x64\"]\ndtypes = [\"f16\", \"bf16\"]\n");
  refused(f, "tune --max-problems 3 --config " + test::shell_quote(four),
          {four.string() + ":3:1:", "names 2 problems", "after 2 before it", "at most 3"});
  refused(f, "compare --max-problems 1 --config " + test::shell_quote(four), {four.string() + ":1:1:", "at most 1"});
  auto r = test::run_command(f.bin + " tune --max-problems 4 --replay " + test::shell_quote(f.rec) + " --config " + test::shell_quote(four));
  INFO(r.out);
  CHECK(r.exit_code == 0);  // within the limit: tuned (in this replay, nothing recorded for them)
}

TEST_CASE("numeric flags are checked as the job file checks the same key; the help says the range",
          "[reliability][cli][jobs]") {
  Fixture f;
  // Each flag beside the job key it replaces: a value is refused by both or by neither.
  struct Pair {
    const char* flag;
    const char* key;
    std::vector<std::string> values;
  };
  const std::vector<Pair> pairs = {
      {"--budget", "evaluations", {"0", "1", "-1", "9223372036854775807", "9223372036854775808", "2.5"}},
      {"--patience", "patience", {"0", "1", "-3", "9223372036854775808"}},
      {"--seed", "seed", {"-1", "0", "9223372036854775807", "9223372036854775808"}},
      {"--finalists", "finalists", {"-1", "0", "1", "1000", "1001"}},
      {"--time", "seconds", {"0", "-1", "nan", "inf", "1e308", "0.5"}},
      {"--fraction", "fraction", {"0", "1", "1.5", "0.25", "nan", "-inf"}},
      {"--min-gain", "min_gain", {"-1", "0", "99", "99.5", "nan"}},
  };
  const std::string set = "[[problems]]\nshapes = [\"64x64x64\"]\nfamilies = [\"toy\"]\n";
  for (auto& p : pairs)
    for (auto& v : p.values) {
      fs::path job = f.file(fmt::format("{}_{}.toml", p.key, v), fmt::format("[tune]\n{} = {}\n{}", p.key, v, set));
      auto by_job = test::run_command(f.bin + " tune --replay " + test::shell_quote(f.rec) + " --config " + test::shell_quote(job));
      auto by_flag = test::run_command(f.bin + " tune --replay " + test::shell_quote(f.rec) + " --shape 64x64x64 " + p.flag + " " + v);
      INFO(p.flag << " " << v << ": " << by_flag.out << "\n" << p.key << " = " << v << ": " << by_job.out);
      CHECK((by_job.exit_code == 2) == (by_flag.exit_code == 2));
      CHECK((by_flag.exit_code == 0 || by_flag.exit_code == 2));
      if (by_flag.exit_code == 2) CHECK_THAT(by_flag.out, Catch::Contains(p.flag));
    }
  // Flags no job key shares: taken silently before (-5 rounds as 1, NaN seconds, a wrapped -1).
  const std::string tune = "tune --replay " + test::shell_quote(f.rec) + " --shape 64x64x64 ";
  std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {tune + "--rounds -5", {"--rounds", "-5 must not be negative"}},
      {tune + "--rounds 0", {"--rounds", "at least 1"}},
      {tune + "--settle nan", {"--settle", "not nan"}},
      {tune + "--hang-floor -1", {"--hang-floor", "not -1"}},
      {tune + "--compile-timeout nan", {"--compile-timeout", "not nan"}},
      {tune + "--turn-warmup inf", {"--turn-warmup", "not inf"}},
      {tune + "--consistency -5", {"--consistency"}},
      {tune + "--device -1", {"--device", "must not be negative"}},
      {tune + "--max-problems 0", {"--max-problems", "at least 1"}},
      {tune + "--budget 1e3", {"--budget", "'1e3' is not a whole number"}},
      {tune + "--budget 0x10", {"--budget", "'0x10' is not a whole number"}},
      {"run --family naive --shape 64x64x64 --min-time nan", {"--min-time", "not nan"}},
      {"run --family naive --shape 64x64x64 --seed -1", {"--seed", "must not be negative"}},
      {"run --family naive --shape 64x64x64 --settle -1", {"--settle"}},
      {"compile --family naive --shape 64x64x64 --threads -1", {"--threads", "must not be negative"}},
      {"compare --replay " + test::shell_quote(f.rec) + " --shape 64x64x64 --budget 0", {"--budget", "at least 1"}},
      {"compare --replay " + test::shell_quote(f.rec) + " --shape 64x64x64 --rounds 1001", {"--rounds", "too large"}},
  };
  for (auto& [args, phrases] : cases) refused(f, args, phrases);
  // The help says each range.
  auto help = test::run_command(f.bin + " tune --help");
  for (const char* range : {"--budget UINT:[1, 9223372036854775807]", "--time FLOAT:(0, inf)", "--fraction FLOAT:(0, 1]",
                            "--seed UINT:[0, 9223372036854775807]", "--finalists INT:[1, 1000]", "--min-gain FLOAT:[0, 99]",
                            "--rounds INT:[1, 1000]", "--settle FLOAT:[0, 600]", "--hang-floor FLOAT:(0, 600]"})
    CHECK_THAT(help.out, Catch::Contains(range));
}

TEST_CASE("recordings are checked against the family's space and the measurement rules as they load",
          "[reliability][cli][replay]") {
  Fixture f;
  // With register_tile loaded, its recording must spell register_tile's parameters: else the
  // store gets configs that the table reader cannot find in the family (export wrote a table
  // its own reader rejected).
  fs::copy_file(test::plugin_dir() / "libgemmtune_register_tile.so", f.plugins / "libgemmtune_register_tile.so");
  const json real = json::parse(test::read_file(test::source_dir() / "tests/data/replay/register_tile_f32_2048x2048x2048.json"));
  auto variant = [&](const std::string& name, auto&& change) {
    json j = real;
    j["spaces"][0]["results"] = json(std::vector<json>(real["spaces"][0]["results"].begin(),
                                                       real["spaces"][0]["results"].begin() + 20));
    change(j);
    return f.file(name, j.dump(1));
  };
  fs::path fine = variant("fine.json", [](json&) {});
  auto r = test::run_command(f.bin + " tune --replay " + test::shell_quote(fine) + " --no-reuse");
  INFO(r.out);
  REQUIRE(r.exit_code == 0);  // the committed recording is register_tile's own
  struct Case {
    fs::path file;
    std::vector<std::string> phrases;
  };
  std::vector<Case> cases = {
      {variant("renamed.json", [](json& j) { j["spaces"][0]["params"][0]["name"] = "bm2"; }),
       {"spaces[0]", "params[0].name: 'bm2' is not register_tile 1.0's parameter 0"}},
      {variant("value.json", [](json& j) { j["spaces"][0]["params"][0]["values"].push_back(24); }),
       {"params[0].values[", "bm=24 is not one of register_tile"}},
      {variant("fewer.json",
               [](json& j) {
                 auto& ps = j["spaces"][0]["params"];
                 ps.erase(ps.size() - 1);
                 for (auto& res : j["spaces"][0]["results"]) res["config"].erase(res["config"].size() - 1);
               }),
       {"parameters recorded, register_tile 1.0 has"}},
      {variant("twice.json", [](json& j) { j["spaces"][0]["results"].push_back(j["spaces"][0]["results"][3]); }),
       {"spaces[0].results[20].config", "recorded already, in spaces[0].results[3]"}},
      {variant("tiny.json", [](json& j) { j["spaces"][0]["results"][2]["median_us"] = 1e-300; }),
       {"spaces[0].results[2].median_us", "too short to be a measured time"}},
      {variant("negative_time.json",
               [](json& j) {
                 j["spaces"][0]["results"][2]["status"] = "verify_failed";
                 j["spaces"][0]["results"][2]["median_us"] = -4;
               }),
       {"spaces[0].results[2].median_us", "is not a positive time"}},
      {variant("two_spaces.json", [](json& j) { j["spaces"].push_back(j["spaces"][0]); }),
       {"spaces[1]", "recorded already, in spaces[0]"}},
      {variant("family.json", [](json& j) { j["spaces"][0]["family"] = "Register-Tile"; }),
       {"spaces[0].family", "is not a family name"}},
      {variant("arch.json", [](json& j) { j["spaces"][0]["device"]["arch"] = "sm_999"; }),
       {"device.arch 'sm_999' is not an architecture"}},
      {variant("threads.json", [](json& j) { j["compile_threads"] = -2; }), {"compile_threads", "-2"}},
  };
  fs::path dup = f.file("duplicate_key.json", std::string(test::kToyRecording).replace(std::string(test::kToyRecording).find("\"median_us\": 10.0"), 17,
                                                                       "\"median_us\": 10.0, \"median_us\": 1e-9"));
  cases.push_back({dup, {dup.string() + ":7:", "the key 'median_us' appears twice"}});
  for (auto& c : cases) {
    std::vector<std::string> phrases = c.phrases;
    phrases.push_back(c.file.string());
    refused(f, "tune --replay " + test::shell_quote(c.file), phrases);
    refused(f, "compare --replay " + test::shell_quote(c.file), phrases);
  }
}

TEST_CASE("a JSON table that names a key twice is refused, as TOML refuses it", "[reliability][cli][table]") {
  Fixture f;
  const std::string entry = "{\"device\": \"G\", \"m\": 64, \"n\": 64, \"k\": 64, \"dtype\": \"f32\", \"out_dtype\": \"f32\", "
                            "\"layout\": \"nn\", \"align\": 16, \"family\": \"naive\", "
                            "\"config\": \"naive_mapcoalesced_bx32_by8\", \"time_us\": 1.5}";
  fs::path once = f.file("once.json", "{\"gemmtune_table\": 1,\n \"entries\": [" + entry + "]}");
  auto r = test::run_command(f.bin + " lookup --table " + test::shell_quote(once) + " --shape 64x64x64 --device G");
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  std::string twice_text = "{\"gemmtune_table\": 1,\n \"entries\": [\n" + entry + "]}";
  twice_text.replace(twice_text.find("\"m\": 64"), 7, "\"m\": 64, \"m\": 4096");
  fs::path twice = f.file("twice.json", twice_text);
  refused(f, "lookup --table " + test::shell_quote(twice) + " --shape 64x64x64", {twice.string() + ":3:26:", "the key 'm' appears twice"});
  fs::path top = f.file("top.json", "{\"gemmtune_table\": 1, \"entries\": [], \"entries\": [" + entry + "]}");
  refused(f, "lookup --table " + test::shell_quote(top) + " --shape 64x64x64", {top.string() + ":1:38:", "the key 'entries' appears twice"});
}
