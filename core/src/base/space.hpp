// A parameter space: named parameters with ordered value lists, constraints that give a
// reason, lazy indexed enumeration (a point is decoded from its index, nothing is
// materialised), neighbours for local search, canonical names and stable hashes.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gt {

struct Param {
  std::string name;
  std::string help;
  std::vector<int64_t> values;
  std::vector<std::string> labels;  // empty, or one per value
  size_t default_index = 0;

  // Text of the i-th value: its label or the number.
  std::string text(size_t i) const;
  std::optional<size_t> index_of(int64_t value) const;
  // Parse a value given as a label or a number.
  std::optional<size_t> parse(std::string_view s) const;
};

using Config = std::vector<int64_t>;  // one value per parameter, in parameter order

// nullopt when the config is fine, else why it is not.
using Constraint = std::function<std::optional<std::string>(const Config&)>;

class Space {
 public:
  Space() = default;
  Space(std::string family, std::string version, std::vector<Param> params);

  const std::string& family() const { return family_; }
  const std::string& version() const { return version_; }
  const std::vector<Param>& params() const { return params_; }
  size_t dims() const { return params_.size(); }

  void add_constraint(Constraint c) { constraints_.push_back(std::move(c)); }
  // First failing constraint's reason, or nullopt when valid.
  std::optional<std::string> check(const Config& c) const;
  bool valid(const Config& c) const { return !check(c); }

  // Number of raw points (product of value counts); saturates at UINT64_MAX.
  uint64_t raw_size() const;
  // Mixed-radix decoding: the first parameter varies slowest.
  Config at(uint64_t index) const;
  uint64_t index_of(const Config& c) const;
  // Per-parameter positions of a config's values in their lists.
  std::vector<size_t> positions(const Config& c) const;
  Config from_positions(const std::vector<size_t>& pos) const;

  // Configs that differ in one parameter by one step in its (ordered) value list.
  std::vector<Config> neighbours(const Config& c) const;
  Config default_config() const;

  // Canonical name that spells the whole config: family_p1V1_p2V2 (labels where given).
  std::string name(const Config& c) const;
  // "p1=V1,p2=V2": readable and parseable.
  std::string assignments(const Config& c) const;
  // "p1=V1 p2=V2": what a person reads in tables (tune, compare, lookup); parse() takes it too.
  std::string readable(const Config& c) const;
  // Parse a canonical name or "K=V,K=V" / "K=V K=V" (unnamed parameters keep their defaults).
  // Error message in the optional's absence is written to *error.
  std::optional<Config> parse(std::string_view text, std::string* error) const;
  // Stable hash of (family, version, name): the same on every machine and build.
  uint64_t hash(const Config& c) const;

  // Count of valid points, by enumeration (cost: raw_size() checks).
  uint64_t count_valid() const;

 private:
  std::string family_;
  std::string version_;
  std::vector<Param> params_;
  std::vector<Constraint> constraints_;
};

// "K=V,K=V" as a person reads it: "K=V K=V".
std::string readable_assignments(std::string_view assignments);
// A canonical name (family_p1V1_p2V2...) as "p1=V1,p2=V2", given the family's parameter names
// in order (values are taken as spelled); nullopt when the name does not spell them.
std::optional<std::string> assignments_from_name(std::string_view name, std::string_view family,
                                              const std::vector<std::string>& param_names);

// 64-bit hash of bytes (XXH3), stable across builds and machines.
uint64_t stable_hash(std::string_view bytes);
std::string hex64(uint64_t h);

}  // namespace gt
