// gemmtune report: a store made by a replayed tune plus rows and roofs written through the
// store API becomes data.json (every ok row, winners, roofs, the cuBLASLt pick) and a
// self-contained index.html, and the store is left byte for byte as it was. Without
// python3 + matplotlib the command fails with a message that says which one is missing.
#include "replay/replay.hpp"
#include "measure/roofs.hpp"
#include "store/store.hpp"
#include "replay/synthetic.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

using namespace gt;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const char* kGpu = "NVIDIA H200";

std::set<std::string> files_in(const fs::path& dir) {
  std::set<std::string> out;
  for (auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

size_t count_of(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t i = hay.find(needle); i != std::string::npos; i = hay.find(needle, i + needle.size())) ++n;
  return n;
}

// A register_tile landscape and a small cuBLASLt space at 1024^3 f32; one cuBLASLt config
// is recorded as its heuristic's rank 0, the way the plugin describes its pick.
fs::path make_recording(const fs::path& dir) {
  Problem p = Problem::make(1024, 1024, 1024, DType::f32, DType::f32, Layout::nn);
  search::SyntheticGemm g(search::SyntheticKind::register_tile, p, arch_limits("sm_90"), 7);
  search::Recording rec;
  search::RecordedDevice dev{kGpu, "GPU-report-test", "sm_90"};
  auto& rt = rec.space_for(dev, p, "register_tile", "1.0", g.space().params());
  const Space& s = g.space();
  for (uint64_t i = 0; i < s.raw_size(); ++i) {
    Config c = s.at(i);
    if (s.valid(c)) rt.add(c, g.evaluate(c));
  }
  std::vector<Param> lt_params = {Param{"algo", "algorithm id", {21, 55}, {}, 1},
                                  Param{"split_k", "split-K slices", {1, 2}, {}, 0}};
  auto& lt = rec.space_for(dev, p, "cublaslt", "1.0+cublasLt130100", lt_params);
  lt.add({55, 1}, {Status::ok, 60.0, "cuBLASLt 13.1.0 algo 55: tile 128x128; heuristic rank 0 (cuBLASLt's pick)"});
  lt.add({55, 2}, {Status::ok, 75.0, "cuBLASLt 13.1.0 algo 55; not among the heuristic's 8 picks"});
  lt.add({21, 1}, {Status::ok, 58.0, "cuBLASLt 13.1.0 algo 21; heuristic rank 3"});
  lt.add({21, 2}, {Status::verify_failed, 58.0, "max error 3e-1 exceeds the tolerance"});
  auto path = dir / "rec.json";
  rec.save(path);
  return path;
}

Provenance gpu_provenance(const std::string& family) {
  Provenance pv;
  pv.device_name = kGpu;
  pv.device_uuid = "GPU-report-test";
  pv.arch = "sm_90";
  pv.sm_count = 132;
  pv.driver = "580.95.05";
  pv.cuda_runtime = "13.0";
  pv.nvrtc = "13.0";
  pv.library = family == "cublaslt" ? "cublasLt 130100" : "";
  pv.family = family;
  pv.family_version = "1.0";
  pv.host = "test-host";
  return pv;
}

// Rows as a GPU run would have written them: cuBLASLt's pick at two square f16 sizes (the
// lab's cuBLAS-size experiment and a size sweep), and the measured roofs.
void add_gpu_rows(const fs::path& db) {
  Store st = Store::open(db);
  for (auto [n, us] : {std::pair<int64_t, double>{2048, 40.0}, {4096, 260.0}}) {
    StoredRow r;
    r.tune_id = "report-test";
    r.problem = Problem::make(n, n, n, DType::f16, DType::f16, Layout::nn);
    r.family = "cublaslt";
    r.config = {66, 1};
    r.config_name = "cublaslt_algo66_split_k1";
    r.config_hash = hex64(stable_hash(r.config_name));
    r.m.status = Status::ok;
    r.m.message = "finalist: re-timed; cuBLASLt 13.1.0 algo 66: tile 256x128, stages 64xauto, split-K 2 (reduction "
                  "inplace), CTA swizzle off; heuristic rank 0 (cuBLASLt's pick), 1.0 waves";
    r.params = "algo=66,split_k=1";
    r.params_from = "space";
    r.heuristic_rank = 0;  // the rank as data (schema v9); the words above are only words
    r.m.time.count = 50;
    r.m.time.median = r.m.time.mean = r.m.time.min = r.m.time.max = us;
    r.m.err_rel_fro = 2e-4;
    r.prov = gpu_provenance("cublaslt");
    st.insert(r);
  }
  auto roof = [&](const char* name, double v, const char* unit) {
    RoofRow r;
    r.device_name = kGpu;
    r.name = name;
    r.value = v;
    r.unit = unit;
    r.how = "test";
    std::tie(r.time_utc, r.time_unix) = utc_now();
    st.put_roof(r);
  };
  roof("fp32_fma", 55e12, "FLOP/s");
  roof("tensor_f16", 650e12, "FLOP/s");
  roof("mem_read", 4.4e12, "B/s");
}

// Two `gemmtune compare` runs at 1024^3 f32 as the GPU writes them. The latest times the
// tune's overall winner at 31 us and cuBLASLt's pick at 62 us side by side, and another config
// faster than the winner (20 us); an older run read other times, and a row a compare's own tune
// stored under the same run id (timed apart, not interleaved) has the pick at 10 us. The page
// must take 62 / 31 = 2 from the latest run's interleaved rows. Returns the winner's family.
std::string add_compare_rows(const fs::path& db) {
  Store st = Store::open(db);
  Problem p = Problem::make(1024, 1024, 1024, DType::f32, DType::f32, Layout::nn);
  ResultKey key = ResultKey::of(kGpu, p);
  auto won = st.winner(key, kAllFamilies);
  REQUIRE(won);
  StoredRow w = *st.get(won->row_id), pick, other;
  for (auto& r : st.rows(RowFilter{})) {
    if (r.problem.key() != p.key() || r.m.status != Status::ok) continue;
    if (r.family == "cublaslt" && r.m.message.find("heuristic rank 0") != std::string::npos) pick = r;
    else if (r.config_name != w.config_name) other = r;
  }
  REQUIRE(pick.id != 0);
  REQUIRE(other.id != 0);
  REQUIRE(pick.config_name != w.config_name);
  auto put = [&](StoredRow row, const char* run, double us, const char* how) {
    row.id = 0;
    row.row_uuid.clear();
    row.tune_id = run;
    row.replay = false;  // as a compare on the GPU wrote it
    std::tie(row.time_utc, row.time_unix) = utc_now();
    row.m.quick = false;
    row.m.message += how;
    row.m.time.median = row.m.time.mean = row.m.time.min = row.m.time.max = us;
    row.prov = gpu_provenance(row.family);
    st.insert(row);
  };
  const char* interleaved = "; compare: timed interleaved with 2 others over 5 rounds";
  put(w, "compare-00000001", 20.0, interleaved);  // the older run: 60 / 20
  put(pick, "compare-00000001", 60.0, interleaved);
  put(pick, "compare-00000002", 10.0, "; finalist: re-timed");  // the compare's own tune, timed apart
  put(w, "compare-00000002", 31.0, interleaved);
  put(pick, "compare-00000002", 62.0, interleaved);
  put(other, "compare-00000002", 20.0, interleaved);
  return w.family;
}

std::string report_cmd(const fs::path& db, const fs::path& out, const std::string& env = "") {
  return fmt::format("{}'{}' --db '{}' --plugin-dir '{}' report -o '{}'", env, test::gemmtune_binary().string(),
                     db.string(), test::plugin_dir().string(), out.string());
}

}  // namespace

