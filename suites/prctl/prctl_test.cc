// Conformance suite: prctl(2) PR_TASK_PERF_EVENTS_ENABLE / PR_TASK_PERF_EVENTS_DISABLE.
//
// Today's kernel acts on the events the calling task *owns* (created), every
// one of them with its inherited children, group members included
// (kernel/events/core.c perf_event_task_enable()/perf_event_task_disable():
// list_for_each_entry(event, &current->perf_event_list, owner_entry)
// perf_event_for_each_child(event, _perf_event_enable)). The 2009 design
// (shared/reference/perf-design.txt "prctl") describes something else —
// counters attached to the task, leaders only — and the cases record where
// they differ. Software events only: they run for real here and on the mock.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/prctl.h>

#include <chrono>

#include "harness/attr.h"
#include "harness/event.h"
#include "harness/syscall_matchers.h"
#include "suites/common/attrs.h"
#include "suites/common/suite.h"

namespace perftest {
namespace {

using namespace std::chrono_literals;

class Prctl : public SuiteTest {
 protected:
  void TearDown() override { (void)backend().Prctl(PR_TASK_PERF_EVENTS_ENABLE); }
};

PERFTEST_CASE(Prctl, DisableThenEnable, "prctl.disable_enable",
              "prctl(2) PR_TASK_PERF_EVENTS_DISABLE/ENABLE; kernel/sys.c -> perf_event_task_disable()/enable()") {
  ASSERT_OK_AND_ASSIGN(Event ev,
                       Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS,
                                                                  {.read_format = kTimes, .disabled = false})));
  EXPECT_THAT(backend().Prctl(PR_TASK_PERF_EVENTS_DISABLE), SucceedsWith(0));
  const uint64_t before = Value(ev);
  Touch(8);
  EXPECT_EQ(Value(ev), before) << "disabled by prctl";
  EXPECT_THAT(backend().Prctl(PR_TASK_PERF_EVENTS_ENABLE), SucceedsWith(0));
  Touch(8);
  ExpectFaults(Value(ev) - before, 8, "enabled again");
}

PERFTEST_CASE(Prctl, EnableAlsoEnablesDisabledAtOpen, "prctl.enables_disabled_at_open",
              "perf-design.txt: 'If it is initially disabled, it can be enabled by ioctl or prctl'") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS, kTimed)));
  Touch(4);
  EXPECT_EQ(Value(ev), 0u);
  ASSERT_OK(backend().Prctl(PR_TASK_PERF_EVENTS_ENABLE));
  Touch(8);
  ASSERT_OK(ev.Disable());
  ExpectFaults(Value(ev), 8, "attr.disabled = 1, enabled by prctl");
}

PERFTEST_CASE(Prctl, DisableKeepsCountsAndStopsTime, "prctl.disable_keeps_state",
              "perf-design.txt 'When a counter is disabled, it doesn't count ... but does continue to exist and "
              "maintain its count value'") {
  ASSERT_OK_AND_ASSIGN(
      Event ev, Event::Open(backend(),
                            SoftwareCounterAttr(PERF_COUNT_SW_TASK_CLOCK, {.read_format = kTimes, .disabled = false})));
  ASSERT_OK(backend().RunWorkload(Workload::Spin(2ms)));
  ASSERT_OK(backend().Prctl(PR_TASK_PERF_EVENTS_DISABLE));
  ASSERT_OK_AND_ASSIGN(ReadValues a, ev.Read());
  ASSERT_OK(backend().RunWorkload(Workload::Spin(2ms)));
  ASSERT_OK_AND_ASSIGN(ReadValues b, ev.Read());
  EXPECT_GT(a.counters[0].value, 0u);
  EXPECT_EQ(a, b) << "count and times frozen";
}

