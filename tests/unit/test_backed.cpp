// A table's answer is never slower than the default (issue 54): a transfer (nearest,
// transferred, adapted) answers only where evidence measured on the asked GPU model backs it, or
// an online check kept it; else the library's default. The rule's steps on synthetic tables
// (naive entries, whose spaces need no GPU; the stand-in cuBLASLt where the default must be
// named), the evidence made from validations, the online decisions file, the record of untuned
// problems and the job keys it writes, and the runtime's options. The flows through the command
// line (record -> tune -> merge -> export; validate -> export -> lookup) are test_backed_flow.cpp.
#include "gpu/device.hpp"
#include "table/evidence.hpp"
#include "gemmtune_runtime.h"
#include "gemmtune_runtime.hpp"
#include "job/job.hpp"
#include "table/online.hpp"
#include "table/table.hpp"
#include "test_util.hpp"
#include "table/untuned.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <sys/wait.h>
#include <unistd.h>

using namespace gt;
namespace fs = std::filesystem;

namespace {

const char* kDevice = "NVIDIA Test GPU";

const PluginRegistry& naive_only() {
  static PluginRegistry r = PluginRegistry::load({test::naive_only_dir()});
  return r;
}

Problem f32(int64_t m, int64_t n, int64_t k) { return Problem::make(m, n, k, DType::f32, DType::f32, Layout::nn); }

TableEntry naive_entry(const Problem& p, const std::string& assignments, double us, const std::string& device = kDevice) {
  const Family& fam = naive_only().get("naive");
  Space s = fam.space(p, arch_limits("sm_90"));
  Config c = test::parse_config(s, assignments);
  TableEntry e;
  e.key = ResultKey::of(device, p);
  e.family = fam.name();
  e.family_version = fam.version();
  e.config = s.name(c);
  e.params = s.assignments(c);
  e.time_us = us;
  e.tflops = p.flops() / (us * 1e-6) / 1e12;
  e.arch = "sm_90";
  return e;
}

TransferEvidence evidence(const TableEntry& e, double radius, Rule rule = Rule::nearest) {
  return {e.key, e.family, e.config, e.transform, rule, radius, 2, 0.97, 0.01, "2026-12-06T00:00:00Z"};
}

LookupHooks naive_hooks(CheckedFn checked = {}, const std::string& default_family = "naive") {
  gt_device lim = arch_limits("sm_90");
  return {plugin_can_implement(naive_only(), lim), plugin_default(naive_only(), lim, default_family),
          plugin_transfer(naive_only(), lim), plugin_adapt(naive_only(), lim), std::move(checked)};
}

LookupTable two_entries() {
  LookupTable t;
  t.entries = {naive_entry(f32(1024, 1024, 1024), "bx=16,by=16", 50),
               naive_entry(f32(2048, 1024, 1024), "bx=32,by=8", 90)};
  t.sort();
  return t;
}

LookupPolicy on(const std::string& device) {
  LookupPolicy p;
  p.device = device;
  p.arch = "sm_90";
  p.default_family = "naive";
  return p;
}

}  // namespace

