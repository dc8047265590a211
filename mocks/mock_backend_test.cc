// Unit tests of MockBackend's model through the Backend seam. The expected
// values were checked against Linux 6.18 (the machine sw-only.json
// models) where the kernel is deterministic enough to compare.
#include "mocks/mock_backend.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "harness/attr.h"
#include "harness/records.h"
#include "harness/ring_buffer.h"
#include "harness/syscall_matchers.h"
#include "mocks/internal/mock_test_fixture.h"

namespace perftest {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr size_t kPage = 4096;

perf_event_attr Sampler(uint64_t config, uint64_t sample_type, uint64_t period = 1) {
  perf_event_attr a = SoftwareAttr(config);
  a.sample_period = period;
  a.sample_type = sample_type;
  return a;
}

// One parsed record and where it was.
struct Rec {
  Record r;
  uint64_t pos;
};

// The shared fixture (mocks/internal/mock_test_fixture.h) plus what these
// tests use: records with their positions, and mappings in either mode.
class MockBackendTest : public MockTest {
 protected:
  void Touch(int fd, uint64_t pages) {
    Enable(fd);
    Run(Workload::TouchPages(pages));
    Disable(fd);
  }
  std::optional<RingBuffer> Map(int fd, size_t data_pages, RingMode mode = RingMode::kReadWrite,
                                bool backward = false) {
    Result<RingBuffer> rb = RingBuffer::Map(b(), fd, data_pages, mode, backward);
    EXPECT_OK(rb);
    if (!rb.ok()) return std::nullopt;
    return std::move(*rb);
  }
  // Every record in [tail, head), parsed with `attr`'s layout.
  std::vector<Rec> Records(RingBuffer& rb, const perf_event_attr& attr, bool consume = false) {
    std::vector<Rec> out;
    rb.Begin();
    while (std::optional<RawRecord> raw = rb.Next()) {
      Result<Record> r = ParseRecord(SampleLayout::FromAttr(attr), raw->bytes);
      EXPECT_OK(r);
      if (r.ok()) out.push_back({std::move(*r), raw->position});
    }
    EXPECT_FALSE(rb.error().has_value()) << *rb.error();
    if (consume) rb.Consume();
    return out;
  }
  static std::vector<uint32_t> Types(const std::vector<Rec>& recs) {
    std::vector<uint32_t> t;
    for (const Rec& r : recs) t.push_back(r.r.header.type);
    return t;
  }
  static size_t CountType(const std::vector<Rec>& recs, uint32_t type) {
    size_t n = 0;
    for (const Rec& r : recs) n += r.r.header.type == type;
    return n;
  }
  bool PollIn(int fd) {
    pollfd p{fd, POLLIN, 0};
    Result<int> r = b().Poll({&p, 1}, 0);
    return r.ok() && *r == 1 && (p.revents & POLLIN);
  }
};

// --- perf_event_open validation ---

TEST_F(MockBackendTest, OpenErrnos) {
  const perf_event_attr pf = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  EXPECT_THAT(Open(pf, -1, -1), FailsWithErrno(EINVAL)) << "pid -1 and cpu -1";
  EXPECT_THAT(Open(pf, 0, 2), FailsWithErrno(EINVAL)) << "cpu >= nr_cpu_ids (2)";
  EXPECT_THAT(Open(pf, -1, 1000), FailsWithErrno(EINVAL));
  EXPECT_THAT(Open(pf, 0, -2), FailsWithErrno(EINVAL));
  EXPECT_THAT(Open(pf, 99999), FailsWithErrno(ESRCH));
  EXPECT_THAT(Open(MakeAttr(100, 0)), FailsWithErrno(ENOENT)) << "no PMU of that type";
  EXPECT_THAT(Open(MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES)), FailsWithErrno(ENOENT))
      << "no hardware PMU on this machine";
  EXPECT_THAT(Open(SoftwareAttr(PERF_COUNT_SW_MAX)), FailsWithErrno(ENOENT)) << "perf_swevent_init()";
  EXPECT_THAT(Open(pf, 0, -1, -1, 1 << 4), FailsWithErrno(EINVAL)) << "unknown flag";
  perf_event_attr a = pf;
  a.sample_type = uint64_t{1} << 62;
  EXPECT_THAT(Open(a), FailsWithErrno(EINVAL));
  a = pf;
  a.read_format = uint64_t{1} << 10;
  EXPECT_THAT(Open(a), FailsWithErrno(EINVAL));
  a = pf;
  a.freq = 1;
  a.sample_freq = 200000;
  EXPECT_THAT(Open(a), FailsWithErrno(EINVAL)) << "sample_freq > perf_event_max_sample_rate";
  a = pf;
  a.sample_type = PERF_SAMPLE_CALLCHAIN;
  a.sample_max_stack = 200;
  EXPECT_THAT(Open(a), FailsWithErrno(EOVERFLOW)) << "get_callchain_buffers()";
  a = Sampler(PERF_COUNT_SW_PAGE_FAULTS, PERF_SAMPLE_BRANCH_STACK);
  a.branch_sample_type = PERF_SAMPLE_BRANCH_ANY;
  EXPECT_THAT(Open(a), FailsWithErrno(EOPNOTSUPP)) << "no branch sampling for software events";
  a = Sampler(PERF_COUNT_SW_PAGE_FAULTS, PERF_SAMPLE_READ);
  a.inherit = 1;
  EXPECT_THAT(Open(a), FailsWithErrno(EINVAL)) << "inherit + PERF_SAMPLE_READ without TID";
  a.sample_type |= PERF_SAMPLE_TID;
  EXPECT_OK(Open(a));
  a = pf;
  a.use_clockid = 1;
  a.clockid = 12345;
  EXPECT_THAT(Open(a), FailsWithErrno(EINVAL));
  a = pf;
  a.write_backward = 1;
  EXPECT_OK(Open(a));
}

TEST_F(MockBackendTest, AttrSizeE2bigWritesBackTheKernelSize) {
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.size = 32;
  Result<int> r = b().PerfEventOpen(&a, 0, -1, -1, 0);
  EXPECT_THAT(r, FailsWithErrno(E2BIG));
  EXPECT_EQ(a.size, 136u) << "the profile's attr_size (Linux 6.18)";
  EXPECT_THAT(r.call(), HasSubstr("perf_event_open("));
  EXPECT_THAT(r.call(), HasSubstr("size=32")) << "the call as made, not the size written back";
  a.size = 0;
  EXPECT_THAT(b().PerfEventOpen(&a, 0, -1, -1, 0), Succeeds()) << "0 means PERF_ATTR_SIZE_VER0";
}

