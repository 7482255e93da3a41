// A plugin built against plugin ABI v1, whose table began as every version's does (the
// version, the size, the name): the loader must refuse it by name, saying why.
#include <cstdint>
#include <gemmtune/plugin_abi.h>
namespace {
struct V1Head {
  uint32_t abi_version;
  uint32_t struct_size;
  const char* name;
  const char* version;
  const char* summary;
  int32_t kind;
  uint64_t source_hash;
  void* slots[10];
};
const V1Head kTable = {1u, sizeof(V1Head), "old_family", "1.0", "built against ABI v1", 0, 0, {}};
}  // namespace
extern "C" GT_PLUGIN_EXPORT const gt_plugin* gemmtune_plugin_entry(uint32_t) {
  return reinterpret_cast<const gt_plugin*>(&kTable);
}
