// The runtime: a table lookup and a build on the first call for a problem, a hash-map hit
// and a launch on every later one.
#include "gemmtune_runtime.hpp"
#include "runtime_internal.hpp"

#include "build/compiler.hpp"
#include "gpu/device.hpp"
#include "base/errors.hpp"
#include "measure/evaluate.hpp"
#include "table/online.hpp"
#include "build/plugin.hpp"
#include "table/table.hpp"
#include "table/untuned.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <set>
#include <unordered_map>

namespace gemmtune {

static_assert(int(GEMMTUNE_F32) == GT_F32 && int(GEMMTUNE_TF32) == GT_TF32 && int(GEMMTUNE_F16) == GT_F16 &&
              int(GEMMTUNE_BF16) == GT_BF16 && int(GEMMTUNE_E4M3) == GT_E4M3 && int(GEMMTUNE_E5M2) == GT_E5M2);
static_assert(int(GEMMTUNE_SCALE_NONE) == GT_SCALE_NONE && int(GEMMTUNE_SCALE_TENSOR) == GT_SCALE_TENSOR &&
              int(GEMMTUNE_SCALE_ROW) == GT_SCALE_ROW && int(GEMMTUNE_SCALE_BLOCK) == GT_SCALE_BLOCK);
static_assert(int(GEMMTUNE_NN) == GT_NN && int(GEMMTUNE_NT) == GT_NT && int(GEMMTUNE_TN) == GT_TN &&
              int(GEMMTUNE_TT) == GT_TT);

namespace {

// Everything that selects a prepared kernel: a kernel is launched with the problem's sizes
// and leading dimensions baked into its launch, and the alignment decides what may run.
struct Key {
  int64_t m, n, k, lda, ldb, ldc;
  int32_t in, in_b, out, layout, align, pointer_align, scale, constant;
  // Each pointer's alignment: a family may write a misaligned C in place only while A and B
  // are aligned (wgmma_tma's masked epilogue), which one number does not tell.
  std::array<int32_t, 3> operand_pointer_align;
  // The buffers of the operands declared constant (0 for the others): each weight buffer gets a
  // prepared problem, and so a copy, of its own.
  uintptr_t constant_a, constant_b;
  bool operator==(const Key&) const = default;
};

struct KeyHash {
  size_t operator()(const Key& k) const noexcept {
    uint64_t h = 0x243f6a8885a308d3ull;
    auto mix = [&h](uint64_t v) {
      h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
      h *= 0xbf58476d1ce4e5b9ull;
      h ^= h >> 31;
    };
    mix(uint64_t(k.m));
    mix(uint64_t(k.n));
    mix(uint64_t(k.k));
    mix(uint64_t(k.lda));
    mix(uint64_t(k.ldb));
    mix(uint64_t(k.ldc));
    mix(uint64_t(uint32_t(k.in)) | uint64_t(uint32_t(k.out)) << 8 | uint64_t(uint32_t(k.layout)) << 16 |
        uint64_t(uint32_t(k.align)) << 24 | uint64_t(uint32_t(k.pointer_align)) << 32 |
        uint64_t(uint32_t(k.in_b)) << 40 | uint64_t(uint32_t(k.scale)) << 48 | uint64_t(uint32_t(k.constant)) << 56);
    mix(uint64_t(uint32_t(k.operand_pointer_align[0])) | uint64_t(uint32_t(k.operand_pointer_align[1])) << 8 |
        uint64_t(uint32_t(k.operand_pointer_align[2])) << 16);
    mix(uint64_t(k.constant_a));
    mix(uint64_t(k.constant_b));
    return size_t(h);
  }
};

[[noreturn]] void invalid(const std::string& msg) { throw Error(GEMMTUNE_ERROR_INVALID_ARGUMENT, msg); }

// The problem of a call, alignment from the actual pointers. Only comparisons on the way
// through; messages are formatted on failure only.
gt::Problem problem_of(const GemmArgs& g) {
  if (g.m < 1 || g.n < 1 || g.k < 1 || g.m > gt::kMaxDim || g.n > gt::kMaxDim || g.k > gt::kMaxDim)
    invalid(fmt::format("sizes {}x{}x{}: each must be in [1, {}]", g.m, g.n, g.k, gt::kMaxDim));
  if (uint32_t(g.in) > 5u) invalid(fmt::format("input dtype {} is not a gemmtune_dtype", int(g.in)));
  if (g.in_b != -1 && uint32_t(g.in_b) > 5u) invalid(fmt::format("B's dtype {} is not a gemmtune_dtype", g.in_b));
  if (uint32_t(g.out) > 5u || g.out == GEMMTUNE_TF32)
    invalid(fmt::format("output dtype {} is not f32, f16, bf16, e4m3 or e5m2", int(g.out)));
  if (uint32_t(g.layout) > 3u) invalid(fmt::format("layout {} is not a gemmtune_layout", int(g.layout)));
  if (uint32_t(g.scale) > 3u) invalid(fmt::format("scale mode {} is not a gemmtune_scale_mode", int(g.scale)));
  if (g.constant > (GEMMTUNE_CONSTANT_A | GEMMTUNE_CONSTANT_B))
    invalid(fmt::format("constant {} is not a set of GEMMTUNE_CONSTANT_A and GEMMTUNE_CONSTANT_B", g.constant));
  gt::Problem p;
  p.m = g.m;
  p.n = g.n;
  p.k = g.k;
  p.in = gt::DType(g.in);
  p.in_b = g.in_b == -1 ? p.in : gt::DType(g.in_b);
  p.out = gt::DType(g.out);
  p.layout = gt::Layout(g.layout);
  p.scale = gt::ScaleMode(g.scale);
  p.constant = int32_t(g.constant);
  p.lda = g.lda;
  p.ldb = g.ldb;
  p.ldc = g.ldc;
  if (p.fp8() && p.scale == gt::ScaleMode::none)
    invalid(fmt::format("{} inputs need a scale mode and scales (gemmtune_gemm_scaled)", gt::to_string(p.in)));
  try {
    p.validate();  // what an FP8 problem must be (layout nt, types, scale mode); sizes are checked below
  } catch (const gt::InputError& e) {
    if (p.fp8() || p.scale != gt::ScaleMode::none || gt::is_fp8(p.out)) invalid(e.what());
  }
  if (p.lda < p.a_cols() || p.ldb < p.b_cols() || p.ldc < p.n || p.lda > gt::kMaxDim || p.ldb > gt::kMaxDim ||
      p.ldc > gt::kMaxDim)
    invalid(fmt::format("leading dimensions lda={} ldb={} ldc={} do not fit {} (need lda >= {}, ldb >= {}, ldc >= {}, "
                        "each at most {})",
                        p.lda, p.ldb, p.ldc, p.shape(), p.a_cols(), p.b_cols(), p.n, gt::kMaxDim));
  const auto a = reinterpret_cast<uintptr_t>(g.a), b = reinterpret_cast<uintptr_t>(g.b),
             c = reinterpret_cast<uintptr_t>(g.c);
  p.align = gt::alignment_of(p, a, b, c);
  p.pointer_align = gt::alignment_of_pointers(a, b, c);  // what a transform may use in place
  p.operand_pointer_align = {gt::alignment_of_pointers(a, 0, 0), gt::alignment_of_pointers(b, 0, 0),
                             gt::alignment_of_pointers(c, 0, 0)};
  return p;
}

// The lookup policy of these options: the device named, else the GPU's (a dry run names
// none unless told); its architecture; the limits and the default family as given.
gt::LookupPolicy policy_of(const Options& o, const std::string& gpu_name, const std::string& arch) {
  if (!(o.max_distance >= 0))
    invalid(fmt::format("max_distance {} is not a distance (0 or more; infinity: no limit)", o.max_distance));
  if (o.decode_max_m < 0) invalid(fmt::format("decode_max_m {} is negative", o.decode_max_m));
  gt::LookupPolicy policy;
  if (!o.device_name.empty())
    policy.device = o.device_name;
  else if (!gpu_name.empty())
    policy.device = gpu_name;
  if (o.exact_device && !policy.device)
    invalid("exact_device needs a device: a dry run names it with device_name");
  policy.arch = arch;
  policy.exact_device = o.exact_device;
  policy.max_distance = o.max_distance;
  policy.decode_max_m = o.decode_max_m;
  policy.default_family = o.default_family;
  policy.unbacked_transfers = o.unbacked_transfers;
  return policy;
}

// An option, else its environment variable ("" when neither is set).
std::string option_or_env(const std::string& value, const char* env) {
  if (!value.empty()) return value;
  const char* e = std::getenv(env);
  return e ? std::string(e) : std::string();
}

// Options::online, with -1 read from GEMMTUNE_ONLINE.
bool online_of(const Options& o) {
  if (o.online == 0 || o.online == 1) return o.online == 1;
  if (o.online != -1) invalid(fmt::format("online {} is not -1 (GEMMTUNE_ONLINE decides), 0 or 1", o.online));
  const std::string env = option_or_env("", "GEMMTUNE_ONLINE");
  if (env.empty() || env == "0") return false;
  if (env == "1") return true;
  invalid(fmt::format("GEMMTUNE_ONLINE='{}' is not 1 (on) or 0 (off)", env));
}

// Says a problem of the runtime's on stderr, each text once per process: a runtime must not
// fail a GEMM over a file it could not write, nor fill a log with the same line.
void warn_once(const std::string& what) {
  static std::mutex mu;
  static std::set<std::string> said;
  std::lock_guard lk(mu);
  if (what.empty() || !said.insert(what).second) return;
  fmt::print(stderr, "gemmtune: {}\n", what);
}

// The parts of a choice that come from the lookup's answer.
void fill_choice(Choice& c, const gt::LookupResult& r) {
  c.match = r.kind == gt::MatchKind::exact     ? GEMMTUNE_MATCH_EXACT
            : r.kind == gt::MatchKind::nearest ? GEMMTUNE_MATCH_NEAREST
                                               : GEMMTUNE_MATCH_DEFAULT;
  c.how = r.how;
  c.rule = gt::to_string(r.rule);
  c.reason = r.reason;
  c.unchecked = r.unchecked;
  c.family = r.family;
  c.note = r.device_note;
  c.backing = gt::to_string(r.backing);
  c.backing_note = r.backing_note;
  c.pending = r.pending ? fmt::format("{} ({})", gt::transformed_name(r.pending->config, r.pending->transform),
                                      r.pending->how)
                        : "";
  c.tuned_key = r.entry ? r.entry->key.text() : "";
  c.tuned_time_us = r.entry ? r.entry->time_us : 0;
  c.transform_plan.clear();
}

Key key_of(const gt::Problem& p, const GemmArgs& g) {
  // The pointers' own alignment too: a transformed config (pad, swap) decides by it what it
  // may use in place, and two calls of one key may differ in it.
  return Key{p.m,
             p.n,
             p.k,
             p.lda,
             p.ldb,
             p.ldc,
             int32_t(p.in),
             int32_t(p.in_b),
             int32_t(p.out),
             int32_t(p.layout),
             p.align,
             p.pointer_align,
             int32_t(p.scale),
             p.constant,
             p.operand_pointer_align,
             p.constant & gt::kConstantA ? reinterpret_cast<uintptr_t>(g.a) : 0,
             p.constant & gt::kConstantB ? reinterpret_cast<uintptr_t>(g.b) : 0};
}

struct Prepared {
  gt::Problem problem;
  Choice choice;
  std::unique_ptr<gt::Runnable> run;  // null in a dry run
  // Online mode: an unbacked transfer to time against `run` (the default) at the first gemm().
  std::atomic<bool> pending{false};
  std::unique_ptr<gt::Runnable> candidate;
  Choice candidate_choice;  // what the choice becomes where the transfer is kept
};

}  // namespace

struct Runtime::Impl {
  Options opt;
  gt::LookupTable table;
  gt::PluginRegistry reg;
  gt_device limits{};
  std::string arch;
  std::string gpu_name;
  gt::LookupPolicy policy;  // what gemmtune lookup would be given for this device
  std::string device_filter_text;
  int device = -1;
  std::unique_ptr<gt::CubinCache> cache;
  bool online = false;
  std::unique_ptr<gt::OnlineDecisions> decisions;  // online mode
  std::mutex record_mu;
  std::string record_path;  // the job file of untuned problems ("": none)