TEST_F(MockBackendTest, GroupFdMustBeALeaderOnTheSameContext) {
  const int fd = MustOpen(SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS));
  const int memfd = ::memfd_create("not-perf", MFD_CLOEXEC);
  const perf_event_attr m = SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK);
  EXPECT_THAT(Open(m, 0, -1, memfd), FailsWithErrno(EBADF)) << "a real fd, not a perf event";
  EXPECT_THAT(Open(m, 0, -1, 9999), FailsWithErrno(EBADF));
  ::close(memfd);
  const int member = MustOpen(m, 0, -1, fd);
  EXPECT_THAT(Open(m, 0, -1, member), FailsWithErrno(EINVAL)) << "a member cannot lead";
  EXPECT_THAT(Open(m, 0, 0, fd), FailsWithErrno(EINVAL)) << "another CPU";
  EXPECT_THAT(Open(m, -1, 0, fd), FailsWithErrno(EINVAL)) << "the CPU context, not the task's";
  perf_event_attr inh = m;
  inh.inherit = 1;
  EXPECT_THAT(Open(inh, 0, -1, fd), FailsWithErrno(EINVAL)) << "inherit differs";
  perf_event_attr pinned = m;
  pinned.pinned = 1;
  EXPECT_THAT(Open(pinned, 0, -1, fd), FailsWithErrno(EINVAL));
  EXPECT_THAT(Open(m, 0, -1, fd, PERF_FLAG_FD_NO_GROUP | PERF_FLAG_FD_CLOEXEC), Succeeds()) << "NO_GROUP ignores the leader";
}

TEST_F(MockBackendTest, FdsAreRealMemfds) {
  const int a = MustOpen(SoftwareAttr(PERF_COUNT_SW_DUMMY));
  Result<int> plain = Open(SoftwareAttr(PERF_COUNT_SW_DUMMY), 0, -1, -1, 0);
  ASSERT_OK(plain);
  EXPECT_NE(a, *plain);
  EXPECT_THAT(b().Fcntl(a, F_GETFD, 0), SucceedsWith(FD_CLOEXEC));
  EXPECT_THAT(b().Fcntl(*plain, F_GETFD, 0), SucceedsWith(0));
  EXPECT_OK(b().Close(a));
  EXPECT_THAT(b().Fcntl(a, F_GETFD, 0), FailsWithErrno(EBADF));
  EXPECT_THAT(b().Ioctl(a, PERF_EVENT_IOC_ENABLE, 0), FailsWithErrno(EBADF));
  EXPECT_THAT(b().Close(a), FailsWithErrno(EBADF));
}

// --- counting and read(2) ---

TEST_F(MockBackendTest, SoftwareCountsAreExact) {
  perf_event_attr pf = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  const int faults = MustOpen(pf);
  const int minor = MustOpen(SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN));
  const int major = MustOpen(SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS_MAJ));
  const int task_clock = MustOpen(SoftwareAttr(PERF_COUNT_SW_TASK_CLOCK));
  const int switches = MustOpen(SoftwareAttr(PERF_COUNT_SW_CONTEXT_SWITCHES));
  const int dummy = MustOpen(SoftwareAttr(PERF_COUNT_SW_DUMMY));
  pf.exclude_user = 1;
  const int kernel_faults = MustOpen(pf);
  Run(Workload::TouchPages(10));
  EXPECT_EQ(Count(faults), 0u) << "disabled events count nothing";
  for (int fd : {faults, minor, major, task_clock, switches, dummy, kernel_faults}) Enable(fd);
  Run(Workload::TouchPages(10, 5us));
  Run(Workload::Spin(2ms));
  Run(Workload::Sleep(3, 1ms));
  EXPECT_EQ(Count(faults), 10u);
  EXPECT_EQ(Count(minor), 10u);
  EXPECT_EQ(Count(major), 0u);
  EXPECT_EQ(Count(task_clock), 10 * 5000u + 2000000u) << "running time only: sleeps do not count";
  EXPECT_EQ(Count(switches), 3u);
  EXPECT_EQ(Count(dummy), 0u);
  EXPECT_EQ(Count(kernel_faults), 0u) << "user faults, exclude_user";
  EXPECT_OK(b().Ioctl(faults, PERF_EVENT_IOC_RESET, 0));
  EXPECT_EQ(Count(faults), 0u);
}

TEST_F(MockBackendTest, ReadFormatTimesAndGroups) {
  perf_event_attr lead = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  lead.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED |
                     PERF_FORMAT_TOTAL_TIME_RUNNING;
  const int leader = MustOpen(lead);
  perf_event_attr mem = SoftwareAttr(PERF_COUNT_SW_TASK_CLOCK);
  mem.read_format = lead.read_format;
  mem.disabled = 0;
  const int member = MustOpen(mem, 0, -1, leader);
  Run(Workload::Spin(1ms));
  uint64_t buf[16] = {};
  ASSERT_THAT(b().Read(leader, buf, 8 + 16 + 2 * 16 - 1), FailsWithErrno(ENOSPC));
  ASSERT_THAT(b().Read(leader, buf, sizeof buf), SucceedsWith(8u + 16 + 2 * 16));
  EXPECT_EQ(buf[0], 2u) << "nr";
  EXPECT_EQ(buf[1], 0u) << "the leader was never enabled";
  EXPECT_EQ(buf[5], 0u) << "a member does not run while its leader is disabled";
  Enable(leader);
  Run(Workload::TouchPages(4, 10us));
  ASSERT_THAT(b().Read(member, buf, sizeof buf), SucceedsWith(56u));
  EXPECT_EQ(buf[0], 2u);
  EXPECT_EQ(buf[1], 40000u) << "time_enabled of the leader";
  EXPECT_EQ(buf[2], 40000u) << "time_running";
  EXPECT_EQ(buf[3], 4u) << "leader value first";
  EXPECT_EQ(buf[4], Id(leader));
  EXPECT_EQ(buf[5], 40000u) << "the member's task-clock";
  EXPECT_EQ(buf[6], Id(member));
}

