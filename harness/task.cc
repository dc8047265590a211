#include "harness/task.h"

#include <cerrno>
#include <string>
#include <utility>

namespace perftest {

Result<ChildTask> ChildTask::Spawn(Backend& backend) {
  Result<pid_t> pid = backend.SpawnTask();
  if (!pid.ok()) return Result<ChildTask>::FailureFrom(pid);
  return Result<ChildTask>::Ok(ChildTask(&backend, *pid), pid.call_description());
}

ChildTask::ChildTask(ChildTask&& other) noexcept
    : backend_(other.backend_), pid_(std::exchange(other.pid_, -1)) {}

ChildTask& ChildTask::operator=(ChildTask&& other) noexcept {
  if (this != &other) {
    (void)Exit();
    backend_ = other.backend_;
    pid_ = std::exchange(other.pid_, -1);
  }
  return *this;
}

ChildTask::~ChildTask() { (void)Exit(); }

Result<WorkloadResult> ChildTask::Run(const Workload& w) {
  if (pid_ < 0) return Result<WorkloadResult>::Failure(ESRCH, "run_in_task(exited, " + w.Describe() + ")");
  return backend_->RunInTask(pid_, w);
}

Result<void> ChildTask::Exit() {
  if (pid_ < 0) return Result<void>::Ok({}, "exit_task(exited)");
  const pid_t pid = std::exchange(pid_, -1);
  return backend_->ExitTask(pid);
}

}  // namespace perftest
