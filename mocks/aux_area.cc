#include "mocks/aux_area.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace perftest::mock {

Result<std::shared_ptr<AuxArea>> AuxArea::Create(int memfd, uint64_t aux_offset, size_t nr_pages, size_t page_size,
                                                 bool overwrite, uint64_t aux_watermark,
                                                 volatile perf_event_mmap_page* user_page) {
  using R = Result<std::shared_ptr<AuxArea>>;
  const std::string call = fmt::format("rb_alloc_aux(memfd={}, pgoff={}, nr_pages={}, overwrite={})", memfd,
                                       aux_offset / page_size, nr_pages, overwrite);
  if (nr_pages == 0) return R::Failure(EINVAL, call);
  const size_t size = nr_pages * page_size;
  // The AUX pages are fresh zeroed pages: clear the range, then make sure the file covers it.
  struct stat st{};
  if (::fstat(memfd, &st) != 0) return R::Failure(errno, call);
  const off_t end = static_cast<off_t>(aux_offset + size);
  if (st.st_size > static_cast<off_t>(aux_offset)) {
    if (::ftruncate(memfd, static_cast<off_t>(aux_offset)) != 0) return R::Failure(errno, call);
  }
  if (::ftruncate(memfd, end) != 0) return R::Failure(errno, call);
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, static_cast<off_t>(aux_offset));
  if (p == MAP_FAILED) return R::Failure(errno == 0 ? ENOMEM : errno, call);

  std::shared_ptr<AuxArea> a(new AuxArea());
  a->base_ = static_cast<std::byte*>(p);
  a->page_ = user_page;
  a->aux_offset_ = aux_offset;
  a->page_size_ = page_size;
  a->nr_pages_ = nr_pages;
  a->overwrite_ = overwrite;
  // rb_alloc_aux(): "Watermark defaults to half the buffer" (full-trace only;
  // overwrite mode never wakes up).
  a->watermark_ = aux_watermark;
  if (!overwrite && a->watermark_ == 0) a->watermark_ = std::min<uint64_t>(UINT32_MAX, size / 2);
  if (a->watermark_ > size) a->watermark_ = size;
  return R::Ok(std::move(a), call);
}

AuxArea::~AuxArea() {
  if (base_ != nullptr) ::munmap(base_, aux_size());
}

void AuxArea::Copy(uint64_t pos, std::span<const uint8_t> bytes) {
  const size_t size = aux_size();
  size_t done = 0;
  while (done < bytes.size()) {
    const size_t off = (pos + done) & (size - 1);
    const size_t n = std::min(bytes.size() - done, size - off);
    std::memcpy(base_ + off, bytes.data() + done, n);
    done += n;
  }
}

AuxArea::BeginResult AuxArea::Begin() {
  flags_ = 0;
  pending_ = 0;
  if (overwrite_) {
    open_ = true;
    return BeginResult::kStarted;
  }
  // perf_aux_output_begin(): handle->size = CIRC_SPACE(aux_head, aux_tail,
  // aux size) unless the reader is a whole buffer behind; 0 -> pending_disable.
  const uint64_t tail = __atomic_load_n(&const_cast<perf_event_mmap_page*>(page_)->aux_tail, __ATOMIC_ACQUIRE);
  const uint64_t size = aux_size();
  room_ = head_ - tail < size ? ((tail - (head_ + 1)) & (size - 1)) : 0;
  if (room_ == 0) {
    open_ = false;
    return BeginResult::kFull;
  }
  open_ = true;
  return BeginResult::kStarted;
}

AuxArea::End AuxArea::EndTransaction(uint64_t size) {
  End e;
  auto* pg = const_cast<perf_event_mmap_page*>(page_);
  if (overwrite_) {
    // perf_aux_output_end(), overwrite: the driver hands the head in.
    flags_ |= PERF_AUX_FLAG_OVERWRITE;
    head_ = snap_pos_;
    e.aux_offset = head_;
  } else {
    flags_ &= ~static_cast<uint64_t>(PERF_AUX_FLAG_OVERWRITE);
    e.aux_offset = head_;
    head_ += size;
  }
  e.aux_size = size;
  e.flags = flags_;
  e.record = size != 0 || (flags_ & ~static_cast<uint64_t>(PERF_AUX_FLAG_OVERWRITE)) != 0;
  __atomic_store_n(&pg->aux_head, head_, __ATOMIC_RELEASE);
  e.wakeup = (flags_ & PERF_AUX_FLAG_TRUNCATED) != 0;
  // rb_need_aux_wakeup().
  if (!overwrite_ && head_ - wakeup_ >= watermark_) {
    wakeup_ = head_ / watermark_ * watermark_;
    e.wakeup = true;
  }
  e.disable = (flags_ & PERF_AUX_FLAG_TRUNCATED) != 0;
  open_ = false;
  flags_ = 0;
  pending_ = 0;
  return e;
}

std::vector<AuxArea::End> AuxArea::Write(std::span<const uint8_t> bytes) {
  std::vector<End> ends;
  if (!open_) {
    dropped_ += bytes.size();
    return ends;
  }
  if (overwrite_) {
    // Wraps and overwrites; only the last aux_size bytes matter.
    const size_t size = aux_size();
    std::span<const uint8_t> rest = bytes;
    if (rest.size() > size) {
      snap_pos_ = (snap_pos_ + rest.size() - size) & (size - 1);
      rest = rest.subspan(rest.size() - size);
    }
    Copy(snap_pos_, rest);
    snap_pos_ = (snap_pos_ + rest.size()) & (size - 1);
    pending_ += bytes.size();
    return ends;
  }
  size_t done = 0;
  while (done < bytes.size()) {
    const uint64_t cur = head_ + pending_;
    const uint64_t pmi_at = wakeup_ + watermark_;
    const uint64_t to_pmi = pmi_at > cur ? pmi_at - cur : 0;
    const uint64_t n = std::min<uint64_t>({bytes.size() - done, room_, to_pmi});
    Copy(cur, bytes.subspan(done, n));
    done += n;
    pending_ += n;
    room_ -= n;
    if (head_ + pending_ == pmi_at) {
      // intel_pt_interrupt(): end at the PMI, begin again.
      ends.push_back(EndTransaction(pending_));
      if (Begin() == BeginResult::kFull) {
        End full;
        full.wakeup = true;
        full.disable = true;  // event->pending_disable
        ends.push_back(full);
        dropped_ += bytes.size() - done;
        return ends;
      }
      continue;
    }
    if (done < bytes.size() && room_ == 0) {
      // The buffer is full: the hardware stops, the trace is lost.
      flags_ |= PERF_AUX_FLAG_TRUNCATED;
      ends.push_back(EndTransaction(pending_));
      dropped_ += bytes.size() - done;
      return ends;
    }
  }
  return ends;
}

AuxArea::End AuxArea::Stop() {
  if (!open_) return End{};
  if (overwrite_) return EndTransaction(aux_size());
  return EndTransaction(pending_);
}

std::vector<std::byte> AuxArea::CopyTail(size_t size) const {
  const size_t total = aux_size();
  size = std::min(size, total);
  std::vector<std::byte> out(size);
  const uint64_t from = (snap_pos_ + total - size) & (total - 1);
  for (size_t i = 0; i < size; ++i) out[i] = base_[(from + i) & (total - 1)];
  return out;
}

}  // namespace perftest::mock
