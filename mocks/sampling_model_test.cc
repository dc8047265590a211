// Unit tests of MockBackend's sampling rules that the sampling and records
// suites found differing from Linux 6.18: each test fails without its fix.
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <chrono>

#include "mocks/internal/mock_test_fixture.h"

namespace perftest {
namespace {

using namespace std::chrono_literals;

class SamplingModel : public MockTest {
 protected:
  perf_event_attr Clock(uint64_t config, uint64_t period, uint64_t sample_type) {
    perf_event_attr a = SoftwareAttr(config);
    a.sample_period = period;
    a.sample_type = sample_type;
    a.exclude_kernel = a.exclude_hv = 1;
    return a;
  }
};

// __perf_event_account_interrupt(): "hwc->interrupts >= max_samples_per_tick"
// throttles; the kernel here writes 399 samples, THROTTLE, the 400th sample
// (at 100 kHz and HZ 250, max_samples_per_tick = 400).
TEST_F(SamplingModel, ThrottleOnTheMaxSamplesPerTickthInterrupt) {
  MockProfile p = profile_;
  p.max_sample_rate = 1000;  // DIV_ROUND_UP(1000, 250) = 4 per tick
  Remake(p);
  const perf_event_attr a = Clock(PERF_COUNT_SW_TASK_CLOCK, 100000, PERF_SAMPLE_TIME);  // 40 per tick
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 16);
  ASSERT_TRUE(rb);
  Enable(fd);
  Run(Workload::Spin(20ms));
  Disable(fd);
  std::vector<Record> recs = Records(*rb, a);
  size_t run = 0, throttles = 0;
  for (size_t i = 0; i < recs.size(); ++i) {
    const uint32_t type = recs[i].header.type;
    if (type == PERF_RECORD_SAMPLE) ++run;
    if (type == PERF_RECORD_UNTHROTTLE) run = 0;
    if (type != PERF_RECORD_THROTTLE) continue;
    ++throttles;
    EXPECT_EQ(run, 3u) << "three samples, then THROTTLE on the fourth interrupt";
    ASSERT_LT(i + 1, recs.size());
    EXPECT_EQ(recs[i + 1].header.type, uint32_t{PERF_RECORD_SAMPLE}) << "the tripping sample is written";
  }
  EXPECT_GE(throttles, 4u);
}

// At perf_event_max_sample_rate 100 kHz a 10 us cpu-clock meets 400 timer
// expiries per 4 ms tick: with ">=" that throttles (on the kernel here too).
TEST_F(SamplingModel, TenMicrosecondClockThrottlesAtDefaultRate) {
  const perf_event_attr a = Clock(PERF_COUNT_SW_CPU_CLOCK, 10000, PERF_SAMPLE_IP);
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 256);
  ASSERT_TRUE(rb);
  Enable(fd);
  Run(Workload::Spin(20ms));
  Disable(fd);
  std::vector<Record> recs = Records(*rb, a);
  EXPECT_GE(CountType(recs, PERF_RECORD_THROTTLE), 1u);
  EXPECT_GE(CountType(recs, PERF_RECORD_UNTHROTTLE), 1u);
}

// perf_prepare_sample(): data_src defaults to PERF_MEM_NA, which in
// include/linux/perf_event.h includes PERF_MEM_S(LVLNUM, NA).
TEST_F(SamplingModel, DataSrcDefaultIncludesLvlnumNa) {
  perf_event_attr a = Clock(PERF_COUNT_SW_PAGE_FAULTS, 1, PERF_SAMPLE_DATA_SRC);
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 4);
  ASSERT_TRUE(rb);
  Enable(fd);
  Run(Workload::TouchPages(2));
  Disable(fd);
  std::vector<Record> recs = Records(*rb, a);
  ASSERT_FALSE(recs.empty());
  for (const Record& r : recs) EXPECT_EQ(*std::get<SampleRecord>(r.body).data_src, 0x1e05080021u);
}

}  // namespace
}  // namespace perftest

