#include "mocks/software_pmu.h"

#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <vector>

#include "harness/attr.h"

namespace perftest::mock {
namespace {

struct Overflows {
  std::vector<uint64_t> periods;  // data.period of each sample
  int stop_after = -1;            // return 1 (stop) from this overflow on
  OverflowFn fn() {
    return [this](MockEvent&, int, const SampleData& d) {
      periods.push_back(d.period);
      return (stop_after >= 0 && static_cast<int>(periods.size()) > stop_after) ? 1 : 0;
    };
  }
};

MockEvent Sampler(uint64_t config, uint64_t period, uint64_t sample_type = PERF_SAMPLE_IP) {
  MockEvent ev;
  ev.attr = SoftwareAttr(config);
  ev.attr.sample_period = period;
  ev.attr.sample_type = sample_type;
  std::string why;
  EXPECT_EQ(SoftwareEventInit(ev, &why), 0) << why;
  return ev;
}

TEST(SoftwarePmu, ConfigRange) {
  std::string why;
  MockEvent ev;
  ev.attr = SoftwareAttr(PERF_COUNT_SW_MAX);
  EXPECT_EQ(SoftwareEventInit(ev, &why), ENOENT);
  ev.attr = SoftwareAttr(PERF_COUNT_SW_DUMMY);
  EXPECT_EQ(SoftwareEventInit(ev, &why), 0);
  EXPECT_FALSE(ev.is_clock);
  ev.attr = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  ev.attr.sample_type = PERF_SAMPLE_BRANCH_STACK;
  EXPECT_EQ(SoftwareEventInit(ev, &why), EOPNOTSUPP);
  ev.attr = SoftwareAttr(PERF_COUNT_SW_TASK_CLOCK);
  EXPECT_EQ(SoftwareEventInit(ev, &why), 0);
  EXPECT_TRUE(ev.is_clock);
}

TEST(SoftwarePmu, EveryNthOccurrenceOverflows) {
  MockEvent ev = Sampler(PERF_COUNT_SW_PAGE_FAULTS, 4);
  SoftwareEventStart(ev, /*add=*/true);
  EXPECT_EQ(ev.hw.period_left, -4) << "perf_swevent_add() -> perf_swevent_set_period()";
  Overflows o;
  std::vector<int> at;
  for (int i = 1; i <= 12; ++i) {
    const size_t before = o.periods.size();
    SoftwareEventCount(ev, 1, SampleData{}, o.fn());
    if (o.periods.size() != before) at.push_back(i);
  }
  EXPECT_EQ(at, (std::vector<int>{4, 8, 12}));
  EXPECT_EQ(ev.count, 12u);
  EXPECT_EQ(o.periods, (std::vector<uint64_t>{4, 4, 4}));
}

TEST(SoftwarePmu, SamplePeriodMakesEveryOccurrenceASample) {
  // perf_swevent_event(): with PERF_SAMPLE_PERIOD and !freq the period is reported, not applied.
  MockEvent ev = Sampler(PERF_COUNT_SW_PAGE_FAULTS, 4, PERF_SAMPLE_IP | PERF_SAMPLE_PERIOD);
  SoftwareEventStart(ev, true);
  Overflows o;
  for (int i = 0; i < 8; ++i) SoftwareEventCount(ev, 1, SampleData{}, o.fn());
  EXPECT_EQ(o.periods, std::vector<uint64_t>(8, 1));
}

TEST(SoftwarePmu, PeriodSurvivesDisableEnable) {
  MockEvent ev = Sampler(PERF_COUNT_SW_PAGE_FAULTS, 4);
  SoftwareEventStart(ev, true);
  Overflows o;
  SoftwareEventCount(ev, 1, SampleData{}, o.fn());
  SoftwareEventCount(ev, 1, SampleData{}, o.fn());
  SoftwareEventStop(ev);
  SoftwareEventStart(ev, true);  // period_left is negative: set_period() leaves it
  SoftwareEventCount(ev, 1, SampleData{}, o.fn());
  EXPECT_TRUE(o.periods.empty());
  SoftwareEventCount(ev, 1, SampleData{}, o.fn());
  EXPECT_EQ(o.periods.size(), 1u);
}

TEST(SoftwarePmu, NoSampleWhileThrottled) {
  MockEvent ev = Sampler(PERF_COUNT_SW_PAGE_FAULTS, 1);
  SoftwareEventStart(ev, true);
  ev.hw.interrupts = kMaxInterrupts;
  Overflows o;
  SoftwareEventCount(ev, 1, SampleData{}, o.fn());
  EXPECT_TRUE(o.periods.empty());
  EXPECT_EQ(ev.count, 1u) << "perf_swevent_event() counts before it looks at the throttle";
}

TEST(SoftwarePmu, ClockFrequencyBecomesAFixedPeriod) {
  MockEvent ev;
  ev.attr = SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK);
  ev.attr.freq = 1;
  ev.attr.sample_freq = 1000;
  std::string why;
  ASSERT_EQ(SoftwareEventInit(ev, &why), 0);
  EXPECT_EQ(ev.attr.freq, 0u) << "perf_swevent_init_hrtimer() clears attr.freq";
  EXPECT_EQ(ev.attr.sample_period, 1000000u);
  EXPECT_EQ(ev.hw.sample_period, 1000000u);
}

TEST(SoftwarePmu, HrtimerPeriodsAndRestart) {
  MockEvent ev = Sampler(PERF_COUNT_SW_TASK_CLOCK, 1000);
  SoftwareEventStart(ev, true);
  EXPECT_TRUE(ev.hw.hrtimer_active);
  EXPECT_EQ(ev.hw.hrtimer_left, 1000u) << "the first period is period_left";
  Overflows o;
  SoftwareClockFire(ev, SampleData{}, false, o.fn());
  EXPECT_EQ(ev.hw.hrtimer_left, kHrtimerMinPeriodNs) << "then at least 10 us";
  EXPECT_EQ(o.periods, std::vector<uint64_t>{1000});
  ev.hw.hrtimer_left = 2500;
  SoftwareEventStop(ev);
  EXPECT_EQ(ev.hw.period_left, 2500) << "the remaining time is saved";
  SoftwareEventStart(ev, true);
  EXPECT_EQ(ev.hw.hrtimer_left, 2500u);
}

TEST(SoftwarePmu, FrequencyModeStartsAtPeriodOneAndAdapts) {
  MockEvent ev;
  ev.attr = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  ev.attr.freq = 1;
  ev.attr.sample_freq = 1000;
  std::string why;
  ASSERT_EQ(SoftwareEventInit(ev, &why), 0);
  EXPECT_EQ(ev.hw.sample_period, 1u);
  // 10 events in 1 ms at a 1 kHz target want a period of 10; the low-pass
  // filter moves an eighth of the way (rounded away from zero).
  AdjustPeriod(ev, 1000000, 10);
  EXPECT_EQ(ev.hw.sample_period, 3u);
  AdjustPeriod(ev, 1000000, 1);
  EXPECT_EQ(ev.hw.sample_period, 2u);
}

}  // namespace
}  // namespace perftest::mock
