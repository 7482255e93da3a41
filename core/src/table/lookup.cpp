// The answer for a problem: the lookup rule's steps (exact, nearest, transferred, adapted, the defaults) and their backing.
#include "table/table.hpp"

#include "gpu/device.hpp"
#include "base/errors.hpp"
#include "base/files.hpp"
#include "base/json_text.hpp"
#include "measure/provenance.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include "base/toml.hpp"

#include <algorithm>
#include <cmath>
#include <cctype>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <unistd.h>
#include <variant>

namespace gt {
namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------
// Lookup

namespace {

std::string quoted_list(const std::vector<std::string>& xs) {
  std::string s;
  for (auto& x : xs) s += (s.empty() ? "'" : ", '") + x + "'";
  return s;
}

// Step 0's first half: whose entries are candidates (see LookupTable::lookup).
std::vector<const TableEntry*> candidate_pool(const LookupTable& t, const LookupPolicy& policy, LookupResult& r) {
  std::vector<const TableEntry*> pool;
  auto take = [&](auto&& keep) {
    for (auto& e : t.entries)
      if (keep(e)) pool.push_back(&e);
    return !pool.empty();
  };
  if (policy.device) {
    r.tier = Tier::device;
    if (take([&](const TableEntry& e) { return e.key.device_name == *policy.device; }) || t.entries.empty())
      return pool;
    if (policy.exact_device) {
      r.device_note = fmt::format("the table has no entries for '{}' (it has {}), and an exact device match was asked "
                                  "for",
                                  *policy.device, quoted_list(t.devices()));
      return pool;
    }
  }
  if (!policy.arch.empty() && take([&](const TableEntry& e) { return e.arch == policy.arch; })) {
    r.tier = Tier::arch;
    if (policy.device) {
      std::set<std::string> from;
      for (auto* e : pool) from.insert(e->key.device_name);
      r.device_note = fmt::format("the table has no entries for '{}'; entries measured on the same architecture ({}: "
                                  "{}) were used",
                                  *policy.device, policy.arch, quoted_list({from.begin(), from.end()}));
    }
    return pool;
  }
  r.tier = Tier::any;
  take([](const TableEntry&) { return true; });
  if (policy.device)
    r.device_note = fmt::format("the table has no entries for '{}' (it has {}){}; entries of every device were "
                                "considered",
                                *policy.device, quoted_list(t.devices()),
                                policy.arch.empty() ? "" : fmt::format(", none measured on {}", policy.arch));
  else if (!policy.arch.empty() && !t.entries.empty())
    r.device_note = fmt::format("no entry was measured on {}; entries of every architecture were considered",
                                policy.arch);
  return pool;
}

struct Candidate {
  const TableEntry* e;
  double d;
};

// Step 0's second half: the pool's entries of the problem's class, nearest first; at equal
// distance (mirror-image shapes, or one key on several devices) the faster entry, then the key
// order: deterministic. An entry timed with constant operands the call did not declare constant
// is passed over (its time left out the copies such a call pays each time).
std::vector<Candidate> candidates_for(const std::vector<const TableEntry*>& pool, const Problem& p, LookupResult& r) {
  std::vector<Candidate> cands;
  for (const TableEntry* e : pool)
    if (e->key.in == p.in && e->key.in_b == p.in_b && e->key.out == p.out && e->key.layout == p.layout &&
        e->key.align == p.align && e->key.scale == p.scale) {
      if (const int32_t undeclared = e->key.constant & ~p.constant) {
        r.passed_over.emplace_back(e->text(), fmt::format("timed with {} constant (copied once, not per call); the "
                                                          "call did not declare {} constant",
                                                          constant_text(undeclared), constant_text(undeclared)));
        continue;
      }
      cands.push_back({e, shape_distance(p.m, p.n, p.k, e->key.m, e->key.n, e->key.k)});
    }
  std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
    if (a.d != b.d) return a.d < b.d;
    if (a.e->time_us != b.e->time_us) return a.e->time_us < b.e->time_us;
    return std::tie(a.e->key, a.e->family, a.e->config) < std::tie(b.e->key, b.e->family, b.e->config);
  });
  return cands;
}

