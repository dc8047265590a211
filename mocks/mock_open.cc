// MockBackend, perf_event_open(2): SYSCALL_DEFINE5(perf_event_open) of
// kernel/events/core.c, split along the kernel's own helpers and in its order:
//   PerfEventOpen()        flags, perf_copy_attr() (attr_validation.h), the
//                          privilege checks before the fd, get_unused_fd_flags()
//   OpenEvent()            group_fd, find_lively_task_by_vpid(), then:
//     PerfEventAlloc()     perf_event_alloc(): cpu, sigtrap, inherit rules,
//                          perf_init_event() (mock_pmu_init.cc), the PMU
//                          capability checks, perf_cgroup_connect(),
//                          get_callchain_buffers()
//     PerfEventSetClock()  PERF_PMU_CAP_NO_INTERRUPT, perf_event_set_clock()
//     FindGetContext()     perf_check_permission(), perf_allow_cpu()
//     CheckGroup()         the group leader rules, perf_event_validate_size(),
//                          x86 validate_group()
//     PerfGetAuxEvent()    has_aux_action() events need an AUX group leader
//   and perf_install_in_context().
// Known divergences from Linux 6.18, out of scope here (perftest_fidelity reports them):
//  - tracepoint ids the profile does not list get EINVAL (the host may know them);
//  - uprobe events count only the code Workload::kExecute runs (mocks/mock_uprobes.cc).
#include <fmt/format.h>
#include <linux/perf_event.h>

#include <cerrno>
#include <ctime>

#include "harness/describe.h"
#include "mocks/internal/mock_backend_impl.h"
#include "mocks/internal/mock_fail.h"

namespace perftest::mock {
namespace {

// perf_event_validate_size(): "16*1024", the largest read_format record.
constexpr size_t kMaxReadSize = 16 * 1024;

}  // namespace

AttrLimits MockBackend::Limits() const {
  AttrLimits l = limits_;
  l.privileged = Perfmon();
  return l;
}

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
  OpenRequest req{attr, pid, cpu, group_fd, flags, fd, cloexec, limits};
  if (int err = OpenEvent(req, &why)) {
    ReleaseEventFd(fd, /*memfd_backed=*/false, cloexec);
    return Fail<int>(err, call(), why);
  }
  return Result<int>::OkWith(fd, call);
}

// The rest of perf_event_open() once the fd is taken: errno and `why` on
// failure (the caller gives the fd back), 0 with the event installed.
int MockBackend::OpenEvent(OpenRequest& req, std::string* why) {
  const perf_event_attr& attr = req.attr;
  if (req.group_fd != -1) {
    MockEvent* g = FindFd(req.group_fd);
    if (g == nullptr) {
      *why = fmt::format("group_fd {} is not a perf event", req.group_fd);
      return EBADF;
    }
    req.group_leader = g;
    if (req.flags & PERF_FLAG_FD_OUTPUT) req.output_event = g;
    if (req.flags & PERF_FLAG_FD_NO_GROUP) req.group_leader = nullptr;
  }
  // With PERF_FLAG_PID_CGROUP, pid is a cgroup fd (resolved in perf_event_alloc()).
  req.cgroup = (req.flags & PERF_FLAG_PID_CGROUP) != 0;
  if (req.pid != -1 && !req.cgroup) {
    // find_lively_task_by_vpid(): only the simulated task exists (its children exit at once).
    if (int err = FindTask(req.pid, why)) return err;
    req.task = true;
  }
  if (req.task && req.group_leader != nullptr && req.group_leader->attr.inherit != attr.inherit) {
    *why = "group leader and member disagree on attr.inherit";
    return EINVAL;
  }

  std::unique_ptr<MockEvent> ev;
  PmuCaps caps;
  if (int err = PerfEventAlloc(req, &ev, &caps, why)) return err;
  if (int err = PerfEventSetClock(*ev, caps, why)) return err;
  if (int err = FindGetContext(req, *ev, why)) return err;
  if (req.group_leader != nullptr) {
    if (int err = CheckGroup(*req.group_leader, *ev, why)) return err;
  }
  if (req.output_event != nullptr) {
    if (int err = SetOutput(*ev, req.output_event, why)) return err;
  }
  if (int err = PerfGetAuxEvent(req, why)) return err;

  // perf_install_in_context().
  ev->id = next_id_++;
  if (req.group_leader != nullptr) {
    ev->leader = req.group_leader;
    req.group_leader->siblings.push_back(ev.get());
  }
  MockEvent* e = ev.get();
  events_.push_back(std::move(ev));
  fds_.Insert(req.fd, e);
  // perf_event_alloc(): state OFF if disabled (enable_on_exec waits for an exec that never comes).
  if (!attr.disabled) EnableEvent(*e);
  return 0;
}

