// MockRingBuffer: the kernel side of the perf mmap ring buffer
// (kernel/events/ring_buffer.c), written into real shared memory.
//
//   auto rb = MockRingBuffer::Create(memfd, 4096, /*nr_pages=*/8, /*writable=*/true, /*watermark=*/0);
//   void* user = mmap(nullptr, (*rb)->mapped_length(), PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
//   (*rb)->Output(record_bytes, opts, &event.lost_samples);   // perf_output_begin() .. perf_output_end()
//   uint32_t revents = (*rb)->TakePoll();                       // perf_poll()
//
// The buffer lives in a memfd: one metadata page (struct perf_event_mmap_page)
// and nr_pages (0 or a power of two) data pages. The writer keeps its own
// MAP_SHARED view; a reader maps the same memfd, so it reads genuine shared
// memory. Positions are free-running u64 byte counters (data_head, data_tail).
//
// Modelled from ring_buffer.c:
//  - ring_buffer_init(): watermark = min(data size, attr.wakeup_watermark) when
//    attr.watermark, else data size / 2; overwrite unless the creating mapping
//    was writable; a buffer without data pages is permanently paused.
//  - __perf_output_begin(): a paused buffer counts the record in rb->lost (only
//    if it has data pages); a pending lost count reserves a PERF_RECORD_LOST in
//    front of the record; outside overwrite mode the record must fit in
//    CIRC_SPACE(head, tail) (backward: CIRC_SPACE(tail, head)) or it is dropped
//    and counted in rb->lost; the wakeup mark advances by one watermark when
//    (head or, backward, -head) - wakeup > watermark.
//  - perf_output_sample() (core.c): with !attr.watermark and wakeup_events = N,
//    every N-th sample written advances the wakeup mark.
//  - perf_output_put_handle(): data_head published with release ordering; a
//    moved wakeup mark sets rb->poll = POLLIN|POLLRDNORM (perf_output_wakeup()).
#pragma once

#include <linux/perf_event.h>
#include <poll.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "harness/result.h"
#include "harness/user_time.h"
#include "mocks/aux_area.h"
#include "mocks/sched_clock.h"

namespace perftest::mock {

// How one record is written, as the writing event asks for it.
struct OutputOptions {
  bool backward = false;       // attr.write_backward: perf_output_begin_backward()
  bool sample = false;         // PERF_RECORD_SAMPLE: counts toward wakeup_events
  uint32_t wakeup_events = 0;  // attr.wakeup_events when !attr.watermark, else 0
  // Builds the PERF_RECORD_LOST {id, lost} record (with the writer's sample_id
  // trailer) that precedes the record when earlier records were lost.
  std::function<std::vector<std::byte>(uint64_t lost)> make_lost;
};

class MockRingBuffer {
 public:
  enum class Outcome {
    kWritten,  // published
    kLost,     // no room (or paused): counted in lost, a PERF_RECORD_LOST follows later
    kNoPages,  // a metadata-page-only buffer: nothing is ever written or counted
  };

  // Truncates `memfd` to (1 + nr_pages) pages of zeroes, maps the writer view
  // and initialises the metadata page (perf_event_init_userpage()).
  // `writable`: the mapping that creates the buffer has PROT_WRITE
  // (RING_BUFFER_WRITABLE); otherwise the buffer overwrites (data_tail ignored).
  // `wakeup_watermark`: attr.watermark ? attr.wakeup_watermark : 0.
  // Errors: errno of ftruncate(2) or mmap(2) (ENOMEM, EFBIG).
  static Result<std::shared_ptr<MockRingBuffer>> Create(int memfd, size_t page_size, size_t nr_pages, bool writable,
                                                        uint64_t wakeup_watermark);
  ~MockRingBuffer();
  MockRingBuffer(const MockRingBuffer&) = delete;
  MockRingBuffer& operator=(const MockRingBuffer&) = delete;

  // Writes one whole record (header included, size a multiple of 8).
  // `lost_samples` (may be null) is the writing event's PERF_FORMAT_LOST count,
  // bumped for every record lost (samples and side-band records alike).
  Outcome Output(std::span<const std::byte> record, const OutputOptions& opt, uint64_t* lost_samples);

