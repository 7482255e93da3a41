// The measurement worker's isolation logic on the CPU, with a stand-in worker (fake_worker.cpp)
// that crashes, hangs or loses its context on request: the client turns each into a status,
// restarts the worker, gives it the problem again, and goes on. (The same on a GPU, with
// kernels that really fault: test_gpu_isolation.cpp.)
#include "plugin.hpp"
#include "test_util.hpp"
#include "worker_client.hpp"

#include <catch2/catch.hpp>

#include <chrono>

using namespace gt;

TEST_CASE("a crashed, hung or context-losing worker is recorded, restarted and given the problem again",
          "[reliability][worker]") {
  WorkerLimits lim;
  lim.hang_floor_s = 0.5;  // silent this long: hung
  lim.hang_factor = 50;
  lim.absolute_cap_s = 5;
  lim.setup_cap_s = 5;
  static const PluginRegistry none = PluginRegistry::load({});
  WorkerClient w({(executable_dir() / "fake_worker").string()}, none, lim);
  CHECK(w.device().name == "Fake GPU");
  const Problem p = Problem::make(64, 64, 64, DType::f32, DType::f32, Layout::nn);
  w.set_problem(p, Distribution::normal, 1);
  auto cand = [](int64_t mode) { return Candidate{"fake", nullptr, Config{mode}}; };

  Measurement ok = w.measure(cand(0), true);
  CHECK(ok.status == Status::ok);
  CHECK(ok.time.median == Approx(100.0));
  CHECK(w.restarts() == 0);

  // A crash: a run-time fault naming how the worker ended; then a fresh worker that still holds
  // the problem (the stand-in refuses to measure before it has one).
  Measurement crash = w.measure(cand(1), true);
  CHECK(crash.status == Status::runtime_fault);
  CHECK_THAT(crash.message, Catch::Contains("exited with code 7"));
  CHECK_THAT(crash.message, Catch::Contains("worker restarted"));
  CHECK(w.restarts() == 1);
  CHECK(w.measure(cand(0), true).status == Status::ok);

  // A hang before any heartbeat: a time-out after the floor, not after the absolute cap.
  auto t0 = std::chrono::steady_clock::now();
  Measurement hang = w.measure(cand(2), true);
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(hang.status == Status::timeout);
  CHECK_THAT(hang.message, Catch::Contains("hung"));
  CHECK(waited >= 0.5);
  CHECK(waited < 4.0);
  CHECK(w.restarts() == 2);

  // A hang after heartbeats: 20 beats over ~0.2 s keep it alive, then silence is a hang.
  Measurement late = w.measure(cand(3), true);
  CHECK(late.status == Status::timeout);
  CHECK(w.restarts() == 3);

  // A lost context: the answer counts, and the worker is replaced before the next candidate.
  Measurement lost = w.measure(cand(4), true);
  CHECK(lost.status == Status::ok);
  CHECK_THAT(lost.message, Catch::Contains("context was lost"));
  CHECK(w.restarts() == 4);
  CHECK(w.measure(cand(0), true).status == Status::ok);
}
