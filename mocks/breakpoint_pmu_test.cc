// Unit tests of the breakpoint PMU model (x86_64 and arm64 rules, slots,
// counting, PERF_EVENT_IOC_MODIFY_ATTRIBUTES). x86_64 values checked on Linux
// 6.18 x86_64 with the same attrs; arm64 ones follow the source of
// arch/arm64/kernel/hw_breakpoint.c (no arm64 machine here).
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

// arch/arm64/kernel/hw_breakpoint.c arch_build_bp_info(): X, R, W, RW and any
// length 1..8; an execute breakpoint of a 64-bit task of any such length is
// made 4 bytes; nothing else parses. No range breakpoints (no EOPNOTSUPP).
TEST(BreakpointModel, Arm64TypesAndLengths) {
  const uint64_t base = 0x1000;
  std::string why;
  auto parse = [&](uint32_t type, uint64_t addr, uint64_t len) {
    return BreakpointParse(Bp(type, addr, len), BreakpointArch::kArm64, /*per_task=*/true, &why);
  };
  for (uint64_t len = 1; len <= 8; ++len) {
    for (uint32_t type : {HW_BREAKPOINT_R, HW_BREAKPOINT_W, HW_BREAKPOINT_RW, HW_BREAKPOINT_X}) {
      EXPECT_EQ(parse(type, base, len), 0) << "type " << type << " len " << len << ": " << why;
    }
  }
  for (uint64_t len : {0, 9, 16}) EXPECT_EQ(parse(HW_BREAKPOINT_W, base, len), EINVAL) << len;
  EXPECT_EQ(parse(HW_BREAKPOINT_X, base, 16), EINVAL) << "the length is checked before the execute fix-up";
  EXPECT_EQ(parse(HW_BREAKPOINT_EMPTY, base, 4), EINVAL);
  EXPECT_EQ(parse(HW_BREAKPOINT_W | HW_BREAKPOINT_X, base, 4), EINVAL);
  EXPECT_EQ(parse(HW_BREAKPOINT_INVALID, base, 4), EINVAL);
  EXPECT_EQ(BreakpointParse(Bp(HW_BREAKPOINT_R, base, 8), BreakpointArch::kX86_64, &why), EINVAL)
      << "x86 keeps its own rules";
}

// arm64 hw_breakpoint_arch_parse(): a 64-bit task has no alignment rule (the
// address is rounded down to the doubleword and the byte select shifted);
// a per-task breakpoint on a kernel address is EINVAL, a CPU-wide one needs
// exclude_kernel clear (hw_breakpoint_parse()).
TEST(BreakpointModel, Arm64AlignmentAndKernelAddresses) {
  std::string why;
  for (uint64_t off = 0; off < 8; ++off) {
    for (uint64_t len : {2, 4, 8}) {
      EXPECT_EQ(BreakpointParse(Bp(HW_BREAKPOINT_W, 0x1000 + off, len), BreakpointArch::kArm64, true, &why), 0)
          << "offset " << off << " len " << len;
    }
  }
  EXPECT_EQ(BreakpointParse(Bp(HW_BREAKPOINT_X, 0x4002, 8), BreakpointArch::kArm64, true, &why), 0);
  const uint64_t kernel = 0xffff800008000000ull;
  perf_event_attr k = Bp(HW_BREAKPOINT_W, kernel, 8);
  k.exclude_kernel = 0;
  EXPECT_EQ(BreakpointParse(k, BreakpointArch::kArm64, /*per_task=*/true, &why), EINVAL) << "per-task kernel bp";
  EXPECT_EQ(BreakpointParse(k, BreakpointArch::kArm64, /*per_task=*/false, &why), 0) << why;
  k.exclude_kernel = 1;
  EXPECT_EQ(BreakpointParse(k, BreakpointArch::kArm64, /*per_task=*/false, &why), EINVAL);
  EXPECT_EQ(BreakpointParse(Bp(HW_BREAKPOINT_W, (uint64_t{1} << 48) - 4, 8), BreakpointArch::kArm64, true, &why), 0)
      << "starts below TASK_SIZE: a user breakpoint";
}