PERFTEST_CASE(Prctl, GroupMembersToo, "prctl.group_members",
              "core.c perf_event_task_enable(): every owned event, members included (perf_event_for_each_child())") {
  RecordDivergence("prctl.group_members",
                   "perf-design.txt 'prctl': 'It only enables or disables the group leaders, not any other members'",
                   "Linux 6.18 enables and disables every event the task created, group members included");
  ASSERT_OK_AND_ASSIGN(Group g,
                       Group::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS, kTimed),
                                   {SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN, kTimed)}));  // both disabled
  ASSERT_OK(backend().Prctl(PR_TASK_PERF_EVENTS_ENABLE));
  Touch(8);
  ASSERT_OK(backend().Prctl(PR_TASK_PERF_EVENTS_DISABLE));
  ExpectFaults(Value(g.member(0)), 8, "the member (disabled at open) was enabled by prctl");
  // And DISABLE disabled it: enabling the leader alone leaves it off.
  ASSERT_OK(g.leader().Enable());
  Touch(4);
  ASSERT_OK(g.leader().Disable());
  ExpectFaults(Value(g.member(0)), 8, "the member stays disabled");
}

PERFTEST_CASE(Prctl, OwnedCpuWideEventsToo, "prctl.owned_cpu_wide",
              "core.c perf_event_task_enable()/disable(): current->perf_event_list holds the events the task "
              "created, whatever their target") {
  RecordDivergence("prctl.owned_cpu_wide",
                   "perf-design.txt 'prctl': 'doesn't affect any counters that this process has created on other "
                   "processes' (and applies to counters attached to it by others)",
                   "Linux 6.18 acts on the events the task created — a CPU-wide event it opened included — and not on "
                   "events others attached to it");
  Result<Event> ev =
      Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_CPU_CLOCK, kTimed), /*pid=*/-1, /*cpu=*/0);
  if (!ev.ok()) {
    if (auto c = UnavailableClass(ev.error())) {
      PERFTEST_SKIP(*c, "a CPU-wide cpu-clock event: " + ev.ToString() + " (needs CAP_PERFMON or paranoid <= 0)");
    }
  }
  ASSERT_OK(ev);
  ASSERT_OK(backend().Prctl(PR_TASK_PERF_EVENTS_ENABLE));
  ASSERT_OK(backend().RunWorkload(Workload::Spin(2ms)));
  ASSERT_OK(backend().Prctl(PR_TASK_PERF_EVENTS_DISABLE));
  const uint64_t counted = Value(*ev);
  EXPECT_GT(counted, 1000000u) << "CPU 0's clock ran while enabled by prctl";
  ASSERT_OK(backend().RunWorkload(Workload::Spin(2ms)));
  EXPECT_EQ(Value(*ev), counted) << "and stopped with it";
}

PERFTEST_CASE(Prctl, IoctlStillWorksAfterPrctl, "prctl.ioctl_after",
              "core.c: prctl and PERF_EVENT_IOC_ENABLE both end in _perf_event_enable() of the one event") {
  ASSERT_OK_AND_ASSIGN(
      Event a, Event::Open(backend(),
                           SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS, {.read_format = kTimes, .disabled = false})));
  ASSERT_OK_AND_ASSIGN(Event b,
                       Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN,
                                                                  {.read_format = kTimes, .disabled = false})));
  ASSERT_OK(backend().Prctl(PR_TASK_PERF_EVENTS_DISABLE));
  const uint64_t b_before = Value(b);
  ASSERT_OK(a.Enable());
  const uint64_t a_before = Value(a);
  Touch(6);
  ASSERT_OK(a.Disable());
  ExpectFaults(Value(a) - a_before, 6, "enabled by ioctl");
  EXPECT_EQ(Value(b), b_before) << "the other one is still off";
}

PERFTEST_CASE(Prctl, UnknownOptionIsEinval, "prctl.unknown_option",
              "kernel/sys.c SYSCALL_DEFINE5(prctl): an unknown option -> -EINVAL") {
  EXPECT_THAT(backend().Prctl(0x7fff0000), FailsWithErrno(EINVAL));
}

}  // namespace
}  // namespace perftest
