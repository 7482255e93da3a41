// A sweep of every command and flag with hostile values (issue 28, item 8): numbers out of
// range, NaN, infinities, huge and malformed ones, empty strings, and paths that are
// directories, FIFOs, loops of links, devices, paths through a file, names too long, and
// places nobody may write. Every one is bad input: exit 2 with a message naming the flag
// (or the file), in well under the time limit (a FIFO read would block for ever, /dev/zero
// fill the memory), no signal, and nothing stored or written anywhere. CPU only; the
// commands run two at a time, so the sweep takes seconds.
#include "test_util.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <future>
#include <set>
#include <sys/stat.h>

using namespace gt;
namespace fs = std::filesystem;

namespace {

struct Case {
  std::string args;
  std::string says;  // the flag (or a phrase) the message must name
};

std::string digest(const fs::path& p) {
  std::string all = test::read_file(p) + "|" + test::read_file(p.string() + "-wal");
  return fmt::format("{}:{:016x}", all.size(), std::hash<std::string>{}(all));
}

// The places and values the sweep uses: a store, a recording, a job and a table that must not
// change, and hostile places beside them (a folder, a FIFO, a loop of links, a dangling link, a
// link to the store, a path through a file, a name too long).
struct Hostile {
  test::TempDir tmp;
  fs::path plugins = tmp.path / "plugins", db = tmp.path / "results.db", rec = tmp.path / "rec.json",
           job = tmp.path / "job.toml", table = tmp.path / "table.json";
  fs::path dir = tmp.path / "folder", fifo = tmp.path / "fifo", loop = tmp.path / "loop",
           dangling = tmp.path / "dangling", link_to_db = tmp.path / "db_link";
  std::string through_file = (job / "x.toml").string(), too_long = (tmp.path / std::string(5000, 'n')).string();
  std::string bin, with_db, tune, compare;  // the command line's start, and tune's and compare's on the recording
  // Inputs: none of these is a file to read.
  std::vector<std::string> bad_inputs = {dir.string(), fifo.string(), loop.string(), dangling.string(),
                                         through_file, too_long, "/dev/zero", "/dev/null", ""};
  // Outputs: none of these can be written, or each is a file the command reads. Never a real
  // device: run as root against a build that renames over its output, this test would replace
  // /dev/null with a regular file (it did, against the code before issue 28); the FIFO stands
  // for every file that is not a regular one.
  std::vector<std::string> bad_outputs = {dir.string(), fifo.string(), loop.string(), through_file, too_long,
                                          "/proc/gemmtune-out", "", db.string(), link_to_db.string()};
  std::vector<std::string> bad_numbers = {"-1", "nan", "-inf", "1e999", "99999999999999999999999", "", "0x10"};
  std::vector<std::string> bad_shapes = {"0x64x64", "-1x64x64", "64x64", "64x64x64x64", "64x64x99999999999",
                                         "", "axbxc", "64x64x64 ", "nanx64x64", "1e3x64x64"};

