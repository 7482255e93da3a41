#include "table/untuned.hpp"

#include "base/files.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace gt {

std::string untuned_job_block(const Problem& p) {
  std::string o = fmt::format("[[problems]]  # {} lda={} ldb={} ldc={}\n", p.key(), p.lda, p.ldb, p.ldc);
  o += fmt::format("shapes = [\"{}\"]\n", p.shape());
  o += fmt::format("dtypes = [\"{}\"]\n", in_types_text(p.in, p.in_b));
  o += fmt::format("out_dtype = \"{}\"\n", to_string(p.out));
  o += fmt::format("layouts = [\"{}\"]\n", to_string(p.layout));
  if (p.scale != ScaleMode::none) o += fmt::format("scales = [\"{}\"]\n", to_string(p.scale));
  if (p.constant) {  // the operands the program declared constant: the re-tune times them so
    std::vector<std::string> ops;
    if (p.constant & kConstantA) ops.push_back("\"a\"");
    if (p.constant & kConstantB) ops.push_back("\"b\"");
    o += fmt::format("constant = [{}]\n", fmt::join(ops, ", "));
  }
  o += fmt::format("lda = {}\nldb = {}\nldc = {}\nalign = {}\n", p.lda, p.ldb, p.ldc, p.align);
  return o;
}

bool record_untuned(const std::filesystem::path& file, const Problem& p) {
  const std::string block = untuned_job_block(p);
  const std::string first_line = block.substr(0, block.find('\n') + 1);
  bool added = false;
  append_locked(file, [&](const std::string& held) -> std::string {
    if (held.find(first_line) != std::string::npos) return "";
    added = true;
    std::string text;
    if (held.empty())
      text = "# Problems a program ran that its gemmtune table held no exact entry for, recorded by the runtime\n"
             "# (GEMMTUNE_RECORD_UNTUNED). Tune them with `gemmtune tune --config THIS_FILE`, then merge the store\n"
             "# with the old one and export (docs/using-tables.md, \"Record, then tune\").\n";
    else if (held.back() != '\n')
      text = "\n";
    return text + "\n" + block;
  });
  return added;
}

}  // namespace gt
