#include "plugin.hpp"

#include "errors.hpp"

#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>
#include <fmt/format.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <mutex>

namespace gt {
namespace fs = std::filesystem;

namespace {
constexpr size_t kMsg = 2048;

// Loaded libraries are never unloaded: kernels, strings and function pointers they hand
// out stay valid for the life of the process.
std::deque<boost::dll::shared_library>& keep_alive() {
  static std::deque<boost::dll::shared_library> libs;
  return libs;
}
std::mutex& keep_alive_mutex() {
  static std::mutex m;
  return m;
}

bool valid_family_name(const char* s) {
  if (!s || !*s) return false;
  for (const char* c = s; *c; ++c)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_')) return false;
  return true;
}
}  // namespace

LibraryOp::~LibraryOp() {
  if (op_ && abi_->destroy_op) abi_->destroy_op(op_);
}

void LibraryOp::run(const void* a, const void* b, void* c, void* ws, uint64_t ws_bytes, void* stream) const {
  char msg[kMsg] = {0};
  if (abi_->run_op(op_, a, b, c, ws, ws_bytes, stream, msg, kMsg) != GT_OK)
    throw RuntimeFailure(fmt::format("{}: run failed: {}", abi_->name, msg));
}

std::string Family::provenance() const {
  return abi_->provenance ? std::string(abi_->provenance()) : std::string();
}

Space Family::space(const Problem& p, const gt_device& dev) const {
  gt_space s{};
  char msg[kMsg] = {0};
  gt_problem gp = p.abi();
  gt_status st = abi_->describe_space(&gp, &dev, &s, msg, kMsg);
  if (st != GT_OK)
    throw RuntimeFailure(fmt::format("{}: cannot describe its space for {}: {}", name(), p.key(), msg));
  std::vector<Param> params;
  for (int32_t i = 0; i < s.count; ++i) {
    const gt_param& g = s.params[i];
    Param prm;
    prm.name = g.name ? g.name : "";
    prm.help = g.help ? g.help : "";
    prm.values.assign(g.values, g.values + g.count);
    if (g.labels)
      for (int32_t j = 0; j < g.count; ++j) prm.labels.emplace_back(g.labels[j] ? g.labels[j] : "");
    prm.default_index = size_t(std::clamp(g.default_index, 0, std::max(0, g.count - 1)));
    params.push_back(std::move(prm));
  }
  Space space(name(), version(), std::move(params));
  Family self = *this;
  space.add_constraint([self, p, dev](const Config& c) { return self.can_implement(p, c, dev); });
  return space;
}

std::optional<std::string> Family::can_implement(const Problem& p, const Config& c, const gt_device& dev) const {
  char msg[kMsg] = {0};
  gt_problem gp = p.abi();
  gt_status st = abi_->can_implement(&gp, c.data(), int32_t(c.size()), &dev, msg, kMsg);
  if (st == GT_OK) return std::nullopt;
  if (st == GT_REFUSED) return std::string(msg[0] ? msg : "refused (no reason given)");
  return fmt::format("plugin error: {}", msg);
}

std::optional<KernelSpec> Family::build(const Problem& p, const Config& c, const gt_device& dev,
                                        std::string* why) const {
  if (!abi_->build_kernel) throw RuntimeFailure(name() + " is a library family: it builds no kernel");
  gt_kernel k{};
  char msg[kMsg] = {0};
  gt_problem gp = p.abi();
  gt_status st = abi_->build_kernel(&gp, c.data(), int32_t(c.size()), &dev, &k, msg, kMsg);
  if (st == GT_REFUSED) {
    if (why) *why = msg;
    return std::nullopt;
  }
  if (st != GT_OK) throw RuntimeFailure(fmt::format("{}: build failed: {}", name(), msg));
  if (!k.source || !k.kernel_name)
    throw RuntimeFailure(fmt::format("{}: build returned no source or kernel name", name()));
  KernelSpec ks;
  ks.source = k.source;
  ks.source_name = k.source_name ? k.source_name : name() + ".cu";
  ks.kernel_name = k.kernel_name;
  for (int32_t i = 0; i < k.option_count; ++i) ks.options.emplace_back(k.options[i]);
  for (int i = 0; i < 3; ++i) {
    ks.grid[i] = std::max(1u, k.grid[i]);
    ks.block[i] = std::max(1u, k.block[i]);
  }
  ks.dynamic_smem = k.dynamic_smem_bytes;
  return ks;
}

std::vector<Config> Family::suggest(const Problem& p, const gt_device& dev, int max, size_t dims) const {
  if (!abi_->suggest || max <= 0 || dims == 0) return {};
  std::vector<int64_t> buf(size_t(max) * dims);
  int32_t count = 0;
  char msg[kMsg] = {0};
  gt_problem gp = p.abi();
  if (abi_->suggest(&gp, &dev, max, buf.data(), &count, msg, kMsg) != GT_OK) return {};
  std::vector<Config> out;
  for (int32_t i = 0; i < std::min(count, max); ++i)
    out.emplace_back(buf.begin() + long(size_t(i) * dims), buf.begin() + long(size_t(i + 1) * dims));
  return out;
}

std::unique_ptr<LibraryOp> Family::create_op(const Problem& p, const Config& c, std::string* why) const {
  if (!abi_->create_op) throw RuntimeFailure(name() + " is a source family: it has no library op");
  void* op = nullptr;
  uint64_t ws = 0;
  char msg[kMsg] = {0};
  gt_problem gp = p.abi();
  gt_status st = abi_->create_op(&gp, c.data(), int32_t(c.size()), &op, &ws, msg, kMsg);
  if (st == GT_REFUSED) {
    if (why) *why = msg;
    return nullptr;
  }
  if (st != GT_OK) throw RuntimeFailure(fmt::format("{}: create failed: {}", name(), msg));
  return std::make_unique<LibraryOp>(abi_, op, ws);
}

std::string Family::describe(const Problem& p, const Config& c) const {
  if (!abi_->describe_config) return "";
  char out[kMsg] = {0};
  gt_problem gp = p.abi();
  if (abi_->describe_config(&gp, c.data(), int32_t(c.size()), out, kMsg) != GT_OK) return "";
  return out;
}

PluginRegistry PluginRegistry::load(const std::vector<fs::path>& dirs) {
  PluginRegistry reg;
  for (auto& dir : dirs) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      reg.skipped_.push_back({dir, "plugin directory does not exist"});
      continue;
    }
    std::vector<fs::path> files;
    for (auto& e : fs::directory_iterator(dir, ec))
      if (e.is_regular_file() && e.path().extension() == ".so") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (auto& f : files) {
      boost::dll::shared_library lib;
      try {
        lib.load(boost::dll::fs::path(f.string()),
                 boost::dll::load_mode::rtld_lazy | boost::dll::load_mode::rtld_local);
      } catch (const std::exception& e) {
        reg.skipped_.push_back({f, fmt::format("cannot be loaded: {}", e.what())});
        continue;
      }
      if (!lib.has(GT_PLUGIN_ENTRY_SYMBOL)) {
        reg.skipped_.push_back({f, "not a gemmtune plugin (no " GT_PLUGIN_ENTRY_SYMBOL " symbol)"});
        continue;
      }
      const gt_plugin* abi = nullptr;
      try {
        auto entry = lib.get<const gt_plugin*(uint32_t)>(GT_PLUGIN_ENTRY_SYMBOL);
        abi = entry(GT_ABI_VERSION);
      } catch (const std::exception& e) {
        reg.skipped_.push_back({f, fmt::format("its entry point threw: {}", e.what())});
        continue;
      } catch (...) {
        reg.skipped_.push_back({f, "its entry point threw an unknown exception"});
        continue;
      }
      if (!abi) {
        reg.skipped_.push_back({f, "its entry point returned no plugin table"});
        continue;
      }
      if (abi->abi_version != GT_ABI_VERSION) {
        reg.skipped_.push_back({f, fmt::format("built for plugin ABI v{}, this gemmtune speaks v{}",
                                               abi->abi_version, GT_ABI_VERSION)});
        continue;
      }
      if (abi->struct_size < sizeof(gt_plugin)) {
        reg.skipped_.push_back({f, fmt::format("plugin table is {} bytes, expected at least {}",
                                               abi->struct_size, sizeof(gt_plugin))});
        continue;
      }
      if (!valid_family_name(abi->name) || !abi->version || !abi->describe_space || !abi->can_implement) {
        reg.skipped_.push_back({f, "plugin table is incomplete (name, version, describe_space, can_implement)"});
        continue;
      }
      bool source_ok = abi->kind == GT_KIND_SOURCE && abi->build_kernel;
      bool lib_ok = abi->kind == GT_KIND_LIBRARY && abi->create_op && abi->run_op && abi->destroy_op;
      if (!source_ok && !lib_ok) {
        reg.skipped_.push_back({f, "plugin table lacks the slots of its kind (build_kernel, or create/run/destroy_op)"});
        continue;
      }
      if (auto* other = reg.find(abi->name)) {
        reg.skipped_.push_back({f, fmt::format("family '{}' is already loaded from {}", abi->name, other->path().string())});
        continue;
      }
      {
        std::lock_guard lk(keep_alive_mutex());
        keep_alive().push_back(std::move(lib));
      }
      reg.families_.emplace_back(abi, f);
    }
  }
  return reg;
}

