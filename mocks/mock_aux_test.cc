// Unit tests of the AUX part of MockBackend (mocks/mock_aux.cc): the
// perf_mmap() AUX rules in the kernel's order and the intel_pt event's use of
// the AUX area.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <sys/mman.h>

#include <cstring>
#include <optional>
#include <vector>

#include "harness/aux_buffer.h"
#include "harness/pmu.h"
#include "mocks/internal/mock_test_fixture.h"

namespace perftest {
namespace {

constexpr size_t kPage = 4096;

class MockAux : public MockTest {
 protected:
  // Data buffer of 1+1 pages; returns its mapping.
  void* MapData(int fd) {
    Result<void*> m = b().Mmap(2 * kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    EXPECT_OK(m);
    return m.ok() ? *m : nullptr;
  }
  Result<void*> MapAux(int fd, void* data, uint64_t off, uint64_t size, size_t len, off_t at, int prot) {
    auto* pg = static_cast<perf_event_mmap_page*>(data);
    pg->aux_offset = off;
    pg->aux_size = size;
    return b().Mmap(len, prot, MAP_SHARED, fd, at);
  }
  // Remakes the backend for a user without capabilities and with
  // RLIMIT_MEMLOCK 0; returns the largest power-of-two AUX page count that
  // fits the per-user budget (perf_event_mlock_kb * ncpus) beside a 1+1 page
  // data buffer, and the budget in *budget.
  size_t UnprivilegedAuxPages(size_t* budget) {
    MockProfile p = profile_;
    p.privileged = false;
    p.memlock_rlimit_kb = 0;
    Remake(p);
    *budget = size_t{p.mlock_kb} * 1024 / kPage * p.ncpus;
    size_t within = 1;
    while (2 * within + 2 <= *budget) within *= 2;
    return within;
  }
};

// Linux 6.18, a software event: every geometry check comes before rb_alloc_aux().
TEST_F(MockAux, GeometryIsCheckedBeforeThePmu) {
  const int fd = MustOpen(SoftwareAttr(PERF_COUNT_SW_DUMMY));
  EXPECT_THAT(b().Mmap(2 * kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 2 * kPage), FailsWithErrno(EINVAL));
  void* d = MapData(fd);
  const int rw = PROT_READ | PROT_WRITE;
  EXPECT_THAT(MapAux(fd, d, kPage, kPage, kPage, kPage, rw), FailsWithErrno(EINVAL));             // inside data
  EXPECT_THAT(MapAux(fd, d, 2 * kPage, 2 * kPage, 2 * kPage, 3 * kPage, rw), FailsWithErrno(EINVAL));  // != pgoff
  EXPECT_THAT(MapAux(fd, d, 2 * kPage, 4 * kPage, 2 * kPage, 2 * kPage, rw), FailsWithErrno(EINVAL));  // size
  EXPECT_THAT(MapAux(fd, d, 2 * kPage, 3 * kPage, 3 * kPage, 2 * kPage, rw), FailsWithErrno(EINVAL));  // 3 pages
  EXPECT_THAT(MapAux(fd, d, 2 * kPage, 2 * kPage, 2 * kPage, 2 * kPage, rw), FailsWithErrno(EOPNOTSUPP));
}

// perf_mmap_aux(): perf_mmap_calc_limits() before rb_alloc_aux() (checked on
// Linux 6.18 as uid 65532 with RLIMIT_MEMLOCK 0: suite aux, aux.mlock_budget).
TEST_F(MockAux, AuxPagesAreChargedBeforeThePmu) {
  size_t budget = 0;
  const size_t within = UnprivilegedAuxPages(&budget);
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_DUMMY);
  a.exclude_kernel = 1;
  const int fd = MustOpen(a);
  void* d = MapData(fd);
  const int rw = PROT_READ | PROT_WRITE;
  EXPECT_THAT(MapAux(fd, d, 2 * kPage, 2 * within * kPage, 2 * within * kPage, 2 * kPage, rw), FailsWithErrno(EPERM));
  EXPECT_THAT(MapAux(fd, d, 2 * kPage, within * kPage, within * kPage, 2 * kPage, rw), FailsWithErrno(EOPNOTSUPP));
}

class MockAuxIntel : public MockAux {
 protected:
  std::string ProfileName() const override { return "x86_64-intel"; }
  perf_event_attr Pt() {
    const Pmu* pt = FindPmu(b().Machine().pmus, "intel_pt");
    EXPECT_NE(pt, nullptr);
    perf_event_attr a = MakeAttr(pt == nullptr ? 0 : pt->type, 0x2401);
    a.exclude_kernel = 1;
    return a;
  }
};

TEST_F(MockAuxIntel, PtConfigIsValidatedAgainstCaps) {
  perf_event_attr a = Pt();
  a.config |= 6ull << 24;  // psb_period 6: caps/psb_periods is 0x3f
  EXPECT_THAT(Open(a), FailsWithErrno(EINVAL));
}

TEST_F(MockAuxIntel, OneIntelPtEventPerContext) {
  MustOpen(Pt());
  EXPECT_THAT(Open(Pt()), FailsWithErrno(EBUSY));
}

TEST_F(MockAuxIntel, FullTraceStopsAtTheTailThenDisables) {
  const int fd = MustOpen(Pt());
  void* d = MapData(fd);
  ASSERT_OK(MapAux(fd, d, 2 * kPage, kPage, kPage, 2 * kPage, PROT_READ | PROT_WRITE));
  Enable(fd);
  Run(Workload::Instructions(64 * 4 * kPage));  // far more trace than fits
  auto* pg = static_cast<perf_event_mmap_page*>(d);
  EXPECT_EQ(pg->aux_head, kPage - 1);  // CIRC_SPACE keeps one byte free
  // Disabled: more work writes nothing, even after the reader frees space.
  pg->aux_tail = pg->aux_head;
  Run(Workload::Instructions(64 * kPage));
  EXPECT_EQ(pg->aux_head, kPage - 1);
  Enable(fd);
  Run(Workload::Instructions(64 * 64));
  Disable(fd);  // aux_head is published when a transaction ends
  EXPECT_GT(pg->aux_head, kPage - 1);
}

TEST_F(MockAuxIntel, SnapshotModeIsTheReadOnlyMapping) {
  const int fd = MustOpen(Pt());
  void* d = MapData(fd);
  ASSERT_OK(MapAux(fd, d, 2 * kPage, kPage, kPage, 2 * kPage, PROT_READ));
  Enable(fd);
  Run(Workload::Instructions(64 * 4 * kPage));  // wraps several times
  Disable(fd);
  // The head is an offset inside the one-page buffer, and nothing was truncated:
  // the trace is still being written (a second capture moves the head on).
  auto* pg = static_cast<perf_event_mmap_page*>(d);
  const uint64_t head = pg->aux_head;
  EXPECT_LT(head, kPage);
  Enable(fd);
  Run(Workload::Instructions(64 * 100 + 8));
  Disable(fd);
  EXPECT_NE(pg->aux_head, head);
}

// The AUX pages join user->locked_vm and leave it with the last AUX unmap.
TEST_F(MockAuxIntel, AuxChargeIsGivenBackAtUnmap) {
  size_t budget = 0;
  const size_t within = UnprivilegedAuxPages(&budget);
  const int fd = MustOpen(Pt());
  void* d = MapData(fd);
  Result<void*> aux = MapAux(fd, d, 2 * kPage, within * kPage, within * kPage, 2 * kPage, PROT_READ | PROT_WRITE);
  ASSERT_OK(aux);
  perf_event_attr dummy = SoftwareAttr(PERF_COUNT_SW_DUMMY);
  dummy.exclude_kernel = 1;
  const int other = MustOpen(dummy);
  const size_t left = budget - 2 - within;
  size_t pages = 1;
  while (pages + 1 <= left) pages *= 2;
  const size_t len = (pages + 1) * kPage;
  EXPECT_THAT(b().Mmap(len, PROT_READ | PROT_WRITE, MAP_SHARED, other, 0), FailsWithErrno(EPERM));
  // A second mapping attaches to the AUX area uncharged ("If mapped, attach
  // to it"): were it charged, it would be over the budget.
  Result<void*> again = b().Mmap(within * kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 2 * kPage);
  ASSERT_OK(again);
  ASSERT_OK(b().Munmap(*aux, within * kPage));
  EXPECT_THAT(b().Mmap(len, PROT_READ | PROT_WRITE, MAP_SHARED, other, 0), FailsWithErrno(EPERM))
      << "the charge went back before the last AUX unmap";
  ASSERT_OK(b().Munmap(*again, within * kPage));
  Result<void*> m = b().Mmap(len, PROT_READ | PROT_WRITE, MAP_SHARED, other, 0);
  EXPECT_OK(m);
  if (m.ok()) EXPECT_OK(b().Munmap(*m, len));
}

// intel_pt_handle_vmx() (MockControl::SetVmxOperation(); arch/x86/events/
// intel/pt.c, a CPU whose PT cannot trace in VMX operation): VMX operation
// cuts a gap into the open transaction, which ends PERF_AUX_FLAG_PARTIAL
// ("record contains gaps", <linux/perf_event.h>) and with no other flag — the
// intel_pt driver never sets COLLISION, which only arm_spe_pmu.c does; a
// transaction without VMX operation is clean; an event enabled in VMX
// operation writes no trace (pt_config_start() leaves TraceEn clear) and its
// transaction ends PARTIAL with aux_size 0. Once the conformance case
// Aux.PartialWhileVmxOperation (aux.flag_partial), which could never run on a
// kernel: VMX operation is KVM's, and no perf call drives it.
TEST_F(MockAuxIntel, VmxOperationFlagsPartial) {
  const perf_event_attr a = [&] {
    perf_event_attr pt = Pt();
    pt.sample_id_all = 1;
    pt.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
    return pt;
  }();
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 8);
  ASSERT_TRUE(rb.has_value());
  ASSERT_OK_AND_ASSIGN(AuxBuffer aux, AuxBuffer::Map(b(), fd, *rb, 64, AuxMode::kFullTrace));
  auto aux_records = [&] {
    std::vector<AuxRecord> out;
    for (const Record& r : Records(*rb, a)) {
      if (r.header.type != PERF_RECORD_AUX) continue;
      Result<AuxRecord> ar = ParseAuxRecord(r);
      EXPECT_OK(ar);
      if (ar.ok()) out.push_back(*ar);
    }
    return out;
  };
  constexpr uint64_t kMask = PERF_AUX_FLAG_TRUNCATED | PERF_AUX_FLAG_OVERWRITE | PERF_AUX_FLAG_COLLISION;

