// MockBackend, time: the simulated clock (Advance()), the scheduler tick
// (perf_event_task_tick()), the hrtimers of cpu-clock/task-clock
// (perf_swevent_hrtimer()), update_curr(), and the context records and
// samples are written in.
//
// now_ only moves inside workloads. Advance() walks it forward in order of
// events: scheduler ticks every NSEC_PER_SEC / hz ns of absolute time
// (perf_event_task_tick(): throttle sequence, unthrottling, frequency
// adjustment, then the multiplexing rotation) and the hrtimers of
// cpu-clock/task-clock (every max(10 us, period) ns of their running time).
// Per-task events are ACTIVE only while the task is on CPU 0; their times
// (time_enabled, time_running) run with the task's context, CPU-wide events'
// with the CPU's (always).
#include <linux/perf_event.h>

#include <algorithm>

#include "mocks/internal/mock_backend_impl.h"
#include "mocks/software_pmu.h"

namespace perftest::mock {

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
  d.ip = task_.served_context ? task_.served_ip : ip;
  d.served = task_.served_context;
  d.served_user_ip = task_.served_ip;
  d.served_callers = task_.served_callers;
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
  d.served = task_.served_context;
  d.served_user_ip = task_.served_ip;
  d.served_callers = task_.served_callers;
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

}  // namespace perftest::mock
