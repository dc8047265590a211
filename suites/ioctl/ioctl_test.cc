// Conformance suite: ioctl(2) on an event fd, every PERF_EVENT_IOC_*.
//
// Software events (page-faults, minor-faults, dummy), a tracepoint
// (syscalls:sys_enter_getpid) and data breakpoints run for real on a kernel
// without a hardware PMU, and on the mock. References: perf_event_open(2)
// "perf_event ioctl calls"; <linux/perf_event.h> PERF_EVENT_IOC_*;
// kernel/events/core.c perf_ioctl(), _perf_ioctl(), perf_event_for_each(),
// _perf_event_enable()/_disable()/_reset()/_refresh()/_period(),
// perf_event_set_output(), perf_event_set_filter(), perf_event_modify_attr();
// kernel/trace/bpf_trace.c perf_event_query_prog_array().
#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/hw_breakpoint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "harness/attr.h"
#include "harness/event.h"
#include "harness/records.h"
#include "harness/ring_buffer.h"
#include "harness/syscall_matchers.h"
#include "suites/common/attrs.h"
#include "suites/common/records_util.h"
#include "suites/common/suite.h"

namespace perftest {
namespace {

using ::testing::ElementsAreArray;
using ::testing::IsEmpty;
using namespace std::chrono_literals;

// Data breakpoint targets: 8-byte aligned, written only through workloads.
alignas(64) volatile uint64_t g_watch_a = 0;
alignas(64) volatile uint64_t g_watch_b = 0;

// Samples every `period` page faults, with the faulting address.
perf_event_attr FaultSampler(uint64_t period = 1) {
  return SoftwareSamplerAttr(PERF_COUNT_SW_PAGE_FAULTS, period, PERF_SAMPLE_ADDR);
}

perf_event_attr WriteBreakpoint(const volatile void* addr) {
  perf_event_attr a = MakeAttr(PERF_TYPE_BREAKPOINT, 0);
  a.bp_type = HW_BREAKPOINT_W;
  a.bp_addr = reinterpret_cast<uint64_t>(addr);
  a.bp_len = HW_BREAKPOINT_LEN_8;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  return a;
}

class Ioctl : public SuiteTest {
 protected:
  Result<int> Raw(const Event& ev, unsigned long request, uintptr_t arg) {
    return backend().Ioctl(ev.fd(), request, arg);
  }
  // Cases that count every page fault from ENABLE on expect only the
  // workload's. Running the workload once first, with the event disabled,
  // leaves the harness's own heap pages mapped, so its allocations in the
  // window (results, call descriptions) reuse them instead of faulting.
  void WarmUpHeap() { ASSERT_OK(backend().RunWorkload(Workload::TouchPages(16))); }
  // Page indices (within `w`'s region) of the samples in `recs`, in order.
  std::vector<uint64_t> PageIndices(const std::vector<ParsedRecord>& recs, const WorkloadResult& w) {
    std::vector<uint64_t> out;
    for (const SampleRecord* s : SamplesOf(recs)) {
      if (*s->addr >= w.region_begin && *s->addr < w.region_end) {
        out.push_back((*s->addr - w.region_begin) / backend().Machine().page_size);
      }
    }
    return out;
  }
};

// --- ENABLE / DISABLE ---

PERFTEST_CASE(Ioctl, EnableDisableGateCounting, "ioctl.enable_disable",
              "<linux/perf_event.h> PERF_EVENT_IOC_ENABLE/DISABLE; core.c _perf_event_enable(), _perf_event_disable()") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS)));
  Touch(8);
  EXPECT_EQ(Value(ev), 0u) << "opened with disabled = 1";
  ASSERT_OK(ev.Enable());
  Touch(8);
  ASSERT_OK(ev.Disable());
  const uint64_t on = Value(ev);
  ExpectFaults(on, 8, "while enabled");
  Touch(8);
  EXPECT_EQ(Value(ev), on) << "nothing counted while disabled";
  // Enabling twice, disabling twice: idempotent.
  ASSERT_OK(ev.Enable());
  ASSERT_OK(ev.Enable());
  Touch(4);
  ASSERT_OK(ev.Disable());
  ASSERT_OK(ev.Disable());
  ExpectFaults(Value(ev) - on, 4, "after a second ENABLE");
}

PERFTEST_CASE(Ioctl, MemberNeedsItsLeader, "ioctl.member_needs_leader",
              "core.c group_sched_in(): members are scheduled with their leader; a disabled leader keeps the group off") {
  ASSERT_OK_AND_ASSIGN(Group g, Group::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS),
                                            {SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN)}));
  ASSERT_OK(g.member(0).Enable());
  Touch(8);
  EXPECT_EQ(Value(g.member(0)), 0u) << "an enabled member of a disabled leader does not count";
  ASSERT_OK(g.leader().Enable());
  Touch(8);
  ASSERT_OK(g.leader().Disable());
  ExpectFaults(Value(g.member(0)), 8, "member once the leader is on");
  ExpectFaults(Value(g.leader()), 8, "leader");
}

PERFTEST_CASE(Ioctl, LeaderDisableStopsTheGroup, "ioctl.leader_disable_stops_group",
              "core.c __perf_event_disable(): group_sched_out() of a leader takes its members off; they stay enabled") {
  ASSERT_OK_AND_ASSIGN(Group g, Group::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS),
                                            {SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN, {.disabled = false})}));
  ASSERT_OK(g.leader().Enable());
  Touch(4);
  ASSERT_OK(g.leader().Disable());
  const uint64_t member = Value(g.member(0));
  ExpectFaults(member, 4, "member with the leader on");
  Touch(8);
  EXPECT_EQ(Value(g.member(0)), member) << "the leader's DISABLE stops the member";
  ASSERT_OK(g.leader().Enable());  // the member was never disabled: it resumes
  Touch(4);
  ASSERT_OK(g.leader().Disable());
  ExpectFaults(Value(g.member(0)) - member, 4, "member after the leader's ENABLE");
}

