#include "measure/evaluate.hpp"

#include <fmt/format.h>

#include <chrono>
#include <tuple>

namespace gt {

std::unique_ptr<Runnable> Runnable::from_kernel(const KernelSpec& spec, const std::string& cubin, const Problem& p,
                                                const gt_device& dev) {
  auto r = std::unique_ptr<Runnable>(new Runnable());
  r->p_ = p;
  r->spec_ = spec;
  r->kernel_ = std::make_unique<LoadedKernel>(cubin, spec.kernel_name, spec.dynamic_smem);
  for (int i = 0; i < 3; ++i) {
    r->geometry_.grid[i] = spec.grid[i];  // as asked (whole clusters) for the occupancy query; capped below
    r->geometry_.block[i] = spec.block[i];
    r->geometry_.cluster[i] = spec.cluster[i];
  }
  r->geometry_.smem = spec.dynamic_smem;
  // A persistent grid of clusters: as many CTAs as the clusters that fit at once.
  const int co_resident = spec.grid_per_sm > 0 && spec.clustered()
                              ? r->kernel_->max_active_clusters(r->geometry_) * int(spec.cluster[0] * spec.cluster[1] * spec.cluster[2])
                              : 0;
  const auto grid = spec.launch_grid(dev.sm_count, co_resident);
  for (int i = 0; i < 3; ++i) r->geometry_.grid[i] = grid[size_t(i)];
  for (auto& m : spec.tensor_maps) {
    Refused why;
    auto shape = tensor_map_shape(p, m, &why);
    if (!shape) throw RuntimeFailure("tensor map: " + why.why);  // Family::build refused these already
    r->map_shapes_.push_back(*shape);
  }
  if (spec.workspace_bytes) {
    r->workspace_ = DeviceBuffer(spec.workspace_bytes);
    if (spec.workspace_zero != GT_WORKSPACE_ZERO_NEVER)
      cuda_check(cudaMemset(r->workspace_.get(), 0, spec.workspace_bytes), "zeroing the kernel's workspace");
  }
  return r;
}

std::unique_ptr<Runnable> Runnable::from_op(std::unique_ptr<LibraryOp> op, const Problem& p) {
  auto r = std::unique_ptr<Runnable>(new Runnable());
  r->p_ = p;
  if (op->workspace_bytes()) r->workspace_ = DeviceBuffer(op->workspace_bytes());
  r->op_ = std::move(op);
  return r;
}

std::unique_ptr<Runnable> Runnable::transformed(std::unique_ptr<Runnable> inner, const TransformPlan& plan) {
  if (plan.transform == Transform::none) return inner;
  auto r = std::unique_ptr<Runnable>(new Runnable());
  r->p_ = plan.outer;
  r->plan_ = std::make_unique<TransformPlan>(plan);
  r->inner_ = std::move(inner);
  if (plan.workspace_bytes) {
    r->copies_ = DeviceBuffer(plan.workspace_bytes);
    // Zeros once: the padding of copied scales then multiplies zeros by zeros, never NaN.
    cuda_check(cudaMemset(r->copies_.get(), 0, plan.workspace_bytes), "zeroing a transform's buffers");
  }
  return r;
}

// The family's scales where a plan pads what they cover (TransformPlan::scale_a, scale_b):
// copied row by row into the workspace; `out` points at the copies.
static cudaError_t copy_scales(const TransformPlan& pl, const gt_scales& caller, char* ws, cudaStream_t s,
                               gt_scales* out) {
  const float* src_a = pl.swap_operands ? caller.b : caller.a;
  const float* src_b = pl.swap_operands ? caller.a : caller.b;
  for (auto [sc, src, dst] : {std::tuple{&pl.scale_a, src_a, &out->a}, {&pl.scale_b, src_b, &out->b}}) {
    if (!sc->copy) continue;
    auto* to = reinterpret_cast<float*>(ws + sc->offset);
    cudaError_t e = cudaMemcpy2DAsync(to, size_t(sc->cols_dst) * sizeof(float), src, size_t(sc->cols) * sizeof(float),
                                      size_t(sc->cols) * sizeof(float), size_t(sc->rows), cudaMemcpyDeviceToDevice, s);
    if (e != cudaSuccess) return e;
    *dst = to;
  }
  return cudaSuccess;
}

cudaError_t Runnable::launch_transformed(const Operands& ops, cudaStream_t s) const {
  const TransformPlan& pl = *plan_;
  const void* src_a = pl.swap_operands ? ops.b : ops.a;
  const void* src_b = pl.swap_operands ? ops.a : ops.b;
  void* c = ops.c;
  // What is used in place must be as aligned as the plan took it to be (the problem's key
  // says so for every caller that computes it from its pointers).
  auto off = [&](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % uintptr_t(pl.pointer_align) != 0; };
  if ((!pl.a.copy && off(src_a)) || (!pl.b.copy && off(src_b)) || (!pl.c.copy && off(c))) {
    std::lock_guard lk(mu_);
    last_error_ = fmt::format("{}: a buffer used in place is not {}-byte aligned, as the plan for {} takes it to be",
                              to_string(pl.transform), pl.pointer_align, pl.outer.key());
    return cudaErrorMisalignedAddress;
  }
  char* ws = static_cast<char*>(copies_.get());
  const size_t out_size = size_of(pl.inner.out);
  Operands inner{pl.a.copy ? ws + pl.a.offset : src_a, pl.b.copy ? ws + pl.b.offset : src_b,
                 pl.c.copy ? ws + pl.c.offset : c, ops.scales};
  if (pl.swap_operands) std::swap(inner.scales.a, inner.scales.b);
  void* ic = inner.c;
  // A constant operand (the caller's weights) is copied when its buffer is first seen, then read
  // from its copy by every call with that buffer: what a program that prepares its weights pays.
  const int32_t const_a = pl.swap_operands ? kConstantB : kConstantA, const_b = pl.swap_operands ? kConstantA : kConstantB;
  auto needs_copy = [&](const void* src, int32_t bit, const void*& prepared) {
    if (!(pl.outer.constant & bit)) return true;
    std::lock_guard lk(mu_);
    if (prepared == src) return false;
    prepared = src;
    return true;
  };
  if (pl.a.copy && needs_copy(src_a, const_a, prepared_a_))
    if (cudaError_t e = launch_pad_copy(src_a, ws + pl.a.offset, size_of(pl.inner.in), pl.a, s); e != cudaSuccess) return e;
  if (pl.b.copy && needs_copy(src_b, const_b, prepared_b_))
    if (cudaError_t e = launch_pad_copy(src_b, ws + pl.b.offset, size_of(pl.inner.in_b), pl.b, s); e != cudaSuccess) return e;
  if (cudaError_t e = copy_scales(pl, ops.scales, ws, s, &inner.scales); e != cudaSuccess) return e;
  if (cudaError_t e = inner_->launch(inner, s); e != cudaSuccess) return e;
  if (!pl.c.copy) return cudaSuccess;
  return launch_crop_copy(ic, c, out_size, pl.outer.m, pl.outer.n, pl.c.ld_src, pl.outer.ldc, pl.c.transposed, s);
}

const Runnable::TensorMaps& Runnable::tensor_maps_for(const void* a, const void* b, void* c) const {
  for (auto it = maps_.rbegin(); it != maps_.rend(); ++it)
    if (it->a == a && it->b == b && it->c == c) return *it;
  // Timing rotates through a few buffer sets; a program reuses one or two: keep the last 16.
  if (maps_.size() >= 16) maps_.erase(maps_.begin());
  TensorMaps t;
  t.a = a, t.b = b, t.c = c;
  for (size_t i = 0; i < map_shapes_.size(); ++i) {
    const void* base = spec_.tensor_maps[i].operand == GT_OPERAND_A ? a : spec_.tensor_maps[i].operand == GT_OPERAND_B ? b : c;
    encode_tensor_map(map_shapes_[i], base, t.bytes[i].data());
  }
  maps_.push_back(t);
  return maps_.back();
}

cudaError_t Runnable::launch_kernel(const Operands& ops, cudaStream_t s) const {
  const void* a = ops.a;
  const void* b = ops.b;
  void* c = ops.c;
  gt_scales scales = ops.scales;
  int M = int(p_.m), N = int(p_.n), K = int(p_.k), lda = int(p_.lda), ldb = int(p_.ldb), ldc = int(p_.ldc);
  void* ws = workspace_.get();
  std::array<int64_t, GT_SCALARS> scalars = spec_.scalars;
  std::lock_guard lk(mu_);
  const TensorMaps* maps = nullptr;
  if (!map_shapes_.empty()) {
    try {
      maps = &tensor_maps_for(a, b, c);
    } catch (const std::exception& e) {
      last_error_ = e.what();
      return cudaErrorInvalidValue;
    }
  }
  if (spec_.workspace_zero == GT_WORKSPACE_ZERO_EACH_CALL) {
    cudaError_t e = cudaMemsetAsync(ws, 0, spec_.workspace_bytes, s);
    if (e != cudaSuccess) return e;
  }
  // The kernel's parameters in order (plugin_abi.h); it reads as many as it declares.
  void* args[9 + 3 + GT_MAX_TENSOR_MAPS] = {&a, &b, &c, &M, &N, &K, &lda, &ldb, &ldc, &ws, scalars.data()};
  size_t next = 11;
  if (spec_.takes_scales) args[next++] = &scales;
  for (size_t i = 0; i < map_shapes_.size(); ++i) args[next++] = const_cast<unsigned char*>(maps->bytes[i].data());
  return kernel_->launch(geometry_, s, args);
}

cudaError_t Runnable::launch(const Operands& ops, cudaStream_t s) const {
  if (inner_) return launch_transformed(ops, s);
  if (kernel_) return launch_kernel(ops, s);
  try {
    op_->run(ops.a, ops.b, ops.c, p_.fp8() ? &ops.scales : nullptr, workspace_.get(), workspace_.size(), s);
  } catch (const std::exception& ex) {
    last_error_ = ex.what();
    cudaError_t e = cudaGetLastError();
    return e != cudaSuccess ? e : cudaErrorLaunchFailure;
  }
  return cudaSuccess;
}

LaunchFn Runnable::launch_fn() const {
  return [this](const Operands& ops, cudaStream_t s) { return launch(ops, s); };
}

std::optional<CompileRequest> compile_request(const Family& fam, const Problem& p, const Config& c,
                                              const gt_device& dev, const std::string& arch, KernelSpec* spec,
                                              Refused* why) {
  auto ks = fam.build(p, c, dev, why);
  if (!ks) return std::nullopt;
  CompileRequest r;
  r.source = ks->source;
  r.source_name = ks->source_name;
  r.kernel_name = ks->kernel_name;
  r.options = ks->options;
  r.arch = ks->compile_arch(arch);
  r.family = fam.name();
  r.family_version = fam.version();
  if (spec) *spec = std::move(*ks);
  return r;
}

Status refusal_status(gt_refusal code) {
  return code == GT_REFUSAL_RESOURCES ? Status::resources : Status::cannot_implement;
}

Built build_runnable(const Family& fam, const Problem& p, const Config& c, Transform t, const gt_device& dev,
                     const std::string& arch, const Compiler& compiler, const CompileResult* compiled, bool load) {
  Built b;
  std::string why;
  b.plan = plan_transform(p, t, &why);
  if (!b.plan) {
    b.status = Status::cannot_implement;
    b.message = why;
    return b;
  }
  const Problem& q = b.plan->inner;
  const std::string under = t == Transform::none ? "" : fmt::format("under {} ({}): ", to_string(t), q.key());
  auto refused = [&](const Refused& r) {
    b.status = refusal_status(r.code);
    b.message = under + r.why;
    return std::move(b);
  };
  if (auto r = fam.refusal(q, c, dev)) return refused(*r);
  std::unique_ptr<Runnable> run;
  if (fam.is_library()) {
    if (!load) return b;
    Refused r;
    auto op = fam.create_op(q, c, &r);
    if (!op) return refused(r);
    run = Runnable::from_op(std::move(op), q);
  } else {
    KernelSpec spec;
    Refused r;
    auto req = compile_request(fam, q, c, dev, arch, &spec, &r);
    if (!req) return refused(r);
    b.compile = compiled ? *compiled : compiler.compile(*req);
    if (!b.compile.ok) {
      b.status = Status::compile_failed;
      b.message = b.compile.log;
      return b;
    }
    if (!load) return b;
    run = Runnable::from_kernel(spec, b.compile.cubin, q, dev);
  }
  b.run = Runnable::transformed(std::move(run), *b.plan);
  return b;
}

Evaluation evaluate(const Family& fam, const Problem& p, const Config& c, const DeviceInfo& dev, ProblemBench& bench,
                    const Compiler& compiler, const CompileResult* compiled, const EvaluateOptions& o) {
  Evaluation ev;
  Measurement& m = ev.m;
  m.quick = o.quick;
  auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Runnable> run;
  try {
    Built b = build_runnable(fam, p, c, o.transform, dev.limits, dev.arch(), compiler, compiled);
    if (!fam.is_library()) {
      m.res = b.compile.res;
      m.compile_s = b.compile.seconds;
      m.compiled_from_cache = b.compile.from_cache;
    }
    if (!b.run) {
      m.status = b.status;
      m.message = b.message;
      return ev;
    }
    run = std::move(b.run);
    if (o.on_built) o.on_built();
    VerifyResult v = bench.verify(run->launch_fn());
    m.err_rel_fro = v.rel_fro;
    m.err_max_norm = v.max_norm;
    if (!v.ok) {
      m.status = Status::verify_failed;
      m.message = v.message;
    } else if (o.time_it) {
      if (o.settle_s > 0) bench.settle(run->launch_fn(), o.settle_s);
      Timed t = bench.time(run->launch_fn(), o.quick ? TimingOptions::quick() : o.timing);
      m.time = t.time;
      m.sensors = t.sensors;
      m.throttle = t.throttle;
      if (!t.note.empty()) m.message = t.note;
      if (o.keep_trace) ev.trace = std::move(t);
    }
  } catch (const LaunchError& e) {
    m.status = Status::runtime_fault;
    m.message = e.what();
    if (run && !run->last_error().empty()) m.message += " (" + run->last_error() + ")";
    ev.context_lost = e.sticky;
  } catch (const RuntimeFailure& e) {
    m.status = Status::runtime_fault;
    m.message = e.what();
    cudaError_t err = cudaGetLastError();
    ev.context_lost = is_sticky(err);
  }
  m.measure_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return ev;
}

}  // namespace gt
