// Exported lookup tables: export from a store (winners, fallbacks, replay), the formats and
// their round trips, the C++ header (compiled with the system g++, escaping), lookups
// (exact / nearest / default on held-out shapes), vanished configs, bad files, and the
// `export` / `lookup` commands. CPU only.
#include "base/errors.hpp"
#include "build/plugin.hpp"
#include "store/store.hpp"
#include "table/table.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <random>
#include <sstream>

using namespace gt;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const char* kDevice = "NVIDIA Test GPU";

const Family& naive() { return test::plugins().get("naive"); }

// Only the naive plugin, so that defaults do not depend on whether cuBLASLt can answer here
// (it can on a GPU machine).
const PluginRegistry& naive_only() {
  static PluginRegistry r = PluginRegistry::load({test::naive_only_dir()});
  return r;
}

Space naive_space(const Problem& p) { return naive().space(p, arch_limits("sm_90")); }

Config naive_config(const Problem& p, const std::string& assignments) {
  std::string err;
  auto c = naive_space(p).parse(assignments, &err);
  REQUIRE(c);
  return *c;
}

Provenance prov_of(const std::string& device) {
  Provenance p;
  p.device_name = device;
  p.device_uuid = "GPU-00000000-1111-2222-3333-444444444444";
  p.arch = "sm_90";
  p.sm_count = 132;
  p.driver = "580.95.05";
  p.cuda_runtime = "13.0";
  p.nvrtc = "13.0";
  p.family = "naive";
  p.family_version = naive().version();
  p.source_hash = naive().source_hash();
  p.host = "test-host";
  return p;
}

StoredRow ok_row(const Problem& p, const std::string& assignments, double median_us, bool replay = false,
                 const std::string& device = kDevice) {
  StoredRow r;
  r.problem = p;
  r.family = "naive";
  Space s = naive_space(p);
  r.config = naive_config(p, assignments);
  r.config_name = s.name(r.config);
  r.config_hash = hex64(s.hash(r.config));
  r.replay = replay;
  r.m.status = Status::ok;
  r.m.time = summarize({median_us * 0.99, median_us, median_us * 1.01});
  r.m.err_rel_fro = 1e-7;
  r.m.err_max_norm = 1e-6;
  r.prov = prov_of(device);
  return r;
}

ExportOptions export_options(bool include_replay = false) {
  ExportOptions o;
  o.include_replay = include_replay;
  o.params_of = [](const StoredRow& r) -> std::optional<std::string> {
    const Family* f = test::plugins().find(r.family);
    if (!f) return std::nullopt;
    return f->space(r.problem, arch_limits("sm_90")).assignments(r.config);
  };
  return o;
}

const TableEntry* entry_for(const LookupTable& t, int64_t m, int64_t n, int64_t k,
                            const std::string& device = kDevice) {
  for (auto& e : t.entries)
    if (e.key.m == m && e.key.n == n && e.key.k == k && e.key.device_name == device) return &e;
  return nullptr;
}

// A store with one key per way an entry can come about.
struct SampleStore {
  test::TempDir dir;
  fs::path path = dir.path / "results.db";
  Problem k4096 = Problem::make(4096, 4096, 4096, DType::f32, DType::f32, Layout::nn);
  Problem k1024 = Problem::make(1024, 1024, 1024, DType::f32, DType::f32, Layout::nn);
  Problem k2048 = Problem::make(2048, 2048, 2048, DType::f32, DType::f32, Layout::nn);
  Problem k512 = Problem::make(512, 512, 512, DType::f32, DType::f32, Layout::nn);
  Problem k768 = Problem::make(768, 768, 768, DType::f32, DType::f32, Layout::nn);
  Problem f16 = Problem::make(4096, 4096, 4096, DType::f16, DType::f16, Layout::nt);

  SampleStore() {
    Store s = Store::open(path);
    // 4096^3: the tuner's winner (A) is recorded although B has a smaller median (say it
    // lost the interleaved re-timing): the recorded winner decides.
    StoredRow a = ok_row(k4096, "map=coalesced,bx=32,by=8", 100.0);
    StoredRow b = ok_row(k4096, "map=coalesced,bx=64,by=4", 90.0);
    s.insert(a);
    s.insert(b);
    s.set_winner(a.key(), kAllFamilies, a.config_name, a.id, "test winner");
    // 1024^3: measurements only: the fastest ok row; a failed row does not count.
    s.insert(ok_row(k1024, "map=coalesced,bx=16,by=16", 50.0));
    s.insert(ok_row(k1024, "map=coalesced,bx=128,by=2", 40.0));
    StoredRow failed = ok_row(k1024, "map=uncoalesced,bx=32,by=8", 1.0);
    failed.m.status = Status::verify_failed;
    failed.m.message = "wrong";
    s.insert(failed);
    // 2048^3: a per-family winner only.
    StoredRow c = ok_row(k2048, "map=coalesced,bx=32,by=4", 300.0);
    s.insert(c);
    s.insert(ok_row(k2048, "map=coalesced,bx=8,by=32", 250.0));
    s.set_winner(c.key(), "naive", c.config_name, c.id);
    // 512^3: replay rows only, with a winner among them.
    StoredRow r = ok_row(k512, "map=coalesced,bx=256,by=1", 5.0, true);
    s.insert(r);
    s.set_winner(r.key(), kAllFamilies, r.config_name, r.id);
    // 768^3: the winner is a replay row, a real measurement exists.
    StoredRow r2 = ok_row(k768, "map=coalesced,bx=64,by=8", 7.0, true);
    s.insert(r2);
    s.set_winner(r2.key(), kAllFamilies, r2.config_name, r2.id);
    s.insert(ok_row(k768, "map=coalesced,bx=32,by=16", 9.0));
    // Another device and another dtype/layout.
    s.insert(ok_row(k4096, "map=coalesced,bx=16,by=8", 120.0, false, "Other GPU"));
    s.insert(ok_row(f16, "map=coalesced,bx=32,by=8", 110.0));
  }
};

}  // namespace

