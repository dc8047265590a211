// The model's multiplexing rules, one by one: rotation with exact
// time_enabled/time_running, pinned groups in the error state, exclusive
// groups, counters of the profile's width folded into the 64-bit count, and
// the self-monitoring page with ReadPmc() standing in for RDPMC.
#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <sys/mman.h>

#include <vector>

#include "mocks/hardware_pmu.h"
#include "mocks/internal/mock_test_fixture.h"

namespace perftest {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kTimes = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;

perf_event_attr Branches(bool pinned = false, bool exclusive = false) {
  perf_event_attr a = MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS);
  a.read_format = kTimes;
  a.exclude_kernel = 1;
  a.pinned = pinned;
  a.exclusive = exclusive;
  return a;
}

class MultiplexModel : public MockTest {
 protected:
  std::string ProfileName() const override { return "x86_64-intel"; }
  // {value, time_enabled, time_running}.
  std::vector<uint64_t> Read3(int fd) { return Words(fd); }
};

TEST_F(MultiplexModel, RotationGivesEachGroupItsShareExactly) {
  // 6 GP-only events, 4 GP counters, enabled at a tick boundary (the mock starts
  // on one). Each tick perf_rotate_context() moves the first active group to
  // the end: over 6 ticks every event runs 4 of them.
  std::vector<int> fds;
  for (int i = 0; i < 6; ++i) fds.push_back(MustOpen(Branches()));
  for (int fd : fds) Enable(fd);
  Run(Workload::Spin(24ms));
  for (int fd : fds) Disable(fd);
  uint64_t true_branches = 24'000'000ull * 2000 / 1000 / 2;  // 2000 MHz, a branch every two cycles
  for (size_t i = 0; i < fds.size(); ++i) {
    const std::vector<uint64_t> w = Read3(fds[i]);
    ASSERT_EQ(w.size(), 3u);
    EXPECT_EQ(w[1], 24'000'000u) << "event " << i;
    EXPECT_EQ(w[2], 16'000'000u) << "event " << i;
    EXPECT_EQ(w[0] * w[1] / w[2], true_branches) << "scaled count, event " << i;
  }
}

TEST_F(MultiplexModel, WithoutRotationLaterGroupsWait) {
  // 5 events: at any time 4 run; the sum of running is 4 x enabled.
  std::vector<int> fds;
  for (int i = 0; i < 5; ++i) fds.push_back(MustOpen(Branches()));
  for (int fd : fds) Enable(fd);
  Run(Workload::Spin(10ms));  // 2.5 ticks
  uint64_t running = 0;
  for (int fd : fds) {
    Disable(fd);
    const std::vector<uint64_t> w = Read3(fd);
    EXPECT_EQ(w[1], 10'000'000u);
    running += w[2];
  }
  EXPECT_EQ(running, 4 * 10'000'000u);
}

TEST_F(MultiplexModel, PinnedGroupErrsUntilReEnabled) {
  std::vector<int> fds;
  for (int i = 0; i < 5; ++i) {
    fds.push_back(MustOpen(Branches(/*pinned=*/true)));
    Enable(fds.back());
  }
  Run(Workload::Spin(4ms));
  uint64_t buf[8];
  EXPECT_THAT(b().Read(fds[4], buf, sizeof buf), SucceedsWith(0u)) << "the fifth pinned group found no counter";
  EXPECT_THAT(b().Read(fds[3], buf, sizeof buf), SucceedsWith(24u));
  EXPECT_OK(b().Close(fds[0]));
  Run(Workload::Spin(4ms));
  EXPECT_THAT(b().Read(fds[4], buf, sizeof buf), SucceedsWith(0u)) << "ERROR stays without an ENABLE";
  Enable(fds[4]);
  Run(Workload::Spin(4ms));
  const std::vector<uint64_t> w = Read3(fds[4]);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[1], 4'000'000u) << "no enabled time while in ERROR";
  EXPECT_EQ(w[2], 4'000'000u);
  EXPECT_EQ(w[0], 4'000'000u) << "2000 MHz / 2 for 4 ms";
}

TEST_F(MultiplexModel, ExclusiveGroupTakesTurnsWithOthers) {
  const int excl = MustOpen(Branches(false, /*exclusive=*/true));
  const int other = MustOpen(Branches());
  Enable(excl);
  Enable(other);
  Run(Workload::Spin(16ms));  // 4 ticks: excl, other, excl, other
  Disable(excl);
  Disable(other);
  const std::vector<uint64_t> e = Read3(excl), o = Read3(other);
  EXPECT_EQ(e[2], 8'000'000u);
  EXPECT_EQ(o[2], 8'000'000u);
  EXPECT_EQ(e[1], 16'000'000u);
}

