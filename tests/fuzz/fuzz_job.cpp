// libFuzzer target for the job loader (search/job/job.cpp): any bytes given as a job file must
// either load or be refused with an InputError. Any other exception escapes to libFuzzer
// (std::terminate: reported as a crash), and so does a loaded job that breaks the
// promises the tuner relies on without checking again.
#include "base/errors.hpp"
#include "job/job.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string_view>

namespace {

[[noreturn]] void broken(const char* what) {
  std::fprintf(stderr, "fuzz_job: a loaded job breaks an invariant: %s\n", what);
  std::abort();
}

void check(const gt::search::Job& job) {
  if (job.problems.empty()) broken("a job without problems was accepted");
  if (job.problems.size() > gt::search::kDefaultMaxProblems) broken("more problems than the limit were expanded");
  std::set<std::string> keys;
  for (auto& jp : job.problems) {
    const gt::Problem& p = jp.problem;
    p.validate();  // throws InputError, which would be a bug here: the loader made it
    if (p.out == gt::DType::tf32) broken("tf32 output accepted");
    if (!keys.insert(p.key()).second) broken("the same problem listed twice");
    for (auto& [family, configs] : jp.configs)
      if (configs.empty()) broken("an empty fixed config list accepted");
  }
  const gt::search::JobSettings& s = job.settings;
  auto check_budget = [](const gt::search::JobBudget& b) {
    if (b.fraction && !(*b.fraction > 0 && *b.fraction <= 1)) broken("fraction outside (0, 1] accepted");
    if (b.seconds && !(std::isfinite(*b.seconds) && *b.seconds > 0)) broken("a time budget that is not a positive time");
    if (b.evaluations && *b.evaluations == 0) broken("a budget of 0 evaluations accepted");
    if (b.patience && *b.patience == 0) broken("a patience of 0 accepted");
  };
  check_budget(s);
  for (auto& [family, b] : s.family_budgets) {
    if (!b.evaluations && !b.seconds && !b.fraction && !b.patience) broken("a family budget that sets nothing");
    check_budget(b);
  }
  if (s.finalists && *s.finalists < 0) broken("a negative number of finalists");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  gt::search::Job job;
  try {
    job = gt::search::parse_job(text, "fuzz.toml");
  } catch (const gt::InputError&) {
    return 0;  // refused with a message: what bad input should get
  }
  try {
    check(job);
  } catch (const gt::InputError& e) {
    std::fprintf(stderr, "fuzz_job: a loaded problem does not validate: %s\n", e.what());
    std::abort();
  }
  return 0;
}
