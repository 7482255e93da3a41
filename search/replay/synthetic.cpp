// The timing model is a roofline with the effects that make real tile spaces hard to
// search: wave quantisation, occupancy from registers / shared memory / threads, the
// shared-memory feed of the inner loop (and bank conflicts without padding), latency hiding
// by warps and pipeline stages, load coalescing by vector width. Its constants are rough
// sm_90-like numbers: the landscape's shape matters here, not its absolute times.
#include "replay/synthetic.hpp"

#include "gpu/device.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>

namespace gt::search {
namespace {

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Deterministic uniform in (0, 1) from a seed, a config index and a stream number.
double unit(uint64_t seed, uint64_t index, uint64_t stream) {
  uint64_t key[3] = {seed, index, stream};
  uint64_t h = stable_hash(std::string_view(reinterpret_cast<const char*>(key), sizeof key));
  return (double(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

// Deterministic standard normal (Box-Muller on two streams).
double normal(uint64_t seed, uint64_t index, uint64_t stream) {
  double u1 = unit(seed, index, stream), u2 = unit(seed, index, stream + 100);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// What a config needs and gets on the device; `refusal` set when it cannot run at all (the
// replay's stand-in for a plugin's Plan: the one meaning "plan" has in gemmtune).
struct Plan {
  std::optional<std::string> refusal;
  Status refusal_status = Status::cannot_implement;
  int64_t threads = 0, smem = 0, regs = 0, blocks_per_sm = 0;
};

Plan refuse(Status s, std::string why) {
  Plan p;
  p.refusal = std::move(why);
  p.refusal_status = s;
  return p;
}

// Occupancy from the three per-SM limits; 0 when even one block does not fit.
int64_t blocks_per_sm(const gt_device& d, int64_t threads, int64_t regs, int64_t smem) {
  int64_t regs_alloc = cdiv(regs, 8) * 8;
  int64_t by_regs = d.regs_per_sm / (regs_alloc * threads);
  int64_t by_smem = smem > 0 ? d.smem_per_sm / (smem + 1024) : d.max_blocks_per_sm;
  int64_t by_threads = d.max_threads_per_sm / threads;
  return std::min({by_regs, by_smem, by_threads, int64_t(d.max_blocks_per_sm)});
}

// The shared checks of both kinds after the kind-specific ones.
Plan finish(const gt_device& d, int64_t threads, int64_t regs, int64_t smem) {
  if (threads > d.max_threads_per_block)
    return refuse(Status::resources, fmt::format("block of {} threads exceeds the device's {} threads per block",
                                                 threads, d.max_threads_per_block));
  if (smem > d.smem_per_block_optin)
    return refuse(Status::resources, fmt::format("needs {} bytes of shared memory; exceeds the device's {}", smem,
                                                 d.smem_per_block_optin));
  if (regs > 255) return refuse(Status::resources, fmt::format("needs about {} registers per thread (at most 255)", regs));
  Plan p;
  p.threads = threads;
  p.regs = regs;
  p.smem = smem;
  p.blocks_per_sm = blocks_per_sm(d, threads, regs, smem);
  if (p.blocks_per_sm == 0)
    return refuse(Status::resources, fmt::format("{} threads x {} registers exceed the device's registers per SM",
                                                 threads, regs));
  return p;
}

// Pipelines of the register_tile-like family (the values of its "pipe" parameter).
enum Pipe : int64_t { kSingle = 0, kRegDb = 1, kCp2 = 2, kCp3 = 3, kCp4 = 4 };

// register_tile-like: bm bn bk tm tn warp vec pipe swz occ (the real family's parameters,
// with its design rules for layout nn).
enum RT { rt_bm, rt_bn, rt_bk, rt_tm, rt_tn, rt_warp, rt_vec, rt_pipe, rt_swz, rt_occ };

int64_t reg_cap(const gt_device& d, int64_t blocks, int64_t threads) {
  return std::min<int64_t>(255, (d.regs_per_sm / (blocks * threads)) / 8 * 8);
}

struct RtPlan : Plan {
  int64_t lanes_m = 0, wm = 0, wn = 0, stages = 0, regs_cap = 0;
};

RtPlan plan_register_tile(const gt_device& d, const Problem& p, const Config& c) {
  auto no = [](Status s, std::string why) {
    RtPlan r;
    r.refusal = std::move(why);
    r.refusal_status = s;
    return r;
  };
  int64_t bm = c[rt_bm], bn = c[rt_bn], bk = c[rt_bk], tm = c[rt_tm], tn = c[rt_tn], lanes_m = c[rt_warp];
  int64_t vec = c[rt_vec], pipe = c[rt_pipe], swz = c[rt_swz], occ = c[rt_occ];
  int64_t tmax = std::max(tm, tn), tmin = std::min(tm, tn);
  if (!(tm == tn || (tmax >= 8 && tmax == 2 * tmin)))
    return no(Status::cannot_implement, fmt::format("thread tile {}x{} is not built", tm, tn));
  bool lab = lanes_m == 2;
  if (lab && tm != tn) return no(Status::cannot_implement, "the 2x16 lane arrangement takes square thread tiles only");
  int64_t wm = lanes_m * tm, wn = (32 / lanes_m) * tn;
  if (bm % wm || bn % wn)
    return no(Status::cannot_implement, fmt::format("warp tile {}x{} does not divide block tile {}x{}", wm, wn, bm, bn));
  if (std::max(bm, bn) > 2 * std::min(bm, bn))
    return no(Status::cannot_implement, fmt::format("block tile {}x{} is more than 2:1", bm, bn));
  int64_t threads = (bm / tm) * (bn / tn);
  if (threads != 64 && threads != 128 && threads != 256)
    return no(Status::cannot_implement, fmt::format("block of {} threads: blocks of 64, 128 or 256 only", threads));
  if (tm * tn < 16 && !(lab && threads == 256 && bm == bn))
    return no(Status::cannot_implement, "thread tiles under 4x4 exist for the lab's kernel only");
  if (tm * tn >= 128 && threads != 256)
    return no(Status::cannot_implement, "thread tiles of 128 accumulators need 256 threads");
  if (vec * 4 > p.align)
    return no(Status::cannot_implement, fmt::format("vec={} loads {} bytes; the problem is aligned to {}", vec, 4 * vec, p.align));
  if ((bm * bk) % (threads * vec) || (bn * bk) % (threads * vec))
    return no(Status::cannot_implement, fmt::format("the {}x{} and {}x{} tiles do not split over {} threads x {}", bm,
                                                    bk, bk, bn, threads, vec));
  int64_t stages = pipe == kSingle ? 1 : pipe == kRegDb ? 2 : pipe;
  int64_t smem = stages * bk * (bm + 4 + bn) * 4;
  if (smem > d.smem_per_block_optin)
    return no(Status::resources, fmt::format("needs {} bytes of shared memory; exceeds the device's {}", smem,
                                             d.smem_per_block_optin));
  bool cp = pipe >= kCp2;
  int64_t staged = cp ? 0 : (bm * bk + bn * bk) / threads;
  int64_t copies = (bm * bk + bn * bk) / (threads * vec);
  int64_t regs = tm * tn + 2 * (tm + tn) + staged + (cp ? copies : 0) + 24;
  int64_t cap1 = reg_cap(d, 1, threads);
  if (regs > cap1) return no(Status::resources, fmt::format("needs about {} registers per thread; {} allowed", regs, cap1));
  int64_t cap = cap1;
  if (occ == 2) {
    int64_t cap2 = reg_cap(d, 2, threads);
    if (cap2 >= cap1 || 2 * regs <= cap2)
      return no(Status::cannot_implement, "occ=2 caps registers no differently from occ=1 here (same kernel)");
    if (regs > cap2) return no(Status::resources, fmt::format("needs about {} registers; 2 blocks leave {}", regs, cap2));
    if (2 * (smem + 1024) > d.smem_per_sm)
      return no(Status::resources, "2 blocks per SM need more shared memory than the device has");
    cap = cap2;
  }
  if (swz > 1 && (cdiv(p.m, bm) == 1 || cdiv(p.n, bn) == 1))
    return no(Status::cannot_implement, "swz on a grid one block high or wide is the same as swz=1");
  RtPlan r;
  static_cast<Plan&>(r) = finish(d, threads, std::min<int64_t>(255, int64_t(double(regs) * 1.15)), smem);
  r.lanes_m = lanes_m;
  r.wm = wm;
  r.wn = wn;
  r.stages = stages;
  r.regs_cap = cap;
  r.regs = regs;
  if (occ == 2) r.blocks_per_sm = std::max<int64_t>(r.blocks_per_sm, 2);
  return r;
}

double time_register_tile(const gt_device& d, const Problem& p, const Config& c, const RtPlan& pl) {
  double bm = double(c[rt_bm]), bn = double(c[rt_bn]), bk = double(c[rt_bk]), tm = double(c[rt_tm]),
         tn = double(c[rt_tn]), vec = double(c[rt_vec]);
  int64_t pipe = c[rt_pipe], swz = c[rt_swz], occ = c[rt_occ];
  bool lab = pl.lanes_m == 2;
  double M = double(p.m), N = double(p.n), K = double(p.k), sms = d.sm_count, clock = 1.98e9;
  double blocks = double(cdiv(p.m, c[rt_bm]) * cdiv(p.n, c[rt_bn]));
  double threads = double(pl.threads);
  double bpsm = double(pl.blocks_per_sm);
  double resident = std::min(bpsm, std::ceil(blocks / sms));
  double warps = resident * threads / 32.0;
  // Inner loop per k step: tm*tn FFMA, LDS.128 fragment loads (the lab's contiguous
  // patches hit bank conflicts as tn grows), and the global loads of the next tile.
  double ffma = tm * tn;
  double lds = std::ceil(tm / 4) + std::ceil(tn / 4);
  double conflicts = lab ? 1.0 + 0.5 * std::log2(std::max(1.0, tn)) : 1.0;
  double ldg = (bm + bn) / (threads * vec);
  double issue = ffma / (ffma + lds * conflicts + ldg + 1.5);
  double feed = std::min(1.0, (32.0 * ffma / 128.0) / ((double(pl.wm) + double(pl.wn)) * 4.0 / 128.0 * conflicts));
  double latency = 1.0 - std::exp(-warps * std::min(ffma, 32.0) / 128.0);
  double base = pipe == kSingle ? 0.62 : pipe == kRegDb ? 0.86 : pipe == kCp2 ? 0.88 : pipe == kCp3 ? 0.95 : 0.955;
  // Other resident blocks hide a shallow pipeline's stalls.
  double hide = 1.0 - (1.0 - base) / std::pow(std::max(1.0, resident), 0.7);
  double sync = 1.0 / (1.0 + 4.0 / (bk * std::sqrt(ffma)));
  // Capping registers at the occ=2 limit spills when the kernel needs nearly all of them.
  double spill = (occ == 2 && double(pl.regs) * 1.15 > double(pl.regs_cap)) ? 1.25 : 1.0;
  double waves = std::ceil(blocks / (sms * bpsm));
  double wave_eff = blocks / (waves * sms * bpsm);
  wave_eff = std::min(1.0, wave_eff + (1.0 - wave_eff) * 0.3 * (bpsm > 1));
  double flops = 2.0 * blocks * bm * bn * K;
  double peak = sms * 128.0 * 2.0 * clock * 0.9;
  double t_comp = spill * flops / (peak * issue * feed * latency * hide * sync * wave_eff);
  double coalesce = vec == 1 ? 0.6 : vec == 2 ? 0.85 : 1.0;
  double l2_bytes = 4.0 * M * N * K * (1.0 / bn + 1.0 / bm) + 4.0 * M * N;
  double spill_l2 = std::min(1.0, 4.0 * (M * K + K * N) / double(d.l2_bytes));
  double dram_bytes = 4.0 * (M * K + K * N) * (1.0 + spill_l2 * (swz == 1 ? 2.0 : 0.4)) + 4.0 * M * N;
  double t_mem = std::max(l2_bytes / (8.0e12 * coalesce), dram_bytes / 3.9e12);
  return 1e6 * (std::max(t_comp, t_mem) + 0.15 * std::min(t_comp, t_mem)) + 4.0;
}

// wmma-like: loader bm bn bk wm wn frag stages smem epilogue group (the real family's
// parameters, with its design rules for layout nn and 16-byte alignment).
enum WM { wm_loader, wm_bm, wm_bn, wm_bk, wm_wm, wm_wn, wm_frag, wm_stages, wm_smem, wm_epi, wm_group };
enum Frag : int64_t { k16x16 = 0, k32x8 = 1, k8x32 = 2 };

Plan plan_wmma(const gt_device& d, const Problem& p, const Config& c) {
  int64_t bm = c[wm_bm], bn = c[wm_bn], bk = c[wm_bk], wm = c[wm_wm], wn = c[wm_wn], frag = c[wm_frag];
  int64_t stages = c[wm_stages];
  bool mma = c[wm_loader] == 1, swizzle = c[wm_smem] == 1, staged = !mma || c[wm_epi] == 1;
  int64_t esize = int64_t(size_of(p.in));
  if (wm > bm || wn > bn)
    return refuse(Status::cannot_implement, fmt::format("warp tile {}x{} is larger than block tile {}x{}", wm, wn, bm, bn));
  int64_t warps = (bm / wm) * (bn / wn);
  if (warps > 8) return refuse(Status::cannot_implement, fmt::format("{} warps per block; the family uses 1 to 8", warps));
  if (wm * wn / 32 > 128)
    return refuse(Status::cannot_implement, fmt::format("warp tile {}x{}: over 128 accumulators per thread", wm, wn));
  if (mma) {
    if (frag != k16x16) return refuse(Status::cannot_implement, "the mma loader takes 16x16 fragments only");
    if ((bk / 16) % 2) return refuse(Status::cannot_implement, "the mma loader needs an even number of k-steps (bk >= 32)");
  } else {
    if (swizzle) return refuse(Status::cannot_implement, "the WMMA API cannot read swizzled shared memory");
    if (c[wm_epi] == 0) return refuse(Status::cannot_implement, "the WMMA API's epilogue is always staged");
    int64_t fm = frag == k32x8 ? 32 : frag == k8x32 ? 8 : 16, fn = frag == k32x8 ? 8 : frag == k8x32 ? 32 : 16;
    if (wm % fm || wn % fn)
      return refuse(Status::cannot_implement, fmt::format("warp tile {}x{} is not whole {}x{} fragments", wm, wn, fm, fn));
    if (fn * esize % 32) return refuse(Status::cannot_implement, "fragment steps 16 bytes along row-major B");
  }
  auto tile = [&](int64_t rows, int64_t cols) { return cdiv(rows * (cols + (swizzle ? 0 : 16 / esize)) * esize, 128) * 128; };
  int64_t stage_bytes = tile(bm, bk) + tile(bk, bn);
  int64_t epi = staged ? warps * 16 * (wn + 8) * 4 : 0;
  int64_t smem = std::max(stages * stage_bytes, epi);
  int64_t acc = wm * wn / 32;
  int64_t frags = 2 * ((wm / 16) * 4 + (wn / 8) * 2);
  return finish(d, 32 * warps, acc + frags + 40, smem);
}

double time_wmma(const gt_device& d, const Problem& p, const Config& c, const Plan& pl) {
  double bm = double(c[wm_bm]), bn = double(c[wm_bn]), bk = double(c[wm_bk]), wm = double(c[wm_wm]),
         wn = double(c[wm_wn]);
  bool mma = c[wm_loader] == 1, swizzle = c[wm_smem] == 1, staged = !mma || c[wm_epi] == 1;
  int64_t stages = c[wm_stages], frag = c[wm_frag], group = c[wm_group];
  double M = double(p.m), N = double(p.n), K = double(p.k), sms = d.sm_count, clock = 1.98e9;
  double esize = double(size_of(p.in)), osize = double(size_of(p.out));
  double blocks = double(cdiv(p.m, c[wm_bm]) * cdiv(p.n, c[wm_bn]));
  double bpsm = double(pl.blocks_per_sm);
  double resident = std::min(bpsm, std::ceil(blocks / sms));
  double warps = resident * double(pl.threads) / 32.0;
  double frags = (wm / 16) * (wn / 16);
  // The shared-memory feed of the tensor cores: fragment bytes per flop against the
  // 128 B/clk an SM reads. The WMMA API's fixed-stride loads cost more than ldmatrix's.
  double loader = mma ? 1.0 : 1.35 * (frag == k16x16 ? 1.0 : 1.12);
  double bytes_per_flop = (wm + wn) * 16.0 * esize * loader / (frags * 8192.0);
  double peak_per_sm = 2048.0 * (mma ? 1.0 : 0.8);
  double feed = std::min(1.0, 128.0 / (bytes_per_flop * peak_per_sm));
  double latency = 1.0 - std::exp(-warps * std::min(frags, 8.0) / 20.0);
  double base = stages == 2 ? 0.76 : stages == 3 ? 0.91 : stages == 4 ? 0.98 : 0.985;
  double hide = 1.0 - (1.0 - base) / std::pow(std::max(1.0, resident), 0.6);
  double sync = 1.0 / (1.0 + 6.0 / bk);
  double address = swizzle ? 1.0 : 0.97;  // padded rows waste a little of each 128-byte line
  double waves = std::ceil(blocks / (sms * bpsm));
  double wave_eff = blocks / (waves * sms * bpsm);
  wave_eff = std::min(1.0, wave_eff + (1.0 - wave_eff) * 0.3 * (bpsm > 1));
  double flops = 2.0 * blocks * bm * bn * K;
  double t_comp = flops / (sms * peak_per_sm * clock * feed * latency * hide * sync * address * wave_eff);
  double l2_bytes = esize * M * N * K * (1.0 / bn + 1.0 / bm);
  double spill = std::min(1.0, esize * (M * K + K * N) / double(d.l2_bytes));
  double dram_bytes = esize * (M * K + K * N) * (1.0 + spill * (group == 1 ? 2.5 : 0.5));
  double t_mem = std::max(l2_bytes / 9.0e12, dram_bytes / 3.9e12);
  // Writing C straight from the accumulators scatters 4-byte stores; staging coalesces them.
  double t_epi = M * N * osize / (3.9e12 * (staged ? 0.9 : 0.45));
  return 1e6 * (std::max(t_comp, t_mem) + 0.15 * std::min(t_comp, t_mem) + t_epi) + 4.0;
}

std::vector<Param> register_tile_params() {
  return {
      {"bm", "block tile: rows of C per block", {16, 32, 64, 128, 256}, {}, 3},
      {"bn", "block tile: columns of C per block", {16, 32, 64, 128, 256}, {}, 3},
      {"bk", "k-depth of one shared-memory tile", {8, 16}, {}, 0},
      {"tm", "thread tile: accumulators per thread along M", {1, 2, 4, 8, 16}, {}, 3},
      {"tn", "thread tile: accumulators per thread along N", {1, 2, 4, 8, 16}, {}, 3},
      {"warp", "lanes of a warp along MxN", {2, 4, 8}, {"2x16", "4x8", "8x4"}, 1},
      {"vec", "global-load width in floats", {1, 2, 4}, {}, 2},
      {"pipe", "global-to-shared pipeline", {kSingle, kRegDb, kCp2, kCp3, kCp4}, {"single", "regdb", "cp2", "cp3", "cp4"}, 3},
      {"swz", "block rasterisation groups (L2 reuse)", {1, 8}, {}, 1},
      {"occ", "blocks per SM promised to ptxas", {1, 2}, {}, 1},
  };
}

std::vector<Param> wmma_params() {
  return {
      {"loader", "fragment path: WMMA API or ldmatrix + mma.sync", {0, 1}, {"wmma", "mma"}, 1},
      {"bm", "block tile rows", {32, 64, 128, 256}, {}, 2},
      {"bn", "block tile columns", {32, 64, 128, 256}, {}, 3},
      {"bk", "K depth of one shared-memory stage", {16, 32, 64}, {}, 1},
      {"wm", "warp tile rows", {16, 32, 64, 128}, {}, 2},
      {"wn", "warp tile columns", {16, 32, 64, 128}, {}, 2},
      {"frag", "WMMA fragment MxN", {k16x16, k32x8, k8x32}, {"16x16", "32x8", "8x32"}, 0},
      {"stages", "cp.async pipeline depth", {2, 3, 4, 5}, {}, 2},
      {"smem", "bank-conflict avoidance: padded rows or XOR swizzle", {0, 1}, {"pad", "swizzle"}, 1},
      {"epilogue", "C store: direct or staged through shared memory", {0, 1}, {"direct", "staged"}, 1},
      {"group", "block-index swizzle for L2 reuse", {1, 8}, {}, 1},
  };
}

}  // namespace

SyntheticGemm::SyntheticGemm(SyntheticKind kind, const Problem& problem, const gt_device& device, uint64_t seed)
    : kind_(kind), problem_(problem), device_(device), seed_(seed) {
  bool rt = kind == SyntheticKind::register_tile;
  space_ = Space(rt ? "register_tile" : "wmma", "synthetic", rt ? register_tile_params() : wmma_params());
  space_.add_constraint([d = device_, p = problem_, rt](const Config& c) -> std::optional<std::string> {
    return rt ? plan_register_tile(d, p, c).refusal : plan_wmma(d, p, c).refusal;
  });
}

std::string SyntheticGemm::name() const { return fmt::format("synthetic {} {}", space_.family(), problem_.key()); }

Outcome SyntheticGemm::evaluate(const Config& c) const {
  bool rt = kind_ == SyntheticKind::register_tile;
  if (auto why = space_.check(c)) {
    bool in_lists = c.size() == space_.dims();
    for (size_t i = 0; in_lists && i < c.size(); ++i) in_lists = space_.params()[i].index_of(c[i]).has_value();
    Status s = Status::cannot_implement;
    if (in_lists) s = rt ? plan_register_tile(device_, problem_, c).refusal_status : plan_wmma(device_, problem_, c).refusal_status;
    return {s, kNaN, *why};
  }
  double t = 0;
  if (rt) {
    t = time_register_tile(device_, problem_, c, plan_register_tile(device_, problem_, c));
  } else {
    t = time_wmma(device_, problem_, c, plan_wmma(device_, problem_, c));
  }
  uint64_t idx = space_.index_of(c);
  // A fast wrong answer: failing configs report a time well below what they would take,
  // which no strategy may believe.
  double fake = 0.5 * t;
  if (unit(seed_, idx, 1) < 0.02) return {Status::verify_failed, fake, "max error 1.0e+00 exceeds tolerance"};
  // Failures cluster where kernels are pushed hardest: the largest register tiles and the
  // deepest pipelines occasionally fail to compile in time.
  bool stressed = rt ? c[rt_tm] * c[rt_tn] >= 128 : (c[wm_stages] == 5 && c[wm_bm] * c[wm_bn] >= 256 * 128);
  if (stressed && unit(seed_, idx, 4) < 0.3) return {Status::timeout, fake, "compile exceeded its time limit"};
  // What no model of the tile shapes predicts: how well the compiler scheduled this one
  // kernel (log-normal, ~2.5 %, the same on every run), then measurement noise (~1 %).
  double luck = normal(seed_, idx, 5), noise = normal(seed_, idx, 2);
  return {Status::ok, t * std::exp(0.025 * luck + 0.01 * noise), ""};
}

Objective SyntheticGemm::objective() const {
  return [this](const Config& c) { return evaluate(c); };
}

std::vector<SyntheticGemm> SyntheticGemm::suite(uint64_t seed) {
  gt_device d = arch_limits("sm_90");
  auto rt = [&](int64_t m, int64_t n, int64_t k, uint64_t s) {
    return SyntheticGemm(SyntheticKind::register_tile, Problem::make(m, n, k, DType::f32, DType::f32, Layout::nn), d, s);
  };
  auto tc = [&](int64_t m, int64_t n, int64_t k, uint64_t s) {
    return SyntheticGemm(SyntheticKind::wmma, Problem::make(m, n, k, DType::f16, DType::f16, Layout::nn), d, s);
  };
  return {rt(4096, 4096, 4096, seed), rt(256, 4096, 4096, seed + 1), rt(1000, 1000, 1000, seed + 2),
          tc(4096, 4096, 4096, seed + 3), tc(8192, 8192, 8192, seed + 4), tc(128, 4096, 4096, seed + 5)};
}

}  // namespace gt::search
