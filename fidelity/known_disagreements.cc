#include "fidelity/known_disagreements.h"

namespace perftest::fidelity {

const std::vector<KnownDisagreement>& KnownDisagreements() {
  static const std::vector<KnownDisagreement> list = {
      {"fidelity.unmodelled_pmu",
       "The host lists a PMU the profile does not (on the development VM, none: msr and power are modelled in "
       "mocks/free_running_pmu.h, uprobe in mocks/uprobe_pmu.h; a kprobe PMU elsewhere is not), or lists it at a "
       "type the profile gives another PMU (a host without RAPL hands msr the type the profile's power PMU has). "
       "The mock runs another PMU's event_init() for that type, or finds none and says ENOENT, while the kernel "
       "runs this PMU's. Such calls are tallied apart from the agreement figure (fidelity/main.cc).",
       "", "", "", /*unmodelled_pmu=*/true},
      {"fidelity.unmodelled_tracepoint",
       "The generator opens tracepoints the host's tracefs has (e.g. raw_syscalls:sys_enter), but a profile may "
       "list only tracepoints the model can fire (mocks/tracepoint_pmu.h, ParseProfile()), so for an id it does "
       "not list the mock's perf_trace_init() finds no event and says EINVAL while the kernel opens it (or fails "
       "later, in perf_event_alloc(), for another reason).",
       "perf_event_open", "tracepoint", "no tracepoint has id", false},
  };
  return list;
}

const KnownDisagreement* ExplainDisagreement(const std::string& op, const std::string& pmu, bool unmodelled_pmu,
                                             const std::string& mock_reason) {
  for (const KnownDisagreement& k : KnownDisagreements()) {
    if (k.unmodelled_pmu != unmodelled_pmu) continue;
    if (!k.op.empty() && op != k.op) continue;
    if (!k.pmu.empty() && pmu != k.pmu) continue;
    if (!k.mock_reason_contains.empty() && mock_reason.find(k.mock_reason_contains) == std::string::npos) continue;
    return &k;
  }
  return nullptr;
}

}  // namespace perftest::fidelity