PERFTEST_CASE(Ioctl, MemberDisableIsTheMembersOnly, "ioctl.member_disable",
              "core.c __perf_event_disable(): event_sched_out() of a member leaves the leader and siblings running") {
  ASSERT_OK_AND_ASSIGN(Group g, Group::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS),
                                            {SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN, {.disabled = false}),
                                             SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN, {.disabled = false})}));
  ASSERT_OK(g.leader().Enable());
  ASSERT_OK(g.member(0).Disable());
  Touch(8);
  ASSERT_OK(g.leader().Disable());
  EXPECT_EQ(Value(g.member(0)), 0u);
  ExpectFaults(Value(g.member(1)), 8, "the other member");
  ExpectFaults(Value(g.leader()), 8, "the leader");
}

PERFTEST_CASE(Ioctl, FlagGroupEnableFromAMember, "ioctl.flag_group_enable",
              "<linux/perf_event.h> PERF_IOC_FLAG_GROUP; core.c perf_event_for_each(): event->group_leader and siblings") {
  ASSERT_OK_AND_ASSIGN(Group g, Group::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS),
                                            {SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN),
                                             SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN)}));
  ASSERT_OK(g.member(1).Enable(/*whole_group=*/true));
  Touch(8);
  ASSERT_OK(g.leader().Disable());
  ExpectFaults(Value(g.leader()), 8, "leader enabled through a member's fd");
  ExpectFaults(Value(g.member(0)), 8, "the sibling");
  ExpectFaults(Value(g.member(1)), 8, "the member itself");
}

PERFTEST_CASE(Ioctl, FlagGroupDisableThenLeaderEnable, "ioctl.flag_group_disable",
              "core.c perf_ioctl(): DISABLE | PERF_IOC_FLAG_GROUP turns every member OFF; a plain ENABLE is the leader's") {
  ASSERT_OK_AND_ASSIGN(Group g, Group::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS),
                                            {SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN, {.disabled = false})}));
  ASSERT_OK(g.leader().Enable());
  ASSERT_OK(g.leader().Disable(/*whole_group=*/true));
  const uint64_t member = Value(g.member(0));
  ASSERT_OK(g.leader().Enable());
  Touch(8);
  ASSERT_OK(g.leader().Disable());
  EXPECT_EQ(Value(g.member(0)), member) << "the member was disabled by the group DISABLE";
  ExpectFaults(Value(g.leader()), 8, "leader");
}

PERFTEST_CASE(Ioctl, OtherArgBitsAreIgnored, "ioctl.flag_bits_ignored",
              "core.c perf_ioctl(): only PERF_IOC_FLAG_GROUP of the argument is looked at for ENABLE/DISABLE/RESET") {
  ASSERT_OK_AND_ASSIGN(Group g, Group::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS),
                                            {SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN)}));
  EXPECT_THAT(Raw(g.leader(), PERF_EVENT_IOC_ENABLE, 2), SucceedsWith(0));
  Touch(4);
  EXPECT_EQ(Value(g.member(0)), 0u) << "arg 2 has no PERF_IOC_FLAG_GROUP: the leader only";
  EXPECT_THAT(Raw(g.member(0), PERF_EVENT_IOC_ENABLE, ~uintptr_t{0}), SucceedsWith(0)) << "all bits: a group ENABLE";
  Touch(4);
  ASSERT_OK(g.leader().Disable(true));
  ExpectFaults(Value(g.member(0)), 4, "member after ENABLE(~0)");
}

// --- RESET ---

PERFTEST_CASE(Ioctl, ResetLeaderOnly, "ioctl.reset_leader",
              "core.c _perf_event_reset(): the event's own count; perf_ioctl() without PERF_IOC_FLAG_GROUP") {
  ASSERT_OK_AND_ASSIGN(Group g, Group::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS),
                                            {SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN, {.disabled = false})}));
  ASSERT_OK(g.leader().Enable());
  Touch(8);
  ASSERT_OK(g.leader().Disable());
  ASSERT_OK(g.leader().Reset());
  EXPECT_EQ(Value(g.leader()), 0u);
  ExpectFaults(Value(g.member(0)), 8, "the member keeps its count");
}

PERFTEST_CASE(Ioctl, ResetMemberOnly, "ioctl.reset_member",
              "core.c _perf_event_reset() on a member: the leader and siblings keep their counts") {
  ASSERT_OK_AND_ASSIGN(Group g, Group::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS),
                                            {SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN, {.disabled = false})}));
  ASSERT_OK(g.leader().Enable());
  Touch(8);
  ASSERT_OK(g.leader().Disable());
  ASSERT_OK(g.member(0).Reset());
  EXPECT_EQ(Value(g.member(0)), 0u);
  ExpectFaults(Value(g.leader()), 8, "the leader keeps its count");
}

PERFTEST_CASE(Ioctl, ResetWholeGroupFromMember, "ioctl.reset_group",
              "core.c perf_event_for_each(_perf_event_reset) with PERF_IOC_FLAG_GROUP, from any member's fd") {
  ASSERT_OK_AND_ASSIGN(
      Group g,
      Group::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS, kTimed),
                  {SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN, {.read_format = kTimes, .disabled = false})}));
  ASSERT_OK(g.leader().Enable());
  Touch(8);
  ASSERT_OK(g.leader().Disable());
  ASSERT_OK_AND_ASSIGN(ReadValues before, g.leader().Read());
  ASSERT_OK(g.member(0).Reset(/*whole_group=*/true));
  ASSERT_OK_AND_ASSIGN(ReadValues after, g.leader().Read());
  EXPECT_EQ(after.counters[0].value, 0u);
  EXPECT_EQ(Value(g.member(0)), 0u);
  EXPECT_EQ(after.time_enabled, before.time_enabled) << "RESET leaves the times";
  EXPECT_EQ(after.time_running, before.time_running);
}

