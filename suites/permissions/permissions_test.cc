// Conformance suite: who may open what — perf_event_paranoid levels,
// capabilities (CAP_PERFMON, CAP_SYS_ADMIN, CAP_IPC_LOCK, CAP_SYS_PTRACE),
// ptrace rules for other users' tasks, and the mlock budget of the ring
// buffer (perf_event_mlock_kb plus RLIMIT_MEMLOCK).
//
// Every case runs the unprivileged side in a forked child that drops
// privilege (Backend::RunInChild: setresuid to nobody and/or capset); no
// sysctl is changed. Expectations follow the paranoid level read from
// Machine().perf_event_paranoid (/proc/sys/kernel/perf_event_paranoid), per
// Documentation/admin-guide/perf-security.rst and
// Documentation/admin-guide/sysctl/kernel.rst "perf_event_paranoid":
//   -1 everything, 0 no raw tracepoint data for users, 1 no CPU-wide events,
//   2 no kernel profiling, >= 3 (Debian/Android patch) nothing for users.
// Kernel functions: kernel/events/core.c perf_allow_kernel(), perf_allow_cpu(),
// perfmon_capable() (include/linux/capability.h), perf_check_permission(),
// perf_mmap(); kernel/trace/trace_event_perf.c perf_trace_event_perm().
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/mman.h>

#include <string>
#include <vector>

#include "harness/attr.h"
#include "harness/syscall_matchers.h"
#include "suites/common/attrs.h"
#include "suites/common/suite.h"

