// gemmtune merge: combine result stores (e.g. one per shard or per host) into one.
#include "cli.hpp"
#include "store/store.hpp"

namespace gt::cli {

namespace {

struct MergeArgs {
  std::vector<std::string> inputs;
  std::string output;
};

void add_merge_options(CLI::App* sub, MergeArgs& a) {
  sub->add_option("stores", a.inputs, "stores to merge")->required()->check(CLI::ExistingFile);
  sub->add_option("-o,--output", a.output, "the merged store (created, or merged into when it exists)")->required();
}

int run_merge(Globals& g, const MergeArgs& a) {
  // Every input is opened (and so validated) before the output is touched; none may be
  // the output, by any name (files.hpp).
  std::vector<FileRole> files = {{FileUse::store, "-o", a.output}};
  for (auto& i : a.inputs) files.push_back({FileUse::store_readonly, "merge's input", i});
  check_file_roles(files);
  std::vector<std::filesystem::path> in(a.inputs.begin(), a.inputs.end());
  int64_t added = merge_stores(in, a.output);
  Store out = Store::open(a.output);
  std::string why;
  if (!out.check_integrity(&why)) throw RuntimeFailure("the merged store fails its integrity check: " + why);
  if (g.json)
    print_json({{"output", a.output}, {"inputs", a.inputs}, {"rows_added", added}, {"rows", out.count()},
                {"winners", out.winners().size()}});
  else
    fmt::print("merged {} store(s) into {}: {} rows added, {} rows, {} winners\n", in.size(), a.output, added,
               out.count(), out.winners().size());
  return 0;
}

Registrar reg_merge(90, [](CLI::App& app, Globals& g) {
  return make_command<MergeArgs>(app, g, "merge",
      "combines stores: rows de-duplicated by their identity, conflicting winners settled by provenance"
      " (newer toolchain, then newer measurement); merging is associative and idempotent (no GPU "
      "needed)",
      add_merge_options, run_merge);
});

}  // namespace

}  // namespace gt::cli
