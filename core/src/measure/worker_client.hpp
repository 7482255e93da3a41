// Measuring in a child process. A candidate that faults poisons the CUDA context of its
// whole process, and one that hangs never returns; so the GPU belongs to a worker process
// (`gemmtune __worker`) that this client drives over pipes, one JSON object per line.
// When the worker dies or goes silent, the candidate in flight is recorded as a runtime
// fault or a timeout, the worker is restarted, and the tune goes on.
#pragma once

#include "measure/measurer.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace gt {

struct WorkerLimits {
  double hang_floor_s = 10;    // a silent worker is hung after at least this long...
  double hang_factor = 50;     // ...or this many times its slowest call so far, whichever is longer
  double absolute_cap_s = 600; // no single request may take longer than this
  double setup_cap_s = 300;    // preparing a problem (buffers, float64 reference)
  double compile_allowance_s = 60;  // a measure's first answer: its build (NVRTC) ...
  double slowest_tflops = 0.25;     // ... and a first GPU call at this rate, a few times over
};

// How long a measure may stay silent before its first heartbeat: the build plus a few calls
// of a kernel slower than any measured, at least the floor and at most the cap (the readings
// that set it: docs/measurement.md, "The readings behind the constants").
double first_answer_s(const WorkerLimits& limits, double flops);
// Once the worker says the build is done ({"built": ...}), only those first calls are left: a
// kernel that hangs at its first launch costs the floor, not the build's allowance as well.
double first_calls_wait_s(const WorkerLimits& limits, double flops);

class WorkerClient : public Measurer {
 public:
  // argv: the worker command line (e.g. {"/path/gemmtune", "__worker", "--device", "0", ...}).
  // Without `known`, the worker starts now and reports its GPU. With the GPU already known
  // (read by the caller), it starts at the first request that needs the GPU: a warm re-tune
  // that finds every result in the store starts no worker at all.
  WorkerClient(std::vector<std::string> argv, const PluginRegistry& plugins, WorkerLimits limits = {},
               std::optional<DeviceInfo> known = std::nullopt);
  ~WorkerClient() override;
  std::string describe() const override;
  const DeviceInfo& device() const override { return dev_; }
  void set_problem(const Problem& p, Distribution d, uint64_t seed) override;
  Measurement measure(const Candidate& c, bool quick) override;
  double settle(const Candidate& c, double cap_s) override;
  Retimed retime(const std::vector<Candidate>& cs, const Interleave& how, uint64_t seed) override;
  int restarts() const { return restarts_; }

 private:
  struct Died {
    std::string why;
    bool timeout;
  };
  void start();
  void ensure_started();
  void stop(bool kill);
  void restart();
  // Sends a request and waits for its reply, honouring heartbeats; throws Died. A "built"
  // message restarts the wait at after_build_s (0: it is only read).
  nlohmann::json call(const nlohmann::json& req, double first_wait_s, double cap_s, double after_build_s = 0);
  std::string exit_description();

  std::vector<std::string> argv_;
  const PluginRegistry& plugins_;
  WorkerLimits limits_;
  DeviceInfo dev_;
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string buf_;
  std::optional<nlohmann::json> problem_req_;  // re-sent after a restart
  double flops_ = 0;
  int restarts_ = 0;
};

}  // namespace gt