namespace perftest {
namespace {

constexpr uid_t kNobody = 65534;

ChildCredentials Nobody(std::vector<int> caps = {}) {
  ChildCredentials c;
  c.uid = kNobody;
  c.caps = std::move(caps);
  return c;
}

// perf_event_open(a, pid, cpu) in the child; its errno, or 0 when it opened.
int OpenErrno(Backend& b, perf_event_attr a, pid_t pid, int cpu) {
  Result<int> r = b.PerfEventOpen(&a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
  if (!r.ok()) return r.error();
  (void)b.Close(*r);
  return 0;
}

class Permissions : public SuiteTest {
 protected:
  // Every case needs a child that can become nobody with the capabilities
  // the cases keep: root (CAP_SETUID, and the capabilities to keep) here.
  void SetUp() override {
    SuiteTest::SetUp();
    if (IsSkipped()) return;
    PERFTEST_REQUIRE_CHILD_CREDENTIALS(Nobody({CAP_PERFMON, CAP_SYS_ADMIN, CAP_IPC_LOCK, CAP_SYS_PTRACE}));
  }
  int paranoid() { return backend().Machine().perf_event_paranoid; }
  // The errno of perf_event_open(a, pid, cpu) in a child running as `creds`.
  Result<int> OpenAs(const ChildCredentials& creds, const perf_event_attr& a, pid_t pid = 0, int cpu = -1) {
    return backend().RunInChild(creds, [a, pid, cpu](Backend& b) { return OpenErrno(b, a, pid, cpu); });
  }
  // The errno a user without CAP_PERFMON gets at this paranoid level when
  // the rule of `level` applies (EACCES), else 0; >= 3 refuses everything.
  int UserErrno(bool refused_above, int level) {
    if (paranoid() >= 3) return EACCES;
    return refused_above && paranoid() > level ? EACCES : 0;
  }
  // Data pages of the largest power-of-two buffer within the per-user
  // mlock budget (perf_event_mlock_kb * ncpus, counting the user page), and
  // of the smallest one past it.
  std::pair<size_t, size_t> BudgetPages() {
    const MachineInfo& m = backend().Machine();
    const size_t budget = size_t{m.mlock_kb} * 1024 / m.page_size * m.ncpus;  // pages
    size_t within = 1;
    while (2 * within + 1 <= budget) within *= 2;
    return {within, within * 2};
  }
  // mmap(2) of 1 + `pages` pages of a fresh page-fault sampler in the child: 0 or the errno.
  static int MapErrno(Backend& b, size_t pages) {
    perf_event_attr a = SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS);
    a.sample_period = 1;
    Result<int> fd = b.PerfEventOpen(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (!fd.ok()) return 1000 + fd.error();  // not the mmap: tell apart
    const size_t len = (pages + 1) * b.Machine().page_size;
    Result<void*> map = b.Mmap(len, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
    int err = map.ok() ? 0 : map.error();
    if (map.ok()) (void)b.Munmap(*map, len);
    (void)b.Close(*fd);
    return err;
  }
};

PERFTEST_CASE(Permissions, UserOpensOwnTaskExcludingKernel, "permissions.user_own_task",
              "perf-security.rst; core.c perf_event_open(): a task event on oneself with exclude_kernel needs no "
              "capability below perf_event_paranoid 3") {
  EXPECT_THAT(OpenAs(Nobody(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS)), SucceedsWith(UserErrno(false, 0)))
      << "perf_event_paranoid=" << paranoid();
}

PERFTEST_CASE(Permissions, UserKernelProfilingNeedsParanoid1, "permissions.user_kernel_profiling",
              "core.c perf_event_open() -> perf_allow_kernel(): exclude_kernel=0 by a user -> EACCES when "
              "perf_event_paranoid > 1") {
  perf_event_attr a = SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.exclude_kernel = 0;
  EXPECT_THAT(OpenAs(Nobody(), a), SucceedsWith(UserErrno(true, 1))) << "perf_event_paranoid=" << paranoid();
}

PERFTEST_CASE(Permissions, UserCpuWideNeedsParanoid0, "permissions.user_cpu_wide",
              "core.c find_get_context() -> perf_allow_cpu(): a CPU-wide event by a user -> EACCES when "
              "perf_event_paranoid > 0") {
  EXPECT_THAT(OpenAs(Nobody(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS), -1, 0), SucceedsWith(UserErrno(true, 0)))
      << "perf_event_paranoid=" << paranoid();
}

PERFTEST_CASE(Permissions, PerfmonAllowsKernelAndCpuWide, "permissions.cap_perfmon",
              "include/linux/capability.h perfmon_capable(): CAP_PERFMON passes perf_allow_kernel() and "
              "perf_allow_cpu() at every paranoid level (Linux 5.8+)") {
  RecordDivergence("permissions.cpu_wide_capability",
                   "perf-design.txt (pid/cpu parameters): \"Per CPU counters need CAP_SYS_ADMIN privilege.\"",
                   "core.c perf_allow_cpu(): CAP_PERFMON or CAP_SYS_ADMIN (perfmon_capable(), Linux 5.8+), and no "
                   "capability at all when perf_event_paranoid <= 0");
  perf_event_attr a = SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.exclude_kernel = 0;
  EXPECT_THAT(OpenAs(Nobody({CAP_PERFMON}), a), SucceedsWith(0)) << "kernel profiling";
  EXPECT_THAT(OpenAs(Nobody({CAP_PERFMON}), a, -1, 0), SucceedsWith(0)) << "CPU-wide";
}

PERFTEST_CASE(Permissions, SysAdminStillAllows, "permissions.cap_sys_admin",
              "include/linux/capability.h perfmon_capable(): CAP_PERFMON or (for compatibility) CAP_SYS_ADMIN") {
  perf_event_attr a = SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.exclude_kernel = 0;
  EXPECT_THAT(OpenAs(Nobody({CAP_SYS_ADMIN}), a, -1, 0), SucceedsWith(0)) << "CPU-wide kernel profiling";
}

PERFTEST_CASE(Permissions, CapabilitiesNotUidDecide, "permissions.caps_not_uid",
              "perf-security.rst \"privileged processes (... CAP_PERFMON ...)\": root's uid alone does not pass "
              "perf_allow_kernel(); capabilities do") {
  ChildCredentials root_without_caps;
  root_without_caps.caps = std::vector<int>{};  // uid 0, every capability dropped
  perf_event_attr a = SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.exclude_kernel = 0;
  EXPECT_THAT(OpenAs(root_without_caps, a), SucceedsWith(UserErrno(true, 1))) << "perf_event_paranoid=" << paranoid();
}

PERFTEST_CASE(Permissions, OtherUsersTaskNeedsPtraceAccess, "permissions.other_user_task",
              "core.c perf_event_open() -> perf_check_permission() -> ptrace_may_access(PTRACE_MODE_READ_REALCREDS): "
              "refused -> EACCES") {
  const pid_t parent = backend().CurrentTask().pid;  // runs as this process's (root) user
  EXPECT_THAT(OpenAs(Nobody(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS), parent), SucceedsWith(EACCES))
      << "nobody attaching to pid " << parent;
  EXPECT_THAT(OpenAs(Nobody({CAP_SYS_PTRACE}), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS), parent),
              SucceedsWith(UserErrno(false, 0)))
      << "with CAP_SYS_PTRACE";
  EXPECT_THAT(OpenAs(Nobody({CAP_PERFMON}), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS), parent), SucceedsWith(0))
      << "with CAP_PERFMON";
}

PERFTEST_CASE(Permissions, SameUserTaskAllowed, "permissions.same_user_task",
              "core.c perf_check_permission(): perfmon_capable() || ptrace_may_access(); kernel/ptrace.c "
              "__ptrace_may_access(): same uid and gid, and the target's capabilities a subset of the caller's "
              "(security/commoncap.c cap_ptrace_access_check())") {
  const pid_t parent = backend().CurrentTask().pid;
  EXPECT_THAT(OpenAs(ChildCredentials{}, SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS), parent), SucceedsWith(0))
      << "a child as its parent";
  ChildCredentials no_caps;
  no_caps.caps = std::vector<int>{};
  EXPECT_THAT(OpenAs(no_caps, SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS), parent), SucceedsWith(EACCES))
      << "same uid, but the parent has capabilities the child lacks";
  ChildCredentials perfmon_only;
  perfmon_only.caps = std::vector<int>{CAP_PERFMON};
  EXPECT_THAT(OpenAs(perfmon_only, SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS), parent), SucceedsWith(0))
      << "perfmon_capable() passes before ptrace_may_access() is asked";
}

