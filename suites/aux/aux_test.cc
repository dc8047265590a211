// Conformance suite: the AUX area (the second mmap of a perf fd, where
// Intel PT, CoreSight and SPE write their trace) and its records.
//
// The mmap rules, the mlock budget of the AUX pages (as a child of another
// uid: needs root) and the attr checks that need no AUX-capable PMU run for
// real on any kernel with a software event; the rest needs the intel_pt PMU
// and skips as unsupported where sysfs has none. aux.flag_partial needs VMX
// operation (KVM), which only the mock drives. References: <linux/perf_event.h>
// struct perf_event_mmap_page (aux_offset, aux_size, aux_head, aux_tail),
// PERF_RECORD_AUX, PERF_RECORD_ITRACE_START, PERF_AUX_FLAG_*; kernel/events/
// core.c perf_mmap() (the AUX part), perf_get_aux_event(),
// perf_prepare_sample(); kernel/events/ring_buffer.c rb_alloc_aux(),
// perf_aux_output_begin()/perf_aux_output_end(); arch/x86/events/intel/pt.c;
// shared/reference/perf-intel-pt.txt.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <poll.h>
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>

#include "harness/attr.h"
#include "harness/aux_buffer.h"
#include "harness/event.h"
#include "harness/records.h"
#include "harness/ring_buffer.h"
#include "harness/syscall_matchers.h"
#include "mocks/pt_sim_source.h"
#include "suites/aux/pt_util.h"
#include "suites/common/attrs.h"
#include "suites/common/records_util.h"
#include "suites/common/suite.h"

namespace perftest {
namespace {

using namespace std::chrono_literals;
using ::testing::Ge;
using ::testing::IsEmpty;
using ::testing::Not;

// A software dummy event: every AUX mmap rule up to rb_alloc_aux() applies to
// it, and rb_alloc_aux() then refuses it (no setup_aux).
perf_event_attr Dummy() { return SoftwareCounterAttr(PERF_COUNT_SW_DUMMY); }

// Enough user instructions for at least `bytes` of trace: Intel PT writes
// about a byte per 6 conditional branches (TNT-8) plus timing and PSB+ packets;
// the loops run here take a branch every 2 to 5 instructions, so 32
// instructions per byte is a safe floor on hardware and on the mock.
uint64_t InstructionsFor(uint64_t bytes) { return bytes * 32 + 65536; }

constexpr uint64_t kTruncated = PERF_AUX_FLAG_TRUNCATED;
constexpr uint64_t kOverwrite = PERF_AUX_FLAG_OVERWRITE;

class Aux : public SuiteTest {
 protected:
  size_t page() { return backend().Machine().page_size; }

  // A dummy event with a 1+4 page read-write data buffer.
  void OpenDummyWithBuffer() {
    Result<Event> ev = Event::Open(backend(), Dummy());
    ASSERT_TRUE(ev.ok()) << ev.ToString();
    ev_.emplace(std::move(*ev));
    Result<RingBuffer> rb = RingBuffer::Map(backend(), ev_->fd(), 4);
    ASSERT_TRUE(rb.ok()) << rb.ToString();
    rb_.emplace(std::move(*rb));
  }
  // The AUX mmap with aux_offset/aux_size/length/offset as given.
  Result<void*> TryAux(uint64_t aux_offset, uint64_t aux_size, size_t length, off_t offset,
                       int prot = PROT_READ | PROT_WRITE, int flags = MAP_SHARED) {
    Result<void*> m = AuxBuffer::MapRaw(backend(), ev_->fd(), *rb_, aux_offset, aux_size, length, offset, prot, flags);
    if (m.ok()) (void)backend().Munmap(*m, length);
    return m;
  }
  uint64_t DataEnd() { return rb_->mapped_bytes(); }
  // The same on a PT session's fd, offset = aux_offset.
  Result<void*> TryAuxOn(PtSession& s, uint64_t aux_offset, uint64_t aux_size, size_t length) {
    Result<void*> m = AuxBuffer::MapRaw(backend(), s.event.fd(), s.rb, aux_offset, aux_size, length,
                                        static_cast<off_t>(aux_offset), PROT_READ | PROT_WRITE);
    if (m.ok()) (void)backend().Munmap(*m, length);
    return m;
  }

  std::optional<Event> ev_;
  std::optional<RingBuffer> rb_;
};

// --- AUX mmap rules (kernel/events/core.c perf_mmap(), vm_pgoff != 0) ---

PERFTEST_CASE(Aux, MmapNeedsDataBufferFirst, "aux.mmap_needs_data_buffer",
              "kernel/events/core.c perf_mmap(): AUX part 'if (!event->rb) return -EINVAL'") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), Dummy()));
  EXPECT_THAT(backend().Mmap(2 * page(), PROT_READ | PROT_WRITE, MAP_SHARED, ev.fd(), 5 * page()),
              FailsWithErrno(EINVAL));
}

PERFTEST_CASE(Aux, PageFieldsStartZero, "aux.page_fields_zero",
              "<linux/perf_event.h> perf_event_mmap_page aux_offset/aux_size/aux_head/aux_tail; "
              "perf_event_init_userpage()") {
  ASSERT_NO_FATAL_FAILURE(OpenDummyWithBuffer());
  const volatile perf_event_mmap_page& pg = rb_->page();
  EXPECT_EQ(pg.aux_offset, 0u);
  EXPECT_EQ(pg.aux_size, 0u);
  EXPECT_EQ(pg.aux_head, 0u);
  EXPECT_EQ(pg.aux_tail, 0u);
}

