#include "fidelity/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "harness/result.h"

namespace perftest::fidelity {

bool Agree(const Outcome& kernel, const Outcome& mock) {
  return kernel.ran && mock.ran && kernel.ok == mock.ok && kernel.err == mock.err && kernel.value == mock.value;
}

bool Agree(const CallRecord& rec) { return rec.status != CallStatus::kCompared || Agree(rec.kernel, rec.mock); }

std::string OutcomeText(const Outcome& o) {
  if (!o.ran) return "not run";
  const std::string head = o.ok ? "ok" : ErrnoName(o.err);
  return o.value.empty() ? head : fmt::format("{} ({})", head, o.value);
}

namespace {

std::vector<std::string> SplitItems(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= s.size()) {
    size_t end = s.find(", ", at);
    if (end == std::string::npos) end = s.size();
    out.push_back(s.substr(at, end - at));
    at = end + 2;
  }
  return out;
}

// The items of a "k=v, k=v" value that the other value does not have.
std::string Only(const std::string& mine, const std::string& theirs) {
  const std::vector<std::string> other = SplitItems(theirs);
  std::vector<std::string> kept;
  for (const std::string& item : SplitItems(mine)) {
    if (std::find(other.begin(), other.end(), item) == other.end()) kept.push_back(item);
  }
  return fmt::format("{}", fmt::join(kept, ", "));
}

}  // namespace

std::string DisagreementKind(const CallRecord& rec) {
  Outcome k = rec.kernel;
  Outcome m = rec.mock;
  if (k.ran && m.ran && k.ok == m.ok && k.err == m.err && k.value != m.value) {
    // Same result, different details: name only the details that differ.
    k.value = Only(rec.kernel.value, rec.mock.value);
    m.value = Only(rec.mock.value, rec.kernel.value);
  }
  return fmt::format("{} [{}]: kernel {}, mock {}", rec.op, rec.pmu, OutcomeText(k), OutcomeText(m));
}

}  // namespace perftest::fidelity
