// Unit tests of harness/ring_buffer.h over a GMockBackend whose Mmap() returns
// memory laid out here like the kernel's (<linux/perf_event.h> struct
// perf_event_mmap_page, then the data area; kernel/events/ring_buffer.c), with
// data_head / data_tail moved by the test as the kernel would — including
// states the kernel never produces on demand (a torn record, a bad header).
#include "harness/ring_buffer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "harness/records.h"
#include "harness/syscall_matchers.h"
#include "harness/testing/gmock_backend.h"

namespace perftest {
namespace {

using ::testing::_;
using ::testing::HasSubstr;
using ::testing::NiceMock;
using ::testing::Return;

constexpr size_t kPage = 4096;
constexpr int kFd = 7;
// Bytes past the end of the mapping that are still ours, so a reader that
// overruns the data area reads garbage instead of crashing the test.
constexpr size_t kGuard = 64 * 1024;

// (1 + data_pages) page-aligned pages: the metadata page, then the data area.
class FakeRing {
 public:
  explicit FakeRing(size_t data_pages, bool fill_layout = true) : length_((1 + data_pages) * kPage) {
    mem_ = static_cast<std::byte*>(std::aligned_alloc(kPage, length_ + kGuard));
    std::memset(mem_, 0, length_ + kGuard);
    if (fill_layout) {
      page()->data_offset = kPage;
      page()->data_size = data_pages * kPage;
    }
    data_size_ = data_pages * kPage;
  }
  ~FakeRing() { std::free(mem_); }
  FakeRing(const FakeRing&) = delete;
  FakeRing& operator=(const FakeRing&) = delete;

  void* mem() const { return mem_; }
  size_t length() const { return length_; }
  size_t data_size() const { return data_size_; }
  perf_event_mmap_page* page() const { return reinterpret_cast<perf_event_mmap_page*>(mem_); }
  std::byte* data() const { return mem_ + kPage; }

  // Writes `bytes` at free-running position `pos`, wrapping like the kernel.
  void Write(uint64_t pos, std::span<const std::byte> bytes) {
    for (size_t i = 0; i < bytes.size(); ++i) data()[(pos + i) & (data_size_ - 1)] = bytes[i];
  }
  void SetHead(uint64_t head) { __atomic_store_n(&page()->data_head, head, __ATOMIC_RELEASE); }
  void SetTail(uint64_t tail) { page()->data_tail = tail; }
  uint64_t tail() const { return __atomic_load_n(&page()->data_tail, __ATOMIC_ACQUIRE); }

 private:
  std::byte* mem_;
  size_t length_;
  size_t data_size_;
};

// A record of `size` bytes (a multiple of 8, >= 16): header {PERF_RECORD_LOST, 0,
// size}, then u64 `seq`, then words derived from seq — so content is checkable.
std::vector<std::byte> MakeRecord(uint64_t seq, size_t size, uint32_t type = PERF_RECORD_LOST) {
  std::vector<std::byte> r(size);
  perf_event_header h{type, 0, static_cast<uint16_t>(size)};
  std::memcpy(r.data(), &h, sizeof h);
  for (size_t off = 8, i = 0; off + 8 <= size; off += 8, ++i) {
    const uint64_t w = i == 0 ? seq : seq * 1000003 + i;
    std::memcpy(r.data() + off, &w, 8);
  }
  return r;
}

uint64_t SeqOf(std::span<const std::byte> rec) {
  uint64_t seq;
  std::memcpy(&seq, rec.data() + 8, 8);
  return seq;
}

std::vector<std::byte> ToVector(std::span<const std::byte> s) { return {s.begin(), s.end()}; }

class RingBufferTest : public ::testing::Test {
 protected:
  RingBufferTest() { backend_.WithDefaults(); }

  // Maps `ring` through the backend; expects exactly one munmap of it.
  RingBuffer MapRing(FakeRing& ring, RingMode mode = RingMode::kReadWrite, bool backward = false) {
    const size_t pages = ring.length() / kPage - 1;
    const int prot = mode == RingMode::kReadWrite ? (PROT_READ | PROT_WRITE) : PROT_READ;
    EXPECT_CALL(backend_, Mmap(ring.length(), prot, MAP_SHARED, kFd, 0))
        .WillOnce(Return(Result<void*>::Ok(ring.mem(), "mmap")));
    EXPECT_CALL(backend_, Munmap(ring.mem(), ring.length())).Times(1);
    Result<RingBuffer> rb = RingBuffer::Map(backend_, kFd, pages, mode, backward);
    EXPECT_TRUE(rb.ok()) << rb.ToString();
    return std::move(rb).value();
  }