TEST_CASE("export: recorded winners first, then family winners, then the best measurement; replay left out",
          "[table]") {
  SampleStore ss;
  Store store = Store::open_readonly(ss.path);
  std::vector<std::string> notes;
  LookupTable t = table_from_store(store, export_options(), &notes);

  // 4096 f32 (two devices), 1024, 2048, 768, 4096 f16; 512 has replay rows only.
  REQUIRE(t.entries.size() == 6);
  REQUIRE(entry_for(t, 512, 512, 512) == nullptr);

  const TableEntry* e4096 = entry_for(t, 4096, 4096, 4096);
  REQUIRE(e4096);
  CHECK(e4096->origin == "winner");
  CHECK(e4096->params == "map=coalesced,bx=32,by=8");
  CHECK(e4096->time_us == 100.0);
  CHECK(e4096->tflops == Approx(2.0 * 4096.0 * 4096 * 4096 / 100e-6 / 1e12));
  CHECK(e4096->config == naive_space(ss.k4096).name(naive_config(ss.k4096, "map=coalesced,bx=32,by=8")));
  CHECK(e4096->family == "naive");
  CHECK(e4096->family_version == naive().version());
  CHECK(e4096->source_hash == hex64(naive().source_hash()));
  CHECK(e4096->driver == "580.95.05");
  CHECK(e4096->nvrtc == "13.0");
  CHECK(e4096->cuda_runtime == "13.0");
  CHECK(e4096->arch == "sm_90");
  CHECK(e4096->gemmtune_version == kGemmtuneVersion);
  CHECK(!e4096->measured_at.empty());
  CHECK(!e4096->row_uuid.empty());
  CHECK_FALSE(e4096->replay);

  const TableEntry* e1024 = entry_for(t, 1024, 1024, 1024);
  REQUIRE(e1024);
  CHECK(e1024->origin == "best measured");
  CHECK(e1024->params == "map=coalesced,bx=128,by=2");
  CHECK(e1024->time_us == 40.0);

  const TableEntry* e2048 = entry_for(t, 2048, 2048, 2048);
  REQUIRE(e2048);
  CHECK(e2048->origin == "family winner");
  CHECK(e2048->params == "map=coalesced,bx=32,by=4");

  const TableEntry* e768 = entry_for(t, 768, 768, 768);
  REQUIRE(e768);
  CHECK(e768->origin == "best measured");
  CHECK(e768->params == "map=coalesced,bx=32,by=16");
  CHECK_FALSE(e768->replay);
  // One note about replays, counted in problems (keys): 512 had replays only and is left out;
  // 768 had replays too and is served by its GPU measurement.
  size_t replay_notes = 0;
  for (auto& n : notes)
    if (n.find("--include-replay") != std::string::npos) {
      ++replay_notes;
      CHECK_THAT(n, Catch::Contains("1 problem left out") && Catch::Contains("1 problem served by GPU measurements"));
    }
  CHECK(replay_notes == 1);
  ExportSummary summary;
  table_from_store(store, export_options(), nullptr, &summary);
  CHECK(summary.replay_left_out == 1);
  CHECK(summary.replay_passed_over == 1);

  const TableEntry* other = entry_for(t, 4096, 4096, 4096, "Other GPU");
  REQUIRE(other);
  CHECK(other->params == "map=coalesced,bx=16,by=8");

  SECTION("--include-replay keeps replay winners") {
    LookupTable r = table_from_store(store, export_options(true));
    REQUIRE(r.entries.size() == 7);
    const TableEntry* e512 = entry_for(r, 512, 512, 512);
    REQUIRE(e512);
    CHECK(e512->replay);
    CHECK(e512->origin == "winner");
    const TableEntry* e768r = entry_for(r, 768, 768, 768);
    REQUIRE(e768r);
    CHECK(e768r->replay);
    CHECK(e768r->params == "map=coalesced,bx=64,by=8");
  }
  SECTION("--device keeps one device") {
    ExportOptions o = export_options();
    o.device = "Other GPU";
    LookupTable d = table_from_store(store, o);
    REQUIRE(d.entries.size() == 1);
    CHECK(d.entries[0].key.device_name == "Other GPU");
  }
  SECTION("without plugins the parameters stay empty, and that is said") {
    ExportOptions o;
    o.params_of = [](const StoredRow&) { return std::optional<std::string>(); };
    std::vector<std::string> n2;
    LookupTable d = table_from_store(store, o, &n2);
    for (auto& e : d.entries) CHECK(e.params.empty());
    bool said = false;
    for (auto& n : n2) said |= n.find("without parameter assignments") != std::string::npos;
    CHECK(said);
  }
}

TEST_CASE("TOML and JSON tables round-trip exactly", "[table]") {
  SampleStore ss;
  Store store = Store::open_readonly(ss.path);
  LookupTable t = table_from_store(store, export_options(true));
  // Awkward numbers and strings must come back bit for bit.
  TableEntry odd = t.entries.front();
  odd.key.m = 3;
  odd.key.n = 2147483647;
  odd.key.k = 1;
  odd.key.align = 2;
  odd.key.device_name = "Quote \" backslash \\ tab \t newline \n unicode \xc3\xa9 */ end";
  odd.params = "a=\"b\",c=d";
  odd.time_us = 0.1 + 0.2;
  odd.tflops = 1e-7;
  odd.library = "cublasLt 130000 (13.0.0) from /usr/lib/x\n";
  odd.transform = Transform::pad_swap;
  t.entries.push_back(odd);
  TableEntry big = odd;
  big.transform = Transform::swap;
  big.key.k = 7;
  big.time_us = 123456789.123456789;
  big.tflops = 5e300;
  t.entries.push_back(big);
  t.sort();

  for (TableFormat f : {TableFormat::toml, TableFormat::json}) {
    INFO(to_string(f));
    std::string text = t.serialize(f);
    LookupTable back = LookupTable::parse(text, f, "mem");
    CHECK(back.info == t.info);
    REQUIRE(back.entries.size() == t.entries.size());
    for (size_t i = 0; i < t.entries.size(); ++i) {
      INFO(t.entries[i].text());
      CHECK(back.entries[i] == t.entries[i]);
    }
    // And through a file whose extension says nothing: detected by content.
    test::TempDir d;
    fs::path file = d.path / "table.txt";
    t.save(file, f);
    LookupTable loaded = LookupTable::load(file);
    CHECK(loaded.entries == t.entries);
    CHECK(loaded.origin == file.string());
    // Written again, the same text.
    CHECK(loaded.serialize(f) == text);
  }
  SECTION("an empty table is a valid table") {
    LookupTable empty;
    for (TableFormat f : {TableFormat::toml, TableFormat::json}) {
      LookupTable back = LookupTable::parse(empty.serialize(f), f, "mem");
      CHECK(back.entries.empty());
    }
  }
}

