// What schema v9 keeps as columns of a row (its config's parameters, a library's ranking of it),
// read out of the row's description as gemmtune wrote it up to schema v8. Only the step to v9
// and the reading of an older store use it: newer rows carry the columns themselves.
#pragma once

#include "store/store.hpp"

#include <optional>
#include <string>

namespace gt {

// cuBLASLt described each config it measured as "cuBLASLt 13.1.0 algo 55: tile 128x256, stages
// 8x3, split-K 1, CTA swizzle off, ...; heuristic rank 0 (cuBLASLt's pick), ..." (or "; not among
// the heuristic's 12 picks"). The items as "name=value,..." in its words ("split-K=1,CTA
// swizzle=off"), "" where the description spells no algorithm.
std::string params_from_description(const std::string& description);
// The heuristic rank the description states; -1 for "not among the heuristic's picks"; nullopt
// where it says neither.
std::optional<int32_t> rank_from_description(const std::string& description);
// A row without the v9 columns: both of the above, where the row has none of its own.
void fill_from_description(StoredRow& r);

}  // namespace gt
