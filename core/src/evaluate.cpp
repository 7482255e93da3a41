#include "evaluate.hpp"

#include <fmt/format.h>

#include <chrono>

namespace gt {

std::unique_ptr<Runnable> Runnable::from_kernel(const KernelSpec& spec, const std::string& cubin, const Problem& p,
                                                const gt_device& dev) {
  auto r = std::unique_ptr<Runnable>(new Runnable());
  r->p_ = p;
  r->spec_ = spec;
  const auto grid = spec.launch_grid(dev.sm_count);
  for (int i = 0; i < 3; ++i) {
    r->geometry_.grid[i] = grid[size_t(i)];
    r->geometry_.block[i] = spec.block[i];
    r->geometry_.cluster[i] = spec.cluster[i];
  }
  r->geometry_.smem = spec.dynamic_smem;
  for (auto& m : spec.tensor_maps) {
    Refused why;
    auto shape = tensor_map_shape(p, m, &why);
    if (!shape) throw RuntimeFailure("tensor map: " + why.why);  // Family::build refused these already
    r->map_shapes_.push_back(*shape);
  }
  r->kernel_ = std::make_unique<LoadedKernel>(cubin, spec.kernel_name, spec.dynamic_smem);
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

cudaError_t Runnable::launch_kernel(const void* a, const void* b, void* c, cudaStream_t s) const {
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
  void* args[9 + 2 + GT_MAX_TENSOR_MAPS] = {&a, &b, &c, &M, &N, &K, &lda, &ldb, &ldc, &ws, scalars.data()};
  for (size_t i = 0; i < map_shapes_.size(); ++i) args[11 + i] = const_cast<unsigned char*>(maps->bytes[i].data());
  return kernel_->launch(geometry_, s, args);
}

cudaError_t Runnable::launch(const void* a, const void* b, void* c, cudaStream_t s) const {
  if (kernel_) return launch_kernel(a, b, c, s);
  try {
    op_->run(a, b, c, workspace_.get(), workspace_.size(), s);
  } catch (const std::exception& ex) {
    last_error_ = ex.what();
    cudaError_t e = cudaGetLastError();
    return e != cudaSuccess ? e : cudaErrorLaunchFailure;
  }
  return cudaSuccess;
}

LaunchFn Runnable::launch_fn() const {
  return [this](const void* a, const void* b, void* c, cudaStream_t s) { return launch(a, b, c, s); };
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

Evaluation evaluate(const Family& fam, const Problem& p, const Config& c, const DeviceInfo& dev, ProblemBench& bench,
                    const Compiler& compiler, const CompileResult* compiled, const EvaluateOptions& o) {
  Evaluation ev;
  Measurement& m = ev.m;
  m.quick = o.quick;
  if (auto why = fam.refusal(p, c, dev.limits)) {
    m.status = refusal_status(why->code);
    m.message = why->why;
    return ev;
  }
  auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Runnable> run;
  try {
    if (fam.is_library()) {
      Refused why;
      auto op = fam.create_op(p, c, &why);
      if (!op) {
        m.status = refusal_status(why.code);
        m.message = why.why;
        return ev;
      }
      run = Runnable::from_op(std::move(op), p);
    } else {
      KernelSpec spec;
      Refused why;
      auto req = compile_request(fam, p, c, dev.limits, dev.arch(), &spec, &why);
      if (!req) {
        m.status = refusal_status(why.code);
        m.message = why.why;
        return ev;
      }
      CompileResult local;
      if (!compiled) {
        local = compiler.compile(*req);
        compiled = &local;
      }
      m.res = compiled->res;
      m.compile_s = compiled->seconds;
      m.compiled_from_cache = compiled->from_cache;
      if (!compiled->ok) {
        m.status = Status::compile_failed;
        m.message = compiled->log;
        return ev;
      }
      run = Runnable::from_kernel(spec, compiled->cubin, p, dev.limits);
    }
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