TEST_CASE("backed answers: a transfer answers only where the asked GPU model's evidence reaches", "[table][backed]") {
  LookupTable t = two_entries();
  const TableEntry& big = t.entries[1];
  REQUIRE(big.key.m == 2048);
  const Problem asked = f32(1500, 1024, 1024);  // ln(2048/1500) = 0.311 from 2048, 0.382 from 1024
  // No evidence: the default, saying why, and each entry passed over as not backed.
  LookupResult r = t.lookup(asked, on(kDevice), naive_hooks());
  CHECK(r.kind == MatchKind::fallback);
  CHECK(r.backing == Backing::none);
  CHECK_THAT(r.reason, Catch::Contains("is backed here (0 out of reach, 0 cannot run it, 2 not backed)") &&
                           Catch::Contains("2048x1024x1024 (nearest, distance 0.311), is not: the table has no "
                                           "evidence that its nearest answers hold on NVIDIA Test GPU"));
  REQUIRE(r.passed_over.size() == 2);
  CHECK_THAT(r.passed_over[0].second, Catch::StartsWith("not backed: "));
  CHECK(r.pending == nullptr);  // not in online mode
  // Evidence for the 2048 entry's own config up to 0.5: its nearest answer.
  t.evidence = {evidence(big, 0.5)};
  r = t.lookup(asked, on(kDevice), naive_hooks());
  CHECK(r.rule == Rule::nearest);
  CHECK(r.backing == Backing::evidence);
  CHECK(r.entry->key.m == 2048);
  CHECK_THAT(r.backing_note, Catch::Contains("validated on NVIDIA Test GPU: 2 neighbours up to distance 0.500 (this "
                                             "problem: 0.311), the slowest at 0.970"));
  // Beyond its radius: the next candidate is tried (the 1024 entry has none), then the default.
  t.evidence = {evidence(big, 0.2)};
  r = t.lookup(asked, on(kDevice), naive_hooks());
  CHECK(r.kind == MatchKind::fallback);
  CHECK_THAT(r.passed_over[0].second, Catch::Contains("validated up to distance 0.200, and this problem lies 0.311"));
  // The 1024 entry backed: it answers, though the 2048 one is nearer.
  t.evidence = {evidence(big, 0.2), evidence(t.entries[0], 0.4)};
  r = t.lookup(asked, on(kDevice), naive_hooks());
  CHECK(r.backing == Backing::evidence);
  CHECK(r.entry->key.m == 1024);
  // Evidence for another rule, or another config (a re-tuned entry), does not back it.
  TransferEvidence other_rule = evidence(big, 1.0, Rule::adapted), other_config = evidence(big, 1.0);
  other_config.config = "naive_mapcoalesced_bx8_by8";
  t.evidence = {other_rule, other_config};
  CHECK(t.lookup(asked, on(kDevice), naive_hooks()).kind == MatchKind::fallback);
}

TEST_CASE("backed answers: another GPU model, or none named, gets the default and never a transfer",
          "[table][backed]") {
  LookupTable t = two_entries();
  t.evidence = {evidence(t.entries[0], 1.0), evidence(t.entries[1], 1.0)};
  // The same architecture: its exact entries still answer, transfers do not.
  LookupResult exact = t.lookup(f32(1024, 1024, 1024), on("NVIDIA Other GPU"), naive_hooks());
  CHECK(exact.rule == Rule::exact);
  CHECK(exact.backing == Backing::exact);
  CHECK(exact.tier == Tier::arch);
  LookupResult r = t.lookup(f32(1500, 1024, 1024), on("NVIDIA Other GPU"), naive_hooks());
  CHECK(r.kind == MatchKind::fallback);
  CHECK_THAT(r.passed_over[0].second, Catch::Contains("measured on NVIDIA Test GPU, not on NVIDIA Other GPU: another "
                                                      "GPU model gets the default, never a transfer"));
  LookupPolicy none = on(kDevice);
  none.device.reset();
  r = t.lookup(f32(1500, 1024, 1024), none, naive_hooks());
  CHECK(r.kind == MatchKind::fallback);
  CHECK_THAT(r.passed_over[0].second, Catch::Contains("no device is named"));
  // Asked for (to measure the rules): any transfer, marked unbacked.
  LookupPolicy any = on("NVIDIA Other GPU");
  any.unbacked_transfers = true;
  r = t.lookup(f32(1500, 1024, 1024), any, naive_hooks());
  CHECK(r.rule == Rule::nearest);
  CHECK(r.backing == Backing::unbacked);
  // Where no default can run the problem, an unbacked transfer answers rather than nothing.
  r = t.lookup(f32(1500, 1024, 1024), on("NVIDIA Other GPU"), naive_hooks({}, ""));
  CHECK(r.rule == Rule::nearest);
  CHECK(r.backing == Backing::unbacked);
  CHECK_THAT(r.backing_note, Catch::Contains("no default can run this problem here"));
}