PERFTEST_CASE(Aux, OffsetMustFollowDataBuffer, "aux.offset_after_data",
              "kernel/events/core.c perf_mmap(): 'aux_offset < perf_data_size(rb) + PAGE_SIZE' -> EINVAL") {
  ASSERT_NO_FATAL_FAILURE(OpenDummyWithBuffer());
  // Inside the data area (the last data page), and at 0.
  EXPECT_THAT(TryAux(DataEnd() - page(), 2 * page(), 2 * page(), DataEnd() - page()), FailsWithErrno(EINVAL));
  EXPECT_THAT(TryAux(page(), page(), page(), page()), FailsWithErrno(EINVAL));
}

PERFTEST_CASE(Aux, OffsetMustMatchMmapOffset, "aux.offset_matches_pgoff",
              "kernel/events/core.c perf_mmap(): 'aux_offset != vma->vm_pgoff << PAGE_SHIFT' -> EINVAL") {
  ASSERT_NO_FATAL_FAILURE(OpenDummyWithBuffer());
  EXPECT_THAT(TryAux(DataEnd(), 2 * page(), 2 * page(), DataEnd() + page()), FailsWithErrno(EINVAL));
  // An aux_offset that is not page aligned can match no mmap offset.
  EXPECT_THAT(TryAux(DataEnd() + 8, 2 * page(), 2 * page(), DataEnd()), FailsWithErrno(EINVAL));
}

PERFTEST_CASE(Aux, SizeMustMatchLength, "aux.size_matches_length",
              "kernel/events/core.c perf_mmap(): 'aux_size != vma_size' -> EINVAL") {
  ASSERT_NO_FATAL_FAILURE(OpenDummyWithBuffer());
  EXPECT_THAT(TryAux(DataEnd(), 4 * page(), 2 * page(), DataEnd()), FailsWithErrno(EINVAL));
  EXPECT_THAT(TryAux(DataEnd(), 0, page(), DataEnd()), FailsWithErrno(EINVAL));
}

PERFTEST_CASE(Aux, PagesPowerOfTwo, "aux.pages_power_of_two",
              "kernel/events/core.c perf_mmap(): '!is_power_of_2(nr_pages)' -> EINVAL") {
  ASSERT_NO_FATAL_FAILURE(OpenDummyWithBuffer());
  for (size_t pages : {3, 5, 6, 12}) {
    EXPECT_THAT(TryAux(DataEnd(), pages * page(), pages * page(), DataEnd()), FailsWithErrno(EINVAL))
        << pages << " AUX pages";
  }
}

PERFTEST_CASE(Aux, MappingMustBeShared, "aux.map_shared",
              "kernel/events/core.c perf_mmap(): '!(vma->vm_flags & VM_SHARED)' -> EINVAL") {
  ASSERT_NO_FATAL_FAILURE(OpenDummyWithBuffer());
  EXPECT_THAT(TryAux(DataEnd(), 2 * page(), 2 * page(), DataEnd(), PROT_READ, MAP_PRIVATE), FailsWithErrno(EINVAL));
}

PERFTEST_CASE(Aux, PmuWithoutAuxArea, "aux.pmu_without_aux",
              "kernel/events/ring_buffer.c rb_alloc_aux(): '!has_aux(event)' -> -EOPNOTSUPP") {
  ASSERT_NO_FATAL_FAILURE(OpenDummyWithBuffer());
  // A geometry every check accepts, full-trace and snapshot, one and two pages.
  EXPECT_THAT(TryAux(DataEnd(), 2 * page(), 2 * page(), DataEnd()), FailsWithErrno(EOPNOTSUPP));
  EXPECT_THAT(TryAux(DataEnd(), page(), page(), DataEnd(), PROT_READ), FailsWithErrno(EOPNOTSUPP));
  EXPECT_THAT(TryAux(DataEnd() + 16 * page(), 2 * page(), 2 * page(), DataEnd() + 16 * page()),
              FailsWithErrno(EOPNOTSUPP));
  // Nothing changed in the page.
  EXPECT_EQ(rb_->page().aux_head, 0u);
}

// --- mlock accounting of the AUX pages (kernel/events/core.c perf_mmap_aux(),
// perf_mmap_calc_limits(), perf_mmap_account(), perf_mmap_close()) ---

// A uid of its own: user->locked_vm is per user, and the permissions suite's
// mlock cases use 65534 and 65533.
constexpr uid_t kAuxMlockUid = 65532;

// In a child: `ev_attr` opened (exclude_kernel), a 1+1 page data buffer, then an
// AUX mmap of `aux_pages` pages: 0 or the AUX mmap's errno (1000 + errno when
// the open or the data mmap failed: not the case's subject).
int AuxMapErrno(Backend& b, perf_event_attr a, size_t aux_pages, AuxMode mode = AuxMode::kFullTrace) {
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  Result<Event> ev = Event::Open(b, a);
  if (!ev.ok()) return 1000 + ev.error();
  Result<RingBuffer> rb = RingBuffer::Map(b, ev->fd(), 1);
  if (!rb.ok()) return 1000 + rb.error();
  Result<AuxBuffer> aux = AuxBuffer::Map(b, ev->fd(), *rb, aux_pages, mode);
  return aux.ok() ? 0 : aux.error();
}

// In a child: a 1+`pages` page data buffer of a fresh dummy event: 0 or the errno.
int DataMapErrno(Backend& b, size_t pages) {
  perf_event_attr a = Dummy();
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  Result<Event> ev = Event::Open(b, a);
  if (!ev.ok()) return 1000 + ev.error();
  Result<RingBuffer> rb = RingBuffer::Map(b, ev->fd(), pages);
  return rb.ok() ? 0 : rb.error();
}