  Hostile() {
    fs::create_directories(plugins);
    fs::copy_file(test::plugin_dir() / "libgemmtune_naive.so", plugins / "libgemmtune_naive.so");
    test::write_file(rec, test::kToyRecording);
    test::write_file(job, "[[problems]]\nshapes = [\"64x64x64\"]\nfamilies = [\"toy\"]\n");
    bin = fmt::format("{} --plugin-dir {} --quiet", test::shell_quote(test::gemmtune_binary()),
                      test::shell_quote(plugins.string()));
    with_db = bin + " --db " + test::shell_quote(db.string());
    tune = "tune --replay " + test::shell_quote(rec.string()) + " ";
    compare = "compare --replay " + test::shell_quote(rec.string()) + " ";
    REQUIRE(test::run_command(with_db + " " + tune + "--shape 64x64x64").exit_code == 0);
    REQUIRE(test::run_command(with_db + " export --include-replay -o " + test::shell_quote(table.string())).exit_code == 0);
    fs::create_directories(dir);
    REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
    fs::create_symlink(loop, loop);
    fs::create_symlink(tmp.path / "nowhere" / "x", dangling);
    fs::create_symlink(db, link_to_db);
  }
};

// Numbers: every numeric flag of every command.
void number_cases(const Hostile& h, std::vector<Case>& cases) {
  for (auto& v : h.bad_numbers) {
    const bool huge = v == "99999999999999999999999";  // a fine number of seconds or a distance: no limit above
    for (const char* flag : {"--budget", "--time", "--fraction", "--patience", "--seed", "--max-problems", "--device",
                             "--consistency", "--hang-floor", "--compile-timeout", "--finalists", "--rounds",
                             "--turn-warmup", "--min-gain", "--settle"})
      if (!(huge && std::string(flag) == "--time")) cases.push_back({h.tune + "--shape 64x64x64 " + flag + " " + test::shell_quote(v), flag});
    for (const char* flag : {"--budget", "--max-problems", "--device", "--rounds", "--turn-warmup", "--min-gain"})
      cases.push_back({h.compare + "--shape 64x64x64 " + flag + " " + test::shell_quote(v), flag});
    for (const char* flag : {"--device", "--seed", "--settle", "--min-time"})
      cases.push_back({"run --family naive --shape 64x64x64 " + std::string(flag) + " " + test::shell_quote(v), flag});
    for (const char* flag : {"--device", "--candidates", "--seconds"}) cases.push_back({"roofs " + std::string(flag) + " " + test::shell_quote(v), flag});
    for (const char* flag : {"--threads", "--limit"})
      cases.push_back({"compile --family naive --shape 64x64x64 " + std::string(flag) + " " + test::shell_quote(v), flag});
    for (const char* flag : {"--max-distance", "--decode-max-m", "--align"})
      if (!(huge && std::string(flag) == "--max-distance"))
        cases.push_back({"lookup --table " + test::shell_quote(h.table.string()) + " --shape 64x64x64 " + flag + " " + test::shell_quote(v), flag});
    for (const char* flag : {"--neighbours", "--tolerance", "--max-distance", "--decode-max-m", "--rounds", "--device"})
      if (!(huge && std::string(flag) == "--max-distance"))
        cases.push_back({"validate --replay " + test::shell_quote(h.rec.string()) + " " + flag + " " + test::shell_quote(v), flag});
  }
}

// Shapes, wherever a command takes one.
void shape_cases(const Hostile& h, std::vector<Case>& cases) {
  for (auto& s : h.bad_shapes) {
    cases.push_back({h.tune + "--shape " + test::shell_quote(s), "--shape"});
    cases.push_back({"run --family naive --shape " + test::shell_quote(s), "--shape"});
    cases.push_back({"compile --family naive --shape " + test::shell_quote(s), "--shape"});
    cases.push_back({"list --shape " + test::shell_quote(s), "--shape"});
    cases.push_back({"lookup --table " + test::shell_quote(h.table.string()) + " --shape " + test::shell_quote(s), "--shape"});
    cases.push_back({"roofs --tensor-shape " + test::shell_quote(s), "--tensor-shape"});
  }
}

// Words: types, layouts, strategies, families, distributions, shards, devices, archs, formats.
void word_cases(const Hostile& h, std::vector<Case>& cases) {
  for (auto& [flag, values] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"--dtype", {"", "F32", "f64", "fp8", "f32 "}},
           {"--out-dtype", {"", "tf32", "int8"}},
           {"--layout", {"", "NN", "nx", "nnn"}},
           {"--strategy", {"", "Bayes", "../bayes"}},
           {"--family", {"", "../naive", "nope"}},
           {"--dist", {"", "gaussian", "NORMAL"}},
           {"--shard", {"1/0", "0/0", "5/2", "-1/2", "a/b", "1/", "/2", "1/99999999999999999999"}},
           {"--devices", {"", "0,0", "-1", "all,0", "1,,2", "99999999999"}}})
    for (auto& v : values) cases.push_back({h.tune + "--shape 64x64x64 " + flag + " " + test::shell_quote(v), flag});
  for (auto& v : std::vector<std::string>{"", "sm_999", "sm90", "../sm_90"}) {
    cases.push_back({"compile --family naive --shape 64x64x64 --arch " + test::shell_quote(v), "--arch"});
    cases.push_back({"list --arch " + test::shell_quote(v), "--arch"});
  }
  for (auto& v : std::vector<std::string>{"", "tsv", "TOML"})
    cases.push_back({"export --format " + test::shell_quote(v), "--format"});
  for (auto& v : std::vector<std::string>{"", "1 bad", "9::x", "a-b"})
    cases.push_back({"export --format cpp --namespace " + test::shell_quote(v), "--namespace"});
}

// Input files: every flag that reads one.
void input_file_cases(const Hostile& h, std::vector<Case>& cases) {
  for (auto& p : h.bad_inputs) {
    cases.push_back({h.tune + "--config " + test::shell_quote(p), "--config"});
    cases.push_back({"tune --shape 64x64x64 --replay " + test::shell_quote(p), p.empty() ? "--replay" : p});
    cases.push_back({"compare --replay " + test::shell_quote(p) + " --shape 64x64x64", p.empty() ? "--replay" : p});
    cases.push_back({"lookup --table " + test::shell_quote(p) + " --shape 64x64x64", p.empty() ? "--table" : p});
    cases.push_back({"report --store " + test::shell_quote(p) + " -o " + test::shell_quote((h.tmp.path / "r").string()), "--store"});
    cases.push_back({"report --store " + test::shell_quote(h.db.string()) + " --job " + test::shell_quote(p) + " -o " + test::shell_quote((h.tmp.path / "r").string()),
                     "--job"});
    if (!p.empty()) cases.push_back({"merge " + test::shell_quote(p) + " -o " + test::shell_quote((h.tmp.path / "merged.db").string()), p});
    cases.push_back({"validate --replay " + test::shell_quote(h.rec.string()) + " --table " + test::shell_quote(p), p.empty() ? "--table" : p});
    if (p != h.dangling.string())  // a decisions file that does not exist yet holds no decisions: not bad input
      cases.push_back({"lookup --table " + test::shell_quote(h.table.string()) + " --shape 64x64x64 --online-file " +
                           test::shell_quote(p), p.empty() ? "--online-file" : p});
  }
  for (auto& v : std::vector<std::string>{"", "Any", "none"})
    cases.push_back({"lookup --table " + test::shell_quote(h.table.string()) + " --shape 64x64x64 --transfers " + test::shell_quote(v),
                     "--transfers"});
}

