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

// perf_event_task_match(): which events see FORK and EXIT.
bool SeesTasks(const perf_event_attr& a) { return a.comm || a.mmap || a.mmap2 || a.mmap_data || a.task; }

// Page faults of exec(2) and of the program it runs until exit (a small
// static-looking program such as /bin/true: the kernel here shows ~40-100).
constexpr uint64_t kExecPages = 48;


// The namespaces of every simulated task, NET_NS_INDEX .. CGROUP_NS_INDEX
// (NR_NAMESPACES = 7): all on the nsfs device, the initial namespaces' inode
// numbers (PROC_*_INIT_INO of include/linux/proc_ns.h).
std::vector<NamespacesRecord::Namespace> MockNamespaces() {
  constexpr uint64_t kNsfsDev = 4;
  return {{kNsfsDev, 0xf0000098},   // net (dynamic in the kernel)
          {kNsfsDev, 0xEFFFFFFEU},  // uts: PROC_UTS_INIT_INO
          {kNsfsDev, 0xEFFFFFFFU},  // ipc: PROC_IPC_INIT_INO
          {kNsfsDev, 0xEFFFFFFCU},  // pid: PROC_PID_INIT_INO
          {kNsfsDev, 0xEFFFFFFDU},  // user: PROC_USER_INIT_INO
          {kNsfsDev, 0xf0000000},   // mnt (dynamic)
          {kNsfsDev, 0xEFFFFFFBU}}; // cgroup: PROC_CGROUP_INIT_INO
}

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
  // perf_event_fork() -> perf_event_task(child, NULL, 1), in the parent.
  const OutputContext parent_ctx = Context();
  ForEachSideBandFn([&](MockEvent& ev) {
    if (!SeesTasks(ev.attr)) return;
    Record r;
    r.header.type = PERF_RECORD_FORK;
    r.body = TaskRecord{static_cast<uint32_t>(child.pid), static_cast<uint32_t>(task_.pid),
                        static_cast<uint32_t>(child.tid), static_cast<uint32_t>(task_.tid), EventClock(ev, now_)};
    EmitRecord(ev, std::move(r), parent_ctx);
  });
  // ... then perf_event_namespaces(child): the new task's namespaces.
  ForEachSideBandFn([&](MockEvent& ev) {
    if (!ev.attr.namespaces) return;  // perf_event_namespaces_match()
    Record r;
    r.header.type = PERF_RECORD_NAMESPACES;
    r.body = NamespacesRecord{static_cast<uint32_t>(child.pid), static_cast<uint32_t>(child.tid), MockNamespaces()};
    EmitRecord(ev, std::move(r), parent_ctx);
  });
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

void MockBackend::ExecCurrent(const std::string& path) {
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
  const OutputContext ctx = Context();
  ForEachSideBandFn([&](MockEvent& ev) {
    if (!ev.attr.comm) return;
    Record r;
    r.header.type = PERF_RECORD_COMM;
    r.header.misc = PERF_RECORD_MISC_COMM_EXEC;
    r.body = CommRecord{static_cast<uint32_t>(task_.pid), static_cast<uint32_t>(task_.tid), task_.comm};
    EmitRecord(ev, std::move(r), ctx);
  });
  // The program's text is mapped: perf_event_mmap() of its executable
  // mapping, only while some event on the system asks for mmap records
  // (nr_mmap_events counts mmap/mmap_data, not mmap2 alone).
  const bool any_mmap =
      std::any_of(events_.begin(), events_.end(), [](const auto& e) { return e->attr.mmap || e->attr.mmap_data; });
  if (any_mmap) {
    constexpr uint64_t kTextAddr = 0x0000555555556000, kTextLen = 0x4000, kTextPgoff = 0x2000;
    ForEachSideBandFn([&](MockEvent& ev) {
      const perf_event_attr& a = ev.attr;
      if (!(a.mmap || a.mmap2)) return;
      Record r;
      r.header.misc = PERF_RECORD_MISC_USER;
      if (a.mmap2) {
        r.header.type = PERF_RECORD_MMAP2;
        Mmap2Record m;
        m.pid = static_cast<uint32_t>(task_.pid);
        m.tid = static_cast<uint32_t>(task_.tid);
        m.addr = kTextAddr;
        m.len = kTextLen;
        m.pgoff = kTextPgoff;
        m.maj = 254;  // the root filesystem's device, an inode on it
        m.min = 1;
        m.ino = 1835081;
        m.prot = PROT_READ | PROT_EXEC;
        m.flags = MAP_PRIVATE;
        m.filename = path;
        r.body = std::move(m);
      } else {
        r.header.type = PERF_RECORD_MMAP;
        r.body = MmapRecord{static_cast<uint32_t>(task_.pid), static_cast<uint32_t>(task_.tid), kTextAddr, kTextLen,
                            kTextPgoff, path};
      }
      EmitRecord(ev, std::move(r), ctx);
    });
  }
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
  // perf_event_exit_task() -> perf_event_task(child, NULL, 0): EXIT through
  // the task's own events (output to the parents' buffers), then CPU 0's.
  OutputContext ctx = Context();
  ctx.pid = t.pid;
  ctx.tid = t.tid;
  auto exit_record = [&](MockEvent& ev) {
    Record r;
    r.header.type = PERF_RECORD_EXIT;
    // EXIT names the parent by pid in both ppid and ptid (perf_event_task_output()).
    r.body = TaskRecord{static_cast<uint32_t>(t.pid), static_cast<uint32_t>(task_.pid), static_cast<uint32_t>(t.tid),
                        static_cast<uint32_t>(task_.pid), EventClock(ev, now_)};
    return r;
  };
  for (size_t i = 0; i < events_.size(); ++i) {
    MockEvent& e = *events_[i];
    if (e.pid == t.tid && !e.exited && e.enabled && SeesTasks(e.attr) && (e.cpu == -1 || e.cpu == 0)) {
      EmitRecord(e, exit_record(e), ctx);
    }
  }
  for (size_t j = events_.size(); j-- > 0;) {
    MockEvent& e = *events_[j];
    if (e.pid == -1 && e.cpu == 0 && e.enabled && SeesTasks(e.attr)) EmitRecord(e, exit_record(e), ctx);
  }
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
