#include "build/plugin.hpp"

#include "base/errors.hpp"
#include "gpu/tensor_map.hpp"

#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>
#include <fmt/format.h>

#include <dlfcn.h>

#include <algorithm>
#include <array>
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

// A reply into a buffer of the host's.
struct Reply {
  char msg[kMsg] = {0};
  gt_reply r{msg, kMsg, GT_REFUSAL_NONE};
  gt_reply* get() { return &r; }
  std::string text(const char* fallback = "") const { return msg[0] ? std::string(msg) : std::string(fallback); }
  gt_refusal code() const {
    return r.refusal > GT_REFUSAL_NONE && r.refusal < GT_REFUSAL_COUNT ? gt_refusal(r.refusal) : GT_REFUSAL_CONFIG;
  }
};

bool valid_family_name(const char* s) { return s && gt::valid_family_name(std::string_view(s)); }
}  // namespace

bool valid_family_name(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

LibraryOp::~LibraryOp() {
  if (op_ && abi_->destroy_op) abi_->destroy_op(op_);
}

void LibraryOp::run(const void* a, const void* b, void* c, const gt_scales* scales, void* ws, uint64_t ws_bytes,
                    void* stream) const {
  Reply rep;
  gt_status st;
  if (scales) {
    if (abi_->abi_version < 3 || !abi_->run_op_scaled)
      throw RuntimeFailure(fmt::format("{}: runs no scaled (FP8) problem", abi_->name));
    st = abi_->run_op_scaled(op_, a, b, c, scales, ws, ws_bytes, stream, rep.get());
  } else {
    st = abi_->run_op(op_, a, b, c, ws, ws_bytes, stream, rep.get());
  }
  if (st != GT_OK) throw RuntimeFailure(fmt::format("{}: run failed: {}", abi_->name, rep.text()));
}

namespace {
// A v2 family was built before FP8 existed: it is never asked about an FP8 problem.
std::optional<Refused> predates_fp8(const gt_plugin* abi, const Problem& p) {
  if (!p.fp8() || abi->abi_version >= 3) return std::nullopt;
  return Refused{GT_REFUSAL_DTYPE, fmt::format("{} is built for plugin ABI v{}, which has no FP8 problems", abi->name,
                                               abi->abi_version)};
}
}  // namespace

std::array<uint32_t, 3> KernelSpec::launch_grid(int sm_count, int co_resident_ctas) const {
  std::array<uint32_t, 3> g{grid[0], grid[1], grid[2]};
  if (grid_per_sm > 0 && sm_count > 0) {
    const uint32_t c = std::max(1u, cluster[0]);
    uint64_t cap = uint64_t(grid_per_sm) * uint64_t(sm_count);
    if (co_resident_ctas > 0) cap = std::min<uint64_t>(cap, uint64_t(co_resident_ctas));
    g[0] = uint32_t(std::max<uint64_t>(c, std::min<uint64_t>(g[0], cap) / c * c));
  }
  return g;
}

std::string KernelSpec::compile_arch(const std::string& arch) const {
  if (arch_specific && !arch.empty() && arch.back() != 'a') return arch + "a";
  return arch;
}

std::string KernelSpec::describe_requests() const {
  std::vector<std::string> parts;
  if (clustered()) parts.push_back(fmt::format("cluster {}x{}x{}", cluster[0], cluster[1], cluster[2]));
  if (grid_per_sm) parts.push_back(fmt::format("persistent grid ({} per SM)", grid_per_sm));
  if (dynamic_smem > 48 * 1024) parts.push_back(fmt::format("{} B shared memory (opt-in)", dynamic_smem));
  if (arch_specific) parts.push_back("arch-specific target (sm_XYa)");
  if (workspace_bytes) {
    static const char* zero[] = {"", ", zeroed once", ", zeroed each call"};
    parts.push_back(fmt::format("workspace {:.1f} MiB{}", double(workspace_bytes) / (1 << 20),
                                zero[std::clamp(int(workspace_zero), 0, 2)]));
  }
  for (auto& m : tensor_maps) {
    static const char* swz[] = {"no swizzle", "32B swizzle", "64B swizzle", "128B swizzle"};
    parts.push_back(fmt::format("tensor map {} box {}x{} ({})", operand_name(gt_operand(m.operand)), m.box[0], m.box[1],
                                m.swizzle >= 0 && m.swizzle <= 3 ? swz[m.swizzle] : "swizzle ?"));
  }
  std::string s;
  for (auto& p : parts) s += (s.empty() ? "" : ", ") + p;
  return s.empty() ? "none" : s;
}

uint64_t build_hash(const KernelSpec& k) {
  // Every field length-prefixed (as Provenance::fingerprint), so no two specs serialise alike.
  std::string s = "gemmtune-build\n";
  auto add = [&s](std::string_view name, std::string_view v) { s += fmt::format("{}:{}:{}\n", name, v.size(), v); };
  add("source", k.source ? std::string_view(k.source) : std::string_view());
  add("source_name", k.source_name);
  add("kernel", k.kernel_name);
  for (auto& o : k.options) add("option", o);
  add("geometry", fmt::format("{} {} {} / {} {} {} / {} / {} {} {} / {} / {}", k.grid[0], k.grid[1], k.grid[2], k.block[0],
                              k.block[1], k.block[2], k.dynamic_smem, k.cluster[0], k.cluster[1], k.cluster[2],
                              k.grid_per_sm, k.arch_specific));
  if (k.takes_scales) add("takes_scales", "1");  // absent otherwise: the hashes of unscaled builds stay as they were
  add("workspace", fmt::format("{} {}", k.workspace_bytes, int(k.workspace_zero)));
  for (auto& m : k.tensor_maps)
    add("tensor_map", fmt::format("{} {} {} {} {} {} {} {} {} {}", m.operand, m.rank, m.box[0], m.box[1],
                                  m.element_strides[0], m.element_strides[1], m.interleave, m.swizzle,
                                  m.l2_promotion, m.oob_fill));
  std::string sc;
  for (auto v : k.scalars) sc += std::to_string(v) + " ";
  add("scalars", sc);
  return stable_hash(s);
}

std::string Family::provenance() const {
  return abi_->provenance ? std::string(abi_->provenance()) : std::string();
}

Space Family::space(const Problem& p, const gt_device& dev) const {
  if (auto r = predates_fp8(abi_, p)) throw RuntimeFailure(fmt::format("{}: no space for {}: {}", name(), p.key(), r->why));
  gt_space s{};
  Reply rep;
  gt_problem gp = p.abi();
  gt_status st = abi_->describe_space(&gp, &dev, &s, rep.get());
  if (st != GT_OK)
    throw RuntimeFailure(fmt::format("{}: cannot describe its space for {}: {}", name(), p.key(), rep.text()));
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

std::optional<Refused> Family::refusal(const Problem& p, const Config& c, const gt_device& dev) const {
  if (auto r = predates_fp8(abi_, p)) return r;
  Reply rep;
  gt_problem gp = p.abi();
  gt_status st = abi_->can_implement(&gp, c.data(), int32_t(c.size()), &dev, rep.get());
  if (st == GT_OK) return std::nullopt;
  if (st == GT_REFUSED) return Refused{rep.code(), rep.text("refused (no reason given)")};
  return Refused{GT_REFUSAL_CONFIG, fmt::format("plugin error: {}", rep.text())};
}

std::optional<std::string> Family::can_implement(const Problem& p, const Config& c, const gt_device& dev) const {
  if (auto r = refusal(p, c, dev)) return std::move(r->why);
  return std::nullopt;
}

std::optional<Refused> check_requests(const KernelSpec& ks, const Problem& p, const gt_device& dev) {
  for (auto& m : ks.tensor_maps) {
    Refused why;
    if (!tensor_map_shape(p, m, &why)) return why;
  }
  if (ks.clustered()) {
    if (dev.cc_major < 9)
      return Refused{GT_REFUSAL_ARCH, fmt::format("thread-block clusters need compute capability 9.0; this is {}.{}",
                                                  dev.cc_major, dev.cc_minor)};
    const uint32_t size = ks.cluster[0] * ks.cluster[1] * ks.cluster[2];
    if (size > 8)
      return Refused{GT_REFUSAL_CONFIG, fmt::format("a cluster of {} blocks is past the portable 8", size)};
    for (int i = 0; i < 3; ++i)
      if (ks.grid_per_sm == 0 && ks.grid[i] % ks.cluster[i] != 0)
        return Refused{GT_REFUSAL_CONFIG, fmt::format("grid dimension {} ({}) is not a multiple of the cluster's ({})", i,
                                                      ks.grid[i], ks.cluster[i])};
  }
  if (ks.grid_per_sm > 0 && (ks.grid[1] != 1 || ks.grid[2] != 1 || ks.cluster[1] != 1 || ks.cluster[2] != 1))
    return Refused{GT_REFUSAL_CONFIG, "a persistent grid is one-dimensional (grid and cluster along x only)"};
  if (ks.dynamic_smem > uint32_t(std::max(0, dev.smem_per_block_optin)))
    return Refused{GT_REFUSAL_RESOURCES, fmt::format("needs {} bytes of shared memory; the device allows {} per block",
                                                     ks.dynamic_smem, dev.smem_per_block_optin)};
  if (ks.workspace_bytes > uint64_t(dev.global_mem_bytes > 0 ? dev.global_mem_bytes / 4 : int64_t(1) << 40))
    return Refused{GT_REFUSAL_RESOURCES, fmt::format("asks a workspace of {:.1f} MiB, more than a quarter of the device's memory",
                                                     double(ks.workspace_bytes) / (1 << 20))};
  return std::nullopt;
}

std::optional<KernelSpec> Family::build(const Problem& p, const Config& c, const gt_device& dev, Refused* why) const {
  if (!abi_->build_kernel) throw RuntimeFailure(name() + " is a library family: it builds no kernel");
  if (auto r = predates_fp8(abi_, p)) {
    if (why) *why = *r;
    return std::nullopt;
  }
  gt_kernel k{};
  Reply rep;
  gt_problem gp = p.abi();
  gt_status st = abi_->build_kernel(&gp, c.data(), int32_t(c.size()), &dev, &k, rep.get());
  if (st == GT_REFUSED) {
    if (why) *why = Refused{rep.code(), rep.text("refused (no reason given)")};
    return std::nullopt;
  }
  if (st != GT_OK) throw RuntimeFailure(fmt::format("{}: build failed: {}", name(), rep.text()));
  if (!k.source || !k.kernel_name)
    throw RuntimeFailure(fmt::format("{}: build returned no source or kernel name", name()));
  if (k.tensor_map_count < 0 || k.tensor_map_count > GT_MAX_TENSOR_MAPS)
    throw RuntimeFailure(fmt::format("{}: build asked {} tensor maps (at most {})", name(), k.tensor_map_count,
                                     GT_MAX_TENSOR_MAPS));
  KernelSpec ks;
  ks.source = k.source;
  ks.source_name = k.source_name ? k.source_name : name() + ".cu";
  ks.kernel_name = k.kernel_name;
  for (int32_t i = 0; i < k.option_count; ++i) ks.options.emplace_back(k.options[i]);
  for (int i = 0; i < 3; ++i) {
    ks.grid[i] = std::max(1u, k.grid[i]);
    ks.block[i] = std::max(1u, k.block[i]);
    ks.cluster[i] = std::max(1u, k.cluster[i]);
  }
  ks.dynamic_smem = k.dynamic_smem_bytes;
  ks.grid_per_sm = k.grid_per_sm;
  ks.arch_specific = k.arch_specific != 0;
  ks.workspace_bytes = k.workspace_bytes;
  ks.workspace_zero = gt_workspace_zero(std::clamp(k.workspace_zero, 0, 2));
  ks.tensor_maps.assign(k.tensor_maps, k.tensor_maps + k.tensor_map_count);
  std::copy(k.scalars, k.scalars + GT_SCALARS, ks.scalars.begin());
  ks.takes_scales = abi_->abi_version >= 3 && k.takes_scales != 0;  // a v2 table's word was reserved
  if (p.fp8() && !ks.takes_scales)
    throw RuntimeFailure(fmt::format("{}: its kernel for {} takes no scales", name(), p.key()));
  if (auto bad = check_requests(ks, p, dev)) {
    if (why) *why = *bad;
    return std::nullopt;
  }
  return ks;
}

std::optional<uint64_t> Family::build_hash(const Problem& p, const Config& c, const gt_device& dev) const {
  if (!is_library()) {
    auto ks = build(p, c, dev, nullptr);
    if (!ks) return std::nullopt;
    return gt::build_hash(*ks);
  }
  if (abi_->op_hash) {
    uint64_t h = 0;
    Reply rep;
    gt_problem gp = p.abi();
    gt_status st = abi_->op_hash(&gp, c.data(), int32_t(c.size()), &h, rep.get());
    if (st == GT_REFUSED) return std::nullopt;
    if (st != GT_OK) throw RuntimeFailure(fmt::format("{}: op_hash failed: {}", name(), rep.text()));
    return h;
  }
  std::string s = fmt::format("gemmtune-op\n{}\n{}\n{}\n", name(), version(), provenance());
  for (auto v : c) s += std::to_string(v) + " ";
  return stable_hash(s);
}

std::vector<Config> Family::suggest(const Problem& p, const gt_device& dev, int max, size_t dims) const {
  if (!abi_->suggest || max <= 0 || dims == 0 || predates_fp8(abi_, p)) return {};
  std::vector<int64_t> buf(size_t(max) * dims);
  int32_t count = 0;
  Reply rep;
  gt_problem gp = p.abi();
  if (abi_->suggest(&gp, &dev, max, buf.data(), &count, rep.get()) != GT_OK) return {};
  std::vector<Config> out;
  for (int32_t i = 0; i < std::min(count, max); ++i)
    out.emplace_back(buf.begin() + long(size_t(i) * dims), buf.begin() + long(size_t(i + 1) * dims));
  return out;
}

std::unique_ptr<LibraryOp> Family::create_op(const Problem& p, const Config& c, Refused* why) const {
  if (!abi_->create_op) throw RuntimeFailure(name() + " is a source family: it has no library op");
  if (auto r = predates_fp8(abi_, p)) {
    if (why) *why = *r;
    return nullptr;
  }
  if (p.fp8() && !abi_->run_op_scaled) {
    if (why) *why = Refused{GT_REFUSAL_DTYPE, name() + " has no run_op_scaled: it runs no FP8 problem"};
    return nullptr;
  }
  void* op = nullptr;
  uint64_t ws = 0;
  Reply rep;
  gt_problem gp = p.abi();
  gt_status st = abi_->create_op(&gp, c.data(), int32_t(c.size()), &op, &ws, rep.get());
  if (st == GT_REFUSED) {
    if (why) *why = Refused{rep.code(), rep.text("refused (no reason given)")};
    return nullptr;
  }
  if (st != GT_OK) throw RuntimeFailure(fmt::format("{}: create failed: {}", name(), rep.text()));
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
    for (auto& e : fs::directory_iterator(dir, ec)) {
      if (e.path().extension() != ".so") continue;
      std::error_code fe;
      if (e.is_regular_file(fe)) {
        files.push_back(e.path());
      } else if (e.is_symlink(fe) && !fs::exists(e.path(), fe)) {
        reg.skipped_.push_back({e.path(), "a link to " + fs::read_symlink(e.path(), fe).string() +
                                              ", which does not exist (or is a loop of links)"});
      } else {
        reg.skipped_.push_back({e.path(), "not a regular file"});
      }
    }
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
      if (abi->abi_version < GT_ABI_VERSION_OLDEST || abi->abi_version > GT_ABI_VERSION) {
        // Every version's table starts with abi_version, struct_size and name: the refusal
        // can say which family it was.
        const char* old = abi->struct_size >= 3 * sizeof(void*) && valid_family_name(abi->name) ? abi->name : nullptr;
        reg.skipped_.push_back(
            {f, fmt::format("family '{}' is built for plugin ABI v{}; this gemmtune speaks v{} to v{}{}", old ? old : "?",
                            abi->abi_version, GT_ABI_VERSION_OLDEST, GT_ABI_VERSION,
                            abi->abi_version < GT_ABI_VERSION_OLDEST
                                ? " (v2 adds refusal codes, tensor maps, clusters, persistent grids and a workspace): "
                                  "rebuild it against this gemmtune's plugin_abi.h"
                                : ": use the gemmtune it was built for")});
        continue;
      }
      // A v2 table ends where v3's run_op_scaled begins.
      const size_t table_size = abi->abi_version >= 3 ? sizeof(gt_plugin) : GT_PLUGIN_V2_SIZE;
      if (abi->struct_size < table_size) {
        reg.skipped_.push_back({f, fmt::format("plugin table is {} bytes, expected at least {} for ABI v{}",
                                               abi->struct_size, table_size, abi->abi_version)});
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
