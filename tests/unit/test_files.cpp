// Nothing lost (issue 28, item 1), through the real command line on the CPU: no command
// writes over a file it reads, by any name (the path itself, a symbolic link, a hard link, a
// store's -wal file); a path that cannot be written is refused before any work; and what is
// written goes to a temporary file renamed into place, so a link stays a link and nothing
// half-written or temporary is left behind.
#include "store/store.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <set>
#include <sys/stat.h>
#include <unistd.h>

using namespace gt;
namespace fs = std::filesystem;

namespace {


// The bytes of a file and of its -wal file, as one text: a store is both.
std::string bytes_of(const fs::path& p) {
  const fs::path wal = p.string() + "-wal";
  return test::read_file(p) + "\n--wal--\n" + (fs::exists(wal) ? test::read_file(wal) : std::string());
}

// The binary with only the naive plugin, a store holding one replayed tune (kept: --db), the
// tune's id, and its recording.
struct Fixture {
  test::TempDir tmp;
  fs::path plugins = tmp.path / "plugins", db = tmp.path / "results.db", rec = tmp.path / "rec.json";
  std::string bin, bin_no_db, tune_id;
  Fixture() {
    fs::create_directories(plugins);
    fs::copy_file(test::plugin_dir() / "libgemmtune_naive.so", plugins / "libgemmtune_naive.so");
    test::write_file(rec, test::kToyRecording);
    bin_no_db = fmt::format("{} --plugin-dir {} --quiet", test::shell_quote(test::gemmtune_binary()), test::shell_quote(plugins));
    bin = bin_no_db + " --db " + test::shell_quote(db);
    auto r = test::run_command("{ " + bin + " --json tune --replay " + test::shell_quote(rec) + " --shape 64x64x64 2>/dev/null; }");
    INFO(r.out);
    REQUIRE(r.exit_code == 0);
    tune_id = nlohmann::json::parse(r.out)["tune_id"];
    REQUIRE(Store::open_readonly(db).count() > 0);
  }
  // Runs `args` (after --db DB unless `own_db`); exit 2, every phrase said, and every file in
  // `kept` byte for byte as it was.
  void refused(const std::string& args, const std::vector<std::string>& phrases, const std::vector<fs::path>& kept,
               bool own_db = false) {
    std::vector<std::string> before;
    for (auto& k : kept) before.push_back(bytes_of(k));
    auto r = test::run_command((own_db ? bin_no_db : bin) + " " + args);
    INFO("gemmtune " << args << "\n" << r.out);
    CHECK(r.exit_code == 2);
    for (auto& p : phrases) CHECK_THAT(r.out, Catch::Contains(p));
    for (size_t i = 0; i < kept.size(); ++i) CHECK(bytes_of(kept[i]) == before[i]);
  }
  // The names in the temporary directory (what a command left behind), but for the -wal and
  // -shm files that SQLite leaves beside a store a reader opened.
  std::set<std::string> listing() const {
    std::set<std::string> names;
    std::vector<fs::path> todo = {tmp.path};
    while (!todo.empty()) {  // by hand: a loop of links stops a recursive_directory_iterator
      fs::path d = todo.back();
      todo.pop_back();
      for (auto& e : fs::directory_iterator(d)) {
        std::string n = e.path().lexically_relative(tmp.path).string();
        if (n != "results.db-wal" && n != "results.db-shm") names.insert(n);
        if (fs::symlink_status(e.path()).type() == fs::file_type::directory) todo.push_back(e.path());
      }
    }
    return names;
  }
};

}  // namespace

TEST_CASE("no command writes over what it reads: the store, a recording, a job, by any name", "[reliability][cli]") {
  Fixture f;
  const fs::path link = f.tmp.path / "link.db", hard = f.tmp.path / "hard.db", wal = f.tmp.path / "results.db-wal";
  fs::create_symlink(f.db, link);
  fs::create_hard_link(f.db, hard);
  fs::path job = f.tmp.path / "job.toml";
  test::write_file(job, "[[problems]]\nshapes = [\"64x64x64\"]\nfamilies = [\"toy\"]\n");
  const std::set<std::string> files = f.listing();
  const std::string replay = "tune --replay " + test::shell_quote(f.rec) + " --shape 64x64x64 ";
  struct Case {
    std::string args;
    std::vector<std::string> phrases;
  };
  std::vector<Case> cases;
  // export's table, in every format, and its recording: the store by its name, a symbolic
  // link, a hard link, and its write-ahead log's name.
  for (const fs::path& out : {f.db, link, hard, wal}) {
    cases.push_back({"export -o " + test::shell_quote(out), {"-o: ", "is the results store (--db"}});
    cases.push_back({"export --format cpp -o " + test::shell_quote(out), {"-o: ", "is the results store"}});
    cases.push_back({"export --recording " + f.tune_id + " -o " + test::shell_quote(out), {"-o: ", "is the results store"}});
    // tune --record: the store it writes to (this replaced the store with JSON and left its WAL).
    cases.push_back({replay + "--record " + test::shell_quote(out), {"--record: ", "is the results store"}});
  }
  cases.push_back({"export --format tunableop --torch-version 2.15.0 -o " + test::shell_quote(hard), {"-o: ", "a link"}});
  cases.push_back({replay + "--record " + test::shell_quote(wal), {"(-wal file)"}});
  // tune --record over the recording it replays, or over its job file.
  cases.push_back({replay + "--record " + test::shell_quote(f.rec), {"--record: ", "the file --replay reads"}});
  cases.push_back({"tune --replay " + test::shell_quote(f.rec) + " --config " + test::shell_quote(job) + " --record " + test::shell_quote(job),
                   {"--record: ", "the file --config reads"}});
  // The store named by a link, and written by another name.
  f.refused("--db " + test::shell_quote(link) + " " + replay + "--record " + test::shell_quote(hard), {"--record: ", "a link"}, {f.db}, true);
  // merge: an input as the output, through a hard link.
  cases.push_back({"merge " + test::shell_quote(f.db) + " -o " + test::shell_quote(hard), {"-o: ", "merge's input"}});
  // report: its folder's data.json or index.html as the store or a job it reads.
  const fs::path folder = f.tmp.path / "report";
  fs::create_directories(folder);
  fs::create_hard_link(f.db, folder / "data.json");
  fs::create_symlink(job, folder / "index.html");
  cases.push_back({"report --store " + test::shell_quote(f.db) + " -o " + test::shell_quote(folder), {"-o: ", "data.json", "results store"}});
  cases.push_back({"report --store " + test::shell_quote(f.rec) + " --job " + test::shell_quote(job) + " -o " + test::shell_quote(folder),
                   {"-o: ", "index.html", "the file --job reads"}});
  for (auto& c : cases) f.refused(c.args, c.phrases, {f.db, f.rec, job});
  std::set<std::string> after = f.listing();
  after.erase("report");
  after.erase("report/data.json");
  after.erase("report/index.html");
  CHECK(after == files);  // no WAL, no temporary file, nothing written anywhere
  CHECK(fs::is_symlink(link));
}

