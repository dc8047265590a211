// The Tracer class behind RunServed() (tracer.h), internal to tools/exec:
//   tracer.cc        the child, the ptrace event loop, tasks, exit
//   serve_calls.cc   each served call (perf_event_open, read, ioctl, mmap, ...)
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>
#include <string>

#include "tools/exec/call_log.h"
#include "tools/exec/fault_injection.h"
#include "tools/exec/fd_table.h"
#include "tools/exec/sampler.h"
#include "tools/exec/served_backends.h"
#include "tools/exec/probe_path.h"
#include "tools/exec/task_table.h"
#include "tools/exec/tracee.h"
#include "tools/exec/tracer.h"

namespace perftest::exec {

class Tracer {
 public:
  Tracer(const ExecOptions& options, Intercept mode, PerfFdRange range, MockProfile profile);
  // Starts the program (fork, PTRACE_TRACEME, filter, execvp) and runs the
  // loop until it exits. Returns its status as RunServed() does.
  int Run();

 private:
  // --- tracer.cc ---
  int StartChild();
  void Loop();
  void Resume(pid_t tid, int sig = 0);
  void OnStop(pid_t tid, int status);
  void OnGone(pid_t tid, int status);
  void OnNewTask(pid_t parent, pid_t child);
  void OnExec(pid_t tid);
  void KillAll();
  // Sampling (sampler.h): a 1 ms timer; each tick stops the running tasks
  // that sampling backends count (SIGSTOP from the tracer, suppressed at its
  // signal-delivery-stop) to take their ip, frame chain and new mappings.
  void ArmSampler();
  void SampleRound();
  void OnSampleStop(pid_t tid);
  pid_t TgidOf(pid_t tid);
  std::string CommOf(pid_t tid);

  // --- serve_calls.cc ---
  // A syscall entry (seccomp or syscall-entry stop): serves it or lets it go.
  // Resumes the tracee either way.
  void OnSyscallEntry(pid_t tid);
  // What a handler decided: the call returns `result`, or runs natively.
  struct Outcome {
    bool native = false;
    long result = 0;
  };
  Outcome ServeOpen(pid_t tid, pid_t tgid, const Regs& r, Injector& inj);
  Outcome ServeRead(pid_t tid, pid_t tgid, const Regs& r, const PerfFd& e);
  Outcome ServeIoctl(pid_t tid, pid_t tgid, const Regs& r, const PerfFd& e);
  Outcome ServeMmap(pid_t tid, pid_t tgid, const Regs& r, PerfFd& e, Injector& inj);
  Outcome ServeClose(pid_t tid, pid_t tgid, int fd);
  Outcome ServeFcntl(pid_t tid, pid_t tgid, const Regs& r, PerfFd& e, Injector& inj);
  Outcome ServeDup(pid_t tid, pid_t tgid, const Regs& r, const PerfFd& e, Injector& inj);
  Outcome ServePrctl(pid_t tid, pid_t tgid, int option);
  Outcome ServePoll(pid_t tid, pid_t tgid, const Regs& r, Injector& inj);
  void CloseRange(pid_t tgid, const Regs& r);
  // Side-band of the served tasks themselves: prctl(PR_SET_NAME) -> COMM,
  // mmap(PROT_EXEC) -> MMAP/MMAP2 (the mapping made by an injected call, so
  // its address is known), fork/clone -> FORK, exit -> EXIT.
  void SideBandComm(pid_t tid, uint64_t name_addr);
  Outcome SideBandExecMmap(pid_t tid, pid_t tgid, const Regs& r, Injector& inj);
  // Places the event `tracer_fd` at `slot` in the program (pidfd_open,
  // pidfd_getfd, dup3, close): 0 or the errno of the first call that failed.
  int InstallFd(Injector& inj, int slot, int tracer_fd, bool cloexec);
  // The program fd `e` went away: the event closes when no other fd has it.
  void Release(const PerfFd& e);

  const ExecOptions& options_;
  Intercept mode_;
  pid_t self_ = 0;
  pid_t root_ = 0;
  std::optional<int> root_status_;
  TaskTable tasks_;
  FdTable fds_;
  ServedBackends backends_;
  CallLog log_;
  FaultInjector inject_;
  // The uprobe PMU's sysfs type in the profile (0: none) and the copy of the
  // path its attr.config1 names (probe_path.h).
  uint32_t uprobe_type_ = 0;
  ProbePathRelay probe_paths_;
  // Threads whose current call was reissued to run natively: its next stop passes.
  std::set<pid_t> pass_;
  bool debug_ = false;  // PERFTEST_EXEC_DEBUG set: every stop on stderr
  std::set<int> sampling_;             // backends with a sampling event
  std::set<pid_t> sample_pending_;     // tasks sent the sampler's SIGSTOP
  std::map<pid_t, uint64_t> timeslices_;  // schedstat pcount at each task's last sample
  std::map<int, MappingScanner> scanners_;  // per backend: the mappings it reported
  bool sampler_armed_ = false;
  // The mock's signals for the served tasks (MockControl::SetSignalSink):
  // sent with tgkill(2), their siginfo put in place at the signal-delivery-stop.
  std::map<pid_t, std::vector<siginfo_t>> pending_siginfo_;
};

}  // namespace perftest::exec
