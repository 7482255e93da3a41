#include "build/compiler.hpp"

#include "base/errors.hpp"
#include "base/space.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <nvrtc.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <unistd.h>

#ifndef GEMMTUNE_CUDA_INCLUDE_DIR
#define GEMMTUNE_CUDA_INCLUDE_DIR "/usr/local/cuda/include"
#endif

namespace gt {
namespace fs = std::filesystem;

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return fmt::format("{}.{}", major, minor);
}

std::string cuda_include_dir() {
  for (const char* env : {"GEMMTUNE_CUDA_INCLUDE", "CUDA_HOME", "CUDA_PATH"}) {
    if (const char* v = std::getenv(env); v && *v) {
      fs::path p = v;
      if (std::string(env) != "GEMMTUNE_CUDA_INCLUDE") p /= "include";
      if (fs::exists(p / "cuda_fp16.h")) return p.string();
    }
  }
  for (const char* p : {"/usr/local/cuda/include", GEMMTUNE_CUDA_INCLUDE_DIR})
    if (fs::exists(fs::path(p) / "cuda_fp16.h")) return p;
  return GEMMTUNE_CUDA_INCLUDE_DIR;
}

Resources parse_resources(const std::string& log) {
  Resources r;
  std::smatch m;
  static const std::regex regs(R"(Used (\d+) registers)");
  static const std::regex spill(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex smem(R"((\d+) bytes smem)");
  if (std::regex_search(log, m, regs)) r.registers = std::stoi(m[1]);
  if (std::regex_search(log, m, spill)) {
    r.stack_bytes = std::stoi(m[1]);
    r.spill_stores = std::stoi(m[2]);
    r.spill_loads = std::stoi(m[3]);
  }
  r.static_smem = std::regex_search(log, m, smem) ? std::stoi(m[1]) : (r.registers >= 0 ? 0 : -1);
  return r;
}

fs::path default_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "gemmtune";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "gemmtune";
  return fs::temp_directory_path() / "gemmtune-cache";
}

namespace {
// ELF64 little-endian, as NVRTC writes cubins; every read checked against the buffer.
template <class T>
bool read_at(const std::string& b, uint64_t off, T& out) {
  if (off > b.size() || b.size() - off < sizeof(T)) return false;
  std::memcpy(&out, b.data() + off, sizeof(T));
  return true;
}
constexpr uint8_t kEiFormatSval = 0x04;   // an attribute with a sized payload
constexpr uint8_t kEiAttrFrameSize = 0x11;
constexpr uint8_t kEiAttrRegCount = 0x2f;
}  // namespace

Resources cubin_resources(const std::string& b) {
  Resources r;
  if (b.size() < 64 || b.compare(0, 4, "\x7f" "ELF") != 0 || b[4] != 2 /* 64-bit */) return r;
  uint64_t shoff = 0;
  uint16_t shentsize = 0, shnum = 0, shstrndx = 0;
  if (!read_at(b, 0x28, shoff) || !read_at(b, 0x3a, shentsize) || !read_at(b, 0x3c, shnum) ||
      !read_at(b, 0x3e, shstrndx) || shentsize < 64 || shstrndx >= shnum)
    return r;
  struct Section {
    uint32_t name;
    uint64_t off, size;
  };
  std::vector<Section> secs;
  for (uint16_t i = 0; i < shnum; ++i) {
    const uint64_t h = shoff + uint64_t(i) * shentsize;
    Section s{};
    if (!read_at(b, h, s.name) || !read_at(b, h + 0x18, s.off) || !read_at(b, h + 0x20, s.size)) return r;
    secs.push_back(s);
  }
  auto name_of = [&](const Section& s) {
    const uint64_t at = secs[shstrndx].off + s.name;
    if (at >= b.size()) return std::string();
    return std::string(b.c_str() + at, strnlen(b.c_str() + at, b.size() - at));
  };
  int regs = -1, frame = -1;
  for (auto& s : secs) {
    const std::string n = name_of(s);
    if (n != ".nv.info") continue;
    // Attributes: format byte, attribute byte, then a 16-bit size and that many bytes
    // (kEiFormatSval), or a 16-bit value (format 3), 4 bytes in all (format 2), or 2 (format 1).
    for (uint64_t p = s.off; p + 2 <= s.off + s.size;) {
      const uint8_t fmt = uint8_t(b[p]), attr = uint8_t(b[p + 1]);
      if (fmt == kEiFormatSval) {
        uint16_t size = 0;
        if (!read_at(b, p + 2, size)) break;
        uint32_t value = 0;  // payload: the function's symbol index, then the value
        if (size == 8 && read_at(b, p + 8, value)) {
          if (attr == kEiAttrRegCount) regs = std::max(regs, int(value));
          if (attr == kEiAttrFrameSize) frame = std::max(frame, int(value));
        }
        p += 4 + uint64_t(size);
      } else if (fmt == 3 || fmt == 2) {
        p += 4;
      } else if (fmt == 1) {
        p += 2;
      } else {
        break;  // a format we do not know: stop rather than misread
      }
    }
  }
  if (regs < 0) return r;  // not a cubin we can read
  r.registers = regs;
  r.stack_bytes = frame < 0 ? 0 : frame;
  r.spill_stores = r.spill_loads = r.stack_bytes == 0 ? 0 : -1;
  return r;
}