TEST_CASE("an output that cannot be written is refused before any work; outputs replace files whole",
          "[reliability][cli]") {
  Fixture f;
  const fs::path dir = f.tmp.path / "a_folder", fifo = f.tmp.path / "fifo", loop = f.tmp.path / "loop",
                 file = f.tmp.path / "notes.txt";
  fs::create_directories(dir);
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  fs::create_symlink(loop, loop);
  test::write_file(file, "my notes\n");
  const std::string replay = "tune --replay " + test::shell_quote(f.rec) + " --shape 64x64x64 ";
  struct Case {
    std::string args;
    std::vector<std::string> phrases;
  };
  std::vector<Case> cases = {
      {"export -o " + test::shell_quote(dir), {"-o: ", "is a directory"}},
      {"export -o " + test::shell_quote(fifo), {"-o: ", "is a FIFO"}},  // this replaced the FIFO with the table
      {"export -o " + test::shell_quote(loop), {"-o: ", "a loop of symbolic links"}},
      {"export -o " + test::shell_quote(file / "table.toml"), {"-o: ", "a path through a file"}},
      {"export --recording " + f.tune_id + " -o " + test::shell_quote(dir), {"-o: ", "is a directory"}},
      // /proc takes no new files, whoever asks (a read-only folder for root too): the tune
      // ran, then failed to save its recording with exit 1.
      {replay + "--record /proc/gemmtune-recording.json", {"--record: ", "cannot be written"}},
      {replay + "--record " + test::shell_quote(fifo), {"--record: ", "is a FIFO"}},

      {"report --store " + test::shell_quote(f.db) + " -o " + test::shell_quote(file), {"-o: ", "not a folder"}},
      {"report --store " + test::shell_quote(f.db) + " -o /proc/gemmtune-report", {"-o: ", "cannot be written"}},
      {"run --family naive --shape 64x64x64 --trace " + test::shell_quote(fifo), {"--trace: ", "is a FIFO"}},
      {"merge " + test::shell_quote(f.db) + " -o " + test::shell_quote(dir), {"-o: ", "is a directory"}},
  };
  if (::geteuid() != 0) {  // a folder its owner made read-only (root writes there anyway)
    const fs::path ro = f.tmp.path / "read_only";
    fs::create_directories(ro);
    fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
    cases.push_back({"export -o " + test::shell_quote(ro / "t.toml"), {"-o: ", "cannot be written"}});
  }
  for (auto& c : cases) f.refused(c.args, c.phrases, {f.db, f.rec, file});
  f.refused("--db " + test::shell_quote(dir) + " " + replay, {"--db: ", "is a directory"}, {f.db}, true);
  f.refused("--db " + test::shell_quote(fifo) + " " + replay, {"--db: ", "is a FIFO"}, {f.db}, true);
  struct stat st {};
  REQUIRE(::stat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
  CHECK(fs::is_directory(dir));
  CHECK(fs::is_empty(dir));

  // A table written through a link: the link stays, its target is replaced whole; nothing
  // temporary stays behind.
  const fs::path target = f.tmp.path / "tables" / "t.json", via = f.tmp.path / "table.json";
  test::write_file(target, "old\n");
  fs::create_symlink(target, via);
  const auto before = f.listing();
  auto r = test::run_command(f.bin + " export --include-replay -o " + test::shell_quote(via));
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  CHECK(fs::is_symlink(via));
  CHECK_THAT(test::read_file(target), Catch::StartsWith("{") && Catch::Contains("\"gemmtune_table\""));
  CHECK(f.listing() == before);
  // The same for a recording (tune --record) written over an older one.
  const fs::path out = f.tmp.path / "again.json";
  test::write_file(out, "an older recording\n");
  const auto with_old = f.listing();
  r = test::run_command(f.bin + " " + replay + "--no-reuse --record " + test::shell_quote(out));
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(test::read_file(out), Catch::Contains("gemmtune-replay/2"));
  CHECK(f.listing() == with_old);
}