TEST_CASE("CSV export: a header and RFC 4180 quoting", "[table]") {
  LookupTable t;
  TableEntry e;
  e.key = ResultKey{"GPU, \"the\" one", 64, 32, 16, DType::bf16, DType::f32, Layout::tn, 8, DType::bf16};
  e.family = "naive";
  e.config = "naive_mapcoalesced_bx32_by8";
  e.params = "map=coalesced,bx=32,by=8";
  e.time_us = 12.5;
  e.tflops = 0.25;
  e.library = "line1\nline2";
  t.entries.push_back(e);
  std::string csv = t.serialize(TableFormat::csv);
  std::string header = csv.substr(0, csv.find("\r\n"));
  CHECK(header.rfind("device,m,n,k,dtype,b_dtype,out_dtype,layout,align,scale,constant,family,config,params,transform,time_us,"
                     "tflops,",
                     0) == 0);
  std::string row = csv.substr(header.size() + 2);
  CHECK(row.rfind("\"GPU, \"\"the\"\" one\",64,32,16,bf16,bf16,f32,tn,8,none,,naive,naive_mapcoalesced_bx32_by8,"
                  "\"map=coalesced,bx=32,by=8\",none,12.5,0.25,",
                  0) == 0);
  CHECK(row.find("\"line1\nline2\"") != std::string::npos);
  CHECK_THROWS_WITH(LookupTable::parse(csv, TableFormat::csv, "t.csv"), Catch::Contains("cannot be read back"));
}

namespace {
bool have_gxx() { return test::run_command("g++ --version").exit_code == 0; }
}  // namespace

TEST_CASE("C++ header: compiles on its own, escapes every name, and can be searched at compile time", "[table]") {
  if (!have_gxx()) {
    WARN("SKIPPED (no g++ on PATH): the header cannot be compiled here");
    return;
  }
  test::TempDir d;
  LookupTable t;
  auto make = [](std::string device, std::string config, int64_t m, double us) {
    TableEntry e;
    e.key = ResultKey{std::move(device), m, 256, 128, DType::f32, DType::f32, Layout::nn, 16};
    e.family = "naive";
    e.config = std::move(config);
    e.params = "map=coalesced,bx=32,by=8";
    e.time_us = us;
    e.tflops = 2.0 * double(m) * 256 * 128 / (us * 1e-6) / 1e12;
    e.measured_at = "2026-11-29T12:00:00.000000Z";
    return e;
  };
  // Names built to break out of a string or a comment in every way there is.
  const std::string evil_device = "Evil \"GPU\" \\ */ /* // ?\?= ?\?/\nnext line\r\t\x01 \xc3\xa9 end\\";
  const std::string evil_config = "naive_\"); int injected = 1; //*/\\\n#error broken\\";
  t.entries.push_back(make("NVIDIA H200", "naive_mapcoalesced_bx32_by8", 256, 10.5));
  t.entries.push_back(make(evil_device, evil_config, 512, 20.25));
  t.entries.push_back(make("NVIDIA H200", "naive_mapcoalesced_bx64_by4", 4096, 300));
  t.entries.back().transform = Transform::pad;  // the header says what a program must do for it
  t.info.generated_at = "now */ \n #error in a comment";
  t.info.source = "/tmp/evil\\\n#error spliced";
  t.sort();
  for (auto& e : t.entries)  // evidence that the 4096-row entry answers shapes up to 0.5 away on the H200
    if (e.key.m == 4096) t.evidence.push_back({e.key, e.family, e.config, e.transform, Rule::nearest, 0.5, 1, 0.99, 0.01, ""});
  fs::path header = d.path / "table.hpp";
  t.save(header, TableFormat::cpp);
  std::string text = test::read_file(header);
  CHECK(text.find("#error") != std::string::npos);  // present, but only inside strings and comments

  // On its own: a translation unit that includes nothing else.
  auto syntax_only = [](const fs::path& h) {
    return test::run_command(fmt::format(
        "printf '#include \"{}\"\\n' | g++ -std=c++17 -fsyntax-only -Wall -Wextra -pedantic -Werror -I '{}' -x c++ -",
        h.filename().string(), h.parent_path().string()));
  };
  auto r = syntax_only(header);
  INFO(r.out);
  REQUIRE(r.exit_code == 0);

  // A program that searches the table at compile time and prints every string byte for byte.
  fs::path prog = d.path / "main.cpp";
  test::write_file(prog, R"(#include "table.hpp"
#include <cstdio>
using namespace gemmtune_table;
static_assert(kEntries.size() == 3, "three entries");
static_assert(kEvidence.size() == 1, "one evidence");
static_assert(find_exact("", 4096, 256, 128, "f32", "f32", "nn", 16) != nullptr, "exact key found");
static_assert(find_exact("NVIDIA H200", 4096, 256, 128, "f32", "f32", "nn", 16)->time_us == 300, "its time");
static_assert(find_exact("NVIDIA H200", 4096, 256, 128, "f32", "f32", "nt", 16) == nullptr, "other layout");
static_assert(find_exact("", 4096, 256, 128, "f32", "f32", "nn", 8) == nullptr, "other alignment");
static_assert(find_exact("", 4096, 256, 128, "f32", "f32", "nn", 16)->transform == "pad", "its transform");
static_assert(find_exact("", 256, 256, 128, "f32", "f32", "nn", 16)->transform == "none", "none");
static_assert(padded_ld(4097, 2) == 4104 && padded_ld(4104, 2) == 4104 && padded_ld(5, 4) == 8, "16-byte rows");
int main() {
  for (const Entry& e : kEntries) {
    std::fwrite(e.device.data(), 1, e.device.size(), stdout); std::fputc(0, stdout);
    std::fwrite(e.config.data(), 1, e.config.size(), stdout); std::fputc(0, stdout);
  }
  // Backed by kEvidence on the H200 (0.312 away, within 0.5); not on another device.
  const Entry* n = find_nearest("NVIDIA H200", 3000, 250, 130, "f32", "f32", "nn", 16);
  std::printf("nearest=%lld", n ? (long long)n->m : -1LL);
  auto m_of = [](const Entry* e) { return e ? (long long)e->m : -1LL; };
  // Near 256x256x128, which has no evidence: nothing, unless asked for unbacked.
  std::printf(" unbacked=%lld/%lld", m_of(find_nearest("NVIDIA H200", 200, 256, 128, "f32", "f32", "nn", 16)),
              m_of(find_nearest("NVIDIA H200", 200, 256, 128, "f32", "f32", "nn", 16, 1.3862943611198906, 16, {},
                                "none", {}, true)));
  // 8 rows: beyond the distance limit (ln 32) of 256x256x128, and of the decode regime.
  auto any = [](std::int64_t m, std::int64_t n, double dist, std::int64_t decode) {
    return find_nearest("NVIDIA H200", m, n, 128, "f32", "f32", "nn", 16, dist, decode, {}, "none", {}, true);
  };
  std::printf(" far=%lld", m_of(any(8, 256, 1.3862943611198906, 16)));
  std::printf(" regime=%lld", m_of(any(8, 256, 1e300, 16)));
  std::printf(" one=%lld", m_of(any(8, 256, 1e300, 0)));
  // With M <= 512 as decode, the entries of 256 and 512 rows are decode entries: they serve their own N only.
  std::printf(" decode_n=%lld/%lld", m_of(any(8, 256, 1e300, 512)), m_of(any(8, 300, 1e300, 512)));
}
)");
  fs::path exe = d.path / "main";
  r = test::run_command(fmt::format("g++ -std=c++17 -Wall -Wextra -Werror -o '{}' '{}'", exe.string(), prog.string()));
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  r = test::run_command(fmt::format("'{}'", exe.string()));
  REQUIRE(r.exit_code == 0);
  std::string expect;
  for (auto& e : t.entries) expect += e.key.device_name + '\0' + e.config + '\0';
  expect += "nearest=4096 unbacked=-1/256 far=-1 regime=-1 one=256 decode_n=256/-1";
  CHECK(r.out == expect);

  SECTION("an empty table and another namespace") {
    LookupTable empty;
    fs::path h2 = d.path / "empty.hpp";
    empty.save(h2, TableFormat::cpp, "my::tables");
    auto r2 = syntax_only(h2);
    INFO(r2.out);
    CHECK(r2.exit_code == 0);
    CHECK(test::read_file(h2).find("namespace my::tables {") != std::string::npos);
    CHECK_THROWS_AS(empty.serialize(TableFormat::cpp, "bad name"), InputError);
    CHECK_THROWS_AS(empty.serialize(TableFormat::cpp, "int"), InputError);
  }
}