void answer_with(LookupResult& r, const Candidate& c, MatchKind kind, Rule rule) {
  r.kind = kind;
  r.rule = rule;
  r.family = c.e->family;
  r.config = c.e->config;
  r.params = c.e->params;
  r.transform = c.e->transform;
  r.entry = *c.e;
  r.distance = c.d;
}

void answer_with(LookupResult& r, const Candidate& c, Rule rule, const DefaultChoice& d) {
  answer_with(r, c, MatchKind::nearest, rule);
  r.family = d.family;
  r.config = d.config;
  r.params = d.params;
  r.transform = d.transform;
  if (!d.unchecked.empty()) r.unchecked = d.unchecked;
}

// Why a candidate of another regime or beyond the limit cannot serve a nearest answer ("" when it may).
std::string out_of_reach(const Candidate& c, const Problem& p, const LookupPolicy& policy) {
  if (is_decode(c.e->key.m, policy) != is_decode(p.m, policy))
    return fmt::format("an entry of the {} regime, the problem is of the {} regime (decode_max_m)",
                       regime_text(c.e->key.m, policy), regime_text(p.m, policy));
  // A decode kernel's grid is laid over N (C's one row of tiles, split over K): a config tuned at
  // another N covers the SMs differently, and measured so (docs/lookup.md). K only sets the loop.
  if (is_decode(p.m, policy) && c.e->key.n != p.n)
    return fmt::format("a decode entry of N = {}, the problem's N is {}: decode entries serve their own N",
                       c.e->key.n, p.n);
  if (!(c.d <= policy.max_distance))
    return fmt::format("log-space distance {:.3f} is beyond the limit {:.3f} (max_distance)", c.d, policy.max_distance);
  return {};
}

// Step 1, and step 2's three ways for a candidate in reach: its answer (from `base`, which holds
// what the lookup found so far), or nullopt with why it cannot serve in *why. Throws
// BrokenEntryError as lookup() says.
std::optional<LookupResult> served_by(const LookupTable& t, const Candidate& c, const Problem& p, bool exact,
                                      const LookupPolicy& policy, const LookupHooks& hooks, const LookupResult& base,
                                      std::string* why) {
  LookupResult r = base;
  if (!exact && hooks.transfer)
    if (auto tr = hooks.transfer(*c.e, p)) {
      answer_with(r, c, Rule::transferred, *tr);
      r.transferred = tr->note;
      r.how = fmt::format("nearest (from {}, whose winner was {}, so {} for this shape)", c.e->shape(), tr->note,
                          tr->note);
      return r;
    }
  Verdict v;
  if (hooks.can_implement) {
    try {
      v = hooks.can_implement(*c.e, p);
    } catch (const InputError& ex) {
      // An entry measured on another device (the architecture's or any device's tier): a family's
      // space may depend on the device (cuBLASLt's is its library's answer there), so a config
      // this device's space lacks is an entry that cannot run here, not a broken table.
      if (!policy.device || c.e->key.device_name == *policy.device)
        throw BrokenEntryError(fmt::format("{}: entries[{}] ({}): {}", t.origin.empty() ? "table" : t.origin,
                                           size_t(c.e - t.entries.data()), c.e->text(), ex.what()));
      v = Verdict::cannot(fmt::format("measured on {}, its config is not in the space of {} here: {}",
                                      c.e->key.device_name, *policy.device, ex.what()));
    }
  }
  if (v.kind == Verdict::Kind::cannot) {
    if (!exact && hooks.adapt)
      if (auto a = hooks.adapt(*c.e, p)) {
        answer_with(r, c, Rule::adapted, *a);
        r.adapted = fmt::format("{}: {}", a->note, v.why);
        r.how = fmt::format("nearest (from {}, with {})", c.e->shape(), a->note);
        return r;
      }
    *why = v.why;
    return std::nullopt;
  }
  answer_with(r, c, exact ? MatchKind::exact : MatchKind::nearest, exact ? Rule::exact : Rule::nearest);
  r.how = exact ? std::string("exact")
          : v.kind == Verdict::Kind::unchecked
              ? fmt::format("nearest (from {}; not checked on this machine)", c.e->shape())
              : fmt::format("nearest (from {})", c.e->shape());
  if (v.kind == Verdict::Kind::unchecked) r.unchecked = v.why;
  if (exact) r.backing = Backing::exact;
  return r;
}

