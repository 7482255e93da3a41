// Header-only helpers for writing a gemmtune plugin in C++. Depends only on plugin_abi.h
// and the standard library, so a plugin that uses it still links nothing of core.
//
// The idiom every source family follows:
//   Plan plan(const gt_problem&, const int64_t* config, int32_t n, const gt_device&)
//       checks the (problem, config, device) and derives every quantity once; what cannot
//       be built is refused with `throw Refusal(GT_REFUSAL_..., "why")`;
//   Launch launch(const gt_problem&, const Plan&)
//       the kernel, its defines and everything its launch requests.
// source_family<plan, launch>(...) then makes the plugin table: can_implement is "the plan
// can be made", build_kernel is launch(plan(...)), so the two can never disagree.
//
//   - ParamTable: owns the storage behind a gt_space and reads configs by parameter name.
//   - guarded(): runs a body, turns a Refusal into GT_REFUSED with its code and every other
//     exception into GT_FAILED with its message.
//   - Launch / KernelOut: a kernel launch, kept alive (thread-local) until the next call.
#pragma once

#include "plugin_abi.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gt_kit {

inline void write_msg(char* buf, size_t cap, std::string_view s) {
  if (!buf || cap == 0) return;
  size_t n = s.size() < cap - 1 ? s.size() : cap - 1;
  std::memcpy(buf, s.data(), n);
  buf[n] = '\0';
}
inline void write_msg(gt_reply* r, std::string_view s) {
  if (r) write_msg(r->msg, r->msg_cap, s);
}

// Thrown inside a plugin to refuse a (problem, config) with a code and a reason; guarded()
// maps it to GT_REFUSED. Any other exception becomes GT_FAILED.
struct Refusal : std::runtime_error {
  Refusal(gt_refusal c, const std::string& why) : std::runtime_error(why), code(c) {}
  gt_refusal code;
};

template <class F>
gt_status guarded(gt_reply* reply, F&& body) noexcept {
  try {
    return body();
  } catch (const Refusal& r) {
    write_msg(reply, r.what());
    if (reply) reply->refusal = r.code;
    return GT_REFUSED;
  } catch (const std::exception& e) {
    write_msg(reply, e.what());
    return GT_FAILED;
  } catch (...) {
    write_msg(reply, "unknown exception inside plugin");
    return GT_FAILED;
  }
}
// For describe_config, which answers into a text buffer: a failure's message goes there.
template <class F>
gt_status guarded_text(char* out, size_t cap, F&& body) noexcept {
  gt_reply r{out, cap, GT_REFUSAL_NONE};
  return guarded(&r, std::forward<F>(body));
}

inline size_t dtype_size(int32_t dt) {
  switch (dt) {
    case GT_F32: case GT_TF32: return 4;
    case GT_F16: case GT_BF16: return 2;
    case GT_E4M3: case GT_E5M2: return 1;
    default: return 0;
  }
}
inline const char* dtype_name(int32_t dt) {
  switch (dt) {
    case GT_F32: return "f32";
    case GT_TF32: return "tf32";
    case GT_F16: return "f16";
    case GT_BF16: return "bf16";
    case GT_E4M3: return "e4m3";
    case GT_E5M2: return "e5m2";
    default: return "?";
  }
}
inline bool is_fp8(int32_t dt) { return dt == GT_E4M3 || dt == GT_E5M2; }
inline const char* scale_mode_name(int32_t m) {
  switch (m) {
    case GT_SCALE_NONE: return "none";
    case GT_SCALE_TENSOR: return "tensor";
    case GT_SCALE_ROW: return "row";
    case GT_SCALE_BLOCK: return "block";
    default: return "?";
  }
}
// The CUDA C++ type that stores a dtype (tf32 is stored as float; FP8 as cuda_fp8.h's types).
inline const char* dtype_cuda_type(int32_t dt) {
  switch (dt) {
    case GT_F32: case GT_TF32: return "float";
    case GT_F16: return "__half";
    case GT_BF16: return "__nv_bfloat16";
    case GT_E4M3: return "__nv_fp8_e4m3";
    case GT_E5M2: return "__nv_fp8_e5m2";
    default: return "void";
  }
}
// A family that handles no FP8 problem says so in one line (GT_REFUSAL_DTYPE).
inline void refuse_fp8(const gt_problem& p, const char* family) {
  if (is_fp8(p.in_dtype) || is_fp8(p.b_dtype) || p.scale_mode != GT_SCALE_NONE)
    throw Refusal(GT_REFUSAL_DTYPE, std::string(family) + " has no FP8 kernels");
}
inline bool a_transposed(const gt_problem& p) { return p.layout == GT_TN || p.layout == GT_TT; }
inline bool b_transposed(const gt_problem& p) { return p.layout == GT_NT || p.layout == GT_TT; }

// 64-bit FNV-1a: a plugin's source hash (stable across builds and machines).
inline uint64_t fnv1a64(std::string_view s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) { h ^= c; h *= 1099511628211ull; }
  return h;
}