  // PERF_EVENT_IOC_PAUSE_OUTPUT (rb_toggle_paused()): a buffer without data
  // pages stays paused.
  void SetPaused(bool pause) { paused_ = pause || nr_pages_ == 0; }
  bool paused() const { return paused_; }

  // perf_poll(): returns rb->poll and clears it (atomic_xchg(&rb->poll, 0)).
  uint32_t TakePoll() {
    const uint32_t p = poll_;
    poll_ = 0;
    return p;
  }

  // perf_output_wakeup() outside a record (AUX transactions): POLLIN.
  void Wakeup() { poll_ = POLLIN | POLLRDNORM; }

  // perf_event_update_userpage(): the fields it writes between the two
  // increments of `lock` (arch_perf_update_userpage() for cap_user_rdpmc,
  // pmc_width and the time fields: all zero unless the profile has a
  // sched_clock_counter, mocks/sched_clock.h).
  struct UserPage {
    uint32_t index = 0;        // perf_event_index(): rdpmc counter + 1 while ACTIVE on a counter, else 0
    int64_t offset = 0;        // count, minus the counter's sign-extended value when index != 0
    uint64_t time_enabled = 0;
    uint64_t time_running = 0;
    bool cap_user_rdpmc = false;  // x86: the event is mmapped (PERF_EVENT_FLAG_USER_READ_CNT)
    uint16_t pmc_width = 0;       // x86_pmu.cntval_bits (0 without a PMU)
    UserTimeFields time;          // cap_user_time*, time_shift/mult/offset/zero/cycles/mask
  };
  void UpdateUserPage(const UserPage& u);
  void UpdateUserPage(uint64_t count, uint64_t time_enabled, uint64_t time_running) {
    UpdateUserPage(UserPage{0, static_cast<int64_t>(count), time_enabled, time_running, false, 0, {}});
  }
  // The same at perf time `now`, with the time fields of `sched_clock` (if set)
  // for an event with attr.use_clockid `use_clockid`.
  void UpdateUserPage(uint64_t count, uint64_t time_enabled, uint64_t time_running, uint64_t now, bool use_clockid) {
    UserPage u{0, static_cast<int64_t>(count), time_enabled, time_running, false, 0, {}};
    if (sched_clock != nullptr) u.time = sched_clock->PageFields(now, use_clockid);
    UpdateUserPage(u);
  }
  // The machine's sched_clock counter (MockBackend sets it; null: none).
  const SchedClockCounter* sched_clock = nullptr;

  size_t page_size() const { return page_size_; }
  size_t nr_pages() const { return nr_pages_; }
  size_t data_size() const { return nr_pages_ * page_size_; }
  size_t mapped_length() const { return (1 + nr_pages_) * page_size_; }
  bool overwrite() const { return overwrite_; }
  uint64_t head() const { return head_; }
  uint64_t lost() const { return lost_; }
  uint64_t watermark() const { return watermark_; }

  // Live user mappings of this buffer (perf_mmap()/perf_mmap_close() rb->mmap_count).
  int mmap_count = 0;
  // The AUX area (rb->aux_*), once mapped (mocks/aux_area.h).
  std::shared_ptr<AuxArea> aux;
  // The metadata page (struct perf_event_mmap_page), writer view.
  volatile perf_event_mmap_page* user_page() const { return reinterpret_cast<volatile perf_event_mmap_page*>(base_); }

 private:
  MockRingBuffer() = default;
  void Copy(uint64_t pos, std::span<const std::byte> bytes);

  std::byte* base_ = nullptr;  // writer view: metadata page, then the data pages
  size_t page_size_ = 0;
  size_t nr_pages_ = 0;
  bool overwrite_ = false;
  bool paused_ = false;
  uint64_t watermark_ = 0;
  uint64_t head_ = 0;    // rb->head
  uint64_t lost_ = 0;    // rb->lost
  uint64_t wakeup_ = 0;  // rb->wakeup
  uint64_t events_ = 0;  // rb->events (wakeup_events accounting)
  uint32_t poll_ = 0;    // rb->poll
};

}  // namespace perftest::mock