// perf_event_alloc(): the event, its PMU's event_init() (perf_init_event(),
// mock_pmu_init.cc) and the checks around it, in the kernel's order.
int MockBackend::PerfEventAlloc(const OpenRequest& req, std::unique_ptr<MockEvent>* out, PmuCaps* caps,
                                std::string* why) {
  const perf_event_attr& attr = req.attr;
  const int cpu = req.cpu;
  if (static_cast<unsigned>(cpu) >= static_cast<unsigned>(profile_.ncpus) && (!req.task || cpu != -1)) {
    *why = fmt::format("cpu {} with pid {} (nr_cpu_ids {})", cpu, req.pid, profile_.ncpus);
    return EINVAL;
  }
  if (attr.sigtrap && !req.task) {
    *why = "sigtrap needs a task";
    return EINVAL;
  }
  // 7e8b255650fc "perf: Support PERF_SAMPLE_READ with inherit" (Linux 6.12)
  // allowed it with PERF_SAMPLE_TID; before, perf_event_open() refused every
  // inherited PERF_SAMPLE_READ event (seen in Debian's 6.1 arm64 guest).
  if (attr.inherit && (attr.sample_type & PERF_SAMPLE_READ) &&
      (!(attr.sample_type & PERF_SAMPLE_TID) || limits_.kernel_version < KernelVersion(6, 12))) {
    *why = limits_.kernel_version < KernelVersion(6, 12) ? "inherit with PERF_SAMPLE_READ (before Linux 6.12)"
                                                         : "inherit with PERF_SAMPLE_READ needs PERF_SAMPLE_TID";
    return EINVAL;
  }

  std::unique_ptr<MockEvent> ev = NewEvent();
  ev->attr = attr;
  ev->pid = req.task ? (req.pid == 0 ? task_.tid : req.pid) : -1;
  ev->cpu = cpu;
  ev->fd = req.fd;
  ev->cloexec = req.cloexec;  // memfd: none until BackWithMemfd()
  if (int err = PerfInitEvent(*ev, req.limits, caps, why)) return err;
  // perf_event_alloc(), after perf_init_event(): "Disallow uncore-task events".
  if (caps->no_task_ctx && (req.task || req.cgroup)) {
    *why = "no task events on an uncore PMU (perf_invalid_context)";
    return EINVAL;
  }
  // perf_event_alloc(): AUX output and pause/resume need the PMU's capabilities
  // (PERF_PMU_CAP_AUX_OUTPUT, PERF_PMU_CAP_AUX_PAUSE), in the kernel's order.
  if (attr.aux_output) {
    *why = "aux_output needs PERF_PMU_CAP_AUX_OUTPUT";
    return EOPNOTSUPP;
  }
  if (AuxPause(attr) && AuxResume(attr)) {
    *why = "aux_pause and aux_resume together";
    return EINVAL;
  }
  if (AuxStartPaused(attr)) {
    *why = "aux_start_paused needs PERF_PMU_CAP_AUX_PAUSE";
    return EOPNOTSUPP;
  }
  // perf_event_alloc() -> perf_cgroup_connect(): the cgroup fd is resolved
  // after the PMU init, before get_callchain_buffers(). No cgroup fd exists in the model.
  if (req.cgroup) {
    if (int err = CgroupConnect(req.pid, why)) return err;
  }
  // get_callchain_buffers().
  if ((attr.sample_type & PERF_SAMPLE_CALLCHAIN) && attr.sample_max_stack > profile_.max_stack) {
    *why = fmt::format("sample_max_stack {} > perf_event_max_stack {}", attr.sample_max_stack, profile_.max_stack);
    return EOVERFLOW;
  }
  *out = std::move(ev);
  return 0;
}

// perf_event_open(), right after perf_event_alloc(): a PMU with
// PERF_PMU_CAP_NO_INTERRUPT cannot sample; then perf_event_set_clock(). Clocks
// that are not NMI-safe (REALTIME, BOOTTIME, TAI) need PERF_PMU_CAP_NO_NMI,
// which only the software PMUs (swevent, cpu_clock, task_clock) have.
int MockBackend::PerfEventSetClock(const MockEvent& ev, const PmuCaps& caps, std::string* why) const {
  const perf_event_attr& attr = ev.attr;
  if (ev.pmu == PmuId::kCore && !profile_.hardware.overflow_interrupt && attr.sample_period != 0) {
    *why = "the PMU has no overflow interrupt (PERF_PMU_CAP_NO_INTERRUPT): no sampling events";
    return EOPNOTSUPP;
  }
  if (!attr.use_clockid) return 0;
  if (CheckClockId(attr.clockid) != 0) {
    *why = fmt::format("clockid {} is not supported (perf_event_set_clock())", attr.clockid);
    return EINVAL;
  }
  const bool nmi_safe = attr.clockid == CLOCK_MONOTONIC || attr.clockid == CLOCK_MONOTONIC_RAW;
  if (!nmi_safe && !caps.software) {
    *why = fmt::format("clockid {} is not NMI-safe and the PMU lacks PERF_PMU_CAP_NO_NMI (perf_event_set_clock())",
                       attr.clockid);
    return EINVAL;
  }
  return 0;
}

