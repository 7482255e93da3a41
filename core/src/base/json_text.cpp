#include "base/json_text.hpp"

#include "base/errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace gt {

std::pair<size_t, size_t> line_col(std::string_view text, size_t byte) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < std::min(byte, text.size()); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

namespace {

// Thrown from the parser's callback at the second appearance of a key in one object.
struct DuplicateKey {
  std::string key;
  size_t occurrence;  // how many times the document had named this key so far, this one included
};

// The byte offset of the `occurrence`-th key token equal to `key` (after unescaping), in
// document order. The parser has read the document that far, so its strings are well formed.
std::optional<size_t> key_offset(std::string_view text, const std::string& key, size_t occurrence) {
  size_t seen = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '"') continue;
    size_t j = i + 1;
    while (j < text.size() && text[j] != '"') j += text[j] == '\\' ? 2 : 1;
    if (j >= text.size()) return std::nullopt;
    size_t k = j + 1;
    while (k < text.size() && (text[k] == ' ' || text[k] == '\t' || text[k] == '\r' || text[k] == '\n')) ++k;
    if (k < text.size() && text[k] == ':') {
      std::string token(text.substr(i, j - i + 1));
      if (token == "\"" + key + "\"" || nlohmann::json::parse(token, nullptr, false) == key)
        if (++seen == occurrence) return i;
    }
    i = j;
  }
  return std::nullopt;
}

}  // namespace

nlohmann::json parse_json_text(std::string_view text, const std::string& origin) {
  std::vector<std::set<std::string>> open;  // the keys of each object being read, innermost last
  std::map<std::string, size_t> named;      // every key's appearances so far
  auto strict = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start) open.emplace_back();
    if (event == E::object_end && !open.empty()) open.pop_back();
    if (event == E::key) {
      const std::string& k = parsed.get_ref<const std::string&>();
      const size_t n = ++named[k];
      if (!open.empty() && !open.back().insert(k).second) throw DuplicateKey{k, n};
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), strict);
  } catch (const DuplicateKey& d) {
    std::string at = origin;
    if (auto pos = key_offset(text, d.key, d.occurrence)) {
      auto [line, col] = line_col(text, *pos);
      at = fmt::format("{}:{}:{}", origin, line, col);
    }
    throw InputError(fmt::format("{}: not valid JSON: the key '{}' appears twice in one object", at, d.key));
  } catch (const nlohmann::json::parse_error& e) {
    auto [line, col] = line_col(text, e.byte > 0 ? e.byte - 1 : 0);
    std::string what = e.what();
    // nlohmann's message repeats its own position; keep the part after "syntax error".
    if (auto p = what.find("syntax error"); p != std::string::npos) what = what.substr(p);
    throw InputError(fmt::format("{}:{}:{}: not valid JSON: {}", origin, line, col, what));
  } catch (const nlohmann::json::out_of_range& e) {
    // A number beyond a double's range (1e999) is reported this way, without a position:
    // the message quotes the number, so find it.
    std::string what = e.what();
    if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
    std::string at = origin;
    if (auto q = what.find('\''); q != std::string::npos && what.size() > q + 2)
      if (auto pos = text.find(what.substr(q + 1, what.size() - q - 2)); pos != std::string_view::npos) {
        auto [line, col] = line_col(text, pos);
        at = fmt::format("{}:{}:{}", origin, line, col);
      }
    throw InputError(fmt::format("{}: not valid JSON: {}", at, what));
  }
}

}  // namespace gt
