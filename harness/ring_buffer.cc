#include "harness/ring_buffer.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <cstring>

#include "harness/internal/barrier.h"

namespace perftest {

Result<RingBuffer> RingBuffer::Map(Backend& backend, int fd, size_t data_pages, RingMode mode, bool write_backward) {
  const size_t page = backend.Machine().page_size;
  const size_t length = (1 + data_pages) * page;
  const int prot = mode == RingMode::kReadWrite ? (PROT_READ | PROT_WRITE) : PROT_READ;
  Result<void*> m = backend.Mmap(length, prot, MAP_SHARED, fd, 0);
  if (!m.ok()) return Result<RingBuffer>::FailureFrom(m);

  RingBuffer rb;
  rb.backend_ = &backend;
  rb.page_ = static_cast<volatile perf_event_mmap_page*>(*m);
  rb.length_ = length;
  rb.mode_ = mode;
  rb.backward_ = write_backward;
  // data_offset/data_size exist since page version 0 of Linux 4.1; older
  // kernels leave them 0 and put the data right after the first page.
  const uint64_t offset = rb.page_->data_offset != 0 ? rb.page_->data_offset : page;
  const uint64_t size = rb.page_->data_size != 0 ? rb.page_->data_size : data_pages * page;
  rb.data_ = static_cast<const std::byte*>(*m) + offset;
  rb.data_size_ = size;
  return Result<RingBuffer>::Ok(std::move(rb), m.call_description());
}

RingBuffer::RingBuffer(RingBuffer&& o) noexcept { *this = std::move(o); }

RingBuffer& RingBuffer::operator=(RingBuffer&& o) noexcept {
  if (this != &o) {
    (void)Unmap();
    backend_ = o.backend_;
    page_ = o.page_;
    data_ = o.data_;
    data_size_ = o.data_size_;
    length_ = o.length_;
    mode_ = o.mode_;
    backward_ = o.backward_;
    pos_ = o.pos_;
    end_ = o.end_;
    scratch_ = std::move(o.scratch_);
    error_ = std::move(o.error_);
    o.Reset();
  }
  return *this;
}

RingBuffer::~RingBuffer() { (void)Unmap(); }

void RingBuffer::Reset() noexcept {
  backend_ = nullptr;
  page_ = nullptr;
  data_ = nullptr;
  data_size_ = length_ = 0;
  pos_ = end_ = 0;
}

Result<void> RingBuffer::Unmap() {
  if (page_ == nullptr) return Result<void>::Ok();
  Result<void> r = backend_->Munmap(const_cast<perf_event_mmap_page*>(page_), length_);
  Reset();
  return r;
}

uint64_t RingBuffer::ReadHead() const { return internal::LoadAcquire(&page_->data_head); }
uint64_t RingBuffer::ReadTail() const { return internal::LoadAcquire(&page_->data_tail); }
void RingBuffer::WriteTail(uint64_t tail) { internal::StoreRelease(&page_->data_tail, tail); }

uint64_t RingBuffer::Begin() {
  error_.reset();
  const uint64_t head = ReadHead();
  if (data_size_ == 0) {
    pos_ = end_ = head;
  } else if (mode_ == RingMode::kReadWrite) {
    pos_ = ReadTail();
    end_ = head;
    // A sane page never publishes more than one buffer of unread data, and
    // positions move in whole records (multiples of 8).
    if (end_ - pos_ > data_size_ || pos_ % 8 != 0) {
      error_ = fmt::format("corrupt positions: data_tail={} data_head={} data_size={}", pos_, end_, data_size_);
      pos_ = end_ = head;
    }
  } else if (backward_) {
    // Newest record at data_head; the whole data area behind it may hold older ones.
    pos_ = head;
    end_ = head + data_size_;
  } else if (head <= data_size_) {
    // Forward overwrite that has not wrapped yet: parseable from 0.
    pos_ = 0;
    end_ = head;
  } else {
    // Forward overwrite after a wrap: the oldest record boundary is unknown.
    pos_ = end_ = head;
    error_ = fmt::format("forward overwrite buffer wrapped (data_head={} > data_size={}): record "
                         "boundaries unknown; map with attr.write_backward to read it",
                         head, data_size_);
  }
  return end_ - pos_;
}

std::vector<std::byte> RingBuffer::CopyOut(uint64_t pos, size_t len) const {
  std::vector<std::byte> out(len);
  if (len == 0 || data_size_ == 0) return out;
  const size_t off = pos & (data_size_ - 1);
  const size_t first = std::min(len, data_size_ - off);
  std::memcpy(out.data(), data_ + off, first);
  if (first < len) std::memcpy(out.data() + first, data_, len - first);
  return out;
}

std::optional<RawRecord> RingBuffer::NextSlow() {
  if (end_ - pos_ < sizeof(perf_event_header) || data_size_ == 0) return std::nullopt;
  const size_t off = pos_ & (data_size_ - 1);
  std::optional<RawRecord> out(std::in_place);
  RawRecord& r = *out;
  // Records are 8-byte aligned and data_size is a multiple of 8: a header never wraps.
  std::memcpy(&r.header, data_ + off, sizeof r.header);
  const bool overwrite_backward = mode_ == RingMode::kOverwrite && backward_;
  if (r.header.size == 0 && overwrite_backward) {  // never written
    out.reset();
    return out;
  }
  if (r.header.size < sizeof(perf_event_header) || r.header.size % 8 != 0 || r.header.size > data_size_) {
    error_ = fmt::format("malformed record header at position {} (offset {}): type={} size={}", pos_, off,
                         r.header.type, r.header.size);
    out.reset();
    return out;
  }
  if (r.header.size > end_ - pos_) {
    // Backward overwrite: the oldest record was partly overwritten; stop quietly.
    if (!overwrite_backward) {
      error_ = fmt::format("record at position {} has size {} but only {} bytes are published", pos_,
                           r.header.size, end_ - pos_);
    }
    out.reset();
    return out;
  }
  r.position = pos_;
  if (off + r.header.size <= data_size_) {
    r.bytes = std::span<const std::byte>(data_ + off, r.header.size);
  } else {
    scratch_ = CopyOut(pos_, r.header.size);
    r.bytes = scratch_;
    r.wrapped = true;
  }
  pos_ += r.header.size;
  return out;
}

void RingBuffer::Consume() {
  if (mode_ == RingMode::kReadWrite && page_ != nullptr) WriteTail(pos_);
}

}  // namespace perftest
