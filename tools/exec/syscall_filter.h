// The seccomp filter `perftest exec` installs in the program (before its
// execve): which system calls stop for the tracer. Everything else runs
// natively, without a stop.
//
//   PerfFdRange r = ChoosePerfFdRange(rlimit_nofile_soft);   // e.g. [19712, 19968)
//   Result<void> ok = InstallServeFilter(r);                  // in the child, then execve
//
// The filter answers SECCOMP_RET_TRACE (a PTRACE_EVENT_SECCOMP stop; without
// a tracer the call fails with ENOSYS, seccomp(2)) for:
//  - perf_event_open, always;
//  - prctl(PR_TASK_PERF_EVENTS_DISABLE / PR_TASK_PERF_EVENTS_ENABLE), and
//    prctl(PR_SET_NAME) and mmap(PROT_EXEC) for their COMM and MMAP records;
//  - the calls whose fd argument lies in the perf fd range: read, readv,
//    pread64, ioctl, close, fcntl, dup, dup2, dup3 (oldfd), mmap (its fd,
//    argument 4), epoll_ctl (its fd, argument 2);
//  - poll, ppoll and close_range, always (their fds are in memory or a range
//    the filter cannot test).
// The range is a power-of-two block aligned to its size, tested with one
// SCMP_CMP_MASKED_EQ per argument, so that fd = -1 as a 64-bit register
// (mmap of MAP_ANONYMOUS) or any fd outside the block does not stop.
//
// Under a filter that denies perf_event_open with an errno (Docker's default
// profile, tools/seccomp_deny) the ERRNO verdict outranks TRACE
// (seccomp_run_filters() keeps the highest-precedence action): the tracer
// then uses syscall-entry stops instead (tracer.h, Intercept::kSyscallStops).
#pragma once

#include <cstdint>

#include "harness/result.h"

namespace perftest::exec {

// The fds the tracer places perf events at in the program: [base, base + size),
// size a power of two, base a multiple of it.
struct PerfFdRange {
  int base = 0;
  int size = 0;
  bool Contains(int64_t fd) const { return fd >= base && fd < base + size; }
};

// The highest aligned block of `size` fds below `rlimit_nofile` (the soft
// RLIMIT_NOFILE: dup3(2) fails with EBADF for an fd at or above it). Blocks of
// 256 fds; when the limit is under 512, the upper half of the largest
// power-of-two block that fits. Errors: EMFILE when the limit is below 16.
Result<PerfFdRange> ChoosePerfFdRange(uint64_t rlimit_nofile);

// Loads the filter into the calling thread (libseccomp; sets
// PR_SET_NO_NEW_PRIVS, as an unprivileged process must). Returns 0, or the
// errno of seccomp_load() (EINVAL: a kernel without SECCOMP_RET_TRACE) or of
// seccomp_rule_add() (a rule libseccomp cannot build). Async-signal-safe
// enough for a child between fork(2) and execve(2) of a single-threaded parent.
int InstallServeFilter(const PerfFdRange& range);

}  // namespace perftest::exec