PERFTEST_CASE(Ioctl, ResetWhileCounting, "ioctl.reset_enabled",
              "core.c _perf_event_reset(): perf_event_read() then count = 0; an enabled event counts on from zero") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS)));
  ASSERT_OK(ev.Enable());
  Touch(16);
  ASSERT_OK(ev.Reset());
  Touch(4);
  ASSERT_OK(ev.Disable());
  ExpectFaults(Value(ev), 4, "counted since the RESET");
}

// --- REFRESH ---

PERFTEST_CASE(Ioctl, RefreshNeedsASamplingEvent, "ioctl.refresh_non_sampling",
              "core.c _perf_event_refresh(): !is_sampling_event() -> -EINVAL") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS)));
  EXPECT_THAT(Raw(ev, PERF_EVENT_IOC_REFRESH, 1), FailsWithErrno(EINVAL));
  EXPECT_THAT(Raw(ev, PERF_EVENT_IOC_REFRESH, 0), FailsWithErrno(EINVAL));
  Touch(4);
  EXPECT_EQ(Value(ev), 0u) << "a failed REFRESH does not enable";
}

// REFRESH's refusals are checked here, in the ioctl suite, and nowhere else.
PERFTEST_CASE(Ioctl, RefreshRefusesInherit, "ioctl.refresh_inherit",
              "core.c _perf_event_refresh(): 'if (event->attr.inherit || !is_sampling_event(event)) return "
              "-EINVAL' ('not supported on inherited events')") {
  perf_event_attr a = FaultSampler();
  a.inherit = 1;
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), a));
  EXPECT_THAT(Raw(ev, PERF_EVENT_IOC_REFRESH, 1), FailsWithErrno(EINVAL));
  Touch(4);
  EXPECT_EQ(Value(ev), 0u) << "a refused REFRESH does not enable the inherited event";
}

PERFTEST_CASE(Ioctl, RefreshZeroEnablesWithoutALimit, "ioctl.refresh_zero",
              "core.c _perf_event_refresh(): atomic_add(0, &event_limit) then _perf_event_enable(); "
              "__perf_event_overflow() only counts down a non-zero event_limit") {
  RecordDivergence("ioctl.refresh_zero",
                   "perf_event_open(2) PERF_EVENT_IOC_REFRESH: 'Using an argument of 0 is considered undefined "
                   "behavior' (and test plans expect EINVAL)",
                   "Linux 6.18 returns 0 and enables the event with no overflow limit");
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), FaultSampler()));
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), 8));
  EXPECT_THAT(Raw(ev, PERF_EVENT_IOC_REFRESH, 0), SucceedsWith(0));
  Touch(20);
  ASSERT_OK(ev.Disable());
  ExpectFaults(Value(ev), 20, "REFRESH(0) enabled the event");
  ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> recs, DrainRecords(rb, SampleLayout::FromAttr(ev.attr()), true));
  EXPECT_GE(SamplesOf(recs).size(), 20u) << "and it kept sampling: no limit";
}

PERFTEST_CASE(Ioctl, RefreshLimitsOverflowsThenDisables, "ioctl.refresh_limit",
              "perf_event_open(2) PERF_EVENT_IOC_REFRESH; core.c __perf_event_overflow(): event_limit reaches 0 -> "
              "perf_event_disable_inatomic()") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), FaultSampler()));
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), 8));
  const SampleLayout layout = SampleLayout::FromAttr(ev.attr());
  EXPECT_THAT(Raw(ev, PERF_EVENT_IOC_REFRESH, 3), SucceedsWith(0)) << "REFRESH enables the event";
  Touch(10);
  ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> first, DrainRecords(rb, layout, true));
  EXPECT_EQ(SamplesOf(first).size(), 3u) << "three overflows, then the event disabled itself";
  EXPECT_EQ(Value(ev), 3u) << "and stopped counting";
  Touch(10);
  EXPECT_EQ(Value(ev), 3u) << "it stays disabled";
  // A second REFRESH adds to the budget and enables again.
  EXPECT_THAT(Raw(ev, PERF_EVENT_IOC_REFRESH, 2), SucceedsWith(0));
  Touch(10);
  ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> second, DrainRecords(rb, layout, true));
  EXPECT_EQ(SamplesOf(second).size(), 2u);
  EXPECT_EQ(Value(ev), 5u);
}

PERFTEST_CASE(Ioctl, RefreshCountsOverflowsNotEvents, "ioctl.refresh_period",
              "core.c __perf_event_overflow(): event_limit counts overflows (one per sample_period events)") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), FaultSampler(/*period=*/2)));
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), 8));
  EXPECT_THAT(Raw(ev, PERF_EVENT_IOC_REFRESH, 2), SucceedsWith(0));
  Touch(10);
  ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> recs, DrainRecords(rb, SampleLayout::FromAttr(ev.attr()), true));
  EXPECT_EQ(SamplesOf(recs).size(), 2u);
  EXPECT_EQ(Value(ev), 4u) << "two periods of two faults";
}

PERFTEST_CASE(Ioctl, RefreshLimitWithoutABuffer, "ioctl.refresh_no_buffer",
              "core.c __perf_event_overflow(): the limit is counted before the output, buffer or not") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), FaultSampler()));
  EXPECT_THAT(Raw(ev, PERF_EVENT_IOC_REFRESH, 4), SucceedsWith(0));
  Touch(10);
  EXPECT_EQ(Value(ev), 4u);
}