  std::mutex build_mu;           // one preparation (or online check) at a time
  mutable std::shared_mutex mu;  // the map: shared to find, unique to insert
  std::unordered_map<Key, std::unique_ptr<Prepared>, KeyHash> prepared;  // never erased: pointers stay valid
  std::atomic<size_t> compiles{0};

  const Prepared* find(const Key& k) const {
    std::shared_lock lk(mu);
    auto it = prepared.find(k);
    return it == prepared.end() ? nullptr : it->second.get();
  }
  const Prepared& prepare(const gt::Problem& p, const Key& k);
  void build(Prepared& pr, const gt::LookupResult& r);
  void prepare_candidate(Prepared& pr, const gt::LookupResult& transfer);
  void check_online(Prepared& pr, cudaStream_t stream);
  void record(const gt::Problem& p);
  gt::CheckedFn checked() const;
  // Kernels are loaded, and cuBLASLt algorithms created, on the device current at the first
  // call for a problem: a call with another device current would use the wrong context.
  void check_device() const {
    if (opt.dry_run) return;
    int current = -1;
    if (cudaGetDevice(&current) != cudaSuccess || current != device)
      invalid(fmt::format("this runtime runs on GPU {}, but GPU {} is current", device, current));
  }
};

void Runtime::Impl::build(Prepared& pr, const gt::LookupResult& r) {
  const gt::Problem& p = pr.problem;
  Choice& c = pr.choice;
  c.transform = gt::to_string(r.transform);
  gt::ResolvedChoice rc;
  try {
    rc = gt::resolve_choice(reg, limits, r, p);
  } catch (const gt::InputError& e) {
    throw Error(GEMMTUNE_ERROR_NOT_SUPPORTED, e.what());
  } catch (const gt::RuntimeFailure& e) {
    // A library family describes its space only with a GPU: a dry run keeps the table's
    // name for the config and stops here.
    const gt::Family* fam = reg.find(r.family);
    if (opt.dry_run && fam && fam->is_library()) {
      c.config = r.config;
      c.params = r.params;
      return;
    }
    throw Error(GEMMTUNE_ERROR_BUILD_FAILED, e.what());
  }
  c.config = rc.name;
  c.params = rc.params;
  const gt::Family& fam = *rc.family;
  const std::string name = gt::transformed_name(rc.name, r.transform);
  try {
    gt::Compiler compiler(cache.get());
    // A dry run compiles a source family's kernel (the cubin cache keeps it) and loads nothing.
    gt::Built b = gt::build_runnable(fam, p, rc.config, r.transform, limits, arch, compiler, nullptr, !opt.dry_run);
    if (!fam.is_library() && b.compile.ok && !b.compile.from_cache) {
      ++compiles;
      c.compiled = true;
    }
    if (b.status == gt::Status::compile_failed)
      throw Error(GEMMTUNE_ERROR_BUILD_FAILED,
                  fmt::format("compiling {} for {} ({}) failed:\n{}", name, p.key(), arch, b.message));
    if (b.status != gt::Status::ok)
      throw Error(GEMMTUNE_ERROR_BUILD_FAILED, fmt::format("{} refused {} for {}: {}", fam.name(), name, p.key(), b.message));
    if (b.plan) c.transform_plan = b.plan->describe();
    pr.run = std::move(b.run);
  } catch (const Error&) {
    throw;
  } catch (const gt::NoGpuError& e) {
    throw Error(GEMMTUNE_ERROR_NO_GPU, e.what());
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(GEMMTUNE_ERROR_BUILD_FAILED, fmt::format("building {} for {}: {}", name, p.key(), e.what()));
  }
  c.launchable = pr.run != nullptr;
}

const Prepared& Runtime::Impl::prepare(const gt::Problem& p, const Key& k) {
  // Preparations take turns (the plugins are not shared between them); the map is locked only
  // to insert, so calls for prepared problems never wait for a compile.
  std::lock_guard turn(build_mu);
  if (const Prepared* done = find(k)) return *done;  // another thread prepared it meanwhile
  auto t0 = std::chrono::steady_clock::now();
  auto pr = std::make_unique<Prepared>();
  pr->problem = p;
  gt::LookupResult r;
  try {
    r = gt::answer(table, p, reg, limits, policy, checked());  // the same answer as `gemmtune lookup`
  } catch (const gt::BrokenEntryError& e) {
    throw Error(GEMMTUNE_ERROR_BAD_TABLE, e.what());
  } catch (const gt::InputError& e) {
    throw Error(GEMMTUNE_ERROR_NOT_SUPPORTED, e.what());
  } catch (const gt::RuntimeFailure& e) {
    throw Error(GEMMTUNE_ERROR_BUILD_FAILED, fmt::format("looking up {}: {}", p.key(), e.what()));
  }
  Choice& c = pr->choice;
  fill_choice(c, r);
  c.problem = p.key();
  build(*pr, r);
  if (r.pending && !opt.dry_run) prepare_candidate(*pr, *r.pending);
  if (r.kind != gt::MatchKind::exact) record(p);
  c.prepare_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const Prepared& ref = *pr;
  std::unique_lock lk(mu);
  prepared.emplace(k, std::move(pr));
  return ref;
}

// Online mode: builds the unbacked transfer beside the default, to be timed at the first gemm().
// A transfer that cannot be built is dropped: the default runs, as it would without the check.
void Runtime::Impl::prepare_candidate(Prepared& pr, const gt::LookupResult& transfer) {
  Prepared alt;
  alt.problem = pr.problem;
  fill_choice(alt.choice, transfer);
  alt.choice.problem = pr.choice.problem;
  try {
    build(alt, transfer);
  } catch (const Error& e) {
    warn_once(fmt::format("the online check of {} left out {}: {}", pr.problem.key(), transfer.config, e.what()));
    pr.choice.pending.clear();
    return;
  }
  pr.candidate = std::move(alt.run);
  pr.candidate_choice = std::move(alt.choice);
  pr.pending.store(pr.candidate != nullptr, std::memory_order_release);
}

// The first gemm() of a problem with a pending check: both timed on the caller's stream with
// scratch buffers, the faster kept (keep_candidate) and the decision written for later processes.
void Runtime::Impl::check_online(Prepared& pr, cudaStream_t stream) {
  std::lock_guard turn(build_mu);
  if (!pr.pending.load(std::memory_order_acquire)) return;  // another thread checked it meanwhile
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess || capture != cudaStreamCaptureStatusNone) {
    cudaGetLastError();
    return;  // a stream being captured into a graph cannot wait for a timing: the default, checked later
  }
  auto name = [](const Choice& c) { return gt::transformed_name(c.config, gt::parse_transform(c.transform)); };
  gt::OnlineVerdict v;
  v.candidate = name(pr.candidate_choice);
  v.default_config = name(pr.choice);
  try {
    gt::ScratchOperands scratch(pr.problem, stream);
    std::tie(v.candidate_us, v.default_us) = gt::time_interleaved(*pr.candidate, *pr.run, scratch.operands(), stream);
  } catch (const std::exception& e) {
    cudaGetLastError();
    warn_once(fmt::format("the online check of {} failed ({}): the default runs", pr.problem.key(), e.what()));
    pr.pending.store(false, std::memory_order_release);
    return;
  }
  v.candidate_kept = gt::keep_candidate(v.candidate_us, v.default_us);
  decisions->record(policy.device.value_or(""), pr.problem.key(), v);
  warn_once(decisions->take_warning());
  const std::string timed = fmt::format("timed online: {:.2f} us against the default's {:.2f} us", v.candidate_us,
                                        v.default_us);
  if (v.candidate_kept) {
    std::swap(pr.run, pr.candidate);
    const double prepare_s = pr.choice.prepare_s;
    pr.choice = pr.candidate_choice;
    pr.choice.prepare_s = prepare_s;
    pr.choice.backing = gt::to_string(gt::Backing::online);
    pr.choice.backing_note = timed;
  } else {
    pr.choice.reason += fmt::format("; {} was {}: the default was kept", v.candidate, timed);
  }
  pr.choice.pending.clear();
  pr.pending.store(false, std::memory_order_release);
}

