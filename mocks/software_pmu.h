// The software PMU (PERF_TYPE_SOFTWARE) of MockBackend: which configs exist,
// how an occurrence is counted and when it overflows into a sample.
//
//   if (int err = SoftwareEventInit(ev, &why)) return err;       // at perf_event_open
//   SoftwareEventStart(ev);                                      // scheduled in
//   SoftwareEventCount(ev, 1, data, overflow);                   // a page fault, a switch
//   SoftwareClockTick(ev, data, overflow);                       // cpu-clock hrtimer fired
//
// Everything here follows kernel/events/core.c:
//  - perf_swevent_init(): config >= PERF_COUNT_SW_MAX is ENOENT, branch
//    sampling EOPNOTSUPP. cpu-clock and task-clock are hrtimer events
//    (cpu_clock_event_init(), task_clock_event_init()); in freq mode they get a
//    fixed period NSEC_PER_SEC / sample_freq and attr.freq is cleared
//    (perf_swevent_init_hrtimer()).
//  - perf_event_alloc(): hwc->sample_period = sample_period (1 in freq mode),
//    last_period = sample_period, period_left = sample_period.
//  - perf_swevent_event(): count += nr; with PERF_SAMPLE_PERIOD and !freq every
//    occurrence is a sample whose period is nr (a long-standing quirk: the
//    period is reported, not applied); period 1 overflows on every occurrence;
//    otherwise period_left counts up from -period to 0.
//  - perf_swevent_overflow() / perf_swevent_set_period(): only the second and
//    later overflows of one call may throttle, so software events (nr = 1)
//    never throttle; a throttled event (interrupts == MAX_INTERRUPTS) does not
//    sample.
//  - perf_swevent_hrtimer() / perf_swevent_start_hrtimer(): the hrtimer fires
//    every max(10 us, sample_period) ns of the clock's running time (the first
//    period after the start is period_left, as saved when it was stopped; a
//    negative one restarts at 10 us); every firing may throttle.
//  - perf_calculate_period() / perf_adjust_period(): freq mode, computed
//    exactly (the kernel trims precision to avoid 64-bit overflow).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "mocks/internal/mock_event.h"

namespace perftest::mock {

inline constexpr uint64_t kNsecPerSec = 1000000000;
inline constexpr uint64_t kHrtimerMinPeriodNs = 10000;  // perf_swevent_start_hrtimer()

// cpu-clock and task-clock.
bool IsSoftwareClock(uint64_t config);

// perf_event_alloc(): the period state every event starts with
// (hwc->sample_period = sample_period, or 1 in freq mode; last_period and
// period_left the same). Tracepoint and breakpoint events count through
// perf_swevent_event() too, so they share it.
void PeriodStateInit(MockEvent& ev);

// Validates ev.attr for the software PMU and sets up ev.hw and ev.is_clock.
// Errors: ENOENT config >= PERF_COUNT_SW_MAX; EOPNOTSUPP PERF_SAMPLE_BRANCH_STACK.
int SoftwareEventInit(MockEvent& ev, std::string* why);

// pmu->add(PERF_EF_START) when `add` (the event is scheduled in: enable, the
// task wakes up), else pmu->start() (unthrottle, period change).
void SoftwareEventStart(MockEvent& ev, bool add);
// pmu->del()/stop(): scheduled out; a clock saves its hrtimer's remaining time.
// `from_overflow`: stopped inside its own overflow (throttle, event_limit).
void SoftwareEventStop(MockEvent& ev, bool from_overflow = false);

// perf_swevent_set_period(): returns the number of periods that elapsed.
uint64_t SoftwareSetPeriod(HwState& hw);

// __perf_event_overflow(event, throttle, data): writes the sample; returns
// non-zero when the event must stop (throttled, or its event_limit ran out).
using OverflowFn = std::function<int(MockEvent& ev, int throttle, const SampleData& data)>;

// perf_swevent_event(): `nr` occurrences counted by `ev` (which is counting).
void SoftwareEventCount(MockEvent& ev, uint64_t nr, SampleData data, const OverflowFn& overflow);

// perf_swevent_hrtimer(): the clock's hrtimer expired. `excluded`:
// perf_exclude_event() or exclude_idle says no sample (the timer still runs).
void SoftwareClockFire(MockEvent& ev, SampleData data, bool excluded, const OverflowFn& overflow);

// perf_adjust_period(): freq mode, `count` events in `nsec` ns.
void AdjustPeriod(MockEvent& ev, uint64_t nsec, uint64_t count);

}  // namespace perftest::mock
