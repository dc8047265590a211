#include "mocks/software_pmu.h"

#include <fmt/format.h>
#include <linux/perf_event.h>

#include <algorithm>
#include <cerrno>

namespace perftest::mock {
namespace {

// perf_swevent_overflow().
void SoftwareOverflow(MockEvent& ev, uint64_t overflow, const SampleData& data, const OverflowFn& fn) {
  int throttle = 0;
  if (overflow == 0) overflow = SoftwareSetPeriod(ev.hw);
  if (ev.hw.interrupts == kMaxInterrupts) return;
  for (; overflow != 0; --overflow) {
    if (fn(ev, throttle, data) != 0) break;  // "We inhibit the overflow from happening when hwc->interrupts == MAX_INTERRUPTS."
    throttle = 1;
  }
}

}  // namespace

bool IsSoftwareClock(uint64_t config) {
  return config == PERF_COUNT_SW_CPU_CLOCK || config == PERF_COUNT_SW_TASK_CLOCK;
}

void PeriodStateInit(MockEvent& ev) {
  const perf_event_attr& a = ev.attr;
  HwState& hw = ev.hw;
  hw.sample_period = a.sample_period;
  if (a.freq && a.sample_freq) hw.sample_period = 1;
  hw.last_period = hw.sample_period;
  hw.period_left = static_cast<int64_t>(hw.sample_period);
}

int SoftwareEventInit(MockEvent& ev, std::string* why) {
  perf_event_attr& a = ev.attr;
  // kernel/events/core.c perf_swevent_init(): has_branch_stack() before the
  // config range (cpu_clock/task_clock_event_init() check it too).
  if (a.sample_type & PERF_SAMPLE_BRANCH_STACK) {
    if (why) *why = "no branch sampling for software events";
    return EOPNOTSUPP;
  }
  if (a.config >= PERF_COUNT_SW_MAX) {
    if (why) *why = fmt::format("software config {} >= PERF_COUNT_SW_MAX ({})", a.config, int{PERF_COUNT_SW_MAX});
    return ENOENT;
  }
  ev.is_clock = IsSoftwareClock(a.config);
  ev.pmu = a.config == PERF_COUNT_SW_CPU_CLOCK   ? PmuId::kCpuClock
           : a.config == PERF_COUNT_SW_TASK_CLOCK ? PmuId::kTaskClock
                                                  : PmuId::kSwevent;
  PeriodStateInit(ev);
  HwState& hw = ev.hw;

  // perf_swevent_init_hrtimer(): a clock in freq mode gets a fixed period.
  if (ev.is_clock && ev.is_sampling() && a.freq) {
    a.sample_period = kNsecPerSec / a.sample_freq;
    hw.sample_period = a.sample_period;
    hw.period_left = static_cast<int64_t>(hw.sample_period);
    hw.last_period = hw.sample_period;
    a.freq = 0;
  }
  return 0;
}

uint64_t SoftwareSetPeriod(HwState& hw) {
  const uint64_t period = hw.last_period;
  hw.last_period = hw.sample_period;
  const int64_t old = hw.period_left;
  if (old < 0) return 0;
  const uint64_t nr = (period + static_cast<uint64_t>(old)) / period;
  hw.period_left = old - static_cast<int64_t>(nr * period);
  return nr;
}

void SoftwareEventStart(MockEvent& ev, bool add) {
  HwState& hw = ev.hw;
  hw.stopped = false;
  // Hardware counters keep period_left as "events until overflow" (the core
  // PMU's own x86_perf_event_set_period() convention; mock_counting.cc HardwareCount()).
  if (!ev.is_sampling() || ev.pmu == PmuId::kCore) return;
  if (ev.is_clock) {
    // perf_swevent_start_hrtimer().
    int64_t period = hw.period_left;
    if (period != 0) {
      if (period < 0) period = static_cast<int64_t>(kHrtimerMinPeriodNs);
      hw.period_left = 0;
    } else {
      period = static_cast<int64_t>(std::max(kHrtimerMinPeriodNs, hw.sample_period));
    }
    hw.hrtimer_left = static_cast<uint64_t>(period);
    hw.hrtimer_active = true;
    return;
  }
  if (!add) return;  // perf_swevent_start(): hwc->state = 0
  // perf_swevent_add().
  hw.last_period = hw.sample_period;
  SoftwareSetPeriod(hw);
}

void SoftwareEventStop(MockEvent& ev, bool from_overflow) {
  HwState& hw = ev.hw;
  hw.stopped = true;
  if (ev.is_clock && hw.hrtimer_active) {
    // perf_swevent_cancel_hrtimer(): period_left = hrtimer_get_remaining(), which
    // is negative when cancelled from inside the expired timer.
    hw.period_left = from_overflow ? -1 : static_cast<int64_t>(hw.hrtimer_left);
    hw.hrtimer_active = false;
  }
}

void SoftwareEventCount(MockEvent& ev, uint64_t nr, SampleData data, const OverflowFn& overflow) {
  HwState& hw = ev.hw;
  ev.count += nr;
  if (!ev.is_sampling()) return;
  if ((ev.attr.sample_type & PERF_SAMPLE_PERIOD) && !ev.attr.freq) {
    data.period = nr;
    SoftwareOverflow(ev, 1, data, overflow);
    return;
  }
  data.period = hw.last_period;
  if (nr == 1 && hw.sample_period == 1 && !ev.attr.freq) {
    SoftwareOverflow(ev, 1, data, overflow);
    return;
  }
  hw.period_left += static_cast<int64_t>(nr);  // local64_add_negative()
  if (hw.period_left < 0) return;
  SoftwareOverflow(ev, 0, data, overflow);
}

void SoftwareClockFire(MockEvent& ev, SampleData data, bool excluded, const OverflowFn& overflow) {
  HwState& hw = ev.hw;
  if (!hw.hrtimer_active || hw.stopped) return;
  data.period = hw.last_period;  // perf_sample_data_init(&data, 0, event->hw.last_period)
  // hrtimer_forward_now() first: the overflow may stop the timer.
  hw.hrtimer_left = std::max(kHrtimerMinPeriodNs, hw.sample_period);
  if (!excluded && overflow(ev, 1, data) != 0) {
    // HRTIMER_NORESTART; the event was stopped by the throttle or the limit.
    hw.hrtimer_active = false;
  }
}

void AdjustPeriod(MockEvent& ev, uint64_t nsec, uint64_t count) {
  HwState& hw = ev.hw;
  // perf_calculate_period(): period = count * NSEC_PER_SEC / (nsec * sample_freq).
  const unsigned __int128 dividend = static_cast<unsigned __int128>(count) * kNsecPerSec;
  const unsigned __int128 divisor = static_cast<unsigned __int128>(nsec) * ev.attr.sample_freq;
  const int64_t period = divisor == 0 ? static_cast<int64_t>(dividend) : static_cast<int64_t>(dividend / divisor);

  int64_t delta = period - static_cast<int64_t>(hw.sample_period);
  delta += delta >= 0 ? 7 : -7;
  delta /= 8;  // low pass filter
  int64_t sample_period = static_cast<int64_t>(hw.sample_period) + delta;
  if (sample_period == 0) sample_period = 1;
  hw.sample_period = static_cast<uint64_t>(sample_period);
  if (hw.period_left > 8 * sample_period) hw.period_left = 0;
}

}  // namespace perftest::mock
