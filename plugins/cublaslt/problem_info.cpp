// The cuBLASLt family: everything about one problem on one GPU (its mapping, the heuristic's
// picks, each algorithm's capabilities, the parameter table), built once and kept, and the
// checks of a config against it.
#include "cublaslt_internal.hpp"

#include <optional>

namespace gt_cublaslt {

// cuBLASLt's own verdict on an algorithm for the problem: "" when it accepts it, else why.
std::string algo_check(const ProblemInfo& info, const Attrs& a, Checked* ch) {
  Descs d(info.map, a.fast_accum);
  if (info.map.fp8) d.stub_scales(info.gpu.scale_stub, is_fp8(info.problem.out_dtype));
  ch->attrs = a;
  ch->algo = make_algo(info.gpu.handle, info.map, a);
  cublasStatus_t s =
      cublasLtMatmulAlgoCheck(info.gpu.handle, d.od(), d.xl(), d.yl(), d.cl(), d.dl(), &ch->algo, &ch->result);
  return s == CUBLAS_STATUS_SUCCESS ? std::string() : "cublasLtMatmulAlgoCheck rejects it: " + status_text(s);
}

std::string some_labels(int param, const std::set<int64_t>& vals) {
  std::string s;
  int shown = 0;
  for (int64_t v : vals) {
    if (shown == 12) return s + ", ...";
    s += (shown++ ? ", " : "") + label_of(param, v);
  }
  return s;
}

// The rules cuBLASLt's capability attributes state, checked before asking AlgoCheck, and
// the rules that keep one spelling per algorithm (reduction without split-K). Returns why
// the config breaks one, or "". Refusals are the common answer while a space is counted,
// so they are returned, not thrown.
std::string caps_reason(const ProblemInfo& info, const AlgoCaps& caps, const Attrs& a) {
  auto alg = [&] { return "algorithm " + std::to_string(a.algo); };
  if (!caps.tiles.count(a.tile))
    return alg() + " has no tile " + tile_label(a.tile) + " (its tiles: " + some_labels(kTile, caps.tiles) + ")";
  if (!caps.stages.count(a.stages))
    return alg() + " has no stages " + stages_label(a.stages) + " (its stages: " + some_labels(kStages, caps.stages) +
           ")";
  if (a.split_k == 1 && a.reduction != CUBLASLT_REDUCTION_SCHEME_NONE)
    return "reduction=" + reduction_label(a.reduction) +
           " acts only with split_k > 1 (the same algorithm is reduction=none)";
  if (a.split_k > 1) {
    if (!caps.split_k) return alg() + " does not support split-K";
    if (a.reduction == CUBLASLT_REDUCTION_SCHEME_NONE)
      return "split_k=" + std::to_string(a.split_k) + " needs a reduction scheme";
    if (!(caps.reduction_mask & a.reduction)) return alg() + " does not support reduction " + reduction_label(a.reduction);
  }
  if (a.swizzle && !caps.swizzle) return alg() + " does not support CTA swizzling";
  if (int64_t(a.custom) > caps.custom_max) return alg() + " takes custom options 0.." + std::to_string(caps.custom_max);
  if (!caps.clusters.count(a.cluster))
    return alg() + " is not known to take cluster " + cluster_label(a.cluster) + " (its clusters: " +
           some_labels(kCluster, caps.clusters) + ")";
  if (!caps.inners.count(a.inner)) return alg() + " is not known to take inner shape " + inner_label(a.inner);
  uint32_t need = std::max({caps.align_x, caps.align_y, caps.align_c});
  if (need > uint32_t(info.problem.align_bytes))
    return alg() + " needs " + std::to_string(need) + "-byte aligned operands; the problem guarantees " +
           std::to_string(info.problem.align_bytes);
  return {};
}

// The full check: the value lists, the capability rules, AlgoCheck, and the workspace.
// Returns why the config is refused, or "" with the checked algorithm in *ch.
std::string config_reason(const ProblemInfo& info, const int64_t* c, int32_t n, Checked* ch) {
  Attrs a = attrs_of(c, n, info.problem);
  for (int i = 0; i < info.params; ++i)
    if (!info.values[size_t(i)].count(c[i]))
      return std::string(kParamNames[i]) + "=" + label_of(i, c[i]) + " is not in this problem's space";
  // The heuristic's own picks are evidence enough; everything else meets the capabilities.
  if (!info.pick_of(c))
    if (std::string why = caps_reason(info, info.caps.at(a.algo), a); !why.empty()) return why;
  if (std::string why = algo_check(info, a, ch); !why.empty()) return why;
  uint64_t need = ch->result.workspaceSize;
  if (need > a.workspace)
    return "needs " + human_bytes(need) + " of workspace; workspace=" + bytes_label(int64_t(a.workspace)) +
           " allows less";
  for (int64_t w : kWorkspaceValues)
    if (uint64_t(w) >= need && uint64_t(w) < a.workspace)
      return "needs only " + human_bytes(need) + " of workspace (the same algorithm is workspace=" + bytes_label(w) +
             ")";
  return {};
}

bool same_problem(const gt_problem& a, const gt_problem& b) {
  return a.m == b.m && a.n == b.n && a.k == b.k && a.lda == b.lda && a.ldb == b.ldb && a.ldc == b.ldc &&
         a.in_dtype == b.in_dtype && a.out_dtype == b.out_dtype && a.layout == b.layout &&
         a.align_bytes == b.align_bytes && a.b_dtype == b.b_dtype && a.scale_mode == b.scale_mode;
}

std::string problem_key(const gt_problem& p, int device) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%d|%lld|%lld|%lld|%lld|%lld|%lld|%d|%d|%d|%d|%d|%d", device, (long long)p.m,
                (long long)p.n, (long long)p.k, (long long)p.lda, (long long)p.ldb, (long long)p.ldc, p.in_dtype,
                p.out_dtype, p.layout, p.align_bytes, p.b_dtype, p.scale_mode);
  return buf;
}