TEST_F(MockBackendTest, PrctlEnablesAndDisablesTheTasksEvents) {
  const int fd = MustOpen(SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS));  // disabled = 1
  EXPECT_THAT(b().Prctl(PR_TASK_PERF_EVENTS_ENABLE), SucceedsWith(0));
  Run(Workload::TouchPages(3));
  EXPECT_EQ(Count(fd), 3u) << "prctl enables disabled=1 events too";
  EXPECT_THAT(b().Prctl(PR_TASK_PERF_EVENTS_DISABLE), SucceedsWith(0));
  Run(Workload::TouchPages(3));
  EXPECT_EQ(Count(fd), 3u);
  EXPECT_THAT(b().Prctl(12345), FailsWithErrno(EINVAL));
}

// --- ioctls ---

TEST_F(MockBackendTest, IoctlErrnos) {
  const int counter = MustOpen(SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS));
  const int sampler = MustOpen(Sampler(PERF_COUNT_SW_PAGE_FAULTS, PERF_SAMPLE_IP));
  uint64_t v = 0;
  const auto ptr = reinterpret_cast<uintptr_t>(&v);
  EXPECT_THAT(b().Ioctl(sampler, PERF_EVENT_IOC_PERIOD, ptr), FailsWithErrno(EINVAL)) << "period 0";
  EXPECT_THAT(b().Ioctl(sampler, PERF_EVENT_IOC_PERIOD, 0), FailsWithErrno(EFAULT));
  v = 5;
  EXPECT_THAT(b().Ioctl(sampler, PERF_EVENT_IOC_PERIOD, ptr), SucceedsWith(0));
  EXPECT_THAT(b().Ioctl(counter, PERF_EVENT_IOC_PERIOD, ptr), FailsWithErrno(EINVAL)) << "not sampling";
  v = uint64_t{1} << 63;
  EXPECT_THAT(b().Ioctl(sampler, PERF_EVENT_IOC_PERIOD, ptr), FailsWithErrno(EINVAL));
  EXPECT_THAT(b().Ioctl(sampler, PERF_EVENT_IOC_ID, ptr), SucceedsWith(0));
  EXPECT_GT(v, 0u);
  EXPECT_NE(Id(counter), Id(sampler));
  EXPECT_THAT(b().Ioctl(sampler, _IO('$', 99), 0), FailsWithErrno(ENOTTY));
  EXPECT_THAT(b().Ioctl(counter, PERF_EVENT_IOC_REFRESH, 1), FailsWithErrno(EINVAL)) << "not sampling";
  EXPECT_THAT(b().Ioctl(sampler, PERF_EVENT_IOC_SET_FILTER, reinterpret_cast<uintptr_t>("x")),
              FailsWithErrno(EINVAL));
  EXPECT_THAT(b().Ioctl(sampler, PERF_EVENT_IOC_PAUSE_OUTPUT, 1), FailsWithErrno(EINVAL)) << "no buffer";
  EXPECT_THAT(b().Ioctl(sampler, PERF_EVENT_IOC_SET_OUTPUT, sampler), FailsWithErrno(EINVAL)) << "itself";
  EXPECT_THAT(b().Ioctl(sampler, PERF_EVENT_IOC_SET_OUTPUT, 0), FailsWithErrno(EBADF)) << "stdin";
  EXPECT_THAT(b().Ioctl(sampler, PERF_EVENT_IOC_SET_OUTPUT, 0xffffffffu), FailsWithErrno(EBADF))
      << "a 32-bit -1 is fd 0xffffffff, not 'no output'";
  EXPECT_THAT(b().Ioctl(sampler, PERF_EVENT_IOC_SET_OUTPUT, ~uintptr_t{0}), SucceedsWith(0));
  const int memfd = ::memfd_create("not-perf", MFD_CLOEXEC);
  EXPECT_THAT(b().Ioctl(memfd, PERF_EVENT_IOC_ENABLE, 0), FailsWithErrno(ENOTTY));
  ::close(memfd);
}

// --- mmap rules and the metadata page ---

