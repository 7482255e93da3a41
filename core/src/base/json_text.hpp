// Reading a JSON document that a user hands gemmtune (a lookup table, a replay recording):
// one strict reader, so every JSON input is refused the same way. nlohmann's parser keeps the
// last of two equal keys in an object without a word; TOML refuses that, and so does this
// reader: `{"m": 64, "m": 4096}` is an error, not a table for M = 4096.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace gt {

// The document in `text`; InputError "ORIGIN:LINE:COL: not valid JSON: ..." for a syntax
// error, a number beyond a double's range, or a key that appears twice in one object (named
// with the line and column of its second appearance).
nlohmann::json parse_json_text(std::string_view text, const std::string& origin);

// Line and column (both from 1) of a byte offset in `text`.
std::pair<size_t, size_t> line_col(std::string_view text, size_t byte);

}  // namespace gt
