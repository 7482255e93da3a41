// A plugin built against a future ABI: the loader must skip it by name.
#include <gemmtune/plugin_abi.h>
static gt_plugin p = [] {
  gt_plugin x{};
  x.abi_version = 99;
  x.struct_size = sizeof(gt_plugin);
  x.name = "wrong_abi";
  x.version = "1";
  return x;
}();
extern "C" GT_PLUGIN_EXPORT const gt_plugin* gemmtune_plugin_entry(uint32_t) { return &p; }