TEST_F(MockBackendTest, MmapRules) {
  const perf_event_attr a = Sampler(PERF_COUNT_SW_PAGE_FAULTS, PERF_SAMPLE_IP);
  for (size_t pages : {1, 2, 3, 5, 9, 17}) {
    const int fd = MustOpen(a);
    Result<void*> m = b().Mmap(pages * kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    EXPECT_THAT(m, Succeeds()) << pages;
    if (m.ok()) EXPECT_OK(b().Munmap(*m, pages * kPage));
  }
  for (size_t pages : {4, 6, 7, 10}) {
    const int fd = MustOpen(a);
    EXPECT_THAT(b().Mmap(pages * kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), FailsWithErrno(EINVAL)) << pages;
  }
  const int fd = MustOpen(a);
  EXPECT_THAT(b().Mmap(0, PROT_READ, MAP_SHARED, fd, 0), FailsWithErrno(EINVAL));
  EXPECT_THAT(b().Mmap(3 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0), FailsWithErrno(EINVAL));
  EXPECT_THAT(b().Mmap(3 * kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd, kPage), FailsWithErrno(EINVAL))
      << "no AUX area";
  EXPECT_THAT(b().Mmap(3 * kPage, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0), FailsWithErrno(EPERM));
  Result<void*> small = b().Mmap(100, PROT_READ, MAP_SHARED, fd, 0);
  EXPECT_THAT(small, Succeeds()) << "100 bytes is one page: the metadata page alone";
  EXPECT_THAT(b().Mmap(3 * kPage, PROT_READ, MAP_SHARED, fd, 0), FailsWithErrno(EINVAL))
      << "a second mapping must have the first one's size";
  EXPECT_OK(b().Munmap(*small, 100));
  EXPECT_THAT(b().Mmap(3 * kPage, PROT_READ, MAP_SHARED, fd, 0), Succeeds()) << "after the last munmap, any valid size";
  perf_event_attr inh = a;
  inh.inherit = 1;
  const int inherited = MustOpen(inh);
  EXPECT_THAT(b().Mmap(3 * kPage, PROT_READ, MAP_SHARED, inherited, 0), FailsWithErrno(EINVAL))
      << "inherited per-task events cannot be mapped";
  EXPECT_THAT(b().Mmap(3 * kPage, PROT_READ, MAP_SHARED, MustOpen(inh, 0, 0), 0), Succeeds()) << "per-CPU they can";
}

TEST_F(MockBackendTest, MappingsShareOneBufferInTheMemfd) {
  const perf_event_attr a = Sampler(PERF_COUNT_SW_PAGE_FAULTS, PERF_SAMPLE_TID);
  const int fd = MustOpen(a);
  std::optional<RingBuffer> first = Map(fd, 2);
  std::optional<RingBuffer> second = Map(fd, 2, RingMode::kOverwrite);
  ASSERT_TRUE(first && second);
  EXPECT_NE(&first->page(), &second->page());
  EXPECT_EQ(first->page().data_size, 2 * kPage);
  Touch(fd, 3);
  EXPECT_EQ(first->ReadHead(), 48u);
  EXPECT_EQ(second->ReadHead(), 48u);
  first->WriteTail(48);
  EXPECT_EQ(second->ReadTail(), 48u) << "genuine shared memory";
  EXPECT_GT(first->page().time_enabled, 0u) << "the page's times follow the writes";
}

TEST_F(MockBackendTest, MetadataPageOnlyBufferWritesNothing) {
  const int fd = MustOpen(Sampler(PERF_COUNT_SW_PAGE_FAULTS, PERF_SAMPLE_TID));
  std::optional<RingBuffer> rb = Map(fd, 0);
  ASSERT_TRUE(rb);
  EXPECT_EQ(rb->page().data_size, 0u);
  Touch(fd, 2);
  EXPECT_EQ(rb->ReadHead(), 0u);
  EXPECT_THAT(b().Ioctl(fd, PERF_EVENT_IOC_PAUSE_OUTPUT, 1), FailsWithErrno(EINVAL));
  EXPECT_FALSE(PollIn(fd));
}

TEST_F(MockBackendTest, ClosedEventLivesWhileMapped) {
  const perf_event_attr a = Sampler(PERF_COUNT_SW_PAGE_FAULTS, PERF_SAMPLE_TID);
  const int fd = MustOpen(a);
  Result<void*> m = b().Mmap(2 * kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_OK(m);
  Enable(fd);
  EXPECT_OK(b().Close(fd));
  Run(Workload::TouchPages(4));
  const auto* pg = static_cast<const perf_event_mmap_page*>(*m);
  EXPECT_EQ(pg->data_head, 64u) << "the event keeps sampling into the mapping";
  EXPECT_OK(b().Munmap(*m, 2 * kPage));
  Run(Workload::TouchPages(4));  // nothing left to write to
}

// --- the writer: LOST, overwrite, backward ---

TEST_F(MockBackendTest, LostRecordCarriesTheExactCount) {
  const perf_event_attr a = Sampler(PERF_COUNT_SW_PAGE_FAULTS, PERF_SAMPLE_TID | PERF_SAMPLE_ID);
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 1);
  ASSERT_TRUE(rb);
  Touch(fd, 200);
  EXPECT_EQ(rb->ReadHead(), 170u * 24) << "170 samples of 24 bytes fit in 4096 - 1";
  std::vector<Rec> full = Records(*rb, a, /*consume=*/true);
  EXPECT_EQ(full.size(), 170u);
  Touch(fd, 3);
  std::vector<Rec> after = Records(*rb, a);
  ASSERT_EQ(Types(after), (std::vector<uint32_t>{PERF_RECORD_LOST, PERF_RECORD_SAMPLE, PERF_RECORD_SAMPLE,
                                                 PERF_RECORD_SAMPLE}));
  const auto& lost = std::get<LostRecord>(after[0].r.body);
  EXPECT_EQ(lost.lost, 30u);
  EXPECT_EQ(lost.id, Id(fd));
  EXPECT_EQ(after[0].r.header.size, 24u);
}

TEST_F(MockBackendTest, LostRecordHasTheSampleIdTrailer) {
  perf_event_attr a = Sampler(PERF_COUNT_SW_PAGE_FAULTS, PERF_SAMPLE_TID | PERF_SAMPLE_TIME);
  a.sample_id_all = 1;
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 1);
  ASSERT_TRUE(rb);
  Touch(fd, 300);
  Records(*rb, a, true);
  Touch(fd, 1);
  std::vector<Rec> after = Records(*rb, a);
  ASSERT_GE(after.size(), 2u);
  EXPECT_EQ(after[0].r.header.size, 40u) << "header, id, lost, then pid/tid and time";
  ASSERT_TRUE(after[0].r.sample_id);
  EXPECT_EQ(after[0].r.sample_id->pid, static_cast<uint32_t>(kMockPid));
  EXPECT_EQ(std::get<LostRecord>(after[0].r.body).lost, 130u) << "24-byte samples: 170 of 300 fit";
}

TEST_F(MockBackendTest, OverwriteModeIgnoresTheTail) {
  const perf_event_attr a = Sampler(PERF_COUNT_SW_PAGE_FAULTS, PERF_SAMPLE_TID | PERF_SAMPLE_ID);
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 1, RingMode::kOverwrite);
  ASSERT_TRUE(rb);
  Touch(fd, 200);
  EXPECT_EQ(rb->ReadHead(), 200u * 24);
  EXPECT_EQ(rb->ReadTail(), 0u);
}

TEST_F(MockBackendTest, WriteBackwardLayout) {
  perf_event_attr a = Sampler(PERF_COUNT_SW_PAGE_FAULTS, PERF_SAMPLE_TID | PERF_SAMPLE_ADDR);
  a.write_backward = 1;
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 1, RingMode::kOverwrite, /*backward=*/true);
  ASSERT_TRUE(rb);
  Enable(fd);
  Result<WorkloadResult> w = b().RunWorkload(Workload::TouchPages(3));
  ASSERT_OK(w);
  Disable(fd);
  EXPECT_EQ(static_cast<int64_t>(rb->ReadHead()), -72) << "three 24-byte records below 0";
  std::vector<Rec> recs = Records(*rb, a);
  ASSERT_EQ(recs.size(), 3u) << "stops at the never-written zero header";
  std::vector<uint64_t> addrs;
  for (const Rec& r : recs) addrs.push_back(*std::get<SampleRecord>(r.r.body).addr);
  EXPECT_THAT(addrs, ElementsAre(w->region_begin + 2 * kPage, w->region_begin + kPage, w->region_begin))
      << "newest first";
}

TEST_F(MockBackendTest, WriteBackwardWritableHonoursTheTail) {
  perf_event_attr a = Sampler(PERF_COUNT_SW_PAGE_FAULTS, PERF_SAMPLE_TID);
  a.write_backward = 1;
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 1, RingMode::kReadWrite);
  ASSERT_TRUE(rb);
  Touch(fd, 300);
  EXPECT_EQ(static_cast<int64_t>(rb->ReadHead()), -4080);
}

