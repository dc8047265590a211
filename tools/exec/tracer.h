// The tracer of `perftest exec`: runs PROG under ptrace(2) and answers its
// perf calls with MockBackends (served_backends.h), everything else native.
//
//   ExecOptions o;  o.profile = "x86_64-intel";  o.argv = {"perf", "stat", "--", "true"};
//   int status = RunServed(o);   // PROG's exit status (128 + signal when killed)
//
// How calls reach the tracer (Intercept):
//  - kSeccomp: the serve filter (syscall_filter.h) stops only perf_event_open,
//    the perf prctls and calls on fds of the reserved perf range, as
//    PTRACE_EVENT_SECCOMP stops; nothing else stops.
//  - kSyscallStops: every system call's syscall-entry stop (PTRACE_SYSCALL).
//    Needed where another seccomp filter answers perf_event_open with an
//    errno (Docker's default profile, tools/seccomp_deny): its ERRNO verdict
//    outranks TRACE, but the syscall-entry stop comes before seccomp runs and
//    the call is answered there (skipped, rax set).
//  - kAuto: kSyscallStops when perf_event_open(NULL, ...) here fails with
//    anything but the EFAULT of perf_copy_attr() (a filter stands in the
//    way), else kSeccomp.
//
// Tasks: PTRACE_O_TRACEFORK/VFORK/CLONE follow every process and thread,
// TRACEEXEC gives enable_on_exec its moment, TRACEEXIT the final figures,
// EXITKILL and the child's PR_SET_PDEATHSIG(SIGKILL) that nothing outlives
// perftest. The program's fds of perf events are real fds in its reserved
// range (the event's memfd, fetched with pidfd_getfd(2) by calls injected
// into the program): close(2), fstat(2) and mmap(2) of the ring buffer work
// on them natively, the mmap mapping the memfd the mock writes.
//
// What a program cannot do under exec: PTRACE_TRACEME or PTRACE_ATTACH its
// own children (they are traced already: EPERM); epoll(7) of a perf fd fails
// (EPERM, as for any regular file); CPUID is the host's. The full list:
// tools/exec/README.md.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "tools/exec/fault_injection.h"

namespace perftest::exec {

enum class Intercept { kAuto, kSeccomp, kSyscallStops };

struct ExecOptions {
  std::string profile;           // name or path (mocks/profile.h LoadProfile)
  std::string log_path;          // --log; empty: none
  std::vector<InjectRule> inject;
  Intercept intercept = Intercept::kAuto;
  bool sysfs_view = true;        // show the profile's PMUs and CPU (sysfs_view.h)
  std::vector<std::string> argv; // PROG and its arguments
};

// Runs the program; returns its exit status, 128 + the signal that killed
// it, or 125 when it could not be started (the reason on stderr), 127 when
// PROG cannot be executed.
int RunServed(const ExecOptions& options);

// perf_event_open(NULL, 0, -1, -1, 0) in this process: 0 when the kernel's
// perf_copy_attr() answered (EFAULT), else the errno that came instead.
int ProbePerfEventOpenBlocked();

}  // namespace perftest::exec
