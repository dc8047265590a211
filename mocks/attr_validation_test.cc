#include "mocks/attr_validation.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "harness/attr.h"

namespace perftest::mock {
namespace {

AttrLimits ForRelease(uint32_t version) {
  AttrLimits l;
  l.kernel_version = version;
  l.known = AttrBitsFor(version);
  l.aux_action = l.known.aux_action;
  return l;
}

AttrLimits Linux618() {
  AttrLimits l = ForRelease(KernelVersion(6, 18));
  l.attr_size = 136;  // what Linux 6.18 writes back
  return l;
}

int Copy(perf_event_attr* a, AttrLimits l = Linux618()) {
  perf_event_attr out;
  std::string why;
  return CopyAttr(a, l, &out, &why);
}

TEST(AttrValidation, SizeZeroMeansVer0AndTruncates) {
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.size = 0;
  a.sample_regs_user = 0xff;  // past the first 64 bytes: not copied
  perf_event_attr out;
  std::string why;
  ASSERT_EQ(CopyAttr(&a, Linux618(), &out, &why), 0) << why;
  EXPECT_EQ(out.size, uint32_t{PERF_ATTR_SIZE_VER0});
  EXPECT_EQ(out.sample_regs_user, 0u);
  EXPECT_EQ(out.config, uint64_t{PERF_COUNT_SW_PAGE_FAULTS});
  EXPECT_EQ(out.sample_max_stack, 127) << "perf_copy_attr() defaults it to perf_event_max_stack";
}

TEST(AttrValidation, TooSmallIsE2bigWithSizeWrittenBack) {
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.size = 32;
  EXPECT_EQ(Copy(&a), E2BIG);
  EXPECT_EQ(a.size, 136u) << "put_user(sizeof(*attr), &uattr->size)";
}

TEST(AttrValidation, LargerStructNeedsZeroTail) {
  std::vector<unsigned char> buf(256, 0);
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.size = 200;
  std::memcpy(buf.data(), &a, sizeof a);
  auto* big = reinterpret_cast<perf_event_attr*>(buf.data());
  EXPECT_EQ(Copy(big), 0) << "zero tail";
  buf[130] = 1;  // inside the kernel's 136 bytes (config3 on 6.18): ignored by the model
  EXPECT_EQ(Copy(big), 0);
  buf[150] = 1;  // past the kernel's struct
  EXPECT_EQ(Copy(big), E2BIG);
  EXPECT_EQ(big->size, 136u);
  big->size = 4097;
  EXPECT_EQ(Copy(big), E2BIG) << "larger than a page";
}

TEST(AttrValidation, UnknownBitsAreEinval) {
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.sample_type = uint64_t{1} << 62;
  EXPECT_EQ(Copy(&a), EINVAL);
  a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.read_format = uint64_t{1} << 10;
  EXPECT_EQ(Copy(&a), EINVAL);
  a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.__reserved_1 = 1;
  EXPECT_EQ(Copy(&a), EINVAL);
  a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.__reserved_2 = 1;
  EXPECT_EQ(Copy(&a), EINVAL);
}

TEST(AttrValidation, FlagCombinations) {
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.inherit_thread = 1;
  EXPECT_EQ(Copy(&a), EINVAL) << "inherit_thread without inherit";
  a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.sigtrap = 1;
  EXPECT_EQ(Copy(&a), EINVAL) << "sigtrap without remove_on_exec";
  a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.sample_type = PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT;
  EXPECT_EQ(Copy(&a), EINVAL);
  a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.sample_type = PERF_SAMPLE_STACK_USER;
  a.sample_stack_user = 12;
  EXPECT_EQ(Copy(&a), EINVAL) << "not a multiple of 8";
  a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.sample_type = PERF_SAMPLE_REGS_USER;
  a.sample_regs_user = 1 << 12;  // PERF_REG_X86_DS
  EXPECT_EQ(Copy(&a), EINVAL);
  a.sample_regs_user = 0xff;
  EXPECT_EQ(Copy(&a), 0);
}

// arch/arm64/kernel/perf_regs.c and arch/riscv/kernel/perf_regs.c
// perf_reg_validate(): an empty mask and bits at or above PERF_REG_<ARCH>_MAX
// are EINVAL there too, not only on x86_64.
TEST(AttrValidation, RegsMaskOtherArches) {
  for (uint32_t max : {33u, 32u}) {
    AttrLimits l = Linux618();
    l.x86_64 = false;
    l.perf_reg_max = max;
    perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
    a.sample_type = PERF_SAMPLE_REGS_USER;
    a.sample_regs_user = 0;
    EXPECT_EQ(Copy(&a, l), EINVAL) << "empty mask, max " << max;
    a.sample_regs_user = uint64_t{1} << max;
    EXPECT_EQ(Copy(&a, l), EINVAL) << "reserved bit, max " << max;
    a.sample_regs_user = (uint64_t{1} << max) - 1;
    EXPECT_EQ(Copy(&a, l), 0) << "all registers, max " << max;
    a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
    a.sample_type = PERF_SAMPLE_REGS_INTR;
    a.sample_regs_intr = 0;
    EXPECT_EQ(Copy(&a, l), EINVAL) << "empty intr mask, max " << max;
  }
}

TEST(AttrValidation, OpenFlagsAndFrequency) {
  std::string why;
  EXPECT_EQ(CheckOpenFlags(1 << 4, &why), EINVAL);
  EXPECT_EQ(CheckOpenFlags(PERF_FLAG_FD_CLOEXEC | PERF_FLAG_FD_NO_GROUP, &why), 0);
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.freq = 1;
  a.sample_freq = 100001;
  EXPECT_EQ(CheckOpenAttr(a, 0, 0, -1, Linux618(), &why), EINVAL) << "above perf_event_max_sample_rate";
  a.sample_freq = 100000;
  EXPECT_EQ(CheckOpenAttr(a, 0, 0, -1, Linux618(), &why), 0);
  a.freq = 0;
  a.sample_period = uint64_t{1} << 63;
  EXPECT_EQ(CheckOpenAttr(a, 0, 0, -1, Linux618(), &why), EINVAL);
  EXPECT_EQ(CheckOpenAttr(SoftwareAttr(1), PERF_FLAG_PID_CGROUP, -1, 0, Linux618(), &why), EINVAL);
}

TEST(AttrValidation, ParanoidWithoutPrivilege) {
  AttrLimits l = Linux618();
  l.privileged = false;
  l.paranoid = 2;
  std::string why;
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  EXPECT_EQ(CheckOpenAttr(a, 0, 0, -1, l, &why), EACCES) << "kernel counting needs perf_allow_kernel()";
  a.exclude_kernel = 1;
  EXPECT_EQ(CheckOpenAttr(a, 0, 0, -1, l, &why), 0) << why;
  l.paranoid = 1;
  a.exclude_kernel = 0;
  EXPECT_EQ(CheckOpenAttr(a, 0, 0, -1, l, &why), 0);
  l.paranoid = 3;
  a.exclude_kernel = 1;
  EXPECT_EQ(CheckOpenAttr(a, 0, 0, -1, l, &why), EACCES);
  l.privileged = true;
  EXPECT_EQ(CheckOpenAttr(a, 0, 0, -1, l, &why), 0);
}

// Linux 6.13+: bits 0-2 of the word after __reserved_2 are aux_action
// (aux_start_paused, aux_pause, aux_resume), judged by perf_event_alloc();
// bits 3-31 stay reserved for perf_copy_attr().
TEST(AttrValidation, AuxActionBitsAreNotReserved) {
  for (uint32_t v = 1; v <= kAuxActionBits; ++v) {
    perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_DUMMY);
    a.__reserved_3 = v;
    EXPECT_EQ(Copy(&a), 0) << "aux_action " << v;
  }
  for (int bit = 3; bit < 32; ++bit) {
    perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_DUMMY);
    a.__reserved_3 = 1u << bit;
    EXPECT_EQ(Copy(&a), EINVAL) << "__reserved_3 bit " << bit;
  }
}