TEST_F(MockBackendTest, PauseOutputCountsLostRecords) {
  perf_event_attr a = Sampler(PERF_COUNT_SW_PAGE_FAULTS, PERF_SAMPLE_TID);
  a.read_format = PERF_FORMAT_LOST;
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 1);
  ASSERT_TRUE(rb);
  Touch(fd, 2);
  EXPECT_THAT(b().Ioctl(fd, PERF_EVENT_IOC_PAUSE_OUTPUT, 1), SucceedsWith(0));
  Touch(fd, 5);
  EXPECT_THAT(b().Ioctl(fd, PERF_EVENT_IOC_PAUSE_OUTPUT, 0), SucceedsWith(0));
  Touch(fd, 1);
  std::vector<Rec> recs = Records(*rb, a);
  ASSERT_EQ(Types(recs), (std::vector<uint32_t>{PERF_RECORD_SAMPLE, PERF_RECORD_SAMPLE, PERF_RECORD_LOST,
                                                PERF_RECORD_SAMPLE}));
  EXPECT_EQ(std::get<LostRecord>(recs[2].r.body).lost, 5u);
  uint64_t v[2];
  ASSERT_OK(b().Read(fd, v, sizeof v));
  EXPECT_EQ(v[0], 8u) << "the event counts on while paused";
  EXPECT_EQ(v[1], 5u) << "PERF_FORMAT_LOST";
}

// --- sampling ---

TEST_F(MockBackendTest, SamplePeriodQuirkOfSoftwareEvents) {
  perf_event_attr with = Sampler(PERF_COUNT_SW_PAGE_FAULTS, PERF_SAMPLE_TID | PERF_SAMPLE_PERIOD, 4);
  perf_event_attr without = Sampler(PERF_COUNT_SW_PAGE_FAULTS, PERF_SAMPLE_TID, 4);
  const int fa = MustOpen(with), fb = MustOpen(without);
  std::optional<RingBuffer> ra = Map(fa, 1), rbuf = Map(fb, 1);
  ASSERT_TRUE(ra && rbuf);
  Enable(fa);
  Enable(fb);
  Run(Workload::TouchPages(8));
  std::vector<Rec> a = Records(*ra, with);
  ASSERT_EQ(a.size(), 8u) << "PERF_SAMPLE_PERIOD: every fault is a sample (perf_swevent_event())";
  EXPECT_EQ(*std::get<SampleRecord>(a[0].r.body).period, 1u);
  EXPECT_EQ(Records(*rbuf, without).size(), 2u) << "every 4th fault";
}

TEST_F(MockBackendTest, SampleFields) {
  perf_event_attr a = Sampler(PERF_COUNT_SW_PAGE_FAULTS,
                              PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                                  PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |
                                  PERF_SAMPLE_PERIOD | PERF_SAMPLE_READ | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW);
  a.read_format = PERF_FORMAT_ID;
  const int fd = MustOpen(a);
  const uint64_t id = Id(fd);
  std::optional<RingBuffer> rb = Map(fd, 4);
  ASSERT_TRUE(rb);
  Enable(fd);
  Result<WorkloadResult> w = b().RunWorkload(Workload::TouchPages(2, 10us));
  ASSERT_OK(w);
  std::vector<Rec> recs = Records(*rb, a);
  ASSERT_EQ(recs.size(), 2u);
  const SampleRecord& s = std::get<SampleRecord>(recs[1].r.body);
  EXPECT_EQ(recs[1].r.header.misc, PERF_RECORD_MISC_USER);
  EXPECT_EQ(*s.identifier, id);
  EXPECT_NE(*s.ip, 0u);
  EXPECT_EQ(*s.pid, static_cast<uint32_t>(kMockPid));
  EXPECT_EQ(*s.time, kMockStartTimeNs + 10000 + 1000) << "second fault: one 10 us step, 1 us into the next";
  EXPECT_EQ(*s.addr, w->region_begin + kPage);
  EXPECT_EQ(*s.id, id);
  EXPECT_EQ(*s.stream_id, id);
  EXPECT_EQ(*s.cpu, 0u);
  EXPECT_EQ(*s.period, 1u);
  EXPECT_EQ(s.read->counters.at(0).value, 2u) << "counted up to and including this fault";
  EXPECT_EQ(s.read->counters.at(0).id, id);
  ASSERT_GE(s.callchain->size(), 2u);
  EXPECT_EQ((*s.callchain)[0], static_cast<uint64_t>(PERF_CONTEXT_USER)) << "user regs: no kernel part";
  EXPECT_EQ((*s.callchain)[1], *s.ip);
  EXPECT_EQ(s.raw->size(), 4u) << "software events: {size = 4, data = 0}";
}

TEST_F(MockBackendTest, ContextSwitchSamplesAreKernelMode) {
  const perf_event_attr a = Sampler(PERF_COUNT_SW_CONTEXT_SWITCHES, PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN);
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 4);
  ASSERT_TRUE(rb);
  Enable(fd);
  Run(Workload::Sleep(2, 1ms));
  std::vector<Rec> recs = Records(*rb, a);
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].r.header.misc, PERF_RECORD_MISC_KERNEL);
  const auto& chain = *std::get<SampleRecord>(recs[0].r.body).callchain;
  EXPECT_EQ(chain.front(), static_cast<uint64_t>(PERF_CONTEXT_KERNEL));
  EXPECT_NE(std::find(chain.begin(), chain.end(), static_cast<uint64_t>(PERF_CONTEXT_USER)), chain.end());
}

TEST_F(MockBackendTest, ClockSamplingUsesTheHrtimerMinimum) {
  const perf_event_attr a = Sampler(PERF_COUNT_SW_TASK_CLOCK, PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD, 1000);
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 64);
  ASSERT_TRUE(rb);
  Enable(fd);
  Run(Workload::Spin(1ms));
  std::vector<Rec> recs = Records(*rb, a);
  // First firing after period_left = 1 us, then every max(10 us, 1 us).
  ASSERT_EQ(recs.size(), 100u);
  EXPECT_EQ(*std::get<SampleRecord>(recs[0].r.body).time, kMockStartTimeNs + 1000);
  EXPECT_EQ(*std::get<SampleRecord>(recs[1].r.body).time, kMockStartTimeNs + 11000);
  EXPECT_EQ(*std::get<SampleRecord>(recs[1].r.body).period, 1000u) << "hw.last_period, not the hrtimer's";
  EXPECT_EQ(Count(fd), 1000000u);
}

