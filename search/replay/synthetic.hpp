// Synthetic GEMM landscapes: parameter spaces shaped like the register_tile and wmma
// families (ordered, interacting tile / warp / vector / pipeline parameters, device-limit
// constraints) with an analytic timing model, failing regions and measurement noise.
// They stand in for a GPU when strategies are tested and benchmarked and no recording is
// given; deterministic for a seed.
#pragma once

#include "tune/driver.hpp"
#include "base/problem.hpp"
#include "base/space.hpp"

#include <gemmtune/plugin_abi.h>

#include <string>
#include <vector>

namespace gt::search {

enum class SyntheticKind {
  register_tile,  // fp32 SIMT, like plugins/register_tile: block and thread tiles, lane arrangement,
                  // load width, pipeline, rasterisation, occupancy promise (2.25e5 raw points)
  wmma,           // tensor cores, like plugins/wmma: loader, block and warp tiles, fragment,
                  // stages, shared-memory layout, epilogue, rasterisation (1.5e5 raw points)
};

class SyntheticGemm {
 public:
  SyntheticGemm(SyntheticKind kind, const Problem& problem, const gt_device& device, uint64_t seed);

  const Space& space() const { return space_; }
  const Problem& problem() const { return problem_; }
  SyntheticKind kind() const { return kind_; }
  // "synthetic register_tile 4096x4096x4096 f32>f32 nn a16"
  std::string name() const;

  // The (deterministic) outcome of one config: refused configs get cannot_implement /
  // resources; some valid ones fail (sporadic wrong answers; compile timeouts clustered on
  // the largest tiles and deepest pipelines), reporting a tempting fast time that must never
  // win; the others a modelled time times a fixed per-config factor of about 2.5 % (how well
  // the compiler happened to schedule that kernel: it makes the landscape rugged) and about
  // 1 % measurement noise.
  Outcome evaluate(const Config& c) const;
  Objective objective() const;  // refers to *this: keep it alive while the objective is used

  // The spaces tests and bench_search use: register_tile and wmma, square and awkward
  // shapes, on sm_90's limits.
  static std::vector<SyntheticGemm> suite(uint64_t seed);

 private:
  SyntheticKind kind_;
  Problem problem_;
  gt_device device_;
  uint64_t seed_;
  Space space_;
};

}  // namespace gt::search
