// Which forms of a family a tune explores: the family on the problem as it is, and through
// problem transforms (core/src/transform/transform.hpp) where they can matter. The rule, automatic:
//   pad       where the problem is misaligned (its key's alignment is under 16 bytes): the
//             alignment class decides what a family can run (TMA, cuBLASLt's fast kernels need
//             16 bytes), and a padded copy costs O(MK + KN + MN) against O(MNK) of work;
//   round     where the problem is misaligned and rounding every size (M, N, K up to 16 bytes,
//             copying whatever operand spans one) gives another problem than pad's: pad never
//             copies an aligned operand for a size alone, so at 4096x4096x4097 (nn) it leaves
//             K = 4097 and cuBLASLt on its slow kernels; the timing decides which copy pays;
//   swap      where the swapped problem is better aligned, or the family cannot run the plain
//             problem at all (a small-M family serves a small-N problem swapped);
//   pad+swap  where no form explored so far can run the family.
// A list instead (`--transforms pad,round,swap`): exactly those forms, wherever their plan applies.
// Every form's candidates are verified against the problem as given and compared with the plain
// ones in the same finalist re-timing (tuner.hpp).
#pragma once

#include "base/problem.hpp"
#include "transform/transform.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gt::search {

struct TransformPolicy {
  bool automatic = true;         // the rule above
  std::vector<Transform> forms;  // with automatic false: these, beside the plain form (empty: none)

  // "auto", "none", or a comma-separated list of pad, round, swap, pad+swap. InputError naming `where`.
  static TransformPolicy parse(std::string_view text, std::string_view where = "--transforms");
  std::string describe() const;  // "auto", "none", "pad,swap"
  bool operator==(const TransformPolicy&) const = default;
};

// What the tune knows of a family's forms when it decides on the next one.
struct FormsSoFar {
  bool plain_runs = false;  // the plain problem has a config the family can run
  bool any_runs = false;    // some form explored so far has one
};

// Whether to explore `t` (not none) for a family of problem `p`: nullopt to explore it, else
// why not ("the problem is 16-byte aligned", the plan's refusal, ...).
std::optional<std::string> skip_form(const TransformPolicy& policy, const Problem& p, Transform t,
                                     const FormsSoFar& sofar);

}  // namespace gt::search