TEST_CASE("backed answers: an online check's verdict backs a transfer or keeps the default; online mode names "
          "the transfer to time",
          "[table][backed]") {
  LookupTable t = two_entries();
  const Problem asked = f32(1500, 1024, 1024);
  std::vector<std::string> asked_for;
  OnlineVerdict kept{true, 40.0, 45.0, "", "", "2026-12-06T00:00:00Z", "t.online.jsonl"};
  std::optional<OnlineVerdict> verdict;
  CheckedFn checked = [&](const Problem& p, const LookupResult& tr) {
    asked_for.push_back(p.key() + " " + tr.config);
    return verdict;
  };
  LookupPolicy policy = on(kDevice);
  policy.online = true;
  // Not checked yet: the default, and the nearest transfer that could serve, to be timed.
  LookupResult r = t.lookup(asked, policy, naive_hooks(checked));
  CHECK(r.kind == MatchKind::fallback);
  REQUIRE(r.pending);
  CHECK(r.pending->entry->key.m == 2048);
  CHECK(r.pending->rule == Rule::nearest);
  CHECK_THAT(r.reason, Catch::EndsWith("online: that answer is timed against this default on the problem's first calls"));
  REQUIRE(asked_for.size() == 2);
  CHECK_THAT(asked_for[0], Catch::StartsWith("1500x1024x1024 f32>f32 nn a16 naive_"));
  // Kept: the transfer answers, backed online.
  verdict = kept;
  r = t.lookup(asked, policy, naive_hooks(checked));
  CHECK(r.rule == Rule::nearest);
  CHECK(r.backing == Backing::online);
  CHECK(r.backing_note == "timed online (t.online.jsonl): 40.00 us against the default's 45.00 us");
  // The default kept: no transfer, and nothing left to time.
  verdict->candidate_kept = false;
  r = t.lookup(asked, policy, naive_hooks(checked));
  CHECK(r.kind == MatchKind::fallback);
  CHECK(r.pending == nullptr);
  CHECK_THAT(r.passed_over[0].second, Catch::Contains("45.00 us: the default was kept"));
  // The margin: a transfer within 1 % of the default is not kept.
  CHECK(keep_candidate(98.9, 100.0));
  CHECK_FALSE(keep_candidate(99.5, 100.0));
  CHECK_FALSE(keep_candidate(100.0, 100.0));
}

TEST_CASE("evidence from validations: held up to the first loss, per rule; stale and replayed ones left out",
          "[table][backed]") {
  LookupTable t = two_entries();
  const TableEntry& e = t.entries[0];
  auto timed = [&](int64_t m, double distance, double answer, double dflt, Rule rule = Rule::nearest) {
    Validation v;
    v.at = ResultKey::of(kDevice, f32(m, 1024, 1024));
    v.from = e.key;
    v.from_family = e.family;
    v.from_config = e.config;
    v.rule = rule;
    v.family = e.family;
    v.config = e.config;
    v.distance = distance;
    v.answer_us = answer;
    v.default_us = dflt;
    v.held = transfer_held(answer, dflt, 0.01);
    v.measured_at = fmt::format("2026-12-06T00:00:0{}Z", m % 10);
    return v;
  };
  std::vector<Validation> vs = {timed(2048, 0.69, 100.5, 100), timed(512, 0.69, 90, 100), timed(4096, 1.38, 130, 100),
                                timed(8192, 2.0, 50, 100), timed(700, 0.38, 120, 100, Rule::adapted)};
  std::vector<std::string> notes;
  auto ev = evidence_of(t, vs, false, &notes);
  REQUIRE(ev.size() == 1);  // the adapted rule lost at its one neighbour
  CHECK(ev[0].rule == Rule::nearest);
  CHECK(ev[0].radius == Approx(0.69));  // 4096 lost: 8192 beyond it does not count
  CHECK(ev[0].neighbours == 2);
  CHECK(ev[0].worst == Approx(1.005));
  CHECK(ev[0].measured_at == "2026-12-06T00:00:08Z");
  CHECK_THAT(notes.at(0), Catch::Contains("its nearest answer at NVIDIA Test GPU 4096x1024x1024 f32>f32 nn a16 ran "
                                          "1.300x the time against the default: its evidence ends at distance 0.690"));
  // At one distance a loss and a hold (in either order): the evidence stops short of it.
  for (bool loss_first : {true, false}) {
    vs = {timed(2048, 0.69, 90, 100), timed(512, 0.69, 120, 100), timed(1536, 0.29, 95, 100)};
    if (loss_first) std::swap(vs[0], vs[1]);
    ev = evidence_of(t, vs, false);
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].radius == Approx(0.29));
    CHECK(ev[0].neighbours == 1);
  }
  // A failed answer never holds; a config the entry no longer has and a replay are left out.
  vs = {timed(2048, 0.69, std::nan(""), 100)};
  vs[0].answer_status = "verify_failed";
  notes.clear();
  CHECK(evidence_of(t, vs, false, &notes).empty());
  CHECK_THAT(notes.at(0), Catch::Contains("ran verify_failed"));
  vs = {timed(2048, 0.69, 90, 100), timed(512, 0.69, 90, 100)};
  vs[0].from_config = "naive_old";
  vs[1].replay = true;
  notes.clear();
  CHECK(evidence_of(t, vs, false, &notes).empty());
  CHECK_THAT(notes[0] + notes[1], Catch::Contains("1 validation of configs the table's entries no longer have") &&
                                      Catch::Contains("1 replayed validation was left out"));
  CHECK(evidence_of(t, vs, true).size() == 1);
  // A validation reads back from its stored record as it was.
  Validation v = timed(2048, 0.69, 90, 100);
  v.answer_us = std::nan("");
  Validation back = Validation::from_row(v.row());
  CHECK(back.at == v.at);
  CHECK(back.from == v.from);
  CHECK(std::isnan(back.answer_us));
  CHECK(back.default_us == 100);
  CHECK(back.row().record == v.row().record);
}

