#include "tune/decide.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace gt::search {

Verdict decide(const std::vector<Contender>& cs, std::optional<size_t> reference, double min_gain) {
  std::vector<size_t> order(cs.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const double x = cs[a].time.value(), y = cs[b].time.value();
    return x != y ? x < y : cs[a].name < cs[b].name;
  });
  Verdict v;
  v.leader = v.winner = order.front();
  if (reference && *reference != v.leader) {
    const Stats &lead = cs[v.leader].time, &ref = cs[*reference].time;
    v.lead = ref.value() / lead.value() - 1;
    if (tie(lead, ref))
      v.kept = Kept::tie;
    else if (!(v.lead >= min_gain))
      v.kept = Kept::margin;
    if (v.kept != Kept::no) v.winner = *reference;
  }
  // The runner-up: the fastest of the others (the leader, when the reference was kept).
  auto next = std::find_if(order.begin(), order.end(), [&](size_t i) { return i != v.winner; });
  if (next != order.end()) {
    const Stats &w = cs[v.winner].time, &r = cs[*next].time;
    v.decision.runner_up = cs[*next].name;
    v.decision.tie = tie(w, r);
    if (v.decision.tie) v.decision.tie_with = cs[*next].name;
    v.decision.margin = r.value() / w.value() - 1;
  }
  return v;
}

// How a note names the contender called `name` (its label where it has one).
static std::string shown(const std::vector<Contender>& cs, const std::string& name) {
  for (auto& c : cs)
    if (c.name == name) return c.shown();
  return name;
}

std::string family_note(const Verdict& v, const std::vector<Contender>& cs, double min_gain, bool in_confirmation) {
  const std::string& leader = cs[v.leader].shown();
  if (v.kept == Kept::tie)
    return in_confirmation ? fmt::format("tie with {} (overlapping intervals in the confirmation, {:+.1f} %); the "
                                         "baseline kept",
                                         leader, 100 * v.lead)
                           : fmt::format("tie with {} (overlapping intervals); the baseline kept", leader);
  if (v.kept == Kept::margin)
    return fmt::format("{} {:+.1f} % against the baseline{} (switching needs {:g} %); the baseline kept", leader,
                       100 * v.lead, in_confirmation ? " in the confirmation" : "", 100 * min_gain);
  if (v.decision.tie)
    return fmt::format("tie with {} (overlapping intervals); broken by time", shown(cs, v.decision.tie_with));
  return "";
}

std::string problem_note(const Verdict& v, const std::vector<Contender>& cs, double min_gain) {
  const std::string &winner = cs[v.winner].name, &leader = cs[v.leader].name;
  if (v.decision.tie)
    return fmt::format("tie between {} and {}{}", winner, v.decision.tie_with,
                       v.kept == Kept::tie ? ": " + winner + " kept" : "");
  if (v.kept == Kept::margin)
    return fmt::format("{} {:+.1f} % against {} (switching needs {:g} %): {} kept", leader, 100 * v.lead, winner,
                       100 * min_gain, winner);
  return "";
}

}  // namespace gt::search
