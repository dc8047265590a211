// Unit tests of the core (hardware) PMU model with the x86_64-intel profile:
// event decoding and its errnos, counter constraints, exact counts.
#include "mocks/hardware_pmu.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include "mocks/internal/mock_test_fixture.h"

namespace perftest {
namespace {

using mock::HardwareEventInit;
using mock::HardwareFits;
using mock::HardwareModel;
using mock::HwEvent;
using mock::HwKind;
using namespace std::chrono_literals;

int Init(uint32_t type, uint64_t config, HwEvent* e = nullptr) {
  HwEvent tmp;
  std::string why;
  return HardwareEventInit(MakeAttr(type, config), PERF_TYPE_RAW, HardwareModel{}, e ? e : &tmp, &why);
}

constexpr uint64_t Cache(uint64_t id, uint64_t op, uint64_t result) { return id | (op << 8) | (result << 16); }

// x86_setup_perfctr(): intel_perfmon_event_map has no stalled-cycles events.
TEST(HardwareModel, GenericEvents) {
  HwEvent e;
  EXPECT_EQ(Init(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, &e), 0);
  EXPECT_EQ(e.kind, HwKind::kInstructions);
  EXPECT_EQ(e.fixed, 0);
  EXPECT_EQ(Init(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, &e), 0);
  EXPECT_EQ(e.fixed, 1);
  EXPECT_EQ(Init(PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES, &e), 0);
  EXPECT_EQ(e.fixed, 2);
  EXPECT_FALSE(e.gp) << "ref-cycles: fixed counter 2 only";
  EXPECT_EQ(Init(PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND), ENOENT);
  EXPECT_EQ(Init(PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND), ENOENT);
  EXPECT_EQ(Init(PERF_TYPE_HARDWARE, PERF_COUNT_HW_MAX), EINVAL);
  perf_event_attr precise = MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS);
  precise.precise_ip = 3;
  std::string why;
  EXPECT_EQ(HardwareEventInit(precise, PERF_TYPE_RAW, HardwareModel{.max_precise = 2}, &e, &why), EOPNOTSUPP);
}

// set_ext_hw_attr(): out of range -> EINVAL; table 0 -> ENOENT; table -1 -> EINVAL.
TEST(HardwareModel, CacheEvents) {
  HwEvent e;
  EXPECT_EQ(Init(PERF_TYPE_HW_CACHE, Cache(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_OP_READ,
                                           PERF_COUNT_HW_CACHE_RESULT_ACCESS), &e), 0);
  EXPECT_EQ(e.kind, HwKind::kL1dReads);
  EXPECT_EQ(Init(PERF_TYPE_HW_CACHE, Cache(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_OP_PREFETCH, 0)), ENOENT);
  EXPECT_EQ(Init(PERF_TYPE_HW_CACHE, Cache(PERF_COUNT_HW_CACHE_L1I, PERF_COUNT_HW_CACHE_OP_WRITE, 0)), EINVAL);
  EXPECT_EQ(Init(PERF_TYPE_HW_CACHE, Cache(PERF_COUNT_HW_CACHE_MAX, 0, 0)), EINVAL);
  EXPECT_EQ(Init(PERF_TYPE_HW_CACHE, Cache(0, 0, PERF_COUNT_HW_CACHE_RESULT_MAX)), EINVAL);
}

TEST(HardwareModel, RawCodes) {
  HwEvent e;
  EXPECT_EQ(Init(PERF_TYPE_RAW, 0xc0, &e), 0);
  EXPECT_EQ(e.kind, HwKind::kInstructions);
  EXPECT_EQ(Init(PERF_TYPE_RAW, 0x1234abcd00ull | 0xc4, &e), 0) << "bits past the event mask are not refused";
  EXPECT_EQ(Init(PERF_TYPE_RAW, 0x99, &e), 0);
  EXPECT_EQ(e.kind, HwKind::kNothing);
}

TEST(HardwareModel, CounterConstraints) {
  HwEvent br, ins, cyc, ref;
  Init(PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, &br);
  Init(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, &ins);
  Init(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, &cyc);
  Init(PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES, &ref);
  const HardwareModel m;  // 4 general-purpose, 3 fixed
  EXPECT_TRUE(HardwareFits({br, br, br, br}, m));
  EXPECT_FALSE(HardwareFits({br, br, br, br, br}, m));
  EXPECT_TRUE(HardwareFits({br, br, br, br, ins, cyc, ref}, m)) << "the fixed counters on top";
  EXPECT_TRUE(HardwareFits({ins, ins, ins, ins, ins}, m)) << "one fixed, four general-purpose";
  EXPECT_FALSE(HardwareFits({ref, ref}, m)) << "ref-cycles has one counter";
}

class HardwarePmu : public MockTest {
 protected:
  std::string ProfileName() const override { return "x86_64-intel"; }
};

TEST_F(HardwarePmu, TypesReachTheCorePmu) {
  EXPECT_OK(Open(MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS)));
  EXPECT_OK(Open(MakeAttr(PERF_TYPE_HW_CACHE, 0)));
  EXPECT_OK(Open(MakeAttr(PERF_TYPE_RAW, 0xc0)));
  EXPECT_THAT(Open(MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_MAX)), FailsWithErrno(EINVAL));
}

