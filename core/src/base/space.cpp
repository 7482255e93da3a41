#include "base/space.hpp"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <charconv>
#include <limits>

namespace gt {

uint64_t stable_hash(std::string_view bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }
std::string hex64(uint64_t h) { return fmt::format("{:016x}", h); }

std::string Param::text(size_t i) const {
  if (!labels.empty()) return labels.at(i);
  return std::to_string(values.at(i));
}

std::optional<size_t> Param::index_of(int64_t value) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i] == value) return i;
  return std::nullopt;
}

std::optional<size_t> Param::parse(std::string_view s) const {
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] == s) return i;
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return index_of(v);
}

Space::Space(std::string family, std::string version, std::vector<Param> params)
    : family_(std::move(family)), version_(std::move(version)), params_(std::move(params)) {}

std::optional<std::string> Space::check(const Config& c) const {
  if (c.size() != params_.size())
    return fmt::format("config has {} values, the space has {} parameters", c.size(), params_.size());
  for (size_t i = 0; i < params_.size(); ++i)
    if (!params_[i].index_of(c[i]))
      return fmt::format("{}={} is not one of its values", params_[i].name, c[i]);
  for (auto& con : constraints_)
    if (auto why = con(c)) return why;
  return std::nullopt;
}

uint64_t Space::raw_size() const {
  if (params_.empty()) return 0;
  uint64_t n = 1;
  for (auto& p : params_) {
    if (p.values.empty()) return 0;
    if (n > std::numeric_limits<uint64_t>::max() / p.values.size())
      return std::numeric_limits<uint64_t>::max();
    n *= p.values.size();
  }
  return n;
}

Config Space::at(uint64_t index) const {
  Config c(params_.size());
  for (size_t i = params_.size(); i-- > 0;) {
    uint64_t r = params_[i].values.size();
    c[i] = params_[i].values[index % r];
    index /= r;
  }
  return c;
}

std::vector<size_t> Space::positions(const Config& c) const {
  std::vector<size_t> pos(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    auto j = params_[i].index_of(c.at(i));
    if (!j) throw std::invalid_argument(fmt::format("{}={} is not in the space", params_[i].name, c[i]));
    pos[i] = *j;
  }
  return pos;
}

Config Space::from_positions(const std::vector<size_t>& pos) const {
  Config c(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) c[i] = params_[i].values.at(pos.at(i));
  return c;
}

uint64_t Space::index_of(const Config& c) const {
  auto pos = positions(c);
  uint64_t idx = 0;
  for (size_t i = 0; i < params_.size(); ++i) idx = idx * params_[i].values.size() + pos[i];
  return idx;
}

std::vector<Config> Space::neighbours(const Config& c) const {
  auto pos = positions(c);
  std::vector<Config> out;
  for (size_t i = 0; i < params_.size(); ++i) {
    for (int d : {-1, +1}) {
      if ((d < 0 && pos[i] == 0) || (d > 0 && pos[i] + 1 >= params_[i].values.size())) continue;
      Config n = c;
      n[i] = params_[i].values[pos[i] + size_t(d)];
      out.push_back(std::move(n));
    }
  }
  return out;
}

Config Space::default_config() const {
  Config c(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) c[i] = params_[i].values.at(params_[i].default_index);
  return c;
}

std::string Space::name(const Config& c) const {
  std::string s = family_;
  auto pos = positions(c);
  for (size_t i = 0; i < params_.size(); ++i) s += fmt::format("_{}{}", params_[i].name, params_[i].text(pos[i]));
  return s;
}

std::string Space::assignments(const Config& c) const {
  std::string s;
  auto pos = positions(c);
  for (size_t i = 0; i < params_.size(); ++i)
    s += fmt::format("{}{}={}", i ? "," : "", params_[i].name, params_[i].text(pos[i]));
  return s;
}

std::string Space::readable(const Config& c) const { return readable_assignments(assignments(c)); }

std::string readable_assignments(std::string_view assignments) {
  std::string s(assignments);
  std::replace(s.begin(), s.end(), ',', ' ');
  return s;
}

