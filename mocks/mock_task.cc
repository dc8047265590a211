// MockBackend, the simulated task: its clock and workloads, event scheduling,
// counting and sampling, throttling, and the side-band records its actions
// produce. The syscall surface is in mock_backend.cc.
//
// Time. now_ only moves inside workloads. Advance() walks it forward in
// order of events: scheduler ticks every NSEC_PER_SEC / hz ns of absolute
// time (perf_event_task_tick(): throttle sequence, unthrottling, frequency
// adjustment) and the hrtimers of cpu-clock/task-clock (every max(10 us,
// period) ns of their running time). Per-task events are ACTIVE only while the
// task is on CPU 0; their times (time_enabled, time_running) run with the
// task's context, CPU-wide events' with the CPU's (always).
//
// Throttling (Linux 6.16+ semantics, kernel/events/core.c):
// __perf_event_account_interrupt() counts interrupts per tick; an overflow
// that may throttle (hrtimer firings, and the second and later overflows of one
// software event) and reaches max_samples_per_tick = DIV_ROUND_UP(
// perf_event_max_sample_rate, HZ) throttles the whole group
// (perf_event_throttle_group(): every enabled member stopped, so software
// events stop counting too, interrupts = MAX_INTERRUPTS, THROTTLE logged by the
// leader); the sample that tripped it is still written. The next tick
// (perf_adjust_freq_unthr_events()) or the next sched-in (event_sched_in())
// unthrottles and logs UNTHROTTLE.
#include <fmt/format.h>
#include <linux/perf_event.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "mocks/internal/mock_backend_impl.h"
#include "mocks/software_pmu.h"

