// MockBackend, side-band records: what the task's actions tell the events
// that asked for them, each built here once (kernel/events/core.c):
//  - perf_iterate_sb(): CPU-wide side-band events of CPU 0 (newest first),
//    then the current task's events, each if enabled (ForEachSideBand());
//  - PERF_RECORD_COMM: perf_event_comm() (prctl/exec renames);
//  - PERF_RECORD_MMAP / PERF_RECORD_MMAP2: perf_event_mmap() of an anonymous
//    region or of a file (the program exec maps), one builder for both;
//  - PERF_RECORD_FORK, PERF_RECORD_NAMESPACES: perf_event_fork();
//  - PERF_RECORD_EXIT: perf_event_exit_task() -> perf_event_task();
//  - PERF_RECORD_SWITCH / SWITCH_CPU_WIDE: perf_event_switch().
// THROTTLE/UNTHROTTLE are written by mock_overflow.cc, AUX and ITRACE_START
// by mock_aux.cc; all go through EmitRecord() (event_output.h).
#include <linux/perf_event.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstring>

#include "mocks/internal/mock_backend_impl.h"

namespace perftest::mock {
namespace {

// perf_event_task_match(): which events see FORK and EXIT.
bool SeesTasks(const perf_event_attr& a) { return a.comm || a.mmap || a.mmap2 || a.mmap_data || a.task; }

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

template <typename Fn>
void MockBackend::ForEachSideBand(Fn fn) {
  // perf_iterate_sb_cpu(): CPU 0's side-band list, newest first (list_add_rcu()).
  for (size_t i = events_.size(); i-- > 0;) {
    MockEvent& e = *events_[i];
    if (e.pid == -1 && e.cpu == 0 && e.enabled) fn(e);
  }
  // perf_iterate_ctx() over current->perf_event_ctxp, if the task is current.
  if (!task_.running) return;
  for (size_t i = 0; i < events_.size(); ++i) {
    MockEvent& e = *events_[i];
    if (e.pid == task_.tid && e.enabled && (e.cpu == -1 || e.cpu == 0)) fn(e);
  }
}

// perf_event_comm() -> perf_event_comm_output(): the current task's comm,
// PERF_RECORD_MISC_COMM_EXEC when exec(2) set it.
void MockBackend::CommEvent(bool exec) {
  const OutputContext ctx = Context();
  ForEachSideBand([&](MockEvent& ev) {
    if (!ev.attr.comm) return;  // perf_event_comm_match()
    Record r;
    r.header.type = PERF_RECORD_COMM;
    r.header.misc = exec ? PERF_RECORD_MISC_COMM_EXEC : 0;
    r.body = CommRecord{static_cast<uint32_t>(task_.pid), static_cast<uint32_t>(task_.tid), task_.comm};
    EmitRecord(ev, std::move(r), ctx);
  });
}

// perf_event_mmap() -> perf_event_mmap_output(): a mapping of the current
// task. An anonymous one (MmapRegion::Anon()) is named "//anon", its pgoff is
// the address (vm_pgoff << PAGE_SHIFT), no device or inode; a file's carries
// its pgoff, device and inode (MMAP2) and path.
void MockBackend::MmapEvent(const MmapRegion& m) {
  // perf_event_mmap(): "if (atomic_read(&nr_mmap_events) == 0) return;" --
  // account_event() counts attr.mmap and attr.mmap_data only, so an event
  // with attr.mmap2 alone sees no mapping unless another event has one of them.
  const bool any = std::any_of(events_.begin(), events_.end(),
                               [](const auto& e) { return e->attr.mmap || e->attr.mmap_data; });
  if (!any) return;
  const OutputContext ctx = Context();
  ForEachSideBand([&](MockEvent& ev) {
    const perf_event_attr& a = ev.attr;
    // perf_event_mmap_match().
    if (!((m.exec && (a.mmap || a.mmap2)) || (!m.exec && a.mmap_data))) return;
    Record r;
    r.header.misc = PERF_RECORD_MISC_USER | (m.exec ? 0 : PERF_RECORD_MISC_MMAP_DATA);
    if (a.mmap2) {
      r.header.type = PERF_RECORD_MMAP2;
      Mmap2Record m2;
      m2.pid = static_cast<uint32_t>(task_.pid);
      m2.tid = static_cast<uint32_t>(task_.tid);
      m2.addr = m.addr;
      m2.len = m.len;
      m2.pgoff = m.pgoff;
      m2.maj = m.maj;
      m2.min = m.min;
      m2.ino = m.ino;
      m2.prot = m.exec ? (PROT_READ | PROT_EXEC) : (PROT_READ | PROT_WRITE);
      m2.flags = MAP_PRIVATE;
      m2.filename = m.filename;
      r.body = std::move(m2);
    } else {
      r.header.type = PERF_RECORD_MMAP;
      r.body = MmapRecord{static_cast<uint32_t>(task_.pid), static_cast<uint32_t>(task_.tid), m.addr, m.len, m.pgoff,
                          m.filename};
    }
    EmitRecord(ev, std::move(r), ctx);
  });
}

// perf_event_fork() in the parent: perf_event_task(child, NULL, 1)
// (PERF_RECORD_FORK), then perf_event_namespaces(child).
void MockBackend::ForkEvent(const Task& child) {
  const OutputContext parent_ctx = Context();
  ForEachSideBand([&](MockEvent& ev) {
    if (!SeesTasks(ev.attr)) return;
    Record r;
    r.header.type = PERF_RECORD_FORK;
    r.body = TaskRecord{static_cast<uint32_t>(child.pid), static_cast<uint32_t>(task_.pid),
                        static_cast<uint32_t>(child.tid), static_cast<uint32_t>(task_.tid), EventClock(ev, now_)};
    EmitRecord(ev, std::move(r), parent_ctx);
  });
  ForEachSideBand([&](MockEvent& ev) {
    if (!ev.attr.namespaces) return;  // perf_event_namespaces_match()
    Record r;
    r.header.type = PERF_RECORD_NAMESPACES;
    r.body = NamespacesRecord{static_cast<uint32_t>(child.pid), static_cast<uint32_t>(child.tid), MockNamespaces()};
    EmitRecord(ev, std::move(r), parent_ctx);
  });
}

// perf_event_exit_task() -> perf_event_task(child, NULL, 0): EXIT through
// the task's own events (output to the parents' buffers), then CPU 0's.
void MockBackend::ExitEvent(const Task& t) {
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
}


// perf_event_switch() -> perf_event_switch_output(): task events see
// PERF_RECORD_SWITCH, CPU-wide ones PERF_RECORD_SWITCH_CPU_WIDE with the other
// side's pid/tid. `self` switches out to (or in from) `other` on CPU 0;
// nullptr is the idle task (pid 0). perf_event_task_sched_out(prev, next)
// calls perf_event_switch(prev, next, false), perf_event_task_sched_in(prev,
// next) perf_event_switch(next, prev, true): a hand-over from the parent to a
// child it waits for names the child on both sides (records.switch_cpu_wide_fork).
void MockBackend::SwitchEvent(bool sched_in, const Task* self, const Task* other) {
  OutputContext ctx = Context();
  ctx.pid = self != nullptr ? self->pid : 0;
  ctx.tid = self != nullptr ? self->tid : 0;
  uint16_t misc = sched_in ? 0 : PERF_RECORD_MISC_SWITCH_OUT;
  // The idle task is always runnable when switched out: a preemption.
  if (!sched_in && self == nullptr) misc |= PERF_RECORD_MISC_SWITCH_OUT_PREEMPT;
  const uint32_t other_pid = other != nullptr ? static_cast<uint32_t>(other->pid) : 0;
  const uint32_t other_tid = other != nullptr ? static_cast<uint32_t>(other->tid) : 0;
  auto emit = [&](MockEvent& ev, bool cpu_wide) {
    if (!ev.attr.context_switch) return;
    const SampleLayout layout = SampleLayout::FromAttr(ev.attr);
    OtherRecord body;
    if (cpu_wide) {
      body.body.resize(8);
      std::memcpy(body.body.data(), &other_pid, 4);
      std::memcpy(body.body.data() + 4, &other_tid, 4);
    }
    EncodeSampleId(layout, MakeSampleId(ev, ctx), &body.body);
    Record r;
    r.header.type = cpu_wide ? PERF_RECORD_SWITCH_CPU_WIDE : PERF_RECORD_SWITCH;
    r.header.misc = misc;
    r.body = std::move(body);
    EmitRecord(ev, std::move(r), ctx);
  };
  for (size_t i = events_.size(); i-- > 0;) {
    MockEvent& e = *events_[i];
    if (e.pid == -1 && e.cpu == 0 && e.enabled) emit(e, true);
  }
  if (self == nullptr) return;
  for (size_t i = 0; i < events_.size(); ++i) {
    MockEvent& e = *events_[i];
    if (e.pid == self->tid && e.enabled && !e.exited && (e.cpu == -1 || e.cpu == 0)) emit(e, false);
  }
}

}  // namespace perftest::mock
