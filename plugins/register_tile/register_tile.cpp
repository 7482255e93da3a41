// The register_tile family: parameter space, constraints, resource estimates and launch
// geometry for register_tile.cu (SIMT fp32: block tile in shared memory, warp tile, thread
// tile of accumulators in registers).
//
// The space is a product of value lists; the constraints below cut it down to the designs
// worth timing (a few thousand points for 4096³) and refuse, with the reason and its code,
// whatever a device cannot run.
#include <gemmtune/plugin_kit.hpp>

#include "register_tile_kernels.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

namespace {
using namespace gt_kit;

enum Pipe : int64_t { kSingle = 0, kRegDb = 1, kCp2 = 2, kCp3 = 3, kCp4 = 4 };
// The warp parameter's values are the lanes along M; 2x16 is the lab's arrangement (16×16
// threads, 8 warps stacked along M, each thread one contiguous patch).
constexpr int64_t kLabLanesM = 2;

std::vector<ParamDef> param_defs(int64_t vec_default, int64_t pipe_default, int64_t swz_default) {
  return {
      {"bm", "block tile: rows of C per block", {16, 32, 64, 128, 256}, {}, 128},
      {"bn", "block tile: columns of C per block", {16, 32, 64, 128, 256}, {}, 128},
      {"bk", "k-depth of one shared-memory tile (the unrolled inner loop)", {8, 16}, {}, 8},
      {"tm", "thread tile: accumulators per thread along M", {1, 2, 4, 8, 16}, {}, 8},
      {"tn", "thread tile: accumulators per thread along N", {1, 2, 4, 8, 16}, {}, 8},
      {"warp",
       "lanes of a warp along MxN; 2x16 keeps each thread's tile one contiguous patch (the lab's kernel), "
       "4x8 and 8x4 cut it into 4-wide sub-blocks spread over the warp tile (conflict-free LDS.128)",
       {2, 4, 8}, {"2x16", "4x8", "8x4"}, 4},
      {"vec", "global-load width in floats (4/8/16-byte loads); needs the problem aligned to 4*vec bytes",
       {1, 2, 4}, {}, vec_default},
      {"pipe",
       "global-to-shared pipeline: single buffer, register-staged double buffer, or cp.async with 2, 3 or 4 stages",
       {kSingle, kRegDb, kCp2, kCp3, kCp4}, {"single", "regdb", "cp2", "cp3", "cp4"}, pipe_default},
      {"swz", "block rasterisation: 1 = row-major; 8 = 8 block rows walked column by column (L2 reuse)", {1, 8}, {},
       swz_default},
      {"occ", "blocks per SM promised to ptxas (__launch_bounds__), which caps registers per thread", {1, 2}, {}, 2},
  };
}

// The canonical table (parameter order and values); per-problem tables differ only in defaults.
const ParamTable& table() {
  static const ParamTable t(param_defs(4, kCp3, 8));
  return t;
}

// Every derived quantity of a (problem, config), computed once.
struct Plan {
  int64_t bm, bn, bk, tm, tn, lanes_m, vec, pipe, swz, occ;
  int64_t lanes_n, wm, wn, threads, tm_sub, tn_sub, stages;
  bool a_trans_store, b_trans_store;  // operand transposed on its way into shared memory
  int64_t lv_a, lv_b;                 // load width of each operand (cp.async transposes 4 bytes at a time)
  int64_t pad_a, pad_b;
  int64_t smem_bytes;
  int64_t regs_est;
  int64_t cvec;
  int64_t grid_m, grid_n;
};

int64_t reg_cap(int64_t regs_per_sm, int64_t blocks, int64_t threads) {
  // ptxas allocates registers in units of 8 per thread; 255 is the architectural maximum.
  return std::min<int64_t>(255, (regs_per_sm / (blocks * threads)) / 8 * 8);
}

std::string s(int64_t v) { return std::to_string(v); }

// The steps of plan(), in order (the first refusal wins, so the order is part of the
// behaviour). Each checks one concern and fills its part of the plan.

// The problem's types, alignment and the architecture cp.async needs.
void check_problem(const gt_problem& p, const gt_device& d, const Plan& P) {
  if (p.in_dtype != GT_F32 || p.out_dtype != GT_F32)
    throw Refusal(GT_REFUSAL_DTYPE, std::string("register_tile computes f32 -> f32 only (asked ") + dtype_name(p.in_dtype) + " -> " +
           dtype_name(p.out_dtype) + "); shared_tile and wmma take the other types");
  if (p.align_bytes < 4)
    throw Refusal(GT_REFUSAL_SHAPE, "the f32 operands are aligned to only " + s(p.align_bytes) + " bytes; even 4-byte loads would be misaligned");
  if (P.pipe >= kCp2 && d.cc_major < 8)
    throw Refusal(GT_REFUSAL_ARCH, "cp.async needs compute capability 8.0 or newer (device has " + s(d.cc_major) + "." + s(d.cc_minor) + ")");
}

// Design rules: which thread, warp and block tiles this family builds at all.
void plan_tiles(const gt_device& d, Plan& P) {
  const int64_t tmax = std::max(P.tm, P.tn), tmin = std::min(P.tm, P.tn);
  if (!(P.tm == P.tn || (tmax >= 8 && tmax == 2 * tmin)))
    throw Refusal(GT_REFUSAL_CONFIG, "thread tile " + s(P.tm) + "x" + s(P.tn) + ": the family builds square thread tiles and 4x8, 8x4, 8x16, 16x8");
  const bool lab = P.lanes_m == kLabLanesM;
  if (lab && P.tm != P.tn) throw Refusal(GT_REFUSAL_CONFIG, "the 2x16 lane arrangement (the lab's kernel) takes square thread tiles only");
  P.lanes_n = 32 / P.lanes_m;
  P.wm = P.lanes_m * P.tm;
  P.wn = P.lanes_n * P.tn;
  if (P.bm % P.wm || P.bn % P.wn)
    throw Refusal(GT_REFUSAL_CONFIG, "warp tile " + s(P.wm) + "x" + s(P.wn) + " does not divide the block tile " + s(P.bm) + "x" + s(P.bn));
  if (std::max(P.bm, P.bn) > 2 * std::min(P.bm, P.bn))
    throw Refusal(GT_REFUSAL_CONFIG, "block tile " + s(P.bm) + "x" + s(P.bn) + " is more than 2:1 (the family keeps block tiles within 2:1)");
  P.threads = (P.bm / P.tm) * (P.bn / P.tn);
  if (P.threads > d.max_threads_per_block)
    throw Refusal(GT_REFUSAL_RESOURCES, "block of " + s(P.threads) + " threads exceeds the device's " + s(d.max_threads_per_block) + " threads");
  if (P.threads != 64 && P.threads != 128 && P.threads != 256)
    throw Refusal(GT_REFUSAL_CONFIG, "a block of " + s(P.threads / 32) + " warps: the family builds blocks of 2, 4 or 8 warps");
  if (P.tm * P.tn < 16 && !(lab && P.threads == 256 && P.bm == P.bn))
    throw Refusal(GT_REFUSAL_CONFIG, "thread tiles under 4x4 exist for the lab's kernel only (2x16 lanes, 8 warps, square block)");
  if (P.tm * P.tn >= 128 && P.threads != 256)
    throw Refusal(GT_REFUSAL_CONFIG, "thread tiles of 128 accumulators are built with 8 warps only (128x256 and 256x128 block tiles)");
  P.tm_sub = lab ? P.tm : std::min<int64_t>(P.tm, 4);
  P.tn_sub = lab ? P.tn : std::min<int64_t>(P.tn, 4);
}

// Global -> shared copies.
void plan_copies(const gt_problem& p, Plan& P) {
  const bool cp_async = P.pipe >= kCp2;
  P.a_trans_store = !a_transposed(p);
  P.b_trans_store = b_transposed(p);
  P.lv_a = cp_async && P.a_trans_store ? 1 : P.vec;
  P.lv_b = cp_async && P.b_trans_store ? 1 : P.vec;
  if (P.vec * 4 > p.align_bytes)
    throw Refusal(GT_REFUSAL_SHAPE, "vec=" + s(P.vec) + " loads " + s(P.vec * 4) + " bytes at a time, but the problem is aligned to only " +
           s(p.align_bytes) + " bytes (use vec=" + s(std::max<int64_t>(1, p.align_bytes / 4)) + ")");
  if (P.vec > 1 && P.lv_a == 1 && P.lv_b == 1)
    throw Refusal(GT_REFUSAL_CONFIG, "vec=" + s(P.vec) + " has no effect here: with cp.async in layout nt both operands are transposed into "
           "shared memory 4 bytes at a time (same kernel as vec=1)");
  if ((P.bm * P.bk) % (P.threads * P.lv_a) || (P.bn * P.bk) % (P.threads * P.lv_b))
    throw Refusal(GT_REFUSAL_CONFIG, "the " + s(P.bm) + "x" + s(P.bk) + " and " + s(P.bk) + "x" + s(P.bn) + " tiles do not split evenly over " +
           s(P.threads / 32) + " warps copying " + s(std::max(P.lv_a, P.lv_b)) + " floats a lane");
}

void plan_shared_memory(const gt_device& d, Plan& P) {
  // Shared memory: padding only where an operand is transposed on the way in; 4 floats keep
  // rows 16-byte aligned for LDS.128 and spread a warp's transposed stores over the banks.
  P.stages = P.pipe == kSingle ? 1 : P.pipe == kRegDb ? 2 : P.pipe;  // kCpN == N
  P.pad_a = P.a_trans_store ? 4 : 0;
  P.pad_b = P.b_trans_store ? 4 : 0;
  P.smem_bytes = P.stages * P.bk * (P.bm + P.pad_a + P.bn + P.pad_b) * 4;
  if (P.smem_bytes > d.smem_per_block_optin)
    throw Refusal(GT_REFUSAL_RESOURCES, "needs " + s(P.smem_bytes) + " bytes of shared memory per block; the device allows " +
           s(d.smem_per_block_optin));
}

void plan_registers(const gt_device& d, Plan& P) {
  const bool cp_async = P.pipe >= kCp2;
  // Registers, estimated from the live values: accumulators, two sets of fragments, the
  // staged tile of the register pipelines (cp.async stages nothing in registers), and ~24
  // for pointers, indices and predicates. Checked against ptxas: the estimate is at or above
  // what 2-blocks-per-SM configs get without spilling.
  const int64_t staged = cp_async ? 0 : (P.bm * P.bk + P.bn * P.bk) / P.threads;
  P.regs_est = P.tm * P.tn + 2 * (P.tm + P.tn) + staged + 24;
  const int64_t cap1 = reg_cap(d.regs_per_sm, 1, P.threads);
  if (P.regs_est > cap1 || P.regs_est * P.threads > d.regs_per_block)
    throw Refusal(GT_REFUSAL_RESOURCES, "needs about " + s(P.regs_est) + " registers per thread; the device gives " + s(P.threads) +
           " threads at most " + s(std::min<int64_t>(cap1, d.regs_per_block / P.threads)));
  if (P.occ == 2) {
    const int64_t cap2 = reg_cap(d.regs_per_sm, 2, P.threads);
    if (cap2 >= cap1)
      throw Refusal(GT_REFUSAL_CONFIG, "occ=2 is the same kernel as occ=1 for a block of " + s(P.threads / 32) + " warps: both allow ptxas " +
             s(cap1) + " per lane");
    if (2 * P.regs_est <= cap2)
      throw Refusal(GT_REFUSAL_CONFIG, "occ=2 is the same kernel as occ=1 here: its cap of " + s(cap2) + " per lane is twice the estimated need (" +
             s(P.regs_est) + ")");
    if (P.regs_est > cap2)
      throw Refusal(GT_REFUSAL_RESOURCES, "needs about " + s(P.regs_est) + " registers per thread, more than the " + s(cap2) +
             " the device leaves 2 blocks of " + s(P.threads) + " threads per SM");
    if (2 * P.threads > d.max_threads_per_sm)
      throw Refusal(GT_REFUSAL_RESOURCES, "2 blocks of " + s(P.threads) + " threads exceed the device's " + s(d.max_threads_per_sm) +
             " threads per SM");
    // The runtime reserves 1 KiB of shared memory per block.
    if (2 * (P.smem_bytes + 1024) > d.smem_per_sm)
      throw Refusal(GT_REFUSAL_RESOURCES, "2 blocks need " + s(2 * (P.smem_bytes + 1024)) + " bytes of shared memory per SM; the device has " +
             s(d.smem_per_sm));
    if (d.max_blocks_per_sm < 2) throw Refusal(GT_REFUSAL_RESOURCES, "the device runs 1 block per SM; occ=2 exceeds the device");
  }
}

// The grid, and C's store width.
void plan_grid(const gt_problem& p, Plan& P) {
  P.grid_m = (p.m + P.bm - 1) / P.bm;
  P.grid_n = (p.n + P.bn - 1) / P.bn;
  if (P.grid_m * P.grid_n > 2147483647ll)
    throw Refusal(GT_REFUSAL_RESOURCES, "grid of " + s(P.grid_m * P.grid_n) + " blocks exceeds the device's 2^31-1");
  if (P.swz > 1 && (P.grid_m == 1 || P.grid_n == 1))
    throw Refusal(GT_REFUSAL_CONFIG, "swz=" + s(P.swz) + " on a grid of " + s(P.grid_m) + "x" + s(P.grid_n) +
           " blocks walks them in row-major order anyway (same as swz=1)");

  // C is stored CVEC floats at a time where the alignment and the thread's run allow.
  P.cvec = std::min<int64_t>({P.tn_sub, 4, std::max<int64_t>(1, p.align_bytes / 4)});
}

// Checks the (problem, config) and derives every quantity; throws Refusal with its code.
Plan plan(const gt_problem& p, const int64_t* c, int32_t n, const gt_device& d) {
  table().check_values(c, n);
  Plan P{};
  P.bm = c[0], P.bn = c[1], P.bk = c[2], P.tm = c[3], P.tn = c[4], P.lanes_m = c[5];
  P.vec = c[6], P.pipe = c[7], P.swz = c[8], P.occ = c[9];
  check_problem(p, d, P);
  plan_tiles(d, P);
  plan_copies(p, P);
  plan_shared_memory(d, P);
  plan_registers(d, P);
  plan_grid(p, P);
  return P;
}

// The defaults depend on the problem: cp.async where the architecture has it, the widest
// loads the alignment allows (vec=1 where cp.async transposes both operands, layout nt),
// and no rasterisation groups on a grid one block high or wide.
int64_t default_pipe(const gt_device& d) { return d.cc_major >= 8 ? kCp3 : kRegDb; }
int64_t default_vec(const gt_problem& p, int64_t pipe) {
  return pipe >= kCp2 && p.layout == GT_NT ? 1 : std::clamp<int64_t>(p.align_bytes / 4, 1, 4);
}

gt_status describe_space(const gt_problem* p, const gt_device* d, gt_space* out, gt_reply* reply) {
  return guarded(reply, [&] {
    const int64_t pipe = default_pipe(*d);
    const int64_t vec = default_vec(*p, pipe);
    const int64_t swz = (p->m > 128 && p->n > 128) ? 8 : 1;
    static std::mutex m;
    static std::map<int64_t, std::unique_ptr<ParamTable>> tables;  // live for the process
    std::lock_guard lk(m);
    auto& tab = tables[vec * 100 + pipe * 10 + swz];
    if (!tab) tab = std::make_unique<ParamTable>(param_defs(vec, pipe, swz));
    *out = tab->space();
    return GT_OK;
  });
}

Launch launch(const gt_problem& p, const Plan& P) {
  Launch l = kernel_launch(k_register_tile, k_register_tile_name, "gemm_register_tile", {
      define("A_TRANS", a_transposed(p) ? 1 : 0),
      define("B_TRANS", b_transposed(p) ? 1 : 0),
      define("BM", P.bm),
      define("BN", P.bn),
      define("BK", P.bk),
      define("TM", P.tm),
      define("TN", P.tn),
      define("WTM", P.lanes_m),
      define("TM_SUB", P.tm_sub),
      define("TN_SUB", P.tn_sub),
      define("VEC", P.vec),
      define("PIPE", P.pipe == kSingle ? 0 : P.pipe == kRegDb ? 1 : 2),
      define("STAGES", P.stages),
      define("PAD_A", P.pad_a),
      define("PAD_B", P.pad_b),
      define("SWZ", P.swz),
      define("MIN_BLOCKS", P.occ),
      define("CVEC", P.cvec),
  });
  l.grid = {uint32_t(P.grid_m * P.grid_n), 1, 1};
  l.block = {uint32_t(P.threads), 1, 1};
  l.dynamic_smem = uint32_t(P.smem_bytes);
  return l;
}

bool buildable(const gt_problem& p, const int64_t* c, int32_t n, const gt_device& d) {
  try {
    plan(p, c, n, d);
    return true;
  } catch (const Refusal&) {
    return false;
  }
}

// Configs worth trying first, best guess first: the default and its close variants for
// large problems, then smaller tiles for small or skinny ones. Only valid ones are returned.
gt_status suggest(const gt_problem* p, const gt_device* d, int32_t max, int64_t* configs, int32_t* count,
                  gt_reply* reply) {
  return guarded(reply, [&] {
    // bm, bn, bk, tm, tn, warp, pipe, occ (vec and swz from the problem)
    const int64_t picks[][8] = {
        {128, 128, 8, 8, 8, 4, kCp3, 2},   {128, 128, 8, 8, 8, 8, kCp3, 2},   {128, 128, 16, 8, 8, 4, kCp3, 2},
        {128, 128, 8, 8, 8, 4, kRegDb, 2}, {128, 128, 8, 8, 8, 4, kCp4, 2},   {128, 128, 8, 8, 8, 4, kCp2, 2},
        {128, 256, 8, 8, 16, 4, kCp3, 1},  {256, 128, 8, 16, 8, 8, kCp3, 1},  {128, 128, 8, 8, 8, 4, kCp3, 1},
        {128, 64, 8, 8, 4, 4, kCp3, 2},    {64, 128, 8, 4, 8, 4, kCp3, 2},    {64, 64, 8, 8, 8, 4, kCp3, 1},
        {64, 64, 16, 4, 4, 4, kCp3, 1},    {128, 128, 8, 8, 8, 4, kRegDb, 1}, {64, 64, 8, 4, 8, 4, kRegDb, 1},
    };
    int32_t k = 0;
    const int32_t dims = table().size();
    for (auto& q : picks) {
      if (k >= max) break;
      for (int64_t swz : {int64_t(8), int64_t(1)}) {
        const int64_t pipe = d->cc_major < 8 && q[6] >= kCp2 ? kRegDb : q[6];
        int64_t cfg[10] = {q[0], q[1], q[2], q[3], q[4], q[5], default_vec(*p, pipe), pipe, swz, q[7]};
        if (!buildable(*p, cfg, dims, *d)) continue;
        bool dup = false;
        for (int32_t i = 0; i < k && !dup; ++i) dup = std::equal(cfg, cfg + dims, configs + size_t(i) * dims);
        if (!dup) {
          std::copy(cfg, cfg + dims, configs + size_t(k) * dims);
          ++k;
        }
        break;
      }
    }
    *count = k;
    return GT_OK;
  });
}

gt_status describe_config(const gt_problem* p, const int64_t* c, int32_t n, char* out, size_t cap) {
  return guarded_text(out, cap, [&] {
    // Describe even what a device might refuse: use limits that refuse nothing.
    gt_device any{};
    any.cc_major = 9;
    any.max_threads_per_block = 1024;
    any.max_threads_per_sm = 2048;
    any.max_blocks_per_sm = 32;
    any.regs_per_block = 65536;
    any.regs_per_sm = 65536;
    any.smem_per_block_optin = 1 << 30;
    any.smem_per_sm = 1 << 30;
    Plan P{};
    try {
      P = plan(*p, c, n, any);
    } catch (const Refusal& r) {
      write_msg(out, cap, std::string("not buildable: ") + r.what());
      return GT_OK;
    }
    static const char* pipes[] = {"single buffer", "register-staged double buffer", "cp.async 2 stages",
                                  "cp.async 3 stages", "cp.async 4 stages"};
    std::string sub = (P.tm_sub == P.tm && P.tn_sub == P.tn)
                          ? "one contiguous patch"
                          : s(P.tm / P.tm_sub) + "x" + s(P.tn / P.tn_sub) + " sub-blocks of " + s(P.tm_sub) + "x" +
                                s(P.tn_sub);
    write_msg(out, cap,
              "block " + s(P.bm) + "x" + s(P.bn) + "x" + s(P.bk) + ", " + s(P.threads / 32) + " warps of " + s(P.wm) +
                  "x" + s(P.wn) + " (lanes " + s(P.lanes_m) + "x" + s(P.lanes_n) + "), thread tile " + s(P.tm) + "x" +
                  s(P.tn) + " as " + sub + ", A in " + s(P.lv_a * 4) + "-byte copies" +
                  (P.a_trans_store ? " (transposed)" : "") + ", B in " + s(P.lv_b * 4) + "-byte copies" +
                  (P.b_trans_store ? " (transposed)" : "") + ", " +
                  (P.pipe >= 0 && P.pipe <= 4 ? pipes[P.pipe] : "?") + ", " + s(P.smem_bytes) +
                  " B shared memory, ~" + s(P.regs_est) + " registers, launch bounds (" + s(P.threads) + ", " +
                  s(P.occ) + ")" + (P.swz > 1 ? ", raster groups of " + s(P.swz) + " block rows" : ""));
    return GT_OK;
  });
}

const gt_plugin kPlugin = [] {
  gt_plugin p = source_family<plan, launch>("register_tile", "1.0",
                                            "SIMT fp32: block, warp and thread tiles, vector loads, A transposed in "
                                            "shared memory, single/double-buffered or cp.async pipelines (the lab's "
                                            "register-tile rung and beyond)",
                                            k_register_tile, describe_space, describe_config);
  p.suggest = suggest;
  return p;
}();
}  // namespace

extern "C" GT_PLUGIN_EXPORT const gt_plugin* gemmtune_plugin_entry(uint32_t) { return &kPlugin; }