TEST_F(MockBackendTest, ClockFrequencyIsAFixedPeriod) {
  perf_event_attr a = Sampler(PERF_COUNT_SW_CPU_CLOCK, PERF_SAMPLE_PERIOD);
  a.freq = 1;
  a.sample_freq = 1000;
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 4);
  ASSERT_TRUE(rb);
  Enable(fd);
  Run(Workload::Spin(5500us));
  std::vector<Rec> recs = Records(*rb, a);
  ASSERT_EQ(recs.size(), 5u);
  EXPECT_EQ(*std::get<SampleRecord>(recs[4].r.body).period, 1000000u);
}

TEST_F(MockBackendTest, SoftwareFrequencyModeRampsUp) {
  perf_event_attr a = Sampler(PERF_COUNT_SW_PAGE_FAULTS, PERF_SAMPLE_PERIOD);
  a.freq = 1;
  a.sample_freq = 1000;
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 4);
  ASSERT_TRUE(rb);
  Enable(fd);
  Run(Workload::TouchPages(200, 100us));  // 10 kHz of faults for a 1 kHz target
  std::vector<uint64_t> periods;
  for (const Rec& r : Records(*rb, a)) periods.push_back(*std::get<SampleRecord>(r.r.body).period);
  ASSERT_GE(periods.size(), 4u);
  EXPECT_EQ(periods[0], 1u) << "freq mode starts at period 1 (perf_event_alloc())";
  EXPECT_GE(*std::max_element(periods.begin(), periods.end()), 5u) << "perf_adjust_period() raises it";
  EXPECT_LT(periods.size(), 100u) << "far fewer samples than faults";
}

TEST_F(MockBackendTest, ThrottleAndUnthrottle) {
  MockProfile p = profile_;
  p.max_sample_rate = 1000;  // 4 samples per 4 ms tick at HZ=250
  Remake(p);
  const perf_event_attr a = Sampler(PERF_COUNT_SW_TASK_CLOCK, PERF_SAMPLE_TIME, 100000);  // 10 per tick
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 16);
  ASSERT_TRUE(rb);
  Enable(fd);
  Run(Workload::Spin(20ms));
  Disable(fd);
  std::vector<Rec> recs = Records(*rb, a);
  const size_t throttles = CountType(recs, PERF_RECORD_THROTTLE);
  const size_t unthrottles = CountType(recs, PERF_RECORD_UNTHROTTLE);
  EXPECT_GE(throttles, 4u);
  EXPECT_LE(throttles, unthrottles + 1);
  EXPECT_GE(throttles, unthrottles);
  // Each THROTTLE comes right before the sample that tripped it, the fourth of its tick.
  for (size_t i = 0; i + 1 < recs.size(); ++i) {
    if (recs[i].r.header.type != PERF_RECORD_THROTTLE) continue;
    EXPECT_EQ(recs[i + 1].r.header.type, uint32_t{PERF_RECORD_SAMPLE});
    const auto& t = std::get<ThrottleRecord>(recs[i].r.body);
    EXPECT_EQ(t.id, Id(fd));
    EXPECT_EQ(t.time, *std::get<SampleRecord>(recs[i + 1].r.body).time);
  }
  EXPECT_LT(Count(fd), 20000000u) << "a throttled clock stops counting until the tick";
}

TEST_F(MockBackendTest, NoThrottleForSingleSoftwareOverflows) {
  MockProfile p = profile_;
  p.max_sample_rate = 1000;
  Remake(p);
  const perf_event_attr a = Sampler(PERF_COUNT_SW_PAGE_FAULTS, PERF_SAMPLE_TID);
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 64);
  ASSERT_TRUE(rb);
  Touch(fd, 1000);
  std::vector<Rec> recs = Records(*rb, a);
  EXPECT_EQ(recs.size(), 1000u) << "perf_swevent_overflow(): the first overflow of a call never throttles";
  EXPECT_EQ(CountType(recs, PERF_RECORD_THROTTLE), 0u);
}

// --- wakeups and poll ---

TEST_F(MockBackendTest, PollWithWakeupEventsClearsOnRead) {
  perf_event_attr a = Sampler(PERF_COUNT_SW_PAGE_FAULTS, PERF_SAMPLE_TID);
  a.wakeup_events = 3;
  const int fd = MustOpen(a);
  pollfd p{fd, POLLIN, 0};
  ASSERT_THAT(b().Poll({&p, 1}, 1000), SucceedsWith(1));
  EXPECT_EQ(p.revents, POLLHUP) << "no buffer yet";
  std::optional<RingBuffer> rb = Map(fd, 8);
  ASSERT_TRUE(rb);
  std::vector<bool> ready;
  for (int i = 0; i < 7; ++i) {
    Touch(fd, 1);
    ready.push_back(PollIn(fd));
  }
  EXPECT_EQ(ready, (std::vector<bool>{false, false, true, false, false, true, false}));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(b().Poll({&p, 1}, 5000), SucceedsWith(0)) << "nothing runs concurrently: no wait";
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  // Any poll takes the state, whatever it asked for.
  Touch(fd, 3);
  p = {fd, POLLOUT, 0};
  EXPECT_THAT(b().Poll({&p, 1}, 0), SucceedsWith(0));
  EXPECT_FALSE(PollIn(fd));
  Touch(fd, 3);
  p = {fd, POLLIN | POLLRDNORM, 0};
  EXPECT_THAT(b().Poll({&p, 1}, 0), SucceedsWith(1));
  EXPECT_EQ(p.revents, POLLIN | POLLRDNORM);
}

TEST_F(MockBackendTest, DefaultWatermarkIsHalfTheBuffer) {
  const perf_event_attr a = Sampler(PERF_COUNT_SW_PAGE_FAULTS, PERF_SAMPLE_TID);  // wakeup_events 0
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 1);
  ASSERT_TRUE(rb);
  int first = 0;
  for (int i = 1; i <= 200 && first == 0; ++i) {
    Touch(fd, 1);
    if (PollIn(fd)) first = i;
  }
  EXPECT_EQ(first, 129) << "head 2064 > 2048";
}

