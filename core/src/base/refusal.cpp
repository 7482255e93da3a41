#include "base/refusal.hpp"

namespace gt {

std::string_view refusal_name(gt_refusal code) {
  switch (code) {
    case GT_REFUSAL_NONE: return "none";
    case GT_REFUSAL_DTYPE: return "unsupported dtype";
    case GT_REFUSAL_LAYOUT: return "unsupported layout";
    case GT_REFUSAL_ARCH: return "unsupported architecture";
    case GT_REFUSAL_SHAPE: return "cannot implement the shape";
    case GT_REFUSAL_RESOURCES: return "exceeds the device";
    case GT_REFUSAL_CONFIG: return "invalid config";
  }
  return "?";
}

}  // namespace gt
