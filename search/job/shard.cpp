#include "job/shard.hpp"

#include "base/errors.hpp"

#include <fmt/format.h>

#include <charconv>

extern char** environ;

namespace gt::search {

static bool to_size(const std::string& s, size_t* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

std::map<std::string, std::string> environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

Shard resolve_shard(const std::string& flag, const std::map<std::string, std::string>& env) {
  Shard s;
  auto pair = [&](const std::string& i, const std::string& n, const std::string& source, size_t offset = 0) {
    size_t a = 0, b = 0;
    if (!to_size(i, &a) || !to_size(n, &b) || b == 0 || a < offset || a - offset >= b)
      throw InputError(fmt::format("{}: shard '{}' of '{}' is not an index below a positive count", source, i, n));
    s.index = a - offset;
    s.count = b;
    s.source = source;
    return s;
  };
  if (!flag.empty()) {
    size_t slash = flag.find('/');
    if (slash == std::string::npos) throw InputError(fmt::format("--shard: '{}' is not I/N (e.g. 0/4)", flag));
    return pair(flag.substr(0, slash), flag.substr(slash + 1), "--shard");
  }
  auto get = [&](const char* k) -> const std::string* {
    auto it = env.find(k);
    return it == env.end() ? nullptr : &it->second;
  };
  if (auto id = get("SLURM_ARRAY_TASK_ID"), n = get("SLURM_ARRAY_TASK_COUNT"); id && n) {
    // --array=MIN-MAX:STEP numbers the tasks MIN, MIN+STEP, ...: shard (ID - MIN) / STEP.
    size_t min = 0, step = 1, task = 0;
    if (auto m = get("SLURM_ARRAY_TASK_MIN"); m && !to_size(*m, &min))
      throw InputError(fmt::format("SLURM_ARRAY_TASK_MIN: '{}' is not a task number", *m));
    if (auto st = get("SLURM_ARRAY_TASK_STEP"); st && (!to_size(*st, &step) || step == 0))
      throw InputError(fmt::format("SLURM_ARRAY_TASK_STEP: '{}' is not a positive step", *st));
    if (!to_size(*id, &task) || task < min || (task - min) % step != 0)
      throw InputError(fmt::format("SLURM_ARRAY_TASK_ID: task '{}' is not MIN {} plus a multiple of STEP {}", *id,
                                   min, step));
    return pair(std::to_string((task - min) / step), *n, "SLURM_ARRAY_TASK_ID");
  }
  // A launcher's own rank before Slurm's: ranks started by mpirun inside a Slurm allocation
  // inherit the allocation's SLURM_PROCID.
  if (auto id = get("OMPI_COMM_WORLD_RANK"), n = get("OMPI_COMM_WORLD_SIZE"); id && n)
    return pair(*id, *n, "OMPI_COMM_WORLD_RANK");
  if (auto id = get("PMI_RANK"), n = get("PMI_SIZE"); id && n) return pair(*id, *n, "PMI_RANK");
  if (auto id = get("SLURM_PROCID"), n = get("SLURM_NTASKS"); id && n) return pair(*id, *n, "SLURM_PROCID");
  return s;
}

std::vector<size_t> shard_indices(size_t problems, const Shard& s) {
  std::vector<size_t> out;
  for (size_t j = s.index; j < problems; j += s.count) out.push_back(j);
  return out;
}

}  // namespace gt::search