PERFTEST_CASE(Ioctl, EnableAfterTheLimitIsUnlimited, "ioctl.refresh_then_enable",
              "core.c: event_limit is 0 once spent; a plain ENABLE sets no new limit") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), FaultSampler()));
  EXPECT_THAT(Raw(ev, PERF_EVENT_IOC_REFRESH, 2), SucceedsWith(0));
  Touch(6);
  ASSERT_EQ(Value(ev), 2u);
  ASSERT_OK(ev.Enable());
  Touch(10);
  ASSERT_OK(ev.Disable());
  ExpectFaults(Value(ev) - 2, 10, "after a plain ENABLE");
}

// --- PERIOD ---

PERFTEST_CASE(Ioctl, PeriodErrors, "ioctl.period_errors",
              "core.c _perf_ioctl() copy_from_user() -> -EFAULT; _perf_event_period(): not sampling, 0, bit 63, "
              "freq above perf_event_max_sample_rate -> -EINVAL") {
  ASSERT_OK_AND_ASSIGN(Event sampler, Event::Open(backend(), FaultSampler()));
  ASSERT_OK_AND_ASSIGN(Event counter, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS)));
  uint64_t v = 4;
  const auto p = reinterpret_cast<uintptr_t>(&v);
  EXPECT_THAT(Raw(sampler, PERF_EVENT_IOC_PERIOD, 0), FailsWithErrno(EFAULT)) << "NULL";
  EXPECT_THAT(Raw(counter, PERF_EVENT_IOC_PERIOD, p), FailsWithErrno(EINVAL)) << "a counting event";
  v = 0;
  EXPECT_THAT(Raw(sampler, PERF_EVENT_IOC_PERIOD, p), FailsWithErrno(EINVAL)) << "period 0";
  v = uint64_t{1} << 63;
  EXPECT_THAT(Raw(sampler, PERF_EVENT_IOC_PERIOD, p), FailsWithErrno(EINVAL)) << "bit 63";
  v = 3;
  EXPECT_THAT(Raw(sampler, PERF_EVENT_IOC_PERIOD, p), SucceedsWith(0));

  perf_event_attr f = FaultSampler();
  f.freq = 1;
  f.sample_freq = 1000;
  ASSERT_OK_AND_ASSIGN(Event freq, Event::Open(backend(), f));
  v = backend().Machine().max_sample_rate + 1;
  EXPECT_THAT(Raw(freq, PERF_EVENT_IOC_PERIOD, p), FailsWithErrno(EINVAL)) << "above perf_event_max_sample_rate";
  v = backend().Machine().max_sample_rate;
  EXPECT_THAT(Raw(freq, PERF_EVENT_IOC_PERIOD, p), SucceedsWith(0));
}

PERFTEST_CASE(Ioctl, PeriodSetWhileDisabled, "ioctl.period_disabled",
              "core.c __perf_event_period(): sample_period = value, period_left = 0; perf_swevent_add() -> "
              "perf_swevent_set_period(): the first overflow after `period` events") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), FaultSampler(1)));
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), 8));
  uint64_t period = 4;
  ASSERT_THAT(Raw(ev, PERF_EVENT_IOC_PERIOD, reinterpret_cast<uintptr_t>(&period)), SucceedsWith(0));
  WarmUpHeap();
  ASSERT_OK(ev.Enable());
  ASSERT_OK_AND_ASSIGN(WorkloadResult w, backend().RunWorkload(Workload::TouchPages(16)));
  ASSERT_OK(ev.Disable());
  ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> recs, DrainRecords(rb, SampleLayout::FromAttr(ev.attr()), true));
  EXPECT_THAT(PageIndices(recs, w), ElementsAreArray({3u, 7u, 11u, 15u})) << "every 4th fault";
}

PERFTEST_CASE(Ioctl, PeriodSetWhileEnabledRestarts, "ioctl.period_enabled_restart",
              "core.c __perf_event_period(): period_left = 0 on a running event; perf_swevent_set_period() then "
              "overflows at once, (last_period + 1) / last_period times") {
  RecordDivergence("ioctl.period_enabled_restart",
                   "perf_event_open(2) PERF_EVENT_IOC_PERIOD: 'updates the overflow period'",
                   "Linux 6.18 also discards the progress toward the next overflow of a running event: the next "
                   "event overflows at once (twice when the old period was 1), then the new period applies");
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), FaultSampler(1)));
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), 8));
  WarmUpHeap();
  ASSERT_OK(ev.Enable());
  ASSERT_OK_AND_ASSIGN(WorkloadResult before, backend().RunWorkload(Workload::TouchPages(3)));
  ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> first, DrainRecords(rb, SampleLayout::FromAttr(ev.attr()), true));
  EXPECT_THAT(PageIndices(first, before), ElementsAreArray({0u, 1u, 2u})) << "period 1: every fault";
  uint64_t period = 8;
  ASSERT_THAT(Raw(ev, PERF_EVENT_IOC_PERIOD, reinterpret_cast<uintptr_t>(&period)), SucceedsWith(0));
  ASSERT_OK_AND_ASSIGN(WorkloadResult after, backend().RunWorkload(Workload::TouchPages(32)));
  ASSERT_OK(ev.Disable());
  ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> recs, DrainRecords(rb, SampleLayout::FromAttr(ev.attr()), true));
  // period_left 0 -> +1 at fault 0: nr = (1 + 1) / 1 = 2 samples, period_left -1;
  // fault 1: nr = (8 + 0) / 8 = 1, period_left -8; then every 8th fault.
  const std::vector<uint64_t> pages = PageIndices(recs, after);
  const std::vector<uint64_t> expected = {0u, 0u, 1u, 9u, 17u, 25u};
  if (exact() || pages == expected) {
    EXPECT_EQ(pages, expected);
    return;
  }
  // On a loaded machine a fault of the harness itself (a text page evicted
  // under memory pressure, say) can come between the ioctl and the workload
  // and take the restart: an address outside the region sampled twice in a
  // row, and from there the workload's faults overflow every 8th, at some phase.
  const auto in_region = [&](const SampleRecord* r) {
    return *r->addr >= after.region_begin && *r->addr < after.region_end;
  };
  const std::vector<const SampleRecord*> samples = SamplesOf(recs);
  bool doubled = false;
  for (size_t i = 0; i + 1 < samples.size() && !in_region(samples[i]); ++i) {
    doubled = doubled || *samples[i + 1]->addr == *samples[i]->addr;
  }
  EXPECT_TRUE(doubled) << "no fault before the workload's overflowed twice; workload pages sampled: "
                       << ::testing::PrintToString(pages);
  ASSERT_EQ(pages.size(), 4u) << "32 faults at period 8: " << ::testing::PrintToString(pages);
  for (size_t i = 1; i < pages.size(); ++i) EXPECT_EQ(pages[i], pages[i - 1] + 8) << "every 8th fault";
}

