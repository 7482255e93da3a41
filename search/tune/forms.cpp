#include "tune/forms.hpp"

#include "base/errors.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace gt::search {

TransformPolicy TransformPolicy::parse(std::string_view text, std::string_view where) {
  TransformPolicy p;
  if (text == "auto") return p;
  p.automatic = false;
  if (text == "none") return p;
  size_t at = 0;
  while (at <= text.size()) {
    size_t end = text.find(',', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(at, end - at);
    Transform t = parse_transform(item, where);
    if (t == Transform::none)
      throw InputError(fmt::format("{}: 'none' is a value of its own (the plain problem is always explored)", where));
    if (std::find(p.forms.begin(), p.forms.end(), t) != p.forms.end())
      throw InputError(fmt::format("{}: '{}' is named twice", where, item));
    p.forms.push_back(t);
    at = end + 1;
  }
  return p;
}

std::string TransformPolicy::describe() const {
  if (automatic) return "auto";
  if (forms.empty()) return "none";
  std::string s;
  for (Transform t : forms) s += (s.empty() ? "" : ",") + std::string(to_string(t));
  return s;
}

std::optional<std::string> skip_form(const TransformPolicy& policy, const Problem& p, Transform t,
                                     const FormsSoFar& sofar) {
  if (!policy.automatic) {
    if (std::find(policy.forms.begin(), policy.forms.end(), t) == policy.forms.end())
      return fmt::format("not asked for (--transforms {})", policy.describe());
    return std::nullopt;  // the plan's own refusal, if any, is reported when it is planned
  }
  switch (t) {
    case Transform::pad:
      if (p.align >= 16) return std::string("the problem is 16-byte aligned");
      return std::nullopt;
    case Transform::round: {
      if (p.align >= 16) return std::string("the problem is 16-byte aligned");
      std::string why;
      auto round = plan_transform(p, t, &why);
      if (!round) return why;
      // Both forms are worth a tune only where they differ: where pad already rounds every size
      // (or M, N and K are multiples of 16 bytes), round is pad.
      auto pad = plan_transform(p, Transform::pad);
      if (pad && pad->inner.key() == round->inner.key() && pad->inner.lda == round->inner.lda &&
          pad->inner.ldb == round->inner.ldb && pad->inner.ldc == round->inner.ldc)
        return fmt::format("it is pad here (both run {})", round->inner.key());
      return std::nullopt;
    }
    case Transform::swap: {
      std::string why;
      auto plan = plan_transform(p, t, &why);
      if (!plan) return why;
      if (!sofar.plain_runs) return std::nullopt;
      if (plan->inner.align > p.align) return std::nullopt;
      return fmt::format("swapped, the problem is no better aligned ({} bytes) and the family runs it as it is",
                         plan->inner.align);
    }
    case Transform::pad_swap:
      if (sofar.any_runs) return std::string("the family runs the problem without it");
      return std::nullopt;
    case Transform::none: break;
  }
  return std::nullopt;
}

}  // namespace gt::search
