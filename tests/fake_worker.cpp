// A stand-in for `gemmtune __worker` that needs no GPU, for the isolation tests on the CPU: it
// speaks the worker protocol (one JSON request per line on stdin, one answer per line on
// stdout, {"beat": seconds} heartbeats in between) and misbehaves on request. The first value
// of a candidate's config decides what `measure` does:
//   0  answers with an ok measurement of 100 us (and a heartbeat first)
//   1  exits with code 7 without answering (a crash)
//   2  goes silent for good (a hang before any GPU call completes)
//   3  sends heartbeats of 0.01 s for a while, then goes silent (a hang after progress)
//   4  answers ok but reports the CUDA context lost (the client must restart it)
// `measure` before `problem` is an error, so a restarted worker that was not given the problem
// again shows up.
#include "device.hpp"
#include "measurement.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>

using namespace gt;

static void say(const nlohmann::json& j) {
  std::cout << j.dump() << "\n" << std::flush;
}

int main() {
  bool have_problem = false;
  std::string line;
  while (std::getline(std::cin, line)) {
    nlohmann::json req = nlohmann::json::parse(line);
    const std::string op = req.at("op");
    if (op == "info") {
      DeviceInfo d;
      d.index = 0;
      d.name = "Fake GPU";
      d.uuid = "GPU-fake";
      d.limits = arch_limits("sm_90");
      say({{"ok", true}, {"device", d}});
    } else if (op == "problem") {
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
      if (mode == 3) {
        for (int i = 0; i < 20; ++i) {
          say({{"beat", 0.01}});
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
      }
      say({{"beat", 0.0001}});
      Measurement m;
      m.status = Status::ok;
      m.time.count = 5;
      m.time.median = m.time.mean = m.time.min = m.time.max = m.time.p10 = m.time.p90 = 100.0;
      m.time.ci_low = m.time.ci_high = 100.0;
      say({{"ok", true}, {"measurement", m}, {"context_lost", mode == 4}});
    } else if (op == "settle") {
      say({{"ok", true}, {"seconds", 0.0}});
    } else {
      say({{"ok", false}, {"error", "unknown op " + op}});
    }
  }
  return 0;
}
