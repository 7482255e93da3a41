// The store's winners: a problem's decided config per family and over every family.
#include "store/store_sql.hpp"

#include "base/errors.hpp"
#include "base/files.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <variant>

namespace gt {
namespace fs = std::filesystem;
using namespace store_sql;  // the store's SQL, shared by its files (store_sql.hpp)

// ---------------------------------------------------------------------------------------
// Winners

void Store::set_winner(const ResultKey& key, const std::string& family, const std::string& config_name,
                       int64_t row_id, const std::string& note, const Decision& decision) {
  if (impl_->readonly) throw RuntimeFailure(fmt::format("{}: the store is open read-only", impl_->path.string()));
  std::lock_guard lock(impl_->mu);
  Transaction t(impl_->db);
  auto row = impl_->row_by("id", row_id);
  if (!row) throw RuntimeFailure(fmt::format("set_winner: no row {} in {}", row_id, impl_->path.string()));
  if (row->m.status != Status::ok)
    throw RuntimeFailure(fmt::format("set_winner: row {} has status {}; only a verified, timed (ok) measurement can "
                                     "win", row_id, to_string(row->m.status)));
  if (row->key() != key)
    throw RuntimeFailure(fmt::format("set_winner: row {} is for '{}', not '{}'", row_id, row->key().text(), key.text()));
  if (family != kAllFamilies && row->family != family)
    throw RuntimeFailure(fmt::format("set_winner: row {} is of family '{}', not '{}'", row_id, row->family, family));
  if (row->config_name != config_name)
    throw RuntimeFailure(fmt::format("set_winner: row {} measured '{}', not '{}'", row_id, row->config_name,
                                     config_name));
  Winner w;
  w.key = key;
  w.family = family;
  w.config_name = config_name;
  w.row_id = row_id;
  w.row_uuid = row->row_uuid;
  w.decision = decision;
  w.note = note;
  std::tie(w.time_utc, w.time_unix) = utc_now();
  try {
    impl_->put_winner(w);
    t.commit();
  } catch (const RuntimeFailure& e) {
    throw StoreWriteError(fmt::format("{}: the winner of {} could not be stored: {}", impl_->path.string(), key.text(),
                                      e.what()));
  }
}

std::optional<Winner> Store::winner(const ResultKey& key, const std::string& family) const {
  std::lock_guard lock(impl_->mu);
  return impl_->winner(key, family);
}

std::vector<Winner> Store::winners_of(const ResultKey& key) const {
  std::lock_guard lock(impl_->mu);
  return impl_->winners_of(key);
}

std::vector<Winner> Store::winners(const std::optional<std::string>& device_name) const {
  std::lock_guard lock(impl_->mu);
  Where w;
  if (device_name) w.eq("w.device_name", *device_name);
  return impl_->query_winners(w.sql(), w);
}

int compare_versions(const std::string& a, const std::string& b) {
  // The runs of digits, without leading zeros: a longer run is a larger number.
  auto numbers = [](const std::string& s) {
    std::vector<std::string> out;
    for (size_t i = 0; i < s.size();) {
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      size_t z = i;
      while (z + 1 < j && s[z] == '0') ++z;
      out.push_back(s.substr(z, j - z));
      i = j;
    }
    return out;
  };
  auto na = numbers(a), nb = numbers(b);
  for (size_t i = 0; i < na.size() && i < nb.size(); ++i) {
    if (na[i].size() != nb[i].size()) return na[i].size() < nb[i].size() ? -1 : 1;
    if (int c = na[i].compare(nb[i]); c != 0) return c < 0 ? -1 : 1;
  }
  if (na.size() != nb.size()) return na.size() < nb.size() ? -1 : 1;
  int c = a.compare(b);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

bool winner_outranks(const Winner& a, const StoredRow& ra, const Winner& b, const StoredRow& rb) {
  const Provenance &pa = ra.prov, &pb = rb.prov;
  for (auto [x, y] : {std::pair{&pa.driver, &pb.driver}, {&pa.cuda_runtime, &pb.cuda_runtime},
                      {&pa.nvrtc, &pb.nvrtc}, {&pa.library, &pb.library},
                      {&pa.family_version, &pb.family_version}, {&pa.gemmtune_version, &pb.gemmtune_version}})
    if (int c = compare_versions(*x, *y); c != 0) return c > 0;
  if (pa.method_version != pb.method_version) return pa.method_version > pb.method_version;
  if (ra.time_unix != rb.time_unix) return ra.time_unix > rb.time_unix;
  if (a.time_unix != b.time_unix) return a.time_unix > b.time_unix;
  return std::tie(a.row_uuid, a.config_name, a.note, a.time_utc) > std::tie(b.row_uuid, b.config_name, b.note, b.time_utc);
}

}  // namespace gt
