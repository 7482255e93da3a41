// Helpers shared by the tests: GPU skipping, paths to the build's plugins and binary,
// temporary directories, running the CLI.
#pragma once

#include <filesystem>
#include <string>

namespace gt::test {

bool have_gpu();
std::string no_gpu_reason();
int gpu_skips();
void count_gpu_skip();

std::filesystem::path plugin_dir();       // the build's plugins
std::filesystem::path test_plugin_dir();  // the deliberately broken ones
std::filesystem::path gemmtune_binary();
std::filesystem::path source_dir();

// A fresh directory under the system's temp dir, removed on destruction.
struct TempDir {
  TempDir();
  ~TempDir();
  std::filesystem::path path;
};

struct CommandResult {
  int exit_code;
  std::string out;  // stdout and stderr together
};
// Runs a shell command line, capturing its output.
CommandResult run_command(const std::string& cmdline);

// A file's bytes ("" when it cannot be read), and a file written whole.
std::string read_file(const std::filesystem::path& p);
void write_file(const std::filesystem::path& p, const std::string& bytes);  // makes its directories

// cuobjdump: on PATH, or where tools/install_deps.sh puts it (PyPI's nvidia-cuda-cuobjdump);
// "" when neither has it. sass_of: a cubin's SASS through it, one instruction a line.
std::string cuobjdump();
std::string sass_of(const std::string& cubin, const std::string& tool);
// cuobjdump's path, REQUIREd (a SASS test cannot run without it), with how to install it.
std::string require_cuobjdump();

// A path (or any word) quoted for the shell: '...', a ' inside written '\''.
std::string shell_quote(const std::filesystem::path& p);

// A replay recording of a two-config family that no plugin has ("toy": bx = 16 at 10 us, 32 at
// 8 us, 64x64x64 f32 on an H200): a tune over it needs no GPU and takes well under a second.
extern const char* const kToyRecording;

// A plugin directory holding only the build's naive plugin (made once per test run), for tests
// whose defaults must not depend on whether cuBLASLt can answer on this machine.
std::filesystem::path naive_only_dir();
// The build's plugins with the stand-in cuBLASLt in the real one's place: what a machine with a
// GPU would load, as far as a lookup can tell (made once per test run).
std::filesystem::path standin_dir();

}  // namespace gt::test

// First line of a [gpu] test: without a GPU the test is counted as skipped, says why, and
// returns (Catch2 v2 has no SKIP).
#define GT_REQUIRE_GPU()                                                   \
  do {                                                                     \
    if (!gt::test::have_gpu()) {                                           \
      gt::test::count_gpu_skip();                                          \
      WARN("SKIPPED (no GPU): " << gt::test::no_gpu_reason());             \
      return;                                                              \
    }                                                                      \
  } while (0)

#include "measure/evaluate.hpp"

#include <array>
#include <functional>
#include <future>
#include <memory>
#include <vector>

