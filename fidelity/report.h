// The fidelity report: the agreement figure, tallies per operation and per
// PMU, and the disagreements grouped by class with the first examples of each
// (the call, both outcomes, the mock's reason, the seed that replays it).
//
//   FidelityReport report(/*max_examples=*/3);
//   for (uint64_t i = 0; i < n; ++i) report.Add(i, seq, RunSequence(seq, *kernel, *mock, params));
//   fmt::print("{}", report.RenderText(info));
//   std::ofstream(path) << report.ToJson(info).dump(2);
//
// JSON (schema_version 1; other keys may be added):
//   {"schema_version": 1, "tool": "perftest_fidelity",
//    "run": {"seed", "count", "profile", "kernel", "note"},
//    "calls": {"compared", "agreeing", "disagreeing", "dependent", "no_target"},
//    "agreement": fraction in [0, 1] (calls on the PMUs the profile models),
//    "unmodelled": {"pmus": [names], "compared", "agreeing"},
//    "sequences": {"total", "fully_agreeing"},
//    "by_op": {op: {"compared", "agreeing"}}, "by_pmu": {pmu: {...}},
//    "unexplained": calls no known_disagreements.h entry explains,
//    "known_disagreements": [{"id", "reason"}],
//    "disagreements": [{"kind", "op", "pmu", "kernel", "mock", "unmodelled_pmu", "explained_by", "count",
//        "examples": [{"sequence", "sequence_seed" (hex string), "call_index", "call",
//                      "before": [calls], "kernel", "mock", "kernel_call", "mock_call",
//                      "mock_reason", "minimal": [calls]}]}]}
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fidelity/call.h"
#include "fidelity/executor.h"

namespace perftest::fidelity {

// What the report says about the run itself.
struct RunInfo {
  uint64_t seed = 0;
  uint64_t count = 0;      // sequences
  std::string profile;     // the mock's profile name
  std::string kernel;      // the kernel side: "Linux 6.18.44 x86_64, 2 CPUs, perf_event_paranoid=2"
};

struct Example {
  uint64_t sequence = 0;       // index in the run
  uint64_t sequence_seed = 0;  // --replay=<this>
  size_t call_index = 0;
  std::string call;            // DescribeCall() with resolutions
  std::vector<std::string> before;  // the sequence's earlier calls (at most 8, the last ones)
  std::string kernel;          // OutcomeText()
  std::string mock;
  std::string kernel_call;     // the backends' call strings
  std::string mock_call;
  std::string mock_reason;     // the mock's "[mock: ...]" reason, if it gave one
  std::vector<std::string> minimal;  // a minimal sequence showing the same disagreement (minimize.h)
};

struct DisagreementClass {
  std::string kind;  // DisagreementKind()
  std::string op;
  std::string pmu;
  std::string kernel;  // OutcomeText() of the first occurrence
  std::string mock;
  bool unmodelled_pmu = false;  // on a PMU the profile does not list
  std::string explained_by;     // KnownDisagreement::id of its first call, or "" (known_disagreements.h)
  uint64_t count = 0;
  std::vector<Example> examples;
};

struct Tally {
  uint64_t compared = 0;
  uint64_t agreeing = 0;
};

class FidelityReport {
 public:
  explicit FidelityReport(size_t max_examples = 3) : max_examples_(max_examples) {}

  // PMUs the host has and the mock's profile does not list (by sysfs name):
  // calls on their events are tallied apart (unmodelled()) and their
  // disagreements marked, so that the agreement figure measures what the
  // profile claims to model. Set before the first Add().
  void SetUnmodelledPmus(std::set<std::string> pmus) { unmodelled_pmus_ = std::move(pmus); }
  const std::set<std::string>& unmodelled_pmus() const { return unmodelled_pmus_; }

  // Adds sequence number `index` of the run.
  void Add(uint64_t index, const Sequence& seq, const SequenceOutcome& out);

  // Calls on the PMUs the profile models (all calls when none is unmodelled).
  uint64_t calls_compared() const { return total_.compared; }
  uint64_t calls_agreeing() const { return total_.agreeing; }
  uint64_t calls_dependent() const { return dependent_; }
  uint64_t calls_no_target() const { return no_target_; }
  uint64_t sequences() const { return sequences_; }
  uint64_t sequences_agreeing() const { return sequences_agreeing_; }
  // Calls on unmodelled PMUs (SetUnmodelledPmus()), not in the figures above.
  const Tally& unmodelled() const { return unmodelled_; }
  // Disagreeing calls (on modelled PMUs or not) no KnownDisagreements() entry explains.
  uint64_t calls_unexplained() const { return unexplained_; }
  // calls_agreeing / calls_compared; 1 when nothing was compared.
  double Agreement() const;
  const std::map<std::string, Tally>& by_op() const { return by_op_; }
  const std::map<std::string, Tally>& by_pmu() const { return by_pmu_; }
  // The classes, most frequent first (ties by kind).
  std::vector<DisagreementClass> Classes() const;
  // For filling in Example::minimal. nullptr when there is no such class.
  DisagreementClass* FindClass(const std::string& kind);

  std::string RenderText(const RunInfo& info) const;
  nlohmann::json ToJson(const RunInfo& info) const;

 private:
  size_t max_examples_;
  std::set<std::string> unmodelled_pmus_;
  Tally total_;
  Tally unmodelled_;
  uint64_t unexplained_ = 0;
  uint64_t dependent_ = 0;
  uint64_t no_target_ = 0;
  uint64_t sequences_ = 0;
  uint64_t sequences_agreeing_ = 0;
  std::map<std::string, Tally> by_op_;
  std::map<std::string, Tally> by_pmu_;
  std::map<std::string, DisagreementClass> classes_;
};

// The mock's reason in a call string "...) [mock: REASON]", or "".
std::string MockReason(const std::string& call);

}  // namespace perftest::fidelity
