// NVRTC: CUDA C++ source + options + architecture -> cubin, with the compiler's resource
// report kept, an on-disk cubin cache, and a thread pool that compiles ahead of the GPU.
// Needs no GPU.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace gt {

struct CompileRequest {
  const char* source = nullptr;
  std::string source_name;
  std::string kernel_name;
  std::vector<std::string> options;  // the family's (typically -D defines)
  std::string arch = "sm_90";        // sm_XY
  std::string family;                // name and version: part of the cache key
  std::string family_version;
};

struct Resources {
  int registers = -1;
  int spill_stores = -1;  // bytes
  int spill_loads = -1;   // bytes
  int stack_bytes = -1;
  int static_smem = -1;   // bytes
};

struct CompileResult {
  bool ok = false;
  bool from_cache = false;
  std::string key;    // cache key (hex)
  std::string cubin;  // bytes
  std::string log;    // NVRTC log (warnings, errors, ptxas resource report)
  Resources res;
  double seconds = 0;  // compile time (0 when from the cache)
};

// "13.0"
std::string nvrtc_version();
// The CUDA include directory NVRTC is pointed at (mma.h, cuda_fp16.h, ...).
std::string cuda_include_dir();
// Parse ptxas -v output.
Resources parse_resources(const std::string& log);
// The same read off the cubin's ELF, for when the log lacks ptxas's lines (NVRTC's log can come
// back empty for a compile that succeeded: docs/measurement.md, "The readings behind the constants"): registers and stack
// frame from the `.nv.info` attributes (the largest over the cubin's functions), and spills 0
// when there is no stack frame at all (spills live in it), else unknown (-1). Static shared
// memory stays unknown (on sm_90 the section also holds 1 KiB the system reserves). Every
// field unknown for what is not an ELF cubin.
Resources cubin_resources(const std::string& cubin);
// parse_resources(log), each field it could not read taken from cubin_resources(cubin).
Resources resources_of(const std::string& log, const std::string& cubin);

// cubins on disk, keyed by hash(source, options, arch, NVRTC version, family + version).
class CubinCache {
 public:
  explicit CubinCache(std::filesystem::path dir);
  const std::filesystem::path& dir() const { return dir_; }
  std::optional<CompileResult> get(const std::string& key) const;
  void put(const CompileResult& r) const;  // atomic (write + rename); failures are ignored
  std::filesystem::path cubin_path(const std::string& key) const;

 private:
  std::filesystem::path dir_;
};

std::filesystem::path default_cache_dir();

class Compiler {
 public:
  explicit Compiler(const CubinCache* cache) : cache_(cache) {}
  static std::string key_of(const CompileRequest& r);
  // Never throws for a compile error: ok=false with the log.
  CompileResult compile(const CompileRequest& r) const;
  // Options gemmtune adds to every compile (before the family's).
  static std::vector<std::string> base_options(const std::string& arch);

 private:
  const CubinCache* cache_;
};

// Compiles on worker threads; submit() returns at once. A request identical to one still
// pending shares its compile (configs that differ only in what needs no recompile, such as
// launch scalars, build the same cubin).
class CompilePool {
 public:
  CompilePool(const Compiler& c, unsigned threads = 0);  // 0: hardware concurrency
  ~CompilePool();
  std::shared_future<CompileResult> submit(CompileRequest r);
  unsigned threads() const { return unsigned(workers_.size()); }

 private:
  void loop();
  const Compiler& compiler_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::map<std::string, std::shared_future<CompileResult>> pending_;  // by Compiler::key_of
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace gt
