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
      {"fidelity.arm64_hrtimer_user_read",
       "A kernel bug on arm64 (seen in Debian's 6.1 arm64 guest): arch_perf_update_userpage() "
       "(arch/arm64/kernel/perf_event.c; drivers/perf/arm_pmuv3.c later) sets cap_user_rdpmc = "
       "armv8pmu_event_has_user_read(event), which reads event->hw.flags & PERF_EVENT_FLAG_USER_READ_CNT for every "
       "event, not only the PMU's own. For a sampling cpu-clock or task-clock event hw is the hrtimer member of the "
       "union (perf_swevent_init_hrtimer()), and hw.flags overlays the upper half of the hrtimer's function pointer "
       "(a kernel address 0xffff8000...: bit 31 set), so the user page of a sampling software clock event says "
       "cap_user_rdpmc 1 (capabilities 0x3e) and pmc_width 32 though index is 0. The mock leaves cap_user_rdpmc 0: "
       "it models the rule, not the overlaid bytes of another union member.",
       "mmap", "software", "", false, "capabilities=0x3e"},
      {"fidelity.arm64_foreign_type_rdpmc",
       "Linux 6.1 on arm64 (Debian's 6.1 arm64 guest): for a type no PMU has, perf_init_event() offers the event to "
       "every PMU in turn until one answers other than ENOENT, and armpmu_event_init() (drivers/perf/arm_pmu.c) does "
       "not look at the type before __armv8_pmuv3_map_event() (arch/arm64/kernel/perf_event.c), which refuses "
       "config1 bit 1 (rdpmc, armv8pmu_event_want_user_access()) on a CPU-bound event with EINVAL before its own "
       "type check. The mock's unknown-type path says ENOENT as perf_init_event() does when every PMU declines; it "
       "does not run the arm PMU's event_init() on foreign types.",
       "perf_event_open", "unlisted", "no PMU has type", false, "kernel EINVAL, mock ENOENT"},
      {"fidelity.arm64_foreign_type_branch_stack",
       "Linux 6.1 on arm64: as fidelity.arm64_foreign_type_rdpmc, the event of a type no PMU has reaches "
       "armpmu_event_init() (drivers/perf/arm_pmu.c), whose 'does not support taken branch sampling' check "
       "(has_branch_stack() -> EOPNOTSUPP) comes before its map_event() type check, so a branch-stack sample_type "
       "gets EOPNOTSUPP where the mock says ENOENT.",
       "perf_event_open", "unlisted", "no PMU has type", false, "kernel EOPNOTSUPP, mock ENOENT"},
  };
  return list;
}

const KnownDisagreement* ExplainDisagreement(const std::string& op, const std::string& pmu, bool unmodelled_pmu,
                                             const std::string& mock_reason, const std::string& kind) {
  for (const KnownDisagreement& k : KnownDisagreements()) {
    if (k.unmodelled_pmu != unmodelled_pmu) continue;
    if (!k.op.empty() && op != k.op) continue;
    if (!k.pmu.empty() && pmu != k.pmu) continue;
    if (!k.mock_reason_contains.empty() && mock_reason.find(k.mock_reason_contains) == std::string::npos) continue;
    if (!k.kind_contains.empty() && kind.find(k.kind_contains) == std::string::npos) continue;
    return &k;
  }
  return nullptr;
}

}  // namespace perftest::fidelity
