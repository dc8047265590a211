// The serve filter: which calls stop for a tracer. Without a tracer a
// SECCOMP_RET_TRACE call fails with ENOSYS (seccomp(2)), so a child that
// installs the filter and makes each call tells trapped from native by errno.
#include "tools/exec/syscall_filter.h"

#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <functional>

namespace perftest::exec {
namespace {

TEST(PerfFdRange, HighestAlignedBlockBelowTheLimit) {
  Result<PerfFdRange> r = ChoosePerfFdRange(20000);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size, 256);
  EXPECT_EQ(r->base % 256, 0);
  EXPECT_LE(r->base + r->size, 20000);
  EXPECT_GT(r->base + 2 * r->size, 20000);
  Result<PerfFdRange> small = ChoosePerfFdRange(100);
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->base, 32);
  EXPECT_EQ(small->size, 32);
  EXPECT_EQ(ChoosePerfFdRange(8).error(), EMFILE);
}

// Runs `calls` in a child after installing the filter for `range`; the child
// exits with the first check that failed (1-based), 0 when all held, 100 if
// the filter did not load.
int InChild(const PerfFdRange& range, const std::function<int()>& calls) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (InstallServeFilter(range) != 0) _exit(100);
    _exit(calls());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200;
}

int Errno(long rc) { return rc == -1 ? errno : 0; }

TEST(ServeFilter, TrapsPerfEventOpenAndPerfPrctls) {
  const PerfFdRange range{1024, 256};
  EXPECT_EQ(InChild(range, [] {
    if (Errno(syscall(SYS_perf_event_open, nullptr, 0, -1, -1, 0)) != ENOSYS) return 1;
    if (Errno(prctl(PR_TASK_PERF_EVENTS_ENABLE)) != ENOSYS) return 2;
    if (Errno(prctl(PR_TASK_PERF_EVENTS_DISABLE)) != ENOSYS) return 3;
    char name[16];
    if (prctl(PR_GET_NAME, name) != 0) return 4;  // other prctls run natively
    if (Errno(prctl(PR_SET_NAME, "x")) != ENOSYS) return 5;  // its COMM record
    return 0;
  }), 0);
}

TEST(ServeFilter, TrapsCallsOnFdsInTheRangeOnly) {
  const PerfFdRange range{1024, 256};
  EXPECT_EQ(InChild(range, [] {
    char b[8];
    if (Errno(read(1024, b, sizeof b)) != ENOSYS) return 1;
    if (Errno(read(1279, b, sizeof b)) != ENOSYS) return 2;
    if (Errno(read(1280, b, sizeof b)) != EBADF) return 3;   // past the range: native
    if (Errno(read(1023, b, sizeof b)) != EBADF) return 4;   // below it: native
    if (Errno(ioctl(1100, PERF_EVENT_IOC_ENABLE, 0)) != ENOSYS) return 5;
    if (Errno(close(1100)) != ENOSYS) return 6;
    if (Errno(close(1000)) != EBADF) return 7;
    if (Errno(fcntl(1100, F_GETFD)) != ENOSYS) return 8;
    if (Errno(dup(1100)) != ENOSYS) return 9;
    if (Errno(dup2(1000, 1100)) != EBADF) return 10;  // oldfd outside: native
    if (Errno(syscall(SYS_mmap, nullptr, 4096, PROT_READ, MAP_SHARED, 1100, 0)) != ENOSYS) return 11;
    // MAP_ANONYMOUS passes fd -1 sign-extended: native.
    void* p = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 12;
    if (Errno(syscall(SYS_mmap, nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, 0xffffffffL, 0)) != 0) return 13;
    // An executable mapping stops (its MMAP record), whatever its fd.
    if (Errno(syscall(SYS_mmap, nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) != ENOSYS) {
      return 14;
    }
    return 0;
  }), 0);
}

}  // namespace
}  // namespace perftest::exec
