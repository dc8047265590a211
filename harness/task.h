// ChildTask: a task the suite drives step by step, owned (move-only): exits and
// is reaped on destruction, so a failing case leaves no process behind.
//
//   Result<ChildTask> child = ChildTask::Spawn(backend);   // forked now: inherits attr.inherit events
//   Event ev = *Event::Open(backend, attr, child->pid());    // or an event on it
//   child->Run(Workload::TouchPages(64));                   // runs in the child; it lives on
//   child->Exit();                                          // _exit(0), reaped: counts folded
//
// Backend::SpawnTask/RunInTask/ExitTask do the work (harness/backend.h).
#pragma once

#include <sys/types.h>

#include "harness/backend.h"
#include "harness/result.h"
#include "harness/workload.h"

namespace perftest {

class ChildTask {
 public:
  // Errors: Backend::SpawnTask()'s (ENOSYS where the backend has no tasks).
  static Result<ChildTask> Spawn(Backend& backend);

  ChildTask(ChildTask&& other) noexcept;
  ChildTask& operator=(ChildTask&& other) noexcept;
  ChildTask(const ChildTask&) = delete;
  ChildTask& operator=(const ChildTask&) = delete;
  ~ChildTask();

  pid_t pid() const { return pid_; }
  // Runs `w` in the child and waits for it. Errors: the workload's errno; ESRCH after Exit().
  Result<WorkloadResult> Run(const Workload& w);
  // The child _exit(0)s and is reaped. Idempotent.
  Result<void> Exit();

 private:
  ChildTask(Backend* backend, pid_t pid) : backend_(backend), pid_(pid) {}
  Backend* backend_ = nullptr;
  pid_t pid_ = -1;
};

}  // namespace perftest