// Appends a problem answered without an exact entry to the record file, if one is named.
void Runtime::Impl::record(const gt::Problem& p) {
  std::lock_guard lk(record_mu);
  if (record_path.empty()) return;
  try {
    gt::record_untuned(record_path, p);
  } catch (const std::exception& e) {
    warn_once(fmt::format("untuned problems cannot be recorded in {} ({}): recording stopped", record_path, e.what()));
    record_path.clear();
  }
}

// The online check's decisions, for the lookup (none unless online mode is on).
gt::CheckedFn Runtime::Impl::checked() const {
  if (!online) return {};
  return [this](const gt::Problem& p, const gt::LookupResult& t) {
    return decisions->find(policy.device.value_or(""), p.key(), gt::transformed_name(t.config, t.transform));
  };
}

Runtime::Runtime(const std::string& table_path, const Options& o) : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.opt = o;
  try {
    im.table = gt::LookupTable::load(table_path);
  } catch (const gt::InputError& e) {
    throw Error(GEMMTUNE_ERROR_BAD_TABLE, e.what());
  }
  try {
    if (!o.dry_run) {
      std::string why;
      if (gt::device_count(&why) == 0) throw Error(GEMMTUNE_ERROR_NO_GPU, why);  // says "no GPU found: ..." itself
      int dev = o.device;
      if (dev < 0) {
        cudaError_t e = cudaGetDevice(&dev);
        if (e != cudaSuccess) throw Error(GEMMTUNE_ERROR_NO_GPU, std::string("cudaGetDevice: ") + cudaGetErrorString(e));
      }
      int count = gt::device_count();
      if (dev >= count) invalid(fmt::format("device {} does not exist ({} GPU(s))", dev, count));
      gt::DeviceInfo info = gt::device_info(dev);
      im.device = dev;
      im.limits = info.limits;
      im.arch = info.arch();
      im.gpu_name = info.name;
    } else {
      // As `gemmtune lookup` sees this machine: the GPU's name and architecture where there is
      // one (unless named), so that a dry run answers what lookup answers.
      gt::LookupMachine m = gt::lookup_machine(o.device_name, o.arch, o.device < 0 ? 0 : o.device);
      im.arch = m.arch;
      im.limits = m.limits;
      im.gpu_name = m.device && o.device_name.empty() ? *m.device : "";
    }
  } catch (const Error&) {
    throw;
  } catch (const gt::InputError& e) {
    throw Error(GEMMTUNE_ERROR_INVALID_ARGUMENT, e.what());
  } catch (const gt::NoGpuError& e) {
    throw Error(GEMMTUNE_ERROR_NO_GPU, e.what());
  } catch (const gt::RuntimeFailure& e) {
    throw Error(GEMMTUNE_ERROR_NO_GPU, e.what());
  }
  im.policy = policy_of(o, im.gpu_name, im.arch);
  im.device_filter_text = im.policy.device.value_or("");

  auto dirs = gt::plugin_dirs(o.plugin_dirs);
  im.reg = gt::PluginRegistry::load(dirs);
  if (im.reg.families().empty()) {
    std::string where, skipped;
    for (auto& d : dirs) where += (where.empty() ? "" : ", ") + d.string();
    for (auto& s : im.reg.skipped()) skipped += fmt::format("; {}: {}", s.path.string(), s.reason);
    invalid(fmt::format("no gemmtune plugins were found in {} (set GEMMTUNE_PLUGIN_PATH or name a directory){}",
                        where, skipped));
  }
  std::filesystem::path cache_dir = o.cache_dir;
  if (cache_dir.empty()) {
    const char* env = std::getenv("GEMMTUNE_CACHE_DIR");
    cache_dir = env && *env ? std::filesystem::path(env) : gt::default_cache_dir();
  }
  im.cache = std::make_unique<gt::CubinCache>(cache_dir);
  im.online = online_of(o);
  im.policy.online = im.online;
  if (im.online) {
    std::string file = option_or_env(o.online_file, "GEMMTUNE_ONLINE_FILE");
    im.decisions = std::make_unique<gt::OnlineDecisions>(file.empty() ? gt::default_online_file(table_path)
                                                                      : std::filesystem::path(file));
    warn_once(im.decisions->take_warning());
  }
  im.record_path = option_or_env(o.record_untuned, "GEMMTUNE_RECORD_UNTUNED");
}