TEST_CASE("report: data.json holds the store's rows, the page embeds its plots, the store is untouched", "[report]") {
  test::TempDir dir;
  fs::path rec = make_recording(dir.path);
  fs::path db = dir.path / "results.db";
  auto tuned = test::run_command(fmt::format(
      "'{}' --quiet --db '{}' tune --replay '{}' --shape 1024x1024x1024 --family register_tile --family cublaslt "
      "--strategy random --budget 40 --seed 5",
      test::gemmtune_binary().string(), db.string(), rec.string()));
  INFO(tuned.out);
  REQUIRE(tuned.exit_code == 0);
  add_gpu_rows(db);
  const std::string compared = add_compare_rows(db);

  int64_t ok_rows = 0, replay_ok = 0, winners = 0;
  {
    Store st = Store::open_readonly(db);
    RowFilter f;
    f.status = Status::ok;
    ok_rows = st.count(f);
    f.replay = true;
    replay_ok = st.count(f);
    winners = int64_t(st.winners().size());
  }
  // That read-only open left SQLite's -shm and -wal files; nobody else has the store open.
  fs::remove(db.string() + "-shm");
  fs::remove(db.string() + "-wal");
  REQUIRE(replay_ok > 10);
  REQUIRE(ok_rows == replay_ok + 8);
  REQUIRE(winners >= 2);
  const std::string before = test::read_file(db);
  const auto beside = files_in(dir.path);

  fs::path out = dir.path / "report";
  auto r = test::run_command("GEMMTUNE_REPORT_STRICT=1 " + report_cmd(db, out));
  INFO(r.out);
  // Read-only, whatever happened after: the store's bytes, and nothing new beside it (SQLite
  // leaves -shm and -wal files next to a WAL store it opens, even read-only).
  CHECK(test::read_file(db) == before);
  auto after = files_in(dir.path);
  after.erase("report");
  CHECK(after == beside);
  REQUIRE(fs::exists(out / "data.json"));

  json data = json::parse(test::read_file(out / "data.json"));
  CHECK(data["format"] == "gemmtune-report/1");
  auto& ms = data["measurements"];
  CHECK(int64_t(ms.size()) == ok_rows);
  CHECK(data["roofs"].size() == 3);
  CHECK(int64_t(data["winners"].size()) == winners);
  int replay = 0, picks = 0;
  std::set<std::string> fams;
  for (auto& m : ms) {
    replay += m["replay"].get<bool>();
    fams.insert(m["family"].get<std::string>());
    CHECK(m["device"] == kGpu);
    CHECK(m["time_us"].get<double>() > 0);
    double flops = 2.0 * m["m"].get<double>() * m["n"].get<double>() * m["k"].get<double>();
    CHECK(m["flops"].get<double>() == Approx(flops));
    CHECK(m["tflops"].get<double>() == Approx(flops / (m["time_us"].get<double>() * 1e-6) / 1e12));
    if (m["pick"].get<bool>()) {
      ++picks;
      CHECK(m["family"] == "cublaslt");
    }
    if (m["key"] == "2048x2048x2048 f16>f16 nn a16") {
      CHECK(m["bytes"].get<double>() == Approx(3.0 * 2048 * 2048 * 2));
      CHECK(m["intensity"].get<double>() == Approx(2048.0 / 3.0));
      CHECK(m["dtype"] == "f16");
      CHECK(m["layout"] == "nn");
      CHECK(m["align"] == 16);
      CHECK_FALSE(m["replay"].get<bool>());
      // cuBLASLt's space needs a GPU; the tune of the recording noted the family's parameter
      // names in the store, and they split the config's name (before that: its description).
      CHECK(m["params_from"] == "store");
      CHECK(m["params"] == json::parse(R"([["algo","66"],["split_k","1"]])"));
    }
    if (m["family"] == "register_tile") {
      REQUIRE(m["params"].size() >= 2);
      CHECK(m["params"][0][0] == "bm");  // named, from the plugin or from the config name
    }
  }
  CHECK(replay == replay_ok);
  CHECK(picks >= 3);  // the replayed pick and the two written ones
  CHECK(fams == std::set<std::string>{"register_tile", "cublaslt"});
  bool lab_size = false;
  for (auto& j : data["jobs"]) lab_size |= j["id"] == "cublas_size" && j["lab"].get<bool>();
  CHECK(lab_size);

  if (r.exit_code != 0) {
    // Only a missing interpreter or matplotlib may stop the page; the data stay.
    CHECK_THAT(r.out, Catch::Contains("matplotlib is missing") || Catch::Contains("python3 was not found"));
    WARN("SKIPPED the HTML checks: python3 with matplotlib is not available here (" << r.out << ")");
    return;
  }
  REQUIRE(fs::exists(out / "index.html"));
  std::string page = test::read_file(out / "index.html");
  // Roofline, TFLOP/s against size, speed-up, parameters and the lab's cuBLAS-size plot.
  CHECK(count_of(page, "src=\"data:image/png;base64,") >= 5);
  CHECK(page.find("REPLAY") != std::string::npos);
  CHECK(page.find("http://") == std::string::npos);
  CHECK(page.find("https://") == std::string::npos);
  CHECK(page.find("cuBLASLt against size") != std::string::npos);
  // Experiments with nothing in the store: one list at the end, not a paragraph each; what a
  // shown experiment lacks is one line, the list of kernels folded away.
  CHECK(page.find("<h3>Not in this store</h3>") != std::string::npos);
  CHECK(page.find("Skinny M</b>") > page.find("<h3>Not in this store</h3>"));
  CHECK(page.find("<details><summary>The ") != std::string::npos);
  // TFLOP/s against size: a panel for every dtype with a square problem, a single size too.
  CHECK(page.find("f32 nn: one square size in the store") != std::string::npos);
  CHECK(page.find("section failed") == std::string::npos);
  // The speed-up over the pick: 1024^3 f32 from the latest compare run's interleaved rows, the
  // table's config against the pick (62 / 31 = 2); the two f16 sizes from their only rows (the
  // pick itself, 1.0): geomean 2^(1/3).
  INFO("the compared winner's family: " << compared);
  CHECK(page.find("1 of 3 shapes side by side") != std::string::npos);
  CHECK(page.find("Geomean over 3 shapes: <b>1.260×</b>") != std::string::npos);
}

