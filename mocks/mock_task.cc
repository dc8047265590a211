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
#include <signal.h>
#include <sys/mman.h>

#include <algorithm>
#include <map>
#include <tuple>
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
// __NR_getpid of the profile's arch: 39 on x86_64 (arch/x86/entry/syscalls/
// syscall_64.tbl), 172 on arm64 and riscv64 (include/uapi/asm-generic/unistd.h).
static int64_t GetpidNr(const std::string& arch) { return arch == "x86_64" ? 39 : 172; }
// From fork() to the child's exit, ns (the kernel here: tens of microseconds).
constexpr uint64_t kForkNs = 50000;
// The CPU whose counters an event uses while active (the task runs on CPU 0).
static int CountersCpu(const MockEvent& e) { return e.pid == -1 ? e.cpu : 0; }


}  // namespace

// event->pmu_ctx->pmu: a software event in a hardware group lives in the
// leader's PMU context (perf_event_open() "move_group"/is_software_event()).
static PmuId EffectivePmu(const MockEvent& e) {
  return e.pmu != PmuId::kCore && e.leader->pmu == PmuId::kCore ? PmuId::kCore : e.pmu;
}
// The PMU whose ctx_resched() schedules the event's group.
static PmuId GroupPmu(const MockEvent& e) { return EffectivePmu(*e.leader); }

