// Child processes for KernelBackend: the tasks of Backend::SpawnTask() and the
// children of the kFork/kForkExec workloads. Every child runs in its own
// process group (setpgid in both parent and child), dies with its parent
// (PR_SET_PDEATHSIG SIGKILL, so a suite killed on timeout leaves none behind)
// and is reaped: by the workload, by ExitTask(), or by ~ChildProcesses().
// Internal to harness/.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <string>

#include "harness/result.h"
#include "harness/workload.h"

namespace perftest::internal {

// Whole-buffer pipe I/O (EINTR retried). False on EOF or error.
bool WriteAll(int fd, const void* buf, size_t len);
bool ReadAll(int fd, void* buf, size_t len);

// fork(2) for harness children. In the child (return 0): its own process
// group, SIGKILL when the parent dies. Returns the pid, or -1 with errno.
pid_t ForkChild();

// waitpid(2) until `pid` is reaped (EINTR retried). Returns its wait status, or -1.
int ReapChild(pid_t pid);

class ChildProcesses {
 public:
  using Runner = std::function<Result<WorkloadResult>(const Workload&)>;

  ChildProcesses() = default;
  ChildProcesses(const ChildProcesses&) = delete;
  ChildProcesses& operator=(const ChildProcesses&) = delete;
  // Kills (SIGKILL to each child's process group) and reaps the children left.
  ~ChildProcesses();

  // Forks a child that waits on a pipe for workloads and runs each with `run`.
  Result<pid_t> Spawn(Runner run);
  Result<WorkloadResult> Run(pid_t pid, const Workload& w);
  Result<void> Exit(pid_t pid);

 private:
  struct Child {
    int command_fd = -1;  // parent -> child
    int reply_fd = -1;    // child -> parent
  };
  std::map<pid_t, Child> children_;
};

}  // namespace perftest::internal
