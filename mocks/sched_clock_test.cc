// The sched_clock counter model (mocks/sched_clock.h) and the user page's
// time fields MockBackend writes with it.
#include "mocks/sched_clock.h"

#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include "harness/user_time.h"
#include "mocks/internal/mock_test_fixture.h"

namespace perftest::mock {
namespace {

using Style = SchedClockCounter::Style;

TEST(CalcMultShift, TscAtTwoGhz) {
  // set_cyc2ns_scale(): khz -> ns per ms. 10^6 << 32 / 2*10^6 = 2^31 fits 32 bits at shift 32.
  const MultShift ms = CalcMultShift(2'000'000, 1'000'000, 0);
  EXPECT_EQ(ms.shift, 32u);
  EXPECT_EQ(ms.mult, 1u << 31);
}

TEST(CalcMultShift, RangeLimitsMult) {
  // sched_clock_register() for a 25 MHz arch timer: 3600 s * 25 MHz needs 5
  // bits above 32, so mult keeps 27 bits: 40 << 21.
  const MultShift ms = CalcMultShift(25'000'000, 1'000'000'000, 3600);
  EXPECT_EQ(ms.shift, 21u);
  EXPECT_EQ(ms.mult, 40u << 21);
  EXPECT_LT(ms.mult, 1u << 27);
}

TEST(SchedClockCounter, PublishedShiftIsAtMost31) {
  const SchedClockCounter tsc({2'000'000, 64, 0}, Style::kX86Tsc);
  EXPECT_EQ(tsc.shift(), 31u) << "shift 32 is published as 31, mult halved";
  EXPECT_EQ(tsc.mult(), 1u << 30);
}

TEST(SchedClockCounter, TscPageConvertsToPerfTime) {
  const SchedClockCounter tsc({2'000'000, 64, 987'654'321'000}, Style::kX86Tsc);
  const uint64_t update = 5'000'000'123, read = 5'003'000'777;
  const UserTimeFields f = tsc.PageFields(update, /*use_clockid=*/false);
  EXPECT_TRUE(f.cap_user_time);
  EXPECT_TRUE(f.cap_user_time_zero);
  EXPECT_FALSE(f.cap_user_time_short) << "the TSC is 64 bits";
  const uint64_t cyc = tsc.CyclesAt(read);
  EXPECT_EQ(cyc, 987'654'321'000u + 2 * read + 1) << "2 GHz: the last of the two cycles of that ns";
  EXPECT_EQ(UserTimestamp(f, cyc), read) << "time_zero + scaled cyc is perf time";
  EXPECT_EQ(UserTimeDelta(f, cyc), read - update) << "time_offset + scaled cyc is the time since the update";
}

TEST(SchedClockCounter, TscUseClockidHasNoTimeZero) {
  const SchedClockCounter tsc({2'000'000, 64, 1}, Style::kX86Tsc);
  const UserTimeFields f = tsc.PageFields(1000, /*use_clockid=*/true);
  EXPECT_TRUE(f.cap_user_time);
  EXPECT_FALSE(f.cap_user_time_zero) << "x86: no time_zero for an event with its own clock";
  EXPECT_EQ(f.time_zero, 0u);
  EXPECT_EQ(UserTimeDelta(f, tsc.CyclesAt(4000)), 3000u);
}

TEST(SchedClockCounter, InexactRateStaysWithinATick) {
  // 2.4 GHz: mult is rounded (by ~1.3 us an hour); the counter the model
  // hands out still converts back to the model's time.
  const SchedClockCounter tsc({2'400'000, 64, 12345}, Style::kX86Tsc);
  for (uint64_t t : {uint64_t{1'000'000}, uint64_t{3'600'000'000'000}}) {
    const UserTimeFields f = tsc.PageFields(t / 2, false);
    const uint64_t ts = UserTimestamp(f, tsc.CyclesAt(t));
    EXPECT_LE(ts, t) << "at " << t << " ns";
    EXPECT_GE(ts + 1, t) << "within a tick (< 1 ns at 2.4 GHz), however mult rounds";
  }
}

TEST(SchedClockCounter, GenericShortCounterUnwraps) {
  // A 32-bit, 25 MHz counter started just before its wrap: it wraps 1 s into perf time.
  const uint64_t start = (uint64_t{1} << 32) - 25'000'000;
  const SchedClockCounter c({25'000, 32, start}, Style::kGenericSchedClock);
  EXPECT_GT(c.epoch_period_ns(), 0u);
  const uint64_t update = 500'000'000, read = 1'500'000'000;  // the read is past the wrap
  ASSERT_LT(read, c.epoch_period_ns()) << "one epoch";
  const UserTimeFields f = c.PageFields(update, /*use_clockid=*/true);
  EXPECT_TRUE(f.cap_user_time && f.cap_user_time_zero && f.cap_user_time_short)
      << "generic sched_clock: all three, whatever the clockid";
  EXPECT_EQ(f.time_mask, 0xffffffffu);
  EXPECT_EQ(f.time_cycles, start) << "epoch_cyc";
  const uint64_t cyc = c.CyclesAt(read);
  EXPECT_LT(cyc, start) << "wrapped";
  EXPECT_EQ(UserTimestamp(f, cyc), read);
  EXPECT_EQ(UserTimeDelta(f, cyc), read - update);
  UserTimeFields no_short = f;
  no_short.cap_user_time_short = false;
  EXPECT_NE(UserTimestamp(no_short, cyc), read) << "without the unwrap a wrapped counter converts wrong";
}

TEST(SchedClockCounter, GenericEpochFollowsTime) {
  const SchedClockCounter c({25'000, 32, 0}, Style::kGenericSchedClock);
  const uint64_t p = c.epoch_period_ns();
  ASSERT_GT(p, 0u);
  EXPECT_LT(p, (uint64_t{1} << 32) * 40) << "refreshed before the counter wraps";
  const uint64_t t = 3 * p + 12345;
  const UserTimeFields f = c.PageFields(t, false);
  EXPECT_EQ(f.time_cycles, c.CyclesAt(3 * p)) << "the epoch of the last refresh";
  const uint64_t ts = UserTimestamp(f, c.CyclesAt(t + 80));
  EXPECT_LE(ts, t + 80);
  EXPECT_GT(ts + 40, t + 80) << "within one 40 ns tick";
}

class UserPageTime : public MockTest {
 protected:
  UserTimeFields Page(perf_event_attr a, uint64_t* enabled) {
    const int fd = MustOpen(a);
    std::optional<RingBuffer> rb = Map(fd, 0);
    EXPECT_TRUE(rb.has_value());
    if (!rb) return {};
    Enable(fd);
    Run(Workload::Sleep(1, std::chrono::microseconds(100)));
    Run(Workload::Spin(std::chrono::microseconds(300)));
    const UserTimeFields f = UserTimeFieldsOf(rb->page());
    *enabled = rb->page().time_enabled;
    if (f.cap_user_time) {
      Result<uint64_t> cyc = b().ReadCycleCounter();
      EXPECT_OK(cyc);
      uint64_t v[3] = {};
      EXPECT_OK(b().Read(fd, v, sizeof v));
      *enabled += UserTimeDelta(f, *cyc);
      // Exact to within one counter tick (the counter reads floor(t * rate)).
      const uint64_t tick_ns = (uint64_t{f.time_mult} >> f.time_shift) + 1;
      EXPECT_LE(*enabled, v[1]) << "page time_enabled + delta is read(2)'s time_enabled";
      EXPECT_LT(v[1] - *enabled, tick_ns);
    }
    return f;
  }
  static perf_event_attr TaskClock() {
    perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_TASK_CLOCK);
    a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    return a;
  }
};

TEST_F(UserPageTime, NoCounterNoTimeFields) {
  uint64_t enabled = 0;
  const UserTimeFields f = Page(TaskClock(), &enabled);
  EXPECT_FALSE(f.cap_user_time) << "sw-only models a kvm-clock guest";
  EXPECT_EQ(f.time_mult, 0u);
  EXPECT_EQ(b().ReadCycleCounter().error(), ENOSYS);
}

TEST_F(UserPageTime, TscProfilePublishesTime) {
  Result<MockProfile> p = LoadProfile("x86_64-intel");
  ASSERT_OK(p);
  ASSERT_NE(p->sched_clock_counter.khz, 0u);
  Remake(*p);
  uint64_t enabled = 0;
  UserTimeFields f = Page(TaskClock(), &enabled);
  EXPECT_TRUE(f.cap_user_time) << "software events too: arch_perf_update_userpage() runs for every event";
  EXPECT_TRUE(f.cap_user_time_zero);
  EXPECT_FALSE(f.cap_user_time_short);
  perf_event_attr a = TaskClock();
  a.use_clockid = 1;
  a.clockid = CLOCK_MONOTONIC_RAW;
  f = Page(a, &enabled);
  EXPECT_TRUE(f.cap_user_time);
  EXPECT_FALSE(f.cap_user_time_zero);
}

TEST_F(UserPageTime, Arm64ProfileHasShortCounter) {
  Result<MockProfile> p = LoadProfile("arm64-pmuv3");
  ASSERT_OK(p);
  Remake(*p);
  uint64_t enabled = 0;
  perf_event_attr a = TaskClock();
  a.use_clockid = 1;
  a.clockid = CLOCK_MONOTONIC_RAW;
  const UserTimeFields f = Page(a, &enabled);
  EXPECT_TRUE(f.cap_user_time && f.cap_user_time_zero && f.cap_user_time_short);
  EXPECT_EQ(f.time_mask, (uint64_t{1} << p->sched_clock_counter.bits) - 1);
}

TEST(SchedClockProfile, KeyIsChecked) {
  const char* base = R"({"arch": "x86_64", "description": "d", "provenance": "p", "ncpus": 1, "page_size": 4096,
    "perf_event_paranoid": 2, "max_sample_rate": 1000, "max_stack": 127, "mlock_kb": 516, "privileged": true,
    "pmus": [], "sched_clock_counter": %s})";
  auto parse = [&](const char* counter) {
    char text[1024];
    std::snprintf(text, sizeof text, base, counter);
    return ParseProfile(text, "t.json");
  };
  Result<MockProfile> ok = parse(R"({"khz": 1000, "bits": 56, "start": 7})");
  ASSERT_OK(ok);
  EXPECT_EQ(ok->sched_clock_counter.bits, 56u);
  EXPECT_EQ(parse(R"({"khz": 0})").error(), EINVAL);
  EXPECT_EQ(parse(R"({"khz": 1000, "width": 56})").error(), EINVAL);
  EXPECT_EQ(parse(R"({"bits": 56})").error(), EINVAL);
}

}  // namespace
}  // namespace perftest::mock