struct ParamDef {
  std::string name;
  std::string help;
  std::vector<int64_t> values;
  std::vector<std::string> labels;  // empty, or one per value
  int64_t default_value;
};

// Owns a parameter space's storage; hand out space() through describe_space.
class ParamTable {
 public:
  explicit ParamTable(std::vector<ParamDef> defs) : defs_(std::move(defs)) {
    for (auto& d : defs_) {
      std::vector<const char*> lp;
      for (auto& l : d.labels) lp.push_back(l.c_str());
      label_ptrs_.push_back(std::move(lp));
    }
    for (size_t i = 0; i < defs_.size(); ++i) {
      auto& d = defs_[i];
      int32_t def = 0;
      for (size_t j = 0; j < d.values.size(); ++j)
        if (d.values[j] == d.default_value) def = int32_t(j);
      params_.push_back(gt_param{d.name.c_str(), d.help.c_str(), d.values.data(),
                                 label_ptrs_[i].empty() ? nullptr : label_ptrs_[i].data(),
                                 int32_t(d.values.size()), def});
    }
  }
  ParamTable(const ParamTable&) = delete;
  ParamTable& operator=(const ParamTable&) = delete;

  gt_space space() const { return gt_space{params_.data(), int32_t(params_.size())}; }
  int32_t size() const { return int32_t(params_.size()); }
  int index(std::string_view name) const {
    for (size_t i = 0; i < defs_.size(); ++i)
      if (defs_[i].name == name) return int(i);
    throw std::logic_error("no parameter named " + std::string(name));
  }
  // Value of parameter `name` in a config; throws when the config has the wrong arity.
  int64_t get(const int64_t* config, int32_t n, std::string_view name) const {
    if (n != size())
      throw std::invalid_argument("config has " + std::to_string(n) + " values, space has " +
                                  std::to_string(size()));
    return config[index(name)];
  }
  bool contains(int idx, int64_t v) const {
    for (auto x : defs_[size_t(idx)].values)
      if (x == v) return true;
    return false;
  }
  // Refuses (GT_REFUSAL_CONFIG) a config with a value outside its parameter's list; a config
  // of the wrong arity is the caller's error (std::invalid_argument: GT_FAILED).
  void check_values(const int64_t* config, int32_t n) const {
    if (n != size())
      throw std::invalid_argument("config has " + std::to_string(n) + " values, space has " +
                                  std::to_string(size()));
    for (int i = 0; i < size(); ++i)
      if (!contains(i, config[i]))
        throw Refusal(GT_REFUSAL_CONFIG,
                      std::to_string(config[i]) + " is not a value of parameter " + defs_[size_t(i)].name);
  }

 private:
  std::vector<ParamDef> defs_;
  std::vector<std::vector<const char*>> label_ptrs_;
  std::vector<gt_param> params_;
};

// One kernel launch as a source family describes it (gt_kernel in C++ terms).
struct Launch {
  const char* source = nullptr;       // static inside the plugin
  const char* source_name = nullptr;  // shown in compiler messages
  std::string kernel_name;
  std::vector<std::string> options;   // NVRTC options, typically define(...)
  std::array<uint32_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  uint32_t dynamic_smem = 0;
  std::array<uint32_t, 3> cluster{1, 1, 1};
  uint32_t grid_per_sm = 0;    // > 0: a persistent grid (plugin_abi.h)
  bool arch_specific = false;  // compile for sm_XYa
  uint64_t workspace_bytes = 0;
  gt_workspace_zero workspace_zero = GT_WORKSPACE_ZERO_NEVER;
  std::vector<gt_tensor_map_request> tensor_maps;
  std::array<int64_t, GT_SCALARS> scalars{};
  bool takes_scales = false;   // the kernel takes a gt_scales after the scalars (FP8)
};

// A launch of `kernel_name` in `source` with these options (typically define(...)); the
// family fills in the geometry and the requests.
inline Launch kernel_launch(const char* source, const char* source_name, std::string kernel_name,
                            std::vector<std::string> options) {
  Launch l;
  l.source = source;
  l.source_name = source_name;
  l.kernel_name = std::move(kernel_name);
  l.options = std::move(options);
  return l;
}

// A rank-2 tensor map of an operand as stored (plugin_abi.h): box[0] elements along its
// rows, box[1] rows.
inline gt_tensor_map_request tensor_map(gt_operand operand, uint32_t box_inner, uint32_t box_rows, int32_t swizzle,
                                        int32_t l2_promotion = 0) {
  gt_tensor_map_request r{};
  r.operand = operand;
  r.rank = 2;
  r.box[0] = box_inner;
  r.box[1] = box_rows;
  r.element_strides[0] = r.element_strides[1] = 1;
  r.swizzle = swizzle;
  r.l2_promotion = l2_promotion;
  return r;
}

