// The MockBackends that answer the program's perf calls, one per real task
// that events are opened on (perf_event_open's pid), plus one for CPU-wide
// events (pid = -1). Each backend's simulated current task *is* that real
// task (MockControl::ServeTask: its pid, tid, comm), so the mock's rules for
// "the task", its enable_on_exec, its records all apply to it; the backend
// counts by being fed the real task's figures (task_table.h), as a workload:
//   cpu_ns     -> Workload::Spin (cpu-clock, task-clock, time_enabled/running,
//                 and the profile's model of cycles/instructions: cpu_mhz
//                 cycles per microsecond, one instruction per cycle)
//   faults     -> Workload::TouchPages (page-faults, minor-faults; 1 us each,
//                 taken from the CPU time so task-clock stays the real one)
//   switches   -> Workload::Sleep(n, 0) (context-switches)
// The figures are those of the task and every task it forked (the inherited
// events' children, folded as the kernel does at their exit).
//
//   ServedBackends b(profile, &tasks);
//   int id = b.ForTask(tid, tgid, "perf");
//   b.Sync(id);                 // before answering a read, ioctl, close, poll
//   b.Get(id).Read(fd, buf, len);
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "harness/backend.h"
#include "mocks/mock_control.h"
#include "mocks/profile.h"
#include "tools/exec/task_table.h"

namespace perftest::exec {

class ServedBackends {
 public:
  // `tasks` must outlive this. Syncs closer together than `min_interval`
  // reuse the last figures, unless a task of the backend exited since.
  ServedBackends(MockProfile profile, const TaskTable* tasks,
                 std::chrono::microseconds min_interval = std::chrono::microseconds(0));
  // The sink every backend made from now on sends its task's signals to (MockControl::SetSignalSink).
  void SetSignalSink(MockControl::SignalSink sink) { sink_ = std::move(sink); }

  // The backend for events on task `tid` (-1: CPU-wide), made on first use.
  int ForTask(pid_t tid, pid_t tgid, const std::string& comm);
  Backend& Get(int id) { return *backends_.at(static_cast<size_t>(id)).mock.backend; }
  MockControl& Control(int id) { return *backends_.at(static_cast<size_t>(id)).mock.control; }
  size_t size() const { return backends_.size(); }
  const MachineInfo& Machine() { return machine_backend_->Machine(); }

  // Feeds backend `id` what its tasks did since the last sync (`force`:
  // even within min_interval).
  void Sync(int id, bool force = false);
  // An event with attr.inherit was opened (closed) on backend `id`: while one
  // is open, the tasks its task forks from the first one's opening count too.
  void Inherit(int id);
  void Uninherit(int id);
  // The task backend `id` serves (-1: CPU-wide).
  pid_t TaskOf(int id) const { return backends_.at(static_cast<size_t>(id)).tid; }
  // Whether backend `id` counts what `tid` does (its task's subtree, or CPU-wide).
  bool Counts(int id, pid_t tid) const;
  // A task exited: the next Sync of the backends that count it reads afresh.
  void TaskExited() { ++exits_; }
  // `tid` called execve(2) of `path`: the backends counting it are synced
  // (what it did before the exec counts before enable_on_exec), then its own
  // backend, if any, runs perf_event_exec().
  void Exec(pid_t tid, const std::string& path);

 private:
  struct Served {
    pid_t tid = -1;
    MockWithControl mock;
    TaskFigures fed;
    std::chrono::steady_clock::time_point last_sync{};
    uint64_t exits_seen = 0;
    uint64_t inherit_after = UINT64_MAX;  // TaskTable::Seq() at the first inherited event; MAX: none
    int inherit_events = 0;               // open events with attr.inherit
  };
  TaskFigures FiguresOf(const Served& s) const;
  void Feed(Served& s, const TaskFigures& now);

  MockProfile profile_;
  const TaskTable* tasks_;
  std::chrono::microseconds min_interval_;
  std::unique_ptr<Backend> machine_backend_;  // for Machine() before any event
  std::vector<Served> backends_;
  std::map<pid_t, int> by_tid_;
  uint64_t exits_ = 0;
  MockControl::SignalSink sink_;
};

}  // namespace perftest::exec