TEST_CASE("escaping helpers", "[table]") {
  CHECK(cpp_string_body("a\"b\\c\n?") == "a\\042b\\134c\\012\\077");
  CHECK(cpp_string_body("\x01" "7") == "\\0017");  // never runs on into the next digit
  std::string c = cpp_comment_text("x */ y /* z \\ \n w ?\?/");
  CHECK(c.find("*/") == std::string::npos);
  CHECK(c.find("/*") == std::string::npos);
  CHECK(c.find('\n') == std::string::npos);
  CHECK(c.find("??") == std::string::npos);
  CHECK(c.back() != '\\');
}

namespace {

// A table of naive configs tuned on a grid of shapes; each entry's config is distinct, so
// the chosen entry can be told from its config.
LookupTable grid_table() {
  LookupTable t;
  t.origin = "grid.json";
  const char* configs[] = {"bx=8,by=4",  "bx=16,by=2", "bx=16,by=4", "bx=16,by=8", "bx=32,by=1", "bx=32,by=2",
                           "bx=32,by=4", "bx=32,by=8", "bx=64,by=1", "bx=64,by=2", "bx=64,by=4", "bx=128,by=1",
                           "bx=128,by=2", "bx=256,by=1", "bx=8,by=8", "bx=8,by=16", "bx=8,by=32", "bx=16,by=16",
                           "bx=32,by=16", "bx=64,by=8", "bx=128,by=4", "bx=256,by=2", "bx=256,by=4", "bx=32,by=32",
                           "bx=16,by=32", "bx=64,by=16", "bx=128,by=8"};
  size_t i = 0;
  for (int64_t m : {256, 1024, 4096})
    for (int64_t n : {256, 1024, 4096})
      for (int64_t k : {256, 1024, 4096}) {
        Problem p = Problem::make(m, n, k, DType::f32, DType::f32, Layout::nn);
        Space s = naive_space(p);
        Config c = naive_config(p, configs[i++]);
        TableEntry e;
        e.key = ResultKey::of(kDevice, p);
        e.family = "naive";
        e.family_version = naive().version();
        e.config = s.name(c);
        e.params = s.assignments(c);
        e.time_us = double(m) * double(n) * double(k) / 1e6;
        e.tflops = 2.0 * double(m) * double(n) * double(k) / (e.time_us * 1e-6) / 1e12;
        t.entries.push_back(e);
      }
  t.sort();
  return t;
}

// The grid table with the naive plugin's checks, default and transfer, as gemmtune lookup uses them.
struct GridLookup {
  LookupTable t = grid_table();
  gt_device lim = arch_limits("sm_90");
  const PluginRegistry& reg = naive_only();
  CanImplementFn can = plugin_can_implement(reg, lim);
  DefaultFn def = plugin_default(reg, lim, "naive");
  TransferFn tr = plugin_transfer(reg, lim);
};

Problem at(int64_t m, int64_t n, int64_t k) { return Problem::make(m, n, k, DType::f32, DType::f32, Layout::nn); }

}  // namespace

