// A family's refusal of a (problem, config), in C++ terms: the ABI's closed code
// (plugin_abi.h, gt_refusal) and the family's reason. Here, below the plugin loader, because
// core's checks of a problem (tensor maps, transforms) refuse in the same terms as a family.
#pragma once

#include <gemmtune/plugin_abi.h>

#include <string>
#include <string_view>

namespace gt {

struct Refused {
  gt_refusal code = GT_REFUSAL_NONE;
  std::string why;
};
// "unsupported dtype", "cannot implement the shape", "exceeds the device", ...
std::string_view refusal_name(gt_refusal code);

}  // namespace gt
