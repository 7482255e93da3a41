// A plugin whose entry point returns no table.
#include <gemmtune/plugin_abi.h>
extern "C" GT_PLUGIN_EXPORT const gt_plugin* gemmtune_plugin_entry(uint32_t) { return nullptr; }
