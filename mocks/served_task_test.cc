// The controls tools/exec (`perftest exec`) serves a real task with
// (MockControl::ServeTask and the Served*/SetServedContext calls): the
// simulated task takes the real one's ids, its samples its real ip and
// callchain, its side-band the real fork/exit/comm/mmap, and its user page
// offers no RDPMC or TSC time (the real task would read the host's).
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <fcntl.h>
#include <signal.h>

#include <unistd.h>

#include <chrono>
#include <tuple>
#include <vector>

#include "mocks/internal/mock_test_fixture.h"

namespace perftest {
namespace {

using namespace std::chrono_literals;

constexpr pid_t kRealPid = 31337;
constexpr pid_t kRealTid = 31338;

class ServedTask : public MockTest {
 protected:
  std::string ProfileName() const override { return "x86_64-intel"; }
};

TEST_F(ServedTask, TakesTheRealTasksIds) {
  control().ServeTask(kRealPid, kRealTid, "real");
  EXPECT_EQ(b().CurrentTask().pid, kRealPid);
  EXPECT_EQ(b().CurrentTask().tid, kRealTid);
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_TASK_CLOCK);
  EXPECT_OK(Open(a, kRealTid));
  EXPECT_THAT(Open(a, kRealTid + 1), FailsWithErrno(ESRCH));
}

TEST_F(ServedTask, SamplesCarryTheServedIpAndCallers) {
  control().ServeTask(kRealPid, kRealTid, "real");
  control().SetServedContext(0x401234, {0x401500, 0x401600});
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_TASK_CLOCK);
  a.sample_period = 1000000;  // 1 ms
  a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_CALLCHAIN;
  a.exclude_kernel = a.exclude_hv = 1;
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 16);
  ASSERT_TRUE(rb);
  Enable(fd);
  Run(Workload::Spin(5ms));
  Disable(fd);
  size_t samples = 0;
  for (const Record& r : Records(*rb, a)) {
    if (r.header.type != PERF_RECORD_SAMPLE) continue;
    const auto& s = std::get<SampleRecord>(r.body);
    ++samples;
    EXPECT_EQ(s.ip, 0x401234u);
    EXPECT_EQ(s.pid, static_cast<uint32_t>(kRealPid));
    EXPECT_EQ(s.tid, static_cast<uint32_t>(kRealTid));
    ASSERT_TRUE(s.callchain.has_value());
    EXPECT_EQ(*s.callchain, (std::vector<uint64_t>{PERF_CONTEXT_USER, 0x401234, 0x401500, 0x401600}));
  }
  EXPECT_EQ(samples, 5u);
}

TEST_F(ServedTask, SideBandNamesTheRealTasks) {
  control().ServeTask(kRealPid, kRealTid, "real");
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_DUMMY);
  a.comm = a.task = a.mmap = a.mmap2 = 1;
  a.exclude_kernel = a.exclude_hv = 1;
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 16);
  ASSERT_TRUE(rb);
  Enable(fd);
  control().ServedComm("renamed");
  control().ServedFork(40000, 40000);
  control().ServedMmap({0x7f0000000000, 0x2000, 0x1000, true, 8, 1, 1234, "/usr/lib/libx.so"});
  control().ServedExit();
  bool comm = false, fork = false, mmap2 = false, exit = false;
  for (const Record& r : Records(*rb, a)) {
    if (r.header.type == PERF_RECORD_COMM) {
      const auto& c = std::get<CommRecord>(r.body);
      comm = c.comm == "renamed" && c.pid == static_cast<uint32_t>(kRealPid) && c.tid == static_cast<uint32_t>(kRealTid);
    } else if (r.header.type == PERF_RECORD_FORK) {
      const auto& t = std::get<TaskRecord>(r.body);
      fork = t.pid == 40000 && t.ppid == static_cast<uint32_t>(kRealPid) && t.ptid == static_cast<uint32_t>(kRealTid);
    } else if (r.header.type == PERF_RECORD_MMAP2) {
      const auto& m = std::get<Mmap2Record>(r.body);
      mmap2 = m.addr == 0x7f0000000000u && m.len == 0x2000u && m.pgoff == 0x1000u && m.ino == 1234u &&
              m.filename == "/usr/lib/libx.so" && m.pid == static_cast<uint32_t>(kRealPid);
    } else if (r.header.type == PERF_RECORD_EXIT) {
      exit = std::get<TaskRecord>(r.body).tid == static_cast<uint32_t>(kRealTid);
    }
  }
  EXPECT_TRUE(comm) << "COMM of prctl(PR_SET_NAME), exec = false";
  EXPECT_TRUE(fork) << "FORK naming the real child and parent";
  EXPECT_TRUE(mmap2) << "MMAP2 of the real mapping";
  EXPECT_TRUE(exit) << "EXIT of the served task";
}

TEST_F(ServedTask, UserPageOffersNoRdpmcNorTscTime) {
  perf_event_attr a{};
  a.size = sizeof a;
  a.type = PERF_TYPE_HARDWARE;
  a.config = PERF_COUNT_HW_INSTRUCTIONS;
  a.exclude_kernel = a.exclude_hv = 1;
  {
    const int fd = MustOpen(a);
    std::optional<RingBuffer> rb = Map(fd, 1);
    ASSERT_TRUE(rb);
    Enable(fd);
    EXPECT_EQ(static_cast<uint64_t>(rb->page().cap_user_rdpmc), 1u) << "the model's own task may RDPMC";
  }
  Remake(profile_);
  control().ServeTask(kRealPid, kRealTid, "real");
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 1);
  ASSERT_TRUE(rb);
  Enable(fd);
  Run(Workload::Spin(1ms));
  EXPECT_EQ(static_cast<uint64_t>(rb->page().cap_user_rdpmc), 0u);
  EXPECT_EQ(static_cast<uint32_t>(rb->page().index), 0u);
  EXPECT_EQ(static_cast<uint64_t>(rb->page().cap_user_time), 0u);
  EXPECT_EQ(static_cast<uint64_t>(rb->page().cap_user_time_zero), 0u);
}

TEST_F(ServedTask, OverflowSignalsGoToTheSinkWithTheKernelsSiginfo) {
  // F_SETOWN needs a process that exists (f_setown(): ESRCH): this one stands for the real task.
  const pid_t real = getpid();
  control().ServeTask(real, real, "real");
  std::vector<std::tuple<pid_t, pid_t, siginfo_t>> sent;
  control().SetSignalSink([&](pid_t pid, pid_t tid, const siginfo_t& info) { sent.emplace_back(pid, tid, info); });
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.sample_period = 1;
  a.wakeup_events = 1;
  a.exclude_kernel = a.exclude_hv = 1;
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 4);
  ASSERT_TRUE(rb);
  EXPECT_OK(b().Fcntl(fd, F_SETOWN, real));
  EXPECT_OK(b().Fcntl(fd, F_SETSIG, SIGRTMIN));
  EXPECT_OK(b().Fcntl(fd, F_SETFL, O_ASYNC));
  Enable(fd);
  Run(Workload::TouchPages(1));
  ASSERT_FALSE(sent.empty()) << "the overflow's F_SETSIG signal";
  const auto& [pid, tid, info] = sent.front();
  EXPECT_EQ(pid, real);
  EXPECT_EQ(tid, real);
  EXPECT_EQ(info.si_signo, SIGRTMIN);
  EXPECT_EQ(info.si_code, POLL_IN);
  EXPECT_EQ(info.si_fd, fd);
}

}  // namespace
}  // namespace perftest
