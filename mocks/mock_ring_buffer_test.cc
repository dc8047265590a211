#include "mocks/mock_ring_buffer.h"

#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

namespace perftest::mock {
namespace {

constexpr size_t kPage = 4096;

// A record of `size` bytes (header included) whose body is filled with `fill`.
std::vector<std::byte> Rec(uint16_t size, uint8_t fill = 0xab, uint32_t type = PERF_RECORD_SAMPLE) {
  std::vector<std::byte> r(size, std::byte{fill});
  perf_event_header h{type, 0, size};
  std::memcpy(r.data(), &h, sizeof h);
  return r;
}

class MockRingBufferTest : public ::testing::Test {
 protected:
  void SetUp() override { memfd_ = ::memfd_create("rb-test", MFD_CLOEXEC); }
  void TearDown() override {
    if (user_ != nullptr) ::munmap(user_, length_);
    ::close(memfd_);
  }
  std::shared_ptr<MockRingBuffer> Make(size_t nr_pages, bool writable, uint64_t watermark = 0) {
    auto rb = MockRingBuffer::Create(memfd_, kPage, nr_pages, writable, watermark);
    EXPECT_TRUE(rb.ok()) << rb.ToString();
    length_ = (1 + nr_pages) * kPage;
    user_ = ::mmap(nullptr, length_, PROT_READ | PROT_WRITE, MAP_SHARED, memfd_, 0);
    return *rb;
  }
  perf_event_mmap_page* page() { return static_cast<perf_event_mmap_page*>(user_); }
  const std::byte* data() { return static_cast<const std::byte*>(user_) + kPage; }