// "f16 inputs with f16 output" ("e4m3:e5m2 inputs with bf16 output, row scales"): the types, in
// messages.
std::string types_text(const gt_problem& p, const Mapping& m) {
  return std::string(dtype_name(p.in_dtype)) +
         (p.b_dtype != p.in_dtype ? std::string(":") + dtype_name(p.b_dtype) : std::string()) + " inputs with " +
         dtype_name(p.out_dtype) + " output" +
         (m.fp8 ? std::string(", ") + scale_mode_name(p.scale_mode) + " scales" : std::string());
}

// The algorithm ids for these types.
std::vector<int> algo_ids(const Gpu& gpu, const Mapping& m, const std::string& what) {
  std::vector<int> ids(kMaxAlgoIds);
  int nids = 0;
  lt_refuse(cublasLtMatmulAlgoGetIds(gpu.handle, m.compute, m.scale, m.in_x, m.in_y, m.c, m.out, kMaxAlgoIds,
                                     ids.data(), &nids),
            "cublasLtMatmulAlgoGetIds for " + what);
  if (nids <= 0) throw Refusal(GT_REFUSAL_DTYPE, "cuBLASLt has no algorithm for " + what);
  ids.resize(size_t(nids));
  return ids;
}

// The heuristic, asked as a user would ask it: the largest workspace budget, and the problem's
// alignment (cuBLASLt otherwise assumes 256-byte aligned operands). Its results, best first.
std::vector<cublasLtMatmulHeuristicResult_t> ask_heuristic(const gt_problem& p, const Gpu& gpu, const Mapping& m) {
  Descs d(m);
  if (m.fp8) d.stub_scales(gpu.scale_stub, is_fp8(p.out_dtype));
  cublasLtMatmulPreferenceOpaque_t pref;
  lt_must(cublasLtMatmulPreferenceInit(&pref), "cublasLtMatmulPreferenceInit");
  uint64_t max_ws = uint64_t(kWorkspaceValues[std::size(kWorkspaceValues) - 1]);
  lt_must(cublasLtMatmulPreferenceSetAttribute(&pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws, sizeof(max_ws)),
          "set MAX_WORKSPACE_BYTES");
  uint32_t align = uint32_t(p.align_bytes);
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    lt_must(cublasLtMatmulPreferenceSetAttribute(&pref, attr, &align, sizeof(align)), "set MIN_ALIGNMENT");
  std::vector<cublasLtMatmulHeuristicResult_t> results(kHeuristicCount);
  int returned = 0;
  lt_refuse(cublasLtMatmulAlgoGetHeuristic(gpu.handle, d.od(), d.xl(), d.yl(), d.cl(), d.dl(), &pref, kHeuristicCount,
                                           results.data(), &returned),
            "cuBLASLt's heuristic has no algorithm for this problem");
  if (returned <= 0) throw Refusal(GT_REFUSAL_SHAPE, "cuBLASLt's heuristic returned no algorithm for this problem");
  results.resize(size_t(returned));
  return results;
}

