// A plugin whose entry point throws: the loader must catch it and skip the plugin.
#include <gemmtune/plugin_abi.h>
#include <stdexcept>
extern "C" GT_PLUGIN_EXPORT const gt_plugin* gemmtune_plugin_entry(uint32_t) {
  throw std::runtime_error("entry point exploded on purpose");
}