Runtime::~Runtime() = default;

void Runtime::gemm(const GemmArgs& g, cudaStream_t stream) {
  Impl& im = *impl_;
  gt::Problem p = problem_of(g);
  if (!im.opt.dry_run && (!g.a || !g.b || !g.c)) invalid("A, B and C must be device pointers, not null");
  if (!im.opt.dry_run && p.fp8() && (!g.scale_a || !g.scale_b))
    invalid(fmt::format("{}: A's and B's scales must be device pointers, not null", p.key()));
  im.check_device();
  Key k = key_of(p, g);
  const Prepared* pr = im.find(k);
  if (!pr) pr = &im.prepare(p, k);
  if (im.opt.dry_run) return;
  if (pr->pending.load(std::memory_order_acquire)) im.check_online(const_cast<Prepared&>(*pr), stream);
  if (!pr->run) throw Error(GEMMTUNE_ERROR_INTERNAL, "no kernel was prepared for " + pr->choice.problem);
  cudaError_t e = pr->run->launch(gt::Operands{g.a, g.b, g.c, {g.scale_a, g.scale_b, g.scale_d, g.amax_d}}, stream);
  if (e != cudaSuccess) {
    const std::string& detail = pr->run->last_error();
    throw Error(GEMMTUNE_ERROR_LAUNCH_FAILED,
                fmt::format("{} for {}: {}{}", gt::transformed_name(pr->choice.config, gt::parse_transform(pr->choice.transform)),
                            pr->choice.problem, cudaGetErrorString(e), detail.empty() ? "" : " (" + detail + ")"));
  }
}