  NiceMock<GMockBackend> backend_;
};

TEST_F(RingBufferTest, MapUsesPageLayout) {
  FakeRing ring(4);
  RingBuffer rb = MapRing(ring);
  EXPECT_EQ(rb.data_size(), 4 * kPage);
  EXPECT_EQ(rb.mapped_bytes(), 5 * kPage);
  EXPECT_EQ(rb.data().data(), ring.data());
  EXPECT_EQ(rb.data().size(), 4 * kPage);
  EXPECT_EQ(&rb.page(), ring.page());
  EXPECT_EQ(rb.mode(), RingMode::kReadWrite);
  EXPECT_FALSE(rb.write_backward());
}

TEST_F(RingBufferTest, MapHonoursDataOffsetAndSizeFromThePage) {
  // A page that puts a 2-page data area at an offset of 2 pages in a 5-page mapping.
  FakeRing ring(4);
  ring.page()->data_offset = 2 * kPage;
  ring.page()->data_size = 2 * kPage;
  RingBuffer rb = MapRing(ring);
  EXPECT_EQ(rb.data().data(), ring.data() + kPage);
  EXPECT_EQ(rb.data_size(), 2 * kPage);
}

TEST_F(RingBufferTest, MapFallsBackWhenThePageHasNoLayout) {
  // Kernels before 4.1 leave data_offset/data_size 0: data follows the first page.
  FakeRing ring(2, /*fill_layout=*/false);
  RingBuffer rb = MapRing(ring);
  EXPECT_EQ(rb.data().data(), ring.data());
  EXPECT_EQ(rb.data_size(), 2 * kPage);
}

TEST_F(RingBufferTest, MapFailurePropagatesErrno) {
  EXPECT_CALL(backend_, Mmap(3 * kPage, PROT_READ | PROT_WRITE, MAP_SHARED, kFd, 0))
      .WillOnce(Return(Result<void*>::Failure(EINVAL, "mmap(NULL, 12288, PROT_READ|PROT_WRITE, MAP_SHARED, fd=7, offset=0)")));
  EXPECT_CALL(backend_, Munmap(_, _)).Times(0);
  Result<RingBuffer> rb = RingBuffer::Map(backend_, kFd, 2);
  EXPECT_THAT(rb, FailsWithErrno(EINVAL));
  EXPECT_THAT(rb.call(), HasSubstr("mmap(NULL, 12288"));
}

TEST_F(RingBufferTest, MapFailureEnomemAndEperm) {
  for (int err : {ENOMEM, EPERM}) {
    EXPECT_CALL(backend_, Mmap(_, _, _, _, _)).WillOnce(Return(Result<void*>::Failure(err, "mmap")));
    EXPECT_THAT(RingBuffer::Map(backend_, kFd, 8), FailsWithErrno(err));
  }
}

TEST_F(RingBufferTest, OverwriteModeMapsReadOnly) {
  FakeRing ring(1);
  RingBuffer rb = MapRing(ring, RingMode::kOverwrite, true);  // MapRing expects PROT_READ
  EXPECT_EQ(rb.mode(), RingMode::kOverwrite);
  EXPECT_TRUE(rb.write_backward());
}

TEST_F(RingBufferTest, EmptyBuffer) {
  FakeRing ring(1);
  RingBuffer rb = MapRing(ring);
  EXPECT_EQ(rb.Begin(), 0u);
  EXPECT_FALSE(rb.Next().has_value());
  EXPECT_FALSE(rb.error().has_value());
}

TEST_F(RingBufferTest, RecordsInOrder) {
  FakeRing ring(1);
  const std::vector<std::byte> a = MakeRecord(1, 24), b = MakeRecord(2, 48), c = MakeRecord(3, 16);
  ring.Write(0, a);
  ring.Write(24, b);
  ring.Write(72, c);
  ring.SetHead(88);
  RingBuffer rb = MapRing(ring);
  EXPECT_EQ(rb.ReadHead(), 88u);
  EXPECT_EQ(rb.Begin(), 88u);
  uint64_t want_pos = 0;
  for (const auto& want : {a, b, c}) {
    std::optional<RawRecord> r = rb.Next();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->position, want_pos);
    EXPECT_EQ(r->header.type, static_cast<uint32_t>(PERF_RECORD_LOST));
    EXPECT_EQ(r->header.size, want.size());
    EXPECT_FALSE(r->wrapped);
    EXPECT_EQ(ToVector(r->bytes), want);
    // Unwrapped records are read in place.
    EXPECT_EQ(r->bytes.data(), ring.data() + want_pos);
    want_pos += want.size();
  }
  EXPECT_FALSE(rb.Next().has_value());
  EXPECT_FALSE(rb.error().has_value());
  EXPECT_EQ(rb.position(), 88u);
  EXPECT_EQ(ring.tail(), 0u);  // not consumed yet
  rb.Consume();
  EXPECT_EQ(ring.tail(), 88u);
  EXPECT_EQ(rb.ReadTail(), 88u);
}

TEST_F(RingBufferTest, ParsesRecordsFromTheRing) {
  FakeRing ring(1);
  SampleLayout layout;
  layout.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID;
  std::vector<std::byte> bytes;
  SampleRecord s;
  s.ip = 0x401000;
  s.pid = 5;
  s.tid = 6;
  EncodeSample(layout, PERF_RECORD_MISC_USER, s, &bytes);
  Record lost;
  lost.header.type = PERF_RECORD_LOST;
  lost.body = LostRecord{9, 3};
  EncodeRecord(layout, lost, &bytes);
  ring.Write(0, bytes);
  ring.SetHead(bytes.size());
  RingBuffer rb = MapRing(ring);
  rb.Begin();
  std::optional<RawRecord> r1 = rb.Next();
  ASSERT_TRUE(r1.has_value());
  Result<Record> p1 = ParseRecord(layout, r1->bytes);
  ASSERT_OK(p1);
  EXPECT_TRUE(std::get<SampleRecord>(p1->body) == s);
  std::optional<RawRecord> r2 = rb.Next();
  ASSERT_TRUE(r2.has_value());
  Result<Record> p2 = ParseRecord(layout, r2->bytes);
  ASSERT_OK(p2);
  EXPECT_TRUE(std::get<LostRecord>(p2->body) == (LostRecord{9, 3}));
  EXPECT_FALSE(rb.Next().has_value());
}

TEST_F(RingBufferTest, ConsumePublishesWhereNextGot) {
  FakeRing ring(1);
  ring.Write(0, MakeRecord(1, 32));
  ring.Write(32, MakeRecord(2, 32));
  ring.SetHead(64);
  RingBuffer rb = MapRing(ring);
  rb.Begin();
  ASSERT_TRUE(rb.Next().has_value());
  rb.Consume();
  EXPECT_EQ(ring.tail(), 32u);
  // The next Begin starts at data_tail.
  EXPECT_EQ(rb.Begin(), 32u);
  std::optional<RawRecord> r = rb.Next();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(SeqOf(r->bytes), 2u);
  EXPECT_EQ(r->position, 32u);
  rb.Consume();
  EXPECT_EQ(ring.tail(), 64u);
}

TEST_F(RingBufferTest, WriteTailStoresDataTail) {
  FakeRing ring(1);
  RingBuffer rb = MapRing(ring);
  rb.WriteTail(4096 * 3 + 16);
  EXPECT_EQ(ring.tail(), 4096u * 3 + 16);
  EXPECT_EQ(rb.ReadTail(), 4096u * 3 + 16);
}

TEST_F(RingBufferTest, WrapsAtBoundary) {
  FakeRing ring(1);
  const size_t ds = ring.data_size();
  const std::vector<std::byte> a = MakeRecord(1, 24);   // [ds-32, ds-8)
  const std::vector<std::byte> b = MakeRecord(2, 40);   // [ds-8, ds+32): 8 bytes at the end, 32 at the start
  const std::vector<std::byte> c = MakeRecord(3, 16);   // [ds+32, ds+48)
  ring.Write(ds - 32, a);
  ring.Write(ds - 8, b);
  ring.Write(ds + 32, c);
  ring.SetTail(ds - 32);
  ring.SetHead(ds + 48);
  RingBuffer rb = MapRing(ring);
  EXPECT_EQ(rb.Begin(), 80u);

  std::optional<RawRecord> ra = rb.Next();
  ASSERT_TRUE(ra.has_value());
  EXPECT_FALSE(ra->wrapped);
  EXPECT_EQ(ToVector(ra->bytes), a);

  std::optional<RawRecord> rb2 = rb.Next();
  ASSERT_TRUE(rb2.has_value());
  EXPECT_TRUE(rb2->wrapped);
  EXPECT_EQ(rb2->position, ds - 8);
  EXPECT_EQ(rb2->header.size, 40u);
  EXPECT_EQ(ToVector(rb2->bytes), b);  // contiguous, correct bytes
  // The two halves really are apart in the ring.
  EXPECT_EQ(std::memcmp(ring.data() + ds - 8, b.data(), 8), 0);
  EXPECT_EQ(std::memcmp(ring.data(), b.data() + 8, 32), 0);

  std::optional<RawRecord> rc = rb.Next();
  ASSERT_TRUE(rc.has_value());
  EXPECT_FALSE(rc->wrapped);
  EXPECT_EQ(rc->position, ds + 32);
  EXPECT_EQ(ToVector(rc->bytes), c);
  EXPECT_FALSE(rb.Next().has_value());
  rb.Consume();
  EXPECT_EQ(ring.tail(), ds + 48);
}

TEST_F(RingBufferTest, RecordEndingExactlyAtTheEndDoesNotWrap) {
  FakeRing ring(1);
  const size_t ds = ring.data_size();
  const std::vector<std::byte> a = MakeRecord(1, 64);
  ring.Write(ds - 64, a);
  ring.Write(ds, MakeRecord(2, 16));
  ring.SetTail(ds - 64);
  ring.SetHead(ds + 16);
  RingBuffer rb = MapRing(ring);
  rb.Begin();
  std::optional<RawRecord> r = rb.Next();
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->wrapped);
  EXPECT_EQ(ToVector(r->bytes), a);
  std::optional<RawRecord> r2 = rb.Next();
  ASSERT_TRUE(r2.has_value());
  EXPECT_FALSE(r2->wrapped);
  EXPECT_EQ(r2->bytes.data(), ring.data());  // position ds is offset 0
  EXPECT_EQ(SeqOf(r2->bytes), 2u);
}