TEST_F(MockBackendTest, WatermarkBytes) {
  perf_event_attr a = Sampler(PERF_COUNT_SW_PAGE_FAULTS, PERF_SAMPLE_TID);
  a.watermark = 1;
  a.wakeup_watermark = 100;
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 1);
  ASSERT_TRUE(rb);
  std::vector<uint64_t> heads;
  for (int i = 0; i < 30; ++i) {
    Touch(fd, 1);
    if (PollIn(fd)) heads.push_back(rb->ReadHead());
  }
  EXPECT_EQ(heads, (std::vector<uint64_t>{112, 208, 304, 416}));
}

// --- SET_OUTPUT ---

TEST_F(MockBackendTest, SetOutputRules) {
  const perf_event_attr a = Sampler(PERF_COUNT_SW_PAGE_FAULTS, PERF_SAMPLE_TID | PERF_SAMPLE_ID);
  const int target = MustOpen(a), other = MustOpen(a), mapped = MustOpen(a);
  EXPECT_THAT(b().Ioctl(other, PERF_EVENT_IOC_SET_OUTPUT, target), FailsWithErrno(EINVAL)) << "target unmapped";
  std::optional<RingBuffer> rb = Map(target, 2);
  std::optional<RingBuffer> own = Map(mapped, 2);
  ASSERT_TRUE(rb && own);
  EXPECT_THAT(b().Ioctl(mapped, PERF_EVENT_IOC_SET_OUTPUT, target), FailsWithErrno(EINVAL)) << "has its own mmap";
  EXPECT_THAT(b().Ioctl(MustOpen(a, 0, 0), PERF_EVENT_IOC_SET_OUTPUT, target), FailsWithErrno(EINVAL))
      << "another CPU";
  perf_event_attr back = a;
  back.write_backward = 1;
  EXPECT_THAT(b().Ioctl(MustOpen(back), PERF_EVENT_IOC_SET_OUTPUT, target), FailsWithErrno(EINVAL));
  ASSERT_THAT(b().Ioctl(other, PERF_EVENT_IOC_SET_OUTPUT, target), SucceedsWith(0));
  EXPECT_THAT(b().Mmap(3 * kPage, PROT_READ | PROT_WRITE, MAP_SHARED, other, 0), FailsWithErrno(EBUSY))
      << "redirected: same size is EBUSY";
  EXPECT_THAT(b().Mmap(2 * kPage, PROT_READ | PROT_WRITE, MAP_SHARED, other, 0), FailsWithErrno(EINVAL))
      << "another size is EINVAL";
  Enable(target);
  Enable(other);
  Run(Workload::TouchPages(2));
  size_t from_other = 0;
  for (const Rec& r : Records(*rb, a, true)) from_other += *std::get<SampleRecord>(r.r.body).id == Id(other);
  EXPECT_EQ(from_other, 2u);
  // The poll state belongs to the buffer: either fd takes it.
  EXPECT_OK(rb->Unmap());
  pollfd p[2] = {{target, POLLIN, 0}, {other, POLLIN, 0}};
  ASSERT_THAT(b().Poll(p, 0), SucceedsWith(2));
  EXPECT_EQ(p[0].revents, POLLHUP) << "the last munmap detaches every event from the buffer";
  EXPECT_EQ(p[1].revents, POLLHUP);
}

// --- side-band records ---

TEST_F(MockBackendTest, SideBandRecords) {
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_DUMMY);
  a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |
                  PERF_SAMPLE_IDENTIFIER;
  a.sample_id_all = 1;
  a.comm = 1;  // FORK reaches comm-only events too (perf_event_task_match())
  perf_event_attr m2 = a;
  m2.comm = 0;
  m2.mmap = m2.mmap2 = 1;  // as perf sets them: mmap2 alone is not counted in nr_mmap_events
  const int comm = MustOpen(a), mmap2 = MustOpen(m2);
  std::optional<RingBuffer> rc = Map(comm, 4), rm = Map(mmap2, 4);
  ASSERT_TRUE(rc && rm);
  Enable(comm);
  Enable(mmap2);
  Run(Workload::SetComm("a-very-long-command-name"));
  Result<WorkloadResult> x = b().RunWorkload(Workload::MmapExec(2));
  Result<WorkloadResult> f = b().RunWorkload(Workload::Fork(1));
  ASSERT_OK(x);
  ASSERT_OK(f);
  std::vector<Rec> c = Records(*rc, a);
  ASSERT_EQ(Types(c), (std::vector<uint32_t>{PERF_RECORD_COMM, PERF_RECORD_FORK})) << "no EXIT without inherit";
  EXPECT_EQ(std::get<CommRecord>(c[0].r.body).comm, "a-very-long-com") << "TASK_COMM_LEN - 1";
  const auto& fork = std::get<TaskRecord>(c[1].r.body);
  EXPECT_EQ(fork.pid, static_cast<uint32_t>(f->children.at(0)));
  EXPECT_EQ(fork.ppid, static_cast<uint32_t>(kMockPid));
  EXPECT_EQ(c[1].r.sample_id->pid, static_cast<uint32_t>(kMockPid)) << "written from the parent";
  EXPECT_EQ(c[1].r.sample_id->stream_id, Id(comm));

  std::vector<Rec> m = Records(*rm, m2);
  ASSERT_EQ(Types(m), (std::vector<uint32_t>{PERF_RECORD_MMAP2, PERF_RECORD_FORK}));
  const auto& mm = std::get<Mmap2Record>(m[0].r.body);
  EXPECT_EQ(m[0].r.header.misc, PERF_RECORD_MISC_USER);
  EXPECT_EQ(mm.addr, x->region_begin);
  EXPECT_EQ(mm.len, 2 * kPage);
  EXPECT_EQ(mm.pgoff, x->region_begin) << "anonymous: vm_pgoff is the address";
  EXPECT_EQ(mm.prot, static_cast<uint32_t>(PROT_READ | PROT_EXEC));
  EXPECT_EQ(mm.flags, static_cast<uint32_t>(MAP_PRIVATE));
  EXPECT_EQ(mm.filename, "//anon");
}

