// MockBackend, perf_init_event(): the PMU registered for attr.type and its
// event_init() (kernel/events/core.c perf_init_event() -> perf_try_init_event()),
// for each PMU the model has: the software PMU and its clock PMUs
// (software_pmu.h), tracepoints (perf_tp_event_init()), breakpoints
// (hw_breakpoint_event_init()), intel_pt (mock_aux.cc), uprobe
// (uprobe_pmu.h), msr and power (free_running_pmu.h) and the core PMU
// (hardware_pmu.h); then perf_try_init_event()'s capability checks.
#include <fmt/format.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>

#include <cerrno>
#include <memory>

#include "mocks/breakpoint_pmu.h"
#include "mocks/free_running_pmu.h"
#include "mocks/internal/mock_backend_impl.h"
#include "mocks/software_pmu.h"
#include "mocks/tracepoint_pmu.h"
#include "mocks/uprobe_pmu.h"

namespace perftest::mock {

// perf_init_event(): the PMU registered for attr.type. PERF_TYPE_HARDWARE and
// HW_CACHE (and RAW, when the core PMU's type is dynamic, as on arm64) go
// to the core PMU: perf_init_event()'s fallback over all PMUs, of which only
// it accepts them; without one they are ENOENT.
int MockBackend::PerfInitEvent(MockEvent& event, const AttrLimits& limits, PmuCaps* caps, std::string* why) {
  MockEvent* ev = &event;
  const perf_event_attr& attr = event.attr;
  const int cpu = event.cpu;
  auto fail = [&](int err, std::string text) {
    *why = std::move(text);
    return err;
  };
  const Pmu* pmu = nullptr;
  for (const Pmu& p : profile_.pmus) {
    if (p.type == attr.type) pmu = &p;
  }
  if (pmu == nullptr && profile_.has_hardware &&
      (attr.type == PERF_TYPE_HARDWARE || attr.type == PERF_TYPE_HW_CACHE || attr.type == PERF_TYPE_RAW)) {
    for (const Pmu& p : profile_.pmus) {
      if (p.type == profile_.core_pmu_type) pmu = &p;
    }
  }
  // The clock PMUs (clock_pmu_types): cpu_clock_event_init() and
  // task_clock_event_init() take only their own config (else ENOENT), then
  // refuse branch sampling (EOPNOTSUPP). perf_swevent_init() hands a
  // PERF_TYPE_SOFTWARE cpu-clock/task-clock over to them (attr.type rewritten).
  const bool clock_type = profile_.cpu_clock_type != 0 &&
                          (attr.type == profile_.cpu_clock_type || attr.type == profile_.task_clock_type);
  if (pmu == nullptr && !clock_type) {
    return fail(ENOENT, fmt::format("no PMU has type {} on this machine", attr.type));
  }
  caps->software = clock_type || pmu->type == PERF_TYPE_SOFTWARE;  // PERF_PMU_CAP_NO_NMI
  if (clock_type) {
    const uint64_t config = attr.type == profile_.cpu_clock_type ? PERF_COUNT_SW_CPU_CLOCK : PERF_COUNT_SW_TASK_CLOCK;
    if (attr.config != config) {
      return fail(ENOENT, fmt::format("the {} PMU (type {}) only has config {}", config == 0 ? "cpu_clock" : "task_clock",
                                      attr.type, config));
    }
    if (int err = SoftwareEventInit(*ev, why)) return err;
  } else if (pmu->type == PERF_TYPE_SOFTWARE) {
    if (int err = SoftwareEventInit(*ev, why)) return err;
  } else if (pmu->type == PERF_TYPE_TRACEPOINT) {
    if (int err = TracepointEventInit(*ev, why)) return err;
  } else if (pmu->type == PERF_TYPE_BREAKPOINT) {
    if (int err = BreakpointEventInit(*ev, why)) return err;
  } else if (pmu->name == "intel_pt") {
    if (int err = PtEventInit(*ev, *pmu, why)) return err;
  } else if (pmu->name == "uprobe") {
    UprobeTarget target;
    const int err = UprobeEventInit(attr, SysAdmin(), UprobeSwbpInsnSize(profile_.arch), HostUprobeFiles(), why, &target);
    if (err != 0) return err;
    ev->uprobe = std::make_shared<const UprobeTarget>(target);  // counted by UprobeExecute() (mock_uprobes.cc)
    // A trace event (perf_trace_event_init()): filters see the common_* fields only.
    ev->tracepoint = UprobeTraceModel();
    ev->pmu = PmuId::kTracepoint;
    PeriodStateInit(*ev);
  } else if (pmu->name == "msr" || pmu->name == "power") {
    const bool msr = pmu->name == "msr";
    if (int err = msr ? MsrEventInit(attr, *pmu, why) : RaplEventInit(attr, cpu, *pmu, why)) return err;
    ev->pmu = PmuId::kFreeRunning;
    caps->no_exclude = true;    // PERF_PMU_CAP_NO_EXCLUDE
    caps->no_task_ctx = !msr;   // RAPL: perf_invalid_context
  } else if (profile_.has_hardware && pmu->type == profile_.core_pmu_type) {
    if (int err = HardwareEventInit(attr, pmu->type, profile_.hardware, &ev->hw_event, why)) return err;
    ev->pmu = PmuId::kCore;
    PeriodStateInit(*ev);
    caps->no_exclude = !profile_.hardware.mode_exclusion;  // PERF_PMU_CAP_NO_EXCLUDE
  }
  // perf_try_init_event(), right after pmu->event_init(): software, tracepoint
  // and breakpoint PMUs lack PERF_PMU_CAP_EXTENDED_REGS; then
  // PERF_PMU_CAP_NO_EXCLUDE refuses every exclude_* bit (in that order:
  // fidelity found msr with exclude_idle and an XMM register EOPNOTSUPP).
  if (HasExtendedRegs(attr, limits.x86_64)) return fail(EOPNOTSUPP, "XMM registers need PERF_PMU_CAP_EXTENDED_REGS");
  // arm64 since Linux 6.1 (cbb0c02caf4b "perf: arm64: Add SVE vector granule
  // register to user regs"): PERF_REG_EXTENDED_MASK is PERF_REG_ARM64_VG (bit
  // 46) and only arm_pmu.c's PMUs have PERF_PMU_CAP_EXTENDED_REGS (seen in
  // Debian's 6.1 arm64 guest: a software event with bit 46 is EOPNOTSUPP).
  constexpr uint64_t kArm64Vg = uint64_t{1} << 46;
  if (profile_.arch == "aarch64" && limits.kernel_version >= KernelVersion(6, 1) && ev->pmu != PmuId::kCore &&
      ((attr.sample_regs_user | attr.sample_regs_intr) & kArm64Vg) != 0) {
    return fail(EOPNOTSUPP, "PERF_REG_ARM64_VG needs PERF_PMU_CAP_EXTENDED_REGS");
  }
  if (caps->no_exclude && (attr.exclude_user || attr.exclude_kernel || attr.exclude_hv || attr.exclude_idle ||
                            attr.exclude_host || attr.exclude_guest)) {
    return fail(EINVAL, "the PMU has PERF_PMU_CAP_NO_EXCLUDE: no exclude_* bit may be set (perf_try_init_event())");
  }
  return 0;
}

// kernel/events/core.c perf_tp_event_init() -> kernel/trace/trace_event_perf.c
// perf_trace_init(): attr.config must be a tracefs id; perf_trace_event_perm().
int MockBackend::TracepointEventInit(MockEvent& ev, std::string* why) {
  const perf_event_attr& a = ev.attr;
  if (a.sample_type & PERF_SAMPLE_BRANCH_STACK) {
    *why = "no branch sampling for tracepoint events";
    return EOPNOTSUPP;
  }
  for (const auto& [name, id] : profile_.tracepoints) {
    if (id == a.config) ev.tracepoint = FindTracepointModel(name);
  }
  if (ev.tracepoint == nullptr) {
    *why = fmt::format("no tracepoint has id {} (perf_trace_init())", a.config);
    return EINVAL;
  }
  // perf_trace_event_perm(): raw data needs perf_allow_tracepoint(), except
  // for TRACE_EVENT_FL_CAP_ANY events (the syscalls) attached to a task.
  const bool cap_any = ev.tracepoint->name.rfind("syscalls:", 0) == 0 && ev.pid != -1;
  if ((a.sample_type & PERF_SAMPLE_RAW) && !cap_any && !Perfmon() && profile_.perf_event_paranoid > -1) {
    *why = "PERF_SAMPLE_RAW of a tracepoint needs CAP_PERFMON or perf_event_paranoid -1";
    return EPERM;
  }
  ev.pmu = PmuId::kTracepoint;
  PeriodStateInit(ev);
  return 0;
}

// The task side of a breakpoint event: per-task or not, the profile's compat_task.
BreakpointTask MockBackend::BreakpointTaskOf(const MockEvent& ev) const {
  return BreakpointTask{ev.pid != -1, profile_.compat_task, profile_.page_size};
}

// kernel/events/hw_breakpoint.c hw_breakpoint_event_init() ->
// register_perf_hw_breakpoint(): reserve_bp_slot() first, then hw_breakpoint_parse().
int MockBackend::BreakpointEventInit(MockEvent& ev, std::string* why) {
  const perf_event_attr& a = ev.attr;
  if (a.sample_type & PERF_SAMPLE_BRANCH_STACK) {
    *why = "no branch sampling for breakpoint events";
    return EOPNOTSUPP;
  }
  if (a.bp_type == HW_BREAKPOINT_EMPTY || a.bp_type == HW_BREAKPOINT_INVALID) {
    *why = "bp_type EMPTY or INVALID (reserve_bp_slot())";
    return EINVAL;
  }
  // Slots: per CPU and slot type, CPU-wide breakpoints + the task's (those that may run there) + this one.
  auto on_cpu = [](const MockEvent& e, int cpu) { return e.cpu == -1 || e.cpu == cpu; };
  const BreakpointSlot type = SlotOf(a.bp_type);
  const bool per_type = profile_.hw_watchpoint_slots.has_value();  // else one pool (mixed registers)
  const uint32_t slots =
      per_type && type == BreakpointSlot::kData ? *profile_.hw_watchpoint_slots : profile_.hw_breakpoint_slots;
  for (int cpu = 0; cpu < profile_.ncpus; ++cpu) {
    if (!on_cpu(ev, cpu)) continue;
    uint32_t cpu_wide = 0, task = 0;
    for (const auto& e : events_) {
      if (e->pmu != PmuId::kBreakpoint || e->parent != nullptr) continue;
      if (per_type && SlotOf(e->attr.bp_type) != type) continue;
      if (e->pid == -1 && e->cpu == cpu) ++cpu_wide;
      if (e->pid != -1 && on_cpu(*e, cpu)) ++task;  // one simulated task
    }
    if (cpu_wide + task + 1 > slots) {
      *why = fmt::format("CPU {} has {} {} slots, {} CPU-wide and {} of the task in use", cpu, slots,
                         !per_type ? "breakpoint" : type == BreakpointSlot::kData ? "watchpoint" : "breakpoint",
                         cpu_wide, task);
      return ENOSPC;
    }
  }
  if (int err = BreakpointParse(a, BreakpointArchOf(profile_.arch), BreakpointTaskOf(ev), why)) return err;
  ev.pmu = PmuId::kBreakpoint;
  PeriodStateInit(ev);
  return 0;
}

}  // namespace perftest::mock
