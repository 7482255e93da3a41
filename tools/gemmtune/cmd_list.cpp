// gemmtune list: families, versions, parameters and values, space sizes.
#include "cli.hpp"

namespace gt::cli {

namespace {

struct ListArgs {
  std::string family, arch;
  ProblemArgs problem;
};

void add_list_options(CLI::App* sub, ListArgs& a) {
  sub->add_option("--family", a.family, "only this family");
  sub->add_option("--arch", a.arch, "architecture whose limits decide validity (default: the GPU's, else sm_90)");
  add_problem_options(sub, a.problem);
}

int run_list(Globals& g, const ListArgs& a) {
  std::optional<Problem> prob;
  if (a.problem.given()) prob = a.problem.resolve();
  std::string arch_used;
  gt_device lim = limits_for(a.arch, &arch_used);
  const auto& reg = g.plugins();
  std::vector<const Family*> fams;
  if (!a.family.empty())
    fams.push_back(&reg.get(a.family));
  else
    for (auto& f : reg.families()) fams.push_back(&f);
  Problem shown = prob ? *prob : Problem::make(4096, 4096, 4096, DType::f32, DType::f32, Layout::nn);
  nlohmann::json out = nlohmann::json::array();
  for (auto* f : fams) {
    nlohmann::json j = {{"family", f->name()}, {"version", f->version()}, {"summary", f->summary()},
                        {"kind", f->is_library() ? "library" : "source"}, {"path", f->path().string()}};
    if (!f->provenance().empty()) j["provenance"] = f->provenance();
    if (!g.json)
      fmt::print("{} {} ({}): {}\n", f->name(), f->version(), f->is_library() ? "library" : "source", f->summary());
    try {
      Space s = f->space(shown, lim);
      nlohmann::json params = nlohmann::json::array();
      for (auto& p : s.params()) {
        std::vector<std::string> vals;
        for (size_t i = 0; i < p.values.size(); ++i) vals.push_back(p.text(i));
        params.push_back({{"name", p.name}, {"help", p.help}, {"values", vals}, {"default", p.text(p.default_index)}});
        if (!g.json) {
          std::string v;
          for (size_t i = 0; i < vals.size(); ++i) v += (i ? " " : "") + (i == p.default_index ? "[" + vals[i] + "]" : vals[i]);
          fmt::print("  {:<10} {}  -- {}\n", p.name, v, p.help);
        }
      }
      j["params"] = params;
      j["raw_size"] = s.raw_size();
      if (!g.json) fmt::print("  raw space: {} points\n", s.raw_size());
      if (prob) {
        uint64_t valid = s.count_valid();
        j["valid_size"] = valid;
        j["problem"] = prob->key();
        j["arch"] = arch_used;
        if (!g.json) fmt::print("  valid for {} on {}: {} points\n", prob->key(), arch_used, valid);
        // What the default's launch asks of core (plugin ABI v2): cluster, persistent
        // grid, shared memory past 48 KiB, workspace, tensor maps, target.
        if (!f->is_library()) {
          Refused why;
          if (auto ks = f->build(*prob, s.default_config(), lim, &why)) {
            const auto grid = ks->launch_grid(lim.sm_count);
            j["default_launch"] = {{"grid", grid}, {"block", ks->block}, {"requests", ks->describe_requests()}};
            if (!g.json)
              fmt::print("  default launch: grid {}x{}x{}, block {}x{}x{}; requests: {}\n", grid[0], grid[1],
                         grid[2], ks->block[0], ks->block[1], ks->block[2], ks->describe_requests());
          } else {
            j["default_refused"] = why.why;
            if (!g.json) fmt::print("  default refused ({}): {}\n", refusal_name(why.code), why.why);
          }
        }
      }
    } catch (const RuntimeFailure& e) {
      j["space_error"] = e.what();
      if (!g.json) fmt::print("  space: {}\n", e.what());
    }
    out.push_back(j);
  }
  if (g.json) print_json(out);
  return 0;
}

Registrar reg_list(20, [](CLI::App& app, Globals& g) {
  return make_command<ListArgs>(app, g, "list",
      "families, their version, parameters and values, raw space size and, with a problem, the valid "
      "space size (no GPU needed)",
      add_list_options, run_list);
});

}  // namespace

}  // namespace gt::cli