namespace perftest::mock {
namespace {

// Top of the simulated mmap area: regions are handed out top-down below it
// and unmapped when the workload ends, so a region of the same size comes back
// at the same address (as mmap(2) would).
constexpr uint64_t kMmapTop = 0x00007ffff7fc0000;
// The least simulated time a page touch takes (the fault itself), ns.
constexpr uint64_t kMinTouchNs = 1000;
// One memory access or call of kWriteMemory/kReadMemory/kExecute, ns.
constexpr uint64_t kMemoryAccessNs = 1;
// One getpid(2), ns.
constexpr uint64_t kSyscallNs = 200;
// __NR_getpid (x86_64).
constexpr int64_t kGetpidNr = 39;
// From fork() to the child's exit, ns (the kernel here: tens of microseconds).
constexpr uint64_t kForkNs = 50000;

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

// The CPU whose counters an event uses while active (the task runs on CPU 0).
static int CountersCpu(const MockEvent& e) { return e.pid == -1 ? e.cpu : 0; }

// perf_event_task_match(): which events see FORK and EXIT.
bool TaskMatch(const perf_event_attr& a) { return a.comm || a.mmap || a.mmap2 || a.mmap_data || a.task; }

}  // namespace

// event->pmu_ctx->pmu: a software event in a hardware group lives in the
// leader's PMU context (perf_event_open() "move_group"/is_software_event()).
static PmuId EffectivePmu(const MockEvent& e) {
  return e.pmu != PmuId::kCore && e.leader->pmu == PmuId::kCore ? PmuId::kCore : e.pmu;
}
// The PMU whose ctx_resched() schedules the event's group.
static PmuId GroupPmu(const MockEvent& e) { return EffectivePmu(*e.leader); }

bool MockBackend::Schedulable(const MockEvent& ev) const {
  if (!ev.enabled || ev.deferred) return false;
  if (!ev.is_leader() && !ev.leader->enabled) return false;  // group scheduling
  if (ev.pid == -1) return true;                              // a CPU context always runs
  return task_.running && (ev.cpu == -1 || ev.cpu == 0);      // the task runs on CPU 0
}

bool MockBackend::CountersFree(const std::vector<const MockEvent*>& joining) const {
  if (joining.empty()) return true;
  const int cpu = CountersCpu(*joining.front());
  std::vector<HwEvent> on;
  for (const auto& e : events_) {
    if (e->active && e->pmu == PmuId::kCore && CountersCpu(*e) == cpu) on.push_back(e->hw_event);
  }
  for (const MockEvent* e : joining) on.push_back(e->hw_event);
  return HardwareFits(on, profile_.hardware);
}

// ctx_sched_out()/ctx_sched_in() reduced: events that may no longer run go
// out; then, in creation order, a group goes in as a unit (group_sched_in())
// when its hardware events find counters next to those already in, and a
// member only with its leader in.
void MockBackend::Reschedule() {
  for (size_t i = 0; i < events_.size(); ++i) {
    MockEvent& e = *events_[i];
    if (e.active && (!Schedulable(e) || (!e.is_leader() && !e.leader->active))) SchedOut(e);
  }
  for (size_t i = 0; i < events_.size(); ++i) {
    MockEvent& e = *events_[i];
    if (e.active || !Schedulable(e)) continue;
    if (!e.is_leader()) {
      if (!e.leader->active) continue;
      if (e.pmu == PmuId::kCore && !CountersFree({&e})) continue;
      SchedIn(e);
      continue;
    }
    std::vector<const MockEvent*> group;
    if (e.pmu == PmuId::kCore) group.push_back(&e);
    for (const MockEvent* s : e.siblings) {
      if (s->pmu == PmuId::kCore && !s->active && Schedulable(*s)) group.push_back(s);
    }
    if (!CountersFree(group)) continue;  // no rotation in the model: the group waits
    SchedIn(e);
  }
}

void MockBackend::SchedIn(MockEvent& ev) {
  // event_sched_in(): "Unthrottle events, since we scheduled we might have
  // missed several ticks already".
  ev.active = true;
  if (ev.hw.interrupts == kMaxInterrupts) {
    ev.hw.interrupts = 0;
    LogThrottle(ev, /*unthrottle=*/true);
  }
  SoftwareEventStart(ev, /*add=*/true);
}

void MockBackend::SchedOut(MockEvent& ev) {
  SoftwareEventStop(ev);
  ev.active = false;
}

// _perf_event_enable() -> __perf_event_enable(): the event becomes INACTIVE,
// then ctx_resched(cpuctx, task_ctx, event->pmu_ctx->pmu): only the groups
// led from the event's own PMU are scheduled out and in again. A member whose
// leader is in another PMU (a minor-faults member of a task-clock leader, say)
// is therefore not scheduled in until the task is next switched in, or until
// something reschedules the leader's PMU (Linux 6.18: time_enabled grows,
// time_running and the count stay 0 meanwhile).
void MockBackend::EnableEvent(MockEvent& ev) {
  if (ev.enabled) return;
  ev.enabled = true;
  if (!ev.is_leader() && ev.leader->active && ev.pid != -1 && EffectivePmu(ev) != GroupPmu(ev)) ev.deferred = true;
  const PmuId resched = EffectivePmu(ev);
  for (const auto& e : events_) {
    if (e->deferred && GroupPmu(*e) == resched) e->deferred = false;
  }
  // __perf_event_enable() -> ctx_resched(event's pmu): that PMU's groups go
  // out and come back in group order, so the counters go to the oldest groups first.
  if (ev.pmu == PmuId::kCore) {
    for (const auto& e : events_) {
      if (e->active && e->pmu == PmuId::kCore && CountersCpu(*e) == CountersCpu(ev)) SchedOut(*e);
    }
  }
  Reschedule();
  UpdateUserPage(ev);
}

void MockBackend::DisableEvent(MockEvent& ev) {
  if (!ev.enabled) return;
  ev.enabled = false;
  Reschedule();
  UpdateUserPage(ev);
}

void MockBackend::UpdateUserPage(MockEvent& ev) {
  if (ev.rb != nullptr) ev.rb->UpdateUserPage(ev.count + ev.child_count, ev.time_enabled, ev.time_running);
}

OutputContext MockBackend::Context() const {
  OutputContext c;
  c.now = now_;
  c.pid = task_.running ? task_.pid : 0;
  c.tid = task_.running ? task_.tid : 0;
  c.cpu = 0;
  c.page_size = profile_.page_size;
  c.max_contexts_per_stack = profile_.max_contexts_per_stack;
  c.x86_64 = profile_.arch == "x86_64";
  return c;
}

OutputContext MockBackend::ContextOf(const SampleData& d) const {
  OutputContext c = Context();
  c.pid = d.pid;
  c.tid = d.tid;
  c.cpu = d.cpu;
  return c;
}

SampleData MockBackend::UserData(uint64_t ip, uint64_t addr) const {
  SampleData d;
  d.ip = ip;
  d.addr = addr;
  d.user_mode = true;
  d.stack = task_.stack;
  d.pid = task_.pid;
  d.tid = task_.tid;
  d.cpu = 0;
  return d;
}

SampleData MockBackend::KernelData(uint64_t ip) const {
  SampleData d;
  d.ip = ip;
  d.user_mode = false;
  d.stack = SampleData::Stack::kKernelSwitch;
  d.pid = task_.pid;
  d.tid = task_.tid;
  return d;
}

void MockBackend::Advance(uint64_t dt) {
  const uint64_t end = now_ + dt;
  for (;;) {
    const uint64_t next_tick = (now_ / tick_ns_ + 1) * tick_ns_;
    uint64_t next = std::min(end, next_tick);
    for (const auto& e : events_) {
      if (e->active && e->is_clock && e->hw.hrtimer_active && !e->hw.stopped) {
        next = std::min(next, now_ + e->hw.hrtimer_left);
      }
    }
    const uint64_t step = next - now_;
    if (task_.running) CoreClockTicks(now_, next);
    for (const auto& e : events_) {
      // Task events' times run with the task's context; CPU-wide ones always.
      // A member's effective state is its leader's while the leader is off
      // (__perf_effective_state() in __perf_update_times()): no enabled time.
      const bool ctx_running = e->pid == -1 || task_.running;
      if (e->enabled && e->leader->enabled && ctx_running) e->time_enabled += step;
      if (e->active) e->time_running += step;
      if (e->active && e->is_clock && !e->hw.stopped) {
        e->count += step;  // cpu_clock_event_update() / task_clock_event_update()
        if (e->hw.hrtimer_active) e->hw.hrtimer_left -= step;
      }
    }
    now_ = next;
    if (now_ == next_tick) Tick();
    for (size_t i = 0; i < events_.size(); ++i) {
      MockEvent& e = *events_[i];
      if (e.active && e.is_clock && e.hw.hrtimer_active && !e.hw.stopped && e.hw.hrtimer_left == 0) FireClock(e);
    }
    if (now_ >= end) break;
  }
}

// perf_event_task_tick(): a new throttle sequence, then
// perf_adjust_freq_unthr_events() over the ACTIVE events.
void MockBackend::Tick() {
  // sched_tick(): the scheduler class's task_tick() (update_curr()) runs
  // before perf_event_task_tick().
  if (task_.running) UpdateCurr();
  ++tick_seq_;
  for (size_t i = 0; i < events_.size(); ++i) {
    MockEvent& ev = *events_[i];
    if (!ev.active) continue;
    const bool freq = ev.attr.freq && ev.attr.sample_freq != 0;
    if (ev.hw.interrupts == kMaxInterrupts) UnthrottleGroup(ev, /*start_self=*/!freq);
    if (!freq) continue;
    // "stop the event and update event->count", adjust, restart.
    const uint64_t delta = ev.count - ev.hw.freq_count_stamp;
    ev.hw.freq_count_stamp = ev.count;
    if (delta > 0) AdjustPeriod(ev, tick_ns_, delta);
    SoftwareEventStart(ev, /*add=*/false);
  }
}

// perf_swevent_hrtimer(): the interrupted context is the task (user mode) or,
// for a CPU-wide event while the task sleeps or on another CPU, the idle task.
void MockBackend::FireClock(MockEvent& ev) {
  const uint32_t cpu = ev.cpu == -1 ? 0 : static_cast<uint32_t>(ev.cpu);
  const bool idle = ev.pid == -1 && (cpu != 0 || !task_.running);
  SampleData d;
  if (idle) {
    d.ip = kKernelIdleIp;
    d.user_mode = false;
    d.stack = SampleData::Stack::kKernelIdle;
    d.pid = d.tid = 0;
    d.cpu = cpu;
  } else {
    d = UserData(task_.stack == SampleData::Stack::kUserTouch ? kUserTouchIp : kUserSpinIp, 0);
  }
  // perf_exclude_event(), and exclude_idle.
  const bool excluded = (d.user_mode ? ev.attr.exclude_user : ev.attr.exclude_kernel) || (idle && ev.attr.exclude_idle);
  SoftwareClockFire(ev, d, excluded,
                    [this](MockEvent& e, int throttle, const SampleData& data) { return Overflow(e, throttle, data); });
}

// ___perf_sw_event() -> do_perf_sw_event(): every ACTIVE software event of
// this config on CPU 0 that perf_swevent_match() accepts.
void MockBackend::SoftwareOccurrence(uint64_t config, const SampleData& data) {
  for (size_t i = 0; i < events_.size(); ++i) {
    MockEvent& ev = *events_[i];
    if (!ev.active || ev.hw.stopped) continue;  // perf_exclude_event(): PERF_HES_STOPPED
    if (ev.attr.type != PERF_TYPE_SOFTWARE || ev.attr.config != config) continue;
    if (ev.pid == -1 ? ev.cpu != static_cast<int>(data.cpu) : ev.pid != data.tid) continue;
    if (data.user_mode ? ev.attr.exclude_user : ev.attr.exclude_kernel) continue;
    SoftwareEventCount(ev, 1, data,
                       [this](MockEvent& e, int throttle, const SampleData& d) { return Overflow(e, throttle, d); });
  }
}

// __perf_event_overflow().
int MockBackend::Overflow(MockEvent& ev, int throttle, const SampleData& data) {
  if (!ev.is_sampling()) return 0;
  const OutputContext ctx = ContextOf(data);
  // __perf_event_account_interrupt().
  int ret = 0;
  HwState& hw = ev.hw;
  if (hw.interrupts_seq != tick_seq_) {
    hw.interrupts_seq = tick_seq_;
    hw.interrupts = 1;
  } else {
    ++hw.interrupts;
  }
  // ">=": the max_samples_per_tick-th interrupt of a tick throttles (Linux
  // 6.18: 399 samples, THROTTLE, the 400th sample at 100 kHz and HZ 250).
  if (throttle && hw.interrupts >= max_samples_per_tick_) {
    ThrottleGroup(ev, ctx);
    ret = 1;
  }
  if (ev.attr.freq) {
    const uint64_t delta = now_ - hw.freq_time_stamp;
    hw.freq_time_stamp = now_;
    if (delta > 0 && delta < 2 * tick_ns_) AdjustPeriod(ev, delta, hw.last_period);
  }
  // PERF_EVENT_IOC_REFRESH: the event disables itself when the budget runs out.
  bool limit_reached = false;
  // "int events = atomic_read(&event->event_limit); if (events && atomic_dec_and_test(...))":
  // a negative budget (REFRESH with a negative argument) counts down without end.
  if (ev.event_limit != 0 && --ev.event_limit == 0) {
    ret = 1;
    limit_reached = true;
    SoftwareEventStop(ev, /*from_overflow=*/true);
  }
  EmitSample(ev, data, ctx);  // the overflow handler: perf_event_output()
  if (limit_reached) DisableEvent(ev);  // perf_event_disable_inatomic()
  return ret;
}

// perf_event_throttle_group().
void MockBackend::ThrottleGroup(MockEvent& ev, const OutputContext& ctx) {
  MockEvent& leader = *ev.leader;
  auto throttle = [&](MockEvent& e) {
    if (!e.enabled) return;
    SoftwareEventStop(e, /*from_overflow=*/&e == &ev);
    e.hw.interrupts = kMaxInterrupts;
    if (&e == &leader) LogThrottle(e, /*unthrottle=*/false, ctx);
  };
  throttle(leader);
  for (MockEvent* s : leader.siblings) throttle(*s);
}

// perf_event_unthrottle_group(): `start_self` false leaves starting `ev` to the
// frequency adjustment that follows.
void MockBackend::UnthrottleGroup(MockEvent& ev, bool start_self) {
  MockEvent& leader = *ev.leader;
  auto unthrottle = [&](MockEvent& e) {
    if (!e.enabled) return;
    e.hw.interrupts = 0;
    if (e.active && (&e != &ev || start_self)) SoftwareEventStart(e, /*add=*/false);
    if (&e == &leader) LogThrottle(e, /*unthrottle=*/true);
  };
  unthrottle(leader);
  for (MockEvent* s : leader.siblings) unthrottle(*s);
}

void MockBackend::LogThrottle(MockEvent& ev, bool unthrottle) { LogThrottle(ev, unthrottle, Context()); }

// perf_log_throttle(): {time, id = primary_event_id(), stream_id = event->id}.
void MockBackend::LogThrottle(MockEvent& ev, bool unthrottle, const OutputContext& ctx) {
  Record r;
  r.header.type = unthrottle ? PERF_RECORD_UNTHROTTLE : PERF_RECORD_THROTTLE;
  r.body = ThrottleRecord{EventClock(ev, ctx.now), ev.primary_id(), ev.id};
  EmitRecord(ev, std::move(r), ctx);
}

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

// perf_event_mmap() -> perf_event_mmap_output(): anonymous mappings are named
// "//anon", their pgoff is the address (vm_pgoff << PAGE_SHIFT), no inode.
void MockBackend::MmapEvent(uint64_t addr, uint64_t len, bool exec) {
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
    if (!((exec && (a.mmap || a.mmap2)) || (!exec && a.mmap_data))) return;
    Record r;
    r.header.misc = PERF_RECORD_MISC_USER | (exec ? 0 : PERF_RECORD_MISC_MMAP_DATA);
    if (a.mmap2) {
      r.header.type = PERF_RECORD_MMAP2;
      Mmap2Record m;
      m.pid = static_cast<uint32_t>(task_.pid);
      m.tid = static_cast<uint32_t>(task_.tid);
      m.addr = addr;
      m.len = len;
      m.pgoff = addr;
      m.prot = exec ? (PROT_READ | PROT_EXEC) : (PROT_READ | PROT_WRITE);
      m.flags = MAP_PRIVATE;
      m.filename = "//anon";
      r.body = std::move(m);
    } else {
      r.header.type = PERF_RECORD_MMAP;
      r.body = MmapRecord{static_cast<uint32_t>(task_.pid), static_cast<uint32_t>(task_.tid), addr, len, addr, "//anon"};
    }
    EmitRecord(ev, std::move(r), ctx);
  });
}