// find_get_context(): the task's context needs perf_check_permission(), a
// CPU-wide event perf_allow_cpu().
int MockBackend::FindGetContext(const OpenRequest& req, const MockEvent& ev, std::string* why) const {
  if (int err = CheckTaskPermission(req.task ? ev.pid : -1, why)) return err;
  if (!req.task && !Perfmon() && profile_.perf_event_paranoid > 0) {
    *why = fmt::format("CPU-wide events need privilege at perf_event_paranoid={}", profile_.perf_event_paranoid);
    return EACCES;
  }
  return 0;
}

// perf_event_open()'s group checks: the leader must lead, share the clock,
// the CPU and the context; members are neither pinned nor exclusive; then
// perf_event_validate_size() and the PMU's group validation.
int MockBackend::CheckGroup(const MockEvent& leader, const MockEvent& ev, std::string* why) const {
  const perf_event_attr& attr = ev.attr;
  auto fail = [&](int err, std::string text) {
    *why = std::move(text);
    return err;
  };
  if (!leader.is_leader()) return fail(EINVAL, "group_fd is itself a group member");
  if (ClockOf(leader) != ClockOf(ev)) return fail(EINVAL, "group members must share the clock");
  if (leader.cpu != ev.cpu) return fail(EINVAL, "group members must be on the same CPU");
  if (leader.pid != ev.pid) return fail(EINVAL, "group members must be on the same context (task or CPU)");
  if (attr.exclusive || attr.pinned) return fail(EINVAL, "only a group leader can be pinned or exclusive");
  // perf_event_validate_size() (Linux 6.7+): with the new member, no
  // event of the group may have a read_format record over 16 KiB.
  const size_t nr = leader.siblings.size() + 2;
  bool too_big = ReadFormatSize(attr.read_format, nr) > kMaxReadSize ||
                 ReadFormatSize(leader.attr.read_format, nr) > kMaxReadSize;
  for (const MockEvent* s : leader.siblings) too_big |= ReadFormatSize(s->attr.read_format, nr) > kMaxReadSize;
  if (too_big) {
    return fail(E2BIG, fmt::format("a group of {} would make a read_format record over {} bytes", nr, kMaxReadSize));
  }
  // validate_group(): the group's hardware events must fit the counters
  // together, counting only those that can run: a member in state OFF
  // (disabled, not yet enabled) or ERROR takes no counter. x86
  // collect_events() (arch/x86/events/core.c) always counts the leader and
  // the new event; arm64 validate_event() (drivers/perf/arm_pmu.c) counts
  // none of the three in state OFF unless it has enable_on_exec.
  if (ev.pmu == PmuId::kCore) {
    const bool arm = profile_.arch == "aarch64";
    auto counts = [arm](bool off, bool error, const perf_event_attr& a, bool always_on_x86) {
      if (arm) return !error && (!off || a.enable_on_exec);
      return always_on_x86 || (!off && !error);
    };
    std::vector<HwEvent> group;
    if (leader.pmu == PmuId::kCore && counts(!leader.enabled && !leader.error, leader.error, leader.attr, true)) {
      group.push_back(leader.hw_event);
    }
    for (const MockEvent* s : leader.siblings) {
      if (s->pmu == PmuId::kCore && counts(!s->enabled && !s->error, s->error, s->attr, false)) {
        group.push_back(s->hw_event);
      }
    }
    if (counts(attr.disabled, false, attr, true)) group.push_back(ev.hw_event);
    if (!HardwareFits(group, profile_.hardware)) {
      return fail(EINVAL, fmt::format("{} hardware events of the group do not fit {} general-purpose and {} fixed "
                                      "counters (validate_group())",
                                      group.size(), profile_.hardware.gp_counters, profile_.hardware.fixed_counters));
    }
  }
  return 0;
}

// perf_event_open(), under the context lock after perf_event_validate_size()
// (so after get_callchain_buffers() in perf_event_alloc()): has_aux_action()
// (aux_sample_size, aux_pause or aux_resume), PERF_SAMPLE_AUX or not;
// perf_get_aux_event() then needs a group leader whose PMU has
// snapshot_aux (intel_pt).
int MockBackend::PerfGetAuxEvent(const OpenRequest& req, std::string* why) const {
  const perf_event_attr& attr = req.attr;
  if ((attr.aux_sample_size != 0 || AuxPause(attr) || AuxResume(attr)) &&
      (req.group_leader == nullptr || req.group_leader->pmu != PmuId::kIntelPt)) {
    *why = "no AUX event to take AUX data from (perf_get_aux_event())";
    return EINVAL;
  }
  return 0;
}

}  // namespace perftest::mock
