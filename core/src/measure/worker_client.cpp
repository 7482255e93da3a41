#include "measure/worker_client.hpp"

#include "base/errors.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace gt {

using Clock = std::chrono::steady_clock;

WorkerClient::WorkerClient(std::vector<std::string> argv, const PluginRegistry& plugins, WorkerLimits limits,
                           std::optional<DeviceInfo> known)
    : argv_(std::move(argv)), plugins_(plugins), limits_(limits) {
  if (known)
    dev_ = std::move(*known);
  else
    start();
}

void WorkerClient::ensure_started() {
  if (pid_ <= 0) start();
}

WorkerClient::~WorkerClient() { stop(false); }

std::string WorkerClient::describe() const {
  return fmt::format("GPU {} ({}), isolated worker process", dev_.index, dev_.name);
}

void WorkerClient::start() {
  int in_pipe[2], out_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0)
    throw RuntimeFailure(std::string("cannot create pipes for the worker: ") + std::strerror(errno));
  pid_t pid = fork();
  if (pid < 0) throw RuntimeFailure(std::string("cannot fork the worker: ") + std::strerror(errno));
  if (pid == 0) {
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    std::vector<char*> args;
    for (auto& a : argv_) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    std::fprintf(stderr, "gemmtune: cannot start the worker %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  pid_ = pid;
  to_ = in_pipe[1];
  from_ = out_pipe[0];
  buf_.clear();
  signal(SIGPIPE, SIG_IGN);  // a dead worker must show up as an error, not kill us
  nlohmann::json info;
  try {
    info = call({{"op", "info"}}, limits_.setup_cap_s, limits_.setup_cap_s);
  } catch (const Died& d) {
    stop(true);
    throw RuntimeFailure("the measurement worker did not start: " + d.why);
  }
  if (!info.value("ok", false)) {
    std::string err = info.value("error", "unknown error");
    bool no_gpu = info.value("no_gpu", false);
    stop(true);
    if (no_gpu) throw NoGpuError(err);
    throw RuntimeFailure("the measurement worker could not start: " + err);
  }
  DeviceInfo seen = info.at("device").get<DeviceInfo>();
  if (!dev_.uuid.empty() && seen.uuid != dev_.uuid) {
    stop(true);
    throw RuntimeFailure(fmt::format("the measurement worker sees GPU {} ({}), not the {} ({}) it was started for",
                                     seen.index, seen.uuid, dev_.name, dev_.uuid));
  }
  dev_ = std::move(seen);
}

void WorkerClient::stop(bool kill_it) {
  if (pid_ <= 0) return;
  if (to_ >= 0) close(to_);  // EOF: a healthy worker exits
  to_ = -1;
  if (kill_it) ::kill(pid_, SIGKILL);
  int st = 0;
  for (int i = 0; i < 200 && !kill_it; ++i) {  // up to 2 s for a clean exit
    if (waitpid(pid_, &st, WNOHANG) == pid_) {
      pid_ = -1;
      break;
    }
    usleep(10000);
  }
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    waitpid(pid_, &st, 0);
  }
  pid_ = -1;
  if (from_ >= 0) close(from_);
  from_ = -1;
}

std::string WorkerClient::exit_description() {
  if (pid_ <= 0) return "worker not running";
  int st = 0;
  pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r == 0) {
    usleep(100000);
    r = waitpid(pid_, &st, WNOHANG);
  }
  if (r == pid_) {
    pid_ = -1;
    if (WIFSIGNALED(st)) return fmt::format("worker killed by signal {} ({})", WTERMSIG(st), strsignal(WTERMSIG(st)));
    if (WIFEXITED(st)) return fmt::format("worker exited with code {}", WEXITSTATUS(st));
  }
  return "worker closed its output";
}

void WorkerClient::restart() {
  stop(true);
  ++restarts_;
  start();
  if (problem_req_) {
    nlohmann::json r = call(*problem_req_, limits_.setup_cap_s, limits_.setup_cap_s);
    if (!r.value("ok", false))
      throw RuntimeFailure("the restarted worker could not set up the problem again: " + r.value("error", ""));
  }
}

nlohmann::json WorkerClient::call(const nlohmann::json& req, double first_wait_s, double cap_s, double after_build_s) {
  std::string line = req.dump() + "\n";
  for (size_t off = 0; off < line.size();) {
    ssize_t w = write(to_, line.data() + off, line.size() - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw Died{"cannot write to the worker (" + exit_description() + ")", false};
    }
    off += size_t(w);
  }
  auto t0 = Clock::now();
  auto after = [](Clock::time_point from, double s) {
    return from + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  auto deadline = after(t0, first_wait_s);
  const auto hard = after(t0, cap_s);
  double slowest = 0;
  for (;;) {
    size_t nl;
    while ((nl = buf_.find('\n')) != std::string::npos) {
      std::string msg = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(msg);
      } catch (...) {
        continue;  // not ours (a library printing to stdout): ignore
      }
      if (j.contains("beat")) {
        // A completed GPU call: the worker is alive. Give it a margin over its slowest call.
        slowest = std::max(slowest, j["beat"].get<double>());
        double wait = std::max(limits_.hang_floor_s, limits_.hang_factor * slowest);
        deadline = std::min(hard, after(Clock::now(), wait));
        continue;
      }
      if (j.contains("built")) {
        if (after_build_s > 0 && slowest == 0) deadline = std::min(hard, after(Clock::now(), after_build_s));
        continue;
      }
      return j;
    }
    auto now = Clock::now();
    if (now >= deadline) {
      double el = std::chrono::duration<double>(now - t0).count();
      throw Died{fmt::format("no answer for {:.1f} s (slowest completed call {:.3f} s): treated as hung", el, slowest), true};
    }
    int ms = int(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) + 1;
    pollfd pfd{from_, POLLIN, 0};
    int pr = poll(&pfd, 1, std::min(ms, 1000));
    if (pr < 0 && errno != EINTR) throw Died{std::string("poll: ") + std::strerror(errno), false};
    if (pr > 0) {
      char tmp[65536];
      ssize_t n = read(from_, tmp, sizeof tmp);
      if (n == 0) throw Died{exit_description(), false};
      if (n < 0 && errno != EINTR && errno != EAGAIN) throw Died{exit_description(), false};
      if (n > 0) buf_.append(tmp, size_t(n));
    }
  }
}