const Choice& Runtime::prepare(const GemmArgs& g) {
  gt::Problem p = problem_of(g);
  impl_->check_device();
  Key k = key_of(p, g);
  if (const Prepared* pr = impl_->find(k)) return pr->choice;
  return impl_->prepare(p, k).choice;
}

void Runtime::record_untuned(const std::string& path) {
  std::lock_guard lk(impl_->record_mu);
  impl_->record_path = path;
}

const gt::Runnable* Internals::runnable(const Runtime& rt, const GemmArgs& g) {
  const Prepared* pr = rt.impl_->find(key_of(problem_of(g), g));
  return pr ? pr->run.get() : nullptr;
}

size_t Runtime::prepared() const {
  std::shared_lock lk(impl_->mu);
  return impl_->prepared.size();
}
size_t Runtime::compiles() const { return impl_->compiles.load(); }
bool Runtime::dry_run() const { return impl_->opt.dry_run; }
const std::string& Runtime::device_name() const { return impl_->device_filter_text; }
const std::string& Runtime::arch() const { return impl_->arch; }
int Runtime::device() const { return impl_->device; }

std::string Runtime::table_json() const {
  const gt::LookupTable& t = impl_->table;
  nlohmann::json j;
  j["table"] = t.origin;
  j["generated_at"] = t.info.generated_at;
  j["generator"] = t.info.generator;
  j["source"] = t.info.source;
  j["entries"] = t.entries;
  return j.dump();
}

}  // namespace gemmtune
