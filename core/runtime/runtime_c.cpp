// The C API: the C++ runtime behind an opaque handle; every exception becomes a status and
// a thread-local message.
#include "gemmtune_runtime.h"
#include "gemmtune_runtime.hpp"

#include "measure/provenance.hpp"
#include "transform/transform.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <vector>

struct gemmtune_runtime {
  explicit gemmtune_runtime(const std::string& table, const gemmtune::Options& o) : rt(table, o) {}
  gemmtune::Runtime rt;
  std::once_flag json_once;  // table_json is made on first request and kept for the handle's life
  std::string table_json;
};

namespace {

thread_local std::string g_last_error;

void set_error(const char* what) noexcept {
  try {
    g_last_error = what;
  } catch (...) {
    g_last_error.clear();  // out of memory for the message itself: the status still says it
  }
}

template <class F>
gemmtune_status guarded(F&& body) noexcept {
  try {
    body();
    g_last_error.clear();
    return GEMMTUNE_SUCCESS;
  } catch (const gemmtune::Error& e) {
    set_error(e.what());
    return e.status();
  } catch (const std::bad_alloc&) {
    set_error("out of host memory");
    return GEMMTUNE_ERROR_INTERNAL;
  } catch (const std::exception& e) {
    set_error(e.what());
    return GEMMTUNE_ERROR_INTERNAL;
  } catch (...) {
    set_error("unknown exception");
    return GEMMTUNE_ERROR_INTERNAL;
  }
}

gemmtune::GemmArgs args_of(const gemmtune_gemm_args* a, const gemmtune_scales* sc = nullptr) {
  if (!a) throw gemmtune::Error(GEMMTUNE_ERROR_INVALID_ARGUMENT, "args is NULL");
  gemmtune::GemmArgs g;
  g.m = a->m;
  g.n = a->n;
  g.k = a->k;
  g.in = gemmtune_dtype(a->in_dtype);
  g.out = gemmtune_dtype(a->out_dtype);
  g.layout = gemmtune_layout(a->layout);
  g.a = a->a;
  g.lda = a->lda;
  g.b = a->b;
  g.ldb = a->ldb;
  g.c = a->c;
  g.ldc = a->ldc;
  if (sc) {
    if (sc->struct_size != sizeof(gemmtune_scales))
      throw gemmtune::Error(GEMMTUNE_ERROR_INVALID_ARGUMENT, "scales->struct_size is " + std::to_string(sc->struct_size) +
                                                                 ", expected " + std::to_string(sizeof(gemmtune_scales)));
    g.scale = gemmtune_scale_mode(sc->mode);
    g.in_b = sc->b_dtype;
    g.scale_a = sc->a;
    g.scale_b = sc->b;
    g.scale_d = sc->d;
    g.amax_d = sc->amax_d;
  }
  return g;
}

void copy_out(char* dst, size_t cap, const std::string& s) {
  if (!dst || cap == 0) return;
  size_t n = std::min(cap - 1, s.size());
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

std::vector<std::string> split_dirs(const char* s) {
  std::vector<std::string> out;
  if (!s) return out;
  std::string all = s;
  size_t pos = 0;
  while (pos <= all.size()) {
    size_t end = all.find(':', pos);
    if (end == std::string::npos) end = all.size();
    if (end > pos) out.push_back(all.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

}  // namespace

extern "C" {

void gemmtune_options_init(gemmtune_options* o) {
  if (!o) return;
  std::memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->device = -1;
  o->max_distance = gemmtune::Options{}.max_distance;
  o->decode_max_m = gemmtune::Options{}.decode_max_m;
  o->online = gemmtune::Options{}.online;
}

gemmtune_status gemmtune_create(const char* table_path, const gemmtune_options* options, gemmtune_runtime** out) {
  if (out) *out = nullptr;
  return guarded([&] {
    if (!out) throw gemmtune::Error(GEMMTUNE_ERROR_INVALID_ARGUMENT, "out is NULL");
    if (!table_path) throw gemmtune::Error(GEMMTUNE_ERROR_INVALID_ARGUMENT, "table_path is NULL");
    gemmtune_options defaults;
    gemmtune_options_init(&defaults);
    if (options && options->struct_size != sizeof(gemmtune_options))
      throw gemmtune::Error(GEMMTUNE_ERROR_INVALID_ARGUMENT,
                            "options->struct_size is " + std::to_string(options->struct_size) + ", expected " +
                                std::to_string(sizeof(gemmtune_options)) + " (call gemmtune_options_init first)");
    const gemmtune_options& o = options ? *options : defaults;
    gemmtune::Options cpp;
    cpp.plugin_dirs = split_dirs(o.plugin_dirs);
    if (o.cache_dir) cpp.cache_dir = o.cache_dir;
    cpp.device = o.device;
    cpp.dry_run = o.dry_run != 0;
    if (o.arch) cpp.arch = o.arch;
    if (o.device_name) cpp.device_name = o.device_name;
    if (o.default_family) cpp.default_family = o.default_family;
    cpp.exact_device = o.exact_device != 0;
    cpp.max_distance = o.max_distance;
    cpp.decode_max_m = o.decode_max_m;
    cpp.unbacked_transfers = o.unbacked_transfers != 0;
    cpp.online = o.online;
    if (o.online_file) cpp.online_file = o.online_file;
    if (o.record_untuned) cpp.record_untuned = o.record_untuned;
    *out = new gemmtune_runtime(table_path, cpp);
  });
}

void gemmtune_destroy(gemmtune_runtime* rt) { delete rt; }

gemmtune_status gemmtune_gemm(gemmtune_runtime* rt, const gemmtune_gemm_args* args, void* stream) {
  return guarded([&] {
    if (!rt) throw gemmtune::Error(GEMMTUNE_ERROR_INVALID_ARGUMENT, "runtime handle is NULL");
    rt->rt.gemm(args_of(args), static_cast<cudaStream_t>(stream));
  });
}

gemmtune_status gemmtune_gemm_scaled(gemmtune_runtime* rt, const gemmtune_gemm_args* args, const gemmtune_scales* scales,
                                     void* stream) {
  return guarded([&] {
    if (!rt) throw gemmtune::Error(GEMMTUNE_ERROR_INVALID_ARGUMENT, "runtime handle is NULL");
    rt->rt.gemm(args_of(args, scales), static_cast<cudaStream_t>(stream));
  });
}

gemmtune_status gemmtune_gemm_constant(gemmtune_runtime* rt, const gemmtune_gemm_args* args, uint32_t constant,
                                       void* stream) {
  return guarded([&] {
    if (!rt) throw gemmtune::Error(GEMMTUNE_ERROR_INVALID_ARGUMENT, "runtime handle is NULL");
    gemmtune::GemmArgs g = args_of(args);
    g.constant = constant;
    rt->rt.gemm(g, static_cast<cudaStream_t>(stream));
  });
}

gemmtune_status gemmtune_choice_constant(gemmtune_runtime* rt, const gemmtune_gemm_args* args, uint32_t constant,
                                         int32_t* match, char* config, size_t config_cap, char* how, size_t how_cap) {
  return guarded([&] {
    if (!rt) throw gemmtune::Error(GEMMTUNE_ERROR_INVALID_ARGUMENT, "runtime handle is NULL");
    gemmtune::GemmArgs g = args_of(args);
    g.constant = constant;
    const gemmtune::Choice& c = rt->rt.prepare(g);
    if (match) *match = int32_t(c.match);
    copy_out(config, config_cap, gt::transformed_name(c.config, gt::parse_transform(c.transform)));
    copy_out(how, how_cap, c.how);
  });
}

gemmtune_status gemmtune_choice(gemmtune_runtime* rt, const gemmtune_gemm_args* args, int32_t* match, char* config,
                                size_t config_cap, char* how, size_t how_cap) {
  return gemmtune_choice_scaled(rt, args, nullptr, match, config, config_cap, how, how_cap);
}

gemmtune_status gemmtune_choice_scaled(gemmtune_runtime* rt, const gemmtune_gemm_args* args,
                                       const gemmtune_scales* scales, int32_t* match, char* config, size_t config_cap,
                                       char* how, size_t how_cap) {
  return guarded([&] {
    if (!rt) throw gemmtune::Error(GEMMTUNE_ERROR_INVALID_ARGUMENT, "runtime handle is NULL");
    const gemmtune::Choice& c = rt->rt.prepare(args_of(args, scales));
    if (match) *match = int32_t(c.match);
    // The config's name with its transform ("...+pad"), as `gemmtune lookup` prints it.
    copy_out(config, config_cap, gt::transformed_name(c.config, gt::parse_transform(c.transform)));
    copy_out(how, how_cap, c.how);
  });
}

gemmtune_status gemmtune_choice_json(gemmtune_runtime* rt, const gemmtune_gemm_args* args,
                                     const gemmtune_scales* scales, const char** json) {
  if (json) *json = nullptr;
  return guarded([&] {
    if (!rt) throw gemmtune::Error(GEMMTUNE_ERROR_INVALID_ARGUMENT, "runtime handle is NULL");
    if (!json) throw gemmtune::Error(GEMMTUNE_ERROR_INVALID_ARGUMENT, "json is NULL");
    const gemmtune::Choice& c = rt->rt.prepare(args_of(args, scales));
    static const char* kMatch[] = {"exact", "nearest", "default"};
    nlohmann::json j = {{"match", kMatch[int(c.match)]},
                        {"rule", c.rule},
                        {"backing", c.backing},
                        {"backing_note", c.backing_note},
                        {"pending", c.pending},
                        {"how", c.how},
                        {"reason", c.reason},
                        {"family", c.family},
                        {"config", gt::transformed_name(c.config, gt::parse_transform(c.transform))},
                        {"params", c.params},
                        {"transform", c.transform},
                        {"problem", c.problem},
                        {"tuned_key", c.tuned_key},
                        {"unchecked", c.unchecked},
                        {"note", c.note}};
    thread_local std::string text;
    text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    *json = text.c_str();
  });
}

gemmtune_status gemmtune_set_record_untuned(gemmtune_runtime* rt, const char* path) {
  return guarded([&] {
    if (!rt) throw gemmtune::Error(GEMMTUNE_ERROR_INVALID_ARGUMENT, "runtime handle is NULL");
    rt->rt.record_untuned(path ? path : "");
  });
}

gemmtune_status gemmtune_runtime_info(gemmtune_runtime* rt, int32_t* device, int32_t* dry_run, char* arch,
                                      size_t arch_cap, char* device_name, size_t device_name_cap) {
  return guarded([&] {
    if (!rt) throw gemmtune::Error(GEMMTUNE_ERROR_INVALID_ARGUMENT, "runtime handle is NULL");
    if (device) *device = rt->rt.device();
    if (dry_run) *dry_run = rt->rt.dry_run() ? 1 : 0;
    copy_out(arch, arch_cap, rt->rt.arch());
    copy_out(device_name, device_name_cap, rt->rt.device_name());
  });
}

gemmtune_status gemmtune_table_json(gemmtune_runtime* rt, const char** json) {
  if (json) *json = nullptr;
  return guarded([&] {
    if (!rt) throw gemmtune::Error(GEMMTUNE_ERROR_INVALID_ARGUMENT, "runtime handle is NULL");
    if (!json) throw gemmtune::Error(GEMMTUNE_ERROR_INVALID_ARGUMENT, "json is NULL");
    std::call_once(rt->json_once, [rt] { rt->table_json = rt->rt.table_json(); });
    *json = rt->table_json.c_str();
  });
}

const char* gemmtune_version(void) { return gt::kGemmtuneVersion; }

const char* gemmtune_last_error(void) { return g_last_error.c_str(); }

const char* gemmtune_status_string(gemmtune_status s) {
  switch (s) {
    case GEMMTUNE_SUCCESS: return "success";
    case GEMMTUNE_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case GEMMTUNE_ERROR_BAD_TABLE: return "bad table";
    case GEMMTUNE_ERROR_NO_GPU: return "no GPU";
    case GEMMTUNE_ERROR_NOT_SUPPORTED: return "not supported";
    case GEMMTUNE_ERROR_BUILD_FAILED: return "build failed";
    case GEMMTUNE_ERROR_LAUNCH_FAILED: return "launch failed";
    case GEMMTUNE_ERROR_INTERNAL: return "internal error";
  }
  return "unknown status";
}

}  // extern "C"