// Capabilities of every id (those the problem's alignment rules out are left out later).
void read_all_caps(ProblemInfo& info, const std::vector<int>& ids) {
  for (int id : ids) {
    try {
      info.caps.emplace(id, read_caps(info.gpu.handle, info.map, id));
    } catch (const std::runtime_error&) {
      // An id whose capabilities cannot be read cannot be checked either: leave it out.
    }
  }
}

// An id GetIds did not list, or whose capabilities would not read: the heuristic's pick of it is
// the evidence that it exists.
void ensure_caps(ProblemInfo& info, int32_t algo) {
  if (info.caps.count(algo)) return;
  AlgoCaps c;
  try {
    c = read_caps(info.gpu.handle, info.map, algo);
  } catch (const std::runtime_error&) {
    c.id = algo;
    c.clusters.insert(CUBLASLT_CLUSTER_SHAPE_AUTO);
    c.inners.insert(CUBLASLT_MATMUL_INNER_SHAPE_UNDEFINED);
  }
  info.caps.emplace(algo, std::move(c));
}

// The heuristic's result of rank `r` as a config: its attributes and the smallest workspace budget
// that covers what it needs, re-created from those attributes and checked, so that a pick this
// family offers is a pick it can build. nullopt with the reason in *why where it cannot be.
std::optional<Pick> pick_of_result(ProblemInfo& info, const cublasLtMatmulHeuristicResult_t& res, int r,
                                   std::string* why) {
  Pick pk;
  pk.attrs = read_algo(res.algo);
  pk.attrs.fp8 = info.map.fp8;  // the heuristic was asked without fast accumulation
  pk.rank = r;
  pk.waves = res.wavesCount;
  ensure_caps(info, pk.attrs.algo);
  Checked ch{};
  if (std::string failed = algo_check(info, pk.attrs, &ch); !failed.empty()) {
    *why = "rank " + std::to_string(r) + ": " + failed;
    return std::nullopt;
  }
  pk.workspace_needed = ch.result.workspaceSize;  // what create_op will allocate
  const int64_t* ws = std::find_if(std::begin(kWorkspaceValues), std::end(kWorkspaceValues),
                                   [&](int64_t w) { return uint64_t(w) >= pk.workspace_needed; });
  if (ws == std::end(kWorkspaceValues)) {
    *why = "rank " + std::to_string(r) + ": re-created, it needs " + human_bytes(pk.workspace_needed) +
           " of workspace, more than the heuristic was allowed";
    return std::nullopt;
  }
  pk.attrs.workspace = uint64_t(*ws);
  pk.config = config_of(pk.attrs);
  return pk;
}

// The heuristic's picks that can be re-created, best first, one per config.
void add_picks(ProblemInfo& info, const std::vector<cublasLtMatmulHeuristicResult_t>& results) {
  std::string first_failure;
  for (int r = 0; r < int(results.size()); ++r) {
    const auto& res = results[size_t(r)];
    if (res.state != CUBLAS_STATUS_SUCCESS) continue;
    std::string why;
    std::optional<Pick> pk = pick_of_result(info, res, r, &why);
    if (!pk) {
      if (first_failure.empty()) first_failure = why;
      continue;
    }
    bool dup = false;
    for (auto& q : info.picks) dup |= q.config == pk->config;
    if (!dup) info.picks.push_back(std::move(*pk));
  }
  if (info.picks.empty())
    throw Refusal(GT_REFUSAL_SHAPE, "none of the heuristic's " + std::to_string(results.size()) +
                  " picks can be re-created from its attributes (" + first_failure + ")");
}

