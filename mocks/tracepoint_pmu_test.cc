// Unit tests of the tracepoint PMU model: trace entries, filters, and the
// counting rules through MockBackend. Expected values checked on Linux 6.18
// x86_64 (tracefs ids and formats of the software-only.json machine).
#include "mocks/tracepoint_pmu.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "mocks/internal/mock_test_fixture.h"

namespace perftest {
namespace {

using mock::FindTracepointModel;
using mock::TraceFilter;
using mock::TraceRawData;
using mock::TraceValues;

TEST(TracepointModel, SysEnterRawIsTheSyscallTraceEnterEntry) {
  const mock::TracepointModel* tp = FindTracepointModel("syscalls:sys_enter_getpid");
  ASSERT_NE(tp, nullptr);
  const std::vector<std::byte> raw = TraceRawData(*tp, 309, TraceValues{{{"common_pid", 0x7399}, {"__syscall_nr", 39}}, {}});
  // As a 6.18 sample showed it: 35 01 00 01 | 99 73 00 00 | 27 00 00 00 | 8 zero bytes.
  ASSERT_EQ(raw.size(), 20u) << "ALIGN(16 + 4, 8) - 4";
  const uint8_t want[20] = {0x35, 0x01, 0x00, 0x01, 0x99, 0x73, 0, 0, 0x27, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(std::memcmp(raw.data(), want, 20), 0);
  const mock::TracepointModel* exit = FindTracepointModel("syscalls:sys_exit_getpid");
  ASSERT_NE(exit, nullptr);
  EXPECT_EQ(TraceRawData(*exit, 308, {}).size(), 28u) << "ALIGN(24 + 4, 8) - 4";
  EXPECT_EQ(FindTracepointModel("foo:bar"), nullptr);
}

TEST(TracepointModel, FilterErrorsAsLinux618ReturnsThem) {
  const mock::TracepointModel& tp = *FindTracepointModel("syscalls:sys_enter_getpid");
  std::unique_ptr<TraceFilter> f;
  std::string why;
  EXPECT_EQ(TraceFilter::Parse(tp, "(common_pid == 1", &f, &why), ENOENT);
  EXPECT_EQ(TraceFilter::Parse(tp, "(((", &f, &why), ENOENT);
  EXPECT_EQ(TraceFilter::Parse(tp, "common_pid == 1)", &f, &why), EPERM);
  for (const char* bad : {"", "0", "1", "common_pid", "common_pid ==", "common_pid = 1", "common_pid == abc",
                          "no_such_field == 1", "id == 39"}) {
    EXPECT_EQ(TraceFilter::Parse(tp, bad, &f, &why), EINVAL) << "'" << bad << "'";
  }
  EXPECT_EQ(f, nullptr);
}

// Linux 6.18, checked with the tracepoint suite's tracepoint.filter_invalid:
// parse_pred() returns -1 (-EPERM) when a predicate starts with no field name,
// and predicate_parse() accepts a trailing "&&"/"||" (it stops at the end).
TEST(TracepointModel, FilterNoFieldIsEpermTrailingConnectiveIgnored) {
  const mock::TracepointModel& tp = *FindTracepointModel("syscalls:sys_enter_getpid");
  std::unique_ptr<TraceFilter> f;
  std::string why;
  EXPECT_EQ(TraceFilter::Parse(tp, "== 3", &f, &why), EPERM);
  EXPECT_EQ(TraceFilter::Parse(tp, "__syscall_nr == 39 && > 2", &f, &why), EPERM);
  ASSERT_EQ(TraceFilter::Parse(tp, "__syscall_nr == 1 &&", &f, &why), 0) << why;
  EXPECT_FALSE(f->Match({{{"__syscall_nr", 39}}, {}}));
  EXPECT_TRUE(f->Match({{{"__syscall_nr", 1}}, {}}));
  ASSERT_EQ(TraceFilter::Parse(tp, "__syscall_nr == 1 ||  ", &f, &why), 0) << why;
  EXPECT_TRUE(f->Match({{{"__syscall_nr", 1}}, {}}));
}

TEST(TracepointModel, FilterSemantics) {
  const mock::TracepointModel& tp = *FindTracepointModel("syscalls:sys_enter_getpid");
  const TraceValues v{{{"common_pid", 100}, {"common_type", 309}, {"__syscall_nr", 39}}, {}};
  auto match = [&](const char* text) {
    std::unique_ptr<TraceFilter> f;
    std::string why;
    EXPECT_EQ(TraceFilter::Parse(tp, text, &f, &why), 0) << text << ": " << why;
    return f != nullptr && f->Match(v);
  };
  EXPECT_TRUE(match("__syscall_nr == 39"));
  EXPECT_TRUE(match("  __syscall_nr==0x27  "));
  EXPECT_FALSE(match("__syscall_nr != 39"));
  EXPECT_TRUE(match("(__syscall_nr == 39)"));
  EXPECT_TRUE(match("__syscall_nr & 1"));
  EXPECT_TRUE(match("__syscall_nr >= 39 && __syscall_nr <= 39"));
  EXPECT_FALSE(match("common_pid > 0 && common_pid < 0"));
  EXPECT_TRUE(match("common_pid == 1 || common_pid != 1"));
  EXPECT_FALSE(match("!(__syscall_nr == 39)"));
  EXPECT_FALSE(match("common_pid == -1"));
  EXPECT_TRUE(match("common_type == 309"));
  EXPECT_TRUE(match("__syscall_nr == 39 && (common_pid == 1 || common_pid != 1)"));
}

class TracepointPmu : public MockTest {
 protected:
  uint64_t IdOf(const char* sys, const char* name) {
    Result<uint64_t> id = b().TracepointId(sys, name);
    EXPECT_OK(id);
    return id.ok() ? *id : 0;
  }
};

TEST_F(TracepointPmu, IdsComeFromTheProfilesTracefs) {
  EXPECT_THAT(b().TracepointId("syscalls", "sys_enter_getpid"), SucceedsWith(309u));
  EXPECT_THAT(b().TracepointId("sched", "sched_switch"), SucceedsWith(372u));
  EXPECT_THAT(b().TracepointId("sched", "no_such"), FailsWithErrno(ENOENT));
}

// perf_trace_init(): no tracepoint with that id -> EINVAL (not ENOENT).
TEST_F(TracepointPmu, UnknownIdIsEinval) {
  for (uint64_t config : {uint64_t{0}, uint64_t{999999}, uint64_t{1} << 40}) {
    EXPECT_THAT(Open(MakeAttr(PERF_TYPE_TRACEPOINT, config)), FailsWithErrno(EINVAL)) << config;
  }
}

// perf_tp_event_match(): exclude_kernel drops firings with kernel regs; the
// syscall tracepoints carry the task's user regs; exclude_user is not looked at.
TEST_F(TracepointPmu, ExcludeRulesFollowTheRegs) {
  perf_event_attr getpid = MakeAttr(PERF_TYPE_TRACEPOINT, IdOf("syscalls", "sys_enter_getpid"));
  perf_event_attr sw = MakeAttr(PERF_TYPE_TRACEPOINT, IdOf("sched", "sched_switch"));
  getpid.exclude_kernel = sw.exclude_kernel = 1;
  const int g_ek = MustOpen(getpid), s_ek = MustOpen(sw);
  getpid.exclude_kernel = sw.exclude_kernel = 0;
  getpid.exclude_user = sw.exclude_user = 1;
  const int g_eu = MustOpen(getpid), s_eu = MustOpen(sw);
  for (int fd : {g_ek, s_ek, g_eu, s_eu}) Enable(fd);
  Run(Workload::Syscalls(25));
  Run(Workload::Sleep(5, std::chrono::microseconds(100)));
  EXPECT_EQ(Count(g_ek), 25u) << "syscall tracepoints fire with user regs";
  EXPECT_EQ(Count(s_ek), 0u) << "sched_switch fires with kernel regs";
  EXPECT_EQ(Count(g_eu), 25u) << "exclude_user is ignored";
  EXPECT_EQ(Count(s_eu), 5u);
}

TEST_F(TracepointPmu, FilterOncePerEventAndAppliedToCounting) {
  const perf_event_attr a = MakeAttr(PERF_TYPE_TRACEPOINT, IdOf("syscalls", "sys_exit_getpid"));
  const int fd = MustOpen(a);
  const std::string filter = "ret == " + std::to_string(kMockPid);
  EXPECT_THAT(b().Ioctl(fd, PERF_EVENT_IOC_SET_FILTER, reinterpret_cast<uintptr_t>("ret <")), FailsWithErrno(EINVAL));
  EXPECT_THAT(b().Ioctl(fd, PERF_EVENT_IOC_SET_FILTER, reinterpret_cast<uintptr_t>(filter.c_str())), SucceedsWith(0));
  EXPECT_THAT(b().Ioctl(fd, PERF_EVENT_IOC_SET_FILTER, reinterpret_cast<uintptr_t>("ret > 0")), FailsWithErrno(EEXIST));
  const int other = MustOpen(a);
  EXPECT_THAT(b().Ioctl(other, PERF_EVENT_IOC_SET_FILTER, reinterpret_cast<uintptr_t>("ret < 0")), SucceedsWith(0));
  Enable(fd);
  Enable(other);
  Run(Workload::Syscalls(7));
  EXPECT_EQ(Count(fd), 7u) << "getpid returns the pid";
  EXPECT_EQ(Count(other), 0u);
}

TEST_F(TracepointPmu, RawSamplesCarryTheEntry) {
  perf_event_attr a = MakeAttr(PERF_TYPE_TRACEPOINT, IdOf("syscalls", "sys_enter_getpid"));
  a.sample_period = 1;
  a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_RAW;
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 1);
  ASSERT_TRUE(rb);
  Enable(fd);
  Run(Workload::Syscalls(2));
  const std::vector<Record> recs = Records(*rb, a);
  ASSERT_EQ(recs.size(), 2u);
  const auto& s = std::get<SampleRecord>(recs[0].body);
  EXPECT_EQ(recs[0].header.misc & PERF_RECORD_MISC_CPUMODE_MASK, PERF_RECORD_MISC_USER);
  ASSERT_TRUE(s.raw.has_value());
  ASSERT_EQ(s.raw->size(), 20u);
  uint16_t type;
  int32_t pid, nr;
  std::memcpy(&type, s.raw->data(), 2);
  std::memcpy(&pid, s.raw->data() + 4, 4);
  std::memcpy(&nr, s.raw->data() + 8, 4);
  EXPECT_EQ(type, 309u);
  EXPECT_EQ(pid, kMockPid);
  EXPECT_EQ(nr, 39);
}

TEST_F(TracepointPmu, QueryBpfOnATracepoint) {
  const int fd = MustOpen(MakeAttr(PERF_TYPE_TRACEPOINT, IdOf("syscalls", "sys_enter_getpid")));
  uint32_t q[6] = {4, 99};
  EXPECT_THAT(b().Ioctl(fd, PERF_EVENT_IOC_QUERY_BPF, 0), FailsWithErrno(EFAULT));
  EXPECT_THAT(b().Ioctl(fd, PERF_EVENT_IOC_QUERY_BPF, reinterpret_cast<uintptr_t>(q)), SucceedsWith(0));
  EXPECT_EQ(q[1], 0u);
  const int sw = MustOpen(SoftwareAttr(PERF_COUNT_SW_DUMMY));
  EXPECT_THAT(b().Ioctl(sw, PERF_EVENT_IOC_QUERY_BPF, 0), FailsWithErrno(EINVAL)) << "type checked before the copy";
}

TEST_F(TracepointPmu, ForkAndSwitchFire) {
  const int fork = MustOpen(MakeAttr(PERF_TYPE_TRACEPOINT, IdOf("sched", "sched_process_fork")));
  const int sw = MustOpen(MakeAttr(PERF_TYPE_TRACEPOINT, IdOf("sched", "sched_switch")));
  Enable(fork);
  Enable(sw);
  Run(Workload::Fork(3));
  Run(Workload::Sleep(4, std::chrono::microseconds(50)));
  EXPECT_EQ(Count(fork), 3u);
  EXPECT_EQ(Count(sw), 4u) << "the task's own switches out";
}

}  // namespace
}  // namespace perftest