class AuxMlock : public Aux {
 protected:
  // Children change uid and keep chosen capabilities: root here.
  void SetUp() override {
    Aux::SetUp();
    if (IsSkipped()) return;
    if (paranoid() >= 3) PERFTEST_SKIP(SkipClass::kPermission, "perf_event_paranoid >= 3: users cannot open events");
    PERFTEST_REQUIRE_CHILD_CREDENTIALS(Child({CAP_IPC_LOCK}));
  }
  int paranoid() { return backend().Machine().perf_event_paranoid; }
  // kAuxMlockUid with `caps` and RLIMIT_MEMLOCK 0: only perf_event_mlock_kb is left.
  static ChildCredentials Child(std::vector<int> caps = {}) {
    ChildCredentials c;
    c.uid = kAuxMlockUid;
    c.caps = std::move(caps);
    c.rlimit_memlock = 0;
    return c;
  }
  // The per-user budget in pages (perf_event_mlock_kb * ncpus), the largest
  // power-of-two AUX page count that fits next to a 1+1 page data buffer, and
  // twice that (over the budget).
  size_t Budget() {
    const MachineInfo& m = backend().Machine();
    return size_t{m.mlock_kb} * 1024 / m.page_size * m.ncpus;
  }
  std::pair<size_t, size_t> AuxPages() {
    size_t within = 1;
    while (2 * within + 2 <= Budget()) within *= 2;
    return {within, 2 * within};
  }
  Result<int> AsChild(const ChildCredentials& c, std::function<int(Backend&)> fn) {
    return backend().RunInChild(c, fn);
  }
};

PERFTEST_CASE(AuxMlock, AuxPagesChargedBeforeAuxAllocation, "aux.mlock_budget",
              "kernel/events/core.c perf_mmap_aux(): perf_mmap_calc_limits() (user->locked_vm up to "
              "perf_event_mlock_kb * num_online_cpus(), the rest pinned_vm against RLIMIT_MEMLOCK; EPERM past both "
              "unless CAP_IPC_LOCK or paranoid -1) runs before rb_alloc_aux()'s EOPNOTSUPP") {
  const auto [within, past] = AuxPages();
  auto map = [](size_t pages) { return [pages](Backend& b) { return AuxMapErrno(b, Dummy(), pages); }; };
  // A software event: every check up to rb_alloc_aux() applies to it.
  EXPECT_THAT(AsChild(Child(), map(within)), SucceedsWith(EOPNOTSUPP))
      << within << " AUX pages fit the " << Budget() << "-page budget: rb_alloc_aux() refuses the software event";
  EXPECT_THAT(AsChild(Child(), map(past)), SucceedsWith(paranoid() > -1 ? EPERM : EOPNOTSUPP))
      << past << " AUX pages with RLIMIT_MEMLOCK 0: refused before rb_alloc_aux()";
  EXPECT_THAT(AsChild(Child({CAP_IPC_LOCK}), map(past)), SucceedsWith(EOPNOTSUPP))
      << "CAP_IPC_LOCK lifts the budget; rb_alloc_aux() still refuses";
  ChildCredentials rlimit = Child();
  rlimit.rlimit_memlock = (past + 2) * backend().Machine().page_size;
  EXPECT_THAT(AsChild(rlimit, map(past)), SucceedsWith(EOPNOTSUPP)) << "RLIMIT_MEMLOCK covers the pages past the budget";
}

PERFTEST_CASE(AuxMlock, PtAuxPagesShareTheBudget, "aux.pt_mlock_budget",
              "kernel/events/core.c perf_mmap_aux() -> perf_mmap_account(): the AUX pages join user->locked_vm; "
              "perf_mmap_close() gives them back with the last AUX unmap") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  const auto [within, past] = AuxPages();
  const size_t remaining = Budget() - 2 - within;  // after the PT event's data buffer and AUX area
  size_t data = 1;  // a data buffer that no longer fits (1 + data > remaining)
  while (data + 1 <= remaining) data *= 2;
  const perf_event_attr a = PtUserAttr(*pt);
  auto run = [a, within = within, past = past, data](Backend& b) -> int {
    if (int err = AuxMapErrno(b, a, past)) {
      if (err != EPERM) return 100 + err;  // the over-budget AUX area must be refused
    } else {
      return 1;
    }
    perf_event_attr e = a;
    e.exclude_kernel = 1;
    Result<Event> ev = Event::Open(b, e);
    if (!ev.ok()) return 2000 + ev.error();
    Result<RingBuffer> rb = RingBuffer::Map(b, ev->fd(), 1);
    if (!rb.ok()) return 3000 + rb.error();
    {
      Result<AuxBuffer> aux = AuxBuffer::Map(b, ev->fd(), *rb, within, AuxMode::kFullTrace);
      if (!aux.ok()) return 4000 + aux.error();
      // The AUX pages are charged: the dummy's buffer is over the budget now.
      if (DataMapErrno(b, data) != EPERM) return 5;
    }
    // The AUX area is unmapped: its pages are given back.
    if (int err = DataMapErrno(b, data)) return 6000 + err;
    return 0;
  };
  EXPECT_THAT(AsChild(Child(), run), SucceedsWith(paranoid() > -1 ? 0 : 1))
      << "1: the AUX area past the budget mapped; 1xx: it failed with errno xx, not EPERM; 5: the AUX pages "
         "were not charged; 6xxx: not given back";
}

// --- attr fields that need an AUX event ---

