// What gemmtune's own tools may ask of a Runtime beyond its public interface, kept out of the
// installed header (gemmtune_runtime.hpp names no core type).
#pragma once

#include "gemmtune_runtime.hpp"

namespace gt {
class Runnable;
}

namespace gemmtune {

struct Internals {
  // The prepared kernel of a problem (nullptr: not prepared yet, or a dry run), so that a
  // benchmark can launch it directly and measure what gemm() adds.
  static const gt::Runnable* runnable(const Runtime& rt, const GemmArgs& g);
};

}  // namespace gemmtune