// inline: called per event by Reschedule() and the scheduling code of this
// file only (calling it from another file needs the `inline` dropped).
inline bool MockBackend::Schedulable(const MockEvent& ev) const {
  if (!ev.enabled || ev.deferred) return false;
  if (!ev.is_leader() && !ev.leader->enabled) return false;  // group scheduling
  if (ev.pid == -1) return true;                              // a CPU context always runs
  if (ev.exited || ev.pid != task_.tid) return false;         // only the current task's context runs
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
// out; then software groups go in, in creation order (a software group always
// can: group_can_go_on() PERF_EV_CAP_SOFTWARE), a member only with its leader
// in; core-PMU groups go through ScheduleCoreGroups().
void MockBackend::Reschedule() {
  for (size_t i = 0; i < events_.size(); ++i) {
    MockEvent& e = *events_[i];
    if (e.active && (!Schedulable(e) || (!e.is_leader() && !e.leader->active))) SchedOut(e);
    // perf_event_groups_insert() at install time: group_index in creation
    // order (SchedOut() changes no group_index nor leader).
    if (e.is_leader() && e.group_index == 0) e.group_index = ++group_seq_;
  }
  for (size_t i = 0; i < events_.size(); ++i) {
    MockEvent& e = *events_[i];
    if (e.active || !Schedulable(e)) continue;
    // A lone leader off the core PMU (most events) always goes on.
    const bool lone = e.is_leader() && e.siblings.empty() && e.pmu != PmuId::kCore;
    if (lone || MayScheduleIn(e)) SchedIn(e);
  }
  if (profile_.has_hardware) ScheduleCoreGroups();  // no core PMU, no core groups
}

bool MockBackend::MayScheduleIn(const MockEvent& e) const {
  if (!e.is_leader()) return e.leader->active && (e.pmu != PmuId::kCore || CountersFree({&e}));
  if (e.pmu == PmuId::kCore) return false;  // ScheduleCoreGroups()
  std::vector<const MockEvent*> group;
  for (const MockEvent* s : e.siblings) {
    if (s->pmu == PmuId::kCore && !s->active && Schedulable(*s)) group.push_back(s);
  }
  return group.empty() || CountersFree(group);
}

// The context an event is in (event->ctx): its task's, or CPU `cpu`'s.
static bool SameContext(const MockEvent& a, const MockEvent& b) {
  return a.pid == b.pid && (a.pid != -1 || a.cpu == b.cpu);
}

bool MockBackend::GroupCanGoOn(const MockEvent& leader, bool can_add_hw) const {
  for (const auto& e : events_) {
    if (!e->active || !e->is_leader() || e.get() == &leader || e->pmu != PmuId::kCore) continue;
    if (!SameContext(*e, leader)) continue;
    // "if (epc->exclusive) return 0": an exclusive group is on this PMU context.
    if (e->attr.exclusive) return false;
    // "if (event->attr.exclusive && !list_empty(get_event_list(event)))":
    // the pinned or flexible active list, as the group is pinned or not.
    if (leader.attr.exclusive && e->attr.pinned == leader.attr.pinned) return false;
  }
  return can_add_hw;
}

// perf_event_sched_in(): ctx_sched_in(cpuctx, EVENT_PINNED), (task_ctx,
// EVENT_PINNED), (cpuctx, EVENT_FLEXIBLE), (task_ctx, EVENT_FLEXIBLE); each
// pass visits the groups in group_index order (visit_groups_merge()) with
// merge_sched_in(): a group goes in whole if group_can_go_on() and its events
// find counters (group_sched_in()); one that stays INACTIVE clears can_add_hw
// for the rest of the pass and then, if pinned, goes to
// PERF_EVENT_STATE_ERROR (read(2) returns 0 until PERF_EVENT_IOC_ENABLE), else
// sets rotate_necessary (RotateCoreGroups()).
void MockBackend::ScheduleCoreGroups() {
  std::vector<MockEvent*> leaders;
  for (const auto& e : events_) {
    if (e->is_leader() && e->pmu == PmuId::kCore && !e->active && Schedulable(*e)) leaders.push_back(e.get());
  }
  std::stable_sort(leaders.begin(), leaders.end(), [](const MockEvent* a, const MockEvent* b) {
    if (a->attr.pinned != b->attr.pinned) return a->attr.pinned > b->attr.pinned;
    if ((a->pid == -1) != (b->pid == -1)) return a->pid == -1;  // the CPU context first
    return a->group_index < b->group_index;
  });
  // can_add_hw per pass: (context, pinned).
  std::map<std::tuple<pid_t, int, bool>, bool> can_add_hw;
  for (MockEvent* l : leaders) {
    bool& can = can_add_hw.try_emplace({l->pid, l->pid == -1 ? l->cpu : -1, l->attr.pinned != 0}, true).first->second;
    std::vector<const MockEvent*> group{l};
    for (const MockEvent* s : l->siblings) {
      if (s->pmu == PmuId::kCore && !s->active && Schedulable(*s)) group.push_back(s);
    }
    if (GroupCanGoOn(*l, can) && CountersFree(group)) {
      SchedIn(*l);
      for (MockEvent* s : l->siblings) {
        if (!s->active && Schedulable(*s)) SchedIn(*s);
      }
      continue;
    }
    can = false;
    if (l->attr.pinned) {
      l->enabled = false;  // ERROR < OFF: no enabled time, not schedulable
      l->error = true;
      // Linux 6.16+: "if (*perf_event_fasync(event)) event->pending_kill =
      // POLL_ERR;" then the wakeup (pending_irq -> perf_event_wakeup() ->
      // kill_fasync(SIGIO, POLL_ERR)); perf_poll() says EPOLLERR (PerfPoll()).
      SignalOverflow(*l, POLL_ERR);
    }
  }
}

// perf_rotate_context(): for each context with a flexible core group that
// could not go on (rotate_necessary), the first group in its flexible active
// list (else the first flexible group) moves to the end of the groups tree
// (rotate_ctx(): a new group_index), after the flexible groups are scheduled
// out; then they go in again in the new order.
void MockBackend::RotateCoreGroups() {
  std::vector<const MockEvent*> contexts;  // one representative leader per context needing rotation
  for (const auto& e : events_) {
    if (!e->is_leader() || e->pmu != PmuId::kCore || e->attr.pinned || e->active || !Schedulable(*e)) continue;
    bool seen = false;
    for (const MockEvent* c : contexts) seen |= SameContext(*c, *e);
    if (!seen) contexts.push_back(e.get());
  }
  if (contexts.empty()) return;
  for (const MockEvent* ctx : contexts) {
    MockEvent* pick = nullptr;
    for (int pass = 0; pass < 2 && pick == nullptr; ++pass) {
      for (const auto& e : events_) {
        if (!e->is_leader() || e->pmu != PmuId::kCore || e->attr.pinned || !SameContext(*e, *ctx)) continue;
        if (pass == 0 ? !e->active : !Schedulable(*e)) continue;
        if (pick == nullptr || e->group_index < pick->group_index) pick = e.get();
      }
    }
    if (pick != nullptr) pick->group_index = ++group_seq_;
  }
  for (const auto& e : events_) {
    if (e->active && e->pmu == PmuId::kCore && !e->leader->attr.pinned) SchedOut(*e);
  }
  Reschedule();
}

void MockBackend::SchedIn(MockEvent& ev) {
  if (ev.pmu == PmuId::kIntelPt && !PtStart(ev)) return;  // pt_event_add() failed: stays INACTIVE
  // event_sched_in(): "Unthrottle events, since we scheduled we might have
  // missed several ticks already".
  ev.active = true;
  if (ev.hw.interrupts == kMaxInterrupts) {
    ev.hw.interrupts = 0;
    LogThrottle(ev, /*unthrottle=*/true);
  }
  if (ev.pmu == PmuId::kCore) {
    // x86_schedule_events()/x86_assign_hw_event(): its fixed counter if free,
    // else the lowest free general-purpose one.
    std::vector<bool> gp(profile_.hardware.gp_counters, false), fixed(profile_.hardware.fixed_counters, false);
    for (const auto& e : events_) {
      if (e.get() == &ev || !e->active || e->pmu != PmuId::kCore || CountersCpu(*e) != CountersCpu(ev)) continue;
      if (e->counter_gp >= 0) gp[e->counter_gp] = true;
      if (e->counter_fixed >= 0) fixed[e->counter_fixed] = true;
    }
    ev.counter_gp = ev.counter_fixed = -1;
    if (ev.hw_event.fixed >= 0 && !fixed[ev.hw_event.fixed]) {
      ev.counter_fixed = ev.hw_event.fixed;
    } else {
      for (size_t i = 0; i < gp.size() && ev.counter_gp < 0; ++i) {
        if (!gp[i]) ev.counter_gp = static_cast<int>(i);
      }
    }
    // x86_perf_event_set_period(): a counting event's counter starts at
    // -max_period (and is re-armed there on overflow); its value carries
    // over a sched-out (period_left).
    const uint32_t width = profile_.hardware.counter_width;
    const uint64_t mask = width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
    if (!ev.is_sampling() && ev.pmc == 0) ev.pmc = (uint64_t{0} - MaxPeriod(width)) & mask;
  }
  SoftwareEventStart(ev, /*add=*/true);
  // Linux 6.18, measured with the rdpmc suite: the user page is rewritten when
  // the event goes in (ENABLE, each switch-in), not when it goes out.
  UpdateUserPage(ev);
}

void MockBackend::SchedOut(MockEvent& ev) {
  if (ev.pmu == PmuId::kIntelPt) PtStop(ev);
  SoftwareEventStop(ev);
  ev.active = false;
  ev.counter_gp = ev.counter_fixed = -1;
}

// _perf_event_enable() -> __perf_event_enable(): the event becomes INACTIVE,
// then ctx_resched(cpuctx, task_ctx, event->pmu_ctx->pmu): only the groups
// led from the event's own PMU are scheduled out and in again. A member whose
// leader is in another PMU (a minor-faults member of a task-clock leader, say)
// is therefore not scheduled in until the task is next switched in, or until
// something reschedules the leader's PMU (Linux 6.18: time_enabled grows,
// time_running and the count stay 0 meanwhile). An event in the ERROR state
// is cleared to OFF first.
void MockBackend::EnableEvent(MockEvent& ev) {
  if (ev.enabled) return;
  ev.error = false;
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
}

// _perf_event_disable(): out of the context; the user page is not rewritten.
void MockBackend::DisableEvent(MockEvent& ev) {
  if (!ev.enabled) return;
  ev.enabled = false;
  Reschedule();
}

// perf_event_update_userpage() + x86 arch_perf_update_userpage().
void MockBackend::UpdateUserPage(MockEvent& ev) {
  if (ev.rb == nullptr) return;
  MockRingBuffer::UserPage u;
  u.offset = static_cast<int64_t>(ev.count + ev.child_count);
  u.time_enabled = ev.time_enabled;
  u.time_running = ev.time_running;
  if (profile_.has_hardware) {
    const uint32_t width = profile_.hardware.counter_width;
    u.pmc_width = static_cast<uint16_t>(width);
    // x86_pmu_event_mapped(): an mmapped core event may be read with RDPMC
    // (sysfs rdpmc = 1, the default).
    u.cap_user_rdpmc = ev.pmu == PmuId::kCore && ev.owns_rb;
    if (u.cap_user_rdpmc && ev.active) {
      u.index = RdpmcCounter(ev.counter_gp, ev.counter_fixed) + 1;  // x86_pmu_event_idx()
      u.offset -= SignExtend(ev.pmc, width);                        // - hwc->prev_count
    }
  }
  // The time fields: the same for every event (the TSC style leaves
  // cap_user_time_zero out for an event with its own clockid).
  if (sched_clock_) u.time = sched_clock_->PageFields(now_, ev.attr.use_clockid);
  ev.rb->sched_clock = sched_clock_ ? &*sched_clock_ : nullptr;
  ev.rb->UpdateUserPage(u);
}

Result<uint64_t> MockBackend::ReadCycleCounter() {
  const std::string call = "read_cycle_counter()";
  if (!sched_clock_) {
    return Result<uint64_t>::Failure(ENOSYS, call + fmt::format(" [mock: profile '{}' has no sched_clock_counter]",
                                                                  profile_.name));
  }
  return Result<uint64_t>::Ok(sched_clock_->CyclesAt(now_), call);
}

Result<uint64_t> MockBackend::ReadPmc(uint32_t index) {
  const std::string call = fmt::format("rdpmc(index={})", index);
  for (const auto& e : events_) {
    if (index != 0 && e->active && e->pmu == PmuId::kCore && CountersCpu(*e) == 0 &&
        RdpmcCounter(e->counter_gp, e->counter_fixed) + 1 == index) {
      return Result<uint64_t>::Ok(e->pmc, call);
    }
  }
  return Result<uint64_t>::Failure(EINVAL, call + " [mock: no active event on that counter of CPU 0]");
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
      const bool ctx_running = e->pid == -1 || (task_.running && e->pid == task_.tid && !e->exited);
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
  // perf_mux_hrtimer_handler(): perf_event_mux_interval_ms is PERF_CPU_HRTIMER
  // = 1000 / HZ by default, one tick.
  RotateCoreGroups();
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
  // sigtrap (perf_sigtrap()) and the fasync wakeup (SIGIO / F_SETSIG): mock_signals.cc.
  if (ev.attr.sigtrap) SignalSigtrap(ev, data.addr);
  SignalOverflow(ev, limit_reached ? POLL_HUP : POLL_IN);
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

void MockBackend::ForEachSideBandFn(const std::function<void(MockEvent&)>& fn) { ForEachSideBand(fn); }

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

// The child execs `path` (begin_new_exec()): perf_event_exec(), then
// __set_task_comm(me, kbasename(filename), true) -> perf_event_comm(exec = true):
// COMM with PERF_RECORD_MISC_COMM_EXEC; the ELF loader maps the binary, whose
// text is an executable file mapping: MMAP/MMAP2 through the child's events.
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
        SwitchEvent(/*sched_in=*/false, &task_, nullptr);
        task_.running = false;
        Reschedule();
        SwitchEvent(/*sched_in=*/true, nullptr, &task_);
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
        SwitchEvent(/*sched_in=*/false, nullptr, &task_);
        task_.running = true;
        exec_start_ = now_;  // set_next_entity(): the task's runtime starts anew
        // perf_event_task_sched_in(): the whole context goes in, group by group.
        for (const auto& e : events_) e->deferred = false;
        Reschedule();
        SwitchEvent(/*sched_in=*/true, &task_, nullptr);
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
    case Workload::Kind::kFork:
    case Workload::Kind::kThreads:
    case Workload::Kind::kForkExec:
      // Each child in turn: forked (inherited copies, FORK), runs, exits (EXIT, copies folded). mock_tasks.cc.
      if (w.kind == Workload::Kind::kForkExec && (w.path.empty() || w.path[0] != '/')) {
        return Result<WorkloadResult>::Failure(EINVAL, call + " [mock: path must be absolute]");
      }
      for (uint64_t i = 0; i < w.count; ++i) {
        Task child = ForkTask(/*thread=*/w.kind == Workload::Kind::kThreads);
        out.children.push_back(child.tid);
        Advance(kForkNs);  // fork takes time: FORK, the child's records and EXIT have increasing times
        // The parent blocks in waitpid()/join while the child runs: a
        // voluntary switch out (no PREEMPT) to the child, and in again from
        // the child once its exit wakes the parent (Linux 6.18: the records
        // suite's records.switch_around_fork and records.switch_cpu_wide_fork).
        const Task parent = task_;
        SwitchEvent(/*sched_in=*/false, &parent, &child);
        (void)RunAsTask(child, [&]() -> Result<WorkloadResult> {
          SwitchEvent(/*sched_in=*/true, &task_, &parent);  // its inherited events see it
          if (w.kind == Workload::Kind::kForkExec) {
            ExecCurrent(w.path);
          } else if (w.pages_each != 0) {
            return RunWorkload(Workload::TouchPages(w.pages_each));
          }
          return Result<WorkloadResult>::Ok(WorkloadResult{});
        });
        ExitTaskModel(child);
        Advance(kForkNs);  // the rest of do_exit(); then waitpid() returns in the parent
        // do_task_dead(): the child's last switch out, after perf_event_exit_task()
        // (its own events are gone), not runnable: no PREEMPT.
        SwitchEvent(/*sched_in=*/false, &child, &parent);
        SwitchEvent(/*sched_in=*/true, &task_, &child);
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
        UprobeExecute(ExecuteTargetAddress(), 1);
      }
      break;
    case Workload::Kind::kSyscalls:
      PtSyscalls(w.count);
      for (uint64_t i = 0; i < w.count; ++i) {
        // syscall(SYS_getpid): the syscall tracepoints fire with the task's
        // user regs (perf_syscall_enter()/exit() pass them), ip after `syscall`.
        const SampleData d = UserData(kUserSyscallIp, 0);
        Advance(kSyscallNs / 2);
        TracepointFire("syscalls:sys_enter_getpid", TraceValues{{{"__syscall_nr", GetpidNr(profile_.arch)}}, {}}, d);
        Advance(kSyscallNs - kSyscallNs / 2);
        TracepointFire("syscalls:sys_exit_getpid",
                       TraceValues{{{"__syscall_nr", GetpidNr(profile_.arch)}, {"ret", task_.pid}}, {}},
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
  if (kind == HwKind::kInstructions) PtInstructions(n);
  for (size_t i = 0; i < events_.size(); ++i) {
    MockEvent& ev = *events_[i];
    if (!ev.active || ev.hw.stopped || ev.pmu != PmuId::kCore || ev.hw_event.kind != kind) continue;
    if (ev.pid == -1 ? ev.cpu != 0 : ev.pid != task_.tid) continue;
    if (ev.attr.exclude_user) continue;
    const uint32_t width = profile_.hardware.counter_width;
    const uint64_t mask = width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
    if (!ev.is_sampling()) {
      // The counter advances modulo 2^width; x86_perf_event_update() folds
      // each read's CounterDelta() into the 64-bit count. When it reaches 0
      // the overflow interrupt re-arms it at -max_period.
      uint64_t left = n;
      bool rearmed = false;
      while (left > 0) {
        const uint64_t to_zero = ((mask - ev.pmc) & mask) + 1;  // increments until it wraps to 0
        const uint64_t step = std::min(left, to_zero);
        const uint64_t next = (ev.pmc + step) & mask;
        ev.count += step == to_zero ? CounterDelta(ev.pmc, 0, width) : CounterDelta(ev.pmc, next, width);
        ev.pmc = step == to_zero ? (uint64_t{0} - MaxPeriod(width)) & mask : next;
        rearmed |= step == to_zero;
        left -= step;
      }
      // x86_perf_event_set_period() ends with perf_event_update_userpage().
      if (rearmed) UpdateUserPage(ev);
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
    ev.pmc = (uint64_t{0} - static_cast<uint64_t>(ev.hw.period_left)) & mask;  // programmed to -left
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
    if (!BreakpointHits(ev.attr, addr, width, access, BreakpointArchOf(profile_.arch), BreakpointTaskOf(ev).compat_bp())) {
      continue;
    }
    if (ev.attr.exclude_user) continue;  // a user-mode access
    SoftwareEventCount(ev, 1, UserData(ip, ev.attr.bp_addr),
                       [this](MockEvent& e, int throttle, const SampleData& sd) { return Overflow(e, throttle, sd); });
  }
}

}  // namespace perftest::mock