TEST_CASE("tables carry their evidence: TOML and JSON round trip, bad evidence is refused naming the field",
          "[table][backed]") {
  test::TempDir d;
  LookupTable t = two_entries();
  t.evidence = {evidence(t.entries[1], 0.5), evidence(t.entries[0], 0.25, Rule::adapted)};
  t.sort();
  for (TableFormat f : {TableFormat::toml, TableFormat::json}) {
    fs::path file = d.path / (std::string("t.") + to_string(f));
    t.save(file, f);
    LookupTable back = LookupTable::load(file);
    CHECK(back.entries == t.entries);
    CHECK(back.evidence == t.evidence);
    CHECK(back.info.format_version == kTableFormatVersion);
  }
  CHECK_THAT(t.serialize(TableFormat::toml), Catch::Contains("\n[[evidence]]\ndevice = \"NVIDIA Test GPU\"") &&
                                                  Catch::Contains("rule = \"adapted\"\nradius = 0.25\n"));
  std::string text = t.serialize(TableFormat::toml);
  auto bad = [&](const std::string& from, const std::string& to) {
    std::string s = text;
    size_t at = s.find(from, s.find("[[evidence]]"));
    REQUIRE(at != std::string::npos);
    s.replace(at, from.size(), to);
    return s;
  };
  for (auto [from, to, says] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"rule = \"adapted\"", "rule = \"exact\"", "evidence[0] (line"},
           {"rule = \"adapted\"", "rule = \"closest\"", "field 'rule': 'closest' is not a transfer"},
           {"radius = 0.25", "radius = -1", "field 'radius': -1 is not a distance"},
           {"neighbours = 2", "neighbours = 0", "field 'neighbours': 0 is out of range"},
           {"tolerance = 0.01", "tolerance = 2", "field 'tolerance': 2 is not a fraction"},
           {"worst = 0.97", "worse = 0.97", "field 'worse': unknown field"}}) {
    INFO(from << " -> " << to);
    CHECK_THROWS_WITH(LookupTable::parse(bad(from, to), TableFormat::toml, "t.toml"), Catch::Contains(says));
  }
}

TEST_CASE("online decisions: written by one process, read by the next; the last counts; kept in memory with "
          "one warning where the file cannot be written",
          "[runtime][backed]") {
  test::TempDir d;
  const fs::path file = d.path / "t.toml.online.jsonl";
  CHECK(default_online_file(d.path / "t.toml") == file);
  {
    OnlineDecisions od(file);
    CHECK(od.take_warning().empty());
    CHECK_FALSE(od.find(kDevice, "64x64x64 f32>f32 nn a16", "naive_x"));
    od.record(kDevice, "64x64x64 f32>f32 nn a16", {true, 10, 12, "naive_x", "cublaslt_pick", "", ""});
    od.record(kDevice, "64x64x64 f32>f32 nn a16", {false, 13, 12, "naive_x", "cublaslt_pick", "", ""});
    od.record(kDevice, "64x64x64 f32>f32 nn a16", {true, 9, 12, "naive_y", "cublaslt_pick", "", ""});
    CHECK(od.take_warning().empty());
  }
  test::write_file(d.path / "junk", "");
  {
    std::string text = test::read_file(file);
    CHECK(std::count(text.begin(), text.end(), '\n') == 3);
    test::write_file(file, text + "not json\n");
  }
  OnlineDecisions again(file);
  CHECK_THAT(again.take_warning(), Catch::Contains("1 line that is not an online decision were skipped") ||
                                       Catch::Contains("1 line that is not an online decision was skipped"));
  auto x = again.find(kDevice, "64x64x64 f32>f32 nn a16", "naive_x");
  REQUIRE(x);
  CHECK_FALSE(x->candidate_kept);  // the last line of it
  CHECK(x->candidate_us == 13);
  CHECK(x->where == file.string());
  CHECK(again.find(kDevice, "64x64x64 f32>f32 nn a16", "naive_y")->candidate_kept);
  CHECK_FALSE(again.find("NVIDIA Other GPU", "64x64x64 f32>f32 nn a16", "naive_y"));
  // A file in a folder that does not exist: decided in memory, one warning.
  OnlineDecisions nowhere(d.path / "missing" / "t.jsonl");
  nowhere.record(kDevice, "1x1x1 f32>f32 nn a4", {true, 1, 2, "naive_z", "p", "", ""});
  CHECK_THAT(nowhere.take_warning(), Catch::Contains("cannot be written") && Catch::Contains("this process only"));
  nowhere.record(kDevice, "2x1x1 f32>f32 nn a4", {true, 1, 2, "naive_z", "p", "", ""});
  CHECK(nowhere.take_warning().empty());
  CHECK(nowhere.find(kDevice, "1x1x1 f32>f32 nn a4", "naive_z"));
}

