// libFuzzer target for the lookup-table loader (core/src/table/table.cpp): any bytes read as a
// TOML or JSON table must either load or be refused with an InputError. A table that
// loads must then be usable without surprises: it serialises to every format without
// throwing, TOML and JSON round-trip it exactly (table.hpp promises that), and lookups
// answer or refuse with an InputError. JSON that names a key twice in one object is refused,
// as TOML refuses it (the last one silently winning would be another table than written).
// Anything else (another exception type, a crash, a sanitizer report, a broken round trip, a
// duplicate key accepted) is a bug.
#include "base/errors.hpp"
#include "table/table.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

[[noreturn]] void broken(const std::string& what) {
  std::fprintf(stderr, "fuzz_table: %s\n", what.c_str());
  std::abort();
}

void round_trip(const gt::LookupTable& t, gt::TableFormat f) {
  std::string text = t.serialize(f);
  gt::LookupTable back;
  try {
    back = gt::LookupTable::parse(text, f, "round-trip");
  } catch (const gt::InputError& e) {
    broken(std::string("a loaded table, written as ") + gt::to_string(f) + ", does not read back: " + e.what() +
           "\n--- written:\n" + text);
  }
  if (!(back.entries == t.entries) || !(back.evidence == t.evidence) || !(back.info == t.info))
    broken(std::string("a loaded table changes in a ") + gt::to_string(f) + " round trip\n--- written:\n" + text);
}

void use(const gt::LookupTable& t) {
  round_trip(t, gt::TableFormat::toml);
  round_trip(t, gt::TableFormat::json);
  (void)t.serialize(gt::TableFormat::csv);
  (void)t.serialize(gt::TableFormat::cpp);
  (void)t.devices();
  // Lookups: each entry's own key must find that entry (keys are unique per device), and a
  // fixed problem must find something or be refused.
  size_t n = 0;
  for (auto& e : t.entries) {
    if (++n > 8) break;
    gt::Problem p = gt::problem_of(e);
    if (p.align != e.key.align) continue;  // padding cannot always reach the key's alignment
    auto r = t.lookup(p, e.key.device_name);
    if (r.kind != gt::MatchKind::exact || !r.entry || !(r.entry->key == e.key))
      broken("a lookup of an entry's own key did not find it: " + e.text());
  }
  try {
    (void)t.lookup(gt::Problem::make(1000, 1000, 1000, gt::DType::f32, gt::DType::f32, gt::Layout::nn));
  } catch (const gt::InputError&) {
  }
}

// Whether `text` is JSON that names some key twice in one object: nlohmann's lenient parser
// reports every key it reads and keeps one of each, so the document then holds fewer.
bool has_duplicate_key(std::string_view text) {
  size_t keys_read = 0;
  auto count = [&](int, nlohmann::json::parse_event_t e, nlohmann::json&) {
    keys_read += e == nlohmann::json::parse_event_t::key;
    return true;
  };
  nlohmann::json doc = nlohmann::json::parse(text.begin(), text.end(), count, false);
  if (doc.is_discarded()) return false;
  size_t kept = 0;
  std::vector<const nlohmann::json*> todo = {&doc};
  while (!todo.empty()) {
    const nlohmann::json* j = todo.back();
    todo.pop_back();
    if (j->is_object()) kept += j->size();
    if (j->is_structured())
      for (auto& x : *j) todo.push_back(&x);
  }
  return keys_read > kept;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  // Both readers see every input: LookupTable::load picks one by the first character,
  // but a mutated input flips between them often enough that both are worth exploring.
  for (gt::TableFormat f : {gt::TableFormat::toml, gt::TableFormat::json}) {
    gt::LookupTable t;
    try {
      t = gt::LookupTable::parse(text, f, "fuzz");
    } catch (const gt::InputError&) {
      continue;
    }
    if (f == gt::TableFormat::json && has_duplicate_key(text)) broken("a JSON table naming a key twice was accepted");
    use(t);
  }
  return 0;
}