// Widen each algorithm's lists by what the heuristic used with it (algorithms the heuristic uses
// with thread-block clusters may also try the small cluster shapes), and drop the algorithms that
// need more alignment than the problem has: they can never run here.
void widen_and_align_caps(ProblemInfo& info) {
  const std::vector<int64_t> clusters = info.gpu.cc_major >= 9 ? small_cluster_shapes() : std::vector<int64_t>{};
  for (auto& pk : info.picks) {
    AlgoCaps& c = info.caps.at(pk.attrs.algo);
    c.in_heuristic = true;
    c.tiles.insert(pk.attrs.tile);
    c.stages.insert(pk.attrs.stages);
    c.custom_max = std::max<int64_t>(c.custom_max, pk.attrs.custom);
    c.inners.insert(pk.attrs.inner);
    c.clusters.insert(pk.attrs.cluster);
    if (pk.attrs.cluster != CUBLASLT_CLUSTER_SHAPE_AUTO) c.clusters.insert(clusters.begin(), clusters.end());
  }
  for (auto it = info.caps.begin(); it != info.caps.end();) {
    const AlgoCaps& c = it->second;
    bool aligned = std::max({c.align_x, c.align_y, c.align_c}) <= uint32_t(info.problem.align_bytes);
    it = (aligned || c.in_heuristic) ? std::next(it) : info.caps.erase(it);
  }
}

using ValueLists = std::vector<std::set<int64_t>>;  // per parameter

// Value lists: the union over the algorithms' capabilities, plus the heuristic's values; and the
// heuristic's values alone in *from_picks.
ValueLists value_lists(const ProblemInfo& info, ValueLists* from_picks) {
  ValueLists full(size_t(info.params));
  *from_picks = ValueLists(size_t(info.params));
  bool any_split = false, any_swizzle = false;
  uint32_t red_mask = 0;
  for (auto& [id, c] : info.caps) {
    full[kAlgo].insert(id);
    full[kTile].insert(c.tiles.begin(), c.tiles.end());
    full[kStages].insert(c.stages.begin(), c.stages.end());
    full[kCluster].insert(c.clusters.begin(), c.clusters.end());
    full[kInner].insert(c.inners.begin(), c.inners.end());
    for (int64_t o = 0; o <= c.custom_max; ++o) full[kCustom].insert(o);
    any_split |= c.split_k;
    any_swizzle |= c.swizzle;
    red_mask |= c.split_k ? c.reduction_mask : 0;
  }
  full[kSplitK].insert(1);
  for (int64_t s : kSplitKValues)
    if (any_split && s <= info.problem.k) full[kSplitK].insert(s);  // more parts than K has no work for some
  full[kReduction].insert(CUBLASLT_REDUCTION_SCHEME_NONE);
  for (int64_t r : kReductionValues)
    if (full[kSplitK].size() > 1 && (red_mask & uint32_t(r))) full[kReduction].insert(r);
  full[kSwizzle].insert(0);
  if (any_swizzle) full[kSwizzle].insert(1);
  full[kWorkspace].insert(std::begin(kWorkspaceValues), std::end(kWorkspaceValues));
  if (info.map.fp8) full[kFastAccum] = {0, 1};
  for (auto& pk : info.picks)
    for (int i = 0; i < info.params; ++i) {
      full[size_t(i)].insert(pk.config[size_t(i)]);
      (*from_picks)[size_t(i)].insert(pk.config[size_t(i)]);
    }
  return full;
}

// Keep the raw product manageable: shrink the least telling lists to the heuristic's values
// (plus cuBLASLt's default for the attribute) until it fits; the names of those shrunk go to
// info.trimmed.
void trim_to_fit(ProblemInfo& info, ValueLists& full, const ValueLists& from_picks) {
  auto product = [&] {
    double n = 1;
    for (auto& s : full) n *= double(s.size());
    return n;
  };
  const std::pair<int, int64_t> shrink_order[] = {
      {kCustom, 0}, {kCluster, CUBLASLT_CLUSTER_SHAPE_AUTO}, {kInner, CUBLASLT_MATMUL_INNER_SHAPE_UNDEFINED},
      {kSplitK, 1}, {kStages, -1}, {kTile, -1}, {kAlgo, -1}};
  for (auto [param, keep] : shrink_order) {
    if (product() <= kMaxRawPoints) break;
    std::set<int64_t> s = from_picks[size_t(param)];
    if (keep >= 0) s.insert(keep);
    if (s.size() >= full[size_t(param)].size()) continue;
    full[size_t(param)] = std::move(s);
    info.trimmed.push_back(kParamNames[param]);
  }
  if (full[kSplitK].size() == 1 && *full[kSplitK].begin() == 1)  // no split-K left: no reduction either
    full[kReduction] = {CUBLASLT_REDUCTION_SCHEME_NONE};
}