TEST_F(HardwarePmu, ExactCounts) {
  const int ins = MustOpen(MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS));
  const int cyc = MustOpen(MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES));
  const int br = MustOpen(MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS));
  perf_event_attr k = MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS);
  k.exclude_user = 1;
  const int kernel = MustOpen(k);
  for (int fd : {ins, cyc, br, kernel}) Enable(fd);
  Run(Workload::Instructions(1000000));
  EXPECT_EQ(Count(ins), 1000000u);
  EXPECT_EQ(Count(cyc), 1000000u) << "one per cycle at 2000 MHz: 500 us";
  EXPECT_EQ(Count(br), 500000u);
  EXPECT_EQ(Count(kernel), 0u);
  Run(Workload::Spin(1ms));
  EXPECT_EQ(Count(cyc), 3000000u) << "2000 cycles per us";
  EXPECT_EQ(Count(ins), 3000000u) << "a spin retires one instruction per cycle";
  Run(Workload::Sleep(1, 1ms));
  EXPECT_EQ(Count(cyc), 3000000u) << "no cycles while the task sleeps";
}

TEST_F(HardwarePmu, GroupMustFitAndOthersAreNotAlwaysCounted) {
  perf_event_attr br = MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS);
  const int leader = MustOpen(br);
  br.disabled = 0;
  for (int i = 0; i < 3; ++i) MustOpen(br, 0, -1, leader);
  EXPECT_THAT(Open(br, 0, -1, leader), FailsWithErrno(EINVAL)) << "validate_group(): 5 > 4 counters";
  Enable(leader);
  // The group holds all four general-purpose counters: a fifth event is
  // enabled but cannot run all the time (the kernel multiplexes it; the model,
  // without rotation, never runs it).
  perf_event_attr single = br;
  single.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  const int waiting = MustOpen(single);
  Run(Workload::Spin(1ms));
  const std::vector<uint64_t> w = Words(waiting);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[1], 1000000u) << "enabled throughout";
  EXPECT_LT(w[2], w[1]) << "time_running < time_enabled";
  EXPECT_EQ(Count(leader), 1000000u) << "the group counts";
}

TEST_F(HardwarePmu, SamplingOverflowsEveryPeriod) {
  perf_event_attr a = MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS);
  a.sample_period = 100000;
  a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_PERIOD;
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 8);
  ASSERT_TRUE(rb);
  Enable(fd);
  Run(Workload::Instructions(1050000));
  const std::vector<Record> recs = Records(*rb, a);
  EXPECT_EQ(CountType(recs, PERF_RECORD_SAMPLE), 10u);
  EXPECT_EQ(*std::get<SampleRecord>(recs[0].body).period, 100000u);
  EXPECT_EQ(Count(fd), 1050000u);
}

}  // namespace
}  // namespace perftest