PERFTEST_CASE(Aux, SampleSizeNeedsAuxLeader, "aux.sample_size_needs_aux_event",
              "kernel/events/core.c perf_event_open(): perf_need_aux_event() && !perf_get_aux_event() -> EINVAL") {
  perf_event_attr a = SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.sample_period = 1;
  a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_AUX;
  a.aux_sample_size = 4096;
  EXPECT_THAT(Event::Open(backend(), a), FailsWithErrno(EINVAL));
  // Nor does a leader without snapshot_aux (a software event) do.
  ASSERT_OK_AND_ASSIGN(Event leader, Event::Open(backend(), Dummy()));
  EXPECT_THAT(Event::Open(backend(), a, 0, -1, &leader), FailsWithErrno(EINVAL));
}

PERFTEST_CASE(Aux, SampleAuxWithoutSizeOpens, "aux.sample_aux_without_size",
              "kernel/events/core.c perf_event_open(): only aux_sample_size asks for an AUX event; "
              "PERF_SAMPLE_AUX alone is accepted") {
  perf_event_attr a = SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.sample_period = 1;
  a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_AUX;
  EXPECT_THAT(Event::Open(backend(), a), Succeeds());
}

PERFTEST_CASE(Aux, AuxOutputNeedsPmuCapability, "aux.aux_output_needs_cap",
              "kernel/events/core.c perf_event_alloc(): aux_output without PERF_PMU_CAP_AUX_OUTPUT -> EOPNOTSUPP") {
  perf_event_attr a = Dummy();
  a.aux_output = 1;
  EXPECT_THAT(Event::Open(backend(), a), FailsWithErrno(EOPNOTSUPP));
}

PERFTEST_CASE(Aux, WatermarkAcceptedWithoutAux, "aux.watermark_without_aux",
              "<linux/perf_event.h> perf_event_attr.aux_watermark: used by rb_alloc_aux() only; "
              "perf_copy_attr() does not check it") {
  perf_event_attr a = Dummy();
  a.aux_watermark = 4096;
  EXPECT_THAT(Event::Open(backend(), a), Succeeds());
}

PERFTEST_CASE(Aux, DummyKeepsSideBandFlowing, "aux.dummy_sideband",
              "perf-intel-pt.txt 'Intel PT modes of operation' (side-band via a dummy event); "
              "kernel/events/core.c perf_event_mmap()/perf_event_comm()/perf_event_switch()") {
  // perf records side-band on a dummy event so that MMAP/COMM/SWITCH keep
  // flowing while the trace event is disabled (snapshot mode disables it).
  perf_event_attr d = Dummy();
  d.mmap = 1;
  d.comm = 1;
  d.context_switch = 1;
  d.exclude_kernel = 1;
  d.disabled = 0;
  ASSERT_OK_AND_ASSIGN(Event dummy, Event::Open(backend(), d));
  ASSERT_OK_AND_ASSIGN(RingBuffer drb, RingBuffer::Map(backend(), dummy.fd(), 8));
  std::optional<PtSession> pt;
  if (const Pmu* p = FindPmu(backend().Machine().pmus, "intel_pt")) {
    ASSERT_OK_AND_ASSIGN(PtSession s, PtSession::Open(backend(), PtUserAttr(*p), 4, 4, AuxMode::kFullTrace));
    pt.emplace(std::move(s));  // stays disabled
  }
  ASSERT_OK(backend().RunWorkload(Workload::MmapExec(1)));
  ASSERT_OK(backend().RunWorkload(Workload::SetComm("perftest-aux")));
  ASSERT_OK(backend().RunWorkload(Workload::Sleep(2, 1ms)));
  ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> recs, DrainRecords(drb, SampleLayout::FromAttr(d), true));
  EXPECT_THAT(OfType(recs, PERF_RECORD_MMAP), Not(IsEmpty()));
  EXPECT_THAT(OfType(recs, PERF_RECORD_COMM), Not(IsEmpty()));
  EXPECT_THAT(OfType(recs, PERF_RECORD_SWITCH), Not(IsEmpty()));
  if (pt) {
    ASSERT_OK_AND_ASSIGN(std::vector<AuxRecord> aux, pt->AuxRecords());
    EXPECT_THAT(aux, IsEmpty()) << "a disabled intel_pt event writes no trace";
    EXPECT_EQ(pt->aux.ReadHead(), 0u);
  }
}

// --- intel_pt: the AUX area in use ---

PERFTEST_CASE(Aux, PtAuxMmapFullTrace, "aux.pt_mmap",
              "kernel/events/core.c perf_mmap() AUX part; rb_alloc_aux(); perf-intel-pt.txt 'new auxtrace mmap size option'") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  ASSERT_OK_AND_ASSIGN(PtSession s, PtSession::Open(backend(), PtUserAttr(*pt), 4, 8, AuxMode::kFullTrace));
  EXPECT_EQ(s.rb.page().aux_offset, s.rb.mapped_bytes());
  EXPECT_EQ(s.rb.page().aux_size, 8 * page());
  EXPECT_EQ(s.aux.ReadHead(), 0u);
  // A second mapping must have the same geometry.
  EXPECT_THAT(TryAuxOn(s, s.rb.mapped_bytes(), 8 * page(), 8 * page()), Succeeds());
  EXPECT_THAT(TryAuxOn(s, s.rb.mapped_bytes(), 4 * page(), 4 * page()), FailsWithErrno(EINVAL));
}

PERFTEST_CASE(Aux, PtNeedsAuxAreaToRun, "aux.pt_needs_aux",
              "arch/x86/events/intel/pt.c pt_event_add(): perf_aux_output_begin() fails without an AUX area -> "
              "the event does not go on") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), PtUserAttr(*pt)));
  ASSERT_OK_AND_ASSIGN(RingBuffer rb, RingBuffer::Map(backend(), ev.fd(), 4));
  ASSERT_OK(ev.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::Instructions(100000)));
  ASSERT_OK(ev.Disable());
  ASSERT_OK_AND_ASSIGN(ReadValues v, ev.Read());
  EXPECT_EQ(v.time_running.value_or(1), 0u) << "intel_pt ran without an AUX area";
  ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> recs, DrainRecords(rb, SampleLayout::FromAttr(ev.attr()), true));
  EXPECT_THAT(OfType(recs, PERF_RECORD_AUX), IsEmpty());
}