namespace gt::test {
// Verifies (and, with time_it, times quickly) one config on GPU 0 with fresh inputs; through a
// problem transform, the config is of the family's space for the transformed problem.
Measurement gpu_check(const Family& fam, const Problem& p, const Config& c, bool time_it = false,
                      Transform t = Transform::none);
// The plugins of the build, loaded once.
const PluginRegistry& plugins();

// A config from its text (K=V,... or a canonical name); throws naming the text and why not.
Config parse_config(const Space& s, const std::string& text);
// A refusal that says these words.
bool says(const std::optional<std::string>& why, const std::string& words);
bool says(const std::optional<Refused>& why, const std::string& words);

// The value of a define the family's build passes NVRTC (-DNAME=value), "" when none.
std::string define_of(const KernelSpec& k, const std::string& name);
// A measurement's statistics for a stand-in GPU: 20 samples, every one `us`, a ±0.1 % interval.
Stats flat_stats(double us);

// An FP8 problem as torch._scaled_mm takes it: A stored M x K, B stored N x K (layout nt).
Problem fp8_problem(int64_t m, int64_t n, int64_t k, ScaleMode scale, DType out = DType::bf16,
                    DType a = DType::e4m3, DType b = DType::e4m3);

// An FP8 correctness test's (problem, config) pairs: every scale mode x shape (M, N, K) x config
// text ("" the default) that `configs(mode)` lists, the type pair (e4m3 x e4m3, e4m3 x e5m2,
// e5m2 x e4m3) and the output (bf16, f32, f16) rotating from one to the next; pairs the device
// refuses are left out.
std::vector<std::pair<Problem, Config>> fp8_jobs(
    const Family& fam, const gt_device& d, const std::vector<ScaleMode>& modes,
    const std::vector<std::array<int64_t, 3>>& shapes,
    const std::function<std::vector<std::string>(ScaleMode)>& configs);

// Every `step`-th valid config from `offset` on, in index order: a deterministic sample of a
// space too large to compile whole in CI.
std::vector<Config> every_kth_valid(const Space& s, uint64_t step, uint64_t offset);

// Configs compiled in the background on two threads into a fresh cache (the [compile] tests).
class CompileSample {
 public:
  explicit CompileSample(const Family& fam);
  ~CompileSample();
  // Queues one config for `arch`; the family's refusal when it builds none ("" when queued).
  std::string add(const Problem& p, const Config& c, const std::string& arch);
  struct Done {
    std::string what;  // "ARCH KEY CONFIG"
    CompileResult result;
  };
  std::vector<Done> results();  // every queued compile, in order, once all have finished
  // REQUIREs a compile to have succeeded and CHECKs it uses no local memory: no spill stores
  // or loads, no stack frame.
  static void check_no_local_memory(const Done& j);
  // Queues every `step`-th valid config of the family's space for (p, arch) from `offset` on,
  // REQUIREs that there is one and that none is refused.
  void add_every_kth(const Problem& p, const std::string& arch, uint64_t step, uint64_t offset);
  // REQUIREs every queued compile to succeed with a register count (INFO: what and the log).
  void require_all_compiled();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Compiles the jobs ahead, then checks each on GPU 0: verified against float64 within the
// dtype's tolerance (Catch CHECKs naming the problem, config and message).
void check_correct(const Family& fam, const std::vector<std::pair<Problem, Config>>& jobs);
// A family test's jobs (structs with .p and .c) as (problem, config) pairs.
template <class Jobs>
std::vector<std::pair<Problem, Config>> job_pairs(const Jobs& jobs) {
  std::vector<std::pair<Problem, Config>> pc;
  for (auto& j : jobs) pc.emplace_back(j.p, j.c);
  return pc;
}
template <class Jobs>
void check_correct_jobs(const Family& fam, const Jobs& jobs) {
  check_correct(fam, job_pairs(jobs));
}

// Compiles the jobs' (problem, config) for GPU 0 on every core into the cache gpu_check reads,
// so the checks that follow only load cubins. Configs the family refuses are left to the check.
void compile_ahead(const Family& fam, const std::vector<std::pair<Problem, Config>>& jobs);
template <class Jobs>
void compile_ahead_jobs(const Family& fam, const Jobs& jobs) {
  compile_ahead(fam, job_pairs(jobs));
}
}  // namespace gt::test

#include "measure/measurer.hpp"
#include "measure/provenance.hpp"

namespace gt::test {
// Measures whatever it is given in 100 us and counts it: a stand-in for a GPU (sm_90 limits)
// for tune-loop tests on the CPU.
class StandInGpu : public Measurer {
 public:
  StandInGpu();
  std::string describe() const override { return "stand-in GPU"; }
  const DeviceInfo& device() const override { return dev_; }
  void set_problem(const Problem&, Distribution, uint64_t) override {}
  Measurement measure(const Candidate&, bool quick) override;
  double settle(const Candidate&, double) override { return 0; }
  Retimed retime(const std::vector<Candidate>& cs, const Interleave&, uint64_t) override;
  int measured = 0;

 private:
  DeviceInfo dev_;
};

// A toy tune's provenance on a stand-in GPU ("Test GPU", every family version 1.0): the
// ProvenanceSource of tune-loop tests whose families are not loaded plugins.
Provenance toy_provenance(const std::string& family, bool quick);
}  // namespace gt::test