TEST_CASE("report: cuBLASLt's pick and parameters are the rows' columns, not their words", "[report]") {
  test::TempDir dir;
  fs::path db = dir.path / "results.db";
  Problem p = Problem::make(2048, 2048, 2048, DType::f16, DType::f16, Layout::nn);
  auto row = [&](int64_t algo, std::optional<int32_t> rank, const std::string& words) {
    StoredRow r;
    r.tune_id = "report-test";
    r.problem = p;
    r.family = "cublaslt";
    r.config = {algo, 1};
    r.config_name = fmt::format("cublaslt_algo{}_split_k1", algo);
    r.config_hash = hex64(stable_hash(r.config_name));
    r.params = fmt::format("algo={},split_k=1", algo);
    r.params_from = "space";
    r.heuristic_rank = rank;
    r.m.status = Status::ok;
    r.m.message = words;
    r.m.time.count = 50;
    r.m.time.median = r.m.time.mean = r.m.time.min = r.m.time.max = 40.0 + double(algo);
    r.prov = gpu_provenance("cublaslt");
    return r;
  };
  {
    Store st = Store::open(db);
    st.insert(row(66, 0, "cuBLASLt 13.1.0 algo 66"));  // the pick, though its words do not say so
    st.insert(row(55, 3, "cuBLASLt 13.1.0 algo 55; heuristic rank 0 (cuBLASLt's pick)"));  // words that lie
    st.insert(row(21, std::nullopt, "cuBLASLt 13.1.0 algo 21"));
  }
  fs::path out = dir.path / "report";
  auto r = test::run_command(report_cmd(db, out));
  INFO(r.out);
  REQUIRE(fs::exists(out / "data.json"));
  json data = json::parse(test::read_file(out / "data.json"));
  std::map<std::string, json> by_config;
  for (auto& m : data["measurements"]) by_config[m["config"].get<std::string>()] = m;
  REQUIRE(by_config.size() == 3);
  CHECK(by_config["cublaslt_algo66_split_k1"]["pick"] == true);
  CHECK(by_config["cublaslt_algo66_split_k1"]["heuristic_rank"] == 0);
  CHECK(by_config["cublaslt_algo55_split_k1"]["pick"] == false);
  CHECK(by_config["cublaslt_algo55_split_k1"]["heuristic_rank"] == 3);
  CHECK(by_config["cublaslt_algo21_split_k1"]["pick"] == false);
  CHECK(by_config["cublaslt_algo21_split_k1"]["heuristic_rank"].is_null());
  // No GPU to ask cuBLASLt's space and no names noted: the row's own params, as its space spelled them.
  CHECK(by_config["cublaslt_algo55_split_k1"]["params_from"] == "row");
  CHECK(by_config["cublaslt_algo55_split_k1"]["params"] == json::parse(R"([["algo","55"],["split_k","1"]])"));
}

