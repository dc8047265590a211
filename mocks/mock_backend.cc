// MockBackend, the syscall surface: perf_event_open, read, ioctl, mmap/munmap,
// close, prctl, poll, fcntl. The simulated task is in mock_task.cc.
#include "mocks/mock_backend.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <new>

#include "harness/describe.h"
#include "mocks/internal/mock_backend_impl.h"
#include "mocks/breakpoint_pmu.h"
#include "mocks/free_running_pmu.h"
#include "mocks/software_pmu.h"
#include "mocks/tracepoint_pmu.h"
#include "mocks/uprobe_pmu.h"

namespace perftest::mock {
namespace {

// The call as made, plus the model's reason when it fails: "perf_event_open(...) [mock: why]".
std::string WithWhy(const std::string& call, const std::string& why) {
  return why.empty() ? call : fmt::format("{} [mock: {}]", call, why);
}

template <typename T>
Result<T> Fail(int err, const CallDescription& call, const std::string& why) {
  return Result<T>::Failure(err, WithWhy(call.str(), why));
}

// perf_event_set_clock(): events compare by clock; no clockid means local_clock().
int ClockOf(const MockEvent& ev) { return ev.attr.use_clockid ? ev.attr.clockid : -1; }

// perf_event_validate_size(): "16*1024", the largest read_format record.
constexpr size_t kMaxReadSize = 16 * 1024;

// ReadFormatSize(read_format) of one counter for each read_format below
// PERF_FORMAT_MAX (CopyAttr() refuses other bits): a lookup on Read()'s hot path.
const std::array<uint8_t, PERF_FORMAT_MAX> kReadOneSize = [] {
  std::array<uint8_t, PERF_FORMAT_MAX> t{};
  for (uint64_t rf = 0; rf < PERF_FORMAT_MAX; ++rf) t[rf] = static_cast<uint8_t>(ReadFormatSize(rf, 1));
  return t;
}();

}  // namespace

MockBackend::MockBackend(MockProfile profile, MockModels models)
    : profile_(std::move(profile)), models_(std::move(models)) {
  machine_ = profile_.ToMachineInfo();
  creds_ = ProfileCredentials(profile_);
  tick_ns_ = kNsecPerSec / profile_.hz;
  // perf_event_max_sample_rate handler: max_samples_per_tick = DIV_ROUND_UP(rate, HZ).
  max_samples_per_tick_ = (profile_.max_sample_rate + profile_.hz - 1) / profile_.hz;
  limits_.attr_size = profile_.attr_size;
  limits_.page_size = profile_.page_size;
  limits_.max_stack = profile_.max_stack;
  limits_.max_sample_rate = profile_.max_sample_rate;
  limits_.paranoid = profile_.perf_event_paranoid;
  limits_.x86_64 = profile_.arch == "x86_64";
  // PERF_REG_ARM64_MAX (arch/arm64/include/uapi/asm/perf_regs.h), PERF_REG_RISCV_MAX
  if (profile_.arch == "aarch64") limits_.perf_reg_max = 33;
  if (profile_.arch == "riscv64") limits_.perf_reg_max = 32;
  limits_.aux_action = profile_.attr_aux_action;
}

MockBackend::~MockBackend() {
  CloseAllFds();
  // Caller mappings stay valid (as after close(2) of a mapped perf fd); the
  // writer views go with the buffers.
  for (auto& ev : events_) ev->rb.reset();
}

AttrLimits MockBackend::Limits() const {
  AttrLimits l = limits_;
  l.privileged = Perfmon();
  return l;
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

// SYSCALL_DEFINE5(perf_event_open) and perf_event_alloc(), in the kernel's order.
// Known divergences from Linux 6.18, out of scope here (perftest_fidelity reports them):
//  - tracepoint ids the profile does not list get EINVAL (the host may know them);
//  - uprobe events count only the code Workload::kExecute runs (mocks/mock_uprobes.cc).
Result<int> MockBackend::PerfEventOpen(perf_event_attr* uattr, pid_t pid, int cpu, int group_fd, unsigned long flags) {
  // The call as made, described only once the outcome is known (the success
  // Result is built in place, bench/mock_bench.cc): nothing below writes to
  // *uattr but CopyAttr() on E2BIG, so a later description reads what an
  // early one would have.
  auto call = [=] { return OpenCall(uattr, pid, cpu, group_fd, flags); };
  std::string why;
  if (int err = CheckOpenFlags(flags, &why)) return Fail<int>(err, call(), why);
  if (uattr == nullptr) return Fail<int>(EFAULT, call(), "attr is NULL (perf_copy_attr(): get_user() faults)");
  const AttrLimits limits = Limits();
  perf_event_attr attr;
  const uint32_t passed_size = uattr->size;
  if (int err = CopyAttr(uattr, limits, &attr, &why)) {
    // E2BIG wrote the kernel's size back into *uattr: describe the size passed.
    perf_event_attr as_passed = *uattr;
    as_passed.size = passed_size;
    return Fail<int>(err, OpenCall(&as_passed, pid, cpu, group_fd, flags), why);
  }
  if (int err = CheckOpenAttr(attr, flags, pid, cpu, limits, &why)) return Fail<int>(err, call(), why);

  // get_unused_fd_flags(): the fd is taken first and given back on failure.
  const bool cloexec = (flags & PERF_FLAG_FD_CLOEXEC) != 0;
  int fd = -1;
  if (int err = NewEventFd(cloexec, &fd)) return Fail<int>(err, call(), "no fd for the event");
  if (creds_.nofile != 0 && static_cast<uint64_t>(fd) >= creds_.nofile) {  // get_unused_fd_flags()
    ReleaseEventFd(fd, /*memfd_backed=*/false, cloexec);
    return Fail<int>(EMFILE, call(), fmt::format("fd {} would pass RLIMIT_NOFILE {}", fd, creds_.nofile));
  }
  auto fail = [&](int err, std::string text) {
    ReleaseEventFd(fd, /*memfd_backed=*/false, cloexec);
    return Fail<int>(err, call(), text);
  };

  MockEvent* group_leader = nullptr;
  MockEvent* output_event = nullptr;
  if (group_fd != -1) {
    MockEvent* g = FindFd(group_fd);
    if (g == nullptr) return fail(EBADF, fmt::format("group_fd {} is not a perf event", group_fd));
    group_leader = g;
    if (flags & PERF_FLAG_FD_OUTPUT) output_event = g;
    if (flags & PERF_FLAG_FD_NO_GROUP) group_leader = nullptr;
  }
  // With PERF_FLAG_PID_CGROUP, pid is a cgroup fd (resolved in perf_event_alloc() below).
  const bool cgroup = (flags & PERF_FLAG_PID_CGROUP) != 0;
  bool task = false;
  if (pid != -1 && !cgroup) {
    // find_lively_task_by_vpid(): only the simulated task exists (its children exit at once).
    if (int err = FindTask(pid, &why)) return fail(err, why);
    task = true;
  }
  if (task && group_leader != nullptr && group_leader->attr.inherit != attr.inherit) {
    return fail(EINVAL, "group leader and member disagree on attr.inherit");
  }

  // perf_event_alloc().
  if (static_cast<unsigned>(cpu) >= static_cast<unsigned>(profile_.ncpus) && (!task || cpu != -1)) {
    return fail(EINVAL, fmt::format("cpu {} with pid {} (nr_cpu_ids {})", cpu, pid, profile_.ncpus));
  }
  if (attr.sigtrap && !task) return fail(EINVAL, "sigtrap needs a task");
  if (attr.inherit && (attr.sample_type & PERF_SAMPLE_READ) && !(attr.sample_type & PERF_SAMPLE_TID)) {
    return fail(EINVAL, "inherit with PERF_SAMPLE_READ needs PERF_SAMPLE_TID");
  }

  std::unique_ptr<MockEvent> ev = NewEvent();
  ev->attr = attr;
  ev->pid = task ? (pid == 0 ? task_.tid : pid) : -1;
  ev->cpu = cpu;
  ev->fd = fd;
  ev->cloexec = cloexec;  // memfd: none until BackWithMemfd()
  // perf_init_event(): the PMU registered for attr.type. PERF_TYPE_HARDWARE and
  // HW_CACHE (and RAW, when the core PMU's type is dynamic, as on arm64) go
  // to the core PMU: perf_init_event()'s fallback over all PMUs, of which only
  // it accepts them; without one they are ENOENT.
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
  const bool software = clock_type || pmu->type == PERF_TYPE_SOFTWARE;
  bool no_exclude = false, no_task_ctx = false;  // the PMU's PERF_PMU_CAP_NO_EXCLUDE, perf_invalid_context
  if (clock_type) {
    const uint64_t config = attr.type == profile_.cpu_clock_type ? PERF_COUNT_SW_CPU_CLOCK : PERF_COUNT_SW_TASK_CLOCK;
    if (attr.config != config) {
      return fail(ENOENT, fmt::format("the {} PMU (type {}) only has config {}", config == 0 ? "cpu_clock" : "task_clock",
                                      attr.type, config));
    }
    if (int err = SoftwareEventInit(*ev, &why)) return fail(err, why);
  } else if (pmu->type == PERF_TYPE_SOFTWARE) {
    if (int err = SoftwareEventInit(*ev, &why)) return fail(err, why);
  } else if (pmu->type == PERF_TYPE_TRACEPOINT) {
    if (int err = TracepointEventInit(*ev, &why)) return fail(err, why);
  } else if (pmu->type == PERF_TYPE_BREAKPOINT) {
    if (int err = BreakpointEventInit(*ev, &why)) return fail(err, why);
  } else if (pmu->name == "intel_pt") {
    if (int err = PtEventInit(*ev, *pmu, &why)) return fail(err, why);
  } else if (pmu->name == "uprobe") {
    UprobeTarget target;
    if (int err = UprobeEventInit(attr, SysAdmin(), UprobeSwbpInsnSize(profile_.arch), HostUprobeFiles(), &why, &target)) {
      return fail(err, why);
    }
    ev->uprobe = std::make_shared<const UprobeTarget>(target);  // counted by UprobeExecute() (mock_uprobes.cc)
    // A trace event (perf_trace_event_init()): filters see the common_* fields only.
    ev->tracepoint = UprobeTraceModel();
    ev->pmu = PmuId::kTracepoint;
    PeriodStateInit(*ev);
  } else if (pmu->name == "msr" || pmu->name == "power") {
    const bool msr = pmu->name == "msr";
    if (int err = msr ? MsrEventInit(attr, *pmu, &why) : RaplEventInit(attr, cpu, *pmu, &why)) return fail(err, why);
    ev->pmu = PmuId::kFreeRunning;
    no_exclude = true;    // PERF_PMU_CAP_NO_EXCLUDE
    no_task_ctx = !msr;   // RAPL: perf_invalid_context
  } else if (profile_.has_hardware && pmu->type == profile_.core_pmu_type) {
    if (int err = HardwareEventInit(attr, pmu->type, profile_.hardware, &ev->hw_event, &why)) return fail(err, why);
    ev->pmu = PmuId::kCore;
    PeriodStateInit(*ev);
    no_exclude = !profile_.hardware.mode_exclusion;  // PERF_PMU_CAP_NO_EXCLUDE
  }
  // perf_try_init_event(), right after pmu->event_init(): software, tracepoint
  // and breakpoint PMUs lack PERF_PMU_CAP_EXTENDED_REGS; then
  // PERF_PMU_CAP_NO_EXCLUDE refuses every exclude_* bit (in that order:
  // fidelity found msr with exclude_idle and an XMM register EOPNOTSUPP).
  if (HasExtendedRegs(attr, limits.x86_64)) return fail(EOPNOTSUPP, "XMM registers need PERF_PMU_CAP_EXTENDED_REGS");
  if (no_exclude && (attr.exclude_user || attr.exclude_kernel || attr.exclude_hv || attr.exclude_idle ||
                     attr.exclude_host || attr.exclude_guest)) {
    return fail(EINVAL, "the PMU has PERF_PMU_CAP_NO_EXCLUDE: no exclude_* bit may be set (perf_try_init_event())");
  }
  // perf_event_alloc(), after perf_init_event(): "Disallow uncore-task events".
  if (no_task_ctx && (task || cgroup)) return fail(EINVAL, "no task events on an uncore PMU (perf_invalid_context)");
  // perf_event_alloc(), after perf_init_event(): capabilities these PMUs lack
  // (PERF_PMU_CAP_AUX_OUTPUT, PERF_PMU_CAP_AUX_PAUSE), in the kernel's order.
  if (attr.aux_output) return fail(EOPNOTSUPP, "aux_output needs PERF_PMU_CAP_AUX_OUTPUT");
  const bool aux_pause = AuxPause(attr), aux_resume = AuxResume(attr);
  if (aux_pause && aux_resume) return fail(EINVAL, "aux_pause and aux_resume together");
  if (AuxStartPaused(attr)) return fail(EOPNOTSUPP, "aux_start_paused needs PERF_PMU_CAP_AUX_PAUSE");
  // perf_event_alloc() -> perf_cgroup_connect(): the cgroup fd is resolved
  // after the PMU init, before get_callchain_buffers(). No cgroup fd exists in the model.
  if (cgroup) {
    if (int err = CgroupConnect(pid, &why)) return fail(err, why);
  }
  // get_callchain_buffers().
  if ((attr.sample_type & PERF_SAMPLE_CALLCHAIN) && attr.sample_max_stack > profile_.max_stack) {
    return fail(EOVERFLOW, fmt::format("sample_max_stack {} > perf_event_max_stack {}", attr.sample_max_stack,
                                       profile_.max_stack));
  }
  // perf_event_open(), right after perf_event_alloc(): a PMU with
  // PERF_PMU_CAP_NO_INTERRUPT cannot sample.
  if (ev->pmu == PmuId::kCore && !profile_.hardware.overflow_interrupt && attr.sample_period != 0) {
    return fail(EOPNOTSUPP, "the PMU has no overflow interrupt (PERF_PMU_CAP_NO_INTERRUPT): no sampling events");
  }
  // perf_event_open(), after perf_event_alloc(): perf_event_set_clock(). Clocks
  // that are not NMI-safe (REALTIME, BOOTTIME, TAI) need PERF_PMU_CAP_NO_NMI,
  // which only the software PMUs (swevent, cpu_clock, task_clock) have.
  if (attr.use_clockid) {
    if (CheckClockId(attr.clockid) != 0) {
      return fail(EINVAL, fmt::format("clockid {} is not supported (perf_event_set_clock())", attr.clockid));
    }
    const bool nmi_safe = attr.clockid == CLOCK_MONOTONIC || attr.clockid == CLOCK_MONOTONIC_RAW;
    if (!nmi_safe && !software) {
      return fail(EINVAL, fmt::format("clockid {} is not NMI-safe and the PMU lacks PERF_PMU_CAP_NO_NMI "
                                      "(perf_event_set_clock())",
                                      attr.clockid));
    }
  }
  // find_get_context(): a CPU-wide event needs perf_allow_cpu().
  if (int err = CheckTaskPermission(task ? ev->pid : -1, &why)) return fail(err, why);
  if (!task && !Perfmon() && profile_.perf_event_paranoid > 0) {
    return fail(EACCES, fmt::format("CPU-wide events need privilege at perf_event_paranoid={}",
                                    profile_.perf_event_paranoid));
  }
  if (group_leader != nullptr) {
    if (!group_leader->is_leader()) return fail(EINVAL, "group_fd is itself a group member");
    if (ClockOf(*group_leader) != ClockOf(*ev)) return fail(EINVAL, "group members must share the clock");
    if (group_leader->cpu != cpu) return fail(EINVAL, "group members must be on the same CPU");
    if (group_leader->pid != ev->pid) return fail(EINVAL, "group members must be on the same context (task or CPU)");
    if (attr.exclusive || attr.pinned) return fail(EINVAL, "only a group leader can be pinned or exclusive");
    // perf_event_validate_size() (Linux 6.7+): with the new member, no
    // event of the group may have a read_format record over 16 KiB.
    const size_t nr = group_leader->siblings.size() + 2;
    bool too_big = ReadFormatSize(attr.read_format, nr) > kMaxReadSize ||
                   ReadFormatSize(group_leader->attr.read_format, nr) > kMaxReadSize;
    for (const MockEvent* s : group_leader->siblings) too_big |= ReadFormatSize(s->attr.read_format, nr) > kMaxReadSize;
    if (too_big) {
      return fail(E2BIG, fmt::format("a group of {} would make a read_format record over {} bytes", nr, kMaxReadSize));
    }
    // x86 validate_group(): the group's hardware events must fit the counters together.
    if (ev->pmu == PmuId::kCore) {
      std::vector<HwEvent> group;
      for (const MockEvent* e : {group_leader}) {
        if (e->pmu == PmuId::kCore) group.push_back(e->hw_event);
      }
      for (const MockEvent* s : group_leader->siblings) {
        if (s->pmu == PmuId::kCore) group.push_back(s->hw_event);
      }
      group.push_back(ev->hw_event);
      if (!HardwareFits(group, profile_.hardware)) {
        return fail(EINVAL, fmt::format("{} hardware events of the group do not fit {} general-purpose and {} fixed "
                                        "counters (validate_group())",
                                        group.size(), profile_.hardware.gp_counters, profile_.hardware.fixed_counters));
      }
    }
  }
  if (output_event != nullptr) {
    if (int err = SetOutput(*ev, output_event, &why)) return fail(err, why);
  }
  // perf_event_open(), under the context lock after perf_event_validate_size()
  // (so after get_callchain_buffers() in perf_event_alloc()): has_aux_action()
  // (aux_sample_size, aux_pause or aux_resume), PERF_SAMPLE_AUX or not;
  // perf_get_aux_event() then needs a group leader whose PMU has
  // snapshot_aux (intel_pt).
  if ((attr.aux_sample_size != 0 || aux_pause || aux_resume) &&
      (group_leader == nullptr || group_leader->pmu != PmuId::kIntelPt)) {
    return fail(EINVAL, "no AUX event to take AUX data from (perf_get_aux_event())");
  }

  ev->id = next_id_++;
  if (group_leader != nullptr) {
    ev->leader = group_leader;
    group_leader->siblings.push_back(ev.get());
  }
  MockEvent* e = ev.get();
  events_.push_back(std::move(ev));
  fds_.Insert(fd, e);
  // perf_event_alloc(): state OFF if disabled (enable_on_exec waits for an exec that never comes).
  if (!attr.disabled) EnableEvent(*e);
  return Result<int>::OkWith(fd, call);
}

// The hot path (read(2) of a counting event, bench/mock_bench.cc): an event
// that is not in error, without PERF_FORMAT_GROUP, into a buffer that holds
// its record. Everything else takes ReadSlow(), which makes the same checks
// in the kernel's order.
Result<size_t> MockBackend::Read(int fd, void* buf, size_t len) {
  MockEvent* ev = FindFd(fd);
  if (ev != nullptr && !ev->error && !(ev->attr.read_format & PERF_FORMAT_GROUP) &&
      len >= kReadOneSize[ev->attr.read_format & (PERF_FORMAT_MAX - 1)]) [[likely]] {
    // The Result is made first, in place, while the arguments are still in
    // registers; the record EncodeReadOne() writes is ReadSize() bytes (perf_read_one()).
    auto read_one = [&] {
      const size_t size = kReadOneSize[ev->attr.read_format & (PERF_FORMAT_MAX - 1)];  // ReadSize(*ev)
      Result<size_t> r = Result<size_t>::OkWith(size, [&] { return ReadCall(fd, len); });
      EncodeReadOne(*ev, buf);
      return r;
    };
    return read_one();
  }
  return ReadSlow(fd, buf, len);
}

Result<size_t> MockBackend::ReadSlow(int fd, void* buf, size_t len) {
  CallDescription call = ReadCall(fd, len);
  MockEvent* ev = FindFd(fd);
  if (ev == nullptr) {
    if (IsSpareFd(fd)) return Result<size_t>::Failure(EBADF, call);
    const ssize_t n = ::read(fd, buf, len);
    if (n < 0) return Result<size_t>::Failure(errno, call);
    return Result<size_t>::Ok(static_cast<size_t>(n), call);
  }
  // __perf_read(): "Return end-of-file for a read on an event that is in
  // error state" (a pinned group that could not go on), before the size check.
  if (ev->error) return Result<size_t>::Ok(0, std::move(call));
  // __perf_read(): the buffer must hold the whole read_format record.
  const size_t size = ReadSize(*ev);
  if (len < size) return Fail<size_t>(ENOSPC, call, fmt::format("read_format needs {} bytes", size));
  if (!(ev->attr.read_format & PERF_FORMAT_GROUP)) return Result<size_t>::Ok(EncodeReadOne(*ev, buf), std::move(call));
  std::vector<std::byte> out;
  EncodeReadFormat(ev->attr.read_format, ReadEventValues(*ev), &out);
  std::memcpy(buf, out.data(), out.size());
  return Result<size_t>::Ok(out.size(), std::move(call));
}

// kernel/events/core.c perf_event_set_output().
int MockBackend::SetOutput(MockEvent& ev, MockEvent* output, std::string* why) {
  auto fail = [&](std::string text) {
    *why = std::move(text);
    return EINVAL;
  };
  if (output != nullptr) {
    if (output == &ev) return fail("an event cannot redirect to itself");
    if (output->cpu != ev.cpu) return fail("cross-CPU buffers are not allowed");
    if (output->cpu == -1 && output->pid != ev.pid) return fail("a per-task buffer must be the same task's");
    if (ClockOf(*output) != ClockOf(ev)) return fail("events with different clocks cannot share a buffer");
    if (output->attr.write_backward != ev.attr.write_backward) return fail("write_backward differs");
  }
  // "Can't redirect output if we've got an active mmap()".
  if (ev.owns_rb && ev.rb != nullptr) return fail("the event has its own mapped buffer");
  std::shared_ptr<MockRingBuffer> rb;
  if (output != nullptr) {
    rb = output->rb;
    if (rb == nullptr || rb->mmap_count == 0) return fail("the target has no mapped buffer");
  }
  ev.rb = std::move(rb);
  ev.owns_rb = false;
  return 0;
}

// _perf_event_period() and __perf_event_period().
int MockBackend::PeriodIoctl(MockEvent& ev, uintptr_t arg, std::string* why) {
  if (arg == 0) {
    *why = "NULL period pointer";
    return EFAULT;
  }
  uint64_t value;
  std::memcpy(&value, reinterpret_cast<const void*>(arg), sizeof value);
  if (!ev.is_sampling()) {
    *why = "not a sampling event";
    return EINVAL;
  }
  if (value == 0) {
    *why = "period 0";
    return EINVAL;
  }
  if (ev.attr.freq) {
    if (value > profile_.max_sample_rate) {
      *why = fmt::format("frequency {} > perf_event_max_sample_rate", value);
      return EINVAL;
    }
    ev.attr.sample_freq = value;
  } else {
    if (value & (uint64_t{1} << 63)) {
      *why = "period has bit 63 set";
      return EINVAL;
    }
    ev.attr.sample_period = value;
    ev.hw.sample_period = value;
  }
  if (ev.active) {
    // "We could be throttled; unthrottle now to avoid the tick trying to
    // unthrottle while we already re-started the event."
    if (ev.hw.interrupts == kMaxInterrupts) {
      ev.hw.interrupts = 0;
      LogThrottle(ev, /*unthrottle=*/true);
    }
    SoftwareEventStop(ev);
    ev.hw.period_left = 0;
    SoftwareEventStart(ev, /*add=*/false);
  } else {
    ev.hw.period_left = 0;
  }
  UpdateUserPage(ev);
  return 0;
}

// perf_event_modify_attr() -> perf_event_modify_breakpoint(): the event is
// disabled, the new attr checked (hw_breakpoint_parse(), then every field but
// bp_addr/bp_type/bp_len/disabled must equal the event's), copied, and the
// event re-enabled only if its attr.disabled is 0 — the open-time value when
// the check fails, so a breakpoint opened disabled stays disabled after any
// MODIFY_ATTRIBUTES that does not say disabled = 0 (Linux 6.18).
int MockBackend::ModifyBreakpoint(MockEvent& ev, const perf_event_attr& new_attr, std::string* why) {
  ev.attr.sig_data = new_attr.sig_data;  // perf_event_modify_copy_attr()
  DisableEvent(ev);
  int err = BreakpointParse(new_attr, BreakpointArchOf(profile_.arch), BreakpointTaskOf(ev), why);
  if (err == 0) {
    perf_event_attr old_attr = ev.attr;
    BreakpointCopyAttr(new_attr, &old_attr);
    if (std::memcmp(&old_attr, &new_attr, sizeof old_attr) != 0) {
      *why = "only bp_addr, bp_type, bp_len and disabled may change";
      err = EINVAL;
    } else {
      BreakpointCopyAttr(new_attr, &ev.attr);
    }
  }
  if (!ev.attr.disabled) EnableEvent(ev);
  return err;
}

uint32_t MockBackend::KernelAttrType(const MockEvent& ev) const {
  if (profile_.cpu_clock_type != 0 && ev.pmu == PmuId::kCpuClock) return profile_.cpu_clock_type;
  if (profile_.task_clock_type != 0 && ev.pmu == PmuId::kTaskClock) return profile_.task_clock_type;
  return ev.attr.type;
}

// The hot path (bench/mock_bench.cc): ENABLE, DISABLE and RESET of one
// event (no PERF_IOC_FLAG_GROUP) that has no inherited copies. The rest, and
// every failure, goes through IoctlSlow(): _perf_ioctl() in full.
Result<int> MockBackend::Ioctl(int fd, unsigned long request, uintptr_t arg) {
  MockEvent* ev = FindFd(fd);
  if (ev != nullptr && !(arg & PERF_IOC_FLAG_GROUP) && ev->children.empty()) [[likely]] {
    // The Result (0: these cannot fail) is made first, in place, while the
    // arguments are still in registers; then the action.
    auto ok_after = [&](auto action) {
      Result<int> r = Result<int>::OkWith(0, [&] { return IoctlCall(fd, request, arg); });
      action();
      return r;
    };
    switch (request) {
      case PERF_EVENT_IOC_ENABLE:
        return ok_after([&] { EnableEvent(*ev); });
      case PERF_EVENT_IOC_DISABLE:
        return ok_after([&] { DisableEvent(*ev); });
      case PERF_EVENT_IOC_RESET:
        return ok_after([&] { ResetEvent(*ev); });
      default:
        break;
    }
  }
  return IoctlSlow(fd, request, arg);
}

// _perf_event_reset(): the count only; times, child counts and the period stay.
void MockBackend::ResetEvent(MockEvent& ev) {
  ev.count = 0;
  UpdateUserPage(ev);
}

// _perf_ioctl().
Result<int> MockBackend::IoctlSlow(int fd, unsigned long request, uintptr_t arg) {
  CallDescription call = IoctlCall(fd, request, arg);
  MockEvent* ev = FindFd(fd);
  if (ev == nullptr) {
    return Fail<int>(FdIsOpen(fd) ? ENOTTY : EBADF, call, "not a perf event fd");
  }
  // perf_event_for_each_child(): the event, then its inherited copies.
  auto with_children = [](MockEvent& e, auto& fn) {
    fn(e);
    if (e.children.empty()) return;
    const std::vector<MockEvent*> kids = e.children;  // a copy: fn may change the list
    for (MockEvent* c : kids) fn(*c);
  };
  auto group_or_self = [&](auto fn) {
    if (arg & PERF_IOC_FLAG_GROUP) {
      MockEvent* leader = ev->leader;
      with_children(*leader, fn);
      for (MockEvent* s : leader->siblings) with_children(*s, fn);
    } else {
      with_children(*ev, fn);
    }
  };
  switch (request) {
    case PERF_EVENT_IOC_ENABLE:
      group_or_self([&](MockEvent& e) { EnableEvent(e); });
      return Result<int>::Ok(0, std::move(call));
    case PERF_EVENT_IOC_DISABLE:
      group_or_self([&](MockEvent& e) { DisableEvent(e); });
      return Result<int>::Ok(0, std::move(call));
    case PERF_EVENT_IOC_RESET:
      group_or_self([&](MockEvent& e) { ResetEvent(e); });
      return Result<int>::Ok(0, std::move(call));
    case PERF_EVENT_IOC_REFRESH:
      // _perf_event_refresh().
      if (ev->attr.inherit || !ev->is_sampling()) return Fail<int>(EINVAL, call, "inherited or not sampling");
      ev->event_limit += static_cast<int>(arg);
      EnableEvent(*ev);
      return Result<int>::Ok(0, std::move(call));
    case PERF_EVENT_IOC_PERIOD: {
      std::string why;
      if (int err = PeriodIoctl(*ev, arg, &why)) return Fail<int>(err, call, why);
      return Result<int>::Ok(0, std::move(call));
    }
    case PERF_EVENT_IOC_ID: {
      if (arg == 0) return Fail<int>(EFAULT, call, "NULL id pointer");
      const uint64_t id = ev->primary_id();
      std::memcpy(reinterpret_cast<void*>(arg), &id, sizeof id);
      return Result<int>::Ok(0, std::move(call));
    }
    case PERF_EVENT_IOC_SET_OUTPUT: {
      std::string why;
      MockEvent* output = nullptr;
      if (arg != ~uintptr_t{0}) {  // "if (arg != -1)"; otherwise fdget() of the (unsigned int) fd
        output = FindFd(static_cast<int>(static_cast<unsigned int>(arg)));
        if (output == nullptr) return Fail<int>(EBADF, call, "the output fd is not a perf event");
      }
      if (int err = SetOutput(*ev, output, &why)) return Fail<int>(err, call, why);
      return Result<int>::Ok(0, std::move(call));
    }
    case PERF_EVENT_IOC_SET_FILTER: {
      std::string why;
      // strndup_user() first, then perf_event_set_filter(): only tracepoints and address filters.
      if (arg == 0) return Fail<int>(EFAULT, call, "NULL filter string");
      if (ev->tracepoint == nullptr) return Fail<int>(EINVAL, call, "filters need a tracepoint or an address-filter PMU");
      // ftrace_profile_set_filter(): one filter per event, ever.
      if (ev->filter != nullptr) return Fail<int>(EEXIST, call, "the event already has a filter");
      std::unique_ptr<TraceFilter> f;
      const char* text = reinterpret_cast<const char*>(arg);
      if (int err = TraceFilter::Parse(*ev->tracepoint, std::string_view(text, ::strnlen(text, profile_.page_size)),
                                       &f, &why)) {
        return Fail<int>(err, call, why);
      }
      ev->filter = std::move(f);
      return Result<int>::Ok(0, std::move(call));
    }
    case PERF_EVENT_IOC_SET_BPF: {
      const int prog_fd = static_cast<int>(static_cast<unsigned int>(arg));
      return Fail<int>(FdIsOpen(prog_fd) ? EINVAL : EBADF, call, "not a BPF program fd (bpf_prog_get())");
    }
    case PERF_EVENT_IOC_PAUSE_OUTPUT: {
      MockRingBuffer* rb = ev->rb.get();
      if (rb == nullptr || rb->nr_pages() == 0) return Fail<int>(EINVAL, call, "no buffer with data pages");
      rb->SetPaused(arg != 0);  // rb_toggle_paused()
      return Result<int>::Ok(0, std::move(call));
    }
    case PERF_EVENT_IOC_QUERY_BPF: {
      // kernel/trace/bpf_trace.c perf_event_query_prog_array().
      if (!Perfmon()) return Fail<int>(EPERM, call, "needs CAP_PERFMON (perfmon_capable())");
      if (ev->attr.type != PERF_TYPE_TRACEPOINT) return Fail<int>(EINVAL, call, "only tracepoints have BPF programs");
      if (arg == 0) return Fail<int>(EFAULT, call, "NULL query");
      perf_event_query_bpf query;
      std::memcpy(&query, reinterpret_cast<const void*>(arg), sizeof query);
      if (query.ids_len > 64) return Fail<int>(E2BIG, call, "ids_len > BPF_TRACE_MAX_PROGS");
      const uint32_t prog_cnt = 0;  // no BPF programs in the model
      std::memcpy(reinterpret_cast<char*>(arg) + offsetof(perf_event_query_bpf, prog_cnt), &prog_cnt, sizeof prog_cnt);
      return Result<int>::Ok(0, std::move(call));
    }
    case PERF_EVENT_IOC_MODIFY_ATTRIBUTES: {
      std::string why;
      // perf_event_modify_attr(): only breakpoints can be modified.
      if (arg == 0) return Fail<int>(EFAULT, call, "NULL attr pointer");
      perf_event_attr new_attr;
      if (int err = CopyAttr(reinterpret_cast<perf_event_attr*>(arg), Limits(), &new_attr, &why)) {
        return Fail<int>(err, call, why);
      }
      // event->attr.type is the PMU's own type: perf_swevent_init() rewrote it
      // for cpu-clock/task-clock when they have their own PMUs (clock_pmu_types).
      const uint32_t type = KernelAttrType(*ev);
      if (new_attr.type != type) {
        return Fail<int>(EINVAL, call, fmt::format("attr.type {} is not the event's type {}", new_attr.type, type));
      }
      if (type != PERF_TYPE_BREAKPOINT) return Fail<int>(EOPNOTSUPP, call, "only breakpoint attributes can be modified");
      if (int err = ModifyBreakpoint(*ev, new_attr, &why)) return Fail<int>(err, call, why);
      return Result<int>::Ok(0, std::move(call));
    }
    default:
      return Fail<int>(ENOTTY, call, "unknown perf ioctl");
  }
}

// kernel/events/core.c perf_mmap() (mm/mmap.c do_mmap() for the generic checks).
Result<void*> MockBackend::Mmap(size_t length, int prot, int flags, int fd, off_t offset) {
  const CallDescription call = MmapCall(length, prot, flags, fd, offset);
  MockEvent* ev = FindFd(fd);
  if (ev == nullptr) {
    if (IsSpareFd(fd)) return Result<void*>::Failure(EBADF, call);
    void* p = ::mmap(nullptr, length, prot, flags, fd, offset);
    if (p == MAP_FAILED) return Result<void*>::Failure(errno, call);
    foreign_mappings_[reinterpret_cast<uintptr_t>(p)] = length;
    return Result<void*>::Ok(p, call);
  }
  const size_t page = profile_.page_size;
  if (length == 0) return Fail<void*>(EINVAL, call, "zero length");
  if (offset < 0 || static_cast<size_t>(offset) % page != 0) return Fail<void*>(EINVAL, call, "unaligned offset");
  // The perf fd lives on a noexec mount (anon inode): do_mmap() refuses PROT_EXEC.
  if (prot & PROT_EXEC) return Fail<void*>(EPERM, call, "PROT_EXEC on a noexec file");
  const size_t vma_size = (length + page - 1) / page * page;
  // "Don't allow mmap() of inherited per-task counters."
  if (ev->cpu == -1 && ev->attr.inherit) return Fail<void*>(EINVAL, call, "inherited per-task event");
  if (!(flags & MAP_SHARED)) return Fail<void*>(EINVAL, call, "the mapping must be MAP_SHARED");
  if (int err = BackWithMemfd(*ev)) return Fail<void*>(err, call, "no memfd for the buffer");
  if (offset != 0) return MmapAux(*ev, length, prot, offset, call.str());
  const size_t nr_pages = vma_size / page - 1;
  if (nr_pages != 0 && (nr_pages & (nr_pages - 1)) != 0) {
    return Fail<void*>(EINVAL, call, fmt::format("{} data pages is not a power of two", nr_pages));
  }

  std::shared_ptr<MockRingBuffer> rb = ev->rb;
  if (rb != nullptr) {
    if (rb->nr_pages() != nr_pages) {
      return Fail<void*>(EINVAL, call, fmt::format("the buffer has {} data pages", rb->nr_pages()));
    }
    if (!ev->owns_rb) return Fail<void*>(EBUSY, call, "the event's output is redirected (SET_OUTPUT)");
  } else {
    // rb_alloc(): the page array must fit a kmalloc (order <= MAX_PAGE_ORDER).
    if (nr_pages >= (size_t{1} << 19)) return Fail<void*>(ENOMEM, call, "buffer too large for rb_alloc()");
    // perf_mmap(): perf_event_mlock_kb per user (times the CPUs), then RLIMIT_MEMLOCK.
    uint64_t user_extra = 0, extra = 0;
    if (!MlockLimits(nr_pages + 1, &user_extra, &extra)) {
      return Fail<void*>(EPERM, call, "over perf_event_mlock_kb and RLIMIT_MEMLOCK without CAP_IPC_LOCK");
    }
    const uint64_t watermark = ev->attr.watermark ? ev->attr.wakeup_watermark : 0;
    auto created = MockRingBuffer::Create(ev->memfd, page, nr_pages, (prot & PROT_WRITE) != 0, watermark);
    if (!created.ok()) return Fail<void*>(created.error(), call, created.call());
    rb = *created;
    locked_vm_ += user_extra;
    pinned_vm_ += extra;
    rb_charge_[rb.get()] = {user_extra, extra};
    ev->rb = rb;
    ev->owns_rb = true;
  }
  void* p = ::mmap(nullptr, vma_size, prot, MAP_SHARED, ev->memfd, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    if (rb->mmap_count == 0) ReleaseBuffer(rb);
    return Result<void*>::Failure(err, call);
  }
  ++rb->mmap_count;
  mappings_[reinterpret_cast<uintptr_t>(p)] = Mapping{vma_size, ev, rb};
  UpdateUserPage(*ev);
  return Result<void*>::Ok(p, call);
}

// perf_mmap_close() of the last mapping: every event writing to the buffer
// is detached (ring_buffer_attach(event, NULL)) and the buffer freed.
void MockBackend::ReleaseBuffer(const std::shared_ptr<MockRingBuffer>& rb) {
  auto charge = rb_charge_.find(rb.get());
  if (charge != rb_charge_.end()) {
    locked_vm_ -= charge->second.first;
    pinned_vm_ -= charge->second.second;
    rb_charge_.erase(charge);
  }
  for (auto& e : events_) {
    if (e->rb == rb) {
      e->rb.reset();
      e->owns_rb = false;
    }
  }
}

Result<void> MockBackend::Munmap(void* addr, size_t length) {
  const CallDescription call = MunmapCall(addr, length);
  const uintptr_t key = reinterpret_cast<uintptr_t>(addr);
  if (auto f = foreign_mappings_.find(key); f != foreign_mappings_.end()) {
    if (::munmap(addr, length) != 0) return Result<void>::Failure(errno, call);
    foreign_mappings_.erase(f);
    return Result<void>::Ok({}, call);
  }
  auto it = mappings_.find(key);
  const size_t rounded = (length + profile_.page_size - 1) / profile_.page_size * profile_.page_size;
  if (it == mappings_.end() || it->second.length != rounded) {
    // Splitting a perf buffer mapping is refused (perf_mmap_may_split()).
    return Fail<void>(EINVAL, call, "not a whole mapping returned by Mmap");
  }
  Mapping m = std::move(it->second);
  mappings_.erase(it);
  ::munmap(addr, m.length);
  if (m.aux) UnmapAux(m);
  if (--m.rb->mmap_count == 0) ReleaseBuffer(m.rb);
  // An event whose fd is closed lives while a mapping holds its file.
  MockEvent* ev = m.event;
  if (ev->fd < 0) {
    bool mapped = false;
    for (const auto& [a, other] : mappings_) mapped |= other.event == ev;
    if (!mapped) DestroyEvent(ev);
  }
  return Result<void>::Ok({}, call);
}

// perf_release() -> perf_event_release_kernel(): group members become
// singletons (perf_group_detach()).
void MockBackend::DestroyEvent(MockEvent* ev) {
  if (!ev->children.empty()) FreeChildren(ev);
  if (ev->active) SchedOut(*ev);
  if (ev->is_leader()) {
    // perf_group_detach(): the siblings become singleton groups, but nothing
    // schedules those that were not running: they wait for the task's next
    // sched-in (or a ctx_resched() of their PMU) — Linux 6.18.
    for (MockEvent* s : ev->siblings) {
      s->leader = s;
      if (s->enabled && !s->active && s->pid != -1) s->deferred = true;
    }
    ev->siblings.clear();
  } else {
    auto& sib = ev->leader->siblings;
    sib.erase(std::remove(sib.begin(), sib.end(), ev), sib.end());
  }
  ev->rb.reset();
  auto it = std::find_if(events_.begin(), events_.end(), [&](const auto& p) { return p.get() == ev; });
  if (it != events_.end()) {
    std::unique_ptr<MockEvent> freed = std::move(*it);
    events_.erase(it);
    RecycleEvent(std::move(freed));
  }
  Reschedule();
}

std::unique_ptr<MockEvent> MockBackend::NewEvent() {
  if (free_events_.empty()) return std::make_unique<MockEvent>();
  std::unique_ptr<MockEvent> ev = std::move(free_events_.back());
  free_events_.pop_back();
  return ev;
}

void MockBackend::RecycleEvent(std::unique_ptr<MockEvent> ev) {
  if (free_events_.size() >= kMaxFreeEvents) return;  // freed here
  // A new event in the old one's memory: what it held (buffer, filter, PT
  // trace) goes now, as with delete.
  MockEvent* raw = ev.get();
  raw->~MockEvent();
  ::new (static_cast<void*>(raw)) MockEvent();
  free_events_.push_back(std::move(ev));
}

Result<void> MockBackend::Close(int fd) {
  auto call = [fd] { return CloseCall(fd); };  // made in place in the Result
  MockEvent* ev = FindFd(fd);
  if (ev == nullptr) {
    if (IsSpareFd(fd)) return Result<void>::Failure(EBADF, call());
    if (::close(fd) != 0) return Result<void>::Failure(errno, call());
    epolls_.erase(fd);
    return Result<void>::OkWith(call);
  }
  // The fd goes (reused as a spare when it has no memfd); a mapping keeps
  // the memfd, and the event with it.
  ReleaseEventFd(fd, ev->memfd >= 0, ev->cloexec);
  fds_.Erase(fd);
  ev->fd = -1;
  bool mapped = false;
  for (const auto& [a, m] : mappings_) mapped |= m.event == ev;
  if (!mapped) DestroyEvent(ev);
  return Result<void>::OkWith(call);
}

// perf_event_task_enable()/disable(): every event the task created (its
// owner list), each with its children; disabled=1 events are enabled too.
Result<int> MockBackend::Prctl(int option) {
  const std::string call = DescribePrctl(option);
  if (option == PR_TASK_PERF_EVENTS_ENABLE) {
    for (auto& e : events_) EnableEvent(*e);
    return Result<int>::Ok(0, call);
  }
  if (option == PR_TASK_PERF_EVENTS_DISABLE) {
    for (auto& e : events_) DisableEvent(*e);
    return Result<int>::Ok(0, call);
  }
  return Fail<int>(EINVAL, call, "only PR_TASK_PERF_EVENTS_ENABLE/DISABLE are modelled");
}

// do_poll() over perf_poll(): no rb -> POLLHUP; else rb->poll, cleared by the
// read. Nothing runs concurrently, so the timeout is never waited for.
Result<int> MockBackend::Poll(std::span<pollfd> fds, int timeout_ms) {
  const std::string call = DescribePoll(fds, timeout_ms);
  int ready = 0;
  for (pollfd& p : fds) {
    p.revents = 0;
    if (p.fd < 0) continue;
    if (MockEvent* ev = FindFd(p.fd)) {
      const uint32_t mask = PerfPoll(*ev);
      p.revents = static_cast<short>(mask & (static_cast<uint32_t>(static_cast<uint16_t>(p.events)) | POLLERR | POLLHUP));
    } else {
      pollfd one{p.fd, p.events, 0};
      if (IsSpareFd(p.fd)) {
        one.revents = POLLNVAL;  // closed
      } else if (::poll(&one, 1, 0) < 0) {
        return Result<int>::Failure(errno, call);
      }
      p.revents = one.revents;
    }
    if (p.revents != 0) ++ready;
  }
  return Result<int>::Ok(ready, call);
}

// The simulated tracefs: events/<system>/<name>/id from the profile.
Result<uint64_t> MockBackend::TracepointId(std::string_view system, std::string_view name) {
  const std::string key = fmt::format("{}:{}", system, name);
  const std::string call = fmt::format("tracepoint_id({}): events/{}/{}/id", key, system, name);
  auto it = profile_.tracepoints.find(key);
  if (it == profile_.tracepoints.end()) {
    return Fail<uint64_t>(ENOENT, call, fmt::format("profile '{}' has no such tracepoint", profile_.name));
  }
  return Result<uint64_t>::Ok(it->second, call);
}

Result<int> MockBackend::Fcntl(int fd, int cmd, long arg) {
  const CallDescription call = FcntlCall(fd, cmd, arg);
  if (MockEvent* ev = FindFd(fd)) {
    // The fd's own flag and the file's status flags need no file of its own;
    // the rest (F_SETFL, F_SETFD, F_DUPFD, locks, ...) act on the memfd.
    if (cmd != F_GETFD && cmd != F_GETFL && cmd != F_GETOWN && cmd != F_SETOWN && cmd != F_GETOWN_EX &&
        cmd != F_SETOWN_EX && cmd != F_GETSIG && cmd != F_SETSIG) {
      if (int err = BackWithMemfd(*ev)) return Fail<int>(err, call, "no memfd for the event");
    }
    if (std::optional<Result<int>> r = EventFcntl(*ev, fd, cmd, arg)) return *r;  // mock_signals.cc
  } else if (IsSpareFd(fd)) {
    return Result<int>::Failure(EBADF, call);
  }
  int r = ::fcntl(fd, cmd, arg);
  if (r < 0) return Result<int>::Failure(errno, call);
  // perf_event_open() makes the file with anon_inode_getfile(..., O_RDWR)
  // (fs/anon_inodes.c): f_flags carry no O_LARGEFILE, which the memfd behind
  // the model has (memfd_create() -> alloc_file_pseudo() with O_LARGEFILE).
  // The kernel's O_LARGEFILE (asm-generic/fcntl.h 00100000): glibc spells it 0 on 64-bit.
  constexpr int kKernelOLargefile = 0100000;
  if (cmd == F_GETFL && FindFd(fd) != nullptr) {
    r &= ~kKernelOLargefile;
    if (FindFd(fd)->async) r |= O_ASYNC;  // modelled: EventFcntl()
  }
  return Result<int>::Ok(r, call);
}

}  // namespace perftest::mock

namespace perftest {

std::unique_ptr<Backend> MakeMockBackend(MockProfile profile, MockModels models) {
  return std::make_unique<mock::MockBackend>(std::move(profile), std::move(models));
}

}  // namespace perftest