void WorkerClient::set_problem(const Problem& p, Distribution d, uint64_t seed) {
  ensure_started();
  nlohmann::json req = {{"op", "problem"}, {"problem", p}, {"dist", to_string(d)}, {"seed", seed}};
  flops_ = p.flops();
  problem_req_ = req;
  nlohmann::json r;
  try {
    r = call(req, limits_.setup_cap_s, limits_.setup_cap_s);
  } catch (const Died& d) {
    problem_req_.reset();
    restart();
    throw RuntimeFailure("the worker died preparing " + p.key() + ": " + d.why);
  }
  if (!r.value("ok", false)) {
    problem_req_.reset();
    throw RuntimeFailure(r.value("error", "the worker could not prepare the problem"));
  }
}

static double first_calls_s(const WorkerLimits& limits, double flops) {
  return 4.0 * flops / (limits.slowest_tflops * 1e12);
}

double first_answer_s(const WorkerLimits& limits, double flops) {
  return std::min(limits.absolute_cap_s,
                  std::max(limits.hang_floor_s, limits.compile_allowance_s + first_calls_s(limits, flops)));
}

double first_calls_wait_s(const WorkerLimits& limits, double flops) {
  return std::min(limits.absolute_cap_s, std::max(limits.hang_floor_s, first_calls_s(limits, flops)));
}

Measurement WorkerClient::measure(const Candidate& c, bool quick) {
  ensure_started();
  nlohmann::json req = {{"op", "measure"}, {"family", c.family}, {"config", c.config},
                         {"transform", to_string(c.transform)}, {"quick", quick}};
  try {
    nlohmann::json r =
        call(req, first_answer_s(limits_, flops_), limits_.absolute_cap_s, first_calls_wait_s(limits_, flops_));
    if (!r.value("ok", false)) {
      Measurement m;
      m.status = Status::runtime_fault;
      m.message = "worker error: " + r.value("error", "unknown");
      return m;
    }
    Measurement m = r.at("measurement").get<Measurement>();
    if (r.value("context_lost", false)) {
      m.message += " [the worker's CUDA context was lost; worker restarted]";
      restart();
    }
    return m;
  } catch (const Died& d) {
    Measurement m;
    m.status = d.timeout ? Status::timeout : Status::runtime_fault;
    m.message = d.why;
    m.quick = quick;
    restart();
    m.message += " [worker restarted]";
    return m;
  }
}

double WorkerClient::settle(const Candidate& c, double cap_s) {
  ensure_started();
  nlohmann::json req = {{"op", "settle"}, {"family", c.family}, {"config", c.config},
                         {"transform", to_string(c.transform)}, {"cap_s", cap_s}};
  try {
    nlohmann::json r = call(req, std::max(limits_.hang_floor_s, cap_s * 2), limits_.absolute_cap_s);
    if (!r.value("ok", false)) throw RuntimeFailure("settle: " + r.value("error", ""));
    return r.at("seconds").get<double>();
  } catch (const Died& d) {
    restart();
    throw RuntimeFailure("the worker died settling the clock: " + d.why);
  }
}

Retimed WorkerClient::retime(const std::vector<Candidate>& cs, const Interleave& how, uint64_t seed) {
  ensure_started();
  nlohmann::json list = nlohmann::json::array();
  for (auto& c : cs) list.push_back({{"family", c.family}, {"config", c.config}, {"transform", to_string(c.transform)}});
  nlohmann::json req = {{"op", "retime"}, {"candidates", list}, {"rounds", how.rounds},
                         {"warmup_s", how.warmup_s},   {"capped_warmup_s", how.capped_warmup_s},
                         {"capped_rounds", how.capped_rounds}, {"seed", seed}};
  try {
    nlohmann::json r = call(req, limits_.hang_floor_s, limits_.absolute_cap_s);
    if (!r.value("ok", false)) throw RuntimeFailure("re-timing: " + r.value("error", ""));
    Retimed out(r.at("stats").get<std::vector<Stats>>());
    out.capped = r.at("capped").get<bool>();
    return out;
  } catch (const Died& d) {
    restart();
    throw RuntimeFailure("the worker died re-timing finalists: " + d.why);
  }
}

}  // namespace gt
