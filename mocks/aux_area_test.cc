#include "mocks/aux_area.h"

#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

namespace perftest::mock {
namespace {

constexpr size_t kPage = 4096;

// A memfd with a metadata page and one data page; the AUX area goes at 2 pages.
class AuxAreaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fd_ = ::memfd_create("aux_area_test", MFD_CLOEXEC);
    ASSERT_GE(fd_, 0);
    ASSERT_EQ(::ftruncate(fd_, 2 * kPage), 0);
    void* p = ::mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    ASSERT_NE(p, MAP_FAILED);
    page_ = static_cast<perf_event_mmap_page*>(p);
  }
  void TearDown() override {
    ::munmap(page_, kPage);
    ::close(fd_);
  }
  std::shared_ptr<AuxArea> Make(size_t pages, bool overwrite, uint64_t watermark = 0) {
    auto a = AuxArea::Create(fd_, 2 * kPage, pages, kPage, overwrite, watermark, page_);
    EXPECT_TRUE(a.ok()) << a.call();
    return a.ok() ? *a : nullptr;
  }
  // What a reader mapping of the AUX offset sees.
  std::vector<uint8_t> ReadAux(size_t pages) {
    void* p = ::mmap(nullptr, pages * kPage, PROT_READ, MAP_SHARED, fd_, 2 * kPage);
    EXPECT_NE(p, MAP_FAILED);
    std::vector<uint8_t> out(static_cast<uint8_t*>(p), static_cast<uint8_t*>(p) + pages * kPage);
    ::munmap(p, pages * kPage);
    return out;
  }
  int fd_ = -1;
  perf_event_mmap_page* page_ = nullptr;
};

TEST_F(AuxAreaTest, DefaultWatermarkIsHalfTheBufferInFullTraceOnly) {
  EXPECT_EQ(Make(4, false)->watermark(), 2 * kPage);
  EXPECT_EQ(Make(4, false, 1000)->watermark(), 1000u);
  EXPECT_EQ(Make(4, true)->watermark(), 0u);
}

TEST_F(AuxAreaTest, FullTraceEndsATransactionAtEachWatermark) {
  auto a = Make(4, false, kPage);
  ASSERT_EQ(a->Begin(), AuxArea::BeginResult::kStarted);
  std::vector<uint8_t> bytes(kPage + 100, 0x42);
  auto ends = a->Write(bytes);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_TRUE(ends[0].record);
  EXPECT_EQ(ends[0].aux_offset, 0u);
  EXPECT_EQ(ends[0].aux_size, kPage);
  EXPECT_EQ(ends[0].flags, 0u);
  EXPECT_TRUE(ends[0].wakeup);
  EXPECT_EQ(page_->aux_head, kPage);
  AuxArea::End last = a->Stop();
  EXPECT_TRUE(last.record);
  EXPECT_EQ(last.aux_offset, kPage);
  EXPECT_EQ(last.aux_size, 100u);
  EXPECT_FALSE(last.wakeup);
  EXPECT_EQ(page_->aux_head, kPage + 100);
  EXPECT_EQ(ReadAux(4)[kPage + 99], 0x42);
}

TEST_F(AuxAreaTest, FullTraceNeverPassesTheTailAndTruncates) {
  auto a = Make(2, false, 4 * kPage);  // watermark clamps to the buffer
  ASSERT_EQ(a->Begin(), AuxArea::BeginResult::kStarted);
  std::vector<uint8_t> bytes(3 * kPage, 0x11);
  auto ends = a->Write(bytes);
  ASSERT_EQ(ends.size(), 1u);
  // CIRC_SPACE keeps one byte free.
  EXPECT_EQ(ends[0].aux_size, 2 * kPage - 1);
  EXPECT_EQ(ends[0].flags, static_cast<uint64_t>(PERF_AUX_FLAG_TRUNCATED));
  EXPECT_TRUE(ends[0].disable);
  EXPECT_TRUE(ends[0].wakeup);
  EXPECT_FALSE(a->open());
  // Still full: Begin fails until the reader frees space.
  EXPECT_EQ(a->Begin(), AuxArea::BeginResult::kFull);
  page_->aux_tail = kPage;
  EXPECT_EQ(a->Begin(), AuxArea::BeginResult::kStarted);
}

TEST_F(AuxAreaTest, SnapshotOverwritesAndReportsTheHeadOffset) {
  auto a = Make(1, true);
  ASSERT_EQ(a->Begin(), AuxArea::BeginResult::kStarted);
  std::vector<uint8_t> bytes(kPage + 16);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i);
  EXPECT_TRUE(a->Write(bytes).empty());  // no PMI, no wakeup
  AuxArea::End e = a->Stop();
  EXPECT_TRUE(e.record);
  EXPECT_EQ(e.aux_offset, 16u);
  EXPECT_EQ(e.aux_size, kPage);
  EXPECT_EQ(e.flags, static_cast<uint64_t>(PERF_AUX_FLAG_OVERWRITE));
  EXPECT_FALSE(e.wakeup);
  EXPECT_EQ(page_->aux_head, 16u);
  const std::vector<uint8_t> seen = ReadAux(1);
  EXPECT_EQ(seen[15], static_cast<uint8_t>(kPage + 15));  // overwritten by the newest bytes
  EXPECT_EQ(seen[16], static_cast<uint8_t>(16));
  const std::vector<std::byte> tail = a->CopyTail(8);
  EXPECT_EQ(static_cast<uint8_t>(tail[7]), static_cast<uint8_t>(kPage + 15));
}

TEST_F(AuxAreaTest, FlagsGoIntoTheOpenTransaction) {
  auto a = Make(2, false);
  ASSERT_EQ(a->Begin(), AuxArea::BeginResult::kStarted);
  a->Flag(PERF_AUX_FLAG_PARTIAL);
  AuxArea::End e = a->Stop();
  EXPECT_TRUE(e.record);  // no data, but a flag worth reporting
  EXPECT_EQ(e.aux_size, 0u);
  EXPECT_EQ(e.flags, static_cast<uint64_t>(PERF_AUX_FLAG_PARTIAL));
  EXPECT_FALSE(a->Stop().record);  // nothing open
}

}  // namespace
}  // namespace perftest::mock