TEST_CASE("the record of untuned problems: a job that reads back as the same problems, each once, from several "
          "processes",
          "[runtime][backed][job]") {
  test::TempDir d;
  const fs::path file = d.path / "untuned.toml";
  Problem padded = Problem::make(100, 256, 300, DType::f16, DType::f16, Layout::nt);
  padded.lda = 301;  // 2-byte rows: alignment 2
  padded.align = alignment_of(padded);
  REQUIRE(padded.align == 2);
  Problem fp8 = Problem::make(64, 128, 256, DType::e4m3, DType::bf16, Layout::nt, DType::e5m2, ScaleMode::row);
  const std::vector<Problem> problems = {f32(17, 33, 65), padded, fp8};
  // Four processes record every problem at once.
  std::vector<pid_t> kids;
  for (int i = 0; i < 4; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      for (int round = 0; round < 3; ++round)
        for (const Problem& p : problems) record_untuned(file, p);
      _exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t k : kids) {
    int status = 0;
    waitpid(k, &status, 0);
    CHECK(WIFEXITED(status));
  }
  CHECK_FALSE(record_untuned(file, padded));  // held already
  const std::string text = test::read_file(file);
  INFO(text);
  CHECK(text.rfind("# Problems a program ran", 0) == 0);
  size_t blocks = 0;
  for (size_t at = text.find("[[problems]]"); at != std::string::npos; at = text.find("[[problems]]", at + 1)) ++blocks;
  CHECK(blocks == 3);
  search::Job job = search::parse_job(text, file.string());
  REQUIRE(job.problems.size() == 3);
  for (const Problem& p : problems) {
    auto it = std::find_if(job.problems.begin(), job.problems.end(),
                           [&](const search::JobProblem& jp) { return jp.problem.key() == p.key(); });
    REQUIRE(it != job.problems.end());
    CHECK(it->problem.lda == p.lda);
    CHECK(it->problem.ldb == p.ldb);
    CHECK(it->problem.ldc == p.ldc);
    CHECK(it->problem.align == p.align);
  }
}

TEST_CASE("jobs say leading dimensions and alignment; bad values name the key", "[job][backed]") {
  auto job = search::parse_job("[[problems]]\nshapes = [\"64x64x64\"]\ndtypes = [\"f16\"]\nlda = 72\nldc = 80\n"
                               "align = 4\n",
                               "j.toml");
  REQUIRE(job.problems.size() == 1);
  const Problem& p = job.problems[0].problem;
  CHECK(p.lda == 72);
  CHECK(p.ldb == 64);
  CHECK(p.ldc == 80);
  CHECK(p.align == 4);
  CHECK(p.key() == "64x64x64 f16>f16 nn a4");
  for (auto [body, says] : std::vector<std::pair<std::string, std::string>>{
           {"lda = 60", "j.toml:4:7: 'lda' = 60 is less than 64x64x64 nn needs (64)"},
           {"ldb = 0", "'ldb' = 0 is out of range"},
           {"ldc = \"80\"", "'ldc' must be a whole number"},
           {"align = 3", "'align' = 3 is not 1, 2, 4, 8 or 16"},
           {"lda = 65\nalign = 4", "'align' = 4 is more than the leading dimensions of 64x64x64 allow (2)"}}) {
    INFO(body);
    CHECK_THROWS_WITH(search::parse_job("[[problems]]\nshapes = [\"64x64x64\"]\ndtypes = [\"f16\"]\n" + body + "\n",
                                        "j.toml"),
                      Catch::Contains(says));
  }
}

