// The served program's real tasks (processes and threads), followed across
// fork/clone/exec by the tracer, and their figures: what the kernel's
// software events would have counted for them, read from /proc.
//
//   TaskTable t;
//   t.Add(root_pid, root_pid, /*parent=*/0);
//   t.Add(child_tid, child_tgid, /*parent=*/root_pid);   // PTRACE_EVENT_FORK/CLONE
//   t.Exited(child_tid, ReadFigures(child_tid));          // PTRACE_EVENT_EXIT: final figures
//   TaskFigures f = t.SubtreeFigures(root_pid);           // live ones read now
//
// Figures (proc(5)): cpu_ns from /proc/<tid>/schedstat's first field
// (se.sum_exec_runtime, ns: what task-clock counts, kernel/sched/core.c
// task_sched_runtime()), faults = minflt + majflt of /proc/<tid>/stat (what
// page-faults counts: do_user_addr_fault() -> perf_sw_event(PAGE_FAULTS)),
// switches = voluntary + nonvoluntary ctxt_switches of /proc/<tid>/status
// (context-switches: perf_event_task_sched_out()). migrations stays 0 (not
// read: cpu-migrations is not fed to the mock).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace perftest::exec {

struct TaskFigures {
  uint64_t cpu_ns = 0;
  uint64_t faults = 0;
  uint64_t switches = 0;
  uint64_t migrations = 0;

  TaskFigures& operator+=(const TaskFigures& o) {
    cpu_ns += o.cpu_ns;
    faults += o.faults;
    switches += o.switches;
    migrations += o.migrations;
    return *this;
  }
};

// The figures of thread `tid` now; nullopt when it is gone (its /proc entry
// no longer readable).
std::optional<TaskFigures> ReadFigures(pid_t tid);

struct TrackedTask {
  pid_t tid = 0;
  pid_t tgid = 0;
  pid_t parent = 0;   // the task that forked/cloned it (0 for the program's first)
  bool alive = true;
  bool seen_stop = false;  // its first ptrace stop came (a new task's SIGSTOP is swallowed)
  // ptrace stops the tracer caused: each is a voluntary context switch of
  // the task (ptrace_stop() -> schedule()), not one the program made.
  uint64_t stops = 0;
  uint64_t seq = 0;  // creation order in the table (TaskTable::Seq() when added)
  TaskFigures final_figures;  // at exit
};

class TaskTable {
 public:
  // A new task; `parent` 0 for the root (or not known yet: a new task's first
  // stop may come before its parent's PTRACE_EVENT_FORK; Add again then).
  void Add(pid_t tid, pid_t tgid, pid_t parent);
  TrackedTask* Find(pid_t tid);
  const TrackedTask* Find(pid_t tid) const;
  // The task exited with these figures (read at PTRACE_EVENT_EXIT).
  void Exited(pid_t tid, const TaskFigures& final_figures);
  // A non-leader thread of `tgid` called execve(2): the kernel gives it the
  // leader's tid (de_thread()); `old_tid` stops existing as such.
  void ExecFromThread(pid_t old_tid, pid_t tgid);
  // Whether `tid` is `ancestor` or descends from it.
  bool InSubtree(pid_t tid, pid_t ancestor) const;
  // The sum over `root` and every task descending from it: live tasks read
  // now (via `read`, ReadFigures by default), exited ones their final figures.
  TaskFigures SubtreeFigures(pid_t root) const;
  TaskFigures SubtreeFigures(pid_t root, std::optional<TaskFigures> (*read)(pid_t)) const;
  // The same, descendants counted only when added after sequence number
  // `after` (inherited events follow the tasks forked once they are open:
  // perf_event_init_task() copies the events open at fork); UINT64_MAX: the
  // root alone (no inherited events).
  TaskFigures SubtreeFigures(pid_t root, uint64_t after, std::optional<TaskFigures> (*read)(pid_t) = nullptr) const;
  // The sequence number of the latest task added.
  uint64_t Seq() const { return seq_; }
  // The sum over every task (the CPU-wide view of the program).
  TaskFigures AllFigures() const;
  // Live tasks, by tid.
  std::vector<pid_t> Live() const;
  size_t size() const { return tasks_.size(); }

 private:
  std::map<pid_t, TrackedTask> tasks_;
  uint64_t seq_ = 0;
};

}  // namespace perftest::exec
