// MockBackend, child tasks: fork/clone with inherited events, exec, exit.
//
// A child is a simulated task (pid, tid, comm) that runs only when the model
// runs it: RunAsTask() puts it on CPU 0 and takes the current task off for the
// duration (per-task events of other tasks are not schedulable meanwhile; no
// SWITCH records are written for these hand-overs). The rules, from
// kernel/events/core.c:
//  - perf_event_init_task() -> inherit_task_group() -> inherit_group() /
//    inherit_event(): at fork every attr.inherit event of the parent's context
//    is copied into the child's, groups as groups; attr.inherit_thread ones only
//    for CLONE_THREAD. A copy's parent is the original (never a copy), its state
//    the parent's (OFF stays OFF), its output the parent's buffer.
//  - __perf_event_read_value(): a read adds the live copies' counts and times.
//  - perf_ioctl() -> perf_event_for_each_child(): ENABLE/DISABLE/RESET reach the copies.
//  - perf_event_exec(): perf_event_enable_on_exec() then perf_event_remove_on_exec()
//    (a removed copy is folded like at exit).
//  - perf_event_exit_task(): PERF_RECORD_EXIT through the task's events and
//    CPU 0's side-band events; sync_child_event() adds each copy's count and
//    times to its parent (no PERF_RECORD_READ: ctx->task is TASK_TOMBSTONE by
//    then, Linux 6.18); events opened on the task itself go to state EXIT
//    (poll says POLLHUP: is_event_hup()).
//  - perf_event_release_kernel(): closing a parent frees its copies.
#include <fmt/format.h>
#include <linux/perf_event.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>

#include "mocks/internal/mock_backend_impl.h"
#include "mocks/software_pmu.h"

