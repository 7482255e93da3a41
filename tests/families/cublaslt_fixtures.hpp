// Shared by the cublaslt family's CPU and GPU tests: the positions of its ten parameters, the
// loaded family, membership of a config in a list, and the round trips of a config's name.
#pragma once
#include "build/plugin.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace gt::cublaslt_test {

constexpr int kDims = 10;  // algo, tile, stages, split_k, reduction, swizzle, custom, cluster, inner, workspace
enum { kAlgo, kTile, kStages, kSplitK, kReduction, kSwizzle, kCustom, kCluster, kInner, kWorkspace };

inline const Family& cublaslt() { return test::plugins().get("cublaslt"); }

inline bool in(const std::vector<Config>& list, const Config& c) { return std::find(list.begin(), list.end(), c) != list.end(); }

// Each config reads back from its name and from its parameter assignments as itself.
inline void check_round_trips(const Space& s, const std::vector<Config>& configs) {
  for (const Config& c : configs) {
    std::string err, name = s.name(c);
    INFO(name);
    auto back = s.parse(name, &err);
    INFO(err);
    REQUIRE(back);
    CHECK(*back == c);
    auto back2 = s.parse(s.assignments(c), &err);
    REQUIRE(back2);
    CHECK(*back2 == c);
  }
}

}  // namespace gt::cublaslt_test
