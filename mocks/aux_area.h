// AuxArea: the kernel side of the perf AUX area (kernel/events/ring_buffer.c
// rb_alloc_aux(), perf_aux_output_begin()/perf_aux_output_end(),
// perf_aux_output_flag()) with the Intel PT driver's use of it
// (arch/x86/events/intel/pt.c pt_event_start()/pt_event_stop(),
// intel_pt_interrupt(), pt_event_snapshot_aux()), written into real shared
// memory: the bytes live in the event's memfd at aux_offset, so a reader's
// mmap(2) of that offset sees them.
//
//   auto aux = AuxArea::Create(memfd, aux_offset, nr_pages, 4096, /*overwrite=*/false, aux_watermark, user_page);
//   if ((*aux)->Begin() == AuxArea::BeginResult::kFull) { /* pending_disable + wakeup */ }
//   for (const AuxArea::End& e : (*aux)->Write(trace_bytes)) emit_aux_record(e);   // PMIs at the watermark
//   AuxArea::End last = (*aux)->Stop();                                             // sched-out / disable
//
// Full-trace mode (the AUX mapping had PROT_WRITE): the writer never passes
// aux_tail; a transaction ends (PERF_RECORD_AUX {aux_offset, aux_size, flags})
// each time aux_head crosses an aux_watermark boundary (the PT driver places
// its PMI there) and when the event stops; trace that does not fit is dropped,
// the transaction ends with PERF_AUX_FLAG_TRUNCATED, a wakeup and the event's
// disabling (perf_event_disable_inatomic()). Model simplification: the
// hardware stops at the exact byte where the free space ends (PT's ToPA STOP
// works at output-region granularity).
//
// Snapshot mode (the AUX mapping was PROT_READ only, rb->aux_overwrite): the
// trace wraps and overwrites; aux_head is the write offset inside the buffer
// (pt_update_head() in snapshot mode); stopping ends the transaction with
// aux_offset = that offset, aux_size = the whole buffer and
// PERF_AUX_FLAG_OVERWRITE (pt_event_stop() with buf->snapshot). No wakeups
// (rb_need_aux_wakeup() is false in overwrite mode).
#pragma once

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "harness/result.h"

namespace perftest::mock {

struct MockEvent;

// perf_prepare_sample_aux() + perf_aux_sample_output(): the PERF_SAMPLE_AUX
// data of a sample `ev` takes, at most `size` bytes (a multiple of 8): the
// newest trace of its AUX event (the group leader that perf_get_aux_event()
// chose), or nothing when that event is not ACTIVE or has no AUX area.
// Defined in mocks/mock_aux.cc.
std::vector<std::byte> AuxSampleData(const MockEvent& ev, size_t size);

class AuxArea {
 public:
  // What perf_aux_output_end() did for one transaction.
  struct End {
    bool record = false;     // a PERF_RECORD_AUX is due ("size || flags & ~OVERWRITE")
    uint64_t aux_offset = 0;  // its aux_offset: where the data starts (free running; snapshot: the head offset)
    uint64_t aux_size = 0;    // its aux_size, bytes
    uint64_t flags = 0;       // PERF_AUX_FLAG_*
    bool wakeup = false;      // perf_output_wakeup() of the data buffer: POLLIN
    bool disable = false;     // TRUNCATED: perf_event_disable_inatomic()
  };

  enum class BeginResult {
    kStarted,  // a transaction is open
    kFull,     // full-trace mode with no free space: pending_disable and a wakeup, no record
  };

  // rb_alloc_aux(): grows `memfd` to cover [aux_offset, aux_offset + nr_pages *
  // page_size), maps the writer view and sets the watermark: aux_watermark, or
  // half the buffer when 0 (full-trace mode only). `user_page` is the data
  // buffer's metadata page (aux_head is published there, aux_tail read).
  // Errors: errno of ftruncate(2)/mmap(2); EINVAL for nr_pages 0.
  static Result<std::shared_ptr<AuxArea>> Create(int memfd, uint64_t aux_offset, size_t nr_pages, size_t page_size,
                                                 bool overwrite, uint64_t aux_watermark,
                                                 volatile perf_event_mmap_page* user_page);
  ~AuxArea();
  AuxArea(const AuxArea&) = delete;
  AuxArea& operator=(const AuxArea&) = delete;

  // perf_aux_output_begin() as pt_event_start() calls it.
  BeginResult Begin();
  // Trace bytes while a transaction is open; returns the transactions that
  // ended on the way (watermark PMIs; the TRUNCATED one, after which the
  // transaction stays closed). No-op when no transaction is open.
  std::vector<End> Write(std::span<const uint8_t> bytes);
  // pt_event_stop(PERF_EF_UPDATE): ends the open transaction (record=false,
  // nothing happens, when none is open).
  End Stop();
  // perf_aux_output_flag(): ORs `flags` into the open transaction.
  void Flag(uint64_t flags) { flags_ |= flags; }

  // pt_event_snapshot_aux() -> perf_output_copy_aux(): the `size` bytes before
  // the write position (wrapping), size <= aux_size(). Snapshot mode only.
  std::vector<std::byte> CopyTail(size_t size) const;

  bool open() const { return open_; }
  bool overwrite() const { return overwrite_; }
  size_t aux_size() const { return nr_pages_ * page_size_; }
  size_t nr_pages() const { return nr_pages_; }
  uint64_t aux_offset() const { return aux_offset_; }
  uint64_t watermark() const { return watermark_; }
  uint64_t head() const { return head_; }  // rb->aux_head
  uint64_t dropped() const { return dropped_; }  // trace bytes lost to a full buffer (model statistic)

  // Live AUX mappings (rb->aux_mmap_count).
  int mmap_count = 0;
  // Of its nr_pages, those charged to pinned_vm (RLIMIT_MEMLOCK) rather than
  // to the user's locked_vm (rb->aux_mmap_locked; perf_mmap_calc_limits()).
  uint64_t mmap_locked = 0;

 private:
  AuxArea() = default;
  End EndTransaction(uint64_t size);
  void Copy(uint64_t pos, std::span<const uint8_t> bytes);

  std::byte* base_ = nullptr;  // writer view of the AUX pages
  volatile perf_event_mmap_page* page_ = nullptr;
  uint64_t aux_offset_ = 0;
  size_t page_size_ = 0;
  size_t nr_pages_ = 0;
  bool overwrite_ = false;
  uint64_t watermark_ = 0;  // rb->aux_watermark
  uint64_t head_ = 0;       // rb->aux_head (snapshot: offset inside the buffer)
  uint64_t wakeup_ = 0;     // rb->aux_wakeup
  bool open_ = false;
  uint64_t flags_ = 0;       // handle->aux_flags
  uint64_t room_ = 0;        // handle->size: bytes the open transaction may still write (full-trace)
  uint64_t pending_ = 0;     // bytes written in the open transaction
  uint64_t snap_pos_ = 0;    // snapshot: write offset inside the buffer
  uint64_t dropped_ = 0;
};

}  // namespace perftest::mock
