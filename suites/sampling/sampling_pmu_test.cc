// Conformance suite: sampling — what the PMU itself checks: precise_ip
// (ignored by software PMUs, limited by the hardware's) and branch stacks
// (PERF_SAMPLE_BRANCH_STACK refused by software events). References:
// arch/x86/events/core.c x86_pmu_hw_config(), core.c perf_event_alloc().
#include "suites/sampling/sampling_fixture.h"

namespace perftest::sampling_test {
namespace {

using namespace std::chrono_literals;

// ------------------------------------------------------------- precise_ip

PERFTEST_CASE(Sampling, PreciseIpSoftwareAccepted, "sampling.precise_ip_software",
              "core.c perf_event_alloc(): precise_ip is the PMU's to check; the software PMU ignores it") {
  for (uint32_t p = 0; p <= 3; ++p) {
    perf_event_attr a = Faults(PERF_SAMPLE_IP);
    a.precise_ip = p;
    EXPECT_THAT(Event::Open(backend(), a), Succeeds()) << "precise_ip " << p;
  }
}

PERFTEST_CASE(Sampling, PreciseIpHardwareLimit, "sampling.precise_ip_hardware",
              "arch/x86/events/core.c x86_pmu_hw_config(): precise_ip above x86_pmu.pebs/max_precise is EOPNOTSUPP; "
              "drivers/perf/arm_pmu.c armpmu_event_init(): arm64 ignores precise_ip") {
  {
    perf_event_attr sampler = MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
    sampler.exclude_kernel = sampler.exclude_hv = 1;
    sampler.sample_period = 100000;
    if (auto why = NoHardwareFor(backend(), sampler)) PERFTEST_SKIP(why->first, why->second);
  }
  std::string max_precise;
  for (const Pmu& p : backend().Machine().pmus) {
    if (p.name == "cpu") {
      auto it = p.caps.find("max_precise");
      if (it != p.caps.end()) max_precise = it->second;
    }
  }
  // arm64: drivers/perf/arm_pmu.c armpmu_event_init() never looks at
  // precise_ip and exports no caps/max_precise: all of 0..3 sample.
  if (max_precise.empty() && backend().Machine().arch == "aarch64") max_precise = "3";
  if (max_precise.empty()) PERFTEST_SKIP(SkipClass::kUnsupported, "the core PMU has no caps/max_precise");
  const uint32_t max = static_cast<uint32_t>(std::stoul(max_precise));
  for (uint32_t p = 0; p <= 3; ++p) {
    perf_event_attr a = MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
    a.exclude_kernel = a.exclude_hv = 1;
    a.sample_period = 100000;
    a.precise_ip = p;
    if (p <= max) {
      EXPECT_THAT(Event::Open(backend(), a), Succeeds()) << "precise_ip " << p << " <= caps/max_precise " << max;
    } else {
      EXPECT_THAT(Event::Open(backend(), a), FailsWithErrno(EOPNOTSUPP)) << "precise_ip " << p;
    }
  }
}

// ------------------------------------------------------------ branch stack

PERFTEST_CASE(Sampling, BranchStackSoftwareRefused, "sampling.branch_stack_software",
              "core.c perf_swevent_init(): has_branch_stack() is EOPNOTSUPP; perf_copy_attr(): no branch type is EINVAL") {
  perf_event_attr a = Faults(PERF_SAMPLE_BRANCH_STACK);
  EXPECT_THAT(Event::Open(backend(), a), FailsWithErrno(EINVAL)) << "branch_sample_type names no branch type";
  a.branch_sample_type = PERF_SAMPLE_BRANCH_ANY | PERF_SAMPLE_BRANCH_USER;
  EXPECT_THAT(Event::Open(backend(), a), FailsWithErrno(EOPNOTSUPP));
}

PERFTEST_CASE(Sampling, BranchStackHardware, "sampling.branch_stack_hardware",
              "<linux/perf_event.h> PERF_SAMPLE_BRANCH_STACK: { u64 nr; [u64 hw_idx;] perf_branch_entry[nr]; }; "
              "arch/x86/events/intel/lbr.c") {
  perf_event_attr a = MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS);
  a.exclude_kernel = a.exclude_hv = 1;
  a.sample_period = 100000;
  if (auto why = NoHardwareFor(backend(), a)) PERFTEST_SKIP(why->first, why->second);
  a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_BRANCH_STACK;
  a.branch_sample_type = PERF_SAMPLE_BRANCH_ANY | PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_HW_INDEX;
  PERFTEST_ASSIGN_OR_SKIP(Event probe, Event::Open(backend(), a),
                          "the core PMU has no branch stack (x86 LBR; arm64 FEAT_BRBE, which drivers/perf/arm_pmu.c "
                          "armpmu_event_init() refuses without: EOPNOTSUPP)");
  ASSERT_OK(probe.Close());
  Capture c;
  ASSERT_NO_FATAL_FAILURE(Run(a, Workload::Instructions(1000000), &c));
  ASSERT_GE(c.samples.size(), 5u);
  for (const ParsedRecord* r : OfType(c.records, PERF_RECORD_SAMPLE)) {
    const auto& bs = *std::get<SampleRecord>(r->record.body).branch_stack;
    EXPECT_TRUE(bs.hw_idx.has_value()) << "PERF_SAMPLE_BRANCH_HW_INDEX";
    EXPECT_EQ(r->record.header.size, 8u + 8 + 8 + 8 + 24 * bs.entries.size());
    EXPECT_LE(bs.entries.size(), 32u);
  }
}

}  // namespace
}  // namespace perftest::sampling_test