namespace perftest::mock {
namespace {

// Page faults of exec(2) and of the program it runs until exit (a small
// static-looking program such as /bin/true: the kernel here shows ~40-100).
constexpr uint64_t kExecPages = 48;

}  // namespace

MockBackend::Task MockBackend::ForkTask(bool thread) {
  Task child = task_;
  child.tid = next_pid_++;
  if (!thread) child.pid = child.tid;
  child.running = false;
  // copy_process() -> trace_sched_process_fork(), in the parent, kernel regs.
  SampleData k;
  k.ip = kKernelForkIp;
  k.user_mode = false;
  k.stack = SampleData::Stack::kKernelSwitch;
  k.pid = task_.pid;
  k.tid = task_.tid;
  TracepointFire("sched:sched_process_fork",
                 TraceValues{{{"parent_pid", task_.pid}, {"child_pid", child.tid}},
                             {{"parent_comm", task_.comm}, {"child_comm", task_.comm}}},
                 k);
  // perf_event_fork(): FORK and NAMESPACES, in the parent (mock_sideband.cc).
  ForkEvent(child);
  // inherit_task_group(): leaders in context order, each with its members.
  std::vector<MockEvent*> leaders;
  for (const auto& e : events_) {
    if (e->pid == task_.tid && e->is_leader() && !e->exited && e->attr.inherit && (thread || !e->attr.inherit_thread)) {
      leaders.push_back(e.get());
    }
  }
  auto copy = [&](MockEvent& from, MockEvent* leader_copy) {
    MockEvent& root = from.parent != nullptr ? *from.parent : from;
    auto c = std::make_unique<MockEvent>();
    c->id = next_id_++;
    c->attr = from.attr;
    c->pid = child.tid;
    c->cpu = from.cpu;
    c->parent = &root;
    c->enabled = from.enabled;  // "Make the child state follow the state of the parent event"
    c->is_clock = from.is_clock;
    c->pmu = from.pmu;
    c->tracepoint = from.tracepoint;
    c->filter = from.filter;
    c->uprobe = from.uprobe;
    c->hw_event = from.hw_event;
    PeriodStateInit(*c);
    if (from.attr.freq) {  // inherit_event(): the parent's current period
      c->hw.sample_period = c->hw.last_period = from.hw.sample_period;
      c->hw.period_left = static_cast<int64_t>(from.hw.sample_period);
    }
    MockEvent* raw = c.get();
    if (leader_copy != nullptr) {
      raw->leader = leader_copy;
      leader_copy->siblings.push_back(raw);
    }
    root.children.push_back(raw);
    events_.push_back(std::move(c));
    return raw;
  };
  for (MockEvent* l : leaders) {
    const std::vector<MockEvent*> members = l->siblings;
    MockEvent* lc = copy(*l, nullptr);
    for (MockEvent* m : members) copy(*m, lc);
  }
  return child;
}

Result<WorkloadResult> MockBackend::RunAsTask(Task& t, const std::function<Result<WorkloadResult>()>& fn) {
  Task saved = task_;
  saved.running = task_.running;
  task_ = t;
  task_.running = true;
  Reschedule();
  Result<WorkloadResult> r = fn();
  t = task_;
  t.running = false;
  task_ = saved;
  Reschedule();
  return r;
}

void MockBackend::ExecCurrent(const std::string& path, bool simulate_program) {
  // perf_event_exec() -> perf_event_enable_on_exec(): the task's events with
  // enable_on_exec that are OFF become enabled.
  for (size_t i = 0; i < events_.size(); ++i) {
    MockEvent& e = *events_[i];
    if (e.pid == task_.tid && e.attr.enable_on_exec && !e.enabled && !e.exited) EnableEvent(e);
  }
  // perf_event_remove_on_exec(): copies are folded into their parents and
  // freed; the task's own events leave the context (state EXIT).
  std::vector<MockEvent*> removed;
  for (const auto& e : events_) {
    if (e->pid == task_.tid && e->attr.remove_on_exec && !e->exited) removed.push_back(e.get());
  }
  for (MockEvent* e : removed) {
    if (e->parent != nullptr) {
      ExitChildEvent(e);
    } else {
      if (e->active) SchedOut(*e);
      e->exited = true;
    }
  }
  // The comm becomes the program's name: perf_event_comm(task, exec = true).
  const size_t slash = path.rfind('/');
  task_.comm = path.substr(slash == std::string::npos ? 0 : slash + 1).substr(0, 15);
  CommEvent(/*exec=*/true);
  if (!simulate_program) return;
  // The program's text is mapped: perf_event_mmap() of its executable file
  // mapping (the root filesystem's device, an inode on it).
  constexpr uint64_t kTextAddr = 0x0000555555556000, kTextLen = 0x4000, kTextPgoff = 0x2000;
  MmapEvent(MmapRegion{kTextAddr, kTextLen, kTextPgoff, /*exec=*/true, /*maj=*/254, /*min=*/1, /*ino=*/1835081, path});
  // The new program runs: its loader and libc fault their pages in.
  (void)RunWorkload(Workload::TouchPages(kExecPages));
}

// Takes copy `c` out of its group and frees it (its parent's child_list is the caller's).
void MockBackend::FreeCopy(MockEvent* c) {
  if (c->active) SchedOut(*c);
  if (!c->is_leader()) {
    auto& sib = c->leader->siblings;
    sib.erase(std::remove(sib.begin(), sib.end(), c), sib.end());
  }
  for (MockEvent* s : c->siblings) s->leader = s;
  events_.erase(std::remove_if(events_.begin(), events_.end(), [&](const auto& p) { return p.get() == c; }),
                events_.end());
}

void MockBackend::ExitChildEvent(MockEvent* c) {
  if (c->active) SchedOut(*c);  // the count and times up to now
  MockEvent* parent = c->parent;
  // sync_child_event(): the count and times go to the parent.
  parent->child_count += c->count;
  parent->child_time_enabled += c->time_enabled;
  parent->child_time_running += c->time_running;
  auto& kids = parent->children;
  kids.erase(std::remove(kids.begin(), kids.end(), c), kids.end());
  FreeCopy(c);
  UpdateUserPage(*parent);
}

void MockBackend::FreeChildren(MockEvent* ev) {
  // perf_event_release_kernel(): the copies are removed without folding.
  const std::vector<MockEvent*> kids = ev->children;
  ev->children.clear();
  for (MockEvent* c : kids) FreeCopy(c);
}

void MockBackend::ExitTaskModel(const Task& t) {
  ExitEvent(t);  // PERF_RECORD_EXIT (mock_sideband.cc)
  std::vector<MockEvent*> mine;
  for (const auto& e : events_) {
    if (e->pid == t.tid) mine.push_back(e.get());
  }
  for (MockEvent* e : mine) {
    if (e->parent != nullptr) {
      ExitChildEvent(e);
    } else if (!e->exited) {
      if (e->active) SchedOut(*e);
      e->exited = true;  // perf_event_exit_event(): state EXIT, waiters woken
    }
  }
}

Result<pid_t> MockBackend::SpawnTask() {
  Task child = ForkTask(/*thread=*/false);
  spawned_[child.tid] = child;
  return Result<pid_t>::Ok(child.tid, fmt::format("spawn_task() = {}", child.tid));
}

Result<WorkloadResult> MockBackend::RunInTask(pid_t pid, const Workload& w) {
  const std::string call = fmt::format("run_in_task({}, {})", pid, w.Describe());
  auto it = spawned_.find(pid);
  if (it == spawned_.end()) return Result<WorkloadResult>::Failure(ESRCH, call + " [mock: no such task]");
  Result<WorkloadResult> r = RunAsTask(it->second, [&] { return RunWorkload(w); });
  if (!r.ok()) return Result<WorkloadResult>::Failure(r.error(), call + ": " + r.call());
  return Result<WorkloadResult>::Ok(std::move(*r), call);
}

Result<void> MockBackend::ExitTask(pid_t pid) {
  const std::string call = fmt::format("exit_task({})", pid);
  auto it = spawned_.find(pid);
  if (it == spawned_.end()) return Result<void>::Failure(ESRCH, call + " [mock: no such task]");
  const Task t = it->second;
  spawned_.erase(it);
  ExitTaskModel(t);
  return Result<void>::Ok({}, call);
}

}  // namespace perftest::mock