// perf_event_switch() -> perf_event_switch_output(): task events see
// PERF_RECORD_SWITCH, CPU-wide ones PERF_RECORD_SWITCH_CPU_WIDE with the other
// side's pid/tid. `task`: the simulated task switches (else the idle task).
void MockBackend::SwitchEvent(bool sched_in, bool task) {
  OutputContext ctx = Context();
  ctx.pid = task ? task_.pid : 0;
  ctx.tid = task ? task_.tid : 0;
  uint16_t misc = sched_in ? 0 : PERF_RECORD_MISC_SWITCH_OUT;
  // The idle task is always runnable when switched out: a preemption.
  if (!sched_in && !task) misc |= PERF_RECORD_MISC_SWITCH_OUT_PREEMPT;
  const uint32_t other_pid = task ? 0 : static_cast<uint32_t>(task_.pid);
  const uint32_t other_tid = task ? 0 : static_cast<uint32_t>(task_.tid);
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
  if (!task) return;
  for (size_t i = 0; i < events_.size(); ++i) {
    MockEvent& e = *events_[i];
    if (e.pid == task_.tid && e.enabled && (e.cpu == -1 || e.cpu == 0)) emit(e, false);
  }
}

// The child execs `path` (begin_new_exec()): perf_event_exec(), then
// __set_task_comm(me, kbasename(filename), true) -> perf_event_comm(exec = true):
// COMM with PERF_RECORD_MISC_COMM_EXEC; the ELF loader maps the binary, whose
// text is an executable file mapping: MMAP/MMAP2 through the child's events.
void MockBackend::ExecInChild(pid_t child, const std::string& path, std::vector<std::unique_ptr<MockEvent>>& copies) {
  const std::string comm = path.substr(path.rfind('/') + 1).substr(0, 15);
  OutputContext ctx = Context();
  ctx.pid = ctx.tid = child;
  auto child_events = [&](auto fn) {
    for (size_t j = events_.size(); j-- > 0;) {
      MockEvent& e = *events_[j];
      if (e.pid == -1 && e.cpu == 0 && e.enabled) fn(e);
    }
    for (auto& c : copies) {
      if (c->enabled && (c->cpu == -1 || c->cpu == 0)) fn(*c);
    }
  };
  child_events([&](MockEvent& ev) {
    if (!ev.attr.comm) return;
    Record r;
    r.header.type = PERF_RECORD_COMM;
    r.header.misc = PERF_RECORD_MISC_COMM_EXEC;
    r.body = CommRecord{static_cast<uint32_t>(child), static_cast<uint32_t>(child), comm};
    EmitRecord(ev, std::move(r), ctx);
  });
  const bool any_mmap = std::any_of(events_.begin(), events_.end(),
                                    [](const auto& e) { return e->attr.mmap || e->attr.mmap_data; });
  if (!any_mmap) return;  // nr_mmap_events
  constexpr uint64_t kTextAddr = 0x0000555555556000, kTextLen = 0x4000, kTextPgoff = 0x2000;
  child_events([&](MockEvent& ev) {
    const perf_event_attr& a = ev.attr;
    if (!(a.mmap || a.mmap2)) return;
    Record r;
    r.header.misc = PERF_RECORD_MISC_USER;
    if (a.mmap2) {
      r.header.type = PERF_RECORD_MMAP2;
      Mmap2Record m;
      m.pid = m.tid = static_cast<uint32_t>(child);
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
      r.body = MmapRecord{static_cast<uint32_t>(child), static_cast<uint32_t>(child), kTextAddr, kTextLen, kTextPgoff,
                          path};
    }
    EmitRecord(ev, std::move(r), ctx);
  });
}

