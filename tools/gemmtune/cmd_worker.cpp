// gemmtune __worker: the measurement worker (not for people). It owns the GPU and serves
// requests from the tuning process on stdin, one JSON object per line, answering on
// stdout; while a request runs it sends heartbeats so the parent can tell a slow kernel
// from a hung one. A sticky CUDA error ends it after its answer: the parent restarts it.
#include "cli.hpp"
#include "measure/measure_service.hpp"

#include <chrono>
#include <csignal>
#include <iostream>
#include <unistd.h>

namespace gt::cli {

namespace {
struct Wire {
  int fd;
  void send(const nlohmann::json& j) const {
    std::string s = j.dump() + "\n";
    for (size_t off = 0; off < s.size();) {
      ssize_t w = ::write(fd, s.data() + off, s.size() - off);
      if (w <= 0) _exit(0);  // the parent is gone
      off += size_t(w);
    }
  }
};

struct WorkerArgs {
  int device = 0;
};

void add_worker_options(CLI::App* sub, WorkerArgs& a) {
  sub->group("");  // hidden from --help: the tuner starts it
  sub->add_option("--device", a.device);
}

int run_worker(Globals& g, const WorkerArgs& a) {
  // Ctrl-C goes to the whole process group; the parent decides when to stop, after
  // the measurement in flight.
  std::signal(SIGINT, SIG_IGN);
  // The protocol gets its own descriptor; anything else printing to stdout (a
  // library) lands on stderr instead of corrupting it.
  Wire wire{::dup(1)};
  ::dup2(2, 1);
  std::unique_ptr<MeasureService> svc;
  try {
    CubinCache cache = g.cache();
    svc = std::make_unique<MeasureService>(g.plugins(), cache, a.device);
  } catch (const NoGpuError& e) {
    wire.send({{"ok", false}, {"error", e.what()}, {"no_gpu", true}});
    return 3;
  } catch (const std::exception& e) {
    wire.send({{"ok", false}, {"error", e.what()}});
    return 1;
  }
  using Clock = std::chrono::steady_clock;
  auto last_beat = Clock::now();
  double slowest_since_beat = 0;
  svc->heartbeat = [&](double call_s) {
    slowest_since_beat = std::max(slowest_since_beat, call_s);
    if (Clock::now() - last_beat >= std::chrono::milliseconds(250)) {
      wire.send({{"beat", slowest_since_beat}});
      last_beat = Clock::now();
      slowest_since_beat = 0;
    }
  };
  // The parent waits for a build longer than for a launch: tell it when the build is done.
  svc->built = [&] { wire.send({{"built", true}}); };
  auto candidate = [&](const nlohmann::json& j) {
    const Family& f = g.plugins().get(j.at("family").get<std::string>());
    return Candidate{f.name(), &f, j.at("config").get<Config>(),
                     parse_transform(j.value("transform", std::string("none")), "worker request")};
  };
  std::string line;
  while (std::getline(std::cin, line)) {
    nlohmann::json req, rep;
    try {
      req = nlohmann::json::parse(line);
      std::string op = req.at("op");
      if (op == "info") {
        rep = {{"ok", true}, {"device", svc->device()}};
      } else if (op == "problem") {
        svc->set_problem(req.at("problem").get<Problem>(),
                         parse_distribution(req.at("dist").get<std::string>().c_str()),
                         req.at("seed").get<uint64_t>());
        rep = {{"ok", true}};
      } else if (op == "measure") {
        Measurement m = svc->measure(candidate(req), req.value("quick", false));
        rep = {{"ok", true}, {"measurement", m}, {"context_lost", svc->context_lost()}};
      } else if (op == "settle") {
        double s = svc->settle(candidate(req), req.at("cap_s").get<double>());
        rep = {{"ok", true}, {"seconds", s}};
      } else if (op == "retime") {
        std::vector<Candidate> cs;
        for (auto& c : req.at("candidates")) cs.push_back(candidate(c));
        Retimed r = svc->retime(cs,
                                Interleave{req.at("rounds").get<int>(), req.at("warmup_s").get<double>(),
                                           req.at("capped_warmup_s").get<double>(),
                                           req.at("capped_rounds").get<int>()},
                                req.at("seed").get<uint64_t>());
        rep = {{"ok", true}, {"stats", r.stats}, {"capped", r.capped}};
      } else {
        rep = {{"ok", false}, {"error", "unknown op " + op}};
      }
    } catch (const std::exception& e) {
      rep = {{"ok", false}, {"error", e.what()}};
    }
    wire.send(rep);
    if (svc->context_lost()) return 1;  // this context is unusable: let the parent restart us
  }
  return 0;
}

Registrar reg_worker(1000, [](CLI::App& app, Globals& g) {
  return make_command<WorkerArgs>(app, g, "__worker", "", add_worker_options, run_worker);
});

}  // namespace

}  // namespace gt::cli