PERFTEST_CASE(Aux, ItraceStartOnce, "aux.itrace_start",
              "<linux/perf_event.h> PERF_RECORD_ITRACE_START; kernel/events/core.c perf_log_itrace_start() "
              "(once: PERF_ATTACH_ITRACE)") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  ASSERT_OK_AND_ASSIGN(PtSession s, PtSession::Open(backend(), PtUserAttr(*pt), 4, 8, AuxMode::kFullTrace));
  for (int round = 0; round < 2; ++round) {
    ASSERT_OK(s.event.Enable());
    ASSERT_OK(backend().RunWorkload(Workload::Instructions(10000)));
    ASSERT_OK(s.event.Disable());
  }
  std::vector<ParsedRecord> recs;
  ASSERT_OK_AND_ASSIGN(std::vector<AuxRecord> aux, s.AuxRecords(&recs));
  const std::vector<const ParsedRecord*> starts = OfType(recs, PERF_RECORD_ITRACE_START);
  ASSERT_EQ(starts.size(), 1u);
  ASSERT_OK_AND_ASSIGN(ItraceStartRecord is, ParseItraceStartRecord(starts[0]->record));
  const TaskId me = backend().CurrentTask();
  EXPECT_EQ(is.pid, static_cast<uint32_t>(me.pid));
  EXPECT_EQ(is.tid, static_cast<uint32_t>(me.tid));
  // It precedes every AUX record.
  EXPECT_EQ(recs.front().record.header.type, static_cast<uint32_t>(PERF_RECORD_ITRACE_START));
}

PERFTEST_CASE(Aux, FullTraceRecordsTileTheTrace, "aux.full_trace_records",
              "kernel/events/ring_buffer.c perf_aux_output_end(): PERF_RECORD_AUX {aux_offset, aux_size, flags}; "
              "aux_head published in the page") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  ASSERT_OK_AND_ASSIGN(PtSession s, PtSession::Open(backend(), PtUserAttr(*pt), 8, 128, AuxMode::kFullTrace));
  ASSERT_OK(s.event.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::Instructions(InstructionsFor(4 * page()))));
  ASSERT_OK(s.event.Disable());
  ASSERT_OK_AND_ASSIGN(std::vector<AuxRecord> aux, s.AuxRecords());
  ASSERT_THAT(aux, Not(IsEmpty()));
  uint64_t expect = 0;
  for (const AuxRecord& r : aux) {
    EXPECT_EQ(r.aux_offset, expect) << "AUX records follow each other without gaps";
    EXPECT_EQ(r.flags & (kTruncated | kOverwrite), 0u) << DescribeAuxFlags(r.flags);
    // COLLISION is an ARM SPE flag; Intel PT's trace format type (flags 15:8) is 0.
    EXPECT_EQ(r.flags & (PERF_AUX_FLAG_COLLISION | PERF_AUX_FLAG_PMU_FORMAT_TYPE_MASK), 0u) << DescribeAuxFlags(r.flags);
    expect = r.aux_offset + r.aux_size;
  }
  EXPECT_EQ(s.aux.ReadHead(), expect) << "aux_head is where the last record ends";
  EXPECT_GE(expect, 4 * page());
  // The trace is Intel PT: a PSB (02 82 repeated) is in it.
  const std::vector<std::byte> data = s.aux.CopyOut(0, std::min<uint64_t>(expect, s.aux.size()));
  const std::array<std::byte, 4> psb = {std::byte{0x02}, std::byte{0x82}, std::byte{0x02}, std::byte{0x82}};
  EXPECT_NE(std::search(data.begin(), data.end(), psb.begin(), psb.end()), data.end()) << "no PSB in the trace";
}

PERFTEST_CASE(Aux, WatermarkWakesTheReader, "aux.watermark_wakeup",
              "kernel/events/ring_buffer.c rb_need_aux_wakeup(): a wakeup each aux_watermark bytes; "
              "<linux/perf_event.h> perf_event_attr.aux_watermark") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  perf_event_attr a = PtUserAttr(*pt);
  a.aux_watermark = static_cast<uint32_t>(page());
  ASSERT_OK_AND_ASSIGN(PtSession s, PtSession::Open(backend(), a, 8, 64, AuxMode::kFullTrace));
  std::array<pollfd, 1> pfd = {pollfd{s.event.fd(), POLLIN, 0}};
  ASSERT_OK(backend().Poll(pfd, 0));
  ASSERT_OK(s.event.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::Instructions(InstructionsFor(3 * page()))));
  ASSERT_OK_AND_ASSIGN(int ready, backend().Poll(pfd, 0));
  EXPECT_EQ(ready, 1);
  EXPECT_TRUE(pfd[0].revents & POLLIN) << "no wakeup after 3 watermarks of trace";
  ASSERT_OK(s.event.Disable());
  ASSERT_OK_AND_ASSIGN(std::vector<AuxRecord> aux, s.AuxRecords());
  ASSERT_GE(aux.size(), 2u);
  // Every record but the last (ended by the disable) ends on a watermark.
  for (size_t i = 0; i + 1 < aux.size(); ++i) {
    EXPECT_EQ((aux[i].aux_offset + aux[i].aux_size) % page(), 0u) << "record " << i;
  }
}