uint64_t MockBackend::NewRegion(uint64_t pages) { return kMmapTop - pages * profile_.page_size; }

Result<WorkloadResult> MockBackend::RunWorkload(const Workload& w) {
  const std::string call = "run_workload(" + w.Describe() + ")";
  const size_t page = profile_.page_size;
  WorkloadResult out;
  switch (w.kind) {
    case Workload::Kind::kTouchPages: {
      if (w.count == 0) break;
      out.region_begin = NewRegion(w.count);
      out.region_end = out.region_begin + w.count * page;
      MmapEvent(out.region_begin, w.count * page, /*exec=*/false);
      task_.stack = SampleData::Stack::kUserTouch;
      const uint64_t step = std::max<uint64_t>(kMinTouchNs, static_cast<uint64_t>(w.duration.count()));
      for (uint64_t i = 0; i < w.count; ++i) {
        // The store runs into the fault kMinTouchNs into its step.
        Advance(kMinTouchNs);
        // do_user_addr_fault(): PERF_COUNT_SW_PAGE_FAULTS, then mm_account_fault(): a minor fault.
        const SampleData d = UserData(kUserTouchIp, out.region_begin + i * page);
        SoftwareOccurrence(PERF_COUNT_SW_PAGE_FAULTS, d);
        SoftwareOccurrence(PERF_COUNT_SW_PAGE_FAULTS_MIN, d);
        Advance(step - kMinTouchNs);
      }
      task_.stack = SampleData::Stack::kUserSpin;
      break;
    }
    case Workload::Kind::kSpin:
      task_.stack = SampleData::Stack::kUserSpin;
      task_.retiring = true;
      Advance(static_cast<uint64_t>(std::max<int64_t>(0, w.duration.count())));
      task_.retiring = false;
      break;
    case Workload::Kind::kSleep:
      for (uint64_t i = 0; i < w.count; ++i) {
        // __schedule() -> deactivate_task() -> dequeue: update_curr() first.
        UpdateCurr();
        // perf_event_task_sched_out(): the switch is counted while the task's
        // events are still in, from kernel regs (perf_sw_event_sched()).
        const SampleData d = KernelData(kKernelSwitchIp);
        // __schedule(): trace_sched_switch() fires before the context
        // switch (prepare_task_switch()), so the task's events see it.
        TracepointFire("sched:sched_switch",
                       TraceValues{{{"prev_pid", task_.pid}, {"prev_prio", 120}, {"prev_state", 1},
                                    {"next_pid", 0}, {"next_prio", 120}},
                                   {{"prev_comm", task_.comm}, {"next_comm", "swapper/0"}}},
                       d);
        SoftwareOccurrence(PERF_COUNT_SW_CONTEXT_SWITCHES, d);
        SwitchEvent(/*sched_in=*/false, /*task=*/true);
        task_.running = false;
        Reschedule();
        SwitchEvent(/*sched_in=*/true, /*task=*/false);
        Advance(static_cast<uint64_t>(std::max<int64_t>(0, w.duration.count())));
        // The idle task switches back to the task: CPU-wide events count it.
        SampleData idle;
        idle.ip = kKernelSwitchIp;
        idle.user_mode = false;
        idle.stack = SampleData::Stack::kKernelIdle;
        TracepointFire("sched:sched_switch",
                       TraceValues{{{"prev_pid", 0}, {"prev_prio", 120}, {"prev_state", 0},
                                    {"next_pid", task_.pid}, {"next_prio", 120}},
                                   {{"prev_comm", "swapper/0"}, {"next_comm", task_.comm}}},
                       idle);
        SoftwareOccurrence(PERF_COUNT_SW_CONTEXT_SWITCHES, idle);
        SwitchEvent(/*sched_in=*/false, /*task=*/false);
        task_.running = true;
        exec_start_ = now_;  // set_next_entity(): the task's runtime starts anew
        // perf_event_task_sched_in(): the whole context goes in, group by group.
        for (const auto& e : events_) e->deferred = false;
        Reschedule();
        SwitchEvent(/*sched_in=*/true, /*task=*/true);
      }
      break;
    case Workload::Kind::kSetComm: {
      // __set_task_comm() -> perf_event_comm(task, exec = false).
      task_.comm = w.comm.substr(0, 15);  // TASK_COMM_LEN - 1
      const OutputContext ctx = Context();
      ForEachSideBand([&](MockEvent& ev) {
        if (!ev.attr.comm) return;  // perf_event_comm_match()
        Record r;
        r.header.type = PERF_RECORD_COMM;
        r.body = CommRecord{static_cast<uint32_t>(task_.pid), static_cast<uint32_t>(task_.tid), task_.comm};
        EmitRecord(ev, std::move(r), ctx);
      });
      break;
    }
    case Workload::Kind::kMmapExec:
      if (w.count == 0) return Result<WorkloadResult>::Failure(EINVAL, call + " [mock: mmap of 0 bytes]");
      out.region_begin = NewRegion(w.count);
      out.region_end = out.region_begin + w.count * page;
      MmapEvent(out.region_begin, w.count * page, /*exec=*/true);
      break;
    case Workload::Kind::kExec:
      if (w.path.empty() || w.path[0] != '/') {
        return Result<WorkloadResult>::Failure(ENOENT, call + " [mock: an absolute path]");
      }
      [[fallthrough]];
    case Workload::Kind::kFork:
      for (uint64_t i = 0; i < (w.kind == Workload::Kind::kExec ? 1 : w.count); ++i) {
        const pid_t child = next_pid_++;
        out.children.push_back(child);
        const OutputContext parent_ctx = Context();
        // copy_process() -> trace_sched_process_fork(), in the parent, kernel regs.
        {
          const SampleData k = KernelData(kKernelForkIp);
          TracepointFire("sched:sched_process_fork",
                         TraceValues{{{"parent_pid", task_.pid}, {"child_pid", child}},
                                     {{"parent_comm", task_.comm}, {"child_comm", task_.comm}}},
                         k);
        }
        // perf_event_fork() -> perf_event_task(child, NULL, 1), in the parent.
        ForEachSideBand([&](MockEvent& ev) {
          if (!TaskMatch(ev.attr)) return;
          Record r;
          r.header.type = PERF_RECORD_FORK;
          r.body = TaskRecord{static_cast<uint32_t>(child), static_cast<uint32_t>(task_.pid),
                              static_cast<uint32_t>(child), static_cast<uint32_t>(task_.tid),
                              EventClock(ev, now_)};
          EmitRecord(ev, std::move(r), parent_ctx);
        });
        // ... then perf_event_namespaces(child): the new task's namespaces.
        ForEachSideBand([&](MockEvent& ev) {
          if (!ev.attr.namespaces) return;  // perf_event_namespaces_match()
          Record r;
          r.header.type = PERF_RECORD_NAMESPACES;
          r.body = NamespacesRecord{static_cast<uint32_t>(child), static_cast<uint32_t>(child), MockNamespaces()};
          EmitRecord(ev, std::move(r), parent_ctx);
        });
        // The child runs until it _exit()s.
        Advance(kForkNs);
        // perf_event_init_task() -> inherit_task_group(): the child gets a copy
        // of every attr.inherit event of the parent (not inherit_thread: fork
        // is not CLONE_THREAD), enabled as the parent is.
        std::vector<std::unique_ptr<MockEvent>> copies;
        for (const auto& e : events_) {
          if (e->pid != task_.tid || !e->attr.inherit || e->attr.inherit_thread) continue;
          auto c = std::make_unique<MockEvent>();
          c->id = next_id_++;
          c->attr = e->attr;
          c->pid = child;
          c->cpu = e->cpu;
          c->parent = e.get();
          c->enabled = e->enabled;
          c->is_clock = e->is_clock;
          c->pmu = e->pmu;
          c->tracepoint = e->tracepoint;
          c->filter = e->filter;
          copies.push_back(std::move(c));
        }
        if (w.kind == Workload::Kind::kExec) ExecInChild(child, w.path, copies);
        // The child _exit()s at once: perf_event_exit_task() reports EXIT
        // through the child's events (output to the parents' buffers), then
        // to CPU 0's side-band events.
        OutputContext child_ctx = parent_ctx;
        child_ctx.now = now_;
        child_ctx.pid = child_ctx.tid = child;
        auto exit_record = [&](MockEvent& ev) {
          Record r;
          r.header.type = PERF_RECORD_EXIT;
          // EXIT names the parent by pid in both ppid and ptid (perf_event_task_output()).
          r.body = TaskRecord{static_cast<uint32_t>(child), static_cast<uint32_t>(task_.pid),
                              static_cast<uint32_t>(child), static_cast<uint32_t>(task_.pid),
                              EventClock(ev, now_)};
          return r;
        };
        for (auto& c : copies) {
          if (c->enabled && TaskMatch(c->attr) && (c->cpu == -1 || c->cpu == 0)) {
            EmitRecord(*c, exit_record(*c), child_ctx);
          }
        }
        for (size_t j = events_.size(); j-- > 0;) {
          MockEvent& e = *events_[j];
          if (e.pid == -1 && e.cpu == 0 && e.enabled && TaskMatch(e.attr)) EmitRecord(e, exit_record(e), child_ctx);
        }
        // sync_child_event(): the child's counts and times go to the parent.
        for (auto& c : copies) {
          c->parent->child_count += c->count;
        }
        // waitpid() returns in the parent.
        Advance(kForkNs);
      }
      break;
    case Workload::Kind::kWriteMemory:
    case Workload::Kind::kReadMemory: {
      if ((w.width != 1 && w.width != 2 && w.width != 4 && w.width != 8) || w.addr % w.width != 0) {
        return Result<WorkloadResult>::Failure(EINVAL, call + " [mock: width 1, 2, 4 or 8, aligned]");
      }
      const bool write = w.kind == Workload::Kind::kWriteMemory;
      for (uint64_t i = 0; i < w.count; ++i) {
        Advance(kMemoryAccessNs);
        // The data breakpoint traps after the access: ip is the next instruction.
        BreakpointAccess(w.addr, w.width, write ? Access::kWrite : Access::kRead,
                         write ? kUserStoreIp : kUserLoadIp);
        HardwareCount(write ? HwKind::kL1dWrites : HwKind::kL1dReads, 1);
      }
      break;
    }
    case Workload::Kind::kExecute:
      for (uint64_t i = 0; i < w.count; ++i) {
        Advance(kMemoryAccessNs);
        // An instruction breakpoint is a fault: ip is the instruction's address.
        BreakpointAccess(ExecuteTargetAddress(), 1, Access::kExecute, ExecuteTargetAddress());
      }
      break;
    case Workload::Kind::kSyscalls:
      for (uint64_t i = 0; i < w.count; ++i) {
        // syscall(SYS_getpid): the syscall tracepoints fire with the task's
        // user regs (perf_syscall_enter()/exit() pass them), ip after `syscall`.
        const SampleData d = UserData(kUserSyscallIp, 0);
        Advance(kSyscallNs / 2);
        TracepointFire("syscalls:sys_enter_getpid", TraceValues{{{"__syscall_nr", kGetpidNr}}, {}}, d);
        Advance(kSyscallNs - kSyscallNs / 2);
        TracepointFire("syscalls:sys_exit_getpid", TraceValues{{{"__syscall_nr", kGetpidNr}, {"ret", task_.pid}}, {}},
                       d);
      }
      break;
    case Workload::Kind::kInstructions:
      // The counted loop: exactly `count` instructions, a branch every two,
      // one mispredicted exit; it takes `count` cycles.
      task_.stack = SampleData::Stack::kUserSpin;
      Advance(w.count * 1000 / profile_.cpu_mhz);
      HardwareCount(HwKind::kInstructions, w.count);
      HardwareCount(HwKind::kBranches, w.count / 2);
      HardwareCount(HwKind::kBranchMisses, w.count >= 2 ? 1 : 0);
      break;
  }
  return Result<WorkloadResult>::Ok(std::move(out), call);
}