TEST_CASE("report: without python3 or matplotlib it says which is missing and keeps data.json", "[report]") {
  test::TempDir dir;
  fs::path db = dir.path / "results.db";
  add_gpu_rows(db);
  const std::string before = test::read_file(db);

  auto none = test::run_command(report_cmd(db, dir.path / "a", "GEMMTUNE_PYTHON=/nonexistent/python3 "));
  INFO(none.out);
  CHECK(none.exit_code == 1);
  CHECK_THAT(none.out, Catch::Contains("python3 was not found") && Catch::Contains("python3-matplotlib"));
  CHECK(fs::exists(dir.path / "a" / "data.json"));
  CHECK_FALSE(fs::exists(dir.path / "a" / "index.html"));

  // `false` runs and fails to import anything: an interpreter without matplotlib.
  auto no_mpl = test::run_command(report_cmd(db, dir.path / "b", "GEMMTUNE_PYTHON=false "));
  INFO(no_mpl.out);
  CHECK(no_mpl.exit_code == 1);
  CHECK_THAT(no_mpl.out, Catch::Contains("matplotlib is missing") && Catch::Contains("data.json"));
  CHECK(fs::exists(dir.path / "b" / "data.json"));
  CHECK(test::read_file(db) == before);

  auto missing = test::run_command(report_cmd(dir.path / "nowhere.db", dir.path / "c"));
  INFO(missing.out);
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.out, Catch::Contains("no results store"));
  CHECK_FALSE(fs::exists(dir.path / "c"));
}