// The byte-address select (BAS): the watched bytes are the doubleword's
// selected ones; a watchpoint crossing the doubleword loses its tail;
// R watches loads only; an execute breakpoint fires on its word.
TEST(BreakpointModel, Arm64ByteSelectHits) {
  const auto arm = BreakpointArch::kArm64;
  const perf_event_attr w3 = Bp(HW_BREAKPOINT_W, 0x1001, 3);  // bytes 1-3 of the doubleword at 0x1000
  EXPECT_FALSE(BreakpointHits(w3, 0x1000, 1, Access::kWrite, arm));
  EXPECT_TRUE(BreakpointHits(w3, 0x1003, 1, Access::kWrite, arm));
  EXPECT_FALSE(BreakpointHits(w3, 0x1004, 4, Access::kWrite, arm));
  EXPECT_TRUE(BreakpointHits(w3, 0x1000, 8, Access::kWrite, arm));
  const perf_event_attr cross = Bp(HW_BREAKPOINT_W, 0x1006, 4);  // 0x1006..0x1009 asked, 0x1006..0x1007 watched
  EXPECT_TRUE(BreakpointHits(cross, 0x1007, 1, Access::kWrite, arm));
  EXPECT_FALSE(BreakpointHits(cross, 0x1008, 1, Access::kWrite, arm)) << "past the doubleword: out of the 8-bit BAS";
  EXPECT_TRUE(BreakpointHits(cross, 0x1008, 1, Access::kWrite)) << "x86 would watch it (had it parsed)";
  const perf_event_attr r = Bp(HW_BREAKPOINT_R, 0x2000, 8);
  EXPECT_TRUE(BreakpointHits(r, 0x2004, 4, Access::kRead, arm));
  EXPECT_FALSE(BreakpointHits(r, 0x2004, 4, Access::kWrite, arm)) << "a load-only watchpoint";
  const perf_event_attr x = Bp(HW_BREAKPOINT_X, 0x4000, 8);  // made 4 bytes
  EXPECT_TRUE(BreakpointHits(x, 0x4000, 1, Access::kExecute, arm));
  EXPECT_FALSE(BreakpointHits(x, 0x4004, 1, Access::kExecute, arm)) << "the next instruction";
  EXPECT_FALSE(BreakpointHits(x, 0x4000, 4, Access::kRead, arm));
}

// arm64 arch_build_bp_info() and hw_breakpoint_arch_parse() for an AArch32
// task (is_compat_bp(): a per-task breakpoint whose target is compat): an
// execute breakpoint is 2 or 4 bytes, not fixed up; the alignment mask is 7
// for 8 bytes, else 3, and within it only a halfword at 1-2 or a byte at 1-3
// may be offset. A CPU-wide breakpoint keeps the 64-bit rules.
TEST(BreakpointModel, Arm64CompatLengthsAndAlignment) {
  const auto arm = BreakpointArch::kArm64;
  const mock::BreakpointTask compat{/*per_task=*/true, /*compat=*/true};
  const mock::BreakpointTask cpu_wide{/*per_task=*/false, /*compat=*/true};
  std::string why;
  auto parse = [&](uint32_t type, uint64_t addr, uint64_t len, const mock::BreakpointTask& t) {
    return BreakpointParse(Bp(type, addr, len), arm, t, &why);
  };
  EXPECT_EQ(parse(HW_BREAKPOINT_X, 0x4000, 4, compat), 0) << why;
  EXPECT_EQ(parse(HW_BREAKPOINT_X, 0x4002, 2, compat), 0) << "a Thumb instruction at a halfword";
  for (uint64_t len : {1, 3, 5, 8}) {
    EXPECT_EQ(parse(HW_BREAKPOINT_X, 0x4000, len, compat), EINVAL) << "X len " << len << " for AArch32";
    EXPECT_EQ(parse(HW_BREAKPOINT_X, 0x4000, len, cpu_wide), 0) << "X len " << len << " CPU-wide: made 4";
  }
  EXPECT_EQ(parse(HW_BREAKPOINT_X, 0x4002, 4, compat), EINVAL) << "4 bytes at offset 2";
  struct Case {
    uint64_t addr, len;
    int err;
  } cases[] = {
      {0x1001, 1, 0},      {0x1002, 1, 0},      {0x1003, 1, 0},       // a byte anywhere in the word
      {0x1001, 2, 0},      {0x1002, 2, 0},      {0x1003, 2, EINVAL},  // a halfword at 1-2
      {0x1004, 4, 0},      {0x1002, 4, EINVAL}, {0x1001, 4, EINVAL},  // mask 3: word-aligned
      {0x1001, 3, EINVAL}, {0x1004, 5, 0},      {0x1005, 7, EINVAL},
      {0x1008, 8, 0},      {0x1004, 8, EINVAL}, {0x1001, 8, EINVAL},  // mask 7 for 8 bytes
  };
  for (const Case& c : cases) {
    EXPECT_EQ(parse(HW_BREAKPOINT_W, c.addr, c.len, compat), c.err) << std::hex << c.addr << " len " << c.len;
    EXPECT_EQ(parse(HW_BREAKPOINT_W, c.addr, c.len, cpu_wide), 0) << "CPU-wide: no alignment rule";
    EXPECT_EQ(BreakpointParse(Bp(HW_BREAKPOINT_W, c.addr, c.len), arm, /*per_task=*/true, &why), 0) << "a 64-bit task";
  }
}

