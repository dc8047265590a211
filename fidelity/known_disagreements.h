// The disagreements between the kernel and the mock that are understood and
// left on purpose, each with a stable id and the reason. The fidelity report
// marks every disagreeing call that one of them explains and counts the rest
// as unexplained (the number to drive to zero: an unexplained disagreement is
// a mock bug until the kernel source says otherwise, DESIGN.md "Fidelity rule").
//
//   if (const KnownDisagreement* k = ExplainDisagreement(rec.op, rec.pmu, unmodelled, MockReason(rec.mock.call)))
//     ...  // k->id, k->reason
//
// Adding an entry needs a reason a reader can check: what the kernel does,
// why the mock cannot do the same for this host, which kernel function.
// These match generated calls, not cases; a case's verdicts (expected skips,
// retries, deny entries) are in ci/expectations, and its README says how the
// two relate. Ids live under "fidelity." so no suite feature id can equal one.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace perftest::fidelity {

struct KnownDisagreement {
  std::string_view id;      // stable, "fidelity.<name>" (no suite feature id starts so), e.g.
                            // "fidelity.unmodelled_tracepoint"
  std::string_view reason;  // one paragraph
  // What it matches ("" = anything): the call's op (CallRecord::op), the PMU's
  // name (CallRecord::pmu), a substring of the mock's reason; and whether the
  // call is on a PMU the profile does not list (FidelityReport::SetUnmodelledPmus()).
  std::string_view op;
  std::string_view pmu;
  std::string_view mock_reason_contains;
  bool unmodelled_pmu = false;
  // A substring of the class's kind (DisagreementKind(): the two results'
  // differing fields), for results that are both ok ("" = anything).
  std::string_view kind_contains = "";
};

// Every entry, in the order they are tried.
const std::vector<KnownDisagreement>& KnownDisagreements();

// The first entry that explains a disagreeing call, or nullptr.
const KnownDisagreement* ExplainDisagreement(const std::string& op, const std::string& pmu, bool unmodelled_pmu,
                                             const std::string& mock_reason, const std::string& kind = "");

}  // namespace perftest::fidelity
