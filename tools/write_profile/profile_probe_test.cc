#include "tools/write_profile/profile_probe.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/syscall_matchers.h"
#include "mocks/gmock_backend.h"
#include "mocks/mock_backend.h"
#include "mocks/profile.h"

namespace perftest::tools {
namespace {

using ::testing::_;
using ::testing::HasSubstr;
using ::testing::Return;

HostFacts FakeHost() {
  HostFacts h;
  h.kernel_release = "6.18.0-test";
  h.cpu_vendor = "GenuineIntel";
  h.hz = 300;
  h.hz_source = "CONFIG_HZ from a test";
  h.max_contexts_per_stack = 9;
  h.privileged = true;
  h.memlock_rlimit_kb = 64;
  return h;
}

std::vector<std::pair<std::string, uint32_t>> PmuNames(const MockProfile& p) {
  std::vector<std::pair<std::string, uint32_t>> out;
  for (const Pmu& pmu : p.pmus) out.emplace_back(pmu.name, pmu.type);
  return out;
}

// Probing MockBackend running `original` must give back what the probe can
// observe of `original`: the mock answers the probe's perf_event_open calls
// as the kernel it models would.
MockProfile ProbeMock(const MockProfile& original) {
  std::unique_ptr<Backend> mock = MakeMockBackend(original);
  Result<MockProfile> p = ProbeProfile(*mock, FakeHost(), "probed");
  EXPECT_OK(p);
  return p.ok() ? *p : MockProfile{};
}

void ExpectProbedLike(const MockProfile& probed, const MockProfile& original) {
  EXPECT_EQ(probed.arch, original.arch);
  EXPECT_EQ(probed.ncpus, original.ncpus);
  EXPECT_EQ(probed.page_size, original.page_size);
  EXPECT_EQ(probed.perf_event_paranoid, original.perf_event_paranoid);
  EXPECT_EQ(probed.max_sample_rate, original.max_sample_rate);
  EXPECT_EQ(probed.attr_size, original.attr_size);
  EXPECT_EQ(probed.hw_breakpoint_slots, original.hw_breakpoint_slots);
  EXPECT_EQ(probed.hw_watchpoint_slots, original.hw_watchpoint_slots);
  EXPECT_EQ(probed.cpu_clock_type, original.cpu_clock_type);
  EXPECT_EQ(probed.task_clock_type, original.task_clock_type);
  EXPECT_EQ(probed.attr_aux_action, original.attr_aux_action);
  EXPECT_EQ(probed.tracepoints, original.tracepoints);
  EXPECT_EQ(probed.has_hardware, original.has_hardware);
}

TEST(ProfileProbe, ReadsBackTheSoftwareOnlyProfile) {
  ASSERT_OK_AND_ASSIGN(MockProfile original, LoadProfile("sw-only"));
  const MockProfile probed = ProbeMock(original);
  ExpectProbedLike(probed, original);
  EXPECT_EQ(PmuNames(probed), PmuNames(original));
  EXPECT_EQ(probed.name, "probed");
  EXPECT_EQ(probed.kernel_release, "6.18.0-test");
  EXPECT_EQ(probed.hz, 300u);
  EXPECT_EQ(probed.max_contexts_per_stack, 9u);
  EXPECT_EQ(probed.memlock_rlimit_kb, 64u);
  EXPECT_THAT(probed.provenance, HasSubstr("hw_breakpoint_slots=4"));
  EXPECT_THAT(probed.description, HasSubstr("no hardware PMU modelled"));
}

TEST(ProfileProbe, FollowsWhatTheKernelAnswers) {
  ASSERT_OK_AND_ASSIGN(MockProfile original, LoadProfile("sw-only"));
  original.hw_breakpoint_slots = 6;
  original.cpu_clock_type = original.task_clock_type = 0;
  original.attr_aux_action = false;
  const MockProfile probed = ProbeMock(original);
  ExpectProbedLike(probed, original);
  EXPECT_THAT(probed.provenance, HasSubstr("aux_start_paused on a software event said EINVAL"));
}

TEST(ProfileProbe, ModelsTheIntelCorePmuItsCountersAndLeavesOutTheRest) {
  ASSERT_OK_AND_ASSIGN(MockProfile original, LoadProfile("x86_64-intel"));
  const MockProfile probed = ProbeMock(original);
  ExpectProbedLike(probed, original);
  ASSERT_TRUE(probed.has_hardware);
  EXPECT_EQ(probed.core_pmu_type, original.core_pmu_type);
  EXPECT_EQ(probed.hardware.gp_counters, original.hardware.gp_counters)
      << "branch-miss events fit one group up to the general-purpose counters";
  EXPECT_EQ(probed.hardware.fixed_counters, 3u);
  EXPECT_EQ(probed.hardware.counter_width, 48u);
  EXPECT_EQ(FindPmu(probed.pmus, "intel_pt"), nullptr) << "not modelled from a probe: the provenance names it";
  EXPECT_THAT(probed.provenance, HasSubstr("intel_pt (type 8)"));
}

TEST(ProfileProbe, ReadsBackTheArmAndRiscvCorePmus) {
  for (const char* name : {"arm64-pmuv3", "riscv64-sbi"}) {
    SCOPED_TRACE(name);
    ASSERT_OK_AND_ASSIGN(MockProfile original, LoadProfile(name));
    const MockProfile probed = ProbeMock(original);
    ExpectProbedLike(probed, original);
    EXPECT_EQ(PmuNames(probed), PmuNames(original));
    EXPECT_EQ(probed.hardware.kind, original.hardware.kind);
    if (original.hardware.kind == mock::CoreKind::kRiscvSbi) {
      // The modelled firmware (OpenSBI on QEMU virt) counts only cycles and
      // instret: no general-purpose event to fill a group with.
      EXPECT_EQ(probed.hardware.gp_counters, 1u);
      EXPECT_THAT(probed.provenance, HasSubstr("gp_counters not probed (a branch-miss event said ENOENT)"));
    } else {
      EXPECT_EQ(probed.hardware.gp_counters, original.hardware.gp_counters) << probed.provenance;
    }
    EXPECT_EQ(probed.hardware.overflow_interrupt, original.hardware.overflow_interrupt);
    ASSERT_OK_AND_ASSIGN(MockProfile back, ParseProfile(WriteProfile(probed), "probed.json"));
    EXPECT_EQ(back.hardware.kind, original.hardware.kind) << "the written kind selects the core model";
  }
}

TEST(ProfileProbe, TheWrittenProfileLoads) {
  ASSERT_OK_AND_ASSIGN(MockProfile original, LoadProfile("x86_64-intel"));
  const MockProfile probed = ProbeMock(original);
  ASSERT_OK_AND_ASSIGN(MockProfile back, ParseProfile(WriteProfile(probed), "probed.json"));
  EXPECT_EQ(WriteProfile(back), WriteProfile(probed));
  EXPECT_EQ(back.kernel_release, "6.18.0-test");
}

TEST(ProfileProbe, NoPerfEventOpenIsTheFirstOpensErrno) {
  ::testing::NiceMock<GMockBackend> b;
  ON_CALL(b, kind()).WillByDefault(Return("gmock"));
  EXPECT_CALL(b, PerfEventOpen(_, 0, -1, -1, _))
      .WillOnce(Return(Result<int>::Failure(EPERM, "perf_event_open(type=1, config=0x2)")));
  EXPECT_CALL(b, Machine()).Times(0);
  Result<MockProfile> p = ProbeProfile(b, FakeHost(), "host");
  EXPECT_THAT(p, FailsWithErrno(EPERM));
  EXPECT_THAT(p.call(), HasSubstr("perf_event_open does not work here (EPERM)"));
}

}  // namespace
}  // namespace perftest::tools