// A writer that behaves like the kernel in kReadWrite mode (never overwrites
// unread data) and a reader doing Begin/Next/Consume, for many laps.
TEST_F(RingBufferTest, ManyWrapsWithFreeRunningPositions) {
  FakeRing ring(1);
  const size_t ds = ring.data_size();
  RingBuffer rb = MapRing(ring);
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> words(2, 40);
  std::uniform_int_distribution<int> burst(1, 30);
  uint64_t head = 0, next_write = 0, next_read = 0;
  size_t wrapped = 0;
  for (int round = 0; round < 3000; ++round) {
    for (int k = burst(rng); k > 0; --k) {
      const size_t size = 8 * static_cast<size_t>(words(rng));
      if (head - ring.tail() + size > ds) break;  // full: the kernel would drop it
      ring.Write(head, MakeRecord(next_write++, size));
      head += size;
    }
    ring.SetHead(head);
    EXPECT_EQ(rb.Begin(), head - ring.tail());
    while (std::optional<RawRecord> r = rb.Next()) {
      ASSERT_EQ(SeqOf(r->bytes), next_read) << "round " << round;
      ASSERT_EQ(ToVector(r->bytes), MakeRecord(next_read, r->header.size)) << "round " << round;
      wrapped += r->wrapped;
      ++next_read;
    }
    ASSERT_FALSE(rb.error().has_value()) << *rb.error();
    EXPECT_EQ(rb.position(), head);
    rb.Consume();
    ASSERT_EQ(ring.tail(), head);
  }
  EXPECT_EQ(next_read, next_write);
  EXPECT_GT(head, 100 * ds) << "positions must run far past data_size";
  EXPECT_GT(wrapped, 10u) << "the test must exercise the wrap";
}