  int memfd_ = -1;
  void* user_ = nullptr;
  size_t length_ = 0;
};

TEST_F(MockRingBufferTest, MetadataPageAsInitialised) {
  auto rb = Make(4, true);
  EXPECT_EQ(page()->version, 0u);
  EXPECT_EQ(page()->compat_version, 0u);
  EXPECT_EQ(page()->data_offset, kPage);
  EXPECT_EQ(page()->data_size, 4 * kPage);
  EXPECT_EQ(page()->data_head, 0u);
  EXPECT_EQ(page()->cap_bit0_is_deprecated, 1u);
  EXPECT_EQ(page()->size, offsetof(perf_event_mmap_page, __reserved));
  rb->UpdateUserPage(7, 100, 90);
  EXPECT_EQ(page()->offset, 7);
  EXPECT_EQ(page()->time_enabled, 100u);
  EXPECT_EQ(page()->time_running, 90u);
  EXPECT_EQ(page()->lock % 2, 0u) << "the seqlock is even outside an update";
  EXPECT_GT(page()->lock, 0u);
}

TEST_F(MockRingBufferTest, WatermarkDefaultsAndClamps) {
  EXPECT_EQ(Make(4, true, 0)->watermark(), 2 * kPage) << "half the buffer (ring_buffer_init())";
  TearDown();
  SetUp();
  EXPECT_EQ(Make(1, true, 100000)->watermark(), kPage) << "clamped to the data size";
  TearDown();
  SetUp();
  EXPECT_EQ(Make(1, true, 100)->watermark(), 100u);
}

TEST_F(MockRingBufferTest, OneByteAlwaysStaysFree) {
  auto rb = Make(1, true);
  OutputOptions opt;
  int written = 0;
  for (int i = 0; i < 300; ++i) written += rb->Output(Rec(16), opt, nullptr) == MockRingBuffer::Outcome::kWritten;
  EXPECT_EQ(written, 255) << "CIRC_SPACE keeps one byte free: 255 x 16 bytes in 4096";
  EXPECT_EQ(page()->data_head, 255u * 16);
  EXPECT_EQ(rb->lost(), 45u);
}

TEST_F(MockRingBufferTest, LostRecordPrecedesTheNextOne) {
  auto rb = Make(1, true);
  OutputOptions opt;
  opt.sample = true;
  opt.make_lost = [](uint64_t lost) {
    std::vector<std::byte> r = Rec(24, 0, PERF_RECORD_LOST);
    const uint64_t id = 99;
    std::memcpy(r.data() + 8, &id, 8);
    std::memcpy(r.data() + 16, &lost, 8);
    return r;
  };
  uint64_t lost_samples = 0;
  for (int i = 0; i < 200; ++i) rb->Output(Rec(24), opt, &lost_samples);
  EXPECT_EQ(page()->data_head, 170u * 24);
  EXPECT_EQ(lost_samples, 30u);
  page()->data_tail = page()->data_head;  // consume
  ASSERT_EQ(rb->Output(Rec(24), opt, &lost_samples), MockRingBuffer::Outcome::kWritten);
  // The LOST record straddles the end of the data area: read it byte-wise.
  std::vector<std::byte> got(48);
  for (size_t i = 0; i < got.size(); ++i) got[i] = data()[(170 * 24 + i) % kPage];
  perf_event_header h;
  std::memcpy(&h, got.data(), sizeof h);
  EXPECT_EQ(h.type, uint32_t{PERF_RECORD_LOST});
  uint64_t lost;
  std::memcpy(&lost, got.data() + 16, 8);
  EXPECT_EQ(lost, 30u);
  EXPECT_EQ(rb->lost(), 0u);
  EXPECT_EQ(page()->data_head, 172u * 24);
}

TEST_F(MockRingBufferTest, OverwriteIgnoresTail) {
  auto rb = Make(1, /*writable=*/false);
  OutputOptions opt;
  for (int i = 0; i < 200; ++i) ASSERT_EQ(rb->Output(Rec(24), opt, nullptr), MockRingBuffer::Outcome::kWritten);
  EXPECT_EQ(page()->data_head, 4800u);
  EXPECT_EQ(rb->lost(), 0u);
}

TEST_F(MockRingBufferTest, BackwardWritesBelowHead) {
  auto rb = Make(1, /*writable=*/false);
  OutputOptions opt;
  opt.backward = true;
  for (uint8_t i = 1; i <= 3; ++i) rb->Output(Rec(16, i), opt, nullptr);
  EXPECT_EQ(static_cast<int64_t>(page()->data_head), -48);
  // Newest first from data_head: fills 3, 2, 1.
  for (int i = 0; i < 3; ++i) {
    const uint64_t pos = (page()->data_head + 16 * i) & (kPage - 1);
    EXPECT_EQ(static_cast<uint8_t>(data()[pos + 8]), 3 - i);
  }
}

TEST_F(MockRingBufferTest, BackwardWritableHonoursTail) {
  auto rb = Make(1, /*writable=*/true);
  OutputOptions opt;
  opt.backward = true;
  for (int i = 0; i < 300; ++i) rb->Output(Rec(16), opt, nullptr);
  EXPECT_EQ(static_cast<int64_t>(page()->data_head), -4080) << "CIRC_SPACE(tail, head) >= size";
  EXPECT_EQ(rb->lost(), 45u);
}

TEST_F(MockRingBufferTest, WakeupEventsAndPollClearOnRead) {
  auto rb = Make(8, true);
  OutputOptions opt;
  opt.sample = true;
  opt.wakeup_events = 3;
  std::vector<uint32_t> seen;
  for (int i = 0; i < 7; ++i) {
    rb->Output(Rec(16), opt, nullptr);
    seen.push_back(rb->TakePoll());
  }
  const uint32_t in = POLLIN | POLLRDNORM;
  EXPECT_EQ(seen, (std::vector<uint32_t>{0, 0, in, 0, 0, in, 0}));
  // Non-sample records do not count toward wakeup_events.
  opt.sample = false;
  for (int i = 0; i < 5; ++i) rb->Output(Rec(16), opt, nullptr);
  EXPECT_EQ(rb->TakePoll(), 0u);
}

TEST_F(MockRingBufferTest, WatermarkWakesStrictlyPastIt) {
  auto rb = Make(1, true, 96);
  OutputOptions opt;
  std::vector<uint64_t> woke_at;
  for (int i = 0; i < 20; ++i) {
    rb->Output(Rec(16), opt, nullptr);
    if (rb->TakePoll() != 0) woke_at.push_back(page()->data_head);
  }
  EXPECT_EQ(woke_at, (std::vector<uint64_t>{112, 208, 304})) << "head - wakeup > watermark, then wakeup += watermark";
}

TEST_F(MockRingBufferTest, PausedCountsLostOnlyWithDataPages) {
  auto rb = Make(1, true);
  rb->SetPaused(true);
  uint64_t lost_samples = 0;
  OutputOptions opt;
  opt.sample = true;
  EXPECT_EQ(rb->Output(Rec(16), opt, &lost_samples), MockRingBuffer::Outcome::kLost);
  EXPECT_EQ(rb->lost(), 1u);
  EXPECT_EQ(lost_samples, 1u);
  EXPECT_EQ(page()->data_head, 0u);
  TearDown();
  SetUp();
  auto empty = Make(0, true);
  EXPECT_TRUE(empty->paused()) << "no data pages: permanently paused";
  empty->SetPaused(false);
  EXPECT_TRUE(empty->paused());
  EXPECT_EQ(empty->Output(Rec(16), opt, &lost_samples), MockRingBuffer::Outcome::kNoPages);
  EXPECT_EQ(empty->lost(), 0u);
}

// ring_buffer.c __perf_output_begin(): "fail: local_inc(&rb->lost);
// atomic64_inc(&event->lost_samples);" for every record, not only samples
// (Linux 6.18: a dummy event's lost MMAP records show in PERF_FORMAT_LOST).
TEST_F(MockRingBufferTest, LostSideBandRecordsCountInLostSamples) {
  auto rb = Make(1, true);
  OutputOptions opt;
  opt.sample = false;  // e.g. PERF_RECORD_MMAP
  uint64_t lost_samples = 0;
  int written = 0;
  for (int i = 0; i < 100; ++i) written += rb->Output(Rec(56), opt, &lost_samples) == MockRingBuffer::Outcome::kWritten;
  EXPECT_EQ(written, 73) << "4095 usable bytes / 56";
  EXPECT_EQ(lost_samples, 27u);
  EXPECT_EQ(rb->lost(), 27u);
  rb->SetPaused(true);
  rb->Output(Rec(56), opt, &lost_samples);
  EXPECT_EQ(lost_samples, 28u) << "paused: side-band records count too";
}

}  // namespace
}  // namespace perftest::mock