// The core PMU's view of [from, to) ns of the task running on CPU 0: cycles
// and ref-cycles at cpu_mhz, bus cycles at a tenth of that, and, while the
// task retires instructions (Spin), one instruction per cycle and a branch
// every two. Counted from absolute time so that splitting an interval changes
// nothing.
void MockBackend::CoreClockTicks(uint64_t from, uint64_t to) {
  if (!profile_.has_hardware) return;
  auto at = [&](uint64_t t, uint64_t div) {
    return static_cast<uint64_t>(static_cast<unsigned __int128>(t) * profile_.cpu_mhz / (1000 * div));
  };
  const uint64_t cycles = at(to, 1) - at(from, 1);
  HardwareCount(HwKind::kCycles, cycles);
  HardwareCount(HwKind::kRefCycles, cycles);
  HardwareCount(HwKind::kBusCycles, at(to, 10) - at(from, 10));
  if (task_.retiring) {
    HardwareCount(HwKind::kInstructions, cycles);
    HardwareCount(HwKind::kBranches, at(to, 2) - at(from, 2));
  }
}

// `n` occurrences of `kind` in the task (user mode) on CPU 0: every ACTIVE
// core event counting it there, unless it excludes user mode. Sampling events
// overflow every sample_period (x86_perf_event_set_period(): the counter
// starts at -left).
void MockBackend::HardwareCount(HwKind kind, uint64_t n) {
  if (n == 0) return;
  for (size_t i = 0; i < events_.size(); ++i) {
    MockEvent& ev = *events_[i];
    if (!ev.active || ev.hw.stopped || ev.pmu != PmuId::kCore || ev.hw_event.kind != kind) continue;
    if (ev.pid == -1 ? ev.cpu != 0 : ev.pid != task_.tid) continue;
    if (ev.attr.exclude_user) continue;
    if (!ev.is_sampling()) {
      ev.count += n;
      continue;
    }
    uint64_t left = n;
    while (left > 0) {
      const uint64_t until = ev.hw.period_left > 0 ? static_cast<uint64_t>(ev.hw.period_left) : ev.hw.sample_period;
      if (left < until) {
        ev.count += left;
        ev.hw.period_left = static_cast<int64_t>(until - left);
        break;
      }
      ev.count += until;
      left -= until;
      ev.hw.period_left = static_cast<int64_t>(ev.hw.sample_period);
      SampleData d = UserData(kUserSpinIp, 0);
      d.period = ev.hw.sample_period;
      if (Overflow(ev, 1, d) != 0) {
        SoftwareEventStop(ev, /*from_overflow=*/true);
        break;
      }
    }
  }
}

