// gemmtune merge: combine result stores (e.g. one per shard or per host) into one.
#include "cli.hpp"
#include "store/store.hpp"

namespace gt::cli {

static Command add_merge(CLI::App& app, Globals& g);
static Registrar reg_merge(90, add_merge);

static Command add_merge(CLI::App& app, Globals& g) {
  auto* sub = app.add_subcommand("merge", "combines stores: rows de-duplicated by their identity, conflicting winners "
                                          "settled by provenance (newer toolchain, then newer measurement); "
                                          "merging is associative and idempotent (no GPU needed)");
  static std::vector<std::string> inputs;
  static std::string output;
  sub->add_option("stores", inputs, "stores to merge")->required()->check(CLI::ExistingFile);
  sub->add_option("-o,--output", output, "the merged store (created, or merged into when it exists)")->required();
  return {sub, [&g] {
            // Every input is opened (and so validated) before the output is touched; none may be
            // the output, by any name (files.hpp).
            std::vector<FileRole> files = {{FileUse::store, "-o", output}};
            for (auto& i : inputs) files.push_back({FileUse::store_readonly, "merge's input", i});
            check_file_roles(files);
            std::vector<std::filesystem::path> in(inputs.begin(), inputs.end());
            int64_t added = merge_stores(in, output);
            Store out = Store::open(output);
            std::string why;
            if (!out.check_integrity(&why)) throw RuntimeFailure("the merged store fails its integrity check: " + why);
            if (g.json)
              print_json({{"output", output}, {"inputs", inputs}, {"rows_added", added}, {"rows", out.count()},
                          {"winners", out.winners().size()}});
            else
              fmt::print("merged {} store(s) into {}: {} rows added, {} rows, {} winners\n", in.size(), output, added,
                         out.count(), out.winners().size());
            return 0;
          }};
}

}  // namespace gt::cli