TEST_F(RingBufferTest, HeaderSizeZeroIsMalformed) {
  FakeRing ring(1);
  ring.Write(0, MakeRecord(1, 16));
  // [16, 32) left zero: a header with size 0.
  ring.SetHead(32);
  RingBuffer rb = MapRing(ring);
  rb.Begin();
  ASSERT_TRUE(rb.Next().has_value());
  EXPECT_FALSE(rb.Next().has_value());
  ASSERT_TRUE(rb.error().has_value());
  EXPECT_THAT(*rb.error(), HasSubstr("position 16"));
  EXPECT_THAT(*rb.error(), HasSubstr("size=0"));
  // Next() does not advance past a bad header.
  EXPECT_EQ(rb.position(), 16u);
  EXPECT_FALSE(rb.Next().has_value());
}

TEST_F(RingBufferTest, HeaderSizeNotMultipleOf8IsMalformed) {
  FakeRing ring(1);
  std::vector<std::byte> bad = MakeRecord(1, 24);
  const uint16_t size = 20;
  std::memcpy(bad.data() + offsetof(perf_event_header, size), &size, 2);
  ring.Write(0, bad);
  ring.SetHead(24);
  RingBuffer rb = MapRing(ring);
  rb.Begin();
  EXPECT_FALSE(rb.Next().has_value());
  ASSERT_TRUE(rb.error().has_value());
  EXPECT_THAT(*rb.error(), HasSubstr("size=20"));
}

