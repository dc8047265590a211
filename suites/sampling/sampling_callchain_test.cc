// Conformance suite: sampling — PERF_SAMPLE_CALLCHAIN: the PERF_CONTEXT_*
// markers, kernel then user parts, exclude_callchain_user/_kernel and
// sample_max_stack. References: kernel/events/callchain.c get_perf_callchain(),
// core.c perf_callchain(), perf_event_max_stack.
#include "suites/sampling/sampling_fixture.h"

namespace perftest::sampling_test {
namespace {

using namespace std::chrono_literals;

PERFTEST_CASE(Sampling, CallchainUserMarker, "sampling.callchain_user",
              "<linux/perf_event.h> PERF_SAMPLE_CALLCHAIN, PERF_CONTEXT_USER; callchain.c get_perf_callchain()") {
  Capture c;
  ASSERT_NO_FATAL_FAILURE(RunFaults(PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN, &c));
  for (const ParsedRecord* r : OfType(c.records, PERF_RECORD_SAMPLE)) {
    const auto& s = std::get<SampleRecord>(r->record.body);
    ASSERT_GE(s.callchain->size(), 2u);
    EXPECT_EQ(r->record.header.size, 8 + 8 + 8 + 8 * s.callchain->size());
    EXPECT_EQ((*s.callchain)[0], static_cast<uint64_t>(PERF_CONTEXT_USER)) << "a user-mode fault: no kernel part";
    EXPECT_EQ((*s.callchain)[1], *s.ip) << "the user part starts at the sampled ip";
    for (size_t i = 1; i < s.callchain->size(); ++i) EXPECT_FALSE(IsCallchainContext((*s.callchain)[i]));
  }
}

// Context switches are counted in the scheduler with kernel regs
// (perf_sw_event_sched()): their callchains have a kernel and a user part.
perf_event_attr SwitchSampler(uint64_t sample_type) {
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_CONTEXT_SWITCHES);
  a.sample_period = 1;
  a.sample_type = sample_type;
  return a;
}

PERFTEST_CASE(Sampling, CallchainKernelThenUser, "sampling.callchain_kernel_user",
              "<linux/perf_event.h> PERF_CONTEXT_KERNEL, PERF_CONTEXT_USER; callchain.c get_perf_callchain()") {
  Capture c;
  PERFTEST_ASSIGN_OR_SKIP(Event probe, Event::Open(backend(), SwitchSampler(PERF_SAMPLE_IP)),
                          "kernel-mode samples need exclude_kernel=0");
  ASSERT_OK(probe.Close());
  ASSERT_NO_FATAL_FAILURE(Run(SwitchSampler(PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN), Workload::Sleep(4, 1ms), &c));
  ASSERT_GE(c.samples.size(), 4u);
  for (const ParsedRecord* r : OfType(c.records, PERF_RECORD_SAMPLE)) {
    EXPECT_EQ(r->record.header.misc & PERF_RECORD_MISC_CPUMODE_MASK, PERF_RECORD_MISC_KERNEL);
    const auto& s = std::get<SampleRecord>(r->record.body);
    const std::vector<uint64_t>& cc = *s.callchain;
    ASSERT_GE(cc.size(), 2u);
    EXPECT_EQ(cc[0], static_cast<uint64_t>(PERF_CONTEXT_KERNEL));
    const uint64_t kernel_floor = KernelAddressFloor(backend().Machine().arch);
    EXPECT_GE(cc[1], kernel_floor) << "a kernel address";
    auto user = std::find(cc.begin(), cc.end(), static_cast<uint64_t>(PERF_CONTEXT_USER));
    ASSERT_NE(user, cc.end()) << "the task's user stack follows";
    for (auto it = cc.begin() + 1; it != user; ++it) EXPECT_GE(*it, kernel_floor);
    // The user part starts at the task's user ip (task_pt_regs()); the rest is
    // a frame-pointer walk (perf_callchain_user()), which in code built
    // without frame pointers (libc) may yield arbitrary stack words.
    ASSERT_NE(user + 1, cc.end());
    EXPECT_LT(*(user + 1), UserAddressLimit(backend().Machine().arch)) << "a user-space address";
  }
}

PERFTEST_CASE(Sampling, CallchainExcludeUserKernel, "sampling.callchain_exclude",
              "<linux/perf_event.h> attr.exclude_callchain_user / exclude_callchain_kernel; core.c perf_callchain()") {
  PERFTEST_ASSIGN_OR_SKIP(Event probe, Event::Open(backend(), SwitchSampler(PERF_SAMPLE_IP)),
                          "kernel-mode samples need exclude_kernel=0");
  ASSERT_OK(probe.Close());
  for (int which = 0; which < 2; ++which) {
    perf_event_attr a = SwitchSampler(PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN);
    if (which == 0) {
      a.exclude_callchain_user = 1;
    } else {
      a.exclude_callchain_kernel = 1;
    }
    SCOPED_TRACE(which == 0 ? "exclude_callchain_user" : "exclude_callchain_kernel");
    Capture c;
    ASSERT_NO_FATAL_FAILURE(Run(a, Workload::Sleep(3, 1ms), &c));
    ASSERT_FALSE(c.samples.empty());
    for (const SampleRecord* s : c.samples) {
      const std::vector<uint64_t>& cc = *s->callchain;
      const bool has_user = std::count(cc.begin(), cc.end(), static_cast<uint64_t>(PERF_CONTEXT_USER)) != 0;
      const bool has_kernel = std::count(cc.begin(), cc.end(), static_cast<uint64_t>(PERF_CONTEXT_KERNEL)) != 0;
      EXPECT_EQ(has_user, which != 0);
      EXPECT_EQ(has_kernel, which == 0);
      ASSERT_FALSE(cc.empty());
    }
  }
  // A user-mode sample with the user part excluded has an empty callchain.
  perf_event_attr f = Faults(PERF_SAMPLE_CALLCHAIN);
  f.exclude_callchain_user = 1;
  Capture c;
  ASSERT_NO_FATAL_FAILURE(Run(f, Workload::TouchPages(4), &c));
  for (const SampleRecord* s : c.samples) EXPECT_TRUE(s->callchain->empty()) << "nr = 0";
}

PERFTEST_CASE(Sampling, SampleMaxStackLimitsDepth, "sampling.sample_max_stack",
              "<linux/perf_event.h> attr.sample_max_stack; callchain.c get_perf_callchain() max_stack; "
              "core.c perf_copy_attr() EOVERFLOW") {
  PERFTEST_ASSIGN_OR_SKIP(Event probe, Event::Open(backend(), SwitchSampler(PERF_SAMPLE_IP)),
                          "kernel-mode samples need exclude_kernel=0");
  ASSERT_OK(probe.Close());
  for (uint16_t max : {1, 2, 3}) {
    SCOPED_TRACE(fmt::format("sample_max_stack {}", max));
    perf_event_attr a = SwitchSampler(PERF_SAMPLE_CALLCHAIN);
    a.sample_max_stack = max;
    Capture c;
    ASSERT_NO_FATAL_FAILURE(Run(a, Workload::Sleep(3, 1ms), &c));
    ASSERT_FALSE(c.samples.empty());
    for (const SampleRecord* s : c.samples) {
      const auto ips = std::count_if(s->callchain->begin(), s->callchain->end(),
                                     [](uint64_t ip) { return !IsCallchainContext(ip); });
      EXPECT_LE(ips, max) << "at most sample_max_stack entries besides the markers";
      EXPECT_EQ(s->callchain->front(), static_cast<uint64_t>(PERF_CONTEXT_KERNEL));
    }
  }
  perf_event_attr a = SwitchSampler(PERF_SAMPLE_CALLCHAIN);
  a.sample_max_stack = static_cast<uint16_t>(backend().Machine().max_stack + 1);
  EXPECT_THAT(Event::Open(backend(), a), FailsWithErrno(EOVERFLOW)) << "above perf_event_max_stack";
}

}  // namespace
}  // namespace perftest::sampling_test