TEST_CASE("the runtime's options: online mode answers with the file's decisions and names what it would time; "
          "record_untuned; bad values are refused",
          "[runtime][backed]") {
  test::TempDir d, cache;
  LookupTable t = two_entries();
  const fs::path table = d.path / "t.json";
  t.save(table, TableFormat::json);
  gemmtune::Options o;
  o.plugin_dirs = {test::naive_only_dir().string()};
  o.cache_dir = cache.path.string();
  o.dry_run = true;
  o.device_name = kDevice;
  o.default_family = "naive";
  o.record_untuned = (d.path / "untuned.toml").string();
  gemmtune::GemmArgs g;
  g.m = 1500;
  g.n = g.k = 1024;
  g.lda = g.k;
  g.ldb = g.ldc = g.n;
  g.a = g.b = g.c = reinterpret_cast<void*>(uintptr_t(1) << 20);
  {
    gemmtune::Runtime off(table.string(), o);
    const gemmtune::Choice& c = off.prepare(g);
    CHECK(c.match == GEMMTUNE_MATCH_DEFAULT);
    CHECK(c.backing == "none");
    CHECK(c.pending.empty());
  }
  CHECK_THAT(test::read_file(d.path / "untuned.toml"),
             Catch::Contains("[[problems]]  # 1500x1024x1024 f32>f32 nn a16 lda=1024 ldb=1024 ldc=1024"));
  o.online = 1;
  const std::string candidate = t.entries[1].config;
  {
    gemmtune::Runtime online(table.string(), o);
    const gemmtune::Choice& c = online.prepare(g);
    CHECK(c.match == GEMMTUNE_MATCH_DEFAULT);
    CHECK_THAT(c.pending, Catch::StartsWith(candidate + " (nearest (from 2048x1024x1024)"));
  }
  auto lookup = [&](const std::string& extra) {
    auto r = test::run_command(fmt::format("{} --plugin-dir {} --json lookup --table {} --device '{}' --default-family "
                                           "naive --shape 1500x1024x1024{}",
                                           test::gemmtune_binary().string(), test::naive_only_dir().string(),
                                           table.string(), kDevice, extra));
    INFO(r.out);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(r.out);
  };
  auto j = lookup(" --online");  // as the runtime in online mode: the default, naming what a first call times
  CHECK(j["rule"] == "family default");
  CHECK(j["pending"]["config"] == candidate);
  CHECK(lookup("")["pending"].is_null());
  OnlineDecisions(default_online_file(table)).record(kDevice, "1500x1024x1024 f32>f32 nn a16",
                                                     {true, 80, 95, candidate, "naive_default", "", ""});
  j = lookup(" --online");
  CHECK(j["rule"] == "nearest");
  CHECK(j["backing"] == "online");
  CHECK(j["config"] == candidate);
  CHECK(lookup(" --online-file " + (d.path / "other.jsonl").string())["backing"] == "none");
  {
    gemmtune::Runtime online(table.string(), o);
    const gemmtune::Choice& c = online.prepare(g);
    CHECK(c.match == GEMMTUNE_MATCH_NEAREST);
    CHECK(c.backing == "online");
    CHECK(c.config == candidate);
    CHECK_THAT(c.backing_note, Catch::Contains("80.00 us against the default's 95.00 us"));
  }
  // GEMMTUNE_ONLINE decides where the option does not; another value is refused.
  o.online = -1;
  setenv("GEMMTUNE_ONLINE", "1", 1);
  CHECK(gemmtune::Runtime(table.string(), o).prepare(g).backing == "online");
  setenv("GEMMTUNE_ONLINE", "yes", 1);
  CHECK_THROWS_WITH(gemmtune::Runtime(table.string(), o), Catch::Contains("GEMMTUNE_ONLINE='yes' is not 1 (on) or 0"));
  unsetenv("GEMMTUNE_ONLINE");
  CHECK(gemmtune::Runtime(table.string(), o).prepare(g).backing == "none");
  o.online = 2;
  CHECK_THROWS_WITH(gemmtune::Runtime(table.string(), o), Catch::Contains("online 2 is not -1"));
  // The C API: the choice as JSON, and the record switched on later.
  gemmtune_options co;
  gemmtune_options_init(&co);
  CHECK(co.online == -1);
  CHECK(co.unbacked_transfers == 0);
  std::string dirs = test::naive_only_dir().string(), cdir = cache.path.string(), tpath = table.string();
  co.plugin_dirs = dirs.c_str();
  co.cache_dir = cdir.c_str();
  co.dry_run = 1;
  co.device_name = kDevice;
  co.default_family = "naive";
  co.unbacked_transfers = 1;
  gemmtune_runtime* h = nullptr;
  REQUIRE(gemmtune_create(tpath.c_str(), &co, &h) == GEMMTUNE_SUCCESS);
  const std::string rec = (d.path / "later.toml").string();
  REQUIRE(gemmtune_set_record_untuned(h, rec.c_str()) == GEMMTUNE_SUCCESS);
  gemmtune_gemm_args ca{g.m, g.n, g.k, GEMMTUNE_F32, GEMMTUNE_F32, GEMMTUNE_NN, g.a, g.lda, g.b, g.ldb, g.c, g.ldc};
  const char* json = nullptr;
  REQUIRE(gemmtune_choice_json(h, &ca, nullptr, &json) == GEMMTUNE_SUCCESS);
  j = nlohmann::json::parse(json);
  CHECK(j["match"] == "nearest");
  CHECK(j["rule"] == "nearest");
  CHECK(j["backing"] == "unbacked");
  CHECK(j["config"] == candidate);
  CHECK(fs::exists(rec));
  REQUIRE(gemmtune_set_record_untuned(h, nullptr) == GEMMTUNE_SUCCESS);
  ca.m = 1400;
  REQUIRE(gemmtune_choice_json(h, &ca, nullptr, &json) == GEMMTUNE_SUCCESS);
  CHECK_THAT(test::read_file(rec), !Catch::Contains("1400x"));
  gemmtune_destroy(h);
}

