// docs/cli.md is the command-line contract: every command and every flag it names must exist in
// the built CLI, as `gemmtune --help` and `gemmtune COMMAND --help` list them, and every command
// of the CLI has a section there. The flags are read from the page's code spans (`...`): in a
// command's section (### `gemmtune X`) a flag is X's or a global one; in a span that itself
// names a command (`gemmtune tune --replay FILE`) it is that command's; elsewhere it is a global
// flag or one of some command.
#include "test_util.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace {

using gt::test::run_command;

struct Help {
  std::set<std::string> flags;        // --long and -s names of the options
  std::vector<std::string> commands;  // subcommands (top level only)
};

// The options and subcommands CLI11 lists in a --help text.
Help parse_help(const std::string& text) {
  Help h;
  std::istringstream in(text);
  std::string line;
  bool in_commands = false;
  const std::regex option_line(R"(^\s+(-[A-Za-z0-9,-]+))");
  const std::regex command_line(R"(^  ([a-z][a-z0-9_]*)\s)");
  while (std::getline(in, line)) {
    if (line.rfind("Subcommands:", 0) == 0) {
      in_commands = true;
      continue;
    }
    if (line.empty()) in_commands = false;
    std::smatch m;
    if (in_commands && std::regex_search(line, m, command_line)) {
      h.commands.push_back(m[1]);
      continue;
    }
    if (std::regex_search(line, m, option_line)) {
      // "-o,--output" names two.
      std::string names = m[1];
      size_t i = 0;
      while (i <= names.size()) {
        size_t j = std::min(names.find(',', i), names.size());
        if (j > i) h.flags.insert(names.substr(i, j - i));
        i = j + 1;
      }
    }
  }
  return h;
}

Help help_of(const std::string& command) {
  auto r = run_command(fmt::format("'{}' {} --help", gt::test::gemmtune_binary().string(), command));
  INFO(command << ": " << r.out);
  REQUIRE(r.exit_code == 0);
  return parse_help(r.out);
}

// Where a flag of the page was seen, for the failure message.
struct Use {
  std::string flag, command, where;  // command: "" (a global flag or any command's)
};

// The page's named commands (`gemmtune X`) and flags, with the command each belongs to.
void scan_page(const std::string& page, std::vector<Use>& flags, std::vector<Use>& commands,
               std::set<std::string>& sections) {
  std::istringstream in(page);
  std::string line, section;
  int no = 0;
  bool fenced = false;
  const std::regex span("`([^`]+)`");
  const std::regex section_head(R"(^### `gemmtune ([a-z][a-z0-9_]*)`)");
  const std::regex named(R"((?:^|[\s(])gemmtune ([a-z][a-z0-9_]*))");
  const std::regex flag(R"((?:^|[\s(\[,])(--[a-z][a-z0-9-]*|-[A-Za-z])(?=$|[\s=\]),|]))");
  while (std::getline(in, line)) {
    ++no;
    if (line.rfind("```", 0) == 0) {
      fenced = !fenced;
      continue;
    }
    if (fenced) continue;
    std::smatch m;
    if (std::regex_search(line, m, section_head)) {
      section = m[1];
      sections.insert(section);
    } else if (line.rfind("## ", 0) == 0 || line.rfind("# ", 0) == 0) {
      section.clear();
    }
    const std::string where = fmt::format("docs/cli.md:{}", no);
    for (auto it = std::sregex_iterator(line.begin(), line.end(), span); it != std::sregex_iterator(); ++it) {
      const std::string text = (*it)[1];
      std::string command = section;
      std::smatch c;
      if (std::regex_search(text, c, named)) {
        command = c[1];
        commands.push_back({"", command, where});
      }
      for (auto f = std::sregex_iterator(text.begin(), text.end(), flag); f != std::sregex_iterator(); ++f)
        flags.push_back({(*f)[1], command, where});
    }
  }
}

}  // namespace

TEST_CASE("docs/cli.md names only commands and flags the CLI has, and every command has a section", "[cli][docs]") {
  const std::string page = gt::test::read_file(gt::test::source_dir() / "docs" / "cli.md");
  REQUIRE_FALSE(page.empty());
  const Help top = help_of("");
  REQUIRE(top.commands.size() >= 10);
  std::map<std::string, Help> per_command;
  std::set<std::string> any_command;
  for (auto& c : top.commands) {
    per_command[c] = help_of(c);
    any_command.insert(per_command[c].flags.begin(), per_command[c].flags.end());
  }

  std::vector<Use> flags, commands;
  std::set<std::string> sections;
  scan_page(page, flags, commands, sections);
  CHECK(flags.size() > 80);  // the page is read at all
  for (auto& u : commands) {
    INFO(u.where << ": gemmtune " << u.command);
    CHECK(per_command.count(u.command) == 1);
  }
  for (auto& u : flags) {
    INFO(u.where << ": " << u.flag << (u.command.empty() ? "" : " of gemmtune " + u.command));
    const bool global = top.flags.count(u.flag) > 0;
    if (u.command.empty()) {
      CHECK((global || any_command.count(u.flag) > 0));
    } else {
      REQUIRE(per_command.count(u.command) == 1);
      CHECK((global || per_command[u.command].flags.count(u.flag) > 0));
    }
  }
  for (auto& c : top.commands) {
    INFO("gemmtune " << c << " has no section (### `gemmtune " << c << "`) in docs/cli.md");
    CHECK(sections.count(c) == 1);
  }
}