TEST_CASE("lookup: exact, nearest in log space on held-out shapes, default", "[table]") {
  GridLookup g;
  LookupTable& t = g.t;
  const PluginRegistry& reg = g.reg;
  gt_device lim = g.lim;
  const CanImplementFn& can = g.can;
  const DefaultFn& def = g.def;
  auto config_of = [&](int64_t m, int64_t n, int64_t k) { return entry_for(t, m, n, k)->config; };

  SECTION("exact") {
    LookupResult r = t.lookup(at(1024, 256, 4096), std::string(kDevice), can, def);
    CHECK(r.kind == MatchKind::exact);
    CHECK(r.how == "exact");
    CHECK(r.config == config_of(1024, 256, 4096));
    CHECK(r.distance == 0);
    REQUIRE(r.entry);
    CHECK(r.entry->key.m == 1024);
  }
  SECTION("nearest, worked by hand") {
    // ln(1100/1024)=0.072, ln(1000/1024)=-0.024, ln(900/1024)=-0.129: 1024^3 is nearest.
    LookupResult r = t.lookup(at(1100, 1000, 900), std::string(kDevice), can, def);
    CHECK(r.kind == MatchKind::nearest);
    CHECK(r.how == "nearest (from 1024x1024x1024)");
    CHECK(r.config == config_of(1024, 1024, 1024));
    CHECK(r.distance == Approx(shape_distance(1100, 1000, 900, 1024, 1024, 1024)));
    // 3000 is nearer 4096 than 1024 in log space (0.31 against 1.07); 300 nearer 256.
    r = t.lookup(at(3000, 300, 2100), std::string(kDevice), can, def);
    CHECK(r.how == "nearest (from 4096x256x4096)");
    // 2048 lies exactly between 1024 and 4096: the faster (smaller) entry wins the tie.
    r = t.lookup(at(2048, 256, 256), std::string(kDevice), can, def);
    CHECK(r.how == "nearest (from 1024x256x256)");
  }
  SECTION("nearest agrees with a brute-force search on random held-out shapes") {
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> ld(std::log(16.0), std::log(16384.0));
    for (int i = 0; i < 200; ++i) {
      int64_t m = int64_t(std::exp(ld(rng))), n = int64_t(std::exp(ld(rng))), k = int64_t(std::exp(ld(rng)));
      Problem p = at(m, n, k);
      p.align = 16;  // the grid's class, whatever these leading dimensions would say
      LookupResult r = t.lookup(p, std::string(kDevice), can, def);
      double best = 1e300;
      for (auto& e : t.entries) best = std::min(best, shape_distance(m, n, k, e.key.m, e.key.n, e.key.k));
      INFO(m << "x" << n << "x" << k << " -> " << r.how);
      REQUIRE(r.kind != MatchKind::fallback);
      CHECK(r.distance == Approx(best).margin(1e-12));
    }
  }
  SECTION("an entry whose config cannot run the problem is passed over, with the reason") {
    LookupTable t2 = t;
    // The nearest entry to 1000^3 names 8192 threads a block, more than sm_90 allows.
    for (auto& e : t2.entries)
      if (e.key.m == 1024 && e.key.n == 1024 && e.key.k == 1024) {
        Problem p = at(1024, 1024, 1024);
        Config c = naive_config(p, "bx=256,by=32");
        e.config = naive_space(p).name(c);
        e.params = naive_space(p).assignments(c);
      }
    LookupResult r = t2.lookup(at(1000, 1000, 1000), std::string(kDevice), can, def);
    CHECK(r.kind == MatchKind::nearest);
    CHECK(r.how != "nearest (from 1024x1024x1024)");
    REQUIRE(r.passed_over.size() == 1);
    CHECK(r.passed_over[0].first.find("1024x1024x1024") != std::string::npos);
    CHECK(r.passed_over[0].second.find("threads") != std::string::npos);
    // A caller's own check counts the same way.
    auto refuse_all = [](const TableEntry&, const Problem&) { return std::optional<std::string>("refused by the test"); };
    r = t.lookup(at(1000, 1000, 1000), std::string(kDevice), refuse_all, def);
    CHECK(r.kind == MatchKind::fallback);
    CHECK(r.passed_over.size() == t.entries.size());
  }
  SECTION("default: another dtype, layout or alignment class") {
    Problem p16 = Problem::make(1024, 1024, 1024, DType::f16, DType::f16, Layout::nn);
    LookupResult r = t.lookup(p16, std::string(kDevice), can, def);
    CHECK(r.kind == MatchKind::fallback);
    CHECK(r.how == "default (naive's default config)");
    CHECK(r.config == naive_space(p16).name(naive_space(p16).default_config()));
    CHECK_FALSE(r.entry);
    Problem pnt = Problem::make(1024, 1024, 1024, DType::f32, DType::f32, Layout::nt);
    CHECK(t.lookup(pnt, std::string(kDevice), can, def).kind == MatchKind::fallback);
    Problem pa = at(1024, 1024, 1024);
    pa.align = 4;  // e.g. a pointer offset by one float
    CHECK(t.lookup(pa, std::string(kDevice), can, def).kind == MatchKind::fallback);
    // Without a default there is nothing to run: said, with the reason.
    CHECK_THROWS_WITH(t.lookup(p16, std::string(kDevice), can), Catch::Contains("nothing to run") &&
                                                                       Catch::Contains("no entry for f16>f16 nn"));
    // A default family that is not loaded is no default.
    auto no_def = plugin_default(reg, lim, "no_such_family");
    CHECK_THROWS_WITH(t.lookup(p16, std::string(kDevice), can, no_def), Catch::Contains("no_such_family"));
  }
  SECTION("devices") {
    LookupTable t2 = t;
    TableEntry other = *entry_for(t, 1024, 1024, 1024);
    other.key.device_name = "Other GPU";
    Problem p = at(1024, 1024, 1024);
    Config c = naive_config(p, "map=uncoalesced,bx=32,by=8");
    other.config = naive_space(p).name(c);
    other.time_us = 1;  // faster than every other entry
    t2.entries.push_back(other);
    t2.sort();
    CHECK(t2.lookup(p, std::string(kDevice), can, def).config == config_of(1024, 1024, 1024));
    CHECK(t2.lookup(p, std::string("Other GPU"), can, def).config == other.config);
    // Only Other GPU's entry serves Other GPU, even for a shape the test GPU has exactly.
    CHECK(t2.lookup(at(256, 256, 256), std::string("Other GPU"), can, def).how == "nearest (from 1024x1024x1024)");
    // A device the table does not know: every entry counts, and that is said.
    LookupResult r = t2.lookup(p, std::string("Unknown GPU"), can, def);
    CHECK(r.config == other.config);
    CHECK(r.device_note.find("no entries for 'Unknown GPU'") != std::string::npos);
    // No device: every entry; at equal distance the faster.
    CHECK(t2.lookup(p, std::nullopt, can, def).config == other.config);
  }
}