TEST_F(RingBufferTest, HeaderSizeSmallerThanAHeaderIsMalformed) {
  FakeRing ring(1);
  std::vector<std::byte> bad = MakeRecord(1, 16);
  const uint16_t size = 4;
  std::memcpy(bad.data() + offsetof(perf_event_header, size), &size, 2);
  ring.Write(0, bad);
  ring.SetHead(16);
  RingBuffer rb = MapRing(ring);
  rb.Begin();
  EXPECT_FALSE(rb.Next().has_value());
  EXPECT_TRUE(rb.error().has_value());
}

TEST_F(RingBufferTest, TornRecordBeyondHeadIsMalformed) {
  // The writer published data_head in the middle of a record (a torn ring).
  FakeRing ring(1);
  ring.Write(0, MakeRecord(1, 16));
  ring.Write(16, MakeRecord(2, 64));
  ring.SetHead(16 + 32);
  RingBuffer rb = MapRing(ring);
  EXPECT_EQ(rb.Begin(), 48u);
  ASSERT_TRUE(rb.Next().has_value());
  EXPECT_FALSE(rb.Next().has_value());
  ASSERT_TRUE(rb.error().has_value());
  EXPECT_THAT(*rb.error(), HasSubstr("size 64"));
  EXPECT_THAT(*rb.error(), HasSubstr("32 bytes are published"));
  rb.Consume();
  EXPECT_EQ(ring.tail(), 16u);  // only the whole record is consumed
}

TEST_F(RingBufferTest, BeginClearsThePreviousError) {
  FakeRing ring(1);
  ring.Write(0, MakeRecord(1, 64));
  ring.SetHead(32);  // torn
  RingBuffer rb = MapRing(ring);
  rb.Begin();
  EXPECT_FALSE(rb.Next().has_value());
  EXPECT_TRUE(rb.error().has_value());
  ring.SetHead(64);  // the writer finishes
  rb.Begin();
  EXPECT_FALSE(rb.error().has_value());
  std::optional<RawRecord> r = rb.Next();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(SeqOf(r->bytes), 1u);
}

TEST_F(RingBufferTest, TrailingBytesShorterThanAHeaderAreLeft) {
  FakeRing ring(1);
  ring.Write(0, MakeRecord(1, 16));
  ring.SetHead(20);  // 4 bytes of a next header published
  RingBuffer rb = MapRing(ring);
  rb.Begin();
  ASSERT_TRUE(rb.Next().has_value());
  EXPECT_FALSE(rb.Next().has_value());
  EXPECT_EQ(rb.position(), 16u);
}

// A kernel-like backward writer: data_head decreases by each record's size and
// the record is written at the new head (kernel/events/ring_buffer.c
// __perf_output_begin() with is_backward).
class BackwardWriter {
 public:
  explicit BackwardWriter(FakeRing& ring) : ring_(ring) {}
  void Write(uint64_t seq, size_t size) {
    head_ -= size;
    ring_.Write(head_, MakeRecord(seq, size));
    written_.push_back({head_, seq, size});
    ring_.SetHead(head_);
  }
  uint64_t head() const { return head_; }
  // Newest first: the records wholly inside [head, head + data_size).
  std::vector<uint64_t> ExpectedSeqs() const {
    std::vector<uint64_t> out;
    for (auto it = written_.rbegin(); it != written_.rend(); ++it) {
      if (it->pos - head_ + it->size > ring_.data_size()) break;
      out.push_back(it->seq);
    }
    return out;
  }

