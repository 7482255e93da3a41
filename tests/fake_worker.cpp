// A stand-in for `gemmtune __worker` that needs no GPU, for the isolation and scale-out tests on
// the CPU: it speaks the worker protocol (one JSON request per line on stdin, one answer per
// line on stdout, {"beat": seconds} heartbeats in between) and misbehaves on request. The first
// value of a candidate's config decides what `measure` does:
//   0  answers with an ok measurement of 100 us, plus the config's second value if it has one
//      (and a heartbeat first)
//   1  exits with code 7 without answering (a crash)
//   2  goes silent for good (a hang before any GPU call completes)
//   3  sends heartbeats of 0.01 s for a while, then goes silent (a hang after progress)
//   4  answers ok but reports the CUDA context lost (the client must restart it)
//   5  says its build is done ({"built": true}), then goes silent (a hang at the first launch)
// `measure` before `problem` is an error, so a restarted worker that was not given the problem
// again shows up. `retime` answers each candidate's time as `measure` would, with a +-0.1 %
// interval; `settle` answers at once.
// Options: --uuid U (the GPU's UUID, default GPU-fake); --delay-ms D: every problem, measure,
// settle and re-timed candidate takes D ms, as a GPU's work would (default 0).
#include "gpu/device.hpp"
#include "measure/measurement.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

using namespace gt;

static void say(const nlohmann::json& j) {
  std::cout << j.dump() << "\n" << std::flush;
}

static double time_of(const nlohmann::json& config) { return 100.0 + (config.size() > 1 ? config.at(1).get<double>() : 0.0); }

int main(int argc, char** argv) {
  std::string uuid = "GPU-fake";
  int delay_ms = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--uuid") uuid = argv[i + 1];
    if (std::string(argv[i]) == "--delay-ms") delay_ms = std::stoi(argv[i + 1]);
  }
  auto work = [&] { std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms)); };
  bool have_problem = false;
  std::string line;
  while (std::getline(std::cin, line)) {
    nlohmann::json req = nlohmann::json::parse(line);
    const std::string op = req.at("op");
    if (op == "info") {
      DeviceInfo d;
      d.index = 0;
      d.name = "Fake GPU";
      d.uuid = uuid;
      d.limits = arch_limits("sm_90");
      say({{"ok", true}, {"device", d}});
    } else if (op == "problem") {
      work();
      have_problem = true;
      say({{"ok", true}});
    } else if (op == "measure") {
      if (!have_problem) {
        say({{"ok", false}, {"error", "measure before problem"}});
        continue;
      }
      const int mode = req.at("config").at(0);
      if (mode == 1) return 7;
      if (mode == 2)
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
      if (mode == 5) {
        say({{"built", true}});
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
      }
      if (mode == 3) {
        for (int i = 0; i < 20; ++i) {
          say({{"beat", 0.01}});
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
      }
      work();
      say({{"beat", 0.0001}});
      const double t = time_of(req.at("config"));
      Measurement m;
      m.status = Status::ok;
      m.time.count = 5;
      m.time.median = m.time.mean = m.time.min = m.time.max = m.time.p10 = m.time.p90 = t;
      m.time.ci_low = m.time.ci_high = t;
      m.measure_s = delay_ms / 1000.0;
      say({{"ok", true}, {"measurement", m}, {"context_lost", mode == 4}});
    } else if (op == "settle") {
      work();
      say({{"ok", true}, {"seconds", delay_ms / 1000.0}});
    } else if (op == "retime") {
      std::vector<Stats> stats;
      for (auto& c : req.at("candidates")) {
        work();
        say({{"beat", 0.0001}});
        const double t = time_of(c.at("config"));
        Stats s;
        s.count = req.at("rounds").get<int>();
        s.median = s.mean = s.min = s.max = s.p10 = s.p90 = t;
        s.ci_low = t * 0.999;
        s.ci_high = t * 1.001;
        stats.push_back(s);
      }
      say({{"ok", true}, {"stats", stats}, {"capped", false}});
    } else {
      say({{"ok", false}, {"error", "unknown op " + op}});
    }
  }
  return 0;
}