TEST_CASE("lookup: the transfer hook; a source family's default winner is not transferred", "[table]") {
  GridLookup g;
  const LookupTable& t = g.t;
  const CanImplementFn& can = g.can;
  const DefaultFn& def = g.def;
  const TransferFn& tr = g.tr;

  SECTION("plugin_transfer leaves source families' entries as they are") {
    // The grid's 256x4096x1024 entry is naive's default there (bx=32, by=8), but naive is a
    // source family: its default is a fixed guess, so the entry's config carries over.
    Problem near_default = at(256, 4096, 1100);
    REQUIRE(entry_for(t, 256, 4096, 1024)->config ==
            naive_space(near_default).name(naive_space(near_default).default_config()));
    LookupResult r = t.lookup(near_default, std::string(kDevice), can, def, tr);
    CHECK(r.kind == MatchKind::nearest);
    CHECK(r.transferred.empty());
    CHECK(r.how == "nearest (from 256x4096x1024)");
    r = t.lookup(at(1100, 1000, 900), std::string(kDevice), can, def, tr);
    CHECK(r.transferred.empty());
    CHECK(r.config == entry_for(t, 1024, 1024, 1024)->config);
  }
  SECTION("the hook: asked for nearest entries only, nearest first; nullopt leaves the entry's config") {
    std::vector<std::string> asked;
    TransferFn spy = [&](const TableEntry& e, const Problem&) -> std::optional<DefaultChoice> {
      asked.push_back(e.shape());
      if (e.key.m == 1024 && e.key.n == 1024 && e.key.k == 1024) return std::nullopt;
      return DefaultChoice{"naive", "spy_config", "", "the spy's choice", false, ""};
    };
    LookupResult r = t.lookup(at(1100, 1000, 900), std::string(kDevice), can, def, spy);
    CHECK(asked == std::vector<std::string>{"1024x1024x1024"});
    CHECK(r.config == entry_for(t, 1024, 1024, 1024)->config);
    CHECK(r.transferred.empty());
    asked.clear();
    r = t.lookup(at(1024, 1024, 1024), std::string(kDevice), can, def, spy);
    CHECK(asked.empty());
    CHECK(r.kind == MatchKind::exact);
    // An entry can_implement refuses can still transfer: the choice is made for this problem.
    auto refuse_all = [](const TableEntry&, const Problem&) { return std::optional<std::string>("refused"); };
    r = t.lookup(at(300, 300, 300), std::string(kDevice), refuse_all, def, spy);
    CHECK(r.config == "spy_config");
    CHECK(r.transferred == "the spy's choice");
    CHECK(r.how == "nearest (from 256x256x256, whose winner was the spy's choice, so the spy's choice for this shape)");
    CHECK(asked == std::vector<std::string>{"256x256x256"});
  }
}

TEST_CASE("a table naming a config its family no longer has is reported, not crashed on", "[table]") {
  test::TempDir d;
  LookupTable t = grid_table();
  // bx=48 was never one of naive's values: as if the plugin dropped it since the export.
  for (auto& e : t.entries)
    if (e.key.m == 4096 && e.key.n == 4096 && e.key.k == 4096) {
      e.config = "naive_mapcoalesced_bx48_by8";
      e.family_version = "0.9";
    }
  fs::path file = d.path / "stale.json";
  t.save(file, TableFormat::json);
  LookupTable loaded = LookupTable::load(file);  // reading it is fine: the plugins are not asked
  gt_device lim = arch_limits("sm_90");
  auto can = plugin_can_implement(naive_only(), lim);
  auto def = plugin_default(naive_only(), lim);
  // The message names the table file, the entry, the config and the versions.
  auto stale_reported = [&](const Problem& p) {
    try {
      loaded.lookup(p, std::string(kDevice), can, def);
    } catch (const InputError& e) {
      std::string what = e.what();
      INFO(what);
      CHECK(what.find(file.string()) != std::string::npos);
      CHECK(what.find("entries[26]") != std::string::npos);
      CHECK(what.find("naive_mapcoalesced_bx48_by8") != std::string::npos);
      CHECK(what.find("no longer exists") != std::string::npos);
      CHECK(what.find("version 0.9") != std::string::npos);
      return true;
    }
    return false;
  };
  CHECK(stale_reported(Problem::make(4096, 4096, 4096, DType::f32, DType::f32, Layout::nn)));
  // As the nearest entry too.
  CHECK(stale_reported(Problem::make(4000, 4000, 4000, DType::f32, DType::f32, Layout::nn)));
  // Shapes nearer other entries never look at it.
  CHECK(loaded.lookup(Problem::make(300, 300, 300, DType::f32, DType::f32, Layout::nn), std::string(kDevice), can, def)
            .kind == MatchKind::nearest);
  // Asked for another device, the entry is another device's: a space can depend on the device
  // (cuBLASLt's does), so it is passed over with the reason and the next entry answers.
  LookupResult other = loaded.lookup(Problem::make(4096, 4096, 4096, DType::f32, DType::f32, Layout::nn),
                                     std::string("NVIDIA Other GPU"), can, def);
  CHECK(other.kind == MatchKind::nearest);
  REQUIRE(other.entry);
  CHECK(other.entry->key.m != 4096);
  REQUIRE_FALSE(other.passed_over.empty());
  CHECK(other.passed_over[0].second.find("measured on " + std::string(kDevice) +
                                         ", its config is not in the space of NVIDIA Other GPU here") != std::string::npos);
  CHECK(other.passed_over[0].second.find("naive_mapcoalesced_bx48_by8") != std::string::npos);
  // The command line says the same, with exit code 2.
  auto r = test::run_command(fmt::format("'{}' --plugin-dir '{}' lookup --table '{}' --device '{}' --shape 4096x4096x4096",
                                         test::gemmtune_binary().string(), test::naive_only_dir().string(), file.string(),
                                         kDevice));
  CHECK(r.exit_code == 2);
  CHECK(r.out.find("no longer exists") != std::string::npos);
  CHECK(r.out.find("entries[26]") != std::string::npos);
}

