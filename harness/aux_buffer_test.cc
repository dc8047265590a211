// Unit tests of harness/aux_buffer.h over a GMockBackend whose Mmap() returns
// memory laid out like the kernel's: the data buffer (metadata page + data),
// and an AUX area whose aux_head the test moves as the PMU would.
#include "harness/aux_buffer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "harness/syscall_matchers.h"
#include "harness/testing/gmock_backend.h"

namespace perftest {
namespace {

using ::testing::_;
using ::testing::NiceMock;
using ::testing::Return;

constexpr size_t kPage = 4096;
constexpr int kFd = 9;

struct Pages {
  explicit Pages(size_t n) : size(n * kPage) {
    mem = static_cast<std::byte*>(std::aligned_alloc(kPage, size));
    std::memset(mem, 0, size);
  }
  ~Pages() { std::free(mem); }
  std::byte* mem;
  size_t size;
};

class AuxBufferTest : public ::testing::Test {
 protected:
  AuxBufferTest() : ring_(2), aux_(4) {
    backend_.WithDefaults();
    page()->data_offset = kPage;
    page()->data_size = kPage;
    EXPECT_CALL(backend_, Mmap(2 * kPage, PROT_READ | PROT_WRITE, MAP_SHARED, kFd, 0))
        .WillOnce(Return(Result<void*>::Ok(ring_.mem, "mmap")));
    rb_.emplace(std::move(RingBuffer::Map(backend_, kFd, 1)).value());
  }
  perf_event_mmap_page* page() { return reinterpret_cast<perf_event_mmap_page*>(ring_.mem); }

  NiceMock<GMockBackend> backend_;
  Pages ring_;
  Pages aux_;
  std::optional<RingBuffer> rb_;
};

TEST_F(AuxBufferTest, MapWritesOffsetAndSizeThenMapsThere) {
  EXPECT_CALL(backend_, Mmap(4 * kPage, PROT_READ | PROT_WRITE, MAP_SHARED, kFd, 2 * kPage))
      .WillOnce(Return(Result<void*>::Ok(aux_.mem, "mmap")));
  Result<AuxBuffer> a = AuxBuffer::Map(backend_, kFd, *rb_, 4, AuxMode::kFullTrace);
  ASSERT_TRUE(a.ok()) << a.ToString();
  EXPECT_EQ(page()->aux_offset, 2 * kPage);
  EXPECT_EQ(page()->aux_size, 4 * kPage);
  EXPECT_EQ(a->size(), 4 * kPage);
}

TEST_F(AuxBufferTest, SnapshotMapsReadOnly) {
  EXPECT_CALL(backend_, Mmap(4 * kPage, PROT_READ, MAP_SHARED, kFd, 2 * kPage))
      .WillOnce(Return(Result<void*>::Ok(aux_.mem, "mmap")));
  Result<AuxBuffer> a = AuxBuffer::Map(backend_, kFd, *rb_, 4, AuxMode::kSnapshot);
  ASSERT_TRUE(a.ok()) << a.ToString();
  EXPECT_EQ(a->mode(), AuxMode::kSnapshot);
}

TEST_F(AuxBufferTest, MapPassesTheKernelErrnoThrough) {
  EXPECT_CALL(backend_, Mmap(_, _, _, kFd, 2 * kPage))
      .WillOnce(Return(Result<void*>::Failure(EOPNOTSUPP, "mmap")));
  EXPECT_THAT(AuxBuffer::Map(backend_, kFd, *rb_, 4, AuxMode::kFullTrace), FailsWithErrno(EOPNOTSUPP));
}

TEST_F(AuxBufferTest, ZeroPagesIsRejectedBeforeMmap) {
  EXPECT_CALL(backend_, Mmap(_, _, _, _, _)).Times(0);
  EXPECT_THAT(AuxBuffer::Map(backend_, kFd, *rb_, 0, AuxMode::kFullTrace), FailsWithErrno(EINVAL));
}

TEST_F(AuxBufferTest, TakeReadsRecordsAcrossTheWrap) {
  EXPECT_CALL(backend_, Mmap(_, _, _, kFd, 2 * kPage)).WillOnce(Return(Result<void*>::Ok(aux_.mem, "mmap")));
  Result<AuxBuffer> a = AuxBuffer::Map(backend_, kFd, *rb_, 4, AuxMode::kFullTrace);
  ASSERT_TRUE(a.ok());
  for (size_t i = 0; i < aux_.size; ++i) aux_.mem[i] = static_cast<std::byte>(i & 0xff);
  // Full trace: [aux_offset, +aux_size), free running.
  std::vector<std::byte> t = a->Take(AuxRecord{4 * kPage * 3 + 4 * kPage - 2, 4, 0});
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0], static_cast<std::byte>((4 * kPage - 2) & 0xff));
  EXPECT_EQ(t[2], std::byte{0});  // wrapped to offset 0
  // Snapshot: the bytes that end at aux_offset.
  std::vector<std::byte> s = a->Take(AuxRecord{8, 16, PERF_AUX_FLAG_OVERWRITE});
  ASSERT_EQ(s.size(), 16u);
  EXPECT_EQ(s[15], std::byte{7});
  EXPECT_EQ(s[0], static_cast<std::byte>((4 * kPage - 8) & 0xff));
}

TEST_F(AuxBufferTest, TailIsWrittenHeadIsRead) {
  EXPECT_CALL(backend_, Mmap(_, _, _, kFd, 2 * kPage)).WillOnce(Return(Result<void*>::Ok(aux_.mem, "mmap")));
  Result<AuxBuffer> a = AuxBuffer::Map(backend_, kFd, *rb_, 4, AuxMode::kFullTrace);
  ASSERT_TRUE(a.ok());
  page()->aux_head = 1234;
  EXPECT_EQ(a->ReadHead(), 1234u);
  a->WriteTail(1000);
  EXPECT_EQ(page()->aux_tail, 1000u);
}

TEST(AuxRecords, ParseAuxAndItraceStart) {
  Record r;
  r.header.type = PERF_RECORD_AUX;
  OtherRecord o;
  const uint64_t w[3] = {0x1000, 0x200, PERF_AUX_FLAG_TRUNCATED};
  o.body.resize(24);
  std::memcpy(o.body.data(), w, 24);
  r.body = o;
  Result<AuxRecord> a = ParseAuxRecord(r);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, (AuxRecord{0x1000, 0x200, PERF_AUX_FLAG_TRUNCATED}));
  EXPECT_THAT(ParseItraceStartRecord(r), FailsWithErrno(EINVAL));
  o.body.resize(8);
  r.body = o;
  EXPECT_THAT(ParseAuxRecord(r), FailsWithErrno(EBADMSG));
  r.header.type = PERF_RECORD_ITRACE_START;
  const uint32_t ids[2] = {10, 11};
  std::memcpy(o.body.data(), ids, 8);
  r.body = o;
  Result<ItraceStartRecord> s = ParseItraceStartRecord(r);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, (ItraceStartRecord{10, 11}));
  EXPECT_EQ(DescribeAuxFlags(PERF_AUX_FLAG_TRUNCATED | PERF_AUX_FLAG_PARTIAL), "TRUNCATED|PARTIAL");
  EXPECT_EQ(DescribeAuxFlags(0), "0");
}

}  // namespace
}  // namespace perftest
