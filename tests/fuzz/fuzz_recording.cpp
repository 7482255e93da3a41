// libFuzzer target for the replay-recording loader (search/replay/replay.cpp): any bytes read as a
// recording must either load or be refused with an InputError. A recording that loads must
// keep the measurement rules the loader promises (replay.hpp: one space per device, problem
// and family; one result per config; an ok result with a time of at least
// kMinRecordedTimeUs), write out and read back unchanged, and serve a search over each of its
// spaces without surprises (the objective answers every recorded config as recorded).
// Anything else (another exception type, a crash, a sanitizer report) is a bug.
#include "base/errors.hpp"
#include "replay/replay.hpp"
#include "strategies/strategy.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <tuple>

namespace {

[[noreturn]] void broken(const std::string& what) {
  std::fprintf(stderr, "fuzz_recording: %s\n", what.c_str());
  std::abort();
}

bool same_outcome(const gt::search::Outcome& a, const gt::search::Outcome& b) {
  const bool same_time = (std::isnan(a.median_us) && std::isnan(b.median_us)) || a.median_us == b.median_us;
  return a.status == b.status && same_time && a.message == b.message;
}

void check(const gt::search::Recording& rec) {
  std::set<std::tuple<std::string, std::string, std::string>> spaces;
  for (auto& s : rec.spaces()) {
    if (!spaces.emplace(s.device().uuid, s.problem().key(), s.family()).second)
      broken("two spaces for one device, problem and family: " + s.family() + " " + s.problem().key());
    s.problem().validate();  // throws InputError, which would be a bug here: the loader made it
    gt::Space space = s.space();
    for (auto& [c, r] : s.recorded_results()) {
      const gt::search::Outcome& o = r.explored;
      if (o.status == gt::Status::ok && !(o.median_us >= gt::search::kMinRecordedTimeUs && std::isfinite(o.median_us)))
        broken("an ok result without a measured time: " + s.family() + " " + space.name(c));
      if (r.retimed && !(r.retimed->value() >= gt::search::kMinRecordedTimeUs))
        broken("a re-timing without a measured figure: " + space.name(c));
      auto again = s.objective()(c);
      if (!same_outcome(again, o)) broken("the objective does not answer a recorded config as recorded");
    }
    // A short search over the space, as a replay runs one. Only over small spaces: random and
    // exhaustive walk the raw indices, which takes as long as the space is large when a
    // recording holds few of its configs (that is the strategies' cost, not the loader's).
    if (s.size() > 0 && space.raw_size() > 0 && space.raw_size() <= 4096) {
      for (const char* name : {"random", "exhaustive", "anneal"}) {
        auto strategy = gt::search::make_strategy(name, space, 1, {space.default_config()});
        gt::search::Budget b;
        b.max_evaluations = 8;
        auto r = gt::search::run_search(*strategy, s.objective(), b);
        if (r.best && !(r.best->value >= gt::search::kMinRecordedTimeUs)) broken("a search's best is not a time");
      }
    }
  }
  // Written and read back: the same spaces, results and roofs.
  const std::string text = rec.to_json().dump(1);
  gt::search::Recording back;
  try {
    back = gt::search::Recording::parse(text, "round-trip");
  } catch (const gt::InputError& e) {
    broken(std::string("a loaded recording, written out, does not read back: ") + e.what() + "\n--- written:\n" + text);
  }
  if (back.spaces().size() != rec.spaces().size() || back.roofs().size() != rec.roofs().size())
    broken("a recording changes in a round trip\n--- written:\n" + text);
  for (size_t i = 0; i < rec.spaces().size(); ++i) {
    auto a = rec.spaces()[i].recorded_results(), b = back.spaces()[i].recorded_results();
    if (a.size() != b.size()) broken("a space loses results in a round trip\n--- written:\n" + text);
    for (size_t j = 0; j < a.size(); ++j)
      if (a[j].first != b[j].first || !same_outcome(a[j].second.explored, b[j].second.explored))
        broken("a result changes in a round trip\n--- written:\n" + text);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  gt::search::Recording rec;
  try {
    rec = gt::search::Recording::parse(text, "fuzz.json");
  } catch (const gt::InputError&) {
    return 0;  // refused with a message: what bad input should get
  }
  try {
    check(rec);
  } catch (const gt::InputError& e) {
    broken(std::string("a loaded recording breaks its own checks: ") + e.what());
  }
  return 0;
}
