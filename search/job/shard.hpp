// Sharding a job across processes or hosts: shard i of n takes the problems whose index in
// the job (in file order) is i modulo n. Deterministic for a job file, so independently
// started shards (a Slurm job array, mpirun ranks) cover every problem exactly once; each
// writes its own store and `gemmtune merge` combines them.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace gt::search {

struct Shard {
  size_t index = 0, count = 1;
  std::string source;  // where it came from: "--shard", "SLURM_ARRAY_TASK_ID", ...
};

// From "--shard i/n" when given, else from the environment of a Slurm job array
// ((SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN) / SLURM_ARRAY_TASK_STEP of
// SLURM_ARRAY_TASK_COUNT), Open MPI (OMPI_COMM_WORLD_RANK/SIZE), PMI (PMI_RANK/PMI_SIZE) or a
// Slurm step (SLURM_PROCID of SLURM_NTASKS); else 0/1. InputError for a malformed flag or
// variable, or i >= n.
Shard resolve_shard(const std::string& flag, const std::map<std::string, std::string>& env);
std::map<std::string, std::string> environment();

// Indices of the problems this shard tunes.
std::vector<size_t> shard_indices(size_t problems, const Shard& s);

}  // namespace gt::search