 private:
  struct Entry {
    uint64_t pos, seq;
    size_t size;
  };
  FakeRing& ring_;
  uint64_t head_ = 0;
  std::vector<Entry> written_;
};

TEST_F(RingBufferTest, BackwardOverwriteBeforeWrapStopsAtZeroHeader) {
  FakeRing ring(1);
  BackwardWriter w(ring);
  w.Write(1, 32);
  w.Write(2, 40);
  w.Write(3, 48);
  EXPECT_EQ(w.head(), uint64_t{0} - 120);  // positions run below zero (as u64)
  RingBuffer rb = MapRing(ring, RingMode::kOverwrite, /*backward=*/true);
  EXPECT_EQ(rb.Begin(), ring.data_size());
  std::vector<uint64_t> got;
  while (std::optional<RawRecord> r = rb.Next()) {
    EXPECT_EQ(ToVector(r->bytes), MakeRecord(SeqOf(r->bytes), r->header.size));
    got.push_back(SeqOf(r->bytes));
  }
  EXPECT_EQ(got, (std::vector<uint64_t>{3, 2, 1}));  // newest first
  EXPECT_FALSE(rb.error().has_value()) << *rb.error();
  // Consume does not write data_tail in overwrite mode.
  rb.Consume();
  EXPECT_EQ(ring.tail(), 0u);
}

TEST_F(RingBufferTest, BackwardOverwriteAfterManyWraps) {
  FakeRing ring(1);
  BackwardWriter w(ring);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> words(2, 30);
  RingBuffer rb = MapRing(ring, RingMode::kOverwrite, /*backward=*/true);
  uint64_t seq = 0;
  size_t some_wrapped = 0;
  for (int round = 0; round < 200; ++round) {
    for (int k = 0; k < 17; ++k) w.Write(++seq, 8 * static_cast<size_t>(words(rng)));
    rb.Begin();
    std::vector<uint64_t> got;
    while (std::optional<RawRecord> r = rb.Next()) {
      ASSERT_EQ(ToVector(r->bytes), MakeRecord(SeqOf(r->bytes), r->header.size)) << "round " << round;
      got.push_back(SeqOf(r->bytes));
      some_wrapped += r->wrapped;
    }
    EXPECT_FALSE(rb.error().has_value()) << "round " << round << ": " << *rb.error();
    ASSERT_EQ(got, w.ExpectedSeqs()) << "round " << round;
    ASSERT_FALSE(got.empty());
    EXPECT_EQ(got.front(), seq);
  }
  EXPECT_GT(some_wrapped, 0u);
  EXPECT_EQ(ring.tail(), 0u);
}

TEST_F(RingBufferTest, ForwardOverwriteBeforeWrapReadsFromZero) {
  FakeRing ring(1);
  ring.Write(0, MakeRecord(1, 32));
  ring.Write(32, MakeRecord(2, 32));
  ring.SetHead(64);
  ring.SetTail(48);  // ignored in overwrite mode
  RingBuffer rb = MapRing(ring, RingMode::kOverwrite, /*backward=*/false);
  EXPECT_EQ(rb.Begin(), 64u);
  std::vector<uint64_t> got;
  while (std::optional<RawRecord> r = rb.Next()) got.push_back(SeqOf(r->bytes));
  EXPECT_EQ(got, (std::vector<uint64_t>{1, 2}));
  EXPECT_FALSE(rb.error().has_value());
  rb.Consume();
  EXPECT_EQ(ring.tail(), 48u);
}

TEST_F(RingBufferTest, ForwardOverwriteAfterWrapIsAnError) {
  FakeRing ring(1);
  ring.Write(0, MakeRecord(1, 32));
  ring.SetHead(ring.data_size() + 32);
  RingBuffer rb = MapRing(ring, RingMode::kOverwrite, /*backward=*/false);
  EXPECT_EQ(rb.Begin(), 0u);
  ASSERT_TRUE(rb.error().has_value());
  EXPECT_THAT(*rb.error(), HasSubstr("write_backward"));
  EXPECT_FALSE(rb.Next().has_value());
}

