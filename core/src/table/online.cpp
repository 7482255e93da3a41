#include "table/online.hpp"

#include "base/errors.hpp"
#include "measure/evaluate.hpp"
#include "base/files.hpp"
#include "gpu/gpu_kernels.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>
#include <utility>
#include <vector>

namespace gt {
namespace fs = std::filesystem;

fs::path default_online_file(const fs::path& table) {
  return table.parent_path() / (table.filename().string() + ".online.jsonl");
}

namespace {

nlohmann::json line_of(const std::string& device, const std::string& problem, const OnlineVerdict& v) {
  return {{"device", device},
          {"problem", problem},
          {"candidate", v.candidate},
          {"default", v.default_config},
          {"kept", v.candidate_kept ? "candidate" : "default"},
          {"candidate_us", v.candidate_us},
          {"default_us", v.default_us},
          {"at", v.decided_at}};
}

}  // namespace

OnlineDecisions::OnlineDecisions(fs::path file) : file_(std::move(file)) {
  std::string text;
  try {
    text = read_locked(file_);
  } catch (const RuntimeFailure& e) {
    warning_ = fmt::format("the online decisions in {} cannot be read ({}): the checks start afresh", file_.string(),
                           e.what());
    return;
  }
  std::istringstream in(text);
  std::string line;
  size_t skipped = 0;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      const nlohmann::json j = nlohmann::json::parse(line);
      OnlineVerdict v;
      v.candidate = j.at("candidate").get<std::string>();
      v.default_config = j.at("default").get<std::string>();
      const std::string kept = j.at("kept").get<std::string>();
      if (kept != "candidate" && kept != "default") throw std::invalid_argument("kept");
      v.candidate_kept = kept == "candidate";
      v.candidate_us = j.at("candidate_us").get<double>();
      v.default_us = j.at("default_us").get<double>();
      v.decided_at = j.value("at", "");
      v.where = file_.string();
      decided_[{j.at("device").get<std::string>(), j.at("problem").get<std::string>(), v.candidate}] = v;
    } catch (const std::exception&) {
      ++skipped;  // a line another program wrote, or cut short by a full disk
    }
  }
  if (skipped)
    warning_ = fmt::format("{}: {} line{} that {} not an online decision were skipped", file_.string(), skipped,
                           skipped == 1 ? "" : "s", skipped == 1 ? "is" : "are");
}

std::optional<OnlineVerdict> OnlineDecisions::find(const std::string& device, const std::string& problem,
                                                   const std::string& candidate) const {
  std::lock_guard lk(mu_);
  auto it = decided_.find({device, problem, candidate});
  if (it == decided_.end()) return std::nullopt;
  return it->second;
}

void OnlineDecisions::record(const std::string& device, const std::string& problem, OnlineVerdict v) {
  if (v.decided_at.empty()) v.decided_at = utc_now().first;
  std::lock_guard lk(mu_);
  if (writable_) {
    try {
      const std::string line = line_of(device, problem, v).dump() + "\n";
      append_locked(file_, [&](const std::string&) { return line; });
      v.where = file_.string();
    } catch (const RuntimeFailure& e) {
      writable_ = false;
      warning_ += (warning_.empty() ? "" : "; ") +
                  fmt::format("the online decisions cannot be written ({}): they are kept in this process only, "
                              "and another process times its problems again",
                              e.what());
    }
  }
  decided_[{device, problem, v.candidate}] = std::move(v);
}

std::string OnlineDecisions::take_warning() {
  std::lock_guard lk(mu_);
  return std::exchange(warning_, std::string());
}

// ---------------------------------------------------------------------------------------
// Timing on the GPU

ScratchOperands::ScratchOperands(const Problem& p, cudaStream_t s)
    : a_(p.bytes_a()), b_(p.bytes_b()), c_(p.bytes_c()) {
  const uint64_t seed = 0x6f6e6c696e65ull;  // any fixed seed: the data's kind matters, not its values
  if (p.fp8()) {
    sa_ = DeviceBuffer(p.scale_count_a() * sizeof(float));
    sb_ = DeviceBuffer(p.scale_count_b() * sizeof(float));
    fill_quantised(p, GT_OPERAND_A, a_.get(), static_cast<float*>(sa_.get()), seed, Distribution::normal, s);
    fill_quantised(p, GT_OPERAND_B, b_.get(), static_cast<float*>(sb_.get()), seed + 1, Distribution::normal, s);
  } else {
    fill_random(a_.get(), p.in, p.bytes_a() / size_of(p.in), seed, Distribution::normal, s);
    fill_random(b_.get(), p.in_b, p.bytes_b() / size_of(p.in_b), seed + 1, Distribution::normal, s);
  }
}

Operands ScratchOperands::operands() const {
  Operands ops{a_.get(), b_.get(), c_.get(), {}};
  ops.scales.a = static_cast<const float*>(sa_.get());
  ops.scales.b = static_cast<const float*>(sb_.get());
  return ops;
}

std::pair<double, double> time_interleaved(const Runnable& a, const Runnable& b, const Operands& ops,
                                           cudaStream_t stream, int rounds, int calls) {
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  cuda_check(cudaEventCreate(&e0), "cudaEventCreate");
  cudaError_t made = cudaEventCreate(&e1);
  if (made != cudaSuccess) cudaEventDestroy(e0);
  cuda_check(made, "cudaEventCreate");
  auto run = [&](const Runnable& r, const char* which) {
    for (int i = 0; i < calls; ++i)
      if (cudaError_t e = r.launch(ops, stream); e != cudaSuccess)
        throw RuntimeFailure(fmt::format("the online check's {}: {}{}", which, cudaGetErrorString(e),
                                         r.last_error().empty() ? "" : " (" + r.last_error() + ")"));
  };
  auto timed = [&](const Runnable& r, const char* which) {
    cuda_check(cudaEventRecord(e0, stream), "cudaEventRecord");
    run(r, which);
    cuda_check(cudaEventRecord(e1, stream), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(e1), "the online check");
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
    return double(ms) * 1000.0 / calls;
  };
  std::vector<double> ta, tb;
  try {
    run(a, "transfer");  // warm-up: first launches load modules and make workspaces
    run(b, "default");
    for (int i = 0; i < rounds; ++i) {
      ta.push_back(timed(a, "transfer"));
      tb.push_back(timed(b, "default"));
    }
  } catch (...) {
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    throw;
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  auto median = [](std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  };
  return {median(ta), median(tb)};
}

}  // namespace gt