PERFTEST_CASE(Aux, FullTraceTruncatesAndDisables, "aux.full_trace_truncated",
              "perf-intel-pt.txt 'new snapshot option' (full trace never overwrites); ring_buffer.c "
              "perf_aux_output_end(): TRUNCATED -> perf_event_disable_inatomic()") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  ASSERT_OK_AND_ASSIGN(PtSession s, PtSession::Open(backend(), PtUserAttr(*pt), 8, 2, AuxMode::kFullTrace));
  ASSERT_OK(s.event.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::Instructions(InstructionsFor(8 * page()))));
  ASSERT_OK_AND_ASSIGN(std::vector<AuxRecord> aux, s.AuxRecords());
  ASSERT_THAT(aux, Not(IsEmpty()));
  EXPECT_TRUE(aux.back().flags & kTruncated) << DescribeAuxFlags(aux.back().flags);
  // Unread trace was never overwritten: the head is at most one buffer ahead of the tail.
  EXPECT_LE(s.aux.ReadHead() - s.aux.ReadTail(), s.aux.size());
  // The event is off: time_enabled no longer grows.
  ASSERT_OK_AND_ASSIGN(ReadValues before, s.event.Read());
  ASSERT_OK(backend().RunWorkload(Workload::Spin(2ms)));
  ASSERT_OK_AND_ASSIGN(ReadValues after, s.event.Read());
  EXPECT_EQ(after.time_enabled, before.time_enabled) << "the truncated event is still enabled";
}

PERFTEST_CASE(Aux, FullTraceResumesAfterReaderFreesSpace, "aux.full_trace_resume",
              "kernel/events/ring_buffer.c perf_aux_output_begin(): room from aux_tail; "
              "PERF_EVENT_IOC_ENABLE re-enables the truncated event") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  ASSERT_OK_AND_ASSIGN(PtSession s, PtSession::Open(backend(), PtUserAttr(*pt), 8, 2, AuxMode::kFullTrace));
  ASSERT_OK(s.event.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::Instructions(InstructionsFor(8 * page()))));
  ASSERT_OK_AND_ASSIGN(std::vector<AuxRecord> first, s.AuxRecords());
  ASSERT_THAT(first, Not(IsEmpty()));
  ASSERT_TRUE(first.back().flags & kTruncated);
  // Re-enabling without freeing space finds no room: no new trace, disabled again.
  const uint64_t head = s.aux.ReadHead();
  ASSERT_OK(s.event.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::Instructions(InstructionsFor(page()))));
  EXPECT_EQ(s.aux.ReadHead(), head) << "trace written over unread data";
  // Free everything, re-enable: trace flows again, right after the old head.
  s.aux.WriteTail(head);
  ASSERT_OK(s.event.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::Instructions(InstructionsFor(page() / 2))));
  ASSERT_OK(s.event.Disable());
  ASSERT_OK_AND_ASSIGN(std::vector<AuxRecord> second, s.AuxRecords());
  ASSERT_THAT(second, Not(IsEmpty()));
  EXPECT_EQ(second.front().aux_offset, head);
  EXPECT_GT(s.aux.ReadHead(), head);
}

PERFTEST_CASE(Aux, SnapshotOverwritesAndReportsOnDisable, "aux.snapshot_overwrite",
              "perf-intel-pt.txt 'new snapshot option'; rb_alloc_aux(): a read-only AUX mapping overwrites; "
              "pt_event_stop(): PERF_AUX_FLAG_OVERWRITE record, aux_head = offset in the buffer") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  ASSERT_OK_AND_ASSIGN(PtSession s, PtSession::Open(backend(), PtUserAttr(*pt), 8, 2, AuxMode::kSnapshot));
  ASSERT_OK(s.event.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::Instructions(InstructionsFor(5 * page()))));
  ASSERT_OK(s.event.Disable());
  ASSERT_OK_AND_ASSIGN(std::vector<AuxRecord> aux, s.AuxRecords());
  ASSERT_THAT(aux, Not(IsEmpty()));
  const AuxRecord& last = aux.back();
  EXPECT_TRUE(last.flags & kOverwrite) << DescribeAuxFlags(last.flags);
  EXPECT_FALSE(last.flags & kTruncated) << "snapshot mode never truncates";
  EXPECT_EQ(last.aux_size, s.aux.size());
  EXPECT_EQ(last.aux_offset, s.aux.ReadHead());
  EXPECT_LT(s.aux.ReadHead(), s.aux.size()) << "in snapshot mode aux_head is an offset inside the buffer";
}

PERFTEST_CASE(Aux, SnapshotNeitherWakesNorStops, "aux.snapshot_no_wakeup",
              "kernel/events/ring_buffer.c rb_need_aux_wakeup(): false in overwrite mode; "
              "perf-intel-pt.txt 'new snapshot option' (the trace runs on)") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  perf_event_attr a = PtUserAttr(*pt);
  a.aux_watermark = static_cast<uint32_t>(page());
  ASSERT_OK_AND_ASSIGN(PtSession s, PtSession::Open(backend(), a, 8, 2, AuxMode::kSnapshot));
  std::array<pollfd, 1> pfd = {pollfd{s.event.fd(), POLLIN, 0}};
  ASSERT_OK(backend().Poll(pfd, 0));
  ASSERT_OK(s.event.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::Instructions(InstructionsFor(6 * page()))));
  ASSERT_OK_AND_ASSIGN(int ready, backend().Poll(pfd, 0));
  EXPECT_EQ(ready, 0) << "snapshot mode woke the reader";
  ASSERT_OK_AND_ASSIGN(ReadValues before, s.event.Read());
  ASSERT_OK(backend().RunWorkload(Workload::Spin(100us)));
  ASSERT_OK_AND_ASSIGN(ReadValues after, s.event.Read());
  EXPECT_GT(after.time_running.value_or(0), before.time_running.value_or(0)) << "the snapshot event stopped";
  ASSERT_OK(s.event.Disable());
}

