// NVRTC needs no GPU: every candidate compiles here, and a second pass comes from the cache.
#include "measure/evaluate.hpp"
#include "build/plugin.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

using namespace gt;

TEST_CASE("every naive candidate compiles for sm_90 (every dtype, two layouts) and sm_80 (two), and again from "
          "the cache", "[compile]") {
  auto reg = PluginRegistry::load({test::plugin_dir()});
  const Family& naive = reg.get("naive");
  test::TempDir tmp;
  CubinCache cache(tmp.path);
  Compiler compiler(&cache);
  struct Case {
    const char* arch;
    DType dt;
    Layout lay;
  };
  std::vector<Case> cases;
  for (auto dt : {DType::f32, DType::tf32, DType::f16, DType::bf16})
    for (auto lay : {Layout::nn, Layout::tt}) cases.push_back({"sm_90", dt, lay});
  cases.push_back({"sm_80", DType::f32, Layout::nn});
  cases.push_back({"sm_80", DType::bf16, Layout::tt});
  const gt_device d = arch_limits("sm_90");
  for (auto& cs : cases) {
    {
      const gt_device da = arch_limits(cs.arch);
      Problem p = Problem::make(512, 512, 512, cs.dt, Problem::default_out(cs.dt), cs.lay);
      Space s = naive.space(p, da);
      CompilePool pool(compiler, 2);
      std::vector<std::shared_future<CompileResult>> fut;
      for (uint64_t i = 0; i < s.raw_size(); ++i) {
        Config c = s.at(i);
        if (!s.valid(c)) continue;
        auto req = compile_request(naive, p, c, da, cs.arch, nullptr, nullptr);
        REQUIRE(req);
        fut.push_back(pool.submit(*req));
      }
      REQUIRE(fut.size() == s.count_valid());
      for (auto& f : fut) {
        const CompileResult& r = f.get();
        INFO(r.log);
        REQUIRE(r.ok);
        CHECK_FALSE(r.from_cache);
        CHECK(r.res.registers > 0);
        CHECK(r.res.spill_stores == 0);
      }
    }
  }
  // Second pass: everything from the cache, nothing compiled.
  Problem p = Problem::make(512, 512, 512, DType::f32, DType::f32, Layout::nn);
  Space s = naive.space(p, d);
  auto req = compile_request(naive, p, s.default_config(), d, "sm_90", nullptr, nullptr);
  REQUIRE(req);
  CompileResult again = compiler.compile(*req);
  CHECK(again.ok);
  CHECK(again.from_cache);
  CHECK(again.res.registers > 0);
  // Another architecture is another key (sm_86: not compiled above).
  req->arch = "sm_86";
  CompileResult other = compiler.compile(*req);
  CHECK(other.ok);
  CHECK_FALSE(other.from_cache);
}

TEST_CASE("a compile error keeps the log", "[compile]") {
  test::TempDir tmp;
  CubinCache cache(tmp.path);
  Compiler compiler(&cache);
  CompileRequest r;
  r.source = "extern \"C\" __global__ void k() { this is not cuda; }";
  r.source_name = "broken.cu";
  r.kernel_name = "k";
  r.family = "test";
  r.family_version = "1";
  CompileResult res = compiler.compile(r);
  CHECK_FALSE(res.ok);
  CHECK_THAT(res.log, Catch::Contains("broken.cu"));
  CHECK_THAT(res.log, Catch::Contains("error"));
  CompileResult again = compiler.compile(r);
  CHECK_FALSE(again.ok);
  CHECK(again.from_cache);
  CHECK(again.log == res.log);
}

TEST_CASE("ptxas resource reports are parsed", "[compile]") {
  auto r = parse_resources(
      "ptxas info    : Function properties for k\n"
      "ptxas         .     16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 1 barriers, 33792 bytes smem, 400 bytes cmem[0]\n");
  CHECK(r.registers == 168);
  CHECK(r.stack_bytes == 16);
  CHECK(r.spill_stores == 8);
  CHECK(r.spill_loads == 4);
  CHECK(r.static_smem == 33792);
}