  // VMX operation while the event runs: a gap, the transaction ends PARTIAL.
  Enable(fd);
  Run(Workload::Instructions(20000));
  control().SetVmxOperation(true);
  Run(Workload::Instructions(20000));
  control().SetVmxOperation(false);
  Run(Workload::Instructions(20000));
  Disable(fd);
  const std::vector<AuxRecord> gap = aux_records();
  ASSERT_FALSE(gap.empty()) << "no PERF_RECORD_AUX";
  EXPECT_TRUE(gap.back().flags & PERF_AUX_FLAG_PARTIAL) << DescribeAuxFlags(gap.back().flags);
  for (const AuxRecord& r : gap) EXPECT_EQ(r.flags & kMask, 0u) << DescribeAuxFlags(r.flags);
  EXPECT_GT(aux.ReadHead(), 0u);

  // Without VMX operation: no gap.
  Enable(fd);
  Run(Workload::Instructions(20000));
  Disable(fd);
  const std::vector<AuxRecord> clean = aux_records();
  ASSERT_FALSE(clean.empty());
  for (const AuxRecord& r : clean) EXPECT_EQ(r.flags & PERF_AUX_FLAG_PARTIAL, 0u) << DescribeAuxFlags(r.flags);

  // Enabled in VMX operation: nothing written, one record, PARTIAL and empty.
  control().SetVmxOperation(true);
  const uint64_t head = aux.ReadHead();
  Enable(fd);
  Run(Workload::Instructions(20000));
  Disable(fd);
  control().SetVmxOperation(false);
  const std::vector<AuxRecord> off = aux_records();
  ASSERT_EQ(off.size(), 1u);
  EXPECT_EQ(off[0].flags, static_cast<uint64_t>(PERF_AUX_FLAG_PARTIAL)) << DescribeAuxFlags(off[0].flags);
  EXPECT_EQ(off[0].aux_size, 0u);
  EXPECT_EQ(aux.ReadHead(), head) << "trace written in VMX operation";
}

}  // namespace
}  // namespace perftest
