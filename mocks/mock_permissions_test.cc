// Unit tests of mocks/mock_permissions.cc: the simulated task's credentials
// (RunInChild), the permission rules that read them, EFAULT for a NULL attr,
// EMFILE past RLIMIT_NOFILE and the PERF_FLAG_PID_CGROUP fd. Each rule was
// first seen on Linux 6.18 (suites/attr, suites/permissions).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <string>

#include "harness/attr.h"
#include "harness/syscall_matchers.h"
#include "mocks/internal/mock_test_fixture.h"

namespace perftest {
namespace {

perf_event_attr UserCounter() {
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  return a;
}

ChildCredentials Nobody(std::optional<std::vector<int>> caps = std::nullopt) {
  ChildCredentials c;
  c.uid = 65534;
  c.caps = std::move(caps);
  return c;
}

int OpenErrno(Backend& b, perf_event_attr a, pid_t pid = 0, int cpu = -1) {
  Result<int> r = b.PerfEventOpen(&a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
  if (!r.ok()) return r.error();
  (void)b.Close(*r);
  return 0;
}

class MockPermissions : public MockTest {};

TEST_F(MockPermissions, NullAttrIsEfaultAfterTheFlags) {
  EXPECT_THAT(b().PerfEventOpen(nullptr, 0, -1, -1, 0), FailsWithErrno(EFAULT));
  EXPECT_THAT(b().PerfEventOpen(nullptr, 0, -1, -1, 1ul << 20), FailsWithErrno(EINVAL));
}

TEST_F(MockPermissions, ChildWithoutCapabilitiesIsAUser) {
  perf_event_attr kernel = UserCounter();
  kernel.exclude_kernel = 0;
  EXPECT_THAT(b().RunInChild(Nobody(), [&](Backend& c) { return OpenErrno(c, UserCounter()); }), SucceedsWith(0));
  EXPECT_THAT(b().RunInChild(Nobody(), [&](Backend& c) { return OpenErrno(c, kernel); }), SucceedsWith(EACCES));
  EXPECT_THAT(b().RunInChild(Nobody(), [&](Backend& c) { return OpenErrno(c, UserCounter(), -1, 0); }),
              SucceedsWith(EACCES));
  EXPECT_THAT(b().RunInChild(Nobody({{CAP_PERFMON}}), [&](Backend& c) { return OpenErrno(c, kernel, -1, 0); }),
              SucceedsWith(0));
  // The parent is privileged again afterwards.
  EXPECT_EQ(OpenErrno(b(), kernel, -1, 0), 0);
}

TEST_F(MockPermissions, ChildIsANewTaskAndItsFdsCloseAtExit) {
  const pid_t parent = b().CurrentTask().pid;
  int child_fd = -1;
  pid_t child_pid = 0;
  ASSERT_OK(b().RunInChild(ChildCredentials{}, [&](Backend& c) {
    child_pid = c.CurrentTask().pid;
    perf_event_attr a = UserCounter();
    child_fd = *c.PerfEventOpen(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    return 0;
  }));
  EXPECT_NE(child_pid, parent);
  EXPECT_EQ(b().CurrentTask().pid, parent);
  EXPECT_THAT(b().Fcntl(child_fd, F_GETFD, 0), FailsWithErrno(EBADF)) << "closed when the child exited";
  EXPECT_THAT(Open(UserCounter(), child_pid), FailsWithErrno(ESRCH)) << "the child is gone";
}

TEST_F(MockPermissions, ParentTaskNeedsPtraceAccessOrPerfmon) {
  const pid_t parent = b().CurrentTask().pid;
  auto open_parent = [&](Backend& c) { return OpenErrno(c, UserCounter(), parent); };
  EXPECT_THAT(b().RunInChild(ChildCredentials{}, open_parent), SucceedsWith(0)) << "same uid, same capabilities";
  EXPECT_THAT(b().RunInChild(Nobody(), open_parent), SucceedsWith(EACCES)) << "another uid";
  ChildCredentials no_caps;
  no_caps.caps = std::vector<int>{};
  EXPECT_THAT(b().RunInChild(no_caps, open_parent), SucceedsWith(EACCES)) << "capabilities not a superset";
  EXPECT_THAT(b().RunInChild(Nobody({{CAP_SYS_PTRACE}}), open_parent), SucceedsWith(0));
  EXPECT_THAT(b().RunInChild(Nobody({{CAP_PERFMON}}), open_parent), SucceedsWith(0)) << "perfmon_capable() first";
}

TEST_F(MockPermissions, MlockBudgetAndIpcLock) {
  // software-only: perf_event_mlock_kb 516 on 2 CPUs = 258 pages per user.
  auto map = [](size_t pages) {
    return [pages](Backend& c) {
      perf_event_attr a = UserCounter();
      a.sample_period = 1;
      Result<int> fd = c.PerfEventOpen(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
      if (!fd.ok()) return -1;
      Result<void*> m = c.Mmap((pages + 1) * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
      return m.ok() ? 0 : m.error();
    };
  };
  ChildCredentials no_rlimit = Nobody();
  no_rlimit.rlimit_memlock = 0;
  EXPECT_THAT(b().RunInChild(no_rlimit, map(128)), SucceedsWith(0));
  EXPECT_THAT(b().RunInChild(no_rlimit, map(256)), SucceedsWith(0)) << "257 pages <= 258";
  EXPECT_THAT(b().RunInChild(no_rlimit, map(512)), SucceedsWith(EPERM));
  EXPECT_THAT(b().RunInChild(Nobody(), map(512)), SucceedsWith(0)) << "RLIMIT_MEMLOCK 8 MiB covers the rest";
  ChildCredentials ipc_lock = Nobody({{CAP_IPC_LOCK}});
  ipc_lock.rlimit_memlock = 0;
  EXPECT_THAT(b().RunInChild(ipc_lock, map(512)), SucceedsWith(0));
}

TEST_F(MockPermissions, RlimitNofileGivesEmfile) {
  ChildCredentials c;
  c.rlimit_nofile = 32;
  EXPECT_THAT(b().RunInChild(c, [](Backend& k) {
    for (int i = 0; i < 64; ++i) {
      perf_event_attr a = UserCounter();
      Result<int> fd = k.PerfEventOpen(&a, 0, -1, -1, 0);
      if (!fd.ok()) return fd.error();
    }
    return 0;
  }), SucceedsWith(EMFILE));
}

TEST_F(MockPermissions, ChildCannotRaiseLimitsOrCapabilities) {
  ChildCredentials raise;
  raise.caps = std::vector<int>{};
  raise.rlimit_memlock = uint64_t{1} << 40;
  EXPECT_THAT(b().RunInChild(raise, [](Backend&) { return 0; }), Succeeds()) << "root still has CAP_SYS_RESOURCE";
  MockProfile user = profile_;
  user.privileged = false;
  Remake(user);
  EXPECT_THAT(b().RunInChild(raise, [](Backend&) { return 0; }), FailsWithErrno(EPERM));
  EXPECT_THAT(b().RunInChild(Nobody({{CAP_PERFMON}}), [](Backend&) { return 0; }), FailsWithErrno(EPERM));
}

TEST_F(MockPermissions, PidCgroupTakesACgroup2Directory) {
  const int root = ::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(root, 0);
  EXPECT_THAT(Open(UserCounter(), root, 0, -1, PERF_FLAG_PID_CGROUP), FailsWithErrno(EBADF)) << "not a cgroup";
  ::close(root);
  std::ifstream mounts("/proc/self/mounts");
  std::string dev, dir, type, rest;
  while (mounts >> dev >> dir >> type && std::getline(mounts, rest)) {
    if (type != "cgroup2") continue;
    const int cg = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(cg, 0) << dir;
    Result<int> fd = Open(UserCounter(), cg, 0, -1, PERF_FLAG_PID_CGROUP);
    EXPECT_THAT(fd, Succeeds()) << dir;
    if (fd.ok()) ASSERT_OK(b().Close(*fd));
    ::close(cg);
    return;
  }
  GTEST_SKIP() << "no cgroup2 mount on this host";
}

// perf_event_alloc() on Linux 6.18 (probed there on the software PMU, which
// has neither PERF_PMU_CAP_AUX_OUTPUT nor PERF_PMU_CAP_AUX_PAUSE):
// aux_output first, then aux_pause+aux_resume (EINVAL), then
// aux_start_paused (EOPNOTSUPP); aux_pause or aux_resume alone reach
// perf_get_aux_event() and find no AUX leader (EINVAL).
TEST_F(MockPermissions, AuxActionOnANonAuxPmu) {
  const int expected[8] = {0, EOPNOTSUPP, EINVAL, EOPNOTSUPP, EINVAL, EOPNOTSUPP, EINVAL, EINVAL};
  for (uint32_t v = 1; v < 8; ++v) {
    perf_event_attr a = UserCounter();
    a.__reserved_3 = v;
    EXPECT_THAT(Open(a), FailsWithErrno(expected[v])) << "aux_action " << v;
    a.aux_output = 1;
    EXPECT_THAT(Open(a), FailsWithErrno(EOPNOTSUPP)) << "aux_action " << v << " with aux_output";
  }
}

}  // namespace
}  // namespace perftest