// --- ID ---

PERFTEST_CASE(Ioctl, IdIsUniqueAndNeedsAPointer, "ioctl.id",
              "core.c _perf_ioctl() PERF_EVENT_IOC_ID: put_user(primary_event_id()) -> -EFAULT on NULL; "
              "perf_event_alloc(): atomic64_inc_return(&perf_event_id)") {
  ASSERT_OK_AND_ASSIGN(Event a, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_DUMMY)));
  ASSERT_OK_AND_ASSIGN(Event b, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_DUMMY)));
  EXPECT_THAT(Raw(a, PERF_EVENT_IOC_ID, 0), FailsWithErrno(EFAULT));
  ASSERT_OK_AND_ASSIGN(const uint64_t ida, a.Id());
  ASSERT_OK_AND_ASSIGN(const uint64_t idb, b.Id());
  EXPECT_GT(idb, ida) << "ids come from one increasing counter";
  EXPECT_THAT(a.Id(), SucceedsWith(ida)) << "stable";
}

// --- SET_OUTPUT / PAUSE_OUTPUT ---

PERFTEST_CASE(Ioctl, SetOutputRules, "ioctl.set_output_rules",
              "core.c _perf_ioctl() (is_perf_file() -> -EBADF) and perf_event_set_output(): itself, no mapped target, "
              "cross-CPU, other clock, other write_backward, own mapping -> -EINVAL; mmap of a redirected event -> -EBUSY") {
  const perf_event_attr attr = FaultSampler();
  ASSERT_OK_AND_ASSIGN(Event target, Event::Open(backend(), attr));
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), attr));
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(null_fd, 0);
  EXPECT_THAT(Raw(ev, PERF_EVENT_IOC_SET_OUTPUT, ev.fd()), FailsWithErrno(EINVAL)) << "to itself";
  EXPECT_THAT(Raw(ev, PERF_EVENT_IOC_SET_OUTPUT, target.fd()), FailsWithErrno(EINVAL)) << "target has no buffer";
  EXPECT_THAT(Raw(ev, PERF_EVENT_IOC_SET_OUTPUT, null_fd), FailsWithErrno(EBADF)) << "not a perf event";
  ::close(null_fd);
  EXPECT_THAT(Raw(ev, PERF_EVENT_IOC_SET_OUTPUT, null_fd), FailsWithErrno(EBADF)) << "a closed fd";
  EXPECT_THAT(Raw(ev, PERF_EVENT_IOC_SET_OUTPUT, ~uintptr_t{0}), SucceedsWith(0)) << "-1: no redirection";

  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), target.fd(), 1));
  {
    ASSERT_OK_AND_ASSIGN(perftest::RingBuffer own, perftest::RingBuffer::Map(backend(), ev.fd(), 1));
    EXPECT_THAT(Raw(ev, PERF_EVENT_IOC_SET_OUTPUT, target.fd()), FailsWithErrno(EINVAL)) << "has its own mapping";
  }
  EXPECT_THAT(Raw(ev, PERF_EVENT_IOC_SET_OUTPUT, target.fd()), SucceedsWith(0)) << "once the mapping is gone";
  const size_t len = 2 * backend().Machine().page_size;
  EXPECT_THAT(backend().Mmap(len, PROT_READ | PROT_WRITE, MAP_SHARED, ev.fd(), 0), FailsWithErrno(EBUSY))
      << "a redirected event cannot be mapped";

  perf_event_attr clock = attr;
  clock.use_clockid = 1;
  clock.clockid = CLOCK_MONOTONIC;
  ASSERT_OK_AND_ASSIGN(Event other_clock, Event::Open(backend(), clock));
  EXPECT_THAT(Raw(other_clock, PERF_EVENT_IOC_SET_OUTPUT, target.fd()), FailsWithErrno(EINVAL)) << "another clock";
  perf_event_attr backward = attr;
  backward.write_backward = 1;
  ASSERT_OK_AND_ASSIGN(Event other_direction, Event::Open(backend(), backward));
  EXPECT_THAT(Raw(other_direction, PERF_EVENT_IOC_SET_OUTPUT, target.fd()), FailsWithErrno(EINVAL))
      << "write_backward differs";
  ASSERT_OK_AND_ASSIGN(Event on_cpu0, Event::Open(backend(), attr, /*pid=*/0, /*cpu=*/0));
  EXPECT_THAT(Raw(on_cpu0, PERF_EVENT_IOC_SET_OUTPUT, target.fd()), FailsWithErrno(EINVAL))
      << "an event bound to CPU 0 and a buffer of cpu -1";
}

