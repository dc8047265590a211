// RingBuffer: the perf mmap ring buffer of one event, and its read protocol.
//
//   Result<RingBuffer> rb = RingBuffer::Map(backend, event.fd(), /*data_pages=*/8);
//   rb->Begin();                                   // snapshot data_head (acquire)
//   while (std::optional<RawRecord> r = rb->Next())   // records in [data_tail, data_head)
//     handle(*r);                                  // r->bytes stays valid until Next()
//   rb->Consume();                                 // data_tail = where Next() got (release)
//
// Layout (<linux/perf_event.h> struct perf_event_mmap_page): one metadata page,
// then data_size bytes of data at data_offset; 1 + 2^n pages in all
// (kernel/events/core.c perf_mmap()). Positions (data_head, data_tail) are free
// running byte counters; the byte at position p is at data[p & (data_size-1)].
// A record that runs past the end of the data area continues at its start; Next()
// copies such a record to a scratch buffer so callers always see it contiguous
// (as tools/lib/perf/mmap.c does).
//
// Modes:
//  - kReadWrite (PROT_READ|PROT_WRITE): the reader owns data_tail; the kernel
//    never overwrites unread data, it drops records and later emits PERF_RECORD_LOST.
//  - kOverwrite (PROT_READ): the kernel ignores data_tail and overwrites the
//    oldest data. Parseable when attr.write_backward is set: records are written
//    at decreasing positions, so from data_head onward they run newest first;
//    Begin() then reads [data_head, data_head + data_size) and stops at the first
//    zero header (never-written space).
#pragma once

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "harness/backend.h"
#include "harness/result.h"

namespace perftest {

enum class RingMode { kReadWrite, kOverwrite };

// One record as it lies in the buffer, header included.
struct RawRecord {
  perf_event_header header{};
  std::span<const std::byte> bytes;  // header.size bytes; valid until the next Next()/Begin()
  uint64_t position = 0;             // free-running position of the record's first byte
  bool wrapped = false;              // it ran past the end of the data area (copied to scratch)
};

class RingBuffer {
 public:
  // Maps (1 + data_pages) pages of `fd` at offset 0 through `backend`.
  // data_pages must be 0 or a power of two (else the kernel says EINVAL).
  // Errors: those of mmap(2) on a perf fd — EINVAL (size rule, offset),
  // EPERM (over perf_event_mlock_kb without CAP_IPC_LOCK), ENOMEM, EBADF.
  static Result<RingBuffer> Map(Backend& backend, int fd, size_t data_pages,
                                RingMode mode = RingMode::kReadWrite, bool write_backward = false);

  RingBuffer(RingBuffer&& other) noexcept;
  RingBuffer& operator=(RingBuffer&& other) noexcept;
  RingBuffer(const RingBuffer&) = delete;
  RingBuffer& operator=(const RingBuffer&) = delete;
  ~RingBuffer();

  // munmap now; afterwards only moved-from operations are valid. Idempotent.
  Result<void> Unmap();

  const volatile perf_event_mmap_page& page() const { return *page_; }
  std::span<const std::byte> data() const { return {data_, data_size_}; }
  size_t data_size() const { return data_size_; }
  size_t mapped_bytes() const { return length_; }
  RingMode mode() const { return mode_; }
  bool write_backward() const { return backward_; }

  // data_head, read with acquire ordering (the UAPI's smp_rmb() after reading it).
  uint64_t ReadHead() const;
  // data_tail as last stored in the page.
  uint64_t ReadTail() const;
  // Stores data_tail with release ordering (the UAPI's smp_mb() before writing
  // it): the kernel may reuse [old tail, tail). kReadWrite only.
  void WriteTail(uint64_t tail);

  // --- read protocol ---
  // Snapshots data_head; Next() then yields the records between the read start
  // (kReadWrite: data_tail; kOverwrite+backward: data_head) and the snapshot.
  // Returns the number of bytes available.
  uint64_t Begin();
  // The next record, or nullopt at the end of the snapshot or on a malformed
  // header (then error() says what and where). Inline for a record that lies
  // whole in the data area (the common case; NextSlow() does the rest).
  std::optional<RawRecord> Next() {
    if (end_ - pos_ >= sizeof(perf_event_header) && data_size_ != 0) [[likely]] {
      const size_t off = pos_ & (data_size_ - 1);
      perf_event_header h;
      std::memcpy(&h, data_ + off, sizeof h);  // 8-byte aligned: a header never wraps
      if (h.size >= sizeof h && h.size % 8 == 0 && h.size <= end_ - pos_ && off + h.size <= data_size_) [[likely]] {
        // Each header depends on the one before: fetch a few records ahead
        // now, so the next headers are not each a cache miss.
        __builtin_prefetch(data_ + ((pos_ + kPrefetchAhead) & (data_size_ - 1)));
        std::optional<RawRecord> r(std::in_place, h, std::span<const std::byte>(data_ + off, h.size), pos_, false);
        pos_ += h.size;
        return r;
      }
    }
    return NextSlow();
  }
  // kReadWrite: publishes data_tail = the position Next() reached.
  void Consume();
  // Position Next() reached (free running).
  uint64_t position() const { return pos_; }
  // Malformed-data description from the last Next(), if any.
  const std::optional<std::string>& error() const { return error_; }

  // Copies `len` bytes starting at free-running position `pos`, across the wrap.
  std::vector<std::byte> CopyOut(uint64_t pos, size_t len) const;

 private:
  static constexpr uint64_t kPrefetchAhead = 1024;  // bytes, a few records

  RingBuffer() = default;
  void Reset() noexcept;
  // Next() for every other case: the end, a record that wraps (copied to
  // scratch_), a malformed header, never-written space (overwrite).
  std::optional<RawRecord> NextSlow();

  Backend* backend_ = nullptr;
  volatile perf_event_mmap_page* page_ = nullptr;
  const std::byte* data_ = nullptr;
  size_t data_size_ = 0;
  size_t length_ = 0;
  RingMode mode_ = RingMode::kReadWrite;
  bool backward_ = false;

  uint64_t pos_ = 0;
  uint64_t end_ = 0;
  std::vector<std::byte> scratch_;
  std::optional<std::string> error_;
};

}  // namespace perftest