TEST_CASE("report: a temporary folder with no room for the store's copy is named, and nothing is left there",
          "[report][reliability]") {
  test::TempDir dir;
  fs::path db = dir.path / "results.db", tmp = dir.path / "tmp";
  add_gpu_rows(db);
  fs::create_directories(tmp);
  // No file may grow past 4 KiB (SIGXFSZ ignored: writes fail as on a full disk); the store is larger.
  REQUIRE(fs::file_size(db) > 4096);
  auto r = test::run_command("bash -c \"trap '' XFSZ; ulimit -f 4; TMPDIR=" + test::shell_quote(tmp) + " exec " +
                             report_cmd(db, dir.path / "page") + "\"");
  INFO(r.out);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains(db.string() + ": cannot copy the store to " + tmp.string()) &&
                        Catch::Contains("TMPDIR"));
  CHECK(files_in(tmp).empty());  // the half copy is gone (it had been a raw filesystem error, the copy left)
  CHECK_FALSE(fs::exists(dir.path / "page"));
}

TEST_CASE("report: an output folder it cannot fill is not left behind, and the message names data.json",
          "[report][reliability]") {
  test::TempDir dir;
  const fs::path db = dir.path / "results.db", full = dir.path / "full", page = dir.path / "page";
  // The default job's replay: a store whose data.json is larger than the store itself.
  REQUIRE(test::run_command(fmt::format("'{}' --quiet --db '{}' --plugin-dir '{}' tune --default-job",
                                        test::gemmtune_binary().string(), db.string(), test::plugin_dir().string()))
              .exit_code == 0);
  REQUIRE(test::run_command(report_cmd(db, full)).exit_code == 0);
  const uintmax_t store = fs::file_size(db), data = fs::file_size(full / "data.json");
  REQUIRE(store + 64 * 1024 < data);
  // Room for the store's snapshot, not for data.json (SIGXFSZ ignored: writes fail as on a full disk).
  const uintmax_t limit_kib = (store + data) / 2 / 1024;
  auto r = test::run_command(fmt::format("bash -c \"trap '' XFSZ; ulimit -f {}; exec {}\"", limit_kib,
                                         report_cmd(db, page)));
  INFO(r.out);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains((page / "data.json").string()) && Catch::Contains("writing failed"));
  CHECK_FALSE(fs::exists(page));  // the folder this run made goes with its data
}

