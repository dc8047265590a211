// Unit tests of the model's read(2) rules: times of group members, the
// read_format size limit, lost-record accounting. Expected values checked on
// Linux 6.18 (the machine software-only.json models) with the same calls.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>

#include "harness/read_format.h"
#include "mocks/internal/mock_test_fixture.h"

namespace perftest {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kTimes = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;

class ReadModel : public MockTest {};

// core.c __perf_effective_state(): while the leader is OFF a member's state
// is the leader's, so __perf_update_times() gives it no enabled time.
TEST_F(ReadModel, MemberTimeEnabledStopsWhileTheLeaderIsOff) {
  perf_event_attr lead = SoftwareAttr(PERF_COUNT_SW_TASK_CLOCK);
  lead.read_format = kTimes;
  perf_event_attr mem = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  mem.read_format = kTimes;
  mem.disabled = 0;
  const int leader = MustOpen(lead);
  const int member = MustOpen(mem, 0, -1, leader);
  Run(Workload::Spin(1ms));
  EXPECT_EQ(Words(member), (std::vector<uint64_t>{0, 0, 0})) << "leader never enabled";
  Enable(leader);
  Run(Workload::Spin(2ms));
  Disable(leader);
  EXPECT_EQ(Words(member), (std::vector<uint64_t>{0, 2000000, 2000000}));
  Run(Workload::Spin(3ms));
  EXPECT_EQ(Words(member), (std::vector<uint64_t>{0, 2000000, 2000000})) << "frozen with the leader";
}

// core.c perf_event_validate_size() (6.7+): __perf_event_read_size() of the
// new member's, the leader's and every sibling's read_format with nr + 1
// entries must stay within 16 KiB, else perf_event_open() fails with E2BIG.
TEST_F(ReadModel, GroupReadFormatOver16KiBIsE2big) {
  perf_event_attr lead = SoftwareAttr(PERF_COUNT_SW_DUMMY);
  lead.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_LOST;  // 8 + nr * 24 bytes
  const int leader = MustOpen(lead);
  const perf_event_attr mem = SoftwareAttr(PERF_COUNT_SW_DUMMY);
  for (int i = 0; i < 681; ++i) ASSERT_OK(Open(mem, 0, -1, leader));
  EXPECT_THAT(Open(mem, 0, -1, leader), FailsWithErrno(E2BIG)) << "8 + 683 * 24 > 16384 (Linux 6.18: 681 members)";
  // A member's own GROUP read_format counts as well.
  const int leader2 = MustOpen(SoftwareAttr(PERF_COUNT_SW_DUMMY));
  perf_event_attr big = mem;
  big.read_format = PERF_FORMAT_GROUP | kTimes | PERF_FORMAT_ID | PERF_FORMAT_LOST;  // 24 + nr * 24
  for (int i = 0; i < 680; ++i) ASSERT_OK(Open(big, 0, -1, leader2));
  EXPECT_THAT(Open(big, 0, -1, leader2), FailsWithErrno(E2BIG));
}

// ring_buffer.c __perf_output_begin(): every record that does not fit counts
// in event->lost_samples, side-band records too (6.18: a dummy event with
// attr.mmap loses MMAP records and reports them in PERF_FORMAT_LOST).
TEST_F(ReadModel, LostSideBandRecordsShowInPerfFormatLost) {
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_DUMMY);
  a.mmap = 1;
  a.read_format = PERF_FORMAT_LOST;
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 1);
  ASSERT_TRUE(rb);
  Enable(fd);
  for (int i = 0; i < 100; ++i) Run(Workload::MmapExec(1));
  Disable(fd);
  const std::vector<Record> recs = Records(*rb, a, /*consume=*/false);
  EXPECT_EQ(CountType(recs, PERF_RECORD_MMAP), 85u) << "48-byte MMAP records in 4095 bytes";
  EXPECT_EQ(Words(fd), (std::vector<uint64_t>{0, 15}));
}

// core.c perf_read() -> __perf_read(): read(2) of a non-group event returns
// perf_event_read_size() bytes (value, then each read_format field asked for)
// and fails with ENOSPC for a shorter buffer — for every read_format.
// MockBackend::Read() answers this with a lookup table (its hot path).
TEST_F(ReadModel, ReadSizeOfEveryNonGroupReadFormat) {
  for (uint64_t rf = 0; rf < PERF_FORMAT_MAX; ++rf) {
    if (rf & PERF_FORMAT_GROUP) continue;
    SCOPED_TRACE(rf);
    perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_DUMMY);
    a.read_format = rf;
    const int fd = MustOpen(a);
    const size_t size = ReadFormatSize(rf);
    uint64_t buf[8] = {};
    Result<size_t> n = b().Read(fd, buf, size);
    ASSERT_TRUE(n.ok()) << n.ToString();
    EXPECT_EQ(*n, size);
    EXPECT_EQ(n.call(), fmt::format("read(fd={}, len={})", fd, size));
    Result<size_t> short_read = b().Read(fd, buf, size - 1);
    EXPECT_EQ(short_read.error(), ENOSPC) << short_read.ToString();
    EXPECT_OK(b().Close(fd));
  }
}

}  // namespace
}  // namespace perftest
