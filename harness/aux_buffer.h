// AuxBuffer: the AUX area of an event (Intel PT, CoreSight, SPE trace), its
// read protocol, and the records that describe it.
//
//   Result<RingBuffer> rb = RingBuffer::Map(backend, fd, 8);          // data buffer first, read-write
//   Result<AuxBuffer> aux = AuxBuffer::Map(backend, fd, *rb, 16, AuxMode::kFullTrace);
//   ... for each PERF_RECORD_AUX r in rb:  (ParseAuxRecord())
//     std::vector<std::byte> trace = aux->CopyOut(r.aux_offset, r.aux_size);
//   aux->WriteTail(aux->ReadHead());                                   // full-trace: free the space
//
// Layout (kernel/events/core.c perf_mmap(), the AUX part; <linux/perf_event.h>
// struct perf_event_mmap_page aux_* fields): the reader writes aux_offset and
// aux_size into the data buffer's metadata page, then mmaps aux_size bytes of
// the same fd at offset aux_offset. The kernel requires: the data buffer
// mapped first; aux_offset >= the end of the data buffer and equal to the mmap
// offset; aux_size equal to the mapping's length; a power-of-two page count
// (each EINVAL); a PMU with an AUX area (else EOPNOTSUPP from rb_alloc_aux()).
// aux_head/aux_tail are free-running byte positions like data_head/data_tail.
//
// Modes (rb_alloc_aux() "overwrite = !(flags & RING_BUFFER_WRITABLE)"):
//  - kFullTrace (PROT_READ|PROT_WRITE): the reader owns aux_tail; the PMU never
//    overwrites unread trace; when full the transaction ends TRUNCATED and the
//    event is disabled until re-enabled. perf's minimum is 2 pages.
//  - kSnapshot (PROT_READ): the PMU overwrites old trace; aux_head is where it
//    stopped (Intel PT: the offset inside the buffer); captured on demand by
//    disabling the event (perf-intel-pt.txt "new snapshot option"). perf's
//    minimum is 1 page.
#pragma once

#include <linux/perf_event.h>
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "harness/backend.h"
#include "harness/records.h"
#include "harness/result.h"
#include "harness/ring_buffer.h"

namespace perftest {

enum class AuxMode { kFullTrace, kSnapshot };

// PERF_RECORD_AUX: {aux_offset, aux_size, flags} (+ sample_id trailer).
struct AuxRecord {
  uint64_t aux_offset = 0;
  uint64_t aux_size = 0;
  uint64_t flags = 0;  // PERF_AUX_FLAG_TRUNCATED | OVERWRITE | PARTIAL | COLLISION | PMU format bits
  bool operator==(const AuxRecord&) const = default;
};

// PERF_RECORD_ITRACE_START: {pid, tid} (+ sample_id trailer).
struct ItraceStartRecord {
  uint32_t pid = 0, tid = 0;
  bool operator==(const ItraceStartRecord&) const = default;
};

// Parse the OtherRecord body of a record of that type. Errors: EINVAL, the
// record has another type; EBADMSG, the body is too short.
Result<AuxRecord> ParseAuxRecord(const Record& r);
Result<ItraceStartRecord> ParseItraceStartRecord(const Record& r);

// "TRUNCATED|OVERWRITE" (or "0"), for messages.
std::string DescribeAuxFlags(uint64_t flags);

class AuxBuffer {
 public:
  // Writes aux_offset = rb.mapped_bytes() (right after the data buffer) and
  // aux_size = aux_pages * page size into rb's page, then maps the AUX area
  // (PROT_READ|PROT_WRITE for kFullTrace, PROT_READ for kSnapshot).
  // Errors: EINVAL when rb is not read-write (the page cannot take aux_offset)
  // or aux_pages is 0; otherwise those of mmap(2) on the perf fd (see above).
  static Result<AuxBuffer> Map(Backend& backend, int fd, RingBuffer& rb, size_t aux_pages, AuxMode mode);

  // The raw protocol, for tests of the kernel's checks: writes aux_offset and
  // aux_size into rb's page (when rb is read-write) and mmaps `length` bytes
  // at `offset` with `prot`/`flags`. The caller munmaps a success.
  static Result<void*> MapRaw(Backend& backend, int fd, RingBuffer& rb, uint64_t aux_offset, uint64_t aux_size,
                              size_t length, off_t offset, int prot, int flags = MAP_SHARED);

  AuxBuffer(AuxBuffer&& other) noexcept;
  AuxBuffer& operator=(AuxBuffer&& other) noexcept;
  AuxBuffer(const AuxBuffer&) = delete;
  AuxBuffer& operator=(const AuxBuffer&) = delete;
  ~AuxBuffer();

  // munmap now. Idempotent.
  Result<void> Unmap();

  AuxMode mode() const { return mode_; }
  size_t size() const { return size_; }  // bytes
  std::span<const std::byte> data() const { return {data_, size_}; }

  // aux_head with acquire ordering (read before the data it covers).
  uint64_t ReadHead() const;
  uint64_t ReadTail() const;
  // aux_tail with release ordering: the PMU may reuse [old tail, tail). kFullTrace only.
  void WriteTail(uint64_t tail);

  // `len` bytes from free-running position `pos` (wrapping); len <= size().
  std::vector<std::byte> CopyOut(uint64_t pos, size_t len) const;
  // The data a PERF_RECORD_AUX describes: full-trace, [aux_offset, +aux_size);
  // snapshot (OVERWRITE), the aux_size bytes that end at aux_offset.
  std::vector<std::byte> Take(const AuxRecord& r) const;

 private:
  AuxBuffer() = default;
  void Reset() noexcept;

  Backend* backend_ = nullptr;
  volatile perf_event_mmap_page* page_ = nullptr;
  std::byte* data_ = nullptr;
  size_t size_ = 0;
  AuxMode mode_ = AuxMode::kFullTrace;
};

}  // namespace perftest
