// Timing statistics: the median and its interval, the mean as the figure at the power cap.
#include "base/errors.hpp"
#include "measure/measurement.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <random>

using namespace gt;

namespace {
// A power-capped kernel's samples: the governor holds one clock level, then the other, in
// stretches of `run` calls; `fast_share` of the calls at the faster level (211 against 216 us).
std::vector<double> two_levels(double fast_share, int n = 4000, int run = 100) {
  std::vector<double> x;
  std::mt19937_64 rng(3);
  std::normal_distribution<double> noise(0.0, 0.3);
  for (int r = 0; r < n / run; ++r) {
    // Spread the fast stretches evenly among the slow ones.
    const bool fast = int((r + 1) * fast_share) > int(r * fast_share);
    for (int i = 0; i < run; ++i) x.push_back((fast ? 211.0 : 216.0) + noise(rng));
  }
  return x;
}
}  // namespace

TEST_CASE("the median, its quantiles and its interval", "[stats]") {
  std::vector<double> x;
  for (int i = 1; i <= 101; ++i) x.push_back(double(i));
  std::shuffle(x.begin(), x.end(), std::mt19937_64(1));
  Stats s = summarize(x);
  CHECK(s.center == Center::median);
  CHECK(s.count == 101);
  CHECK(s.median == 51.0);
  CHECK(s.value() == 51.0);
  CHECK(s.mean == Approx(51.0));
  CHECK(s.min == 1.0);
  CHECK(s.max == 101.0);
  CHECK(s.p10 == Approx(11.0));
  CHECK(s.p90 == Approx(91.0));
  // Ranks n/2 -+ 1.96 sqrt(n)/2: about 41 and 61.
  CHECK(s.ci_low < 51.0);
  CHECK(s.ci_high > 51.0);
  CHECK(s.ci_low >= 39.0);
  CHECK(s.ci_high <= 63.0);
  CHECK(s.ci_rel() == Approx((s.ci_high - s.ci_low) / 2 / 51.0));
  Stats none = summarize({});
  CHECK(none.count == 0);
  CHECK(std::isnan(none.value()));
}

TEST_CASE("at the power cap the mean follows the mix of clock levels where the median jumps", "[stats]") {
  // Just under and just over half the calls at the fast level: the medians are a level apart
  // (2.4 %), the means within the share's difference of each other.
  Stats under = summarize(two_levels(0.45)), over = summarize(two_levels(0.55));
  CHECK(under.median > 215.0);
  CHECK(over.median < 212.0);
  Stats under_m = summarize(two_levels(0.45), Center::mean), over_m = summarize(two_levels(0.55), Center::mean);
  CHECK(under_m.center == Center::mean);
  CHECK(under_m.value() == under_m.mean);
  CHECK(under_m.median == under.median);  // the median is still reported
  CHECK(std::abs(under_m.value() - over_m.value()) / over_m.value() < 0.003);
  CHECK(under_m.value() == Approx(0.45 * 211 + 0.55 * 216).epsilon(0.002));
  // The mean's interval comes from block means, so the stretches widen it past the naive
  // standard error (0.3 us noise / sqrt(4000) would claim +-0.01 us).
  CHECK(under_m.ci_low < under_m.mean);
  CHECK(under_m.ci_high > under_m.mean);
  CHECK(under_m.ci_high - under_m.ci_low > 0.2);
  // Two runs of one kernel at the cap cannot be told apart; a kernel 5 % slower can.
  CHECK(tie(under_m, over_m));
  std::vector<double> slower = two_levels(0.45);
  for (double& v : slower) v *= 1.05;
  CHECK_FALSE(tie(under_m, summarize(slower, Center::mean)));
}

TEST_CASE("timing statistics round-trip through JSON with their figure", "[stats]") {
  Stats s = summarize(two_levels(0.5), Center::mean);
  nlohmann::json j = s;
  CHECK(j["center"] == "mean");
  CHECK(j["value"].get<double>() == s.mean);
  Stats back = j.get<Stats>();
  CHECK(back.center == Center::mean);
  CHECK(back.value() == s.value());
  CHECK(back.ci_low == s.ci_low);
  // Older JSON (no center) is a median; an unknown center is refused by name.
  j.erase("center");
  CHECK(j.get<Stats>().center == Center::median);
  j["center"] = "mode";
  try {
    (void)j.get<Stats>();
    FAIL("an unknown center was accepted");
  } catch (const RuntimeFailure& e) {
    CHECK_THAT(e.what(), Catch::Contains("unknown center 'mode'"));
  }
}

TEST_CASE("a re-timing's interval at the cap comes from its turns", "[stats]") {
  // Four turns of 30 calls, each at one clock level (two fast, two slow): the turns are what
  // is independent, so the interval is as wide as four observations allow (t with 3 degrees
  // of freedom), far wider than ten blocks cut through them would claim.
  std::vector<double> x;
  for (double level : {211.0, 216.0, 211.0, 216.0})
    for (int i = 0; i < 30; ++i) x.push_back(level + 0.01 * i);
  Stats by_turn = summarize(x, Center::mean, {30, 30, 30, 30});
  Stats by_ten = summarize(x, Center::mean);
  CHECK(by_turn.value() == Approx(213.5 + 0.145));
  CHECK(by_turn.ci_low < by_turn.mean);
  CHECK(by_turn.ci_high - by_turn.mean == Approx(by_turn.mean - by_turn.ci_low));  // centred on the mean
  CHECK(by_turn.ci_high - by_turn.ci_low > 2 * (by_ten.ci_high - by_ten.ci_low));
  // Half-width: 3.182 * sd(turn means) / sqrt(4); the turn means are 2.5 from the mean.
  CHECK((by_turn.ci_high - by_turn.ci_low) / 2 == Approx(3.182 * std::sqrt(4 * 2.5 * 2.5 / 3) / 2).epsilon(0.01));
  // One block gives no interval, which ties with anything.
  Stats one = summarize({215.0}, Center::mean);
  CHECK(one.value() == 215.0);
  CHECK(std::isnan(one.ci_low));
  CHECK(tie(one, summarize({300.0, 301.0, 302.0}, Center::mean)));
}