TEST_F(MultiplexModel, PinnedBeforeFlexible) {
  std::vector<int> flexible;
  for (int i = 0; i < 4; ++i) {
    flexible.push_back(MustOpen(Branches()));
    Enable(flexible.back());
  }
  const int pinned = MustOpen(Branches(/*pinned=*/true));
  Enable(pinned);  // ctx_resched(): pinned first, so a flexible group loses its counter
  Run(Workload::Spin(12ms));
  const std::vector<uint64_t> p = Read3(pinned);
  EXPECT_EQ(p[1], p[2]);
  uint64_t running = 0;
  for (int fd : flexible) running += Read3(fd)[2];
  EXPECT_EQ(running, 3 * 12'000'000u) << "three counters left for four flexible groups";
}

TEST_F(MultiplexModel, NarrowCounterWrapsIntoTheCount) {
  MockProfile p = profile_;
  p.hardware.counter_width = 16;
  Remake(p);
  perf_event_attr a = MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS);
  a.exclude_kernel = 1;
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 0);
  ASSERT_TRUE(rb.has_value());
  Enable(fd);
  Run(Workload::Instructions(300'000));  // 4.6 laps of a 16-bit counter
  EXPECT_EQ(Count(fd), 300'000u) << "x86_perf_event_update() folds each lap into the 64-bit count";
  // Self-monitoring read (the UAPI's loop, without the seqlock retry: no writer runs).
  const volatile perf_event_mmap_page& pg = rb->page();
  EXPECT_EQ(static_cast<uint64_t>(pg.cap_user_rdpmc), 1u);
  EXPECT_EQ(pg.pmc_width, 16u);
  ASSERT_NE(pg.index, 0u);
  EXPECT_EQ(pg.index, (1u << 30 | 0u) + 1) << "INST_RETIRED.ANY on fixed counter 0";
  ASSERT_OK_AND_ASSIGN(const uint64_t pmc, b().ReadPmc(pg.index));
  EXPECT_LT(pmc, 1u << 16);
  EXPECT_EQ(static_cast<uint64_t>(pg.offset + mock::SignExtend(pmc, 16)), 300'000u);
  EXPECT_THAT(b().ReadPmc(0), FailsWithErrno(EINVAL));
  EXPECT_THAT(b().ReadPmc(5), FailsWithErrno(EINVAL)) << "no event on general-purpose counter 4";
}

TEST_F(MultiplexModel, UserPageRewrittenAtSchedInNotAtDisable) {
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 0);
  ASSERT_TRUE(rb.has_value());
  const volatile perf_event_mmap_page& pg = rb->page();
  EXPECT_EQ(pg.lock, 2u) << "perf_mmap(): one update";
  EXPECT_EQ(static_cast<uint64_t>(pg.cap_user_rdpmc), 0u) << "a software event";
  EXPECT_EQ(pg.pmc_width, 48u) << "x86_pmu.cntval_bits, for any event";
  Enable(fd);
  EXPECT_EQ(pg.lock, 4u) << "sched in";
  Run(Workload::TouchPages(3));
  Disable(fd);
  EXPECT_EQ(pg.lock, 4u) << "DISABLE leaves the page alone";
  EXPECT_EQ(pg.offset, 0) << "stale until the next update";
  EXPECT_OK(b().Ioctl(fd, PERF_EVENT_IOC_RESET, 0));
  EXPECT_EQ(pg.lock, 6u) << "RESET updates";
}

TEST(CounterArithmetic, DeltaAcrossAWrapAndSignExtension) {
  EXPECT_EQ(mock::CounterDelta(0xfff0, 0x0010, 16), 0x20u);
  EXPECT_EQ(mock::CounterDelta(0x10, 0x20, 16), 0x10u);
  EXPECT_EQ(mock::CounterDelta(0xffffffffffffull, 0, 48), 1u);
  EXPECT_EQ(mock::SignExtend(0x8001, 16), -0x7fff);
  EXPECT_EQ(mock::SignExtend(0x7fff, 16), 0x7fff);
  EXPECT_EQ(mock::MaxPeriod(48), (uint64_t{1} << 47) - 1);
  EXPECT_EQ(mock::RdpmcCounter(2, -1), 2u);
  EXPECT_EQ(mock::RdpmcCounter(-1, 1), (1u << 30) | 1u);
}

}  // namespace
}  // namespace perftest
