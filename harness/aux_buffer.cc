#include "harness/aux_buffer.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "harness/internal/barrier.h"

namespace perftest {
namespace {

const std::vector<std::byte>* BodyOf(const Record& r) {
  const auto* o = std::get_if<OtherRecord>(&r.body);
  return o == nullptr ? nullptr : &o->body;
}

}  // namespace

Result<AuxRecord> ParseAuxRecord(const Record& r) {
  const std::string call = fmt::format("parse PERF_RECORD_AUX (type {}, size {})", r.header.type, r.header.size);
  if (r.header.type != PERF_RECORD_AUX) return Result<AuxRecord>::Failure(EINVAL, call);
  const std::vector<std::byte>* b = BodyOf(r);
  if (b == nullptr || b->size() < 24) return Result<AuxRecord>::Failure(EBADMSG, call);
  AuxRecord a;
  std::memcpy(&a.aux_offset, b->data(), 8);
  std::memcpy(&a.aux_size, b->data() + 8, 8);
  std::memcpy(&a.flags, b->data() + 16, 8);
  return Result<AuxRecord>::Ok(a, call);
}

Result<ItraceStartRecord> ParseItraceStartRecord(const Record& r) {
  const std::string call =
      fmt::format("parse PERF_RECORD_ITRACE_START (type {}, size {})", r.header.type, r.header.size);
  if (r.header.type != PERF_RECORD_ITRACE_START) return Result<ItraceStartRecord>::Failure(EINVAL, call);
  const std::vector<std::byte>* b = BodyOf(r);
  if (b == nullptr || b->size() < 8) return Result<ItraceStartRecord>::Failure(EBADMSG, call);
  ItraceStartRecord s;
  std::memcpy(&s.pid, b->data(), 4);
  std::memcpy(&s.tid, b->data() + 4, 4);
  return Result<ItraceStartRecord>::Ok(s, call);
}

std::string DescribeAuxFlags(uint64_t flags) {
  std::vector<std::string> parts;
  if (flags & PERF_AUX_FLAG_TRUNCATED) parts.push_back("TRUNCATED");
  if (flags & PERF_AUX_FLAG_OVERWRITE) parts.push_back("OVERWRITE");
  if (flags & PERF_AUX_FLAG_PARTIAL) parts.push_back("PARTIAL");
  if (flags & PERF_AUX_FLAG_COLLISION) parts.push_back("COLLISION");
  const uint64_t rest = flags & ~uint64_t{0xf};
  if (rest != 0) parts.push_back(fmt::format("{:#x}", rest));
  return parts.empty() ? "0" : fmt::format("{}", fmt::join(parts, "|"));
}

Result<void*> AuxBuffer::MapRaw(Backend& backend, int fd, RingBuffer& rb, uint64_t aux_offset, uint64_t aux_size,
                                size_t length, off_t offset, int prot, int flags) {
  if (rb.mode() == RingMode::kReadWrite && rb.mapped_bytes() != 0) {
    auto* pg = const_cast<volatile perf_event_mmap_page*>(&rb.page());
    pg->aux_offset = aux_offset;
    pg->aux_size = aux_size;
  }
  return backend.Mmap(length, prot, flags, fd, offset);
}

Result<AuxBuffer> AuxBuffer::Map(Backend& backend, int fd, RingBuffer& rb, size_t aux_pages, AuxMode mode) {
  const size_t page = backend.Machine().page_size;
  const std::string call = fmt::format("map AUX area (fd={}, {} pages, {})", fd, aux_pages,
                                       mode == AuxMode::kFullTrace ? "full-trace" : "snapshot");
  if (rb.mode() != RingMode::kReadWrite || rb.mapped_bytes() == 0) {
    return Result<AuxBuffer>::Failure(EINVAL, call + ": the data buffer must be mapped read-write to set aux_offset");
  }
  if (aux_pages == 0) return Result<AuxBuffer>::Failure(EINVAL, call + ": 0 pages");
  const uint64_t offset = rb.mapped_bytes();
  const size_t size = aux_pages * page;
  const int prot = mode == AuxMode::kFullTrace ? (PROT_READ | PROT_WRITE) : PROT_READ;
  Result<void*> m = MapRaw(backend, fd, rb, offset, size, size, static_cast<off_t>(offset), prot);
  if (!m.ok()) return Result<AuxBuffer>::FailureFrom(m);
  AuxBuffer a;
  a.backend_ = &backend;
  a.page_ = const_cast<volatile perf_event_mmap_page*>(&rb.page());
  a.data_ = static_cast<std::byte*>(*m);
  a.size_ = size;
  a.mode_ = mode;
  return Result<AuxBuffer>::Ok(std::move(a), m.call_description());
}

AuxBuffer::AuxBuffer(AuxBuffer&& o) noexcept { *this = std::move(o); }

AuxBuffer& AuxBuffer::operator=(AuxBuffer&& o) noexcept {
  if (this != &o) {
    (void)Unmap();
    backend_ = o.backend_;
    page_ = o.page_;
    data_ = o.data_;
    size_ = o.size_;
    mode_ = o.mode_;
    o.Reset();
  }
  return *this;
}

AuxBuffer::~AuxBuffer() { (void)Unmap(); }

void AuxBuffer::Reset() noexcept {
  backend_ = nullptr;
  page_ = nullptr;
  data_ = nullptr;
  size_ = 0;
}

Result<void> AuxBuffer::Unmap() {
  if (backend_ == nullptr || data_ == nullptr) return Result<void>::Ok({}, "munmap(AUX, already unmapped)");
  Result<void> r = backend_->Munmap(data_, size_);
  Reset();
  return r;
}

uint64_t AuxBuffer::ReadHead() const { return internal::LoadAcquire(&page_->aux_head); }
uint64_t AuxBuffer::ReadTail() const { return page_->aux_tail; }
void AuxBuffer::WriteTail(uint64_t tail) { internal::StoreRelease(&page_->aux_tail, tail); }

std::vector<std::byte> AuxBuffer::CopyOut(uint64_t pos, size_t len) const {
  len = std::min(len, size_);
  std::vector<std::byte> out(len);
  size_t done = 0;
  while (done < len) {
    const size_t off = (pos + done) & (size_ - 1);
    const size_t n = std::min(len - done, size_ - off);
    std::memcpy(out.data() + done, data_ + off, n);
    done += n;
  }
  return out;
}

std::vector<std::byte> AuxBuffer::Take(const AuxRecord& r) const {
  const size_t len = std::min<uint64_t>(r.aux_size, size_);
  if (r.flags & PERF_AUX_FLAG_OVERWRITE) return CopyOut(r.aux_offset + size_ - len, len);
  return CopyOut(r.aux_offset, len);
}

}  // namespace perftest
