// Unit tests of the breakpoint PMU model (x86_64 rules, slots, counting,
// PERF_EVENT_IOC_MODIFY_ATTRIBUTES). Expected values checked on Linux 6.18
// x86_64 with the same attrs.
#include "mocks/breakpoint_pmu.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/hw_breakpoint.h>

#include "mocks/internal/mock_test_fixture.h"

namespace perftest {
namespace {

using mock::Access;
using mock::BreakpointArch;
using mock::BreakpointHits;
using mock::BreakpointParse;

alignas(64) volatile uint64_t g_var[8];

perf_event_attr Bp(uint32_t type, uint64_t addr, uint64_t len) {
  perf_event_attr a = MakeAttr(PERF_TYPE_BREAKPOINT, 0);
  a.bp_type = type;
  a.bp_addr = addr;
  a.bp_len = len;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  return a;
}

TEST(BreakpointModel, X86TypesAndLengths) {
  const uint64_t base = 0x1000;
  std::string why;
  auto parse = [&](uint32_t type, uint64_t addr, uint64_t len) {
    return BreakpointParse(Bp(type, addr, len), BreakpointArch::kX86_64, &why);
  };
  for (uint64_t len : {1, 2, 4, 8}) {
    EXPECT_EQ(parse(HW_BREAKPOINT_W, base, len), 0) << len;
    EXPECT_EQ(parse(HW_BREAKPOINT_RW, base, len), 0) << len;
  }
  EXPECT_EQ(parse(HW_BREAKPOINT_W, base, 0), EINVAL);
  EXPECT_EQ(parse(HW_BREAKPOINT_W, base, 3), EINVAL);
  EXPECT_EQ(parse(HW_BREAKPOINT_W, base, 16), EOPNOTSUPP) << "AMD range breakpoint without BPEXT";
  EXPECT_EQ(parse(HW_BREAKPOINT_R, base, 8), EINVAL) << "x86 has no read-only breakpoint";
  EXPECT_EQ(parse(HW_BREAKPOINT_EMPTY, base, 8), EINVAL);
  EXPECT_EQ(parse(HW_BREAKPOINT_W | HW_BREAKPOINT_X, base, 8), EINVAL);
  EXPECT_EQ(parse(HW_BREAKPOINT_X, base, 8), 0);
  for (uint64_t len : {1, 2, 4, 16}) EXPECT_EQ(parse(HW_BREAKPOINT_X, base, len), EINVAL) << len;
  EXPECT_EQ(parse(HW_BREAKPOINT_X, base + 1, 8), 0) << "no alignment rule for execute";
  EXPECT_EQ(parse(HW_BREAKPOINT_W, base + 1, 2), EINVAL);
  EXPECT_EQ(parse(HW_BREAKPOINT_W, base + 2, 2), 0);
  EXPECT_EQ(parse(HW_BREAKPOINT_W, base + 2, 4), EINVAL);
  EXPECT_EQ(parse(HW_BREAKPOINT_W, base + 4, 8), EINVAL);
  EXPECT_EQ(parse(HW_BREAKPOINT_W, 0xffffffff81000000ull, 8), EINVAL) << "kernel address, exclude_kernel";
  perf_event_attr k = Bp(HW_BREAKPOINT_W, 0xffffffff81000000ull, 8);
  k.exclude_kernel = 0;
  EXPECT_EQ(BreakpointParse(k, BreakpointArch::kX86_64, &why), 0);
}

TEST(BreakpointModel, HitsOverlapAndKind) {
  const perf_event_attr w = Bp(HW_BREAKPOINT_W, 0x1002, 2);
  EXPECT_TRUE(BreakpointHits(w, 0x1000, 8, Access::kWrite)) << "an 8-byte store covering it";
  EXPECT_FALSE(BreakpointHits(w, 0x1001, 1, Access::kWrite));
  EXPECT_TRUE(BreakpointHits(w, 0x1003, 1, Access::kWrite));
  EXPECT_FALSE(BreakpointHits(w, 0x1004, 4, Access::kWrite));
  EXPECT_FALSE(BreakpointHits(w, 0x1002, 2, Access::kRead)) << "W ignores loads";
  const perf_event_attr rw = Bp(HW_BREAKPOINT_RW, 0x1000, 8);
  EXPECT_TRUE(BreakpointHits(rw, 0x1000, 8, Access::kRead));
  EXPECT_TRUE(BreakpointHits(rw, 0x1000, 8, Access::kWrite));
  const perf_event_attr x = Bp(HW_BREAKPOINT_X, 0x4000, 8);
  EXPECT_TRUE(BreakpointHits(x, 0x4000, 1, Access::kExecute));
  EXPECT_FALSE(BreakpointHits(x, 0x4000, 8, Access::kRead));
}

class BreakpointPmu : public MockTest {};

// reserve_bp_slot(): 4 debug registers shared by data and instruction
// breakpoints; held from open (disabled or not) to close.
TEST_F(BreakpointPmu, SlotsPerTaskAndCpu) {
  std::vector<int> fds;
  for (int i = 0; i < 4; ++i) fds.push_back(MustOpen(Bp(HW_BREAKPOINT_W, reinterpret_cast<uint64_t>(&g_var[i]), 8)));
  EXPECT_THAT(Open(Bp(HW_BREAKPOINT_W, reinterpret_cast<uint64_t>(&g_var[4]), 8)), FailsWithErrno(ENOSPC));
  EXPECT_THAT(Open(Bp(HW_BREAKPOINT_X, ExecuteTargetAddress(), 8)), FailsWithErrno(ENOSPC)) << "one pool";
  EXPECT_THAT(Open(Bp(HW_BREAKPOINT_X, ExecuteTargetAddress(), 8), -1, 0), FailsWithErrno(ENOSPC))
      << "the task may run on CPU 0";
  EXPECT_OK(b().Close(fds.back()));
  fds.pop_back();
  EXPECT_OK(Open(Bp(HW_BREAKPOINT_W, reinterpret_cast<uint64_t>(&g_var[4]), 8)));
}

TEST_F(BreakpointPmu, CpuWideBreakpointsTakeTheTasksSlots) {
  for (int i = 0; i < 4; ++i) MustOpen(Bp(HW_BREAKPOINT_X, ExecuteTargetAddress(), 8), -1, 0);
  EXPECT_THAT(Open(Bp(HW_BREAKPOINT_W, reinterpret_cast<uint64_t>(&g_var[0]), 8)), FailsWithErrno(ENOSPC));
  EXPECT_OK(Open(Bp(HW_BREAKPOINT_W, reinterpret_cast<uint64_t>(&g_var[0]), 8), -1, 1));  // CPU 1 is free
}

TEST_F(BreakpointPmu, CountsMatchingAccesses) {
  const int w = MustOpen(Bp(HW_BREAKPOINT_W, reinterpret_cast<uint64_t>(&g_var[0]), 8));
  const int rw = MustOpen(Bp(HW_BREAKPOINT_RW, reinterpret_cast<uint64_t>(&g_var[0]), 8));
  const int x = MustOpen(Bp(HW_BREAKPOINT_X, ExecuteTargetAddress(), 8));
  perf_event_attr user_excluded = Bp(HW_BREAKPOINT_W, reinterpret_cast<uint64_t>(&g_var[0]), 8);
  user_excluded.exclude_user = 1;
  user_excluded.exclude_kernel = 0;
  const int eu = MustOpen(user_excluded);
  for (int fd : {w, rw, x, eu}) Enable(fd);
  Run(Workload::WriteMemory(&g_var[0], 8, 10));
  Run(Workload::ReadMemory(&g_var[0], 8, 7));
  Run(Workload::WriteMemory(reinterpret_cast<volatile uint8_t*>(&g_var[0]) + 3, 1, 4));
  Run(Workload::WriteMemory(&g_var[1], 8, 4));
  Run(Workload::Execute(9));
  EXPECT_EQ(Count(w), 14u) << "10 stores + 4 byte stores inside (6.18: 14)";
  EXPECT_EQ(Count(rw), 21u);
  EXPECT_EQ(Count(x), 9u);
  EXPECT_EQ(Count(eu), 0u);
  EXPECT_THAT(b().RunWorkload(Workload::WriteMemory(reinterpret_cast<volatile uint8_t*>(&g_var[0]) + 1, 2, 1)),
              FailsWithErrno(EINVAL))
      << "a misaligned access width";
}

TEST_F(BreakpointPmu, SamplesCarryBpAddrAndTheNextIp) {
  perf_event_attr a = Bp(HW_BREAKPOINT_W, reinterpret_cast<uint64_t>(&g_var[0]), 8);
  a.sample_period = 1;
  a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_ADDR;
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 1);
  ASSERT_TRUE(rb);
  Enable(fd);
  Run(Workload::WriteMemory(&g_var[0], 8, 3));
  const std::vector<Record> recs = Records(*rb, a);
  ASSERT_EQ(recs.size(), 3u);
  for (const Record& r : recs) {
    EXPECT_EQ(r.header.misc & PERF_RECORD_MISC_CPUMODE_MASK, PERF_RECORD_MISC_USER);
    EXPECT_EQ(*std::get<SampleRecord>(r.body).addr, a.bp_addr) << "perf_bp_event(): data->addr = bp_addr";
  }
}

// perf_event_modify_breakpoint(): disable, check, copy, enable iff !attr.disabled.
TEST_F(BreakpointPmu, ModifyAttributes) {
  perf_event_attr a = Bp(HW_BREAKPOINT_W, reinterpret_cast<uint64_t>(&g_var[0]), 8);
  const int fd = MustOpen(a);  // disabled = 1
  Enable(fd);
  perf_event_attr m = a;
  m.bp_addr = reinterpret_cast<uint64_t>(&g_var[1]);
  EXPECT_THAT(b().Ioctl(fd, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, reinterpret_cast<uintptr_t>(&m)), SucceedsWith(0));
  Run(Workload::WriteMemory(&g_var[1], 8, 5));
  EXPECT_EQ(Count(fd), 0u) << "attr.disabled = 1: left disabled";
  m.disabled = 0;
  EXPECT_THAT(b().Ioctl(fd, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, reinterpret_cast<uintptr_t>(&m)), SucceedsWith(0));
  Run(Workload::WriteMemory(&g_var[1], 8, 5));
  Run(Workload::WriteMemory(&g_var[0], 8, 5));
  EXPECT_EQ(Count(fd), 5u);
  perf_event_attr other = m;
  other.exclude_idle = 1;
  EXPECT_THAT(b().Ioctl(fd, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, reinterpret_cast<uintptr_t>(&other)),
              FailsWithErrno(EINVAL));
  other = m;
  other.sig_data = 0x1234;  // perf_event_modify_copy_attr() takes it before the comparison
  EXPECT_THAT(b().Ioctl(fd, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, reinterpret_cast<uintptr_t>(&other)), SucceedsWith(0));
}

// kernel/events/hw_breakpoint.c: slots are accounted per find_slot_idx()
// type. x86 (mixed registers): execute breakpoints and watchpoints share the 4
// debug registers; arm64: the BRPs for TYPE_INST and the WRPs for TYPE_DATA.
TEST_F(BreakpointPmu, SlotPoolsPerType) {
  const uint64_t code = 0x400000;
  auto fill = [&](uint32_t type, int n) {
    std::vector<int> fds;
    for (int i = 0; i < n; ++i) {
      const uint64_t addr = type == HW_BREAKPOINT_X ? code + 16 * i : reinterpret_cast<uint64_t>(&g_var[i % 8]);
      fds.push_back(MustOpen(Bp(type, addr, type == HW_BREAKPOINT_X ? sizeof(long) : HW_BREAKPOINT_LEN_8)));
    }
    return fds;
  };
  // sw-only (x86_64): one pool of 4.
  fill(HW_BREAKPOINT_W, 3);
  fill(HW_BREAKPOINT_X, 1);
  EXPECT_THAT(Open(Bp(HW_BREAKPOINT_X, code + 0x100, sizeof(long))), FailsWithErrno(ENOSPC)) << "mixed registers";
  EXPECT_THAT(Open(Bp(HW_BREAKPOINT_W, reinterpret_cast<uint64_t>(&g_var[7]), 8)), FailsWithErrno(ENOSPC));

  Result<MockProfile> arm = LoadProfile("arm64-pmuv3");
  ASSERT_OK(arm);
  ASSERT_EQ(arm->hw_breakpoint_slots, 6u);
  ASSERT_EQ(arm->hw_watchpoint_slots, 4u);
  Remake(*arm);
  fill(HW_BREAKPOINT_W, 4);
  EXPECT_THAT(Open(Bp(HW_BREAKPOINT_RW, reinterpret_cast<uint64_t>(&g_var[5]), 8)), FailsWithErrno(ENOSPC))
      << "the 4 WRPs are taken";
  fill(HW_BREAKPOINT_X, 6);  // the BRPs are a pool of their own
  EXPECT_THAT(Open(Bp(HW_BREAKPOINT_X, code + 0x200, sizeof(long))), FailsWithErrno(ENOSPC)) << "6 BRPs";
}

TEST(BreakpointModel, SlotTypeOfBpType) {
  EXPECT_EQ(mock::SlotOf(HW_BREAKPOINT_X), mock::BreakpointSlot::kInst);
  EXPECT_EQ(mock::SlotOf(HW_BREAKPOINT_R), mock::BreakpointSlot::kData);
  EXPECT_EQ(mock::SlotOf(HW_BREAKPOINT_W), mock::BreakpointSlot::kData);
  EXPECT_EQ(mock::SlotOf(HW_BREAKPOINT_RW), mock::BreakpointSlot::kData);
}

}  // namespace
}  // namespace perftest