TEST_CASE("the doc check reads flags and commands as the CLI prints them", "[cli][docs]") {
  // The parser itself, on text of known content: a check that cannot fail would pass a page
  // that names flags the CLI lacks.
  Help h = parse_help("Usage: x [OPTIONS]\n\nOptions:\n  -h,--help   Print\n  -o,--output TEXT=a  out\n"
                      "  --max-distance FLOAT=1.386 (ln 4)\n\nSubcommands:\n  tune   tunes\n  lookup   looks\n\nfoot\n");
  CHECK(h.flags == std::set<std::string>{"-h", "--help", "-o", "--output", "--max-distance"});
  CHECK(h.commands == std::vector<std::string>{"tune", "lookup"});
  std::vector<Use> flags, commands;
  std::set<std::string> sections;
  scan_page("## G\n| `--db FILE` | x |\n### `gemmtune export`\n| `-o FILE`, `--format toml\\|json` | y |\n"
            "see `gemmtune tune --replay FILE` and `--include-replay`\n```\n--not-a-flag\n```\n",
            flags, commands, sections);
  REQUIRE(flags.size() == 5);
  CHECK((flags[0].flag == "--db" && flags[0].command.empty()));
  CHECK((flags[1].flag == "-o" && flags[1].command == "export"));
  CHECK((flags[2].flag == "--format" && flags[2].command == "export"));
  CHECK((flags[3].flag == "--replay" && flags[3].command == "tune"));
  CHECK((flags[4].flag == "--include-replay" && flags[4].command == "export"));
  CHECK(sections == std::set<std::string>{"export"});
  REQUIRE(commands.size() == 2);
  CHECK(commands[0].command == "export");
  CHECK(commands[1].command == "tune");
}

TEST_CASE("every flag of every command is documented in docs/cli.md, in its section or among the shared ones", "[cli][docs]") {
  const std::string page = gt::test::read_file(gt::test::source_dir() / "docs" / "cli.md");
  REQUIRE_FALSE(page.empty());
  std::vector<Use> flags, commands;
  std::set<std::string> sections;
  scan_page(page, flags, commands, sections);
  std::set<std::pair<std::string, std::string>> documented;  // (command, flag)
  for (auto& u : flags) documented.insert({u.command, u.flag});
  const Help top = help_of("");
  for (auto& c : top.commands) {
    for (auto& f : help_of(c).flags) {
      if (f == "-h" || f == "--help" || top.flags.count(f)) continue;
      INFO("gemmtune " << c << " " << f << " is not in the section ### `gemmtune " << c << "` of docs/cli.md");
      // In the command's section, or among the options every problem-taking command shares.
      CHECK((documented.count({c, f}) == 1 || documented.count({"", f}) == 1));
    }
  }
}

TEST_CASE("docs/cli.md gives the table format version export writes", "[cli][docs]") {
  gt::test::TempDir tmp;
  const auto q = [](const std::filesystem::path& p) { return gt::test::shell_quote(p); };
  gt::test::write_file(tmp.path / "rec.json", gt::test::kToyRecording);
  const std::string bin = fmt::format("{} --quiet --db {}", q(gt::test::gemmtune_binary()), q(tmp.path / "r.db"));
  REQUIRE(run_command(bin + " tune --replay " + q(tmp.path / "rec.json") + " --shape 64x64x64").exit_code == 0);
  REQUIRE(run_command(bin + " export --include-replay -o " + q(tmp.path / "t.toml")).exit_code == 0);
  std::smatch written, documented;
  const std::string table = gt::test::read_file(tmp.path / "t.toml");
  const std::string page = gt::test::read_file(gt::test::source_dir() / "docs" / "cli.md");
  REQUIRE(std::regex_search(table, written, std::regex(R"(gemmtune_table = (\d+))")));
  REQUIRE(std::regex_search(page, documented, std::regex(R"(`gemmtune_table = (\d+)`)")));
  CHECK(documented[1].str() == written[1].str());
}