PERFTEST_CASE(Ioctl, PauseOutputDropsAndCountsRecords, "ioctl.pause_output",
              "core.c _perf_ioctl() PERF_EVENT_IOC_PAUSE_OUTPUT: no buffer -> -EINVAL, rb_toggle_paused(rb, !!arg); "
              "ring_buffer.c __perf_output_begin(): paused -> rb->lost++") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), FaultSampler()));
  EXPECT_THAT(Raw(ev, PERF_EVENT_IOC_PAUSE_OUTPUT, 1), FailsWithErrno(EINVAL)) << "no buffer";
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), 8));
  const SampleLayout layout = SampleLayout::FromAttr(ev.attr());
  EXPECT_THAT(Raw(ev, PERF_EVENT_IOC_PAUSE_OUTPUT, 2), SucceedsWith(0)) << "any non-zero argument pauses";
  ASSERT_OK(ev.Enable());
  Touch(6);
  ASSERT_OK(ev.Disable());
  const uint64_t paused_count = Value(ev);
  EXPECT_EQ(rb.ReadHead(), 0u) << "nothing written while paused";
  ASSERT_OK(ev.PauseOutput(false));
  ASSERT_OK(ev.Enable());
  Touch(1);
  ASSERT_OK(ev.Disable());
  ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> recs, DrainRecords(rb, layout, true));
  ASSERT_FALSE(recs.empty());
  ASSERT_EQ(recs[0].record.header.type, PERF_RECORD_LOST) << "the records dropped while paused are reported";
  EXPECT_EQ(std::get<LostRecord>(recs[0].record.body).lost, paused_count);
  EXPECT_GE(SamplesOf(recs).size(), 1u) << "writing resumed";
}

PERFTEST_CASE(Ioctl, PauseOutputOfARedirectedEvent, "ioctl.pause_output_redirected",
              "core.c _perf_ioctl(): PAUSE_OUTPUT acts on event->rb, which SET_OUTPUT made the target's") {
  const perf_event_attr attr = FaultSampler();
  perf_event_attr other = attr;
  other.config = PERF_COUNT_SW_PAGE_FAULTS_MIN;
  ASSERT_OK_AND_ASSIGN(Event target, Event::Open(backend(), attr));
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), other));
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), target.fd(), 8));
  ASSERT_OK(ev.SetOutput(&target));
  ASSERT_OK(ev.PauseOutput(true));
  ASSERT_OK(target.Enable());
  Touch(4);
  ASSERT_OK(target.Disable());
  EXPECT_EQ(rb.ReadHead(), 0u) << "the target's buffer is paused too: it is the same buffer";
  ASSERT_OK(target.PauseOutput(false));
}

// --- SET_FILTER, QUERY_BPF, SET_BPF ---

PERFTEST_CASE(Ioctl, SetFilterNeedsATracepoint, "ioctl.set_filter_non_tracepoint",
              "core.c perf_event_set_filter(): strndup_user() -> -EFAULT, then neither tracing nor an address "
              "filter PMU -> -EINVAL") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS)));
  EXPECT_THAT(Raw(ev, PERF_EVENT_IOC_SET_FILTER, 0), FailsWithErrno(EFAULT));
  EXPECT_THAT(Raw(ev, PERF_EVENT_IOC_SET_FILTER, reinterpret_cast<uintptr_t>("common_pid != 0")),
              FailsWithErrno(EINVAL));
}

PERFTEST_CASE(Ioctl, SetFilterOnATracepoint, "ioctl.set_filter_tracepoint",
              "kernel/trace/trace_events_filter.c ftrace_profile_set_filter(): one filter per event (-EEXIST); "
              "Documentation/trace/events.rst 'Event filtering'") {
  PERFTEST_ASSIGN_OR_SKIP(const uint64_t id, backend().TracepointId("syscalls", "sys_enter_getpid"),
                          "tracepoint syscalls:sys_enter_getpid");
  const perf_event_attr attr = MakeAttr(PERF_TYPE_TRACEPOINT, id);
  auto count_with = [&](const char* filter, int expect_errno) -> uint64_t {
    Result<Event> ev = Event::Open(backend(), attr);
    EXPECT_OK(ev);
    if (!ev.ok()) return ~uint64_t{0};
    Result<int> r = Raw(*ev, PERF_EVENT_IOC_SET_FILTER, reinterpret_cast<uintptr_t>(filter));
    if (expect_errno == 0) {
      EXPECT_THAT(r, SucceedsWith(0)) << "filter '" << filter << "'";
    } else {
      EXPECT_THAT(r, FailsWithErrno(expect_errno)) << "filter '" << filter << "'";
    }
    EXPECT_OK(ev->Enable());
    EXPECT_OK(backend().RunWorkload(Workload::Syscalls(25)));
    EXPECT_OK(ev->Disable());
    if (expect_errno == 0) {
      EXPECT_THAT(Raw(*ev, PERF_EVENT_IOC_SET_FILTER, reinterpret_cast<uintptr_t>("common_pid != 0")),
                  FailsWithErrno(EEXIST))
          << "a second filter";
    }
    return Value(*ev);
  };
  const std::string mine = fmt::format("common_pid == {}", backend().CurrentTask().pid);
  const std::string not_mine = fmt::format("common_pid != {}", backend().CurrentTask().pid);
  EXPECT_EQ(count_with("__syscall_nr == 39 || __syscall_nr != 39", 0), 25u);
  EXPECT_EQ(count_with(mine.c_str(), 0), 25u);
  EXPECT_EQ(count_with(not_mine.c_str(), 0), 0u) << "the filter drops every firing";
  EXPECT_EQ(count_with("common_pid > 0 && common_pid < 0", 0), 0u);
  // A refused filter leaves the event unfiltered.
  EXPECT_EQ(count_with("no_such_field == 1", EINVAL), 25u);
  EXPECT_EQ(count_with("", EINVAL), 25u);
  EXPECT_EQ(count_with("common_pid", EINVAL), 25u) << "no operator";
  EXPECT_EQ(count_with("(common_pid == 1", ENOENT), 25u) << "Linux 6.18: an unmatched '(' is ENOENT";
  EXPECT_EQ(count_with("common_pid == 1)", EPERM), 25u) << "Linux 6.18: an unmatched ')' is EPERM";
}

