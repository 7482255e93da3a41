// Shared by the cublaslt family's CPU and GPU tests: the positions of its ten parameters, the
// loaded family, and membership of a config in a list.
#pragma once
#include "build/plugin.hpp"
#include "test_util.hpp"

#include <algorithm>
#include <vector>

namespace gt::cublaslt_test {

constexpr int kDims = 10;  // algo, tile, stages, split_k, reduction, swizzle, custom, cluster, inner, workspace
enum { kAlgo, kTile, kStages, kSplitK, kReduction, kSwizzle, kCustom, kCluster, kInner, kWorkspace };

inline const Family& cublaslt() { return test::plugins().get("cublaslt"); }

inline bool in(const std::vector<Config>& list, const Config& c) { return std::find(list.begin(), list.end(), c) != list.end(); }

}  // namespace gt::cublaslt_test
