// The decision rule, one for both levels of a tune: among a family's finalists, where the
// reference is the family's baseline (its first suggestion: cuBLASLt's heuristic pick, a
// hand-written family's default), and among a problem's family winners, where the reference is
// TuneOptions::tie_family (cuBLASLt). The contender with the smallest figure leads (equal
// figures: by name); it replaces the reference only when measurably faster (their intervals
// apart) and by at least the margin (TuneOptions::min_gain). Why a margin: docs/measurement.md,
// "Switching needs a margin".
#pragma once

#include "measure/measurement.hpp"
#include "store/store.hpp"

#include <optional>
#include <string>
#include <vector>

namespace gt::search {

struct Contender {
  Contender(std::string n, Stats t, std::string l = "") : name(std::move(n)), time(t), label(std::move(l)) {}
  std::string name;   // a config's name, or a family's
  Stats time;         // its figure and interval in the timing that decides
  std::string label;  // how a note names it for people (a config's readable form); "": the name
  const std::string& shown() const { return label.empty() ? name : label; }
};

enum class Kept {
  no,         // the winner is the fastest (or there was no other reference)
  tie,        // the reference stays: the leader could not be told apart from it
  margin,     // the reference stays: the leader was measurably faster, by less than the margin
};

struct Verdict {
  size_t winner = 0;  // index into the contenders
  size_t leader = 0;  // the fastest by the figure
  Kept kept = Kept::no;
  double lead = kNaN;  // the leader's lead over the reference (reference / leader - 1); NaN without one
  Decision decision;   // tie (with the runner-up), runner-up, margin: the winner against the next contender
};

// Decides among `cs` (not empty). `reference`: the index of the contender that stays unless
// beaten measurably and by `min_gain` (a fraction); none: the fastest wins.
Verdict decide(const std::vector<Contender>& cs, std::optional<size_t> reference, double min_gain);

// The notes a winner carries (for people; the decision itself is data in Verdict::decision).
// `in_confirmation`: the verdict of the re-timing of a family's leader against its baseline alone.
std::string family_note(const Verdict& v, const std::vector<Contender>& cs, double min_gain, bool in_confirmation);
std::string problem_note(const Verdict& v, const std::vector<Contender>& cs, double min_gain);

}  // namespace gt::search