// Why no evidence backs entry c's `rule` answer on the asked device at its distance.
std::string no_evidence(const LookupTable& t, const Candidate& c, Rule rule, const LookupPolicy& policy) {
  if (!policy.device)
    return "no device is named, and a transfer is backed only by evidence measured on the asked GPU model";
  if (c.e->key.device_name != *policy.device)
    return fmt::format("measured on {}, not on {}: another GPU model gets the default, never a transfer",
                       c.e->key.device_name, *policy.device);
  for (const TransferEvidence& ev : t.evidence)
    if (ev.from == c.e->key && ev.family == c.e->family && ev.config == c.e->config && ev.rule == rule)
      return fmt::format("its {} answers were validated up to distance {:.3f}, and this problem lies {:.3f} away",
                         to_string(rule), ev.radius, c.d);
  return fmt::format("the table has no evidence that its {} answers hold on {} (gemmtune validate measures it)",
                     to_string(rule), *policy.device);
}

// Whether a transfer may answer instead of the default (docs/lookup.md, "Backed answers"): sets
// its backing, or says why not in *why. *verdict: the online check's, where one was made.
bool back(LookupResult& a, const Candidate& c, const Problem& p, const LookupTable& t, const LookupPolicy& policy,
          const LookupHooks& hooks, std::optional<OnlineVerdict>* verdict, std::string* why) {
  if (a.rule == Rule::transferred && a.transform == Transform::none) {
    a.backing = Backing::default_config;
    a.backing_note = fmt::format("it is {} itself", a.transferred);
    return true;
  }
  if (policy.unbacked_transfers) {
    a.backing = Backing::unbacked;
    a.backing_note = "transfers without evidence were asked for";
    return true;
  }
  if (const TransferEvidence* ev = t.evidence_for(*c.e, a.rule, c.d, policy.device)) {
    a.backing = Backing::evidence;
    a.backing_note = fmt::format("validated on {}: {} neighbour{} up to distance {:.3f} (this problem: {:.3f}), the "
                                 "slowest at {:.3f} of the default's time{}",
                                 ev->from.device_name, ev->neighbours, ev->neighbours == 1 ? "" : "s", ev->radius, c.d,
                                 ev->worst, ev->measured_at.empty() ? "" : ", " + ev->measured_at);
    return true;
  }
  if (hooks.checked) *verdict = hooks.checked(p, a);
  if (*verdict) {
    const OnlineVerdict& v = **verdict;
    const std::string timed = fmt::format("timed online{}: {:.2f} us against the default's {:.2f} us", 
                                          v.where.empty() ? "" : " (" + v.where + ")", v.candidate_us, v.default_us);
    if (v.candidate_kept) {
      a.backing = Backing::online;
      a.backing_note = timed;
      return true;
    }
    *why = timed + ": the default was kept";
    return false;
  }
  *why = no_evidence(t, c, a.rule, policy);
  return false;
}

// Why no entry served, for the default's `reason`.
std::string no_entry_reason(const Problem& p, const std::vector<Candidate>& cands, const LookupResult& r,
                            size_t unreachable, size_t refused, size_t unbacked, const std::string& first_unbacked) {
  std::string cls =
      fmt::format("{}>{} {} alignment {}", to_string(p.in), to_string(p.out), to_string(p.layout), p.align);
  std::string reason;
  if (cands.empty())
    reason = fmt::format("the table has no entry for {}", cls);
  else if (unbacked > 0)
    reason = fmt::format("no answer of its {} entries for {} is backed here ({} out of reach, {} cannot run it, {} not "
                         "backed): the nearest that could serve, {}",
                         cands.size(), cls, unreachable, refused, unbacked, first_unbacked);
  else if (refused == 0)
    reason = fmt::format("none of its {} entries for {} is within reach: the nearest, {}, {}", cands.size(), cls,
                         cands[0].e->shape(), r.passed_over[0].second);
  else
    reason = fmt::format("none of its {} entries for {} can serve it ({} out of reach, {} cannot run it)",
                         cands.size(), cls, unreachable, refused);
  if (!r.device_note.empty()) reason += "; " + r.device_note;
  return reason;
}

