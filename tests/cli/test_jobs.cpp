// Job files: every shipped job parses and names families that exist; bad jobs are refused
// with the file, line, column and field.
#include "gpu/device.hpp"
#include "base/errors.hpp"
#include "job/job.hpp"
#include "job/resolve.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

using namespace gt;
using namespace gt::search;

static std::string error_of(const std::string& text) {
  try {
    parse_job(text, "job.toml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

TEST_CASE("every shipped job parses, names known families, and the default is embedded", "[jobs]") {
  auto reg = PluginRegistry::load({test::plugin_dir()});
  std::vector<std::filesystem::path> files;
  for (auto dir : {test::source_dir() / "configs", test::source_dir() / "configs" / "lab"})
    for (auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".toml") files.push_back(e.path());
  REQUIRE(files.size() >= 4);
  for (auto& f : files) {
    INFO(f.string());
    Job j = load_job(f);
    CHECK_FALSE(j.problems.empty());
    std::vector<std::string> fams = j.settings.families;
    for (auto& p : j.problems) fams.insert(fams.end(), p.families.begin(), p.families.end());
    for (auto& [name, b] : j.settings.family_budgets) fams.push_back(name);
    for (auto& name : fams) CHECK(reg.find(name) != nullptr);
  }
  Job d = parse_job(default_job_text(), "<default job>");
  CHECK(d.name == "default");
  CHECK(d.problems.size() == 3);
}

// The README documents the job format with one example: it must be a job this build accepts.
TEST_CASE("tune's default budget applies whole when no budget is named, and not at all once one is", "[jobs]") {
  Catalog cat;
  cat.families = {"a", "b"};
  JobRequest r;
  r.problem = Problem::make(64, 64, 64, DType::f32, DType::f32, Layout::nn);
  r.shard = "0/1";
  r.default_budget = default_tune_budget();
  ResolvedJob resolved = resolve_job(r, cat);
  CHECK(resolved.options.budget_is_default);
  CHECK(resolved.options.budget.max_evaluations == 100);
  CHECK(resolved.options.budget.max_seconds == 30);
  CHECK_THAT(describe(resolved.options), Catch::Contains("budget 100 evaluations or 30 s per family (the default)"));
  // --budget alone: only the evaluations limit the search (the default's 30 s do not stay).
  r.evaluations = 200;
  resolved = resolve_job(r, cat);
  CHECK_FALSE(resolved.options.budget_is_default);
  CHECK(resolved.options.budget.max_evaluations == 200);
  CHECK_FALSE(std::isfinite(resolved.options.budget.max_seconds));
  // A job's [tune] budget key replaces the default too; a job with none gets it.
  test::TempDir tmp;
  auto with = tmp.path / "with.toml", without = tmp.path / "without.toml";
  std::ofstream(with) << "[tune]\nseconds = 12\n[[problems]]\nshapes = [\"64x64x64\"]\n";
  std::ofstream(without) << "[tune]\nseed = 3\n[tune.budget.b]\nevaluations = 7\n[[problems]]\nshapes = [\"64x64x64\"]\n";
  JobRequest j;
  j.shard = "0/1";
  j.default_budget = default_tune_budget();
  j.config = with.string();
  resolved = resolve_job(j, cat);
  CHECK_FALSE(resolved.options.budget_is_default);
  CHECK(resolved.options.budget.max_seconds == 12);
  CHECK(resolved.options.budget.max_evaluations == std::numeric_limits<uint64_t>::max());
  j.config = without.string();
  resolved = resolve_job(j, cat);
  CHECK(resolved.options.budget_is_default);
  CHECK(resolved.options.budget_for("a").max_evaluations == 100);
  CHECK(resolved.options.budget_for("b").max_evaluations == 7);  // its own key over the default it starts from
  CHECK(resolved.options.budget_for("b").max_seconds == 30);
}

TEST_CASE("the README's example job parses, and its families and fixed configs exist", "[jobs]") {
  std::ifstream f(test::source_dir() / "README.md");
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string readme = ss.str();
  const auto open = readme.find("```toml\n");
  REQUIRE(open != std::string::npos);
  const auto close = readme.find("```", open + 8);
  REQUIRE(close != std::string::npos);
  Job j = parse_job(readme.substr(open + 8, close - open - 8), "README.md");
  auto reg = PluginRegistry::load({test::plugin_dir()});
  CHECK(j.settings.evaluations == 80u);
  CHECK(j.settings.family_budgets.at("cublaslt").evaluations == 1000u);
  REQUIRE(j.problems.size() == 4);  // 1 shape x 2 dtypes x 2 layouts
  std::vector<std::string> fams = j.settings.families;
  for (auto& [name, b] : j.settings.family_budgets) fams.push_back(name);
  for (auto& name : fams) CHECK(reg.find(name) != nullptr);
  for (auto& jp : j.problems)
    for (auto& [fam, texts] : jp.configs) {
      const Family* family = reg.find(fam);
      REQUIRE(family != nullptr);
      if (family->is_library()) continue;
      Space sp = family->space(jp.problem, arch_limits("sm_90"));
      for (auto& t : texts) {
        std::string err;
        bool ok = t == "@pick" || sp.parse(t, &err).has_value();
        INFO(fam << ": " << t << ": " << err);
        CHECK(ok);
      }
    }
}

TEST_CASE("a job expands shapes, m/n/k lists, dtypes and layouts, without duplicates", "[jobs]") {
  Job j = parse_job(R"(
name = "x"
[tune]
evaluations = 10
quick = false
families = ["naive"]
[[problems]]
m = [1, 2]
n = [8]
k = [16, 32]
dtypes = ["f16", "bf16"]
layouts = ["nn", "tn"]
out_dtype = "f32"
[[problems]]
shapes = ["1x8x16"]
dtypes = ["f16"]
out_dtype = "f32"
)",
                    "x.toml");
  CHECK(j.problems.size() == 16);  // 2*1*2 shapes * 2 dtypes * 2 layouts; the last set repeats one
  CHECK(j.settings.evaluations == 10u);
  CHECK(j.settings.quick == false);
  CHECK_FALSE(j.settings.min_gain);
  CHECK(j.problems[0].problem.out == DType::f32);
  CHECK(j.settings.family_budgets.empty());
}

TEST_CASE("a job gives a family a budget of its own in [tune.budget.FAMILY]", "[jobs]") {
  Job j = parse_job(R"(
[tune]
evaluations = 80
seconds = 40
[tune.budget.cublaslt]
evaluations = 4000
seconds = 18
[tune.budget.wmma]
patience = 12
fraction = 0.5
[[problems]]
shapes = ["1x8x16"]
)",
                    "x.toml");
  CHECK(j.settings.evaluations == 80u);
  CHECK(j.settings.seconds == 40.0);
  REQUIRE(j.settings.family_budgets.size() == 2);
  const JobBudget& lt = j.settings.family_budgets.at("cublaslt");
  CHECK(lt.evaluations == 4000u);
  CHECK(lt.seconds == 18.0);
  CHECK_FALSE(lt.fraction);
  CHECK_FALSE(lt.patience);
  const JobBudget& w = j.settings.family_budgets.at("wmma");
  CHECK(w.patience == 12u);
  CHECK(w.fraction == 0.5);
  CHECK_FALSE(w.evaluations);
  CHECK(j.at("budget:cublaslt") == "x.toml:5:1");  // its header
}

TEST_CASE("a job names FP8 problems: types, A:B, scale modes, nt by default, fast accumulation opted in", "[jobs][fp8]") {
  Job j = parse_job(R"(
[tune]
fast_accum = true
[[problems]]
shapes = ["64x256x512"]
dtypes = ["e4m3", "e4m3:e5m2", "bf16"]
scales = ["tensor", "row"]
[[problems]]
shapes = ["128x256x512"]
dtypes = ["e4m3"]
out_dtype = "f32"
)",
                    "fp8.toml");
  std::vector<std::string> keys;
  for (auto& p : j.problems) keys.push_back(p.problem.key());
  // FP8 sets take the scale list (bf16 takes none) and default to nt; bf16 to nn.
  CHECK(keys == std::vector<std::string>{"64x256x512 e4m3>bf16 nt a16 tensor", "64x256x512 e4m3>bf16 nt a16 row",
                                         "64x256x512 e4m3:e5m2>bf16 nt a16 tensor",
                                         "64x256x512 e4m3:e5m2>bf16 nt a16 row", "64x256x512 bf16>bf16 nn a16",
                                         "128x256x512 e4m3>f32 nt a16 tensor"});
  CHECK(j.settings.fast_accum == true);
  CHECK_FALSE(parse_job("[[problems]]\nshapes = [\"1x16x16\"]\n", "x.toml").settings.fast_accum);
  // What no GPU runs is refused where the job names it.
  auto err = [](const std::string& body) {
    try {
      parse_job(body, "job.toml");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK_THAT(err("[[problems]]\nshapes = [\"16x16x16\"]\ndtypes = [\"e5m2:e5m2\"]\n"),
             Catch::Contains("job.toml:3:") && Catch::Contains("e5m2 x e5m2"));
  CHECK_THAT(err("[[problems]]\nshapes = [\"16x16x16\"]\ndtypes = [\"e4m3\"]\nlayouts = [\"nn\"]\n"),
             Catch::Contains("job.toml:1:") && Catch::Contains("layout nt") && Catch::Contains("not nn"));
  CHECK_THAT(err("[[problems]]\nshapes = [\"16x16x16\"]\ndtypes = [\"e4m3\"]\nout_dtype = \"e4m3\"\nscales = [\"row\"]\n"),
             Catch::Contains("an FP8 output (e4m3) takes tensor scales only, not row"));
  CHECK_THAT(err("[[problems]]\nshapes = [\"16x16x16\"]\ndtypes = [\"bf16\"]\nscales = [\"row\"]\n"),
             Catch::Contains("job.toml:4:") && Catch::Contains("'scales' are for FP8 inputs"));
  CHECK_THAT(err("[[problems]]\nshapes = [\"16x16x16\"]\ndtypes = [\"e4m3\"]\nscales = [\"blocks\"]\n"),
             Catch::Contains("unknown scale mode 'blocks'"));
  CHECK_THAT(err("[[problems]]\nshapes = [\"16x16x16\"]\ndtypes = [\"bf16:f16\"]\n"),
             Catch::Contains("only FP8 operands may differ"));
  CHECK_THAT(err("[tune]\nfast_accum = 1\n[[problems]]\nshapes = [\"16x16x16\"]\n"),
             Catch::Contains("job.toml:2:") && Catch::Contains("true or false"));
}

TEST_CASE("bad jobs name the file, line, column and field", "[jobs]") {
  CHECK_THAT(error_of("name = \n"), Catch::Contains("job.toml:1:") && Catch::Contains("malformed TOML"));
  CHECK_THAT(error_of("nmae = \"x\"\n[[problems]]\nshapes=[\"1x1x1\"]\n"),
             Catch::Contains("job.toml:1:1") && Catch::Contains("unknown key 'nmae'"));
  CHECK_THAT(error_of("[tune]\nevaluations = \"many\"\n[[problems]]\nshapes=[\"1x1x1\"]\n"),
             Catch::Contains("job.toml:2:") && Catch::Contains("'evaluations' must be a whole number"));
  CHECK_THAT(error_of("[tune]\nbudgte = 3\n[[problems]]\nshapes=[\"1x1x1\"]\n"), Catch::Contains("unknown key 'budgte' in [tune]"));
  CHECK_THAT(error_of("[tune]\nbudget = 3\n[[problems]]\nshapes=[\"1x1x1\"]\n"),
             Catch::Contains("job.toml:2:") && Catch::Contains("[tune.budget] must be a table"));
  CHECK_THAT(error_of("[tune.budget]\nwmma = 3\n[[problems]]\nshapes=[\"1x1x1\"]\n"),
             Catch::Contains("job.toml:2:") && Catch::Contains("tune.budget.wmma must be a table"));
  CHECK_THAT(error_of("[tune.budget.wmma]\nevaluation = 3\n[[problems]]\nshapes=[\"1x1x1\"]\n"),
             Catch::Contains("job.toml:2:1") && Catch::Contains("unknown key 'evaluation' in [tune.budget.wmma]"));
  CHECK_THAT(error_of("[tune.budget.wmma]\nseconds = -1\n[[problems]]\nshapes=[\"1x1x1\"]\n"),
             Catch::Contains("job.toml:2:") && Catch::Contains("'seconds' must be a positive number"));
  CHECK_THAT(error_of("[tune.budget.wmma]\n[[problems]]\nshapes=[\"1x1x1\"]\n"),
             Catch::Contains("[tune.budget.wmma] sets nothing"));
  CHECK_THAT(error_of("[tune]\nevaluations = 0\n[[problems]]\nshapes=[\"1x1x1\"]\n"),
             Catch::Contains("job.toml:2:") && Catch::Contains("'evaluations' must be at least 1"));
  CHECK_THAT(error_of("[tune.budget.wmma]\npatience = 0\n[[problems]]\nshapes=[\"1x1x1\"]\n"),
             Catch::Contains("job.toml:2:") && Catch::Contains("'patience' must be at least 1"));
  CHECK_THAT(error_of("[[problems]]\nshapes = [\"0x4x4\"]\n"), Catch::Contains("job.toml:2:") && Catch::Contains("M is 0"));
  CHECK_THAT(error_of("[[problems]]\nshapes = [\"4x-4x4\"]\n"), Catch::Contains("negative"));
  CHECK_THAT(error_of("[[problems]]\nshapes = [\"4x4x99999999999\"]\n"), Catch::Contains("too large"));
  CHECK_THAT(error_of("[[problems]]\nshapes = [\"4xfourx4\"]\n"), Catch::Contains("not a whole number"));
  CHECK_THAT(error_of("[[problems]]\nshapes = [\"4x4x4\"]\ndtypes = [\"fp8\"]\n"),
             Catch::Contains("job.toml:3:") && Catch::Contains("unknown dtype 'fp8'"));
  CHECK_THAT(error_of("[[problems]]\nshapes = [\"4x4x4\"]\nlayouts = [\"nx\"]\n"), Catch::Contains("unknown layout 'nx'"));
  CHECK_THAT(error_of("[[problems]]\nm = [4]\nn = [4]\n"), Catch::Contains("m, n and k must all be given"));
  CHECK_THAT(error_of("[[problems]]\nm = [0]\nn = [4]\nk = [4]\n"), Catch::Contains("at least 1"));
  CHECK_THAT(error_of("name = \"x\"\n"), Catch::Contains("no [[problems]]"));
  CHECK_THAT(error_of("problems = 3\n"), Catch::Contains("array of tables"));
  CHECK_THAT(error_of("[tune]\nfraction = 1.5\n[[problems]]\nshapes=[\"1x1x1\"]\n"), Catch::Contains("(0, 1]"));
  CHECK_THAT(error_of("[tune]\nmin_gain = -2\n[[problems]]\nshapes=[\"1x1x1\"]\n"),
             Catch::Contains("job.toml:2:") && Catch::Contains("'min_gain' must be a percentage from 0 to 99"));
  CHECK_THAT(error_of("[tune]\ndist = \"gaussian\"\n[[problems]]\nshapes=[\"1x1x1\"]\n"),
             Catch::Contains("unknown distribution"));
  CHECK_THAT(error_of("[[problems]]\nshapes = [\"4x4x4\"]\nout_dtype = \"tf32\"\n"), Catch::Contains("not a storage type"));
  CHECK_THROWS_WITH(load_job("/nonexistent/job.toml"), Catch::Contains("cannot read '/nonexistent/job.toml'"));
}

// The one resolution of a run (search/job/resolve.hpp) that tune, compare and report share: a flag
// over the job's family budget over its [tune] over the command's default; families from
// --family, the problem set, [tune], else the command's default; all checked up front.
TEST_CASE("a resolved job takes flags over per-family budgets over [tune] over the command's default", "[jobs]") {
  test::TempDir tmp;
  auto job = tmp.path / "plan.toml";
  std::ofstream(job) << "[tune]\nstrategy = \"random\"\nevaluations = 30\nseed = 4\nmin_gain = 5\n"
                        "families = [\"a\", \"b\"]\n"
                        "[tune.budget.b]\nevaluations = 7\n"
                        "[[problems]]\nshapes = [\"64x64x64\"]\n"
                        "[[problems]]\nshapes = [\"128x64x64\"]\nfamilies = [\"c\"]\n";
  Catalog cat;
  cat.families = {"a", "b", "c"};
  JobRequest r;
  r.config = job.string();
  r.shard = "0/1";
  r.base.budget.max_evaluations = 60;  // compare's default
  ResolvedJob resolved = resolve_job(r, cat);
  CHECK(resolved.options.strategy == "random");
  CHECK(resolved.options.seed == 4);
  CHECK(resolved.options.min_gain == Approx(0.05));
  CHECK(resolved.options.budget_for("a").max_evaluations == 30);
  CHECK(resolved.options.budget_for("b").max_evaluations == 7);
  REQUIRE(resolved.problems.size() == 2);
  CHECK(resolved.problems[0].families == std::vector<std::string>{"a", "b"});
  CHECK(resolved.problems[1].families == std::vector<std::string>{"c"});
  CHECK(resolved.mine == std::vector<size_t>{0, 1});

  r.evaluations = 3;  // --budget replaces both
  r.families = {"c"};
  r.seed = 9;
  resolved = resolve_job(r, cat);
  CHECK(resolved.options.budget_for("a").max_evaluations == 3);
  CHECK(resolved.options.budget_for("b").max_evaluations == 3);
  CHECK(resolved.options.seed == 9);
  CHECK(resolved.problems[0].families == std::vector<std::string>{"c"});

  // Without the job's budget: the command's default.
  JobRequest one;
  one.problem = Problem::make(64, 64, 64, DType::f32, DType::f32, Layout::nn);
  one.base.budget.max_evaluations = 60;
  one.default_families = {"a"};
  one.shard = "0/1";
  resolved = resolve_job(one, cat);
  CHECK(resolved.options.budget.max_evaluations == 60);
  CHECK(resolved.problems[0].families == std::vector<std::string>{"a"});

  // Checked before any GPU work, naming where.
  r = JobRequest{};
  r.config = job.string();
  r.shard = "0/1";
  cat.families = {"a", "c"};
  CHECK_THROWS_WITH(resolve_job(r, cat), Catch::Contains("plan.toml:6:") && Catch::Contains("unknown family 'b'"));
  cat.families = {"a", "b", "c"};
  r.strategy = "hillclimb";
  CHECK_THROWS_WITH(resolve_job(r, cat), Catch::Contains("--strategy: unknown strategy 'hillclimb' (known: auto,"));
  r.strategy.clear();
  r.devices = "0,x";
  CHECK_THROWS_WITH(resolve_job(r, cat), Catch::Contains("--devices: 'x' is not a GPU index"));
  r.devices = "1,0";
  CHECK(resolve_job(r, cat).devices == std::vector<int>{1, 0});
  r.shard = "2/2";
  CHECK_THROWS_AS(resolve_job(r, cat), InputError);
}
