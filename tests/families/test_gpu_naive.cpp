// The naive family on the GPU: verified against float64 at aligned and odd shapes, every
// dtype and layout, both thread mappings; the timing's statistics, minimum time and trace.
#include "measure/evaluate.hpp"
#include "gpu/nvml.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace gt;

TEST_CASE("naive is correct at every dtype, layout and odd shape", "[gpu][naive]") {
  GT_REQUIRE_GPU();
  const Family& naive = test::plugins().get("naive");
  gt_device d = device_info(0).limits;
  std::vector<std::array<int64_t, 3>> shapes = {{1024, 1024, 1024}, {1, 1, 1}, {7, 13, 17}, {1000, 3000, 7}, {4097, 4097, 4097}};
  for (auto sh : shapes)
    for (auto dt : {DType::f32, DType::tf32, DType::f16, DType::bf16})
      for (auto lay : {Layout::nn, Layout::nt, Layout::tn, Layout::tt}) {
        Problem p = Problem::make(sh[0], sh[1], sh[2], dt, Problem::default_out(dt), lay);
        Space s = naive.space(p, d);
        Config c = s.default_config();
        if (sh[0] == 1000) c = *s.parse("map=uncoalesced,bx=64,by=4", nullptr);
        Measurement m = test::gpu_check(naive, p, c);
        INFO(p.key() << " " << s.name(c) << ": " << to_string(m.status) << " " << m.message);
        CHECK(m.status == Status::ok);
        CHECK(m.err_rel_fro <= tolerance_for(p).rel_fro);
      }
}

TEST_CASE("a naive run is timed with statistics that make sense", "[gpu][naive]") {
  GT_REQUIRE_GPU();
  const Family& naive = test::plugins().get("naive");
  Problem p = Problem::make(1024, 1024, 1024, DType::f32, DType::f32, Layout::nn);
  Space s = naive.space(p, device_info(0).limits);
  Measurement m = test::gpu_check(naive, p, s.default_config(), true);
  REQUIRE(m.status == Status::ok);
  CHECK(m.time.count >= 5);
  CHECK(m.time.min <= m.time.median);
  CHECK(m.time.median <= m.time.max);
  CHECK(m.time.p10 <= m.time.p90);
  CHECK(m.time.median > 1.0);  // 2 GFLOP cannot take under a microsecond
}

TEST_CASE("a timing samples at least min_time_s and keeps its trace", "[gpu][naive]") {
  GT_REQUIRE_GPU();
  const Family& naive = test::plugins().get("naive");
  Problem p = Problem::make(256, 256, 256, DType::f32, DType::f32, Layout::nn);
  DeviceInfo dev = device_info(0);
  Config c = naive.space(p, dev.limits).default_config();
  ProblemBench bench(p, dev, Distribution::normal, 11, size_t(256) << 20);
  Compiler compiler(nullptr);
  EvaluateOptions o;
  o.timing.min_time_s = 0.3;  // a 256^3 call takes µs: the interval is narrow long before
  o.timing.max_samples = 200;
  o.keep_trace = true;
  Evaluation ev = evaluate(naive, p, c, dev, bench, compiler, nullptr, o);
  REQUIRE(ev.m.status == Status::ok);
  REQUIRE(ev.trace);
  const Timed& t = *ev.trace;
  REQUIRE(t.samples.size() == t.sample_t.size());
  CHECK(t.samples.size() == size_t(ev.m.time.count));
  CHECK(t.samples.size() > 200);  // max_samples gives way to min_time_s as well
  // min_time_s runs on the host's clock from before the first batch was queued; sample_t on the
  // GPU's, from the first batch's start: a few hundred µs less (0.2996 s seen on the H200).
  CHECK(t.sample_t.back() >= 0.3 - 0.01);
  CHECK(std::is_sorted(t.sample_t.begin(), t.sample_t.end()));
  for (size_t i = 1; i < t.readings.size(); ++i) CHECK(t.readings[i].t > t.readings[i - 1].t);
  if (Nvml::get().available()) CHECK(t.readings.size() >= 5);  // one reading per 20 ms at most
  // Held, the calls run back to back: a call starts right after the one before it ends.
  auto median_gap_us = [](const Timed& x) {
    std::vector<double> gaps;
    for (size_t i = 1; i < x.samples.size(); ++i) gaps.push_back((x.sample_t[i] - x.sample_t[i - 1]) * 1e6 - x.samples[i]);
    std::nth_element(gaps.begin(), gaps.begin() + long(gaps.size() / 2), gaps.end());
    return gaps[gaps.size() / 2];
  };
  REQUIRE(t.held);
  const double held_gap = median_gap_us(t);
  CHECK(held_gap < 3.0);
  // Unheld, one call at a time: the GPU idles while the host syncs and launches the next.
  o.timing.hold = false;
  Evaluation unheld = evaluate(naive, p, c, dev, bench, compiler, nullptr, o);
  REQUIRE(unheld.trace);
  CHECK_FALSE(unheld.trace->held);
  CHECK(median_gap_us(*unheld.trace) > held_gap + 2.0);
  o.timing.hold = true;

  // Without it the same timing stops once the interval is narrow, and keeps no trace.
  o.timing.min_time_s = 0;
  o.keep_trace = false;
  Evaluation quick = evaluate(naive, p, c, dev, bench, compiler, nullptr, o);
  REQUIRE(quick.m.status == Status::ok);
  CHECK_FALSE(quick.trace);
  CHECK(quick.m.time.count < ev.m.time.count);
}