TEST_CASE("report: % roof is of the roofline at the problem, memory-bound shapes included", "[report]") {
  test::TempDir dir;
  fs::path db = dir.path / "results.db";
  add_gpu_rows(db);  // 4096^3 f16 at 260 us: compute-bound; tensor_f16 650, mem_read 4.4 TB/s
  Problem skinny = Problem::make(1, 4096, 4096, DType::f16, DType::f16, Layout::nn);
  {
    Store st = Store::open(db);
    StoredRow r;
    r.tune_id = "report-test";
    r.problem = skinny;
    r.family = "cublaslt";
    r.config = {66, 2};
    r.config_name = "cublaslt_algo66_split_k2";
    r.config_hash = hex64(stable_hash(r.config_name));
    r.m.status = Status::ok;
    r.m.message = "cuBLASLt 13.1.0 algo 66; heuristic rank 0 (cuBLASLt's pick)";
    r.heuristic_rank = 0;
    r.m.time.count = 50;
    r.m.time.median = r.m.time.mean = r.m.time.min = r.m.time.max = 20.0;
    r.m.err_rel_fro = 2e-4;
    r.prov = gpu_provenance("cublaslt");
    st.insert(r);
  }
  fs::path out = dir.path / "report";
  auto pct = [](const Problem& p, double us) {
    Roofline line = roofline_at(p, 650e12, 4.4e12);
    return 100.0 * p.flops() / (us * 1e-6) / line.flops_per_s;
  };
  Problem square = Problem::make(4096, 4096, 4096, DType::f16, DType::f16, Layout::nn);
  CHECK(roofline_at(square, 650e12, 4.4e12).bound == Roofline::Bound::compute);
  CHECK(roofline_at(skinny, 650e12, 4.4e12).bound == Roofline::Bound::memory);
  // 81.3 % of 650 TFLOP/s; the skinny row 38.1 % of 4.4 TB/s x 1.0 FLOP per byte (its share of
  // the tensor roof alone would read 0.3 %).
  CHECK(fmt::format("{:.1f}", pct(square, 260.0)) == "81.3");
  CHECK(fmt::format("{:.1f}", pct(skinny, 20.0)) == "38.1");
  auto r = test::run_command(report_cmd(db, out));
  INFO(r.out);
  if (r.exit_code != 0) {
    CHECK_THAT(r.out, Catch::Contains("matplotlib is missing") || Catch::Contains("python3 was not found"));
    WARN("SKIPPED the HTML checks: python3 with matplotlib is not available here (" << r.out << ")");
    return;
  }
  const std::string html = test::read_file(out / "index.html");
  CHECK(html.find("<td class=\"num\">81.3</td>") != std::string::npos);
  CHECK(html.find("<td class=\"num\">38.1</td>") != std::string::npos);
}