TEST_F(RingBufferTest, CopyOutAcrossTheWrap) {
  FakeRing ring(1);
  const size_t ds = ring.data_size();
  for (size_t i = 0; i < ds; ++i) ring.data()[i] = static_cast<std::byte>(i * 7);
  RingBuffer rb = MapRing(ring);
  std::vector<std::byte> want;
  for (size_t i = ds - 8; i < ds; ++i) want.push_back(static_cast<std::byte>(i * 7));
  for (size_t i = 0; i < 16; ++i) want.push_back(static_cast<std::byte>(i * 7));
  EXPECT_EQ(rb.CopyOut(ds - 8, 24), want);
  // Free-running positions several laps on give the same bytes.
  EXPECT_EQ(rb.CopyOut(5 * ds + ds - 8, 24), want);
  // Within one lap.
  std::vector<std::byte> mid(ring.data() + 100, ring.data() + 140);
  EXPECT_EQ(rb.CopyOut(3 * ds + 100, 40), mid);
  // The whole data area starting mid-way.
  std::vector<std::byte> whole = rb.CopyOut(ds / 2, ds);
  ASSERT_EQ(whole.size(), ds);
  EXPECT_EQ(whole[0], ring.data()[ds / 2]);
  EXPECT_EQ(whole[ds - 1], ring.data()[ds / 2 - 1]);
}

TEST_F(RingBufferTest, CopyOutOfNothing) {
  FakeRing ring(1);
  RingBuffer rb = MapRing(ring);
  EXPECT_TRUE(rb.CopyOut(10, 0).empty());
}

// A corrupted or torn page whose data_head runs more than data_size ahead of
// data_tail (the kernel never publishes that) and a record header claiming more
// than the whole data area: Next() must report it, not copy header.size bytes
// through CopyOut, which reads past the end of the data area
// (ring_buffer.cc: no header.size <= data_size_ check; CopyOut's second memcpy
// is len - first bytes from data_ with no bound). Enable once fixed.
TEST_F(RingBufferTest, RecordLargerThanTheDataAreaIsMalformed) {
  FakeRing ring(1);
  const size_t ds = ring.data_size();
  std::vector<std::byte> big = MakeRecord(1, 16);
  const uint16_t size = static_cast<uint16_t>(3 * ds);  // 12288
  std::memcpy(big.data() + offsetof(perf_event_header, size), &size, 2);
  ring.Write(ds - 16, big);
  ring.SetTail(ds - 16);
  ring.SetHead(ds - 16 + 3 * ds);
  RingBuffer rb = MapRing(ring);
  rb.Begin();
  EXPECT_FALSE(rb.Next().has_value());
  EXPECT_TRUE(rb.error().has_value());
}

TEST_F(RingBufferTest, MetadataOnlyMappingHasNoRecords) {
  FakeRing ring(0);
  RingBuffer rb = MapRing(ring);
  EXPECT_EQ(rb.data_size(), 0u);
  ring.SetHead(64);
  EXPECT_EQ(rb.Begin(), 0u);
  EXPECT_FALSE(rb.Next().has_value());
}

TEST_F(RingBufferTest, UnmapCallsMunmapOnceAndIsIdempotent) {
  FakeRing ring(1);
  RingBuffer rb = MapRing(ring);  // expects exactly one Munmap
  EXPECT_OK(rb.Unmap());
  EXPECT_EQ(rb.mapped_bytes(), 0u);
  EXPECT_EQ(rb.data_size(), 0u);
  EXPECT_OK(rb.Unmap());
  // ... and the destructor does not munmap again.
}

TEST_F(RingBufferTest, DestructorUnmaps) {
  FakeRing ring(1);
  ::testing::MockFunction<void(const char*)> check;
  {
    ::testing::InSequence in_order;
    EXPECT_CALL(backend_, Mmap(_, _, _, _, _)).WillOnce(Return(Result<void*>::Ok(ring.mem())));
    EXPECT_CALL(check, Call("before destruction"));
    EXPECT_CALL(backend_, Munmap(ring.mem(), ring.length())).Times(1);
    EXPECT_CALL(check, Call("after destruction"));
  }
  {
    Result<RingBuffer> rb = RingBuffer::Map(backend_, kFd, 1);
    ASSERT_OK(rb);
    check.Call("before destruction");
  }
  check.Call("after destruction");
}