// update_curr() -> trace_sched_stat_runtime(): the runtime since exec_start_.
void MockBackend::UpdateCurr() {
  const uint64_t delta = now_ - exec_start_;
  exec_start_ = now_;
  if (delta == 0) return;
  // Fired in the tick interrupt or in __schedule(): kernel regs.
  const SampleData k = KernelData(kKernelSwitchIp);
  TracepointFire("sched:sched_stat_runtime",
                 TraceValues{{{"pid", task_.pid}, {"runtime", static_cast<int64_t>(delta)}}, {{"comm", task_.comm}}}, k,
                 delta);
}

// perf_tp_event(): every event on the tracepoint's per-CPU list (ACTIVE ones)
// that perf_tp_event_match() accepts counts `count` via perf_swevent_event().
void MockBackend::TracepointFire(const std::string& name, TraceValues values, const SampleData& data, uint64_t count) {
  auto it = profile_.tracepoints.find(name);
  if (it == profile_.tracepoints.end()) return;  // not in this machine's tracefs
  const uint64_t id = it->second;
  bool any = false;
  for (const auto& e : events_) any |= e->active && e->attr.type == PERF_TYPE_TRACEPOINT && e->attr.config == id;
  if (!any) return;
  values.numbers["common_type"] = static_cast<int64_t>(id);
  values.numbers["common_flags"] = 0;
  values.numbers["common_preempt_count"] = 1;
  values.numbers["common_pid"] = data.pid;
  SampleData d = data;
  d.has_raw = true;
  d.raw = TraceRawData(*FindTracepointModel(name), static_cast<uint16_t>(id), values);
  for (size_t i = 0; i < events_.size(); ++i) {
    MockEvent& ev = *events_[i];
    if (!ev.active || ev.hw.stopped) continue;
    if (ev.attr.type != PERF_TYPE_TRACEPOINT || ev.attr.config != id) continue;
    if (ev.pid == -1 ? ev.cpu != static_cast<int>(d.cpu) : ev.pid != d.tid) continue;
    // perf_tp_event_match(): exclude_kernel drops kernel-regs firings; exclude_user is not looked at.
    if (ev.attr.exclude_kernel && !d.user_mode) continue;
    if (ev.filter != nullptr && !ev.filter->Match(values)) continue;
    SoftwareEventCount(ev, count, d,
                       [this](MockEvent& e, int throttle, const SampleData& sd) { return Overflow(e, throttle, sd); });
  }
}

// perf_bp_event(): sample addr = bp_addr; perf_exclude_event() for the mode.
void MockBackend::BreakpointAccess(uint64_t addr, uint32_t width, Access access, uint64_t ip) {
  for (size_t i = 0; i < events_.size(); ++i) {
    MockEvent& ev = *events_[i];
    if (!ev.active || ev.hw.stopped || ev.pmu != PmuId::kBreakpoint) continue;
    if (ev.pid == -1 ? ev.cpu != 0 : ev.pid != task_.tid) continue;
    if (!BreakpointHits(ev.attr, addr, width, access)) continue;
    if (ev.attr.exclude_user) continue;  // a user-mode access
    SoftwareEventCount(ev, 1, UserData(ip, ev.attr.bp_addr),
                       [this](MockEvent& e, int throttle, const SampleData& sd) { return Overflow(e, throttle, sd); });
  }
}

}  // namespace perftest::mock