Resources resources_of(const std::string& log, const std::string& cubin) {
  Resources r = parse_resources(log);
  if (r.registers >= 0 && r.spill_stores >= 0) return r;
  const Resources c = cubin_resources(cubin);
  for (auto [mine, theirs] : {std::pair{&r.registers, c.registers}, {&r.spill_stores, c.spill_stores},
                               {&r.spill_loads, c.spill_loads}, {&r.stack_bytes, c.stack_bytes},
                               {&r.static_smem, c.static_smem}})
    if (*mine < 0) *mine = theirs;
  return r;
}

CubinCache::CubinCache(fs::path dir) : dir_(std::move(dir)) {}

fs::path CubinCache::cubin_path(const std::string& key) const { return dir_ / key.substr(0, 2) / (key + ".cubin"); }

std::optional<CompileResult> CubinCache::get(const std::string& key) const {
  fs::path meta = dir_ / key.substr(0, 2) / (key + ".json");
  std::ifstream mf(meta);
  if (!mf) return std::nullopt;
  try {
    nlohmann::json j = nlohmann::json::parse(mf);
    CompileResult r;
    r.key = key;
    r.ok = j.at("ok").get<bool>();
    r.log = j.at("log").get<std::string>();
    r.from_cache = true;
    if (r.ok) {
      std::ifstream cf(cubin_path(key), std::ios::binary);
      if (!cf) return std::nullopt;
      std::ostringstream ss;
      ss << cf.rdbuf();
      r.cubin = ss.str();
      if (r.cubin.size() != j.at("cubin_bytes").get<size_t>()) return std::nullopt;  // torn write
    }
    r.res = resources_of(r.log, r.cubin);
    return r;
  } catch (...) {
    return std::nullopt;  // a damaged entry is recompiled
  }
}

void CubinCache::put(const CompileResult& r) const {
  try {
    fs::path sub = dir_ / r.key.substr(0, 2);
    fs::create_directories(sub);
    std::string tmp_suffix = fmt::format(".tmp{}.{}", ::getpid(), std::hash<std::thread::id>()(std::this_thread::get_id()));
    if (r.ok) {
      fs::path tmp = sub / (r.key + ".cubin" + tmp_suffix);
      {
        std::ofstream f(tmp, std::ios::binary);
        f.write(r.cubin.data(), std::streamsize(r.cubin.size()));
        if (!f) return;
      }
      fs::rename(tmp, cubin_path(r.key));
    }
    nlohmann::json j = {{"ok", r.ok}, {"log", r.log}, {"cubin_bytes", r.cubin.size()}, {"seconds", r.seconds}};
    fs::path tmp = sub / (r.key + ".json" + tmp_suffix);
    {
      std::ofstream f(tmp);
      f << j.dump();
      if (!f) return;
    }
    fs::rename(tmp, sub / (r.key + ".json"));
  } catch (...) {
    // The cache is an optimisation: a full disk or a read-only directory costs a recompile.
  }
}