PERFTEST_CASE(Ioctl, QueryBpf, "ioctl.query_bpf",
              "kernel/trace/bpf_trace.c perf_event_query_prog_array(): perfmon_capable() -> -EPERM, not a tracepoint "
              "-> -EINVAL, copy_from_user() -> -EFAULT; prog_cnt written") {
  ASSERT_OK_AND_ASSIGN(Event sw, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_DUMMY)));
  // struct perf_event_query_bpf {u32 ids_len; u32 prog_cnt; u32 ids[];} with room for 4 ids.
  uint32_t query[2 + 4] = {4, 99};
  const int not_tracepoint = Raw(sw, PERF_EVENT_IOC_QUERY_BPF, reinterpret_cast<uintptr_t>(query)).error();
  if (not_tracepoint == EPERM) {
    PERFTEST_SKIP(SkipClass::kPermission, "PERF_EVENT_IOC_QUERY_BPF returns EPERM: needs CAP_PERFMON");
  }
  EXPECT_EQ(not_tracepoint, EINVAL) << "a software event has no BPF programs";
  PERFTEST_ASSIGN_OR_SKIP(const uint64_t id, backend().TracepointId("syscalls", "sys_enter_getpid"),
                          "tracepoint syscalls:sys_enter_getpid");
  ASSERT_OK_AND_ASSIGN(Event tp, Event::Open(backend(), MakeAttr(PERF_TYPE_TRACEPOINT, id)));
  EXPECT_THAT(Raw(tp, PERF_EVENT_IOC_QUERY_BPF, 0), FailsWithErrno(EFAULT));
  EXPECT_THAT(Raw(tp, PERF_EVENT_IOC_QUERY_BPF, reinterpret_cast<uintptr_t>(query)), SucceedsWith(0));
  EXPECT_EQ(query[1], 0u) << "prog_cnt: no programs attached";
}

PERFTEST_CASE(Ioctl, SetBpfErrors, "ioctl.set_bpf_errors",
              "core.c _perf_ioctl() PERF_EVENT_IOC_SET_BPF: bpf_prog_get(): a closed fd -> -EBADF, not a BPF "
              "program -> -EINVAL") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_DUMMY)));
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(null_fd, 0);
  EXPECT_THAT(Raw(ev, PERF_EVENT_IOC_SET_BPF, null_fd), FailsWithErrno(EINVAL)) << "not a BPF program";
  ::close(null_fd);
  EXPECT_THAT(Raw(ev, PERF_EVENT_IOC_SET_BPF, null_fd), FailsWithErrno(EBADF)) << "a closed fd";
  EXPECT_THAT(Raw(ev, PERF_EVENT_IOC_SET_BPF, ~uintptr_t{0}), FailsWithErrno(EBADF)) << "fd -1";
}

// --- MODIFY_ATTRIBUTES ---

PERFTEST_CASE(Ioctl, ModifyAttributesOnlyForBreakpoints, "ioctl.modify_attributes_errors",
              "core.c _perf_ioctl(): perf_copy_attr() (-EFAULT, -E2BIG); perf_event_modify_attr(): type differs -> "
              "-EINVAL, not a breakpoint -> -EOPNOTSUPP") {
  perf_event_attr attr = SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS);
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), attr));
  EXPECT_THAT(Raw(ev, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, 0), FailsWithErrno(EFAULT));
  EXPECT_THAT(Raw(ev, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, reinterpret_cast<uintptr_t>(&attr)), FailsWithErrno(EOPNOTSUPP));
  perf_event_attr other_type = attr;
  other_type.type = PERF_TYPE_BREAKPOINT;
  EXPECT_THAT(Raw(ev, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, reinterpret_cast<uintptr_t>(&other_type)),
              FailsWithErrno(EINVAL));
  perf_event_attr small = attr;
  small.size = 8;
  EXPECT_THAT(Raw(ev, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, reinterpret_cast<uintptr_t>(&small)), FailsWithErrno(E2BIG));
}

PERFTEST_CASE(Ioctl, ModifyBreakpointAddress, "ioctl.modify_attributes_breakpoint",
              "core.c perf_event_modify_breakpoint(); kernel/events/hw_breakpoint.c modify_user_hw_breakpoint_check(): "
              "bp_addr/bp_type/bp_len/disabled may change, any other field -> -EINVAL") {
  perf_event_attr attr = WriteBreakpoint(&g_watch_a);
  attr.disabled = 0;
  PERFTEST_ASSIGN_OR_SKIP(Event bp, Event::Open(backend(), attr), "a data breakpoint");
  ASSERT_OK(backend().RunWorkload(Workload::WriteMemory(&g_watch_a, 8, 5)));
  ASSERT_OK(backend().RunWorkload(Workload::WriteMemory(&g_watch_b, 8, 7)));
  EXPECT_EQ(Value(bp), 5u) << "writes to the watched variable only";

  perf_event_attr moved = attr;
  moved.bp_addr = reinterpret_cast<uint64_t>(&g_watch_b);
  ASSERT_THAT(Raw(bp, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, reinterpret_cast<uintptr_t>(&moved)), SucceedsWith(0));
  ASSERT_OK(backend().RunWorkload(Workload::WriteMemory(&g_watch_a, 8, 5)));
  ASSERT_OK(backend().RunWorkload(Workload::WriteMemory(&g_watch_b, 8, 7)));
  EXPECT_EQ(Value(bp), 12u) << "now the other variable";

  perf_event_attr rw = moved;
  rw.bp_type = HW_BREAKPOINT_RW;
  ASSERT_THAT(Raw(bp, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, reinterpret_cast<uintptr_t>(&rw)), SucceedsWith(0));
  ASSERT_OK(backend().RunWorkload(Workload::ReadMemory(&g_watch_b, 8, 3)));
  EXPECT_EQ(Value(bp), 15u) << "RW: reads count too";

  perf_event_attr other_field = rw;
  other_field.sample_period = 5;
  EXPECT_THAT(Raw(bp, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, reinterpret_cast<uintptr_t>(&other_field)),
              FailsWithErrno(EINVAL))
      << "sample_period may not change";
  perf_event_attr bad_len = rw;
  bad_len.bp_len = 9;  // no arch's length (x86: 1, 2, 4, 8; arm64: 1..8)
  EXPECT_THAT(Raw(bp, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, reinterpret_cast<uintptr_t>(&bad_len)), FailsWithErrno(EINVAL));
}