TEST_F(MockBackendTest, ExitComesThroughInheritedEvents) {
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_DUMMY);
  a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID;
  a.sample_id_all = 1;
  a.task = 1;
  a.inherit = 1;
  const int fd = MustOpen(a, 0, 0);  // per-CPU: inherited per-task events cannot be mapped
  std::optional<RingBuffer> rb = Map(fd, 4);
  ASSERT_TRUE(rb);
  Enable(fd);
  Result<WorkloadResult> f = b().RunWorkload(Workload::Fork(2));
  ASSERT_OK(f);
  std::vector<Rec> recs = Records(*rb, a);
  ASSERT_EQ(Types(recs), (std::vector<uint32_t>{PERF_RECORD_FORK, PERF_RECORD_EXIT, PERF_RECORD_FORK,
                                                PERF_RECORD_EXIT}));
  const auto& exit = std::get<TaskRecord>(recs[1].r.body);
  const uint32_t child = static_cast<uint32_t>(f->children.at(0));
  EXPECT_EQ(exit.pid, child);
  EXPECT_EQ(exit.ppid, static_cast<uint32_t>(kMockPid));
  EXPECT_EQ(recs[1].r.sample_id->pid, child) << "written from the exiting child";
  EXPECT_EQ(recs[1].r.sample_id->id, Id(fd)) << "PERF_SAMPLE_ID: the parent's id";
  EXPECT_NE(recs[1].r.sample_id->stream_id, Id(fd)) << "STREAM_ID: the inherited copy's own id";
}

TEST_F(MockBackendTest, ContextSwitchRecords) {
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_DUMMY);
  a.context_switch = 1;
  a.sample_type = PERF_SAMPLE_TID;
  a.sample_id_all = 1;
  const int task = MustOpen(a);
  const int cpu = MustOpen(a, -1, 0);
  std::optional<RingBuffer> rt = Map(task, 4), rc = Map(cpu, 4);
  ASSERT_TRUE(rt && rc);
  Enable(task);
  Enable(cpu);
  Run(Workload::Sleep(1, 1ms));
  std::vector<Rec> t = Records(*rt, a);
  ASSERT_EQ(Types(t), (std::vector<uint32_t>{PERF_RECORD_SWITCH, PERF_RECORD_SWITCH}));
  EXPECT_EQ(t[0].r.header.misc, PERF_RECORD_MISC_SWITCH_OUT);
  EXPECT_EQ(t[1].r.header.misc, 0);
  std::vector<Rec> c = Records(*rc, a);
  EXPECT_EQ(Types(c), std::vector<uint32_t>(4, PERF_RECORD_SWITCH_CPU_WIDE)) << "task out, idle in, idle out, task in";
}

// --- determinism ---

TEST_F(MockBackendTest, SameCallsGiveByteIdenticalBuffers) {
  auto run = [&](Backend& be) {
    perf_event_attr a = Sampler(PERF_COUNT_SW_PAGE_FAULTS,
                                PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |
                                    PERF_SAMPLE_ID | PERF_SAMPLE_READ | PERF_SAMPLE_CALLCHAIN);
    a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID;
    a.sample_id_all = a.comm = a.mmap = a.task = 1;
    perf_event_attr clock = Sampler(PERF_COUNT_SW_CPU_CLOCK, PERF_SAMPLE_IP | PERF_SAMPLE_TIME, 50000);
    Result<int> fd = be.PerfEventOpen(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    Result<int> cfd = be.PerfEventOpen(&clock, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    EXPECT_OK(fd);
    EXPECT_OK(cfd);
    Result<void*> m = be.Mmap(3 * kPage, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
    EXPECT_OK(m);
    EXPECT_OK(be.Ioctl(*cfd, PERF_EVENT_IOC_SET_OUTPUT, static_cast<uintptr_t>(*fd)));
    EXPECT_OK(be.Ioctl(*fd, PERF_EVENT_IOC_ENABLE, 0));
    EXPECT_OK(be.Ioctl(*cfd, PERF_EVENT_IOC_ENABLE, 0));
    EXPECT_OK(be.RunWorkload(Workload::TouchPages(40, 3us)));
    EXPECT_OK(be.RunWorkload(Workload::SetComm("det")));
    EXPECT_OK(be.RunWorkload(Workload::Spin(300us)));
    EXPECT_OK(be.RunWorkload(Workload::MmapExec(1)));
    EXPECT_OK(be.RunWorkload(Workload::Fork(2)));
    EXPECT_OK(be.RunWorkload(Workload::Sleep(2, 100us)));
    const auto* bytes = static_cast<const std::byte*>(*m);
    std::vector<std::byte> copy(bytes + kPage, bytes + 3 * kPage);  // the data area
    const auto* pg = static_cast<const perf_event_mmap_page*>(*m);
    copy.resize(copy.size() + 8);
    std::memcpy(copy.data() + copy.size() - 8, const_cast<const __u64*>(&pg->data_head), 8);
    return copy;
  };
  std::unique_ptr<Backend> one = MakeMockBackend(profile_), two = MakeMockBackend(profile_);
  const std::vector<std::byte> a = run(*one), c = run(*two);
  EXPECT_EQ(a.size(), c.size());
  EXPECT_TRUE(a == c) << "the same calls on fresh backends give byte-identical buffers";
  uint64_t head;
  std::memcpy(&head, a.data() + a.size() - 8, 8);
  EXPECT_GT(head, 40u * 8) << "something was written";
}

TEST_F(MockBackendTest, MachineAndTask) {
  EXPECT_EQ(b().kind(), "mock");
  EXPECT_EQ(b().Machine().ncpus, 2);
  EXPECT_EQ(b().Machine().pmus.size(), 6u) << "breakpoint, msr, power, software, tracepoint, uprobe";
  EXPECT_EQ(b().CurrentTask().pid, kMockPid);
  EXPECT_EQ(b().CurrentTask().tid, kMockPid);
}

TEST_F(MockBackendTest, UnprivilegedRules) {
  MockProfile p = profile_;
  p.privileged = false;
  p.memlock_rlimit_kb = 64;
  Remake(p);
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  EXPECT_THAT(Open(a), FailsWithErrno(EACCES)) << "exclude_kernel=0 at paranoid 2";
  a.exclude_kernel = 1;
  EXPECT_THAT(Open(a, -1, 0), FailsWithErrno(EACCES)) << "CPU-wide at paranoid 2";
  const int fd = MustOpen(a);
  // perf_event_mlock_kb = 516 KiB x 2 CPUs = 258 pages; RLIMIT_MEMLOCK 16 pages beyond.
  EXPECT_THAT(b().Mmap((1 + 512) * kPage, PROT_READ, MAP_SHARED, fd, 0), FailsWithErrno(EPERM));
  EXPECT_OK(b().Mmap((1 + 256) * kPage, PROT_READ, MAP_SHARED, fd, 0));
}

}  // namespace
}  // namespace perftest
