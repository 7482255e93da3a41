// Reading an older row's description into the v9 columns (legacy_description.hpp).
#include "store/legacy_description.hpp"

#include <cctype>
#include <regex>
#include <sstream>
#include <utility>
#include <vector>

namespace gt {
namespace {

using Item = std::pair<std::string, std::string>;

// One item, "split-K 4 (reduction inplace)": the value starts at the first word that starts
// with a digit, else it is the last word; a second item may follow in parentheses.
bool read_item(const std::string& item, std::vector<Item>& out) {
  std::vector<std::string> words;
  std::istringstream ws(item);
  for (std::string w; ws >> w;) words.push_back(w);
  if (words.size() < 2) return false;
  size_t v = words.size() - 1;
  for (size_t j = 1; j < words.size(); ++j)
    if (std::isdigit(static_cast<unsigned char>(words[j][0]))) {
      v = j;
      break;
    }
  std::string name, value;
  for (size_t j = 0; j < words.size(); ++j) (j < v ? name : value) += (j == 0 || j == v ? "" : " ") + words[j];
  std::string inner;
  if (size_t open = value.find(" ("); open != std::string::npos && value.back() == ')') {
    inner = value.substr(open + 2, value.size() - open - 3);
    value.resize(open);
  }
  out.emplace_back(name, value);
  if (size_t sp = inner.rfind(' '); sp != std::string::npos) out.emplace_back(inner.substr(0, sp), inner.substr(sp + 1));
  return true;
}

}  // namespace

std::string params_from_description(const std::string& description) {
  static const std::regex head(R"((?:^|[\s;])algo (\d+): )");
  std::smatch m;
  if (!std::regex_search(description, m, head)) return "";
  std::vector<Item> items{{"algo", m[1].str()}};
  std::string rest = description.substr(size_t(m.position(0) + m.length(0)));
  rest = rest.substr(0, rest.find(';'));
  for (size_t i = 0; i < rest.size();) {
    size_t comma = rest.find(", ", i);
    if (!read_item(rest.substr(i, comma == std::string::npos ? std::string::npos : comma - i), items)) return "";
    i = comma == std::string::npos ? rest.size() : comma + 2;
  }
  if (items.size() < 3) return "";  // an algorithm without its attributes is not a config
  std::string out;
  for (auto& [name, value] : items) out += (out.empty() ? "" : ",") + name + "=" + value;
  return out;
}

std::optional<int32_t> rank_from_description(const std::string& description) {
  static const std::regex ranked(R"(heuristic rank (\d+))");
  std::smatch m;
  if (std::regex_search(description, m, ranked)) return int32_t(std::stol(m[1].str()));
  if (description.find("not among the heuristic's") != std::string::npos) return -1;
  return std::nullopt;
}

void fill_from_description(StoredRow& r) {
  if (r.params.empty()) {
    r.params = params_from_description(r.m.message);
    r.params_from = r.params.empty() ? "" : "description";
  }
  if (!r.heuristic_rank) r.heuristic_rank = rank_from_description(r.m.message);
}

}  // namespace gt
