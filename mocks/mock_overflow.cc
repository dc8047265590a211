// MockBackend, overflow: what happens when an event's period elapses
// (__perf_event_overflow()): interrupt accounting and throttling, the
// frequency adjustment, the PERF_EVENT_IOC_REFRESH budget, the sample, and
// the signals it raises (delivered by mock_signals.cc).
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
//
// PERF_EVENT_IOC_REFRESH (_perf_event_refresh()): adds to event->event_limit
// and enables the event; each overflow counts the budget down
// (__perf_event_overflow(): "if (events && atomic_dec_and_test(&event->event_limit))"),
// and the overflow that exhausts it stops the event, still writes its sample,
// disables the event (perf_event_disable_inatomic()) and signals POLL_HUP
// instead of POLL_IN. Both halves are here: Refresh() and EventLimitReached().
#include <linux/perf_event.h>
#include <signal.h>

#include <cerrno>

#include "mocks/internal/mock_backend_impl.h"
#include "mocks/software_pmu.h"

namespace perftest::mock {

// _perf_event_refresh(): "not supported on inherited events", nor on counting ones.
int MockBackend::Refresh(MockEvent& ev, int refresh, std::string* why) {
  if (ev.attr.inherit || !ev.is_sampling()) {
    *why = "inherited or not sampling";
    return EINVAL;
  }
  ev.event_limit += refresh;  // atomic_add(refresh, &event->event_limit)
  EnableEvent(ev);
  return 0;
}

// __perf_event_overflow(): "int events = atomic_read(&event->event_limit);
// if (events && atomic_dec_and_test(...))": a negative budget (REFRESH with a
// negative argument) counts down without end. The event stops now, inside its
// own overflow; the caller disables it once the sample is written.
bool MockBackend::EventLimitReached(MockEvent& ev) {
  if (ev.event_limit == 0 || --ev.event_limit != 0) return false;
  SoftwareEventStop(ev, /*from_overflow=*/true);
  return true;
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
  const bool limit_reached = EventLimitReached(ev);  // PERF_EVENT_IOC_REFRESH
  if (limit_reached) ret = 1;
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

}  // namespace perftest::mock
