// Unit tests of the AUX part of MockBackend (mocks/mock_aux.cc): the
// perf_mmap() AUX rules in the kernel's order and the intel_pt event's use of
// the AUX area.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <sys/mman.h>

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

}  // namespace
}  // namespace perftest