TEST_CASE("the online check on a GPU: the first call times the transfer against cuBLASLt's pick, keeps the faster, "
          "writes the decision; the next process reads it",
          "[gpu][runtime][backed]") {
  GT_REQUIRE_GPU();
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  test::TempDir d, cache;
  LookupTable t;
  t.entries = {naive_entry(f32(1024, 1024, 1024), "bx=16,by=16", 500)};  // naive: far slower than the pick
  const fs::path table = d.path / "t.json", decisions = d.path / "decisions.jsonl";
  t.save(table, TableFormat::json);
  gemmtune::Options o;
  o.plugin_dirs = {test::plugin_dir().string()};
  o.cache_dir = cache.path.string();
  o.device_name = kDevice;
  o.online = 1;
  o.online_file = decisions.string();
  const Problem p = f32(1100, 1024, 1024);
  DeviceBuffer a(p.bytes_a()), b(p.bytes_b()), c(p.bytes_c());
  gemmtune::GemmArgs g;
  g.m = p.m;
  g.n = p.n;
  g.k = p.k;
  g.lda = p.lda;
  g.ldb = p.ldb;
  g.ldc = p.ldc;
  g.a = a.get();
  g.b = b.get();
  g.c = c.get();
  {
    gemmtune::Runtime rt(table.string(), o);
    CHECK_THAT(rt.prepare(g).pending, Catch::StartsWith(t.entries[0].config));
    rt.gemm(g, nullptr);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    const gemmtune::Choice& ch = rt.prepare(g);
    INFO(ch.reason);
    CHECK(ch.pending.empty());
    CHECK(ch.match == GEMMTUNE_MATCH_DEFAULT);  // naive lost to cuBLASLt's pick
    CHECK_THAT(ch.reason, Catch::Contains("timed online") && Catch::Contains("the default was kept"));
  }
  const std::string text = test::read_file(decisions);
  INFO(text);
  CHECK_THAT(text, Catch::Contains("\"kept\":\"default\"") && Catch::Contains("1100x1024x1024 f32>f32 nn a16"));
  gemmtune::Runtime next(table.string(), o);
  const gemmtune::Choice& ch = next.prepare(g);
  CHECK(ch.pending.empty());  // decided: nothing to time
  CHECK_THAT(ch.reason, Catch::Contains("the default was kept"));
  next.gemm(g, nullptr);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(test::read_file(decisions) == text);  // no second timing
}