TEST_CASE("bad table files: InputError naming the file, the line or entry and the field", "[table]") {
  test::TempDir d;
  const std::string good_entry =
      "device = \"G\"\nm = 64\nn = 64\nk = 64\ndtype = \"f32\"\nout_dtype = \"f32\"\nlayout = \"nn\"\nalign = 16\n"
      "family = \"naive\"\nconfig = \"naive_mapcoalesced_bx32_by8\"\ntime_us = 1.5\n";
  auto toml_with = [&](const std::string& from, const std::string& to) {
    std::string e = good_entry;
    if (!from.empty()) {
      auto pos = e.find(from);
      REQUIRE(pos != std::string::npos);
      e.replace(pos, from.size(), to);
    }
    return "gemmtune_table = 1\n\n[[entries]]\n" + e;
  };
  struct Case {
    std::string name, file, content;
    std::vector<std::string> expect;
  };
  const std::string json_good =
      R"({"gemmtune_table": 1, "entries": [{"device": "G", "m": 64, "n": 64, "k": 64, "dtype": "f32", "out_dtype": "f32",
 "layout": "nn", "align": 16, "family": "naive", "config": "naive_mapcoalesced_bx32_by8", "time_us": 1.5}]})";
  auto json_with = [&](const std::string& from, const std::string& to) {
    std::string e = json_good;
    auto pos = e.find(from);
    REQUIRE(pos != std::string::npos);
    e.replace(pos, from.size(), to);
    return e;
  };
  std::vector<Case> cases = {
      {"missing field", "a.toml", toml_with("k = 64\n", ""), {"entries[0]", "(line 3)", "field 'k'", "missing"}},
      {"wrong type", "a.toml", toml_with("m = 64", "m = \"64\""), {"(line 5)", "field 'm'", "expected an integer"}},
      {"unknown dtype", "a.toml", toml_with("dtype = \"f32\"", "dtype = \"f64\""),
       {"(line 8)", "field 'dtype'", "unknown dtype 'f64'"}},
      {"tf32 output", "a.toml", toml_with("out_dtype = \"f32\"", "out_dtype = \"tf32\""), {"field 'out_dtype'", "tf32"}},
      {"unknown layout", "a.toml", toml_with("layout = \"nn\"", "layout = \"nx\""), {"field 'layout'", "'nx'"}},
      {"bad alignment", "a.toml", toml_with("align = 16", "align = 3"), {"field 'align'", "not a power of two"}},
      {"zero size", "a.toml", toml_with("m = 64", "m = 0"), {"field 'm'", "out of range"}},
      {"negative time", "a.toml", toml_with("time_us = 1.5", "time_us = -1.0"), {"field 'time_us'", "not a positive"}},
      {"infinite time", "a.toml", toml_with("time_us = 1.5", "time_us = inf"), {"field 'time_us'", "finite"}},
      {"unknown field", "a.toml", toml_with("time_us", "tim_us"), {"field 'tim_us'", "unknown field"}},
      {"config of another family", "a.toml", toml_with("config = \"naive_", "config = \"wmma_"),
       {"field 'config'", "not a config name of family 'naive'"}},
      {"bad family name", "a.toml", toml_with("family = \"naive\"", "family = \"Naive!\""), {"field 'family'"}},
      {"unknown transform", "a.toml", toml_with("time_us = 1.5", "transform = \"pad2\"\ntime_us = 1.5"),
       {"(line 14)", "field 'transform'", "unknown transform 'pad2' (expected none, pad, round, swap or pad+swap)"}},
      {"transform in the config name", "a.toml", toml_with("bx32_by8\"", "bx32_by8+pad\""),
       {"field 'config'", "a transform is its own field ('transform')"}},
      {"TOML syntax", "a.toml", toml_with("n = 64", "n = "), {"a.toml:6:", "not valid TOML"}},
      {"newer format", "a.toml", fmt::format("gemmtune_table = {}\n", kTableFormatVersion + 1),
       {"gemmtune_table", "newer gemmtune"}},
      {"not a table", "a.toml", "title = \"x\"\n", {"not a gemmtune table"}},
      {"entries not an array", "a.toml", "gemmtune_table = 1\nentries = 3\n", {"'entries'", "array"}},
      {"JSON syntax", "a.json", "{\"gemmtune_table\": 1,\n \"entries\": [ }", {"a.json:2:", "not valid JSON"}},
      {"JSON wrong type", "a.json", json_with(R"("device": "G")", R"("device": 7)"),
       {"entries[0]", "field 'device'", "expected a string, got an integer"}},
      {"JSON float size", "a.json", json_with(R"("m": 64)", R"("m": 64.5)"), {"field 'm'", "expected an integer"}},
      {"JSON null", "a.json", json_with(R"("time_us": 1.5)", R"("time_us": null)"), {"field 'time_us'", "null"}},
      {"JSON not an object", "a.json", "[1, 2]", {"expected a JSON object"}},
      {"empty file", "a.toml", "", {"is empty"}},
      {"CSV", "a.csv", "device,m\n", {"cannot be read back"}},
      {"duplicate key", "a.toml", toml_with("", "") + "\n[[entries]]\n" + good_entry, {"entries[0] and entries[1]"}},
  };
  for (auto& c : cases) {
    INFO(c.name << ":\n" << c.content);
    fs::path f = d.path / c.file;
    test::write_file(f, c.content);
    try {
      LookupTable::load(f);
      FAIL("loaded without an error");
    } catch (const InputError& e) {
      std::string what = e.what();
      INFO(what);
      CHECK(what.find(f.string()) != std::string::npos);
      for (auto& x : c.expect) CHECK(what.find(x) != std::string::npos);
    }
  }
  // The good ones load.
  test::write_file(d.path / "g.toml", toml_with("", ""));
  CHECK(LookupTable::load(d.path / "g.toml").entries.size() == 1);
  test::write_file(d.path / "g.json", json_good);
  LookupTable g = LookupTable::load(d.path / "g.json");
  REQUIRE(g.entries.size() == 1);
  CHECK(g.entries[0].tflops == Approx(2.0 * 64 * 64 * 64 / 1.5e-6 / 1e12));  // derived when missing
  CHECK(g.entries[0].transform == Transform::none);  // format version 1: no transform field, the plain problem
  CHECK_THROWS_WITH(LookupTable::load(d.path / "missing.json"), Catch::Contains("missing.json") &&
                                                                    Catch::Contains("cannot be read"));
  CHECK_THROWS_WITH(LookupTable::load(d.path), Catch::Contains("is a directory"));
}