PERFTEST_CASE(Permissions, MlockBudgetWithoutRlimit, "permissions.mlock_budget",
              "core.c perf_mmap(): user_lock_limit = perf_event_mlock_kb * num_online_cpus(); pages past it count "
              "against RLIMIT_MEMLOCK; over both -> EPERM unless CAP_IPC_LOCK or paranoid -1") {
  if (paranoid() >= 3) PERFTEST_SKIP(SkipClass::kPermission, "perf_event_paranoid >= 3: users cannot open events");
  const auto [within, past] = BudgetPages();
  // user->locked_vm is per uid: a uid of its own, so that the other mlock
  // cases (run in parallel with --jobs) do not spend this budget.
  ChildCredentials no_rlimit = Nobody();
  no_rlimit.uid = kNobody - 1;
  no_rlimit.rlimit_memlock = 0;
  auto map = [](size_t pages) { return [pages](Backend& b) { return MapErrno(b, pages); }; };
  EXPECT_THAT(backend().RunInChild(no_rlimit, map(within)), SucceedsWith(0))
      << within << " data pages fit perf_event_mlock_kb";
  EXPECT_THAT(backend().RunInChild(no_rlimit, map(past)), SucceedsWith(paranoid() > -1 ? EPERM : 0))
      << past << " data pages with RLIMIT_MEMLOCK 0";
}

PERFTEST_CASE(Permissions, RlimitMemlockExtendsTheBudget, "permissions.mlock_rlimit",
              "core.c perf_mmap(): \"locked = pinned_vm + extra; if (locked > lock_limit ...)\": RLIMIT_MEMLOCK "
              "covers the pages past perf_event_mlock_kb") {
  if (paranoid() >= 3) PERFTEST_SKIP(SkipClass::kPermission, "perf_event_paranoid >= 3: users cannot open events");
  const auto [within, past] = BudgetPages();
  (void)within;
  const MachineInfo& m = backend().Machine();
  ChildCredentials enough = Nobody();
  enough.rlimit_memlock = (past + 1) * m.page_size;  // more than the extra pages
  ChildCredentials too_little = Nobody();
  too_little.rlimit_memlock = m.page_size;  // one page
  auto map = [past = past](Backend& b) { return MapErrno(b, past); };
  EXPECT_THAT(backend().RunInChild(enough, map), SucceedsWith(0)) << "RLIMIT_MEMLOCK covers the extra pages";
  EXPECT_THAT(backend().RunInChild(too_little, map), SucceedsWith(paranoid() > -1 ? EPERM : 0))
      << "RLIMIT_MEMLOCK of one page";
}

PERFTEST_CASE(Permissions, IpcLockLiftsTheBudget, "permissions.cap_ipc_lock",
              "core.c perf_mmap(): \"... && !capable(CAP_IPC_LOCK)\" -> EPERM; CAP_IPC_LOCK maps past both limits") {
  if (paranoid() >= 3) PERFTEST_SKIP(SkipClass::kPermission, "perf_event_paranoid >= 3: users cannot open events");
  const auto [within, past] = BudgetPages();
  (void)within;
  ChildCredentials locked = Nobody({CAP_IPC_LOCK});
  locked.rlimit_memlock = 0;
  EXPECT_THAT(backend().RunInChild(locked, [past = past](Backend& b) { return MapErrno(b, past); }), SucceedsWith(0));
}