// Keeps the strings of a gt_kernel alive until the next fill() on this thread.
class KernelOut {
 public:
  static KernelOut& local() {
    thread_local KernelOut k;
    return k;
  }
  void fill(gt_kernel* out, Launch l) {
    if (l.tensor_maps.size() > GT_MAX_TENSOR_MAPS)
      throw std::logic_error("a kernel takes at most " + std::to_string(GT_MAX_TENSOR_MAPS) + " tensor maps");
    l_ = std::move(l);
    ptrs_.clear();
    for (auto& o : l_.options) ptrs_.push_back(o.c_str());
    std::memset(out, 0, sizeof(*out));
    out->source = l_.source;
    out->source_name = l_.source_name;
    out->kernel_name = l_.kernel_name.c_str();
    out->options = ptrs_.data();
    out->option_count = int32_t(ptrs_.size());
    for (size_t i = 0; i < 3; ++i) {
      out->grid[i] = l_.grid[i];
      out->block[i] = l_.block[i];
      out->cluster[i] = l_.cluster[i];
    }
    out->dynamic_smem_bytes = l_.dynamic_smem;
    out->grid_per_sm = l_.grid_per_sm;
    out->arch_specific = l_.arch_specific ? 1 : 0;
    out->workspace_bytes = l_.workspace_bytes;
    out->workspace_zero = l_.workspace_zero;
    out->tensor_map_count = int32_t(l_.tensor_maps.size());
    for (size_t i = 0; i < l_.tensor_maps.size(); ++i) out->tensor_maps[i] = l_.tensor_maps[i];
    for (size_t i = 0; i < GT_SCALARS; ++i) out->scalars[i] = l_.scalars[i];
    out->takes_scales = l_.takes_scales ? 1 : 0;
  }

 private:
  Launch l_;
  std::vector<const char*> ptrs_;
};

inline std::string define(std::string_view name, int64_t v) {
  return "-D" + std::string(name) + "=" + std::to_string(v);
}
inline std::string define(std::string_view name, std::string_view v) {
  return "-D" + std::string(name) + "=" + std::string(v);
}

inline uint32_t ceil_div(int64_t a, int64_t b) { return uint32_t((a + b - 1) / b); }

// describe_space for a family whose space is one table for every problem.
template <const ParamTable& (*Table)()>
gt_status table_space(const gt_problem*, const gt_device*, gt_space* out, gt_reply* reply) noexcept {
  return guarded(reply, [&] {
    *out = Table().space();
    return GT_OK;
  });
}

// Parameter tables that differ only in their defaults, for a family whose default follows the
// problem: one table per default handed out, alive for the process (a gt_space's strings must
// be). Defs makes the parameter list with the given default values.
template <std::vector<ParamDef> (*Defs)(const int64_t*)>
const ParamTable& table_with_default(const std::vector<int64_t>& def) {
  static std::mutex mu;
  static std::map<std::vector<int64_t>, std::unique_ptr<ParamTable>> tables;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = tables[def];
  if (!slot) slot = std::make_unique<ParamTable>(Defs(def.data()));
  return *slot;
}

// describe_space for such a family: Default chooses the default config for the problem.
template <std::vector<ParamDef> (*Defs)(const int64_t*),
          std::vector<int64_t> (*Default)(const gt_problem&, const gt_device&)>
gt_status space_with_default(const gt_problem* p, const gt_device* d, gt_space* out, gt_reply* reply) noexcept {
  return guarded(reply, [&] {
    *out = table_with_default<Defs>(Default(*p, *d)).space();
    return GT_OK;
  });
}

// can_implement: the plan can be made.
template <auto Plan>
gt_status plan_can_implement(const gt_problem* p, const int64_t* c, int32_t n, const gt_device* d,
                             gt_reply* reply) noexcept {
  return guarded(reply, [&] {
    Plan(*p, c, n, *d);
    return GT_OK;
  });
}

// build_kernel: the launch of the plan.
template <auto Plan, auto LaunchOf>
gt_status plan_build_kernel(const gt_problem* p, const int64_t* c, int32_t n, const gt_device* d, gt_kernel* out,
                            gt_reply* reply) noexcept {
  return guarded(reply, [&] {
    KernelOut::local().fill(out, LaunchOf(*p, Plan(*p, c, n, *d)));
    return GT_OK;
  });
}

// A source family's plugin table: the header (ABI version and size, names, kind, the hash of
// its kernel source), its space, and can_implement / build_kernel made from its plan and
// launch functions. A family with `suggest` sets it after.
template <auto Plan, auto LaunchOf>
gt_plugin source_family(const char* name, const char* version, const char* summary, std::string_view source,
                        decltype(gt_plugin::describe_space) describe_space,
                        decltype(gt_plugin::describe_config) describe_config) {
  gt_plugin p{};
  p.abi_version = GT_ABI_VERSION;
  p.struct_size = sizeof(gt_plugin);
  p.name = name;
  p.version = version;
  p.summary = summary;
  p.kind = GT_KIND_SOURCE;
  p.source_hash = fnv1a64(source);
  p.describe_space = describe_space;
  p.can_implement = plan_can_implement<Plan>;
  p.build_kernel = plan_build_kernel<Plan, LaunchOf>;
  p.describe_config = describe_config;
  return p;
}

}  // namespace gt_kit