namespace perftest {
namespace {

class SideBandModel : public MockTest {
 protected:
  perf_event_attr Dummy() {
    perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_DUMMY);
    a.exclude_kernel = a.exclude_hv = 1;
    return a;
  }
  std::vector<Record> Collect(const perf_event_attr& a, const Workload& w) {
    const int fd = MustOpen(a);
    std::optional<RingBuffer> rb = Map(fd, 8);
    EXPECT_TRUE(rb);
    if (!rb) return {};
    Enable(fd);
    Run(w);
    Disable(fd);
    return Records(*rb, a);
  }
};

// update_curr() -> trace_sched_stat_runtime(): __perf_count(runtime), so a
// counting event counts the task's runtime in ns, ticks and sleeps included.
TEST_F(SideBandModel, SchedStatRuntimeCountsRuntimeNs) {
  perf_event_attr a = MakeAttr(PERF_TYPE_TRACEPOINT, profile_.tracepoints.at("sched:sched_stat_runtime"));
  const int fd = MustOpen(a);
  Enable(fd);
  Run(Workload::Spin(std::chrono::milliseconds(20)));
  Run(Workload::Sleep(1, std::chrono::milliseconds(1)));
  Disable(fd);
  // Every ns the task ran while enabled, up to its last update (the sleep).
  EXPECT_EQ(Count(fd), 20000000u);
}

// Linux 6.18: FORK, then the child's EXIT, then the next FORK, each at a later time.
TEST_F(SideBandModel, ForkAndExitTimesIncrease) {
  perf_event_attr a = Dummy();
  a.task = 1;
  a.inherit = 1;
  const int fd = MustOpen(a, 0, 0);
  std::optional<RingBuffer> rb = Map(fd, 8);
  ASSERT_TRUE(rb);
  Enable(fd);
  Run(Workload::Fork(2));
  Disable(fd);
  std::vector<Record> recs = Records(*rb, a);
  ASSERT_EQ(recs.size(), 4u);
  uint64_t last = 0;
  for (const Record& r : recs) {
    const uint64_t t = std::get<TaskRecord>(r.body).time;
    EXPECT_GT(t, last) << RecordTypeName(r.header.type);
    last = t;
  }
}

// perf_event_fork() -> perf_event_namespaces(): PERF_RECORD_NAMESPACES for the
// new task with NR_NAMESPACES (7) {dev, ino} pairs.
TEST_F(SideBandModel, NamespacesRecordOnFork) {
  perf_event_attr a = Dummy();
  a.namespaces = 1;
  std::vector<Record> recs = Collect(a, Workload::Fork(1));
  ASSERT_EQ(recs.size(), 1u);
  ASSERT_EQ(recs[0].header.type, uint32_t{PERF_RECORD_NAMESPACES});
  const auto& n = std::get<NamespacesRecord>(recs[0].body);
  EXPECT_EQ(n.namespaces.size(), 7u);
  EXPECT_EQ(recs[0].header.size, 8u + 8 + 8 + 7 * 16);
}

// account_event() counts attr.mmap and attr.mmap_data in nr_mmap_events, not
// attr.mmap2: with no such event, perf_event_mmap() reports nothing.
TEST_F(SideBandModel, Mmap2AloneSeesNoMapping) {
  perf_event_attr a = Dummy();
  a.mmap2 = 1;
  EXPECT_TRUE(Collect(a, Workload::MmapExec(1)).empty());
  a.mmap = 1;
  std::vector<Record> recs = Collect(a, Workload::MmapExec(1));
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].header.type, uint32_t{PERF_RECORD_MMAP2});
}

// Workload::Exec: FORK in the parent, then in the child (through its inherited
// events) COMM with PERF_RECORD_MISC_COMM_EXEC and the binary's MMAP2, then EXIT
// (begin_new_exec() -> __set_task_comm(exec = true); the ELF loader's mmap).
TEST_F(SideBandModel, ExecGivesCommExecAndTheBinarysMapping) {
  perf_event_attr a = Dummy();
  a.comm = a.task = a.mmap = a.mmap2 = a.inherit = 1;
  const int fd = MustOpen(a, 0, 0);
  std::optional<RingBuffer> rb = Map(fd, 8);
  ASSERT_TRUE(rb);
  Enable(fd);
  Result<WorkloadResult> w = b().RunWorkload(Workload::Exec("/bin/true"));
  ASSERT_OK(w);
  Disable(fd);
  std::vector<Record> recs = Records(*rb, a);
  std::vector<uint32_t> types;
  for (const Record& r : recs) types.push_back(r.header.type);
  ASSERT_EQ(types, (std::vector<uint32_t>{PERF_RECORD_FORK, PERF_RECORD_COMM, PERF_RECORD_MMAP2, PERF_RECORD_EXIT}));
  EXPECT_EQ(recs[1].header.misc, PERF_RECORD_MISC_COMM_EXEC);
  EXPECT_EQ(std::get<CommRecord>(recs[1].body).comm, "true");
  EXPECT_EQ(std::get<CommRecord>(recs[1].body).pid, static_cast<uint32_t>(w->children.at(0)));
  EXPECT_EQ(std::get<Mmap2Record>(recs[2].body).filename, "/bin/true");
  EXPECT_NE(std::get<Mmap2Record>(recs[2].body).ino, 0u);
  EXPECT_THAT(b().RunWorkload(Workload::Exec("true")), FailsWithErrno(EINVAL)) << "the path must be absolute";
}

}  // namespace
}  // namespace perftest