PERFTEST_CASE(Aux, SnapshotCapturedOnDemand, "aux.snapshot_capture",
              "perf-intel-pt.txt 'Snapshot mode and event disabling': disable, copy, re-enable") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  ASSERT_OK_AND_ASSIGN(PtSession s, PtSession::Open(backend(), PtUserAttr(*pt), 8, 2, AuxMode::kSnapshot));
  std::vector<std::vector<std::byte>> snaps;
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK(s.event.Enable());
    ASSERT_OK(backend().RunWorkload(Workload::Instructions(InstructionsFor(page() + 1000 * (i + 1)))));
    ASSERT_OK(s.event.Disable());
    ASSERT_OK_AND_ASSIGN(std::vector<AuxRecord> aux, s.AuxRecords());
    ASSERT_EQ(aux.size(), 1u) << "one OVERWRITE record per capture";
    snaps.push_back(s.aux.Take(aux.back()));
    EXPECT_EQ(snaps.back().size(), s.aux.size());
  }
  EXPECT_NE(snaps[0], snaps[1]) << "the second capture shows no new trace";
}

PERFTEST_CASE(Aux, UnmapEndsTheTrace, "aux.unmap_stops",
              "kernel/events/core.c perf_mmap_close(): the last AUX unmap stops the writers "
              "(perf_pmu_output_stop(): the open transaction ends with a PERF_RECORD_AUX) and frees the AUX area") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  ASSERT_OK_AND_ASSIGN(PtSession s, PtSession::Open(backend(), PtUserAttr(*pt), 8, 8, AuxMode::kFullTrace));
  ASSERT_OK(s.event.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::Instructions(InstructionsFor(page() / 2))));
  ASSERT_OK(s.aux.Unmap());
  ASSERT_OK_AND_ASSIGN(std::vector<AuxRecord> aux, s.AuxRecords());
  ASSERT_THAT(aux, Not(IsEmpty())) << "no PERF_RECORD_AUX when the AUX area went away";
  const uint64_t end = aux.back().aux_offset + aux.back().aux_size;
  EXPECT_GE(end, page() / 2);
  // No more trace goes anywhere: no further records.
  ASSERT_OK(backend().RunWorkload(Workload::Instructions(InstructionsFor(page()))));
  ASSERT_OK(s.event.Disable());
  ASSERT_OK_AND_ASSIGN(std::vector<AuxRecord> more, s.AuxRecords());
  EXPECT_THAT(more, IsEmpty());
  // A new AUX area can be mapped again.
  EXPECT_THAT(AuxBuffer::Map(backend(), s.event.fd(), s.rb, 8, AuxMode::kFullTrace), Succeeds());
}

PERFTEST_CASE(Aux, PartialWhileVmxOperation, "aux.flag_partial",
              "<linux/perf_event.h> PERF_AUX_FLAG_PARTIAL ('record contains gaps'); arch/x86/events/intel/pt.c "
              "intel_pt_handle_vmx() and pt_config_start(): VMX operation stops PT on CPUs without PT in VMX; "
              "PERF_AUX_FLAG_COLLISION is set only by arm_spe_pmu.c") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  ASSERT_OK_AND_ASSIGN(PtSession s, PtSession::Open(backend(), PtUserAttr(*pt), 8, 64, AuxMode::kFullTrace));
  ASSERT_OK(s.event.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::Instructions(20000)));
  if (Result<void> vmx = mock::PtSetVmxOperation(backend(), true); !vmx.ok()) {
    ASSERT_OK(s.event.Disable());
    PERFTEST_SKIP(SkipClass::kUnsupported,
                  "VMX operation is KVM's (a running VM), not driven by the kernel backend: " + vmx.ToString());
  }
  ASSERT_OK(backend().RunWorkload(Workload::Instructions(20000)));
  ASSERT_OK(mock::PtSetVmxOperation(backend(), false));
  ASSERT_OK(backend().RunWorkload(Workload::Instructions(20000)));
  ASSERT_OK(s.event.Disable());
  ASSERT_OK_AND_ASSIGN(std::vector<AuxRecord> gap, s.AuxRecords());
  ASSERT_THAT(gap, Not(IsEmpty()));
  EXPECT_TRUE(gap.back().flags & PERF_AUX_FLAG_PARTIAL) << DescribeAuxFlags(gap.back().flags);
  for (const AuxRecord& r : gap) {
    EXPECT_EQ(r.flags & (kTruncated | kOverwrite | PERF_AUX_FLAG_COLLISION), 0u) << DescribeAuxFlags(r.flags);
  }
  EXPECT_GT(s.aux.ReadHead(), 0u);
  // Without VMX operation: no gap.
  ASSERT_OK(s.event.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::Instructions(20000)));
  ASSERT_OK(s.event.Disable());
  ASSERT_OK_AND_ASSIGN(std::vector<AuxRecord> clean, s.AuxRecords());
  ASSERT_THAT(clean, Not(IsEmpty()));
  for (const AuxRecord& r : clean) EXPECT_EQ(r.flags & PERF_AUX_FLAG_PARTIAL, 0u) << DescribeAuxFlags(r.flags);
  // Enabled while in VMX operation: pt_config_start() leaves TraceEn clear, flags PARTIAL, writes nothing.
  ASSERT_OK(mock::PtSetVmxOperation(backend(), true));
  const uint64_t head = s.aux.ReadHead();
  ASSERT_OK(s.event.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::Instructions(20000)));
  ASSERT_OK(s.event.Disable());
  ASSERT_OK(mock::PtSetVmxOperation(backend(), false));
  ASSERT_OK_AND_ASSIGN(std::vector<AuxRecord> off, s.AuxRecords());
  ASSERT_EQ(off.size(), 1u);
  EXPECT_EQ(off[0].flags, static_cast<uint64_t>(PERF_AUX_FLAG_PARTIAL)) << DescribeAuxFlags(off[0].flags);
  EXPECT_EQ(off[0].aux_size, 0u);
  EXPECT_EQ(s.aux.ReadHead(), head);
}