std::optional<std::string> assignments_from_name(std::string_view name, std::string_view family,
                                              const std::vector<std::string>& param_names) {
  if (param_names.empty() || name.substr(0, family.size()) != family) return std::nullopt;
  std::string_view rest = name.substr(family.size());
  std::string out;
  for (size_t i = 0; i < param_names.size(); ++i) {
    const std::string head = "_" + param_names[i];
    if (rest.substr(0, head.size()) != head) return std::nullopt;
    rest.remove_prefix(head.size());
    size_t end = i + 1 < param_names.size() ? rest.find("_" + param_names[i + 1]) : rest.size();
    if (end == std::string_view::npos || end == 0) return std::nullopt;
    out += fmt::format("{}{}={}", i ? "," : "", param_names[i], rest.substr(0, end));
    rest.remove_prefix(end);
  }
  if (!rest.empty()) return std::nullopt;
  return out;
}

std::optional<Config> Space::parse(std::string_view text, std::string* error) const {
  auto fail = [&](std::string msg) -> std::optional<Config> {
    if (error) *error = std::move(msg);
    return std::nullopt;
  };
  if (text.find('=') != std::string_view::npos) {
    Config c = default_config();
    std::vector<bool> seen(params_.size(), false);
    size_t pos = 0;
    while (pos <= text.size()) {
      // Items are separated by commas (the assignments form) or spaces (the readable one).
      size_t end = text.find_first_of(", \t", pos);
      if (end == std::string_view::npos) end = text.size();
      std::string_view item = text.substr(pos, end - pos);
      pos = end + 1;
      if (item.empty()) continue;
      size_t eq = item.find('=');
      if (eq == std::string_view::npos) return fail(fmt::format("'{}' is not KEY=VALUE", item));
      std::string_view key = item.substr(0, eq), val = item.substr(eq + 1);
      size_t pi = params_.size();
      for (size_t i = 0; i < params_.size(); ++i)
        if (params_[i].name == key) pi = i;
      if (pi == params_.size()) {
        std::string known;
        for (auto& p : params_) known += (known.empty() ? "" : ", ") + p.name;
        return fail(fmt::format("{} has no parameter '{}' (its parameters: {})", family_, key, known));
      }
      if (seen[pi]) return fail(fmt::format("parameter '{}' given twice", key));
      seen[pi] = true;
      auto vi = params_[pi].parse(val);
      if (!vi) {
        std::string vals;
        for (size_t j = 0; j < params_[pi].values.size(); ++j) vals += (j ? ", " : "") + params_[pi].text(j);
        return fail(fmt::format("{}={}: not one of its values ({})", key, val, vals));
      }
      c[pi] = params_[pi].values[*vi];
    }
    return c;
  }
  // A canonical name: family_p1V1_p2V2... Parameter names may contain '_', so match greedily
  // against the known names in order.
  std::string_view rest = text;
  if (rest.substr(0, family_.size()) != family_)
    return fail(fmt::format("'{}' does not start with the family name '{}'", text, family_));
  rest.remove_prefix(family_.size());
  Config c(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    std::string head = "_" + params_[i].name;
    if (rest.substr(0, head.size()) != head)
      return fail(fmt::format("'{}': expected '{}' next, at '{}'", text, head, rest));
    rest.remove_prefix(head.size());
    // The value runs to the next "_<name of the next parameter>" or the end.
    size_t end = rest.size();
    if (i + 1 < params_.size()) {
      std::string next = "_" + params_[i + 1].name;
      end = rest.find(next);
      if (end == std::string_view::npos)
        return fail(fmt::format("'{}': parameter '{}' is missing", text, params_[i + 1].name));
    }
    auto vi = params_[i].parse(rest.substr(0, end));
    if (!vi) return fail(fmt::format("'{}': {}={} is not one of its values", text, params_[i].name, rest.substr(0, end)));
    c[i] = params_[i].values[*vi];
    rest.remove_prefix(end);
  }
  if (!rest.empty()) return fail(fmt::format("'{}': unexpected trailing '{}'", text, rest));
  return c;
}

uint64_t Space::hash(const Config& c) const {
  return stable_hash(fmt::format("{}\n{}\n{}", family_, version_, name(c)));
}

uint64_t Space::count_valid() const {
  uint64_t n = 0, raw = raw_size();
  for (uint64_t i = 0; i < raw; ++i)
    if (valid(at(i))) ++n;
  return n;
}

}  // namespace gt