// TASK_SIZE is the opener's: TASK_SIZE_32 (4 GiB - PAGE_SIZE) for an AArch32
// opener, so an address in the top page or past 4 GiB is a kernel address
// (arch_check_bp_in_kernelspace()): EINVAL per task, EINVAL with exclude_kernel.
TEST(BreakpointModel, Arm64CompatTaskSize) {
  const auto arm = BreakpointArch::kArm64;
  const mock::BreakpointTask compat{true, true, 4096};
  std::string why;
  EXPECT_EQ(BreakpointParse(Bp(HW_BREAKPOINT_W, 0xffffe000, 4), arm, compat, &why), 0) << why;
  EXPECT_EQ(BreakpointParse(Bp(HW_BREAKPOINT_W, 0xfffff000, 4), arm, compat, &why), EINVAL) << "the vectors page";
  EXPECT_EQ(BreakpointParse(Bp(HW_BREAKPOINT_W, 0x100000000, 4), arm, compat, &why), EINVAL);
  EXPECT_EQ(BreakpointParse(Bp(HW_BREAKPOINT_W, 0x100000000, 4), arm, /*per_task=*/true, &why), 0) << "64-bit";
  perf_event_attr k = Bp(HW_BREAKPOINT_W, 0x100000000, 4);
  EXPECT_EQ(BreakpointParse(k, arm, mock::BreakpointTask{false, true}, &why), EINVAL) << "CPU-wide, exclude_kernel";
  k.exclude_kernel = 0;
  EXPECT_EQ(BreakpointParse(k, arm, mock::BreakpointTask{false, true}, &why), 0) << why;
  EXPECT_EQ(BreakpointParse(Bp(HW_BREAKPOINT_W, 0xffffe000, 4), arm, mock::BreakpointTask{true, true, 65536}, &why),
            EINVAL) << "64K pages: TASK_SIZE_32 is 4 GiB - 64 KiB";
}

// An AArch32 breakpoint's register holds the word (or, for 8 bytes, the
// doubleword) the mask leaves; BAS selects within it.
TEST(BreakpointModel, Arm64CompatByteSelectHits) {
  const auto arm = BreakpointArch::kArm64;
  const perf_event_attr half = Bp(HW_BREAKPOINT_W, 0x1001, 2);  // BAS 0b0110 of the word at 0x1000
  EXPECT_FALSE(BreakpointHits(half, 0x1000, 1, Access::kWrite, arm, true));
  EXPECT_TRUE(BreakpointHits(half, 0x1001, 1, Access::kWrite, arm, true));
  EXPECT_TRUE(BreakpointHits(half, 0x1002, 1, Access::kWrite, arm, true));
  EXPECT_FALSE(BreakpointHits(half, 0x1003, 1, Access::kWrite, arm, true));
  const perf_event_attr thumb = Bp(HW_BREAKPOINT_X, 0x4002, 2);
  EXPECT_TRUE(BreakpointHits(thumb, 0x4002, 1, Access::kExecute, arm, true));
  EXPECT_FALSE(BreakpointHits(thumb, 0x4000, 1, Access::kExecute, arm, true)) << "the other halfword";
  const perf_event_attr five_low = Bp(HW_BREAKPOINT_W, 0x1000, 5);  // doubleword-aligned: BAS 0x1f
  EXPECT_TRUE(BreakpointHits(five_low, 0x1004, 1, Access::kWrite, arm, true));
  EXPECT_FALSE(BreakpointHits(five_low, 0x1005, 1, Access::kWrite, arm, true));
  const perf_event_attr five_high = Bp(HW_BREAKPOINT_W, 0x1004, 5);  // WVR 0x1004: the word only
  EXPECT_TRUE(BreakpointHits(five_high, 0x1007, 1, Access::kWrite, arm, true));
  EXPECT_FALSE(BreakpointHits(five_high, 0x1008, 1, Access::kWrite, arm, true)) << "BAS selects within the word";
}