// The parameter table; the default is rank 0, cuBLASLt's choice.
void make_table(ProblemInfo& info, ValueLists full) {
  std::vector<ParamDef> defs;
  const Pick& best = info.picks.front();
  for (int i = 0; i < info.params; ++i) {
    ParamDef def;
    def.name = kParamNames[i];
    def.help = kParamHelp[i];
    if (std::find(info.trimmed.begin(), info.trimmed.end(), def.name) != info.trimmed.end())
      def.help += " [trimmed to the heuristic's values: the full list would take the space past " +
                  std::to_string(int64_t(kMaxRawPoints)) + " points]";
    def.values.assign(full[size_t(i)].begin(), full[size_t(i)].end());
    if (has_labels(i))
      for (int64_t v : def.values) def.labels.push_back(label_of(i, v));
    def.default_value = best.config[size_t(i)];
    defs.push_back(std::move(def));
  }
  info.values = std::move(full);
  info.table = std::make_unique<ParamTable>(std::move(defs));
}

// Everything about one problem on one GPU, in order: the algorithms, the heuristic's picks,
// each algorithm's capabilities, the value lists, the parameter table.
std::unique_ptr<ProblemInfo> build_info(const gt_problem& p, const Gpu& gpu) {
  auto info = std::make_unique<ProblemInfo>();
  info->problem = p;
  info->gpu = gpu;
  info->map = map_problem(p);
  info->params = params_of(p);
  const std::vector<int> ids = algo_ids(gpu, info->map, types_text(p, info->map));
  const auto results = ask_heuristic(p, gpu, info->map);
  info->heuristic_returned = int(results.size());
  read_all_caps(*info, ids);
  add_picks(*info, results);
  widen_and_align_caps(*info);
  ValueLists from_picks;
  ValueLists full = value_lists(*info, &from_picks);
  trim_to_fit(*info, full, from_picks);
  make_table(*info, std::move(full));
  return info;
}

// The problem's info on the current GPU (built on first use); refuses without a GPU.
const ProblemInfo& problem_info(const gt_problem* p, const gt_device* d) {
  if (!p) throw Refusal(GT_REFUSAL_CONFIG, "no problem given");
  const Gpu& gpu = current_gpu(d);
  // Never erased (see ProblemInfo). A problem cuBLASLt refuses is remembered with its
  // reason, so that a search asking again does not ask cuBLASLt again.
  struct Entry {
    std::unique_ptr<ProblemInfo> info;
    std::string refusal;
    gt_refusal code = GT_REFUSAL_NONE;
  };
  static std::mutex mu;
  static std::map<std::string, Entry> infos;
  // A search asks about one problem many times in a row: remember the last one per thread.
  thread_local const ProblemInfo* last = nullptr;
  thread_local gt_problem last_problem{};
  thread_local int last_device = -1;
  if (last && last_device == gpu.device && same_problem(last_problem, *p)) return *last;
  std::string key = problem_key(*p, gpu.device);
  std::lock_guard lk(mu);
  auto it = infos.find(key);
  if (it == infos.end()) {
    Entry e;
    try {
      e.info = build_info(*p, gpu);
    } catch (const Refusal& r) {
      e.refusal = r.what();
      e.code = r.code;
    }
    it = infos.emplace(key, std::move(e)).first;
  }
  if (!it->second.info) throw Refusal(it->second.code, it->second.refusal);
  last = it->second.info.get();
  last_problem = *p;
  last_device = gpu.device;
  return *last;
}


}  // namespace gt_cublaslt