TEST_F(RingBufferTest, UnmapReportsMunmapFailure) {
  FakeRing ring(1);
  EXPECT_CALL(backend_, Mmap(_, _, _, _, _)).WillOnce(Return(Result<void*>::Ok(ring.mem())));
  EXPECT_CALL(backend_, Munmap(ring.mem(), ring.length()))
      .WillOnce(Return(Result<void>::Failure(EINVAL, "munmap")));
  Result<RingBuffer> rb = RingBuffer::Map(backend_, kFd, 1);
  ASSERT_OK(rb);
  EXPECT_THAT(rb->Unmap(), FailsWithErrno(EINVAL));
  EXPECT_OK(rb->Unmap());  // already released: no second munmap
}

TEST_F(RingBufferTest, MoveConstructionTransfersTheMapping) {
  FakeRing ring(1);
  ring.Write(0, MakeRecord(1, 16));
  ring.SetHead(16);
  RingBuffer a = MapRing(ring);  // one Munmap in all
  RingBuffer b(std::move(a));
  EXPECT_EQ(a.mapped_bytes(), 0u);   // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_EQ(a.data_size(), 0u);      // NOLINT(bugprone-use-after-move)
  EXPECT_OK(a.Unmap());              // NOLINT(bugprone-use-after-move): no munmap
  EXPECT_EQ(b.mapped_bytes(), ring.length());
  b.Begin();
  std::optional<RawRecord> r = b.Next();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(SeqOf(r->bytes), 1u);
}

TEST_F(RingBufferTest, MoveAssignmentUnmapsTheTarget) {
  FakeRing ring1(1), ring2(2);
  ::testing::MockFunction<void(const char*)> check;
  {
    ::testing::InSequence in_order;
    EXPECT_CALL(backend_, Mmap(ring1.length(), _, _, _, _)).WillOnce(Return(Result<void*>::Ok(ring1.mem())));
    EXPECT_CALL(backend_, Mmap(ring2.length(), _, _, _, _)).WillOnce(Return(Result<void*>::Ok(ring2.mem())));
    EXPECT_CALL(check, Call("before assignment"));
    EXPECT_CALL(backend_, Munmap(ring1.mem(), ring1.length())).Times(1);  // the target's old mapping
    EXPECT_CALL(check, Call("after assignment"));
    EXPECT_CALL(backend_, Munmap(ring2.mem(), ring2.length())).Times(1);  // once, by `a`
  }
  Result<RingBuffer> ra = RingBuffer::Map(backend_, kFd, 1);
  Result<RingBuffer> rb = RingBuffer::Map(backend_, kFd, 2);
  ASSERT_OK(ra);
  ASSERT_OK(rb);
  RingBuffer a = std::move(ra).value();
  RingBuffer b = std::move(rb).value();
  check.Call("before assignment");
  a = std::move(b);
  check.Call("after assignment");
  EXPECT_EQ(a.mapped_bytes(), ring2.length());
  EXPECT_EQ(a.data().data(), ring2.data());
  EXPECT_EQ(b.mapped_bytes(), 0u);  // NOLINT(bugprone-use-after-move): moved-from is empty
}

TEST_F(RingBufferTest, SelfMoveAssignmentKeepsTheMapping) {
  FakeRing ring(1);
  RingBuffer a = MapRing(ring);
  RingBuffer& alias = a;
  a = std::move(alias);
  EXPECT_EQ(a.mapped_bytes(), ring.length());
}

TEST_F(RingBufferTest, MovedResultKeepsReadState) {
  // Map returns the RingBuffer inside a Result (moved twice); the mapping survives.
  FakeRing ring(1);
  ring.Write(0, MakeRecord(1, 16));
  ring.Write(16, MakeRecord(2, 16));
  ring.SetHead(32);
  RingBuffer a = MapRing(ring);
  a.Begin();
  ASSERT_TRUE(a.Next().has_value());
  RingBuffer b = std::move(a);
  std::optional<RawRecord> r = b.Next();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(SeqOf(r->bytes), 2u);
  b.Consume();
  EXPECT_EQ(ring.tail(), 32u);
}

}  // namespace
}  // namespace perftest
