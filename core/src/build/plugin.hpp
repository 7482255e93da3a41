// Loading kernel-family plugins (Boost.DLL) and speaking their C ABI in C++ terms.
#pragma once

#include "base/problem.hpp"
#include "base/refusal.hpp"
#include "base/space.hpp"

#include <gemmtune/plugin_abi.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gt {

// What a source family asks to compile and how to launch it (plugin_abi.h, gt_kernel).
struct KernelSpec {
  const char* source = nullptr;  // static inside the plugin (lives as long as the process)
  std::string source_name;
  std::string kernel_name;
  std::vector<std::string> options;
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t dynamic_smem = 0;
  uint32_t cluster[3] = {1, 1, 1};
  uint32_t grid_per_sm = 0;    // > 0: persistent grid, capped at grid_per_sm x the SM count
  bool arch_specific = false;  // compile for sm_XYa
  uint64_t workspace_bytes = 0;
  gt_workspace_zero workspace_zero = GT_WORKSPACE_ZERO_NEVER;
  std::vector<gt_tensor_map_request> tensor_maps;
  std::array<int64_t, GT_SCALARS> scalars{};
  bool takes_scales = false;   // the kernel takes a gt_scales after the scalars (FP8, ABI v3)

  bool clustered() const { return cluster[0] * cluster[1] * cluster[2] > 1; }
  // The grid launched on a device with `sm_count` SMs (the persistent cap applied). A
  // persistent grid of clusters is also capped at `co_resident_ctas` (> 0: the CTAs of the
  // clusters that can run at once, cudaOccupancyMaxActiveClusters x the cluster's size): a
  // cluster must fit in one GPC, so 4-CTA clusters may not fill every SM, and a cluster that
  // waits for a free GPC runs its whole share of the tiles after the others.
  std::array<uint32_t, 3> launch_grid(int sm_count, int co_resident_ctas = 0) const;
  // The architecture to compile for on `arch` ("sm_90" -> "sm_90a" when arch_specific).
  std::string compile_arch(const std::string& arch) const;
  // What a person reads of the requests: "cluster 2x1x1, persistent (1 per SM), 232448 B
  // shared memory, workspace 4.0 MiB (zeroed once), tensor maps A 64x128 (128B swizzle), B ...".
  std::string describe_requests() const;
};

// Core's own checks of what a build answer requests, against the problem and the device: the
// tensor maps (tensor_map_shape), the cluster (Hopper and later, the grid a multiple of it,
// at most 8 CTAs), a persistent grid (one-dimensional), shared memory and workspace sizes.
// Family::build applies them; nullopt when all hold.
std::optional<Refused> check_requests(const KernelSpec& spec, const Problem& p, const gt_device& dev);

// The exact build of a source family's config (everything in the spec: source, options,
// launch geometry and requests) as a stable 64-bit hash: a stored measurement is reused only
// while it is unchanged (plugin_abi.h).
uint64_t build_hash(const KernelSpec& spec);

// A library family's prepared operation (e.g. a re-created cuBLASLt algorithm).
class LibraryOp {
 public:
  LibraryOp(const gt_plugin* abi, void* op, uint64_t workspace) : abi_(abi), op_(op), workspace_(workspace) {}
  ~LibraryOp();
  LibraryOp(const LibraryOp&) = delete;
  LibraryOp& operator=(const LibraryOp&) = delete;
  uint64_t workspace_bytes() const { return workspace_; }
  // Throws RuntimeFailure with the plugin's message on failure. `scales`: an FP8 problem's
  // (run through run_op_scaled), nullptr for every other problem.
  void run(const void* a, const void* b, void* c, const gt_scales* scales, void* ws, uint64_t ws_bytes,
           void* stream) const;

 private:
  const gt_plugin* abi_;
  void* op_;
  uint64_t workspace_;
};

class Family {
 public:
  Family(const gt_plugin* abi, std::filesystem::path path) : abi_(abi), path_(std::move(path)) {}

  std::string name() const { return abi_->name; }
  uint32_t abi_version() const { return abi_->abi_version; }
  // ABI v3 and later: the family may be asked about FP8 problems (a v2 family never is).
  bool knows_fp8() const { return abi_->abi_version >= 3; }
  std::string version() const { return abi_->version; }
  std::string summary() const { return abi_->summary ? abi_->summary : ""; }
  bool is_library() const { return abi_->kind == GT_KIND_LIBRARY; }
  uint64_t source_hash() const { return abi_->source_hash; }
  std::string provenance() const;  // plugin's extra provenance ("" if none)
  const std::filesystem::path& path() const { return path_; }
  const gt_plugin* abi() const { return abi_; }

  // The space for a problem on a device; its constraint is the plugin's can_implement.
  // Throws RuntimeFailure when the plugin cannot describe it (message says why).
  Space space(const Problem& p, const gt_device& dev) const;
  // The plugin's refusal with its code (a plugin error is refused as GT_REFUSAL_CONFIG with
  // "plugin error: ..."); nullopt when it can implement the config.
  std::optional<Refused> refusal(const Problem& p, const Config& c, const gt_device& dev) const;
  // The same, the reason alone (a Space's constraint).
  std::optional<std::string> can_implement(const Problem& p, const Config& c, const gt_device& dev) const;
  // Source families only: the plugin's build answer, its requests checked against the
  // problem (a tensor map the problem's strides cannot have is refused here too).
  // RuntimeFailure on a plugin failure; nullopt + the refusal otherwise.
  std::optional<KernelSpec> build(const Problem& p, const Config& c, const gt_device& dev, Refused* why) const;
  // The hash of the exact build of (problem, config): source families build_hash(build()),
  // library families the plugin's op_hash (else the config with the family's version and
  // provenance). nullopt when the config is refused.
  std::optional<uint64_t> build_hash(const Problem& p, const Config& c, const gt_device& dev) const;
  std::vector<Config> suggest(const Problem& p, const gt_device& dev, int max, size_t dims) const;
  std::unique_ptr<LibraryOp> create_op(const Problem& p, const Config& c, Refused* why) const;
  std::string describe(const Problem& p, const Config& c) const;

 private:
  const gt_plugin* abi_;
  std::filesystem::path path_;
};

struct SkippedPlugin {
  std::filesystem::path path;
  std::string reason;
};

// The plugins found in a list of directories. Libraries stay loaded for the life of the
// process. Only the named directories are searched, never the current directory.
class PluginRegistry {
 public:
  static PluginRegistry load(const std::vector<std::filesystem::path>& dirs);

  const std::vector<Family>& families() const { return families_; }
  const std::vector<SkippedPlugin>& skipped() const { return skipped_; }
  const Family* find(std::string_view name) const;
  // Like find, but an InputError listing the families that exist when there is none.
  const Family& get(std::string_view name) const;
  std::vector<std::string> names() const;

 private:
  std::vector<Family> families_;
  std::vector<SkippedPlugin> skipped_;
};

// Plugin directories from --plugin-dir flags, then GEMMTUNE_PLUGIN_PATH, else
// default_plugin_dir().
std::vector<std::filesystem::path> plugin_dirs(const std::vector<std::string>& flags);
// Where the binary running this code (the CLI, or libgemmtune_runtime.so) keeps its plugins:
// the install's lib/gemmtune/plugins when it is installed, else the plugins folder beside it.
std::filesystem::path default_plugin_dir();
std::filesystem::path executable_dir();

// A family's name as the loader accepts it: lower case letters, digits and '_', not empty. A
// config's name starts with it, so a recording or a table naming a family must spell it so too.
bool valid_family_name(std::string_view name);

}  // namespace gt
