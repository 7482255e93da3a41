// Header-only helpers for writing a gemmtune plugin in C++. Depends only on plugin_abi.h
// and the standard library, so a plugin that uses it still links nothing of core.
//
//   - ParamTable: owns the storage behind a gt_space and reads configs by parameter name.
//   - guarded(): runs a body, turns every exception into GT_FAILED with its message.
//   - KernelOut: keeps a gt_kernel's strings alive (thread-local) until the next call.
#pragma once

#include "plugin_abi.h"

#include <cstdint>
#include <cstring>
#include <exception>
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

// Thrown inside a plugin to refuse a (problem, config) with a reason; guarded() maps it to
// GT_REFUSED. Any other exception becomes GT_FAILED.
struct Refusal : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <class F>
gt_status guarded(char* msg, size_t cap, F&& body) noexcept {
  try {
    return body();
  } catch (const Refusal& r) {
    write_msg(msg, cap, r.what());
    return GT_REFUSED;
  } catch (const std::exception& e) {
    write_msg(msg, cap, e.what());
    return GT_FAILED;
  } catch (...) {
    write_msg(msg, cap, "unknown exception inside plugin");
    return GT_FAILED;
  }
}

inline size_t dtype_size(int32_t dt) {
  switch (dt) {
    case GT_F32: case GT_TF32: return 4;
    case GT_F16: case GT_BF16: return 2;
    default: return 0;
  }
}
inline const char* dtype_name(int32_t dt) {
  switch (dt) {
    case GT_F32: return "f32";
    case GT_TF32: return "tf32";
    case GT_F16: return "f16";
    case GT_BF16: return "bf16";
    default: return "?";
  }
}
// The CUDA C++ type that stores a dtype (tf32 is stored as float).
inline const char* dtype_cuda_type(int32_t dt) {
  switch (dt) {
    case GT_F32: case GT_TF32: return "float";
    case GT_F16: return "__half";
    case GT_BF16: return "__nv_bfloat16";
    default: return "void";
  }
}
inline bool a_transposed(const gt_problem& p) { return p.layout == GT_TN || p.layout == GT_TT; }
inline bool b_transposed(const gt_problem& p) { return p.layout == GT_NT || p.layout == GT_TT; }

// 64-bit FNV-1a: a plugin's source hash (stable across builds and machines).
inline uint64_t fnv1a64(std::string_view s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) { h ^= c; h *= 1099511628211ull; }
  return h;
}

// A source family's plugin table: the header (ABI version and size, names, kind, the hash of
// its kernel source) and the four callbacks every source family has; a family with `suggest`
// sets it after.
inline gt_plugin source_plugin(const char* name, const char* version, const char* summary, std::string_view source,
                               decltype(gt_plugin::describe_space) describe_space,
                               decltype(gt_plugin::can_implement) can_implement,
                               decltype(gt_plugin::build_kernel) build_kernel,
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
  p.can_implement = can_implement;
  p.build_kernel = build_kernel;
  p.describe_config = describe_config;
  return p;
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

 private:
  std::vector<ParamDef> defs_;
  std::vector<std::vector<const char*>> label_ptrs_;
  std::vector<gt_param> params_;
};

// Keeps the strings of a gt_kernel alive until the next fill() on this thread.
class KernelOut {
 public:
  static KernelOut& local() {
    thread_local KernelOut k;
    return k;
  }
  void fill(gt_kernel* out, const char* source, const char* source_name, std::string kernel_name,
            std::vector<std::string> options, const uint32_t grid[3], const uint32_t block[3],
            uint32_t dynamic_smem) {
    name_ = std::move(kernel_name);
    options_ = std::move(options);
    ptrs_.clear();
    for (auto& o : options_) ptrs_.push_back(o.c_str());
    std::memset(out, 0, sizeof(*out));
    out->source = source;
    out->source_name = source_name;
    out->kernel_name = name_.c_str();
    out->options = ptrs_.data();
    out->option_count = int32_t(ptrs_.size());
    for (int i = 0; i < 3; ++i) {
      out->grid[i] = grid[i];
      out->block[i] = block[i];
    }
    out->dynamic_smem_bytes = dynamic_smem;
  }

 private:
  std::string name_;
  std::vector<std::string> options_;
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
gt_status table_space(const gt_problem*, const gt_device*, gt_space* out, char* msg, size_t cap) noexcept {
  return guarded(msg, cap, [&] {
    *out = Table().space();
    return GT_OK;
  });
}

// can_implement for a family whose launch plan throws Refusal: valid when the plan is made.
template <auto Plan>
gt_status can_implement_by_plan(const gt_problem* p, const int64_t* c, int32_t n, const gt_device* d, char* msg,
                                size_t cap) noexcept {
  return guarded(msg, cap, [&] {
    Plan(*p, c, n, *d);
    return GT_OK;
  });
}

}  // namespace gt_kit