PERFTEST_CASE(Permissions, RawTracepointDataNeedsPerfmon, "permissions.tracepoint_raw",
              "kernel/trace/trace_event_perf.c perf_trace_event_perm(): PERF_SAMPLE_RAW -> perf_allow_tracepoint(): "
              "EPERM unless CAP_PERFMON or perf_event_paranoid -1; counting needs nothing") {
  PERFTEST_ASSIGN_OR_SKIP(uint64_t id, backend().TracepointId("sched", "sched_switch"), "tracepoint sched:sched_switch");
  perf_event_attr count = MakeAttr(PERF_TYPE_TRACEPOINT, id);
  count.exclude_kernel = 1;
  count.exclude_hv = 1;
  perf_event_attr raw = count;
  raw.sample_period = 1;
  raw.sample_type = PERF_SAMPLE_RAW;
  EXPECT_THAT(OpenAs(Nobody(), count), SucceedsWith(UserErrno(false, 0))) << "counting";
  EXPECT_THAT(OpenAs(Nobody(), raw), SucceedsWith(paranoid() >= 3 ? EACCES : paranoid() > -1 ? EPERM : 0))
      << "raw samples";
  EXPECT_THAT(OpenAs(Nobody({CAP_PERFMON}), raw), SucceedsWith(0)) << "raw samples with CAP_PERFMON";
}

PERFTEST_CASE(Permissions, SyscallTracepointsAllowRawOnOwnTask, "permissions.tracepoint_cap_any",
              "perf_trace_event_perm(): TRACE_EVENT_FL_CAP_ANY events (syscalls:*) attached to a task skip "
              "perf_allow_tracepoint(); CPU-wide they do not") {
  PERFTEST_ASSIGN_OR_SKIP(uint64_t id, backend().TracepointId("syscalls", "sys_enter_getpid"),
                          "tracepoint syscalls:sys_enter_getpid");
  perf_event_attr raw = MakeAttr(PERF_TYPE_TRACEPOINT, id);
  raw.exclude_kernel = 1;
  raw.exclude_hv = 1;
  raw.sample_period = 1;
  raw.sample_type = PERF_SAMPLE_RAW;
  EXPECT_THAT(OpenAs(Nobody(), raw), SucceedsWith(UserErrno(false, 0))) << "on its own task";
  EXPECT_THAT(OpenAs(Nobody({CAP_PERFMON}), raw, -1, 0), SucceedsWith(0)) << "CPU-wide with CAP_PERFMON";
}

PERFTEST_CASE(Permissions, NamespacesNeedPerfmon, "permissions.namespaces",
              "core.c perf_event_open(): \"if (attr.namespaces) { if (!perfmon_capable()) return -EACCES; }\"") {
  perf_event_attr a = SoftwareCounterAttr(PERF_COUNT_SW_DUMMY);
  a.namespaces = 1;
  EXPECT_THAT(OpenAs(Nobody(), a), SucceedsWith(EACCES));
  EXPECT_THAT(OpenAs(Nobody({CAP_PERFMON}), a), SucceedsWith(0));
}

PERFTEST_CASE(Permissions, PhysAddrNeedsKernelAccess, "permissions.phys_addr",
              "core.c perf_event_open(): PERF_SAMPLE_PHYS_ADDR -> perf_allow_kernel() -> EACCES above paranoid 1") {
  perf_event_attr a = SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.sample_period = 1;
  a.sample_type = PERF_SAMPLE_PHYS_ADDR;
  EXPECT_THAT(OpenAs(Nobody(), a), SucceedsWith(UserErrno(true, 1))) << "perf_event_paranoid=" << paranoid();
  EXPECT_THAT(OpenAs(Nobody({CAP_PERFMON}), a), SucceedsWith(0));
}

PERFTEST_CASE(Permissions, KernelBranchesCheckedBeforeThePmu, "permissions.branch_kernel",
              "core.c perf_copy_attr(): PERF_SAMPLE_BRANCH_KERNEL -> perf_allow_kernel() (EACCES) before any PMU "
              "sees the event; the software PMU then refuses branch stacks (EOPNOTSUPP)") {
  perf_event_attr a = SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.sample_period = 1;
  a.sample_type = PERF_SAMPLE_BRANCH_STACK;
  a.branch_sample_type = PERF_SAMPLE_BRANCH_ANY | PERF_SAMPLE_BRANCH_KERNEL;
  EXPECT_THAT(OpenAs(Nobody(), a), SucceedsWith(paranoid() > 1 ? EACCES : EOPNOTSUPP));
  EXPECT_THAT(OpenAs(Nobody({CAP_PERFMON}), a), SucceedsWith(EOPNOTSUPP));
}

}  // namespace
}  // namespace perftest
