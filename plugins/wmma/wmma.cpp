// The wmma family: tensor-core GEMM (f16 / bf16 / tf32 in, fp32 accumulation, f16 / bf16 /
// f32 out) with two fragment paths in one source (wmma.cu): the nvcuda::wmma API and
// ldmatrix + mma.sync PTX. This file holds the parameter space, the constraints with their
// reasons, every derived quantity (shared-memory layout, swizzle, copy widths, launch
// geometry) and the default choice.
#include <gemmtune/plugin_kit.hpp>

#include "wmma_kernels.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

namespace {
using namespace gt_kit;

enum Loader : int64_t { kWmmaApi = 0, kMmaPtx = 1 };
enum FragShape : int64_t { kFrag16x16 = 0, kFrag32x8 = 1, kFrag8x32 = 2 };
enum SmemMode : int64_t { kPad = 0, kSwizzle = 1 };
enum Epilogue : int64_t { kDirect = 0, kStaged = 1 };

// Parameter order; a config is one value per entry.
enum P { pLoader, pBm, pBn, pBk, pWm, pWn, pFrag, pStages, pSmem, pEpi, kParams };

// Block-index swizzle: consecutive blocks walk this many tile rows before moving right, so
// the blocks in flight share A rows and B columns in L2. Not tuned: it costs nothing where it
// does not help, and tuning it would double the space.
constexpr int kGroupM = 8;

// The value every parameter takes in the config we expect to be fastest on a large square
// problem (H100/H200-class: 8 warps of 64×64 feeding mma.sync from a 4-stage swizzled pipeline).
constexpr int64_t kPreferred[kParams] = {kMmaPtx, 128, 256, 32, 64, 64, kFrag16x16, 4, kSwizzle, kStaged};

std::vector<ParamDef> param_defs(const int64_t* def) {
  return {
      {"loader", "fragment path: the nvcuda::wmma API, or ldmatrix + mma.sync PTX (m16n8k16; tf32 m16n8k8)",
       {kWmmaApi, kMmaPtx}, {"wmma", "mma"}, def[pLoader]},
      {"bm", "block tile rows (M) computed by one thread block", {32, 64, 128, 256}, {}, def[pBm]},
      {"bn", "block tile columns (N) computed by one thread block", {32, 64, 128, 256}, {}, def[pBn]},
      {"bk", "K depth of one shared-memory stage", {16, 32, 64}, {}, def[pBk]},
      {"wm", "warp tile rows (M) computed by one warp", {32, 64, 128}, {}, def[pWm]},
      {"wn", "warp tile columns (N) computed by one warp", {32, 64, 128}, {}, def[pWn]},
      {"frag", "WMMA fragment M×N (K: 16 for f16/bf16, 8 for tf32); the mma loader is fixed at 16x16",
       {kFrag16x16, kFrag32x8, kFrag8x32}, {"16x16", "32x8", "8x32"}, def[pFrag]},
      {"stages", "shared-memory pipeline depth: tiles in flight through cp.async", {2, 3, 4}, {}, def[pStages]},
      {"smem", "bank-conflict avoidance in shared memory: padded rows, or XOR-swizzled 16-byte chunks",
       {kPad, kSwizzle}, {"pad", "swizzle"}, def[pSmem]},
      {"epilogue", "C store: straight from the accumulator registers, or staged per warp through shared memory",
       {kDirect, kStaged}, {"direct", "staged"}, def[pEpi]},
  };
}

const ParamTable& base_table() {
  static const ParamTable t(param_defs(kPreferred));
  return t;
}

struct Cfg {
  int64_t v[kParams];
  int64_t operator[](P p) const { return v[p]; }
};

Cfg read(const int64_t* c, int32_t n) {
  const ParamTable& t = base_table();
  if (n != t.size())
    throw std::invalid_argument("config has " + std::to_string(n) + " values, space has " + std::to_string(t.size()));
  Cfg cfg;
  for (int i = 0; i < kParams; ++i) {
    if (!t.contains(i, c[i]))
      throw Refusal(GT_REFUSAL_CONFIG, "value " + std::to_string(c[i]) + " is not in the space of parameter " +
                    base_table().space().params[i].name);
    cfg.v[i] = c[i];
  }
  return cfg;
}

// One operand's shared tile: rows × contiguous columns, oriented as in global memory.
struct OperandTile {
  int rows = 0, cols = 0;
  int ld = 0;                      // row stride in elements, padding included
  int div = 1, mul = 1, width = 1; // swizzle: chunk c of row r lives at c ^ (((r/div)*mul) & (width-1))
  int bytes = 0;                   // one stage, rounded to 128
};

// `scalar`: the fragment loader reads this tile one 32-bit word per lane in the pattern
// (row t, column g) of an 8-lane group × 4 (tf32 stored transposed), instead of ldmatrix rows.
OperandTile operand_tile(int rows, int cols, int esize, bool scalar, bool swizzle) {
  OperandTile o;
  o.rows = rows;
  o.cols = cols;
  const int chunks = cols * esize / 16;  // 16-byte chunks per row
  if (swizzle) {
    o.ld = cols;
    if (scalar) {
      // Lanes read rows t = 0..3 at chunks {c, c+1}: multiplying the row by 2 spreads the
      // eight (row, chunk) pairs over eight chunk slots (needs rows of >= 8 chunks).
      o.div = 1, o.mul = 2, o.width = 8;
    } else {
      // ldmatrix reads 8 consecutive rows at one logical chunk: the XOR must send them to 8
      // different 16-byte bank groups of a 128-byte line.
      o.width = std::min(chunks, 8);
      o.div = std::max(1, 8 / chunks);
      o.mul = 1;
    }
  } else {
    // ldmatrix rows: a 16-byte pad makes the row stride an odd number of chunks, so 8
    // consecutive rows hit 8 bank groups. Scalar tf32 reads: 8 words of pad make the stride
    // 8 (mod 32) banks, so rows t = 0..3 × columns g = 0..7 hit 32 different banks.
    o.ld = cols + (scalar ? 32 : 16) / esize;
  }
  o.bytes = (rows * o.ld * esize + 127) / 128 * 128;
  return o;
}

struct Plan {
  Cfg c{};
  int esize = 0, osize = 0;
  int warps = 0, threads = 0;
  int fm = 16, fn = 16, fk = 16;  // WMMA fragment (the mma loader's is m16n8k16 / m16n8k8)
  int vec = 0, out_vec = 0;       // elements per global copy unit / per C store
  OperandTile a, b;
  int stage_bytes = 0, epi_rows = 0, epi_ld = 0, smem_bytes = 0;
  int regs_estimate = 0;
  uint32_t grid = 0;
};

std::string str(int64_t v) { return std::to_string(v); }

// The steps of plan(), in order (the first refusal wins, so the order is part of the
// behaviour). Each checks one concern and fills its part of the plan.

// Types and architecture.
void check_types(const gt_problem& p, const gt_device& d, Plan& pl) {
  const bool tf32 = p.in_dtype == GT_TF32;
  const bool mma = pl.c[pLoader] == kMmaPtx;
  const int cc = d.cc_major * 10 + d.cc_minor;
  if (p.in_dtype == GT_F32)
    throw Refusal(GT_REFUSAL_DTYPE, "f32 inputs run on tensor cores only as tf32 (--dtype tf32); plain f32 is not supported");
  if (p.in_dtype != GT_F16 && p.in_dtype != GT_BF16 && !tf32) throw Refusal(GT_REFUSAL_DTYPE, "unsupported input dtype");
  if (p.out_dtype != GT_F16 && p.out_dtype != GT_BF16 && p.out_dtype != GT_F32)
    throw Refusal(GT_REFUSAL_DTYPE, std::string("unsupported output dtype ") + dtype_name(p.out_dtype) + " (f16, bf16 or f32)");
  if (cc < 70) throw Refusal(GT_REFUSAL_ARCH, "tensor cores need compute capability 7.0 or newer");
  if (p.in_dtype != GT_F16 && cc < 80)
    throw Refusal(GT_REFUSAL_ARCH, std::string(dtype_name(p.in_dtype)) + " tensor-core MMA needs compute capability 8.0 or newer");
  if (mma && cc < 75) throw Refusal(GT_REFUSAL_ARCH, "the mma loader needs ldmatrix (compute capability 7.5 or newer)");
  pl.esize = int(dtype_size(p.in_dtype));
  pl.osize = int(dtype_size(p.out_dtype));
}

// The block and warp tiles.
void plan_tiles(const gt_device& d, Plan& pl) {
  const Cfg& c = pl.c;
  const int bm = int(c[pBm]), bn = int(c[pBn]), wm = int(c[pWm]), wn = int(c[pWn]);
  if (wm > bm || wn > bn)
    throw Refusal(GT_REFUSAL_CONFIG, "warp tile " + str(wm) + "x" + str(wn) + " is larger than the block tile " + str(bm) + "x" + str(bn));
  pl.warps = (bm / wm) * (bn / wn);
  pl.threads = pl.warps * 32;
  if (pl.warps > 8) throw Refusal(GT_REFUSAL_CONFIG, str(pl.warps) + " warps per block; the family uses 1 to 8");
  if (pl.threads > d.max_threads_per_block)
    throw Refusal(GT_REFUSAL_RESOURCES, "block of " + str(pl.threads) + " threads exceeds the device's " + str(d.max_threads_per_block));
  if (wm * wn / 32 > 128)
    throw Refusal(GT_REFUSAL_RESOURCES, "warp tile " + str(wm) + "x" + str(wn) + " needs " + str(wm * wn / 32) +
                  " accumulator registers per thread; beyond 128, the device's 255 per thread leave too few for fragments");
}

// The fragment path: mma.sync's m16n8 instructions, or the WMMA API's fragment shapes.
void plan_fragments(const gt_problem& p, Plan& pl) {
  const bool tf32 = p.in_dtype == GT_TF32;
  const bool mma = pl.c[pLoader] == kMmaPtx;
  const Cfg& c = pl.c;
  const int bk = int(c[pBk]), wm = int(c[pWm]), wn = int(c[pWn]);
  const int frag = int(c[pFrag]);
  if (mma) {
    if (frag != kFrag16x16)
      throw Refusal(GT_REFUSAL_CONFIG, "the mma loader issues m16n8 instructions over the warp tile; fragment shapes other than "
                    "16x16 belong to the wmma loader");
    const int kstep = tf32 ? 8 : 16;
    if ((bk / kstep) % 2 != 0)
      throw Refusal(GT_REFUSAL_CONFIG, "the mma loader double-buffers fragments over an even number of k-steps per stage; bk " +
                    str(bk) + " gives " + str(bk / kstep) + " (use bk >= " + str(2 * kstep) + ")");
  } else {
    if (c[pSmem] == kSwizzle)
      throw Refusal(GT_REFUSAL_CONFIG, "the WMMA API loads fragments with a fixed row stride; swizzled shared memory needs the mma "
                    "loader");
    if (c[pEpi] == kDirect)
      throw Refusal(GT_REFUSAL_CONFIG, "the WMMA API hides the accumulator layout; its epilogue always stages through shared "
                    "memory (epilogue=staged)");
    if (tf32 && frag != kFrag16x16) throw Refusal(GT_REFUSAL_CONFIG, "tf32 WMMA has only the 16x16x8 fragment");
    pl.fm = frag == kFrag32x8 ? 32 : frag == kFrag8x32 ? 8 : 16;
    pl.fn = frag == kFrag32x8 ? 8 : frag == kFrag8x32 ? 32 : 16;
    pl.fk = tf32 ? 8 : 16;
    if (wm % pl.fm != 0 || wn % pl.fn != 0)
      throw Refusal(GT_REFUSAL_CONFIG, "warp tile " + str(wm) + "x" + str(wn) + " is not a whole number of " + str(pl.fm) + "x" +
                    str(pl.fn) + " fragments");
    if (bk % pl.fk != 0) throw Refusal(GT_REFUSAL_CONFIG, "bk " + str(bk) + " is not a multiple of the fragment K " + str(pl.fk));
    // load_matrix_sync needs 256-bit aligned fragment pointers; an 8-wide fragment side that
    // runs along the contiguous dimension steps by 16 bytes.
    if (pl.fm * pl.esize % 32 != 0 && a_transposed(p))
      throw Refusal(GT_REFUSAL_LAYOUT, "the " + str(pl.fm) + "x" + str(pl.fn) +
                    " fragment steps 16 bytes along a transposed A in shared memory; WMMA needs 32-byte "
                    "aligned fragments (use layout nn/nt or another fragment)");
    if (pl.fn * pl.esize % 32 != 0 && !b_transposed(p))
      throw Refusal(GT_REFUSAL_LAYOUT, "the " + str(pl.fm) + "x" + str(pl.fn) +
                    " fragment steps 16 bytes along a row-major B in shared memory; WMMA needs 32-byte "
                    "aligned fragments (use layout nt/tt or another fragment)");
  }
}

// Global copies: the widest unit the alignment allows.
void plan_copies(const gt_problem& p, Plan& pl) {
  if (p.align_bytes < pl.esize)
    throw Refusal(GT_REFUSAL_SHAPE, "alignment of " + str(p.align_bytes) + " bytes is below the element size " + str(pl.esize));
  pl.vec = std::min(16, int(p.align_bytes)) / pl.esize;
  pl.out_vec = std::clamp(int(p.align_bytes) / pl.osize, 1, 4);
}

// Shared memory: the pipeline's stages, or the epilogue's staging if that is larger.
void plan_shared_memory(const gt_problem& p, const gt_device& d, Plan& pl) {
  const bool tf32 = p.in_dtype == GT_TF32;
  const bool mma = pl.c[pLoader] == kMmaPtx;
  const Cfg& c = pl.c;
  const int bm = int(c[pBm]), bn = int(c[pBn]), bk = int(c[pBk]), wn = int(c[pWn]);
  const bool swizzle = c[pSmem] == kSwizzle;
  const bool at = a_transposed(p), bt = b_transposed(p);
  pl.a = at ? operand_tile(bk, bm, pl.esize, mma && tf32, swizzle) : operand_tile(bm, bk, pl.esize, false, swizzle);
  pl.b = bt ? operand_tile(bn, bk, pl.esize, false, swizzle) : operand_tile(bk, bn, pl.esize, mma && tf32, swizzle);
  pl.stage_bytes = pl.a.bytes + pl.b.bytes;
  const int stages = int(c[pStages]);
  const bool staged = !mma || c[pEpi] == kStaged;
  pl.epi_rows = mma ? 16 : pl.fm;
  pl.epi_ld = wn + 8;  // 8 floats of pad: the mma path's float2 writes are conflict-free
  const int64_t pipe = int64_t(stages) * pl.stage_bytes;
  const int64_t epi = staged ? int64_t(pl.warps) * pl.epi_rows * pl.epi_ld * 4 : 0;
  const int64_t smem = std::max(pipe, epi);
  if (smem > d.smem_per_block_optin)
    throw Refusal(GT_REFUSAL_RESOURCES, "needs " + str(smem) + " bytes of shared memory (" + str(stages) + " stages of " +
                  str(pl.stage_bytes) + "), more than the device's " + str(d.smem_per_block_optin) + " per block");
  pl.smem_bytes = int(smem);
}

void plan_registers(const gt_problem& p, const gt_device& d, Plan& pl) {
  const bool mma = pl.c[pLoader] == kMmaPtx;
  const int cc = d.cc_major * 10 + d.cc_minor;
  const Cfg& c = pl.c;
  const int wm = int(c[pWm]), wn = int(c[pWn]);
  const bool at = a_transposed(p), bt = b_transposed(p);
  // An estimate, calibrated on ptxas at sm_90: accumulators, fragments (the mma loader
  // double-buffers them; WMMA's 16-bit fragments hold each element twice), about one register
  // per global copy unit a thread issues per stage, and ~48 for addressing and loop state.
  // Configs above 255 spill inside the main loop.
  const int acc = wm * wn / 32;
  const int frags = mma ? 2 * ((wm / 16) * 4 + (wn / 8) * 2)
                        : ((wm / pl.fm) * pl.fm * pl.fk + (wn / pl.fn) * pl.fk * pl.fn) * pl.esize * 2 / 128;
  // Copies whose tile rows run along M or N (A stored M×K, B stored N×K) carry a row
  // predicate each: they count 1.5. Copies through registers (no cp.async: before sm_80 or
  // below 4-byte alignment) hold their data too: twice that.
  auto per_thread = [&](const OperandTile& t) { return (t.rows * t.cols / pl.vec + pl.threads - 1) / pl.threads; };
  const int copies_a = per_thread(pl.a), copies_b = per_thread(pl.b);
  const int copies = copies_a + copies_b;
  const bool async_copies = cc >= 80 && pl.vec * pl.esize >= 4;
  const int copy_halves = ((at ? 2 : 3) * copies_a + (bt ? 3 : 2) * copies_b) * (async_copies ? 1 : 2);
  pl.regs_estimate = acc + frags + (copy_halves + 1) / 2 + 48;
  if (pl.regs_estimate > 255)
    throw Refusal(GT_REFUSAL_RESOURCES, "needs about " + str(pl.regs_estimate) + " registers per thread (" + str(acc) + " accumulators, " +
                  str(frags) + " for fragments, " + str(copies) + " copies per stage); the device gives a thread at most 255");
  if (int64_t(pl.regs_estimate) * pl.threads > d.regs_per_block)
    throw Refusal(GT_REFUSAL_RESOURCES, "needs about " + str(int64_t(pl.regs_estimate) * pl.threads) + " registers per block; the device has " +
                  str(d.regs_per_block));
}

// The grid: one block per block tile.
void plan_grid(const gt_problem& p, Plan& pl) {
  const int bm = int(pl.c[pBm]), bn = int(pl.c[pBn]);
  const int64_t blocks = ((p.m + bm - 1) / bm) * ((p.n + bn - 1) / bn);
  if (blocks > 2147483647ll) throw Refusal(GT_REFUSAL_RESOURCES, "grid of " + str(blocks) + " blocks exceeds the device's 2^31-1");
  pl.grid = uint32_t(blocks);
}

// Checks (problem, config, device) and derives everything; throws Refusal with the reason.
Plan plan(const gt_problem& p, const Cfg& c, const gt_device& d) {
  Plan pl;
  pl.c = c;
  check_types(p, d, pl);
  plan_tiles(d, pl);
  plan_fragments(p, pl);
  plan_copies(p, pl);
  plan_shared_memory(p, d, pl);
  plan_registers(p, d, pl);
  plan_grid(p, pl);
  return pl;
}

// The default: the first of these that the device can run and that gives the problem at
// least one block per SM (else the runnable one with the most blocks). Large problems get the config we
// expect to be fastest; smaller ones step down in tile size, then pipeline depth, and finally
// to the WMMA API (the only path before sm_75).
// The preferred config with some parameters changed.
std::vector<int64_t> with(std::initializer_list<std::pair<P, int64_t>> changes) {
  std::vector<int64_t> v(kPreferred, kPreferred + kParams);
  for (auto& [k, x] : changes) v[k] = x;
  return v;
}

// Candidate defaults, best first for a large problem.
const std::vector<std::vector<int64_t>>& default_order() {
  static const std::vector<std::vector<int64_t>> order = {
      with({}),
      with({{pStages, 3}}),
      with({{pBn, 128}}),
      with({{pBn, 128}, {pStages, 3}}),
      with({{pBm, 64}, {pBn, 128}, {pWm, 32}}),
      with({{pBm, 64}, {pBn, 128}, {pWm, 32}, {pStages, 3}}),
      with({{pBm, 64}, {pBn, 64}, {pWm, 32}, {pWn, 32}}),
      with({{pBm, 64}, {pBn, 64}, {pWm, 32}, {pWn, 32}, {pStages, 2}}),
      with({{pBm, 32}, {pBn, 64}, {pWm, 32}, {pWn, 32}}),
      with({{pBm, 32}, {pBn, 32}, {pWm, 32}, {pWn, 32}}),
      with({{pLoader, kWmmaApi}, {pSmem, kPad}, {pBm, 64}, {pBn, 64}, {pWm, 32}, {pWn, 32}, {pStages, 2}}),
      with({{pLoader, kWmmaApi}, {pSmem, kPad}, {pBm, 32}, {pBn, 32}, {pBk, 16}, {pWm, 32}, {pWn, 32},
            {pStages, 2}}),
  };
  return order;
}

std::vector<int64_t> choose_default(const gt_problem& p, const gt_device& d) {
  const auto& order = default_order();
  const std::vector<int64_t>* most = nullptr;
  uint32_t most_blocks = 0;
  for (auto& cand : order) {
    try {
      const Plan pl = plan(p, read(cand.data(), kParams), d);
      if (pl.grid >= uint32_t(std::max(1, d.sm_count))) return cand;
      if (!most || pl.grid > most_blocks) most = &cand, most_blocks = pl.grid;
    } catch (const Refusal&) {
    }
  }
  return most ? *most : order.front();  // nothing runs: every config is refused with its reason
}

// The default first, then the other candidate defaults and a few shapes a large problem may
// prefer (256×128 tiles, deeper stages, padding, the direct epilogue), where they are valid.
gt_status suggest(const gt_problem* p, const gt_device* d, int32_t max, int64_t* configs, int32_t* count,
                  gt_reply* reply) {
  return guarded(reply, [&] {
    std::vector<std::vector<int64_t>> cands = {choose_default(*p, *d)};
    for (auto& c : default_order()) cands.push_back(c);
    for (auto& c : {with({{pBm, 256}, {pBn, 128}}), with({{pBm, 256}, {pBn, 128}, {pStages, 3}}),
                    with({{pSmem, kPad}}), with({{pEpi, kDirect}}), with({{pBk, 64}, {pStages, 3}}),
                    with({{pBn, 128}, {pBk, 64}, {pStages, 3}})})
      cands.push_back(c);
    int32_t n = 0;
    std::vector<std::vector<int64_t>> seen;
    for (auto& c : cands) {
      if (n >= max) break;
      if (std::find(seen.begin(), seen.end(), c) != seen.end()) continue;
      seen.push_back(c);
      try {
        plan(*p, read(c.data(), kParams), *d);
      } catch (const Refusal&) {
        continue;
      }
      std::copy(c.begin(), c.end(), configs + int64_t(n) * kParams);
      ++n;
    }
    *count = n;
    return GT_OK;
  });
}

// The plan of a raw config (source_family's idiom).
Plan plan_of(const gt_problem& p, const int64_t* c, int32_t n, const gt_device& d) { return plan(p, read(c, n), d); }

Launch launch(const gt_problem& p, const Plan& pl) {
  const Cfg& k = pl.c;
  Launch l = kernel_launch(k_wmma, k_wmma_name, "gemm_wmma", {
      define("IN_T", dtype_cuda_type(p.in_dtype)),
      define("OUT_T", dtype_cuda_type(p.out_dtype)),
      define("IS_TF32", p.in_dtype == GT_TF32 ? 1 : 0),
      define("IS_BF16", p.in_dtype == GT_BF16 ? 1 : 0),
      define("A_TRANS", a_transposed(p) ? 1 : 0),
      define("B_TRANS", b_transposed(p) ? 1 : 0),
      define("LOADER", k[pLoader]),
      define("BM", k[pBm]),
      define("BN", k[pBn]),
      define("BK", k[pBk]),
      define("WM", k[pWm]),
      define("WN", k[pWn]),
      define("FM", pl.fm),
      define("FN", pl.fn),
      define("FK", pl.fk),
      define("STAGES", k[pStages]),
      define("EPILOGUE", k[pLoader] == kMmaPtx ? k[pEpi] : int64_t(kStaged)),
      define("GROUP_M", kGroupM),
      define("VEC", pl.vec),
      define("OUT_VEC", pl.out_vec),
      define("STAGE_BYTES", pl.stage_bytes),
      define("EPI_ROWS", pl.epi_rows),
      define("EPI_LD", pl.epi_ld),
  });
  for (auto [name, t] : {std::pair<const char*, const OperandTile*>{"A", &pl.a}, {"B", &pl.b}}) {
    const std::string x(name);
    l.options.push_back(define(x + "_ROWS", t->rows));
    l.options.push_back(define(x + "_COLS", t->cols));
    l.options.push_back(define(x + "_LD", t->ld));
    l.options.push_back(define(x + "_DIV", t->div));
    l.options.push_back(define(x + "_MUL", t->mul));
    l.options.push_back(define(x + "_W", t->width));
    l.options.push_back(define(x + "_BYTES", t->bytes));
  }
  l.grid = {pl.grid, 1, 1};
  l.block = {uint32_t(pl.threads), 1, 1};
  l.dynamic_smem = uint32_t(pl.smem_bytes);
  return l;
}

gt_status describe_config(const gt_problem* p, const int64_t* c, int32_t n, char* out, size_t cap) {
  return guarded_text(out, cap, [&] {
    const Cfg k = read(c, n);
    const bool mma = k[pLoader] == kMmaPtx;
    std::string s = std::string(mma ? "ldmatrix+mma.sync" : "WMMA API") + ", block " + str(k[pBm]) + "x" + str(k[pBn]) +
                    "x" + str(k[pBk]) + ", warp " + str(k[pWm]) + "x" + str(k[pWn]) + " (" +
                    str((k[pBm] / k[pWm]) * (k[pBn] / k[pWn])) + " warps)";
    if (!mma) s += ", fragment " + std::string(base_table().space().params[pFrag].labels[k[pFrag]]);
    s += ", " + str(k[pStages]) + " stages, " + (k[pSmem] == kSwizzle ? "swizzled" : "padded") + " shared memory, " +
         (mma && k[pEpi] == kDirect ? "direct" : "staged") + " epilogue";
    if (p) {
      const int esize = int(dtype_size(p->in_dtype));
      if (esize > 0 && p->align_bytes >= esize) {
        const int bytes = std::min(16, int(p->align_bytes));
        s += bytes >= 4 ? ", " + str(bytes) + "-byte global copies" : ", element-wise global copies";
      }
    }
    write_msg(out, cap, s);
    return GT_OK;
  });
}

const gt_plugin kPlugin = [] {
  gt_plugin p = source_family<plan_of, launch>(
      "wmma", "1.0",
      "tensor-core GEMM: WMMA API or ldmatrix + mma.sync, cp.async multi-stage pipeline, fp32 accumulation", k_wmma,
      space_with_default<param_defs, choose_default>, describe_config);
  p.suggest = suggest;
  return p;
}();
}  // namespace

extern "C" GT_PLUGIN_EXPORT const gt_plugin* gemmtune_plugin_entry(uint32_t) { return &kPlugin; }
