// Regression tests for MockBackend disagreements that perftest_fidelity found
// against Linux 6.18 (each confirmed there with a probe program): file flags of
// the event fd and the order of perf_event_open()'s checks.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>

#include <ctime>

#include "harness/attr.h"
#include "harness/syscall_matchers.h"
#include "mocks/internal/mock_test_fixture.h"
#include "mocks/mock_backend.h"

namespace perftest {
namespace {

class OpenOrderTest : public MockTest {};

// anon_inode_getfile(..., O_RDWR): F_GETFL is O_RDWR, without O_LARGEFILE.
TEST_F(OpenOrderTest, GetflIsOrdwrLikeAnAnonInode) {
  ASSERT_OK_AND_ASSIGN(int fd, Open(SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS)));
  EXPECT_THAT(b().Fcntl(fd, F_GETFL, 0), SucceedsWith(O_RDWR));
  ASSERT_OK(b().Fcntl(fd, F_SETFL, O_NONBLOCK));
  EXPECT_THAT(b().Fcntl(fd, F_GETFL, 0), SucceedsWith(O_RDWR | O_NONBLOCK));
  EXPECT_OK(b().Close(fd));
}

// perf_try_init_event() -> has_extended_regs(): XMM bits (PERF_REG_EXTENDED_MASK,
// 32-63) are refused by PMUs without PERF_PMU_CAP_EXTENDED_REGS whether or not
// sample_type asks for registers.
TEST_F(OpenOrderTest, ExtendedRegsRefusedWithoutRegsSampleType) {
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK);
  a.sample_regs_user = uint64_t{1} << 63;
  EXPECT_THAT(Open(a), FailsWithErrno(EOPNOTSUPP)) << "software";
  a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.sample_regs_intr = uint64_t{1} << 32;
  EXPECT_THAT(Open(a), FailsWithErrno(EOPNOTSUPP)) << "software, sample_regs_intr";
  a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.sample_regs_user = uint64_t{1} << 63;
  a.aux_output = 1;
  EXPECT_THAT(Open(a), FailsWithErrno(EOPNOTSUPP)) << "before the aux_output check";
  a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.sample_regs_user = 0xff;  // not extended, not sampled: fine
  EXPECT_OK(Open(a));
}

// perf_event_open(): perf_need_aux_event() -> has_aux_action() looks at
// aux_sample_size alone; perf_get_aux_event() fails without an AUX leader.
TEST_F(OpenOrderTest, AuxSampleSizeWithoutSampleAuxIsEinval) {
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.aux_sample_size = 4096;
  EXPECT_THAT(Open(a), FailsWithErrno(EINVAL)) << "without PERF_SAMPLE_AUX";
  a.sample_type = PERF_SAMPLE_AUX;
  EXPECT_THAT(Open(a), FailsWithErrno(EINVAL)) << "with PERF_SAMPLE_AUX";
  a.aux_sample_size = 0;
  EXPECT_OK(Open(a));  // PERF_SAMPLE_AUX with aux_sample_size 0 needs no AUX event
}

// perf_event_open(): perf_event_set_clock() runs after perf_event_alloc() (PMU
// lookup first: ENOENT wins), and clocks that are not NMI-safe need
// PERF_PMU_CAP_NO_NMI, which breakpoint and tracepoint PMUs lack.
TEST_F(OpenOrderTest, ClockIdCheckedAfterPmuInit) {
  perf_event_attr a = MakeAttr(100, 0);
  a.use_clockid = 1;
  a.clockid = 12345;
  EXPECT_THAT(Open(a), FailsWithErrno(ENOENT)) << "unknown PMU before a bad clockid";
  a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.use_clockid = 1;
  a.clockid = CLOCK_REALTIME;
  EXPECT_OK(Open(a));  // software PMUs have PERF_PMU_CAP_NO_NMI
  a = MakeAttr(PERF_TYPE_BREAKPOINT, 0);
  a.bp_type = HW_BREAKPOINT_W;
  a.bp_addr = reinterpret_cast<uintptr_t>(&a);
  a.bp_len = HW_BREAKPOINT_LEN_4;
  a.exclude_kernel = 1;
  a.use_clockid = 1;
  for (int clk : {CLOCK_REALTIME, CLOCK_BOOTTIME, CLOCK_TAI}) {
    a.clockid = clk;
    EXPECT_THAT(Open(a), FailsWithErrno(EINVAL)) << "breakpoint, clockid " << clk;
  }
  a.clockid = CLOCK_MONOTONIC;
  EXPECT_OK(Open(a));
}

// perf_event_alloc() -> perf_cgroup_connect() resolves the cgroup fd after the
// cpu check and the PMU init, before get_callchain_buffers().
TEST_F(OpenOrderTest, CgroupFdResolvedAfterPmuInit) {
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  EXPECT_THAT(Open(a, 0, 0, -1, PERF_FLAG_PID_CGROUP), FailsWithErrno(EBADF)) << "no cgroup fd";
  EXPECT_THAT(Open(a, 0, 5, -1, PERF_FLAG_PID_CGROUP), FailsWithErrno(EINVAL)) << "cpu >= nr_cpu_ids first";
  EXPECT_THAT(Open(SoftwareAttr(PERF_COUNT_SW_MAX), 0, 0, -1, PERF_FLAG_PID_CGROUP), FailsWithErrno(ENOENT))
      << "PMU init first";
  a.aux_output = 1;
  EXPECT_THAT(Open(a, 0, 0, -1, PERF_FLAG_PID_CGROUP), FailsWithErrno(EOPNOTSUPP)) << "aux_output first";
  a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.sample_type = PERF_SAMPLE_CALLCHAIN;
  a.sample_max_stack = 200;
  EXPECT_THAT(Open(a, 0, 0, -1, PERF_FLAG_PID_CGROUP), FailsWithErrno(EBADF)) << "before get_callchain_buffers()";
}

// perf_swevent_init(): has_branch_stack() (EOPNOTSUPP) before the config range (ENOENT).
TEST_F(OpenOrderTest, SoftwareBranchStackBeforeConfigRange) {
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_MAX);
  a.sample_period = 1;
  a.sample_type = PERF_SAMPLE_BRANCH_STACK;
  a.branch_sample_type = PERF_SAMPLE_BRANCH_ANY;
  EXPECT_THAT(Open(a), FailsWithErrno(EOPNOTSUPP));
}

// get_callchain_buffers() (EOVERFLOW) runs in perf_event_alloc(), before
// perf_event_open()'s perf_need_aux_event()/perf_get_aux_event() (EINVAL).
TEST_F(OpenOrderTest, CallchainBeforeAuxEvent) {
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.sample_type = PERF_SAMPLE_CALLCHAIN;
  a.sample_max_stack = 200;
  a.aux_sample_size = 4096;
  EXPECT_THAT(Open(a), FailsWithErrno(EOVERFLOW));
}

}  // namespace
}  // namespace perftest
