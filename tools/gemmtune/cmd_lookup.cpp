// gemmtune lookup: the config to run for a problem from an exported table, and whether it
// was an exact match, a nearest tuned shape or the default; without a problem, what the table
// holds. Needs no GPU.
#include "cli.hpp"
#include "session.hpp"
#include "table.hpp"

namespace gt::cli {

static Command add_lookup(CLI::App& app, Globals& g);
static Registrar reg_lookup(76, add_lookup);

// Without a problem: what the table holds (one device's entries when given), one line per entry
// (JSON: the header and entries, each entry as exported; not itself a table file).
static int list_table(LookupTable t, const std::string& device, bool json) {
  if (!device.empty()) {
    std::vector<TableEntry> mine;
    for (auto& e : t.entries)
      if (e.key.device_name == device) mine.push_back(e);
    if (mine.empty() && !t.entries.empty()) {
      std::string have;
      for (auto& d : t.devices()) have += (have.empty() ? "'" : ", '") + d + "'";
      throw InputError(fmt::format("--device: {} has no entries for '{}' (it has {})", t.origin, device, have));
    }
    t.entries = std::move(mine);
  }
  if (json) {
    nlohmann::json j;
    j["table"] = t.origin;
    j["generated_at"] = t.info.generated_at;
    j["source"] = t.info.source;
    j["entries"] = t.entries;
    print_json(j);
    return 0;
  }
  fmt::print("{}: {} entr{}{}{}\n", t.origin, t.entries.size(), t.entries.size() == 1 ? "y" : "ies",
             t.info.generated_at.empty() ? "" : ", generated " + t.info.generated_at,
             t.info.source.empty() ? "" : " from " + t.info.source);
  if (t.entries.empty()) return 0;
  size_t w = 3;
  for (const TableEntry& e : t.entries) w = std::max(w, e.key.text().size());
  fmt::print("  {:<{}} {:<14} {:>11} {:>9}  {}\n", "key", w, "family", "time us", "TFLOP/s", "config");
  for (const TableEntry& e : t.entries)
    fmt::print("  {:<{}} {:<14} {:>11.3f} {:>9.2f}  {}\n", e.key.text(), w, e.family, e.time_us, e.tflops, e.config);
  fmt::print("(give --shape and --dtype to ask it for a problem)\n");
  return 0;
}

static Command add_lookup(CLI::App& app, Globals& g) {
  auto* sub = app.add_subcommand("lookup", "the config to run for a problem from an exported table (TOML or JSON), "
                                           "and whether it was an exact match, a nearest shape or the default; "
                                           "without --shape, the table's entries (no GPU)");
  static std::string table, device, arch, default_family = "naive";
  static int align = 0;
  static ProblemArgs pa;
  sub->add_option("--table", table, "the table (TOML or JSON, as `gemmtune export` writes it)")->required();
  sub->add_option("--device", device,
                  "use this device's entries (default: the first GPU's name when there is one, else every entry; "
                  "without --shape, every entry)");
  sub->add_option("--align", align,
                  "alignment of the operands in bytes (1, 2, 4, 8, 16): the largest power of two dividing every "
                  "base pointer and leading dimension times the element size (default: from the tight leading "
                  "dimensions, pointers from cudaMalloc)");
  sub->add_option("--arch", arch, "architecture whose limits decide what a config can run (default: the GPU's, else "
                                  "sm_90)");
  sub->add_option("--default-family", default_family,
                  "family whose default config runs what no entry serves when cuBLASLt's heuristic cannot answer")
      ->default_str("naive");
  add_problem_options(sub, pa);
  return {sub, [&g, sub] {
            if (!pa.given() && sub->count("--shape") == 0) {
              for (const char* flag : {"--dtype", "--out-dtype", "--layout", "--align", "--arch", "--default-family"})
                if (sub->count(flag) > 0)
                  throw InputError(fmt::format("{} is about a problem: give --shape too (without it lookup lists "
                                               "the table)", flag));
              return list_table(LookupTable::load(table), device, g.json);
            }
            Problem p = pa.resolve();
            // A name given on the command line that is unknown fails now, not only when the default
            // is needed; the built-in one (naive) only when it is needed and not loaded.
            if (sub->count("--default-family") > 0)
              require_known_family(default_family, g.plugins().names(), "--default-family", "");
            if (align != 0) {
              if (align < 1 || align > 16 || (align & (align - 1)))
                throw InputError(fmt::format("--align: {} is not 1, 2, 4, 8 or 16", align));
              if (align > p.align)
                throw InputError(fmt::format("--align: {} bytes is more than the leading dimensions of {} allow ({})",
                                             align, p.shape(), p.align));
              p.align = align;
            }
            LookupTable t = LookupTable::load(table);
            std::optional<std::string> dev;
            if (!device.empty())
              dev = device;
            else if (device_count() > 0)
              dev = device_info(0).name;
            std::string arch_used;
            gt_device lim = limits_for(arch, &arch_used);
            const PluginRegistry& reg = g.plugins();
            LookupResult r = t.lookup(p, dev, plugin_can_implement(reg, lim), plugin_default(reg, lim, default_family),
                                      plugin_transfer(reg, lim));

            std::vector<std::string> notes;
            if (!r.device_note.empty()) notes.push_back(r.device_note);
            std::string params = r.params;
            if (const Family* fam = reg.find(r.family)) {
              if (r.entry && !r.entry->family_version.empty() && r.entry->family_version != fam->version())
                notes.push_back(fmt::format("tuned with {} version {}, the loaded plugin is version {}: its time may "
                                            "have changed",
                                            r.family, r.entry->family_version, fam->version()));
              if (params.empty()) {
                try {
                  params = resolve_choice(reg, lim, r, p).params;
                } catch (const std::exception&) {
                  // The space needs a GPU (cuBLASLt): the config name alone says it all.
                }
              }
            } else {
              notes.push_back(fmt::format("family '{}' is not loaded here: the config was not checked against it",
                                          r.family));
            }

            if (g.json) {
              nlohmann::json j;
              j["problem"] = problem_to_json(p);
              j["device"] = dev ? nlohmann::json(*dev) : nlohmann::json();
              j["arch"] = arch_used;
              j["match"] = to_string(r.kind);
              j["how"] = r.how;
              j["family"] = r.family;
              j["config"] = r.config;
              j["params"] = params;
              j["distance"] = r.distance;
              j["transferred"] = r.transferred.empty() ? nlohmann::json() : nlohmann::json(r.transferred);
              j["unchecked"] = r.unchecked.empty() ? nlohmann::json() : nlohmann::json(r.unchecked);
              j["entry"] = r.entry ? nlohmann::json(*r.entry) : nlohmann::json();
              nlohmann::json passed = nlohmann::json::array();
              for (auto& [e, why] : r.passed_over) passed.push_back({{"entry", e}, {"reason", why}});
              j["passed_over"] = passed;
              j["notes"] = notes;
              j["table"] = table;
              print_json(j);
              return 0;
            }
            fmt::print("{}\n", r.config);
            fmt::print("  family: {}{}\n", r.family, params.empty() ? "" : "  (" + params + ")");
            fmt::print("  match:  {}", r.how);
            if (r.kind == MatchKind::nearest) fmt::print(", log-space distance {:.3f}", r.distance);
            fmt::print("  for {}{}\n", p.key(), dev ? " on " + *dev : "");
            if (r.entry) {
              const TableEntry& e = *r.entry;
              fmt::print("  tuned:  {:.3f} us, {:.2f} TFLOP/s at {}\n", e.time_us, e.tflops, e.key.text());
              if (!r.transferred.empty())
                fmt::print("          with {} ({} at that shape, not the config above)\n", e.config, r.transferred);
              std::string prov;
              auto add = [&prov](const char* what, const std::string& v) {
                if (!v.empty()) prov += fmt::format("{}{} {}", prov.empty() ? "" : ", ", what, v);
              };
              add("measured", e.measured_at);
              add("driver", e.driver);
              add("CUDA runtime", e.cuda_runtime);
              add("NVRTC", e.nvrtc);
              add("library", e.library);
              add("gemmtune", e.gemmtune_version);
              if (!prov.empty()) fmt::print("          ({})\n", prov);
            }
            if (!r.unchecked.empty())
              fmt::print("  note: whether this config can run {} was not checked: {} (on a machine with a GPU the "
                         "lookup checks it{})\n",
                         p.key(), r.unchecked,
                         r.family == "cublaslt" ? ", and may answer with cuBLASLt's pick for this shape instead" : "");
            for (auto& n : notes) fmt::print("  note: {}\n", n);
            if (!r.passed_over.empty()) {
              fmt::print("  passed over ({} entr{}, nearest first):\n", r.passed_over.size(),
                         r.passed_over.size() == 1 ? "y" : "ies");
              for (size_t i = 0; i < r.passed_over.size() && i < 5; ++i)
                fmt::print("    {}: {}\n", r.passed_over[i].first, r.passed_over[i].second);
              if (r.passed_over.size() > 5) fmt::print("    ... and {} more (--json lists them all)\n", r.passed_over.size() - 5);
            }
            return 0;
          }};
}

}  // namespace gt::cli