TEST_CASE("gemmtune export and lookup", "[table][cli]") {
  SampleStore ss;
  test::TempDir d;
  std::string bin = fmt::format("'{}' --plugin-dir '{}' --db '{}'", test::gemmtune_binary().string(),
                                test::naive_only_dir().string(), ss.path.string());
  fs::path json_file = d.path / "table.json", toml_file = d.path / "table.toml";
  auto r = test::run_command(fmt::format("{} export -o '{}'", bin, json_file.string()));
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("exported 6 entries") != std::string::npos);
  CHECK(r.out.find("--include-replay") != std::string::npos);  // the note about the replay winners
  r = test::run_command(fmt::format("{} export --format toml -o '{}'", bin, toml_file.string()));
  REQUIRE(r.exit_code == 0);

  Store store = Store::open_readonly(ss.path);
  LookupTable direct = table_from_store(store, export_options());
  LookupTable from_json = LookupTable::load(json_file), from_toml = LookupTable::load(toml_file);
  CHECK(from_json.entries == direct.entries);
  CHECK(from_toml.entries == direct.entries);
  CHECK(from_json.info.source == ss.path.string());

  for (const char* f : {"csv", "cpp", "json", "toml"}) {
    r = test::run_command(fmt::format("{} export --format {}", bin, f));
    INFO(f << ": " << r.out);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("naive_mapcoalesced_bx32_by8") != std::string::npos);
  }
  r = test::run_command(fmt::format("{} export --format xml", bin));
  CHECK(r.exit_code == 2);
  r = test::run_command(fmt::format("'{}' --db '{}' export", test::gemmtune_binary().string(),
                                    (d.path / "nothing.db").string()));
  CHECK(r.exit_code == 2);
  CHECK(r.out.find("no results store") != std::string::npos);
  fs::path replay_file = d.path / "replay.json";
  r = test::run_command(fmt::format("{} export --include-replay --device '{}' -o '{}'", bin, kDevice,
                                    replay_file.string()));
  REQUIRE(r.exit_code == 0);
  auto j = json::parse(test::read_file(replay_file));
  CHECK(j["entries"].size() == 6);  // replay 512 in, Other GPU out

  std::string lookup = fmt::format("{} lookup --table '{}' --device '{}'", bin, json_file.string(), kDevice);
  r = test::run_command(lookup + " --shape 4096x4096x4096");
  INFO(r.out);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("match:  exact") != std::string::npos);
  // The family and the readable config; the canonical name is the JSON's.
  CHECK(r.out.find("naive  map=coalesced bx=32 by=8") != std::string::npos);
  CHECK(r.out.find("naive_mapcoalesced_bx32_by8") == std::string::npos);
  CHECK(json::parse(test::run_command(lookup + " --shape 4096x4096x4096 --json").out)["config"] ==
        "naive_mapcoalesced_bx32_by8");
  // The 4096^3 winner is naive's default; naive is a source family, so its config carries over.
  r = test::run_command(lookup + " --shape 4000x4100x3900 --json");
  REQUIRE(r.exit_code == 0);
  j = json::parse(r.out);
  CHECK(j["how"] == "nearest (from 4096x4096x4096)");
  CHECK(j["transferred"].is_null());
  CHECK(j["entry"]["m"] == 4096);
  // No entry serves bf16, cuBLASLt is not loaded, and no default family is named: nothing to
  // run, and why (never naive unless named).
  r = test::run_command(lookup + " --shape 4096x4096x4096 --dtype bf16");
  CHECK(r.exit_code == 2);
  CHECK(r.out.find("the cublaslt family is not loaded; no default family was named (--default-family)") !=
        std::string::npos);
  r = test::run_command(lookup + " --shape 4096x4096x4096 --dtype bf16 --default-family naive");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("default (naive's default config)") != std::string::npos);
  r = test::run_command(lookup + " --shape 1000x1000x1000 --json");
  REQUIRE(r.exit_code == 0);
  j = json::parse(r.out);
  CHECK(j["match"] == "nearest");
  CHECK(j["how"] == "nearest (from 1024x1024x1024)");
  CHECK(j["transferred"].is_null());
  CHECK(j["params"] == "map=coalesced,bx=128,by=2");
  CHECK(j["entry"]["time_us"] == 40.0);
  r = test::run_command(lookup + " --shape 4096x4096x4096 --align 4 --default-family naive --json");
  REQUIRE(r.exit_code == 0);
  CHECK(json::parse(r.out)["match"] == "default");
  r = test::run_command(lookup + " --shape 4096x4096x4097 --align 16");
  CHECK(r.exit_code == 2);  // the leading dimensions allow 4 bytes only
  r = test::run_command(fmt::format("{} lookup --table '{}' --shape 64x64x64", bin, (d.path / "none.json").string()));
  CHECK(r.exit_code == 2);
  CHECK(r.out.find("none.json") != std::string::npos);
  // Without a problem: what the table holds, one line per entry (one device's with --device).
  r = test::run_command(fmt::format("{} lookup --table '{}'", bin, toml_file.string()));
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find(toml_file.string() + ": 6 entries") != std::string::npos);
  CHECK(r.out.find("4096x4096x4096 f32>f32 nn a16") != std::string::npos);
  CHECK(r.out.find("map=coalesced bx=32 by=8") != std::string::npos);
  r = test::run_command(lookup + " --json");
  REQUIRE(r.exit_code == 0);
  j = json::parse(r.out);
  size_t mine = 0;
  for (auto& e : direct.entries) mine += e.key.device_name == kDevice;
  CHECK(mine == 5);
  CHECK(j["entries"].size() == mine);
  r = test::run_command(fmt::format("{} lookup --table '{}' --device 'No Such GPU'", bin, json_file.string()));
  CHECK(r.exit_code == 2);
  CHECK(r.out.find("no entries for 'No Such GPU'") != std::string::npos);
}

TEST_CASE("gemmtune export: a store of replays only is said to be one, not to hold nothing", "[table][cli]") {
  test::TempDir d;
  fs::path db = d.path / "results.db";
  {
    Store s = Store::open(db);
    Problem p512 = Problem::make(512, 512, 512, DType::f32, DType::f32, Layout::nn);
    Problem p768 = Problem::make(768, 768, 768, DType::f32, DType::f32, Layout::nn);
    // A recorded winner that is a replay row, and a key with replay measurements only.
    StoredRow w = ok_row(p512, "map=coalesced,bx=256,by=1", 5.0, true);
    s.insert(w);
    s.set_winner(w.key(), kAllFamilies, w.config_name, w.id, "replayed");
    s.insert(ok_row(p512, "map=coalesced,bx=32,by=8", 6.0, true));
    s.insert(ok_row(p768, "map=coalesced,bx=64,by=8", 7.0, true));
  }
  std::string bin = fmt::format("'{}' --plugin-dir '{}' --db '{}'", test::gemmtune_binary().string(),
                                test::naive_only_dir().string(), db.string());
  auto r = test::run_command(bin + " export --format json");
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("exported 0 entries") != std::string::npos);
  CHECK(r.out.find("holds no successful measurement") == std::string::npos);  // it holds two keys of them
  // One note, counted in problems: both keys are replays only.
  CHECK(r.out.find("the table is empty: every result in the store " + db.string() +
                   " (2 problems) was replayed from a recording") != std::string::npos);
  CHECK(r.out.find("--include-replay exports replayed results too") != std::string::npos);
  CHECK(r.out.find("winner(s)") == std::string::npos);
  // The same for the one device, and in the JSON summary.
  fs::path out = d.path / "t.json";
  r = test::run_command(fmt::format("{} --json export --device '{}' -o '{}'", bin, kDevice, out.string()));
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  json j = json::parse(r.out);
  CHECK(j["entries"] == 0);
  std::string notes = j["notes"].dump();
  CHECK(notes.find(fmt::format("for device '{}' (2 problems) was replayed", kDevice)) != std::string::npos);
  CHECK(j["replay_left_out"] == 2);
  CHECK(notes.find("holds no successful measurement") == std::string::npos);
  // With --include-replay they are exported; for a device with no rows at all, the store holds nothing.
  r = test::run_command(bin + " export --include-replay --format json");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("exported 2 entries") != std::string::npos);
  r = test::run_command(bin + " export --device 'Other GPU' --format json");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("holds no successful measurement for device 'Other GPU'") != std::string::npos);
  CHECK(r.out.find("replayed from a recording") == std::string::npos);
}