// Output files, and the store itself as an output.
void output_file_cases(const Hostile& h, std::vector<Case>& cases) {
  for (auto& p : h.bad_outputs) {
    cases.push_back({h.tune + "--shape 64x64x64 --record " + test::shell_quote(p), "--record"});
    cases.push_back({"export -o " + test::shell_quote(p), "-o"});
    cases.push_back({"export --format cpp -o " + test::shell_quote(p), "-o"});
    if (p != h.dir.string()) cases.push_back({"report --store " + test::shell_quote(h.db.string()) + " -o " + test::shell_quote(p), "-o"});  // a folder is one
    cases.push_back({"merge " + test::shell_quote(h.db.string()) + " -o " + test::shell_quote(p), "-o"});
    cases.push_back({"run --family naive --shape 64x64x64 --trace " + test::shell_quote(p), "--trace"});
    cases.push_back({"validate --replay " + test::shell_quote(h.rec.string()) + " --table " + test::shell_quote(h.table.string()) +
                     " -o " + test::shell_quote(p), "-o"});
  }
  for (auto& p : std::vector<std::string>{h.dir.string(), h.fifo.string(), h.loop.string(), h.through_file, h.too_long})
    cases.push_back({"--db " + test::shell_quote(p) + " " + h.tune + "--shape 64x64x64", p});

}

// Two at a time; each under a time limit (a blocked read of a FIFO would hit it) and a
// memory limit (a read of /dev/zero would otherwise take the machine's memory with it).
std::vector<test::CommandResult> run_all(const Hostile& h, const std::vector<Case>& cases) {
  auto run = [&](const Case& c) {
    const std::string base = c.args.rfind("--db ", 0) == 0 ? h.bin : h.with_db;
    return test::run_command("ulimit -v 8000000; timeout -s KILL 30 " + base + " " + c.args + " </dev/null");
  };
  std::vector<test::CommandResult> results(cases.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next++) < cases.size();) results[i] = run(cases[i]);
  };
  auto other = std::async(std::launch::async, worker);
  worker();
  other.get();
  return results;
}

}  // namespace

TEST_CASE("every command and flag refuses hostile values: exit 2, the flag named, nothing changed",
          "[reliability][cli]") {
  const Hostile h;
  std::vector<Case> cases;
  number_cases(h, cases);
  shape_cases(h, cases);
  word_cases(h, cases);
  input_file_cases(h, cases);
  output_file_cases(h, cases);

  // Everything here that must not change.
  const std::vector<fs::path> kept = {h.db, h.rec, h.job, h.table};
  std::vector<std::string> before;
  for (auto& k : kept) before.push_back(digest(k));
  std::set<std::string> listing_before;
  for (auto& e : fs::directory_iterator(h.tmp.path)) listing_before.insert(e.path().filename().string());

  const std::vector<test::CommandResult> results = run_all(h, cases);
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("gemmtune " << cases[i].args << "\n" << results[i].out.substr(0, 600));
    CHECK(results[i].exit_code == 2);
    CHECK_THAT(results[i].out, Catch::Contains(cases[i].says));
    CHECK_THAT(results[i].out, !Catch::Contains("failed:"));  // bad input, not a run-time failure
  }
  for (size_t i = 0; i < kept.size(); ++i) {
    INFO(kept[i]);
    CHECK(digest(kept[i]) == before[i]);
  }
  std::set<std::string> listing_after;
  for (auto& e : fs::directory_iterator(h.tmp.path)) listing_after.insert(e.path().filename().string());
  listing_after.erase("results.db-wal");  // a reader's (export's, report's) SQLite leaves these beside the store
  listing_after.erase("results.db-shm");
  listing_before.erase("results.db-wal");
  listing_before.erase("results.db-shm");
  CHECK(listing_after == listing_before);  // nothing created: no store, no recording, no report, no temporary file
  struct stat st {};
  REQUIRE(::stat(h.fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
  CHECK(fs::is_empty(h.dir));
  INFO(cases.size() << " hostile command lines");
  CHECK(cases.size() > 300);
}