// Each kernel release knows the bits added up to it (kAttrBitsSince in
// attr_validation.cc), whatever UAPI header the model is built with.
TEST(AttrValidation, BranchCountersNeedLinux68) {
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.sample_period = 1;
  a.sample_type = PERF_SAMPLE_BRANCH_STACK;
  a.branch_sample_type = PERF_SAMPLE_BRANCH_ANY | (uint64_t{1} << 19);  // PERF_SAMPLE_BRANCH_COUNTERS
  EXPECT_EQ(Copy(&a, ForRelease(KernelVersion(6, 18))), 0) << "6.18 knows it (571d91dcadfa, 6.8)";
  EXPECT_EQ(Copy(&a, ForRelease(KernelVersion(6, 8))), 0);
  EXPECT_EQ(Copy(&a, ForRelease(KernelVersion(6, 7))), EINVAL);
  EXPECT_EQ(Copy(&a, ForRelease(KernelVersion(6, 1))), EINVAL) << "6.1: PERF_SAMPLE_BRANCH_MAX is bit 19";
  a.branch_sample_type = PERF_SAMPLE_BRANCH_ANY | (uint64_t{1} << 20);
  EXPECT_EQ(Copy(&a, ForRelease(KernelVersion(6, 18))), EINVAL) << "bit 20 is unknown to 6.18 too";
}

