// Loading kernel-family plugins (Boost.DLL) and speaking their C ABI in C++ terms.
#pragma once

#include "problem.hpp"
#include "space.hpp"

#include <gemmtune/plugin_abi.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gt {

// What a source family asks to compile and how to launch it.
struct KernelSpec {
  const char* source = nullptr;  // static inside the plugin (lives as long as the process)
  std::string source_name;
  std::string kernel_name;
  std::vector<std::string> options;
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t dynamic_smem = 0;
};

// A library family's prepared operation (e.g. a re-created cuBLASLt algorithm).
class LibraryOp {
 public:
  LibraryOp(const gt_plugin* abi, void* op, uint64_t workspace) : abi_(abi), op_(op), workspace_(workspace) {}
  ~LibraryOp();
  LibraryOp(const LibraryOp&) = delete;
  LibraryOp& operator=(const LibraryOp&) = delete;
  uint64_t workspace_bytes() const { return workspace_; }
  // Throws RuntimeFailure with the plugin's message on failure.
  void run(const void* a, const void* b, void* c, void* ws, uint64_t ws_bytes, void* stream) const;

 private:
  const gt_plugin* abi_;
  void* op_;
  uint64_t workspace_;
};

class Family {
 public:
  Family(const gt_plugin* abi, std::filesystem::path path) : abi_(abi), path_(std::move(path)) {}

  std::string name() const { return abi_->name; }
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
  std::optional<std::string> can_implement(const Problem& p, const Config& c, const gt_device& dev) const;
  // Source families only. RuntimeFailure on a plugin failure; nullopt + reason on refusal.
  std::optional<KernelSpec> build(const Problem& p, const Config& c, const gt_device& dev, std::string* why) const;
  std::vector<Config> suggest(const Problem& p, const gt_device& dev, int max, size_t dims) const;
  std::unique_ptr<LibraryOp> create_op(const Problem& p, const Config& c, std::string* why) const;
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

}  // namespace gt
