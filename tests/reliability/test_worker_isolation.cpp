// The measurement worker's isolation logic on the CPU, with a stand-in worker (fake_worker.cpp)
// that crashes, hangs or loses its context on request: the client turns each into a status,
// restarts the worker, gives it the problem again, and goes on. (The same on a GPU, with
// kernels that really fault: test_gpu_isolation.cpp.)
#include "build/plugin.hpp"
#include "test_util.hpp"
#include "measure/worker_client.hpp"

#include <catch2/catch.hpp>

#include <chrono>

using namespace gt;

TEST_CASE("a crashed, hung or context-losing worker is recorded, restarted and given the problem again",
          "[reliability][worker]") {
  WorkerLimits lim;
  lim.hang_floor_s = 0.5;  // silent this long: hung
  lim.compile_allowance_s = 0;  // the stand-in compiles nothing
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

TEST_CASE("a measure's first answer is awaited for its build and a slow first call, not minutes more",
          "[reliability][worker]") {
  const WorkerLimits lim;
  const auto flops = [](double n) { return 2 * n * n * n; };
  // A hung build at 8192^3 is called hung within 80 s (it was 440 s)...
  CHECK(first_answer_s(lim, flops(8192)) < 80);
  // ...yet the slowest kernel measured on the H200 (naive uncoalesced f32, 0.48 TFLOP/s) gets
  // its build and two calls at 16384^3 (18 s each) before that.
  CHECK(first_answer_s(lim, flops(16384)) > lim.compile_allowance_s + 2 * flops(16384) / 0.48e12);
  // A tiny problem gets the floor; a huge one no more than the cap.
  CHECK(first_answer_s(lim, flops(64)) == Approx(lim.compile_allowance_s));
  CHECK(first_answer_s(lim, flops(65536)) == lim.absolute_cap_s);
}

TEST_CASE("a kernel that hangs at its first launch is called hung at the floor once its build is done",
          "[reliability][worker]") {
  WorkerLimits lim;
  lim.hang_floor_s = 0.5;
  lim.compile_allowance_s = 3;  // what a silent build is given
  lim.absolute_cap_s = 10;
  lim.setup_cap_s = 5;
  static const PluginRegistry none = PluginRegistry::load({});
  WorkerClient w({(executable_dir() / "fake_worker").string()}, none, lim);
  w.set_problem(Problem::make(64, 64, 64, DType::f32, DType::f32, Layout::nn), Distribution::normal, 1);
  auto timed = [&](int64_t mode) {
    auto t0 = std::chrono::steady_clock::now();
    Measurement m = w.measure(Candidate{"fake", nullptr, Config{mode}}, true);
    CHECK(m.status == Status::timeout);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  // Silent from the start: a build that may still be running gets its allowance.
  CHECK(timed(2) >= 3.0);
  // Built, then silent: the first launch gets the floor, not the build's allowance again.
  const double after_build = timed(5);
  CHECK(after_build >= 0.5);
  CHECK(after_build < 2.0);
}
