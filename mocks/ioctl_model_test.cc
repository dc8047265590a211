// Unit tests of the model's ioctl rules that the kernel's code, not its
// documentation, defines (checked on Linux 6.18 with the same calls).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mocks/internal/mock_test_fixture.h"

namespace perftest {
namespace {

using ::testing::ElementsAre;

class IoctlModel : public MockTest {
 protected:
  perf_event_attr FaultSampler(uint64_t period) {
    perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
    a.sample_period = period;
    a.sample_type = PERF_SAMPLE_ADDR;
    return a;
  }
  // Page indices of the samples of one TouchPages(pages) run.
  std::vector<uint64_t> Touched(int fd, RingBuffer& rb, const perf_event_attr& a, uint64_t pages) {
    Result<WorkloadResult> w = b().RunWorkload(Workload::TouchPages(pages));
    EXPECT_OK(w);
    std::vector<uint64_t> idx;
    for (const Record& r : Records(rb, a)) {
      if (const auto* s = std::get_if<SampleRecord>(&r.body)) idx.push_back((*s->addr - w->region_begin) / 4096);
    }
    (void)fd;
    return idx;
  }
};

// __perf_event_period() on an ACTIVE software event: period_left = 0, and
// pmu->start() does not re-arm it, so perf_swevent_set_period() overflows at
// the next event with the old last_period: (1 + 1) / 1 = 2 samples.
TEST_F(IoctlModel, PeriodOnARunningEventRestartsTheCount) {
  const perf_event_attr a = FaultSampler(1);
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 8);
  ASSERT_TRUE(rb);
  Enable(fd);
  EXPECT_THAT(Touched(fd, *rb, a, 3), ElementsAre(0, 1, 2));
  uint64_t period = 8;
  ASSERT_OK(b().Ioctl(fd, PERF_EVENT_IOC_PERIOD, reinterpret_cast<uintptr_t>(&period)));
  EXPECT_THAT(Touched(fd, *rb, a, 32), ElementsAre(0, 0, 1, 9, 17, 25));
}

TEST_F(IoctlModel, PeriodOfADisabledEventStartsAfresh) {
  const perf_event_attr a = FaultSampler(4);
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 8);
  ASSERT_TRUE(rb);
  Enable(fd);
  EXPECT_THAT(Touched(fd, *rb, a, 10), ElementsAre(3, 7));
  Disable(fd);
  uint64_t period = 8;
  ASSERT_OK(b().Ioctl(fd, PERF_EVENT_IOC_PERIOD, reinterpret_cast<uintptr_t>(&period)));
  Enable(fd);
  EXPECT_THAT(Touched(fd, *rb, a, 16), ElementsAre(7, 15)) << "perf_swevent_add() re-arms with the new period";
}

// _perf_event_refresh(): REFRESH(0) enables with no limit (6.18 returns 0);
// a negative budget counts down without reaching 0.
TEST_F(IoctlModel, RefreshZeroAndNegative) {
  const int zero = MustOpen(FaultSampler(1));
  EXPECT_THAT(b().Ioctl(zero, PERF_EVENT_IOC_REFRESH, 0), SucceedsWith(0));
  Run(Workload::TouchPages(20));
  EXPECT_EQ(Count(zero), 20u);
  Disable(zero);
  const int negative = MustOpen(FaultSampler(1));
  EXPECT_THAT(b().Ioctl(negative, PERF_EVENT_IOC_REFRESH, static_cast<uintptr_t>(-1)), SucceedsWith(0));
  Run(Workload::TouchPages(20));
  EXPECT_EQ(Count(negative), 20u);
}

}  // namespace
}  // namespace perftest
