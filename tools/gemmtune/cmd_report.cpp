// gemmtune report: a self-contained HTML page with plots from the results store. This
// command reads the store (read-only: it never writes to it), writes everything the plots
// need to DIR/data.json, and hands that to tools/report.py (matplotlib) for the pictures
// and the page. Keeping the plotting in Python keeps matplotlib out of the C++ build; the
// JSON stays behind even when Python is missing, so the data are never lost to a plot.
#include "cli.hpp"
#include "job/job.hpp"
#include "job/resolve.hpp"
#include "report/report_data.hpp"
#include "store/store.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

extern char** environ;

namespace gt::cli {
namespace fs = std::filesystem;
using nlohmann::json;
using namespace gt::report;

namespace {

// One lab (or other) job: its problems and, per family, the configs it fixes, with their
// canonical names where the family's space can parse them, so the page can find the rows.
json job_json(Globals& g, const search::ResolvedJob& resolved, const fs::path& file) {
  const search::Job& job = resolved.job;
  json problems = json::array();
  for (auto& jp : resolved.problems) {
    json pj = problem_fields(jp.problem);
    pj["families"] = jp.families;  // as the job resolves them; empty: every family
    json configs = json::object();
    for (auto& [fam, texts] : jp.configs) {
      json list = json::array();
      std::optional<Space> space;
      try {
        if (const Family* f = g.plugins().find(fam); f && !f->is_library())
          space = f->space(jp.problem, arch_limits("sm_90"));
      } catch (const std::exception&) {
      }
      for (auto& t : texts) {
        json c = {{"text", t}, {"pick", t == "@pick"}, {"name", json()}, {"params", json()}};
        if (t != "@pick") {
          std::string err;
          if (space) {
            if (auto cfg = space->parse(t, &err)) {
              c["name"] = space->name(*cfg);
              json ps = json::array();
              for (auto& [k, v] : split_assignments(space->assignments(*cfg))) ps.push_back({k, v});
              c["params"] = ps;
            }
          } else if (t.rfind(fam + "_", 0) == 0) {
            c["name"] = t;  // already a canonical name
          }
        }
        list.push_back(c);
      }
      configs[fam] = list;
    }
    pj["configs"] = configs;
    problems.push_back(pj);
  }
  return {{"name", job.name},
          {"description", job.description},
          {"source", job.source},
          {"id", file.stem().string()},
          {"lab", file.parent_path().filename() == "lab"},
          {"problems", problems}};
}

// ---------------------------------------------------------------------------------------
// Running Python.

// Runs argv; the child's output goes where ours goes unless `quiet`. Returns the exit
// status, or -1 (errno set) when it could not be started.
int run_process(const std::vector<std::string>& argv, bool quiet) {
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (quiet) {
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  }
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    errno = rc;
    return -1;
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// The interpreter to plot with: the one named (--python or GEMMTUNE_PYTHON), else the first
// of python3 on PATH and /usr/bin/python3 that imports matplotlib. Debian's
// python3-matplotlib serves /usr/bin/python3, which a python3 earlier on PATH (a pyenv or
// virtualenv) may not see. RuntimeFailure (exit 1) saying what is missing.
std::string find_python(const std::string& named) {
  std::vector<std::string> candidates;
  if (!named.empty())
    candidates = {named};
  else
    candidates = {"python3", "/usr/bin/python3"};
  std::vector<std::string> without_mpl, missing;
  for (auto& c : candidates) {
    int rc = run_process({c, "-c", "import matplotlib"}, true);
    if (rc == 0) return c;
    if (rc < 0 || rc == 127)
      missing.push_back(c);
    else
      without_mpl.push_back(c);
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  if (without_mpl.empty())
    throw RuntimeFailure(fmt::format(
        "python3 was not found ({} tried); the report's plots need python3 with matplotlib (Debian: apt-get install "
        "python3-matplotlib; tools/install_deps.sh installs it)",
        join(missing)));
  throw RuntimeFailure(fmt::format(
      "matplotlib is missing: {} cannot import it; install Debian's python3-matplotlib (tools/install_deps.sh does), "
      "or name an interpreter that has it with --python or GEMMTUNE_PYTHON",
      join(without_mpl)));
}

// tools/report.py: beside the binary's parent (a build inside the checkout, or an install
// under share/gemmtune), beside the configs folder, else the source tree this was built from.
fs::path report_script() {
  std::vector<fs::path> where = {executable_dir() / ".." / "tools" / "report.py",
                                 executable_dir() / ".." / "share" / "gemmtune" / "report.py",
                                 config_dir() / ".." / "tools" / "report.py",
                                 fs::path(GEMMTUNE_SOURCE_DIR) / "tools" / "report.py"};
  for (auto& p : where)
    if (fs::is_regular_file(p)) return fs::weakly_canonical(p);
  std::string tried;
  for (auto& p : where) tried += (tried.empty() ? "" : ", ") + p.lexically_normal().string();
  throw RuntimeFailure("the report script tools/report.py was not found (looked in: " + tried + ")");
}

// ---------------------------------------------------------------------------------------
// The report: resolve its jobs, read the store, write data.json, render it with report.py.

struct ReportArgs {
  std::string out_dir = "gemmtune-report", store_file, python;
  std::vector<std::string> jobs;
  bool no_plugins = false;
};

// The jobs whose experiments get sections, each resolved as tune would run it
// (its problems and their families); bad input is reported before anything is written. Lab
// jobs (the default) that do not resolve are left out with a note.
std::vector<std::pair<search::ResolvedJob, fs::path>> load_jobs(const std::vector<std::string>& named) {
  auto resolved_of = [](const fs::path& f) {
    search::JobRequest r;
    r.config = f.string();
    r.config_flag = "--job";
    r.shard = "0/1";
    search::Catalog cat;
    cat.unchecked = true;  // a report reads what was measured, with or without the plugins
    return search::resolve_job(r, cat);
  };
  std::vector<std::pair<search::ResolvedJob, fs::path>> loaded;
  if (!named.empty()) {
    for (auto& j : named) loaded.emplace_back(resolved_of(j), fs::path(j));
    return loaded;
  }
  std::error_code ec;
  fs::path lab = config_dir() / "lab";
  std::vector<fs::path> files;
  if (fs::is_directory(lab, ec))
    for (auto& e : fs::directory_iterator(lab, ec))
      if (e.path().extension() == ".toml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (auto& f : files) {
    try {
      loaded.emplace_back(resolved_of(f), f);
    } catch (const std::exception& e) {
      fmt::print(stderr, "note: lab job {} left out: {}\n", f.string(), e.what());
    }
  }
  return loaded;
}


// data.json, written whole to a temporary file and renamed into place.
fs::path write_data(const json& data, const fs::path& out) {
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw InputError(fmt::format("-o: cannot create {}: {}", out.string(), ec.message()));
  fs::path data_file = out / "data.json";
  write_file_replacing(data_file, data.dump(1) + "\n");
  return data_file;
}

// report.py turns data.json into index.html, with the first interpreter that has matplotlib.
void render(const std::string& python, const fs::path& out, const fs::path& data_file) {
  std::string py_named = python;
  if (py_named.empty())
    if (const char* e = std::getenv("GEMMTUNE_PYTHON"); e && *e) py_named = e;
  fs::path script = report_script();
  std::string py;
  try {
    py = find_python(py_named);
  } catch (const RuntimeFailure& e) {
    throw RuntimeFailure(fmt::format("{}. The data are in {}: run `python3 {} {}` once matplotlib is there", e.what(),
                                     data_file.string(), script.string(), out.string()));
  }
  int rc = run_process({py, script.string(), out.string()}, false);
  if (rc != 0)
    throw RuntimeFailure(fmt::format("{} {} {} failed (exit {}); the data are in {}", py, script.string(), out.string(),
                                     rc < 0 ? std::string(std::strerror(errno)) : std::to_string(rc),
                                     data_file.string()));
}

int run_report(Globals& g, const ReportArgs& a) {
  fs::path db = a.store_file.empty() ? g.db_path() : fs::path(a.store_file);
  std::error_code ec;
  const std::string db_flag = a.store_file.empty() ? g.db_flag() : "--store";
  if (!fs::exists(db, ec))
    throw InputError(fmt::format("{}: there is no results store at {} (tune first, or name one with --store)",
                                 db_flag, db.string()));
  // The folder's two files against everything the report reads (files.hpp).
  std::vector<FileRole> files = {{FileUse::store_readonly, db_flag, db},
                                 {FileUse::write_folder, "-o", a.out_dir, {"data.json", "index.html"}}};
  for (auto& j : a.jobs) files.push_back({FileUse::read, "--job", j});
  check_file_roles(files);
  const auto loaded = load_jobs(a.jobs);
  const StoreContents c = read_store(db);
  const PluginSource plugins = [&g]() -> const PluginRegistry& { return g.plugins(); };
  RowsJson rj = rows_json(c, a.no_plugins ? nullptr : &plugins);
  json jobs_j = json::array();
  for (auto& [resolved, file] : loaded) jobs_j.push_back(job_json(g, resolved, file));
  auto [now, unix_now] = utc_now();
  (void)unix_now;
  json data = {{"format", "gemmtune-report/1"},
               {"generated", now},
               {"gemmtune_version", kGemmtuneVersion},
               {"store", fs::absolute(db).lexically_normal().string()},
               {"rows", c.rows.size()},
               {"devices", rj.devices},
               {"status_counts", rj.status_counts},
               {"roofs", roofs_json(c.roofs)},
               {"measurements", rj.measurements},
               {"winners", winners_json(c.winners)},
               {"jobs", jobs_j},
               {"jobs_named", !a.jobs.empty()},
               {"notes", c.notes}};
  const fs::path out = a.out_dir;
  // A folder this run makes goes again when its data cannot be written (a full disk). Once
  // data.json is there it stays, plots or not: the message says how to plot it later.
  const bool out_existed = fs::exists(out, ec);
  fs::path data_file;
  try {
    data_file = write_data(data, out);
  } catch (...) {
    if (!out_existed) fs::remove_all(out, ec);
    throw;
  }
  if (!g.quiet)
    fmt::print(stderr, "wrote {} ({} measurements, {} ok, {} roofs, {} winners, {} jobs)\n", data_file.string(),
               c.rows.size(), rj.measurements.size(), c.roofs.size(), c.winners.size(), jobs_j.size());
  for (auto& n : c.notes) fmt::print(stderr, "note: {}\n", n);
  render(a.python, out, data_file);
  fs::path html = out / "index.html";
  if (g.json)
    print_json({{"html", html.string()}, {"data", data_file.string()}, {"measurements", rj.measurements.size()}});
  else
    fmt::print("{}\n", html.string());
  return 0;
}

void add_report_options(CLI::App* sub, ReportArgs& a) {
  sub->add_option("-o,--output", a.out_dir, "directory to write index.html and data.json to (created when missing)")
      ->capture_default_str();
  sub->add_option("--store", a.store_file, "the results store to read (default: --db, GEMMTUNE_DB, else the user's store)");
  sub->add_option("--job", a.jobs,
                  "a job file whose experiment gets its own section (repeatable; default: every lab job in "
                  "configs/lab, shown where the store holds its problems)");
  sub->add_option("--python", a.python,
                  "the Python interpreter to plot with (default: GEMMTUNE_PYTHON, else the first of python3 on PATH "
                  "and /usr/bin/python3 that has matplotlib)");
  sub->add_flag("--no-plugins", a.no_plugins,
                "do not load plugins to spell parameters out (they are then read from the config names)");
}

Registrar reg_report(80, [](CLI::App& app, Globals& g) {
  return make_command<ReportArgs>(app, g, "report",
      "writes a self-contained HTML page with plots from the store (roofline, TFLOP/s against size, speed-up "
      "over cuBLASLt's pick, parameters, winners, the lab's experiments); needs python3 with matplotlib, no "
      "GPU. The store is only read.",
      add_report_options, run_report);
});

}  // namespace

}  // namespace gt::cli