const Family* PluginRegistry::find(std::string_view name) const {
  for (auto& f : families_)
    if (f.name() == name) return &f;
  return nullptr;
}

const Family& PluginRegistry::get(std::string_view name) const {
  if (auto* f = find(name)) return *f;
  std::string known;
  for (auto& f : families_) known += (known.empty() ? "" : ", ") + f.name();
  throw InputError(fmt::format("--family: unknown family '{}' (loaded: {})", name, known.empty() ? "none" : known));
}

std::vector<std::string> PluginRegistry::names() const {
  std::vector<std::string> n;
  for (auto& f : families_) n.push_back(f.name());
  return n;
}

fs::path executable_dir() {
  return fs::path(boost::dll::program_location().parent_path().string());
}

std::vector<fs::path> plugin_dirs(const std::vector<std::string>& flags) {
  std::vector<fs::path> dirs;
  for (auto& f : flags) dirs.emplace_back(f);
  if (dirs.empty()) {
    if (const char* env = std::getenv("GEMMTUNE_PLUGIN_PATH"); env && *env) {
      std::string s = env;
      size_t pos = 0;
      while (pos <= s.size()) {
        size_t end = s.find(':', pos);
        if (end == std::string::npos) end = s.size();
        if (end > pos) dirs.emplace_back(s.substr(pos, end - pos));
        pos = end + 1;
      }
    }
  }
  if (dirs.empty()) dirs.push_back(default_plugin_dir());
  return dirs;
}

// The binary this code is linked into: the executable, or libgemmtune_runtime.so inside a
// program that loaded it (a Python process, say), whose plugins are not beside the program.
static fs::path module_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&module_dir), &info) != 0 && info.dli_fname && info.dli_fname[0] != '\0') {
    std::error_code ec;
    fs::path p = fs::weakly_canonical(fs::absolute(info.dli_fname, ec), ec);  // through symlinks
    if (!ec && fs::is_regular_file(p, ec)) return p.parent_path();
  }
  return executable_dir();
}

fs::path default_plugin_dir() {
  // An install keeps its plugins under lib/gemmtune/plugins: GEMMTUNE_PLUGINS_FROM_BIN and
  // _FROM_LIB are the relative paths to it from the CLI's and the library's folders
  // (core/CMakeLists.txt). A build keeps them in the plugins folder beside the binaries.
  const fs::path here = module_dir();
  for (const char* rel : {GEMMTUNE_PLUGINS_FROM_BIN, GEMMTUNE_PLUGINS_FROM_LIB}) {
    std::error_code ec;
    if (fs::path p = (here / rel).lexically_normal(); fs::is_directory(p, ec)) return p;
  }
  return here / "plugins";
}

}  // namespace gt
