// The model's profile-driven rules: the cpu_clock/task_clock PMUs' own types
// (clock_pmu_types), the aux_action bits (attr_aux_action), and the core PMU
// kinds of the arm64-pmuv3 and riscv64-sbi profiles. The clock and aux_action
// values were checked against Linux 6.18 (the machine sw-only.json models)
// with a probe program; the arm64 and riscv64 rules cite their drivers.
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include "harness/attr.h"
#include "harness/syscall_matchers.h"
#include "mocks/internal/mock_test_fixture.h"
#include "mocks/attr_validation.h"
#include "mocks/profile.h"

namespace perftest {
namespace {

class ClockPmuTest : public MockTest {};

// perf_swevent_init() hands cpu-clock/task-clock to perf_cpu_clock/perf_task_clock,
// registered with dynamic types (6 and 7 on the VM); each takes only its config.
TEST_F(ClockPmuTest, ClockPmusOpenByTheirOwnTypes) {
  ASSERT_EQ(profile_.cpu_clock_type, 6u);
  EXPECT_OK(Open(MakeAttr(6, PERF_COUNT_SW_CPU_CLOCK)));
  EXPECT_OK(Open(MakeAttr(7, PERF_COUNT_SW_TASK_CLOCK)));
  EXPECT_THAT(Open(MakeAttr(6, PERF_COUNT_SW_TASK_CLOCK)), FailsWithErrno(ENOENT)) << "cpu_clock_event_init()";
  EXPECT_THAT(Open(MakeAttr(7, PERF_COUNT_SW_CPU_CLOCK)), FailsWithErrno(ENOENT)) << "task_clock_event_init()";
  EXPECT_THAT(Open(MakeAttr(6, PERF_COUNT_SW_PAGE_FAULTS)), FailsWithErrno(ENOENT));
  // The config is checked before branch sampling.
  perf_event_attr a = MakeAttr(6, PERF_COUNT_SW_CPU_CLOCK);
  a.sample_period = 1000;
  a.sample_type = PERF_SAMPLE_BRANCH_STACK;
  a.branch_sample_type = PERF_SAMPLE_BRANCH_ANY;
  EXPECT_THAT(Open(a), FailsWithErrno(EOPNOTSUPP));
  a.config = PERF_COUNT_SW_TASK_CLOCK;
  EXPECT_THAT(Open(a), FailsWithErrno(ENOENT));
}

// perf_event_modify_attr(): event->attr.type became the clock PMU's type, so
// the caller's PERF_TYPE_SOFTWARE differs (EINVAL); with the right type only
// breakpoints can be modified (EOPNOTSUPP).
TEST_F(ClockPmuTest, ModifyAttributesOfAClockIsEinval) {
  for (uint64_t config : {PERF_COUNT_SW_CPU_CLOCK, PERF_COUNT_SW_TASK_CLOCK}) {
    perf_event_attr a = SoftwareAttr(config);
    const int fd = MustOpen(a);
    EXPECT_THAT(b().Ioctl(fd, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, reinterpret_cast<uintptr_t>(&a)), FailsWithErrno(EINVAL))
        << "config " << config;
    a.type = config == PERF_COUNT_SW_CPU_CLOCK ? 6 : 7;
    EXPECT_THAT(b().Ioctl(fd, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, reinterpret_cast<uintptr_t>(&a)),
                FailsWithErrno(EOPNOTSUPP));
  }
  perf_event_attr faults = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  const int fd = MustOpen(faults);
  EXPECT_THAT(b().Ioctl(fd, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, reinterpret_cast<uintptr_t>(&faults)),
              FailsWithErrno(EOPNOTSUPP))
      << "perf_swevent keeps PERF_TYPE_SOFTWARE";
}

// Without clock_pmu_types (older kernels) the clocks stay PERF_TYPE_SOFTWARE.
TEST_F(ClockPmuTest, WithoutTheKeyClocksStaySoftware) {
  MockProfile p = profile_;
  p.cpu_clock_type = p.task_clock_type = 0;
  Remake(p);
  EXPECT_THAT(Open(MakeAttr(6, PERF_COUNT_SW_CPU_CLOCK)), FailsWithErrno(ENOENT));
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK);
  const int fd = MustOpen(a);
  EXPECT_THAT(b().Ioctl(fd, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, reinterpret_cast<uintptr_t>(&a)),
              FailsWithErrno(EOPNOTSUPP));
}

class AuxActionTest : public MockTest {
 protected:
  static perf_event_attr WithAuxAction(uint32_t bits) {
    perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
    a.__reserved_3 = bits;  // aux_start_paused:1, aux_pause:1, aux_resume:1 in Linux 6.13+
    return a;
  }
};

// perf_event_alloc() (6.13+): aux_output with pause/resume EOPNOTSUPP, pause
// and resume together EINVAL, aux_start_paused without PERF_PMU_CAP_AUX_PAUSE
// EOPNOTSUPP; perf_event_open(): has_aux_action() without an AUX leader EINVAL.
TEST_F(AuxActionTest, AuxActionBitsFollowPerfEventAlloc) {
  ASSERT_TRUE(profile_.attr_aux_action);
  EXPECT_THAT(Open(WithAuxAction(1)), FailsWithErrno(EOPNOTSUPP)) << "aux_start_paused";
  EXPECT_THAT(Open(WithAuxAction(2)), FailsWithErrno(EINVAL)) << "aux_pause: perf_get_aux_event()";
  EXPECT_THAT(Open(WithAuxAction(4)), FailsWithErrno(EINVAL)) << "aux_resume: perf_get_aux_event()";
  EXPECT_THAT(Open(WithAuxAction(6)), FailsWithErrno(EINVAL)) << "aux_pause with aux_resume";
  perf_event_attr a = WithAuxAction(2);
  a.aux_output = 1;
  EXPECT_THAT(Open(a), FailsWithErrno(EOPNOTSUPP));
  // The callchain check (get_callchain_buffers(), in perf_event_alloc()) comes before perf_get_aux_event().
  a = WithAuxAction(2);
  a.sample_type = PERF_SAMPLE_CALLCHAIN;
  a.sample_max_stack = 128;
  EXPECT_THAT(Open(a), FailsWithErrno(EOVERFLOW));
  EXPECT_THAT(Open(WithAuxAction(8)), FailsWithErrno(EINVAL)) << "bit 3 is still reserved";
}

TEST_F(AuxActionTest, OlderKernelsRefuseTheBitsAsReserved) {
  MockProfile p = profile_;
  p.attr_aux_action = false;
  Remake(p);
  EXPECT_THAT(Open(WithAuxAction(1)), FailsWithErrno(EINVAL));
}

class Arm64Test : public MockTest {
 protected:
  std::string ProfileName() const override { return "arm64-pmuv3"; }
  static perf_event_attr Hw(uint32_t type, uint64_t config) {
    perf_event_attr a = MakeAttr(type, config);
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    return a;
  }
};

// drivers/perf/arm_pmu.c / arm_pmuv3.c: generic, hw_cache and raw events reach
// the PMU of dynamic type (perf_init_event()'s fallback), with its own map.
TEST_F(Arm64Test, EventsMapLikeArmv8Pmuv3) {
  ASSERT_TRUE(profile_.has_hardware);
  EXPECT_EQ(profile_.core_pmu_type, 10u);
  const int cycles = MustOpen(Hw(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES));
  const int insns = MustOpen(Hw(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS));
  EXPECT_THAT(Open(Hw(PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES)), FailsWithErrno(ENOENT));
  EXPECT_THAT(Open(Hw(PERF_TYPE_HARDWARE, PERF_COUNT_HW_MAX)), FailsWithErrno(EINVAL));
  EXPECT_OK(Open(Hw(PERF_TYPE_RAW, 0x08)));
  EXPECT_OK(Open(Hw(10, 0x11)));
  EXPECT_THAT(Open(Hw(10, 0x1e)), FailsWithErrno(EINVAL)) << "CHAIN";
  const uint64_t l1d_write = PERF_COUNT_HW_CACHE_L1D | (PERF_COUNT_HW_CACHE_OP_WRITE << 8);
  EXPECT_THAT(Open(Hw(PERF_TYPE_HW_CACHE, l1d_write)), FailsWithErrno(ENOENT));
  EXPECT_OK(Open(Hw(PERF_TYPE_HW_CACHE, PERF_COUNT_HW_CACHE_L1D)));
  perf_event_attr precise = Hw(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
  precise.precise_ip = 3;
  EXPECT_OK(Open(precise));  // arm_pmu.c does not look at precise_ip
  perf_event_attr branches = Hw(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
  branches.sample_period = 100000;
  branches.sample_type = PERF_SAMPLE_BRANCH_STACK;
  branches.branch_sample_type = PERF_SAMPLE_BRANCH_ANY;
  EXPECT_THAT(Open(branches), FailsWithErrno(EOPNOTSUPP));
  Enable(cycles);
  Enable(insns);
  Run(Workload::Instructions(1000));
  EXPECT_EQ(Count(insns), 1000u);
  EXPECT_GE(Count(cycles), 1000u);
}

// 6 event counters + the cycle counter: a group of 7 fits when one is
// CPU_CYCLES, an eighth member does not (validate_group(): EINVAL).
TEST_F(Arm64Test, GroupsFitSixCountersAndTheCycleCounter) {
  perf_event_attr cycles = Hw(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
  cycles.disabled = 0;
  const int leader = MustOpen(cycles);
  perf_event_attr insns = Hw(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS);
  insns.disabled = 0;
  for (int i = 0; i < 6; ++i) MustOpen(insns, 0, -1, leader);
  EXPECT_THAT(Open(insns, 0, -1, leader), FailsWithErrno(EINVAL));
  // drivers/perf/arm_pmu.c validate_event(): an event in state OFF (disabled,
  // no enable_on_exec) takes no counter in validate_group(), new or not.
  insns.disabled = 1;
  EXPECT_THAT(Open(insns, 0, -1, leader), Succeeds()) << "disabled: not counted";
  insns.enable_on_exec = 1;
  EXPECT_THAT(Open(insns, 0, -1, leader), FailsWithErrno(EINVAL)) << "disabled with enable_on_exec: counted";
}

class RiscvSbiTest : public MockTest {
 protected:
  std::string ProfileName() const override { return "riscv64-sbi"; }
};

// riscv_pmu_sbi.c without Sscofpmf: PERF_PMU_CAP_NO_INTERRUPT (sampling:
// EOPNOTSUPP in perf_event_open()) and PERF_PMU_CAP_NO_EXCLUDE (exclude_*:
// EINVAL in perf_try_init_event()); counting works.
TEST_F(RiscvSbiTest, CountingOnlyWithoutSscofpmf) {
  ASSERT_TRUE(profile_.has_hardware);
  perf_event_attr a = MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS);
  const int fd = MustOpen(a);
  a.exclude_kernel = 1;
  EXPECT_THAT(Open(a), FailsWithErrno(EINVAL)) << "PERF_PMU_CAP_NO_EXCLUDE";
  a.exclude_kernel = 0;
  a.sample_period = 100000;
  EXPECT_THAT(Open(a), FailsWithErrno(EOPNOTSUPP)) << "PERF_PMU_CAP_NO_INTERRUPT";
  a.sample_period = 0;
  a.freq = 1;
  a.sample_freq = 1000;
  EXPECT_THAT(Open(a), FailsWithErrno(EOPNOTSUPP)) << "freq mode samples too";
  EXPECT_THAT(Open(MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES)), FailsWithErrno(ENOENT));
  perf_event_attr sw = SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK);
  sw.sample_period = 100000;
  EXPECT_OK(Open(sw));  // software events still sample
  Enable(fd);
  Run(Workload::Instructions(500));
  EXPECT_EQ(Count(fd), 500u);
}

// fixtures/profiles/guests: the layouts of guest kernels (fidelity --vm picks
// them by arch and release), outside the suites' profile glob; they must load
// and describe what the guest showed: Debian's 6.1 arm64 kernel in QEMU 7.2
// names the device-tree PMU armv8_pmuv3 with type 8, has no clock PMUs
// (Linux 6.7) and a 128-byte perf_event_attr (config3 came with 6.3).
TEST(GuestProfiles, Arm64Qemu61Loads) {
  Result<MockProfile> p = LoadProfile(PERFTEST_PROFILE_DIR "/guests/arm64-pmuv3-qemu-6.1.json");
  ASSERT_TRUE(p.ok()) << p.ToString();
  EXPECT_EQ(p->arch, "aarch64");
  EXPECT_EQ(p->kernel_version, mock::KernelVersion(6, 1));
  EXPECT_EQ(p->attr_size, 128u);
  EXPECT_TRUE(p->has_hardware);
  EXPECT_EQ(p->core_pmu_type, 8u);
  EXPECT_FALSE(p->attr_aux_action);
}

}  // namespace
}  // namespace perftest
