#include "mocks/mock_ring_buffer.h"

#include <fmt/format.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

namespace perftest::mock {
namespace {

// include/linux/circ_buf.h: free space between a producer at `head` and a
// consumer at `tail`, one byte always kept free.
uint64_t CircSpace(uint64_t head, uint64_t tail, uint64_t size) { return (tail - (head + 1)) & (size - 1); }

// ring_buffer.c ring_buffer_has_space().
bool HasSpace(uint64_t head, uint64_t tail, uint64_t data_size, uint64_t size, bool backward) {
  return backward ? CircSpace(tail, head, data_size) >= size : CircSpace(head, tail, data_size) >= size;
}

}  // namespace

Result<std::shared_ptr<MockRingBuffer>> MockRingBuffer::Create(int memfd, size_t page_size, size_t nr_pages,
                                                               bool writable, uint64_t wakeup_watermark) {
  using R = Result<std::shared_ptr<MockRingBuffer>>;
  const size_t length = (1 + nr_pages) * page_size;
  const std::string call = fmt::format("rb_alloc(memfd={}, nr_pages={})", memfd, nr_pages);
  // rb_alloc() hands out zeroed pages: truncating to 0 drops any earlier buffer's data.
  if (::ftruncate(memfd, 0) != 0 || ::ftruncate(memfd, static_cast<off_t>(length)) != 0) {
    return R::Failure(errno, call);
  }
  void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
  if (p == MAP_FAILED) return R::Failure(errno == 0 ? ENOMEM : errno, call);

  std::shared_ptr<MockRingBuffer> rb(new MockRingBuffer());
  rb->base_ = static_cast<std::byte*>(p);
  rb->page_size_ = page_size;
  rb->nr_pages_ = nr_pages;

  // ring_buffer_init().
  const uint64_t max_size = rb->data_size();
  if (wakeup_watermark != 0) rb->watermark_ = std::min<uint64_t>(max_size, wakeup_watermark);
  if (rb->watermark_ == 0) rb->watermark_ = max_size / 2;
  rb->overwrite_ = !writable;
  // "perf_output_begin() only checks rb->paused, therefore rb->paused must be
  // true if we have no pages for output."
  rb->paused_ = nr_pages == 0;

  // perf_event_init_userpage(): version and compat_version stay 0.
  auto* pg = reinterpret_cast<volatile perf_event_mmap_page*>(rb->base_);
  pg->cap_bit0_is_deprecated = 1;
  pg->size = offsetof(perf_event_mmap_page, __reserved);
  pg->data_offset = page_size;
  pg->data_size = max_size;
  return R::Ok(std::move(rb), call);
}

MockRingBuffer::~MockRingBuffer() {
  if (base_ != nullptr) ::munmap(base_, mapped_length());
}

void MockRingBuffer::Copy(uint64_t pos, std::span<const std::byte> bytes) {
  std::byte* data = base_ + page_size_;
  const size_t size = data_size();
  size_t done = 0;
  while (done < bytes.size()) {
    const size_t off = (pos + done) & (size - 1);
    const size_t n = std::min(bytes.size() - done, size - off);
    std::memcpy(data + off, bytes.data() + done, n);
    done += n;
  }
}

MockRingBuffer::Outcome MockRingBuffer::Output(std::span<const std::byte> record, const OutputOptions& opt,
                                               uint64_t* lost_samples) {
  // __perf_output_begin(): a paused buffer loses the record. Every lost
  // record counts in event->lost_samples (PERF_FORMAT_LOST), samples and
  // side-band alike: "local_inc(&rb->lost); atomic64_inc(&event->lost_samples);"
  // (checked on Linux 6.18: a dummy event's lost MMAP records are counted).
  if (paused_) {
    if (nr_pages_ == 0) return Outcome::kNoPages;
    ++lost_;
    if (lost_samples != nullptr) ++*lost_samples;
    return Outcome::kLost;
  }

  std::vector<std::byte> lost_record;
  if (lost_ != 0 && opt.make_lost) lost_record = opt.make_lost(lost_);
  const uint64_t size = record.size() + lost_record.size();

  auto* pg = reinterpret_cast<perf_event_mmap_page*>(base_);
  // perf_output_get_handle(): handle->wakeup = rb->wakeup.
  const uint64_t wakeup_before = wakeup_;
  // Control dependency (A) of perf_output_put_handle()'s comment: the tail is
  // read before any data is stored.
  const uint64_t tail = __atomic_load_n(&pg->data_tail, __ATOMIC_ACQUIRE);
  uint64_t head = head_;
  const uint64_t offset = head;
  if (!overwrite_ && !HasSpace(head, tail, data_size(), size, opt.backward)) {
    // fail: local_inc(&rb->lost); atomic64_inc(&event->lost_samples); the
    // handle is put without a head change.
    ++lost_;
    if (lost_samples != nullptr) ++*lost_samples;
    return Outcome::kLost;
  }
  head = opt.backward ? head - size : head + size;
  head_ = head;
  // Backward: the record starts at the new (lower) head, and the wakeup
  // arithmetic runs on -head.
  const uint64_t write_at = opt.backward ? head : offset;
  const uint64_t wm_head = opt.backward ? static_cast<uint64_t>(-head) : head;
  if (wm_head - wakeup_ > watermark_) wakeup_ += watermark_;

  if (!lost_record.empty()) {
    // lost_event.lost = local_xchg(&rb->lost, 0), written in front.
    lost_ = 0;
    Copy(write_at, lost_record);
  }
  Copy(write_at + lost_record.size(), record);

  // perf_output_sample(): wakeup_events counts samples written.
  if (opt.sample && opt.wakeup_events != 0) {
    if (++events_ >= opt.wakeup_events) {
      events_ -= opt.wakeup_events;
      ++wakeup_;
    }
  }

  // perf_output_put_handle(): smp_wmb(); data_head = head; then the wakeup.
  __atomic_store_n(&pg->data_head, head_, __ATOMIC_RELEASE);
  if (wakeup_ != wakeup_before) poll_ = POLLIN | POLLRDNORM;
  return Outcome::kWritten;
}

void MockRingBuffer::UpdateUserPage(const UserPage& u) {
  auto* pg = reinterpret_cast<volatile perf_event_mmap_page*>(base_);
  // perf_event_update_userpage(): ++lock; barrier(); fields; barrier(); ++lock.
  pg->lock = pg->lock + 1;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  pg->index = u.index;
  pg->offset = u.offset;
  pg->time_enabled = u.time_enabled;
  pg->time_running = u.time_running;
  pg->cap_user_rdpmc = u.cap_user_rdpmc ? 1 : 0;
  pg->pmc_width = u.pmc_width;
  pg->cap_user_time = u.time.cap_user_time ? 1 : 0;
  pg->cap_user_time_zero = u.time.cap_user_time_zero ? 1 : 0;
  pg->cap_user_time_short = u.time.cap_user_time_short ? 1 : 0;
  pg->time_shift = u.time.time_shift;
  pg->time_mult = u.time.time_mult;
  pg->time_offset = u.time.time_offset;
  // x86 leaves time_zero alone when cap_user_time_zero is 0 (0 from perf_event_init_userpage()).
  if (u.time.cap_user_time_zero) pg->time_zero = u.time.time_zero;
  pg->time_cycles = u.time.time_cycles;
  pg->time_mask = u.time.time_mask;
  __atomic_thread_fence(__ATOMIC_RELEASE);
  pg->lock = pg->lock + 1;
}

}  // namespace perftest::mock