std::vector<std::string> Compiler::base_options(const std::string& arch) {
  return {"--gpu-architecture=" + arch, "--std=c++17", "-I" + cuda_include_dir(), "-Xptxas=-v",
          "--generate-line-info"};
}

std::string Compiler::key_of(const CompileRequest& r) {
  std::string k;
  k += r.source ? r.source : "";
  k += '\0';
  k += r.kernel_name + '\0' + r.arch + '\0' + nvrtc_version() + '\0' + r.family + '\0' + r.family_version + '\0';
  for (auto& o : base_options(r.arch)) k += o + '\0';
  for (auto& o : r.options) k += o + '\0';
  return hex64(stable_hash(k));
}

CompileResult Compiler::compile(const CompileRequest& req) const {
  CompileResult r;
  r.key = key_of(req);
  if (cache_)
    if (auto hit = cache_->get(r.key)) return *hit;
  auto t0 = std::chrono::steady_clock::now();
  nvrtcProgram prog = nullptr;
  nvrtcResult rc = nvrtcCreateProgram(&prog, req.source, req.source_name.c_str(), 0, nullptr, nullptr);
  if (rc != NVRTC_SUCCESS) {
    r.log = fmt::format("nvrtcCreateProgram: {}", nvrtcGetErrorString(rc));
    return r;
  }
  std::vector<std::string> opts = base_options(req.arch);
  opts.insert(opts.end(), req.options.begin(), req.options.end());
  std::vector<const char*> argv;
  for (auto& o : opts) argv.push_back(o.c_str());
  rc = nvrtcCompileProgram(prog, int(argv.size()), argv.data());
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  if (log_size > 1) {
    r.log.resize(log_size);
    nvrtcGetProgramLog(prog, r.log.data());
    r.log.resize(log_size - 1);
  }
  if (rc == NVRTC_SUCCESS) {
    size_t n = 0;
    if (nvrtcGetCUBINSize(prog, &n) == NVRTC_SUCCESS && n > 0) {
      r.cubin.resize(n);
      nvrtcGetCUBIN(prog, r.cubin.data());
      r.ok = true;
    } else {
      r.log += "\nNVRTC produced no cubin (is the architecture a real one, sm_XY?)";
    }
  } else if (r.log.empty()) {
    r.log = nvrtcGetErrorString(rc);
  }
  nvrtcDestroyProgram(&prog);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.res = resources_of(r.log, r.cubin);
  if (cache_) cache_->put(r);
  return r;
}

CompilePool::CompilePool(const Compiler& c, unsigned threads) : compiler_(c) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned i = 0; i < threads; ++i) workers_.emplace_back([this] { loop(); });
}

CompilePool::~CompilePool() {
  {
    std::lock_guard lk(m_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& w : workers_) w.join();
}

std::shared_future<CompileResult> CompilePool::submit(CompileRequest r) {
  std::string key = Compiler::key_of(r);
  auto task = std::make_shared<std::packaged_task<CompileResult()>>([this, key, r = std::move(r)] {
    CompileResult res = compiler_.compile(r);
    std::lock_guard lk(m_);
    pending_.erase(key);  // from now on the cubin cache answers an identical request
    return res;
  });
  std::shared_future<CompileResult> f;
  {
    std::lock_guard lk(m_);
    if (auto it = pending_.find(key); it != pending_.end()) return it->second;
    f = task->get_future().share();
    pending_.emplace(key, f);
    queue_.emplace_back([task] { (*task)(); });
  }
  cv_.notify_one();
  return f;
}

void CompilePool::loop() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lk(m_);
      cv_.wait(lk, [this] { return stop_ || !queue_.empty(); });
      if (stop_ && queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job();
  }
}

}  // namespace gt