PERFTEST_CASE(Aux, SampleSizeWithPtLeaderOpens, "aux.sample_size_with_pt_leader",
              "kernel/events/core.c perf_get_aux_event(): a group leader whose PMU has snapshot_aux") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  ASSERT_OK_AND_ASSIGN(Event leader, Event::Open(backend(), PtUserAttr(*pt)));
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.sample_period = 1;
  a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_AUX;
  a.aux_sample_size = 4096;
  a.exclude_kernel = 1;
  EXPECT_THAT(Event::Open(backend(), a, 0, -1, &leader), Succeeds());
}

// A page-faults sampler with PERF_SAMPLE_AUX in a group led by a snapshot-mode
// intel_pt event, with its own buffer. Returns the samples' AUX data.
class AuxSampling : public Aux {
 protected:
  void Run(uint32_t aux_sample_size, size_t aux_pages, std::vector<std::vector<std::byte>>* datas,
           std::vector<uint16_t>* record_sizes, std::optional<PtSession>* session) {
    const Pmu* pt = FindPmu(backend().Machine().pmus, "intel_pt");
    ASSERT_NE(pt, nullptr);
    ASSERT_OK_AND_ASSIGN(PtSession s, PtSession::Open(backend(), PtUserAttr(*pt), 4, aux_pages, AuxMode::kSnapshot));
    perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
    a.sample_period = 1;
    a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_AUX;
    a.aux_sample_size = aux_sample_size;
    a.exclude_kernel = 1;
    a.disabled = 0;
    ASSERT_OK_AND_ASSIGN(Event sampler, Event::Open(backend(), a, 0, -1, &s.event));
    ASSERT_OK_AND_ASSIGN(RingBuffer srb, RingBuffer::Map(backend(), sampler.fd(), 64));
    ASSERT_OK(s.event.Enable());
    ASSERT_OK(backend().RunWorkload(Workload::Instructions(InstructionsFor(2 * page()))));
    Touch(2);
    ASSERT_OK(s.event.Disable());
    ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> recs, DrainRecords(srb, SampleLayout::FromAttr(a), true));
    for (const ParsedRecord& r : recs) {
      if (r.record.header.type != PERF_RECORD_SAMPLE) continue;
      const auto& sample = std::get<SampleRecord>(r.record.body);
      datas->push_back(sample.aux.value_or(std::vector<std::byte>{}));
      record_sizes->push_back(r.record.header.size);
    }
    session->emplace(std::move(s));
  }
};

PERFTEST_CASE(AuxSampling, SamplesCarryTheNewestTrace, "aux.sample_aux",
              "<linux/perf_event.h> PERF_SAMPLE_AUX {u64 size; char data[size]}; pt.c pt_event_snapshot_aux(); "
              "perf-intel-pt.txt 'AUX area sampling option'") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  std::vector<std::vector<std::byte>> datas;
  std::vector<uint16_t> sizes;
  std::optional<PtSession> s;
  Run(4096, 4, &datas, &sizes, &s);
  ASSERT_THAT(datas, Not(IsEmpty()));
  for (const auto& d : datas) EXPECT_EQ(d.size(), 4096u);
  if (exact()) {
    // No trace is written while the pages are touched (the mock retires no
    // instructions there): each sample holds the 4 KiB before aux_head then;
    // the disable afterwards appends only its last packets (pt_event_stop():
    // pending TNT, FUP, TIP.PGD — at most 64 bytes).
    ASSERT_OK_AND_ASSIGN(std::vector<AuxRecord> aux, s->AuxRecords());
    ASSERT_THAT(aux, Not(IsEmpty()));
    const std::vector<std::byte> whole = s->aux.Take(aux.back());
    ASSERT_GE(whole.size(), 4096u + 64u);
    bool found = false;
    for (size_t k = 0; k <= 64 && !found; ++k) {
      found = std::equal(datas.front().begin(), datas.front().end(), whole.end() - 4096 - k);
    }
    EXPECT_TRUE(found) << "the first sample is not the 4 KiB before aux_head at the sample";
  }
}

PERFTEST_CASE(AuxSampling, SampleSizeLimitedByRecordSize, "aux.sample_aux_limit",
              "kernel/events/core.c perf_prepare_sample(): AUX data min(U16_MAX - header size, aux_sample_size), "
              "rounded down to 8; perf-intel-pt.txt 'limited by the maximum event size which is 64KiB'") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  std::vector<std::vector<std::byte>> datas;
  std::vector<uint16_t> sizes;
  std::optional<PtSession> s;
  Run(128 * 1024, 64, &datas, &sizes, &s);
  ASSERT_THAT(datas, Not(IsEmpty()));
  for (size_t i = 0; i < datas.size(); ++i) {
    EXPECT_EQ(datas[i].size() % 8, 0u);
    EXPECT_LT(datas[i].size(), 65536u);
    // header (8) + ip (8) + size (8) + data: the largest multiple of 8 that fits U16_MAX.
    EXPECT_EQ(datas[i].size(), (0xffffu - 24) / 8 * 8);
    EXPECT_EQ(sizes[i], 24 + datas[i].size());
  }
}

}  // namespace
}  // namespace perftest