class Arm64BreakpointPmu : public MockTest {
 protected:
  std::string ProfileName() const override { return "arm64-pmuv3"; }
};

// Under the arm64-pmuv3 profile the open and PERF_EVENT_IOC_MODIFY_ATTRIBUTES
// take arm64's rules: a read-only watchpoint and a misaligned 8-byte one open,
// a 3-byte one counts only stores to its bytes.
TEST_F(Arm64BreakpointPmu, OpenAndModifyFollowArm64) {
  const uint64_t at = reinterpret_cast<uint64_t>(&g_var[0]);
  const int r = MustOpen(Bp(HW_BREAKPOINT_R, at, 8));
  EXPECT_OK(Open(Bp(HW_BREAKPOINT_W, at + 4, 8)));  // x86: EINVAL
  EXPECT_THAT(Open(Bp(HW_BREAKPOINT_W, at, 16)), FailsWithErrno(EINVAL)) << "x86 says EOPNOTSUPP";
  const int w = MustOpen(Bp(HW_BREAKPOINT_W, at + 1, 3));
  for (int fd : {r, w}) Enable(fd);
  Run(Workload::ReadMemory(&g_var[0], 8, 5));
  Run(Workload::WriteMemory(reinterpret_cast<volatile uint8_t*>(&g_var[0]) + 2, 1, 3));
  Run(Workload::WriteMemory(reinterpret_cast<volatile uint8_t*>(&g_var[0]) + 4, 1, 2));
  EXPECT_EQ(Count(r), 5u) << "loads only";
  EXPECT_EQ(Count(w), 3u) << "byte 2 is watched, byte 4 is not";
  perf_event_attr narrow = Bp(HW_BREAKPOINT_W, at + 4, 1);
  EXPECT_OK(b().Ioctl(w, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, reinterpret_cast<uintptr_t>(&narrow)));
  perf_event_attr bad = Bp(HW_BREAKPOINT_W, at, 9);
  EXPECT_THAT(b().Ioctl(w, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, reinterpret_cast<uintptr_t>(&bad)),
              FailsWithErrno(EINVAL));
}

// The profile's compat_task reaches perf_event_open(): per-task breakpoints
// take the AArch32 rules, CPU-wide ones the 64-bit rules. This process's own
// addresses are past TASK_SIZE_32, so the per-task breakpoints here name low
// addresses (nothing runs there; the suites cannot use a compat profile).
TEST_F(Arm64BreakpointPmu, CompatTaskProfileTakesTheAArch32Rules) {
  EXPECT_THAT(Open(Bp(HW_BREAKPOINT_X, 0x4000, 1)), Succeeds()) << "a 64-bit task: made 4 bytes";
  MockProfile compat = profile_;
  compat.compat_task = true;
  Remake(compat);
  EXPECT_THAT(Open(Bp(HW_BREAKPOINT_X, 0x4000, 1)), FailsWithErrno(EINVAL)) << "AArch32: 2 or 4 bytes";
  EXPECT_OK(Open(Bp(HW_BREAKPOINT_X, 0x4002, 2)));
  EXPECT_THAT(Open(Bp(HW_BREAKPOINT_W, 0x1004, 8)), FailsWithErrno(EINVAL)) << "8 bytes off the doubleword";
  EXPECT_THAT(Open(Bp(HW_BREAKPOINT_W, 0x1004, 8), -1, 0), Succeeds()) << "CPU-wide: the 64-bit rules";
  EXPECT_THAT(Open(Bp(HW_BREAKPOINT_W, reinterpret_cast<uint64_t>(&g_var[0]), 8)), FailsWithErrno(EINVAL))
      << "this 64-bit process's variable is past TASK_SIZE_32";
  const int w = MustOpen(Bp(HW_BREAKPOINT_W, 0x1008, 8));
  perf_event_attr odd = Bp(HW_BREAKPOINT_W, 0x1003, 2);
  EXPECT_THAT(b().Ioctl(w, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, reinterpret_cast<uintptr_t>(&odd)), FailsWithErrno(EINVAL))
      << "modify_user_hw_breakpoint_check() -> hw_breakpoint_parse(): the same rules";
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
      fds.push_back(MustOpen(Bp(type, addr, type == HW_BREAKPOINT_X ? sizeof(long) : size_t{HW_BREAKPOINT_LEN_8})));
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
