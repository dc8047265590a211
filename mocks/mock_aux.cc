// MockBackend, the AUX area and the intel_pt PMU: perf_mmap()'s AUX part
// (kernel/events/core.c), the PT driver's start/stop/PMI use of the AUX
// transactions (arch/x86/events/intel/pt.c), PERF_RECORD_AUX and
// PERF_RECORD_ITRACE_START, and PERF_SAMPLE_AUX data.
#include <fmt/format.h>
#include <linux/perf_event.h>
#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cerrno>

#include "mocks/aux_area.h"
#include "mocks/intel_pt_pmu.h"
#include "mocks/internal/mock_backend_impl.h"

namespace perftest::mock {
namespace {

template <typename T>
Result<T> Fail(int err, const std::string& call, const std::string& why) {
  return Result<T>::Failure(err, fmt::format("{} [mock: {}]", call, why));
}

void PutU64(std::vector<std::byte>* out, uint64_t v) {
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  out->insert(out->end(), p, p + sizeof v);
}

}  // namespace

const pt_sim::GroundTruth* MockBackend::PtGroundTruth(int fd) {
  MockEvent* ev = FindFd(fd);
  if (ev == nullptr || ev->pmu != PmuId::kIntelPt || ev->pt_source == nullptr) return nullptr;
  return ev->pt_source->ground_truth();
}

// pt_event_init() (pt_event_valid()), then perf_event_alloc()'s
// exclusive_event_init() and perf_event_open()'s exclusive_event_installable()
// for a PERF_PMU_CAP_EXCLUSIVE PMU: per-task and CPU-wide intel_pt events do
// not mix, and one context holds one intel_pt event.
int MockBackend::PtEventInit(MockEvent& ev, const Pmu& pmu, std::string* why) {
  if (int err = PtEventValid(ev.attr.config, pmu, why)) return err;
  for (const auto& e : events_) {
    if (e->pmu != PmuId::kIntelPt || e->fd < 0) continue;
    if ((e->pid == -1) != (ev.pid == -1)) {
      *why = "per-task and CPU-wide intel_pt events cannot coexist (exclusive_event_init())";
      return EBUSY;
    }
    if (e->pid == ev.pid && e->cpu == ev.cpu) {
      *why = "the context already has an intel_pt event (exclusive_event_installable())";
      return EBUSY;
    }
  }
  ev.pmu = PmuId::kIntelPt;
  // The binary's PT model (MockModels::pt_trace), else valid PT without control flow.
  ev.pt_source = models_.pt_trace ? models_.pt_trace(ev.attr) : nullptr;
  if (ev.pt_source == nullptr) ev.pt_source = std::make_shared<PtTraceFiller>(ev.attr.config);
  return 0;
}

// perf_mmap() with vm_pgoff != 0 (perf_mmap_aux() in Linux 6.x), in the
// kernel's order. Checked on Linux 6.18 with a software event: no data buffer,
// aux_offset inside the data area or not equal to the mmap offset, aux_size
// not the mapping's length, a page count that is not a power of two: EINVAL;
// all valid: EOPNOTSUPP (rb_alloc_aux(): !has_aux(event)). A second mapping
// of an existing AUX area attaches to it ("If mapped, attach to it") and is
// not charged; the first is charged like the data buffer
// (perf_mmap_calc_limits(): user->locked_vm up to perf_event_mlock_kb * ncpus,
// the rest pinned_vm against RLIMIT_MEMLOCK, EPERM past both without
// CAP_IPC_LOCK) before rb_alloc_aux(), so EPERM comes before EOPNOTSUPP.
// perf_mmap_close() of the last AUX mapping gives the charge back.
Result<void*> MockBackend::MmapAux(MockEvent& ev, size_t length, int prot, off_t offset, const std::string& call) {
  const size_t page = profile_.page_size;
  const size_t vma_size = (length + page - 1) / page * page;
  std::shared_ptr<MockRingBuffer> rb = ev.rb;
  if (rb == nullptr) return Fail<void*>(EINVAL, call, "AUX mmap before the data buffer is mapped");
  const size_t nr_pages = vma_size / page;
  volatile perf_event_mmap_page* pg = rb->user_page();
  const uint64_t aux_offset = pg->aux_offset;
  const uint64_t aux_size = pg->aux_size;
  if (aux_offset < rb->data_size() + page) {
    return Fail<void*>(EINVAL, call, fmt::format("aux_offset {:#x} is inside the data buffer", aux_offset));
  }
  if (aux_offset != static_cast<uint64_t>(offset)) {
    return Fail<void*>(EINVAL, call, fmt::format("aux_offset {:#x} is not the mmap offset", aux_offset));
  }
  if (rb->aux != nullptr && rb->aux->aux_offset() != static_cast<uint64_t>(offset)) {
    return Fail<void*>(EINVAL, call, "the AUX area is mapped at another offset");
  }
  if (aux_size != vma_size || aux_size != nr_pages * page) {
    return Fail<void*>(EINVAL, call, fmt::format("aux_size {} is not the mapping's {} bytes", aux_size, vma_size));
  }
  if (rb->aux != nullptr && rb->aux->nr_pages() != nr_pages) {
    return Fail<void*>(EINVAL, call, fmt::format("the AUX area has {} pages", rb->aux->nr_pages()));
  }
  if (!std::has_single_bit(nr_pages)) {
    return Fail<void*>(EINVAL, call, fmt::format("{} AUX pages is not a power of two", nr_pages));
  }
  if (rb->aux == nullptr) {
    uint64_t user_extra = 0, extra = 0;
    if (!MlockLimits(nr_pages, &user_extra, &extra)) {
      return Fail<void*>(EPERM, call,
                         fmt::format("{} AUX pages are over perf_event_mlock_kb and RLIMIT_MEMLOCK without "
                                     "CAP_IPC_LOCK (perf_mmap_calc_limits())",
                                     nr_pages));
    }
    // rb_alloc_aux(): only a PMU with setup_aux has an AUX area.
    if (ev.pmu != PmuId::kIntelPt) return Fail<void*>(EOPNOTSUPP, call, "the event's PMU has no AUX area");
    auto created = AuxArea::Create(ev.memfd, aux_offset, nr_pages, page, /*overwrite=*/!(prot & PROT_WRITE),
                                   ev.attr.aux_watermark, pg);
    if (!created.ok()) return Fail<void*>(created.error(), call, created.call());
    rb->aux = *created;
    rb->aux->mmap_locked = extra;  // perf_mmap_account()
    locked_vm_ += user_extra;
    pinned_vm_ += extra;
  }
  void* p = ::mmap(nullptr, vma_size, prot, MAP_SHARED, ev.memfd, offset);
  if (p == MAP_FAILED) {
    const int err = errno;
    if (rb->aux->mmap_count == 0) {
      locked_vm_ -= rb->aux->nr_pages() - rb->aux->mmap_locked;
      pinned_vm_ -= rb->aux->mmap_locked;
      rb->aux.reset();
    }
    return Result<void*>::Failure(err, call);
  }
  ++rb->aux->mmap_count;
  ++rb->mmap_count;  // the AUX mapping holds the buffer (atomic_inc_not_zero(&rb->mmap_count))
  mappings_[reinterpret_cast<uintptr_t>(p)] = Mapping{vma_size, &ev, rb, /*aux=*/true};
  // An enabled intel_pt event that could not start without an AUX area is
  // retried (in the kernel: at its next sched-in or context rotation).
  Reschedule();
  return Result<void*>::Ok(p, call);
}

// perf_mmap_close() of the last AUX mapping: perf_pmu_output_stop() stops the
// writers (their open transactions end: PERF_RECORD_AUX), then rb_free_aux().
void MockBackend::UnmapAux(const Mapping& m) {
  std::shared_ptr<AuxArea> aux = m.rb->aux;
  if (aux == nullptr || --aux->mmap_count > 0) return;
  for (auto& e : events_) {
    if (e->rb == m.rb && e->pt_tracing) PtStop(*e);
  }
  // perf_mmap_close(): "atomic_long_sub(rb->aux_nr_pages - rb->aux_mmap_locked, &mmap_user->locked_vm)".
  locked_vm_ -= aux->nr_pages() - aux->mmap_locked;
  pinned_vm_ -= aux->mmap_locked;
  m.rb->aux.reset();
}

void MockBackend::LogItraceStart(MockEvent& ev) {
  MockEvent& owner = ev.parent != nullptr ? *ev.parent : ev;
  if (owner.itrace_started) return;
  Record r;
  r.header.type = PERF_RECORD_ITRACE_START;
  r.header.misc = 0;
  OtherRecord body;
  const OutputContext ctx = Context();
  const uint32_t ids[2] = {static_cast<uint32_t>(ctx.pid), static_cast<uint32_t>(ctx.tid)};
  const auto* p = reinterpret_cast<const std::byte*>(ids);
  body.body.assign(p, p + sizeof ids);
  if (ev.attr.sample_id_all) EncodeSampleId(SampleLayout::FromAttr(ev.attr), MakeSampleId(ev, ctx), &body.body);
  r.body = std::move(body);
  EmitRecord(ev, std::move(r), ctx);
}

// pt_event_add(PERF_EF_START) -> pt_event_start(): perf_aux_output_begin()
// fails without an AUX area (the event cannot go on: -EINVAL from add) or,
// in full-trace mode, with no free space (pending_disable and a wakeup).
bool MockBackend::PtStart(MockEvent& ev) {
  LogItraceStart(ev);  // event_sched_in(): perf_log_itrace_start() before pmu->add()
  if (ev.rb == nullptr || ev.rb->aux == nullptr) return false;
  if (ev.rb->aux->Begin() == AuxArea::BeginResult::kFull) {
    ev.enabled = false;
    ev.rb->Wakeup();
    return false;
  }
  ev.itrace_started = true;  // pt_config(): perf_event_itrace_started()
  ev.pt_tracing = true;
  // pt_config_start(): in VMX operation TraceEn is not written: the
  // transaction has a gap (PERF_AUX_FLAG_PARTIAL) until VMX is off again.
  if (pt_vmx_on_) {
    ev.rb->aux->Flag(PERF_AUX_FLAG_PARTIAL);
  } else {
    ev.pt_source->Enable();
  }
  return true;
}

// arch/x86/events/intel/pt.c intel_pt_handle_vmx(), which KVM calls when it
// turns VMX operation on or off (a CPU without IA32_VMX_MISC[14], pt_pmu.vmx:
// VMXON clears RTIT_CTL.TraceEn): the running event's open transaction is
// flagged PERF_AUX_FLAG_PARTIAL ("record contains gaps") either way; on, the
// trace stops (TIP.PGD); off, RTIT_CTL is written back and the trace resumes
// (PSB+, TIP.PGE). The only place the intel_pt driver sets PARTIAL besides
// pt_config_start() in VMX operation. It never sets PERF_AUX_FLAG_COLLISION
// (arm_spe_pmu.c's PMBSR_EL1.COLL is that flag's only setter).
void MockBackend::PtHandleVmx(bool on) {
  if (pt_vmx_on_ == on) return;
  pt_vmx_on_ = on;
  for (auto& e : events_) {
    MockEvent& ev = *e;
    if (ev.pmu != PmuId::kIntelPt || !ev.pt_tracing || ev.rb == nullptr || ev.rb->aux == nullptr) continue;
    std::shared_ptr<AuxArea> aux = ev.rb->aux;
    if (on) {
      for (const AuxArea::End& end : aux->Write(ev.pt_source->Disable())) PtEnd(ev, end);
      if (aux->open()) aux->Flag(PERF_AUX_FLAG_PARTIAL);
    } else {
      if (aux->open()) aux->Flag(PERF_AUX_FLAG_PARTIAL);
      ev.pt_source->Enable();
    }
  }
}

void MockBackend::PtStop(MockEvent& ev) {
  if (!ev.pt_tracing) return;
  ev.pt_tracing = false;  // before any PtEnd(): a TRUNCATED end disables (and stops) the event again
  const std::vector<uint8_t> last = ev.pt_source->Disable();
  if (ev.rb == nullptr || ev.rb->aux == nullptr) return;
  std::shared_ptr<AuxArea> aux = ev.rb->aux;
  for (const AuxArea::End& e : aux->Write(last)) PtEnd(ev, e);
  PtEnd(ev, aux->Stop());
}

// perf_aux_output_end(): perf_event_aux_event(), the wakeup, and for
// TRUNCATED perf_event_disable_inatomic().
void MockBackend::PtEnd(MockEvent& ev, const AuxArea::End& e) {
  if (e.record) {
    Record r;
    r.header.type = PERF_RECORD_AUX;
    OtherRecord body;
    PutU64(&body.body, e.aux_offset);
    PutU64(&body.body, e.aux_size);
    PutU64(&body.body, e.flags);
    const OutputContext ctx = Context();
    if (ev.attr.sample_id_all) EncodeSampleId(SampleLayout::FromAttr(ev.attr), MakeSampleId(ev, ctx), &body.body);
    r.body = std::move(body);
    EmitRecord(ev, std::move(r), ctx);
  }
  if (e.wakeup && ev.rb != nullptr) ev.rb->Wakeup();
  if (e.disable) {
    // TRUNCATED: the hardware stopped (TraceEn cleared); what it still wrote
    // is lost, and a re-enable starts again at a PSB+.
    ev.pt_tracing = false;
    (void)ev.pt_source->Disable();
    DisableEvent(ev);
  }
}

constexpr uint64_t kPtSlice = 1024;  // instructions

// The task retired `n` user-mode instructions: every tracing intel_pt event
// of the task (or CPU 0) that traces user mode writes their trace.
void MockBackend::PtInstructions(uint64_t n) {
  for (size_t i = 0; i < events_.size(); ++i) {
    MockEvent& ev = *events_[i];
    if (ev.pmu != PmuId::kIntelPt || !ev.active || !ev.pt_tracing || ev.attr.exclude_user) continue;
    if (ev.pid == -1 ? ev.cpu != 0 : ev.pid != task_.tid) continue;
    // In slices, so that a TRUNCATED end (the event stops) stops the
    // simulated hardware within a slice of where the AUX area filled up.
    for (uint64_t done = 0; done < n && ev.pt_tracing;) {
      const uint64_t k = std::min<uint64_t>(n - done, kPtSlice);
      const std::vector<uint8_t> bytes = ev.pt_source->Instructions(k);
      for (const AuxArea::End& e : ev.rb->aux->Write(bytes)) PtEnd(ev, e);
      done += k;
    }
  }
}

// The task made `n` system calls: every tracing intel_pt event of the task
// writes their trace (PtTraceSource::Syscalls()).
void MockBackend::PtSyscalls(uint64_t n) {
  for (size_t i = 0; i < events_.size(); ++i) {
    MockEvent& ev = *events_[i];
    if (ev.pmu != PmuId::kIntelPt || !ev.active || !ev.pt_tracing || ev.attr.exclude_user) continue;
    if (ev.pid == -1 ? ev.cpu != 0 : ev.pid != task_.tid) continue;
    for (const AuxArea::End& e : ev.rb->aux->Write(ev.pt_source->Syscalls(n))) PtEnd(ev, e);
  }
}

std::vector<std::byte> AuxSampleData(const MockEvent& ev, size_t size) {
  const MockEvent* sampler = ev.leader;
  if (sampler == &ev || sampler->pmu != PmuId::kIntelPt || !sampler->active) return {};
  if (sampler->rb == nullptr || sampler->rb->aux == nullptr) return {};
  const AuxArea& aux = *sampler->rb->aux;
  size = std::min(size, aux.aux_size()) / 8 * 8;
  // pt_event_snapshot_aux() copies only from a snapshot buffer.
  if (!aux.overwrite()) return std::vector<std::byte>(size);
  return aux.CopyTail(size);
}

}  // namespace perftest::mock