TEST_CASE("a cubin's own ELF says what ptxas's log says: registers, stack frame, spills", "[compile]") {
  // Read when NVRTC's log lacks ptxas's lines (it came back empty for some builds on the H200
  // machine). A kernel with no stack, one with a dynamically indexed local array (a stack
  // frame, so spills are not known from the ELF), one with static shared memory, and cubins
  // we cannot read.
  static const char* src = R"(
extern "C" __global__ void plain(float* x) { x[threadIdx.x] *= 2.0f; }
extern "C" __global__ void stacked(float* x, const int* idx) {
  float a[256];
  for (int j = 0; j < 256; ++j) a[idx[j] & 255] = x[j * blockDim.x + threadIdx.x];
  x[threadIdx.x] = a[idx[threadIdx.x] & 255];
}
extern "C" __global__ void shared(float* x) {
  __shared__ float s[1000];
  s[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  x[threadIdx.x] = s[999 - threadIdx.x];
})";
  Compiler compiler(nullptr);
  for (const char* name : {"plain", "stacked", "shared"}) {
    CompileRequest req;
    req.source = src;
    req.source_name = "resources.cu";
    req.kernel_name = name;
    req.options = {"-DKERNEL=" + std::string(name)};
    CompileResult r = compiler.compile(req);
    INFO(name << "\n" << r.log);
    REQUIRE(r.ok);
    const Resources log = parse_resources(r.log), elf = cubin_resources(r.cubin);
    REQUIRE(log.registers > 0);
    // One source, three kernels in every cubin: the ELF gives the largest of each.
    CHECK(elf.registers >= log.registers);
    CHECK(elf.stack_bytes >= log.stack_bytes);
    CHECK(log.static_smem == 4000);
    CHECK(elf.static_smem == -1);  // not read off the ELF (sm_90's section holds 1 KiB more)
    CHECK(elf.stack_bytes > 0);          // the local array's frame
    CHECK(elf.spill_stores == -1);       // a frame: whether any of it is spills is not in the ELF
    // With the log gone, the ELF fills in; with it, the log stands.
    CHECK(resources_of("", r.cubin).registers == elf.registers);
    CHECK(resources_of(r.log, r.cubin).registers == log.registers);
    CHECK(resources_of(r.log, r.cubin).spill_stores == log.spill_stores);
  }
  CHECK(cubin_resources("not an ELF").registers == -1);
  CHECK(cubin_resources(std::string("\x7f" "ELF\x02", 5) + std::string(100, '\xff')).registers == -1);
}

TEST_CASE("a kernel with no stack reads the same from its ELF as from ptxas's log", "[compile]") {
  auto reg = PluginRegistry::load({test::plugin_dir()});
  const Family& naive = reg.get("naive");
  const gt_device d = arch_limits("sm_90");
  Problem p = Problem::make(512, 512, 512, DType::f32, DType::f32, Layout::nn);
  Space s = naive.space(p, d);
  auto req = compile_request(naive, p, s.default_config(), d, "sm_90", nullptr, nullptr);
  REQUIRE(req);
  CompileResult r = Compiler(nullptr).compile(*req);
  REQUIRE(r.ok);
  const Resources log = parse_resources(r.log), elf = cubin_resources(r.cubin);
  INFO(r.log);
  REQUIRE(log.registers > 0);
  CHECK(elf.registers == log.registers);
  CHECK(elf.stack_bytes == 0);
  CHECK(log.stack_bytes == 0);
  CHECK(elf.spill_stores == 0);  // no frame: no spills
  CHECK(elf.spill_loads == 0);
}

TEST_CASE("gemmtune compile builds each distinct kernel once and says how many candidates share them",
          "[compile][cli]") {
  // wgmma_tma's raster, group, persistent and split values are launch scalars: thousands of
  // candidates, a few hundred builds. A sample of two builds compiles in seconds here.
  test::TempDir cache;
  auto r = test::run_command(fmt::format("'{}' --json --cache-dir '{}' --plugin-dir '{}' compile --family wgmma_tma "
                                         "--shape 4096x4096x4096 --dtype f16 --limit 2",
                                         test::gemmtune_binary().string(), cache.path.string(),
                                         test::plugin_dir().string()));
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  REQUIRE(j.size() == 1);
  const uint64_t candidates = j[0]["candidates"], distinct = j[0]["distinct_builds"];
  CHECK(candidates > 10 * distinct);
  CHECK(distinct > 2);
  CHECK(j[0]["builds"] == 2);
  CHECK(j[0]["compiled"] == 2);
  // Again: both from the cache, nothing compiled.
  r = test::run_command(fmt::format("'{}' --json --cache-dir '{}' --plugin-dir '{}' compile --family wgmma_tma "
                                    "--shape 4096x4096x4096 --dtype f16 --limit 2",
                                    test::gemmtune_binary().string(), cache.path.string(), test::plugin_dir().string()));
  REQUIRE(r.exit_code == 0);
  j = nlohmann::json::parse(r.out);
  CHECK(j[0]["from_cache"] == 2);
  CHECK(j[0]["compiled"] == 0);
}