TEST(AttrValidation, FlagsAndFormatsFollowTheRelease) {
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.inherit = 1;
  a.inherit_thread = 1;  // 5.13
  EXPECT_EQ(Copy(&a, ForRelease(KernelVersion(5, 13))), 0);
  EXPECT_EQ(Copy(&a, ForRelease(KernelVersion(5, 12))), EINVAL) << "bit 35 is __reserved_1 before 5.13";
  a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.read_format = PERF_FORMAT_LOST;  // 6.0
  EXPECT_EQ(Copy(&a, ForRelease(KernelVersion(6, 0))), 0);
  EXPECT_EQ(Copy(&a, ForRelease(KernelVersion(5, 19))), EINVAL);
  a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.sample_type = PERF_SAMPLE_WEIGHT_STRUCT;  // 5.12
  EXPECT_EQ(Copy(&a, ForRelease(KernelVersion(5, 12))), 0);
  EXPECT_EQ(Copy(&a, ForRelease(KernelVersion(5, 11))), EINVAL);
  a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.sample_type = PERF_SAMPLE_PHYS_ADDR;  // 4.14, fc7ce9c74c3a
  EXPECT_EQ(Copy(&a, ForRelease(KernelVersion(4, 14))), 0);
  EXPECT_EQ(Copy(&a, ForRelease(KernelVersion(4, 13))), EINVAL);
  EXPECT_FALSE(AttrBitsFor(KernelVersion(6, 12)).aux_action);
  EXPECT_TRUE(AttrBitsFor(KernelVersion(6, 13)).aux_action);
}

TEST(AttrValidation, KernelReleaseParsing) {
  EXPECT_EQ(ParseKernelRelease("6.18"), KernelVersion(6, 18));
  EXPECT_EQ(ParseKernelRelease("6.18.44-fc-v857"), KernelVersion(6, 18));
  EXPECT_EQ(ParseKernelRelease("6.1.0-18-amd64"), KernelVersion(6, 1));
  EXPECT_EQ(ParseKernelRelease("6"), std::nullopt);
  EXPECT_EQ(ParseKernelRelease("six.1"), std::nullopt);
  EXPECT_EQ(ParseKernelRelease(""), std::nullopt);
  EXPECT_EQ(KernelReleaseName(KernelVersion(6, 18)), "6.18");
}

}  // namespace
}  // namespace perftest::mock