PERFTEST_CASE(Ioctl, ModifyBreakpointFollowsAttrDisabled, "ioctl.modify_attributes_disabled",
              "core.c perf_event_modify_breakpoint(): _perf_event_disable(), modify, then _perf_event_enable() only "
              "if !bp->attr.disabled") {
  RecordDivergence("ioctl.modify_attributes_disabled",
                   "perf_event_open(2) PERF_EVENT_IOC_MODIFY_ATTRIBUTES: 'modifies an existing event' (no word on its "
                   "enabled state)",
                   "Linux 6.18 leaves the breakpoint enabled or disabled as the attr's `disabled` bit says — an event "
                   "opened disabled and enabled with PERF_EVENT_IOC_ENABLE is disabled again by a MODIFY that keeps "
                   "disabled = 1, and by one that fails");
  perf_event_attr attr = WriteBreakpoint(&g_watch_a);  // disabled = 1
  PERFTEST_ASSIGN_OR_SKIP(Event bp, Event::Open(backend(), attr), "a data breakpoint");
  ASSERT_OK(bp.Enable());
  perf_event_attr bad = attr;
  bad.bp_len = 9;  // no arch's length (x86: 1, 2, 4, 8; arm64: 1..8)
  EXPECT_THAT(Raw(bp, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, reinterpret_cast<uintptr_t>(&bad)), FailsWithErrno(EINVAL));
  ASSERT_OK(backend().RunWorkload(Workload::WriteMemory(&g_watch_a, 8, 4)));
  EXPECT_EQ(Value(bp), 0u) << "the failed MODIFY disabled the breakpoint (its attr.disabled is 1)";

  ASSERT_OK(bp.Enable());
  perf_event_attr moved = attr;
  moved.bp_addr = reinterpret_cast<uint64_t>(&g_watch_b);
  ASSERT_THAT(Raw(bp, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, reinterpret_cast<uintptr_t>(&moved)), SucceedsWith(0));
  ASSERT_OK(backend().RunWorkload(Workload::WriteMemory(&g_watch_b, 8, 7)));
  EXPECT_EQ(Value(bp), 0u) << "disabled = 1 in the new attr: the breakpoint is off";

  moved.disabled = 0;
  ASSERT_THAT(Raw(bp, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, reinterpret_cast<uintptr_t>(&moved)), SucceedsWith(0));
  ASSERT_OK(backend().RunWorkload(Workload::WriteMemory(&g_watch_b, 8, 7)));
  EXPECT_EQ(Value(bp), 7u) << "disabled = 0: on";

  // A MODIFY that fails still went through the disable, and the event's
  // attr.disabled is 0 now: it comes back on.
  bad = moved;
  bad.bp_len = 9;  // no arch's length (x86: 1, 2, 4, 8; arm64: 1..8)
  EXPECT_THAT(Raw(bp, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, reinterpret_cast<uintptr_t>(&bad)), FailsWithErrno(EINVAL));
  ASSERT_OK(backend().RunWorkload(Workload::WriteMemory(&g_watch_b, 8, 2)));
  EXPECT_EQ(Value(bp), 9u);
}

// --- unknown requests, other fds ---

PERFTEST_CASE(Ioctl, UnknownRequestIsEnotty, "ioctl.unknown",
              "core.c _perf_ioctl(): default -> -ENOTTY (the request is matched whole, size bits included)") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_DUMMY)));
  for (unsigned long req : {static_cast<unsigned long>(_IO('$', 12)), static_cast<unsigned long>(_IO('$', 99)),
                            static_cast<unsigned long>(_IOW('$', 0, uint64_t)), 0x5401ul /* TCGETS */}) {
    EXPECT_THAT(Raw(ev, req, 0), FailsWithErrno(ENOTTY)) << fmt::format("request {:#x}", req);
  }
}

PERFTEST_CASE(Ioctl, PerfRequestOnOtherFds, "ioctl.non_perf_fd",
              "fs/ioctl.c: a file without this ioctl -> -ENOTTY; a closed fd -> -EBADF") {
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(null_fd, 0);
  EXPECT_THAT(backend().Ioctl(null_fd, PERF_EVENT_IOC_ENABLE, 0), FailsWithErrno(ENOTTY));
  ::close(null_fd);
  EXPECT_THAT(backend().Ioctl(null_fd, PERF_EVENT_IOC_ENABLE, 0), FailsWithErrno(EBADF));
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_DUMMY)));
  const int fd = ev.fd();
  ASSERT_OK(ev.Close());
  EXPECT_THAT(backend().Ioctl(fd, PERF_EVENT_IOC_ENABLE, 0), FailsWithErrno(EBADF)) << "a closed event fd";
}

}  // namespace
}  // namespace perftest
