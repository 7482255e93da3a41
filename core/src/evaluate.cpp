#include "evaluate.hpp"

#include <fmt/format.h>

#include <chrono>

namespace gt {

std::unique_ptr<Runnable> Runnable::from_kernel(const KernelSpec& spec, const std::string& cubin, const Problem& p) {
  auto r = std::unique_ptr<Runnable>(new Runnable());
  r->p_ = p;
  r->spec_ = spec;
  r->kernel_ = std::make_unique<LoadedKernel>(cubin, spec.kernel_name, spec.dynamic_smem);
  return r;
}

std::unique_ptr<Runnable> Runnable::from_op(std::unique_ptr<LibraryOp> op, const Problem& p) {
  auto r = std::unique_ptr<Runnable>(new Runnable());
  r->p_ = p;
  if (op->workspace_bytes()) r->workspace_ = DeviceBuffer(op->workspace_bytes());
  r->op_ = std::move(op);
  return r;
}

cudaError_t Runnable::launch(const void* a, const void* b, void* c, cudaStream_t s) const {
  if (kernel_) return kernel_->launch(spec_.grid, spec_.block, spec_.dynamic_smem, s, a, b, c, p_);
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
                                              std::string* why) {
  auto ks = fam.build(p, c, dev, why);
  if (!ks) return std::nullopt;
  CompileRequest r;
  r.source = ks->source;
  r.source_name = ks->source_name;
  r.kernel_name = ks->kernel_name;
  r.options = ks->options;
  r.arch = arch;
  r.family = fam.name();
  r.family_version = fam.version();
  if (spec) *spec = std::move(*ks);
  return r;
}

Status refusal_status(const std::string& why) {
  // A refusal for a limit of the device names "the device" (plugin_abi.h); any other is the
  // family's own choice.
  return why.find("the device") != std::string::npos ? Status::resources : Status::cannot_implement;
}

Evaluation evaluate(const Family& fam, const Problem& p, const Config& c, const DeviceInfo& dev, ProblemBench& bench,
                    const Compiler& compiler, const CompileResult* compiled, const EvaluateOptions& o) {
  Evaluation ev;
  Measurement& m = ev.m;
  m.quick = o.quick;
  if (auto why = fam.can_implement(p, c, dev.limits)) {
    m.status = refusal_status(*why);
    m.message = *why;
    return ev;
  }
  auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Runnable> run;
  try {
    if (fam.is_library()) {
      std::string why;
      auto op = fam.create_op(p, c, &why);
      if (!op) {
        m.status = Status::cannot_implement;
        m.message = why;
        return ev;
      }
      run = Runnable::from_op(std::move(op), p);
    } else {
      KernelSpec spec;
      std::string why;
      auto req = compile_request(fam, p, c, dev.limits, dev.arch(), &spec, &why);
      if (!req) {
        m.status = refusal_status(why);
        m.message = why;
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
      run = Runnable::from_kernel(spec, compiled->cubin, p);
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