// Step 3: r answered with the fallback's default for p; false, with why not in *why, where it has none.
bool answer_default(LookupResult& r, const Problem& p, const DefaultFn& fallback, std::string* why) {
  std::string no;
  auto d = fallback(p, &no);
  if (!d) {
    *why = no.empty() ? "the default cannot run it" : no;
    return false;
  }
  r.kind = MatchKind::fallback;
  r.rule = d->library_pick ? Rule::library_default : Rule::family_default;
  r.how = d->unchecked.empty() ? fmt::format("default ({})", d->note)
                               : fmt::format("default ({}; not named on this machine)", d->note);
  r.family = d->family;
  r.config = d->config;
  r.params = d->params;
  r.transform = d->transform;
  r.unchecked = d->unchecked;
  return true;
}

}  // namespace

LookupResult LookupTable::lookup(const Problem& p, const LookupPolicy& policy, const LookupHooks& hooks) const {
  LookupResult r;
  const std::string table_name = origin.empty() ? "table" : origin;
  if (policy.exact_device && !policy.device)
    throw InputError("an exact device match needs a device: name one (--device, or the runtime's device_name)");
  std::vector<Candidate> cands = candidates_for(candidate_pool(*this, policy, r), p, r);

  size_t unreachable = 0, refused = 0, unbacked = 0;
  std::optional<LookupResult> first;  // the nearest transfer that could serve but is not backed
  bool first_decided = false;         // ... and an online check kept the default over it
  std::string first_text;
  for (const Candidate& c : cands) {
    bool exact = c.e->key.m == p.m && c.e->key.n == p.n && c.e->key.k == p.k;
    if (!exact)
      if (std::string why = out_of_reach(c, p, policy); !why.empty()) {
        r.passed_over.emplace_back(c.e->text(), why);
        ++unreachable;
        continue;
      }
    std::string why;
    std::optional<LookupResult> a = served_by(*this, c, p, exact, policy, hooks, r, &why);
    if (!a) {
      r.passed_over.emplace_back(c.e->text(), why);
      ++refused;
      continue;
    }
    std::optional<OnlineVerdict> verdict;
    if (exact || back(*a, c, p, *this, policy, hooks, &verdict, &why)) return *a;
    r.passed_over.emplace_back(c.e->text(), "not backed: " + why);
    if (unbacked++ == 0) {
      first_text = fmt::format("{} ({}, distance {:.3f}), is not: {}", c.e->shape(), to_string(a->rule), c.d, why);
      first_decided = verdict.has_value();
      first = std::move(a);
    }
  }

  r.reason = no_entry_reason(p, cands, r, unreachable, refused, unbacked, first_text);
  std::string why_no_default = "no default was given";
  if (hooks.fallback && answer_default(r, p, hooks.fallback, &why_no_default)) {
    if (policy.online && first && !first_decided) {
      r.pending = std::make_shared<const LookupResult>(*first);
      r.reason += "; online: that answer is timed against this default on the problem's first calls";
    }
    return r;
  }
  if (first) {  // no default to lose against: the transfer, unbacked, rather than nothing
    first->backing = Backing::unbacked;
    first->backing_note = fmt::format("no default can run this problem here ({}), so nothing to be slower than",
                                      why_no_default);
    return *first;
  }
  std::string passed;
  for (size_t i = 0; i < r.passed_over.size() && i < 5; ++i)
    passed += fmt::format("\n  {}: {}", r.passed_over[i].first, r.passed_over[i].second);
  if (r.passed_over.size() > 5) passed += fmt::format("\n  ... and {} more", r.passed_over.size() - 5);
  throw InputError(fmt::format("{}: nothing to run for {}: {}{}; and no default: {}", table_name, p.key(), r.reason,
                               passed, why_no_default));
}

LookupResult LookupTable::lookup(const Problem& p, const std::optional<std::string>& device,
                                 const CanImplementFn& can_implement, const DefaultFn& fallback,
                                 const TransferFn& transfer) const {
  LookupPolicy policy;
  policy.device = device;
  policy.max_distance = std::numeric_limits<double>::infinity();
  policy.decode_max_m = 0;
  policy.unbacked_transfers = true;
  return lookup(p, policy, LookupHooks{can_implement, fallback, transfer, {}});
}

}  // namespace gt
