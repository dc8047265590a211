// Conformance suite: event groups — a leader and its members, opened with
// group_fd, scheduled as a unit, read together, and what happens when the
// leader or a member goes away.
//
// Software groups run for real on any kernel; the mixed software/hardware
// groups need a hardware PMU (they skip where PERF_TYPE_HARDWARE is ENOENT and
// run on the mock's x86_64-intel profile). References: perf_event_open(2)
// "group_fd", "Event groups"; kernel/events/core.c perf_event_open() (group
// checks, move_group), perf_group_attach()/perf_group_detach(),
// group_sched_in(), __perf_event_enable() -> ctx_resched().
#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "harness/attr.h"
#include "harness/event.h"
#include "harness/records.h"
#include "harness/ring_buffer.h"
#include "harness/syscall_matchers.h"
#include "suites/common/attrs.h"
#include "suites/common/hardware.h"
#include "suites/common/kernel_version.h"
#include "suites/common/measure.h"
#include "suites/common/records_util.h"
#include "suites/common/suite.h"

namespace perftest {
namespace {

using namespace std::chrono_literals;

class Groups : public SuiteTest {
 protected:
  ReadValues Values(Event& ev, size_t nr = 1) {
    Result<ReadValues> v = ev.Read(nr);
    EXPECT_OK(v);
    return v.ok() ? *v : ReadValues{};
  }
  // Context switches of this thread so far (kernel: ThreadContextSwitches();
  // the mock's task never switches unless a workload sleeps).
  long Switches() { return exact() ? 0 : ThreadContextSwitches(); }
  std::optional<std::pair<SkipClass, std::string>> NoHardware() {
    perf_event_attr a = MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS);
    a.exclude_kernel = a.exclude_hv = 1;
    return NoHardwareFor(backend(), a);
  }

};

#define PERFTEST_REQUIRE_HARDWARE()                                  \
  do {                                                               \
    if (auto perftest_no_hw = NoHardware()) {                        \
      PERFTEST_SKIP(perftest_no_hw->first, perftest_no_hw->second);  \
    }                                                                \
  } while (0)

PERFTEST_CASE(Groups, ScheduledAsAUnit, "groups.scheduled_as_unit",
              "perf_event_open(2) 'Event groups': members are scheduled onto the CPU with the leader; "
              "core.c group_sched_in(); mm/memory.c mm_account_fault(): PAGE_FAULTS = PAGE_FAULTS_MIN + PAGE_FAULTS_MAJ") {
  ASSERT_OK_AND_ASSIGN(
      Group g,
      Group::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS, kTimed),
                  {SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN, {.read_format = kTimes, .disabled = false}),
                   SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MAJ, {.read_format = kTimes, .disabled = false}),
                   SoftwareCounterAttr(PERF_COUNT_SW_DUMMY, {.read_format = kTimes, .disabled = false})}));
  ASSERT_OK(g.leader().Enable());
  Touch(16);
  ASSERT_OK(backend().RunWorkload(Workload::Sleep(2, 100us)));
  Touch(16);
  ASSERT_OK(g.leader().Disable());
  const ReadValues leader = Values(g.leader());
  const ReadValues minor = Values(g.member(0));
  const ReadValues major = Values(g.member(1));
  const ReadValues dummy = Values(g.member(2));
  ExpectFaults(leader.counters[0].value, 32, "leader");
  // Every fault mm_account_fault() counts is PERF_COUNT_SW_PAGE_FAULTS and one
  // of _MIN or _MAJ (a major one when the harness's own page had to be read
  // in under memory pressure): the sum is the leader's count exactly.
  EXPECT_EQ(minor.counters[0].value + major.counters[0].value, leader.counters[0].value)
      << "the same faults, counted over the same time (minor " << minor.counters[0].value << ", major "
      << major.counters[0].value << ")";
  EXPECT_EQ(dummy.counters[0].value, 0u);
  for (const ReadValues* m : {&minor, &major, &dummy}) {
    EXPECT_EQ(m->time_enabled, leader.time_enabled) << "in and out together";
    EXPECT_EQ(m->time_running, leader.time_running);
  }
}

PERFTEST_CASE(Groups, GroupFdErrors, "groups.group_fd_errors",
              "core.c perf_event_open(): perf_fget_light(group_fd) -> -EBADF for a non-perf or closed fd; "
              "'group_leader->group_leader != group_leader' -> -EINVAL") {
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(null_fd, 0);
  perf_event_attr m = SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN, kTimed);
  EXPECT_THAT(backend().PerfEventOpen(&m, 0, -1, null_fd, PERF_FLAG_FD_CLOEXEC), FailsWithErrno(EBADF))
      << "not a perf event";
  ::close(null_fd);
  EXPECT_THAT(backend().PerfEventOpen(&m, 0, -1, null_fd, PERF_FLAG_FD_CLOEXEC), FailsWithErrno(EBADF)) << "closed";
  ASSERT_OK_AND_ASSIGN(Group g, Group::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS, kTimed),
                                            {SoftwareCounterAttr(PERF_COUNT_SW_DUMMY, kTimed)}));
  EXPECT_THAT(Event::Open(backend(), m, 0, -1, &g.member(0)), FailsWithErrno(EINVAL)) << "a member cannot lead";
}

PERFTEST_CASE(Groups, MembersShareTheLeadersContext, "groups.same_context",
              "core.c perf_event_open(): group_leader->cpu != event->cpu, or another context -> -EINVAL") {
  ASSERT_OK_AND_ASSIGN(Event leader, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS, kTimed)));
  EXPECT_THAT(Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_DUMMY, kTimed), /*pid=*/0, /*cpu=*/0, &leader),
              FailsWithErrno(EINVAL))
      << "a leader of any CPU, a member bound to CPU 0";
  ASSERT_OK_AND_ASSIGN(Event on_cpu0,
                       Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS, kTimed), 0, 0));
  EXPECT_THAT(Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_DUMMY, kTimed), 0, -1, &on_cpu0),
              FailsWithErrno(EINVAL));
  EXPECT_THAT(Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_DUMMY, kTimed), 0, 0, &on_cpu0), Succeeds())
      << "same task, same CPU";
}

PERFTEST_CASE(Groups, OnlyALeaderIsPinnedOrExclusive, "groups.pinned_exclusive_leader_only",
              "core.c perf_event_open(): 'Only a group leader can be exclusive or pinned' -> -EINVAL") {
  perf_event_attr pinned = SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS, kTimed);
  pinned.pinned = 1;
  ASSERT_OK_AND_ASSIGN(Event leader, Event::Open(backend(), pinned));
  perf_event_attr m = SoftwareCounterAttr(PERF_COUNT_SW_DUMMY, kTimed);
  m.pinned = 1;
  EXPECT_THAT(Event::Open(backend(), m, 0, -1, &leader), FailsWithErrno(EINVAL));
  m.pinned = 0;
  m.exclusive = 1;
  EXPECT_THAT(Event::Open(backend(), m, 0, -1, &leader), FailsWithErrno(EINVAL));
  m.exclusive = 0;
  EXPECT_THAT(Event::Open(backend(), m, 0, -1, &leader), Succeeds());
  ASSERT_OK(leader.Enable());
  Touch(8);
  ASSERT_OK(leader.Disable());
  ExpectFaults(Values(leader).counters[0].value, 8, "a pinned software leader counts");
}

PERFTEST_CASE(Groups, InheritMustMatch, "groups.inherit_matches",
              "core.c perf_event_open(): a task group's members must agree with the leader on attr.inherit -> -EINVAL") {
  ASSERT_OK_AND_ASSIGN(Event leader, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS, kTimed)));
  perf_event_attr m = SoftwareCounterAttr(PERF_COUNT_SW_DUMMY, kTimed);
  m.inherit = 1;
  EXPECT_THAT(Event::Open(backend(), m, 0, -1, &leader), FailsWithErrno(EINVAL));
}

PERFTEST_CASE(Groups, FdNoGroupOpensAlone, "groups.flag_fd_no_group",
              "<linux/perf_event.h> PERF_FLAG_FD_NO_GROUP: group_fd is not a group leader for this event") {
  const uint64_t rf = PERF_FORMAT_GROUP | PERF_FORMAT_ID;
  ASSERT_OK_AND_ASSIGN(Event leader,
                       Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS, {.read_format = rf})));
  ASSERT_OK_AND_ASSIGN(
      Event alone, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_DUMMY, {.read_format = rf}), 0, -1, &leader,
                               PERF_FLAG_FD_NO_GROUP | PERF_FLAG_FD_CLOEXEC));
  EXPECT_EQ(Values(alone, 2).counters.size(), 1u) << "a group of its own";
  EXPECT_EQ(Values(leader, 2).counters.size(), 1u) << "the would-be leader has no member";
}

PERFTEST_CASE(Groups, FdOutputSharesTheLeadersBuffer, "groups.flag_fd_output",
              "<linux/perf_event.h> PERF_FLAG_FD_OUTPUT; core.c perf_event_open(): output_event = group_leader -> "
              "perf_event_set_output() (-EINVAL without a mapped buffer)") {
  perf_event_attr s = SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS);
  s.sample_period = 1;
  s.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_ID;
  perf_event_attr m = s;
  m.config = PERF_COUNT_SW_PAGE_FAULTS_MIN;
  m.disabled = 0;
  ASSERT_OK_AND_ASSIGN(Event leader, Event::Open(backend(), s));
  EXPECT_THAT(Event::Open(backend(), m, 0, -1, &leader, PERF_FLAG_FD_OUTPUT | PERF_FLAG_FD_CLOEXEC),
              FailsWithErrno(EINVAL))
      << "the leader has no buffer to share";
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), leader.fd(), 8));
  ASSERT_OK_AND_ASSIGN(Event member,
                       Event::Open(backend(), m, 0, -1, &leader, PERF_FLAG_FD_OUTPUT | PERF_FLAG_FD_CLOEXEC));
  ASSERT_OK_AND_ASSIGN(const uint64_t member_id, member.Id());
  ASSERT_OK(leader.Enable());
  Touch(5);
  ASSERT_OK(leader.Disable());
  ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> recs, DrainRecords(rb, SampleLayout::FromAttr(s), true));
  size_t from_member = 0;
  for (const SampleRecord* r : SamplesOf(recs)) from_member += *r->id == member_id;
  EXPECT_GE(from_member, 5u) << "the member's samples are in the leader's buffer";
}

PERFTEST_CASE(Groups, MemberRunsOnAfterTheLeaderCloses, "groups.leader_close_running",
              "core.c perf_group_detach(): siblings become singleton groups and keep their state") {
  const uint64_t rf = kTimes | PERF_FORMAT_GROUP;
  ASSERT_OK_AND_ASSIGN(Event leader,
                       Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS, {.read_format = rf})));
  ASSERT_OK_AND_ASSIGN(
      Event member,
      Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN, {.read_format = rf, .disabled = false}),
                  0, -1, &leader));
  ASSERT_OK(leader.Enable());
  Touch(5);
  ASSERT_OK(leader.Close());
  const uint64_t before = Values(member, 2).counters.at(0).value;
  Touch(7);
  const ReadValues after = Values(member, 2);
  ASSERT_EQ(after.counters.size(), 1u) << "a group of one now";
  ExpectFaults(after.counters[0].value - before, 7, "it kept counting");
  ASSERT_OK(member.Disable());
  const uint64_t stopped = Values(member, 2).counters[0].value;
  Touch(3);
  EXPECT_EQ(Values(member, 2).counters[0].value, stopped) << "and is its own leader: DISABLE stops it";
}

PERFTEST_CASE(Groups, IdleMemberOfAClosedLeaderWaits, "groups.leader_close_idle_member",
              "core.c perf_release() -> perf_remove_from_context(DETACH_GROUP) -> perf_group_detach(): no "
              "ctx_resched() follows, so a promoted sibling that was not running is scheduled at the next sched-in") {
  RecordDivergence("groups.leader_close_idle_member",
                   "perf_event_open(2)/perf-design.txt: closing the leader leaves the members as independent events",
                   "Linux 6.18: an enabled member of a disabled leader, once the leader is closed, is enabled but not "
                   "scheduled (time_enabled grows, time_running and the count stay 0) until the task is next "
                   "switched in");
  bool checked = false;
  for (int attempt = 0; attempt < 20 && !checked; ++attempt) {
    ASSERT_OK_AND_ASSIGN(Event leader, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS, kTimed)));
    ASSERT_OK_AND_ASSIGN(Event member, Event::Open(backend(),
                                                   SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN,
                                                                       {.read_format = kTimes, .disabled = false}),
                                                   0, -1, &leader));
    const long switches = Switches();
    ASSERT_OK(leader.Close());
    Touch(6);
    const ReadValues v = Values(member);
    if (Switches() != switches) continue;  // a switch schedules it in: inconclusive, try again
    checked = true;
    EXPECT_EQ(v.counters[0].value, 0u) << "not scheduled";
    EXPECT_EQ(v.time_running, 0u);
    EXPECT_GT(*v.time_enabled, 0u) << "yet enabled";
    // The next sched-in of the task puts it on.
    ASSERT_OK(backend().RunWorkload(Workload::Sleep(1, 100us)));
    Touch(6);
    ExpectFaults(Values(member).counters[0].value, 6, "after a sleep");
  }
  EXPECT_TRUE(checked) << "20 attempts, each with a context switch in the few microseconds that matter";
}

PERFTEST_CASE(Groups, MemberOfAnotherPmuWaitsForTheLeadersPmu, "groups.member_enable_other_pmu",
              "core.c __perf_event_enable(): ctx_resched(..., event->pmu_ctx->pmu) reschedules only groups led from "
              "the enabled event's PMU; cpu-clock, task-clock and the other software events are three PMUs "
              "(per-PMU contexts since Linux 6.2, bd2756811766 \"perf: Rewrite core context handling\"; before it "
              "ctx_resched() rescheduled the task's whole software context)") {
  // Before 6.2 every software event of a task shared one context, and
  // __perf_event_enable() -> ctx_resched(cpuctx, task_ctx, ...) rescheduled
  // all its groups: a member enabled while its leader runs is on at once,
  // whatever its PMU. Since 6.2 only the groups of the enabled event's PMU.
  const bool whole_context = KernelBefore(backend(), 6, 2);
  if (!whole_context) {
    RecordDivergence("groups.member_enable_other_pmu",
                     "perf_event_open(2) PERF_EVENT_IOC_ENABLE: enables the event; a member counts when its group is on",
                     "Linux 6.2+: a member enabled while its leader runs is scheduled at once only if both are of the "
                     "same PMU (page-faults and minor-faults); a minor-faults member of a task-clock leader waits for "
                     "the task's next sched-in");
  }
  bool checked = false;
  for (int attempt = 0; attempt < 20 && !checked; ++attempt) {
    ASSERT_OK_AND_ASSIGN(Event same_leader,
                         Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS, kTimed)));
    ASSERT_OK_AND_ASSIGN(
        Event same_member,
        Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN, kTimed), 0, -1, &same_leader));
    ASSERT_OK_AND_ASSIGN(Event other_leader,
                         Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_TASK_CLOCK, kTimed)));
    ASSERT_OK_AND_ASSIGN(
        Event other_member,
        Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN, kTimed), 0, -1, &other_leader));
    ASSERT_OK(same_leader.Enable());
    ASSERT_OK(other_leader.Enable());
    const long switches = Switches();
    ASSERT_OK(same_member.Enable());
    ASSERT_OK(other_member.Enable());
    Touch(6);
    const ReadValues same = Values(same_member);
    const ReadValues other = Values(other_member);
    if (Switches() != switches) continue;
    checked = true;
    ExpectFaults(same.counters[0].value, 6, "same PMU as its leader: on at once");
    if (whole_context) {
      ExpectFaults(other.counters[0].value, 6,
                   "Linux " + RunningKernelVersionString(backend()) + " (before 6.2): one software context, "
                   "ctx_resched() puts every group back on: on at once");
      EXPECT_GT(other.time_running, 0u);
      continue;
    }
    EXPECT_EQ(other.counters[0].value, 0u) << "another PMU than its leader's: not yet";
    EXPECT_EQ(other.time_running, 0u);
    EXPECT_GT(*other.time_enabled, 0u);
    ASSERT_OK(backend().RunWorkload(Workload::Sleep(1, 100us)));
    Touch(6);
    ExpectFaults(Values(other_member).counters[0].value, 6, "after the task's next sched-in");
  }
  EXPECT_TRUE(checked) << "20 attempts, each with a context switch in the few microseconds that matter";
}

PERFTEST_CASE(Groups, ClosingAMemberKeepsTheGroup, "groups.member_close",
              "core.c perf_group_detach() of a member: the leader and the other members stay scheduled") {
  ASSERT_OK_AND_ASSIGN(Event leader, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS, kTimed)));
  ASSERT_OK_AND_ASSIGN(Event m1, Event::Open(backend(),
                                             SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN,
                                                                 {.read_format = kTimes, .disabled = false}),
                                             0, -1, &leader));
  ASSERT_OK_AND_ASSIGN(Event m2, Event::Open(backend(),
                                             SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN,
                                                                 {.read_format = kTimes, .disabled = false}),
                                             0, -1, &leader));
  ASSERT_OK(leader.Enable());
  Touch(4);
  ASSERT_OK(m1.Close());
  Touch(4);
  ASSERT_OK(leader.Disable());
  ExpectFaults(Values(leader).counters[0].value, 8, "leader");
  ExpectFaults(Values(m2).counters[0].value, 8, "the other member");
}

PERFTEST_CASE(Groups, ManySoftwareMembers, "groups.many_software_members",
              "software events take no counter: a group is limited only by the read_format size "
              "(perf_event_validate_size())") {
  ASSERT_OK_AND_ASSIGN(Event leader, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS, kTimed)));
  std::vector<Event> members;
  for (int i = 0; i < 64; ++i) {
    ASSERT_OK_AND_ASSIGN(Event m, Event::Open(backend(),
                                              SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN,
                                                                  {.read_format = kTimes, .disabled = false}),
                                              0, -1, &leader));
    members.push_back(std::move(m));
  }
  ASSERT_OK(leader.Enable());
  Touch(10);
  ASSERT_OK(leader.Disable());
  const uint64_t lead = Values(leader).counters[0].value;
  ExpectFaults(lead, 10, "leader");
  for (size_t i = 0; i < members.size(); ++i) {
    EXPECT_EQ(Values(members[i]).counters[0].value, lead) << "member " << i;
  }
}

PERFTEST_CASE(Groups, HardwareMemberOfASoftwareLeader, "groups.software_leader_hardware_member",
              "core.c perf_event_open(): a hardware event may join a pure software group, which then moves to the "
              "hardware context (move_group)") {
  PERFTEST_REQUIRE_HARDWARE();
  perf_event_attr hw = MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS);
  hw.exclude_kernel = hw.exclude_hv = 1;
  hw.disabled = 0;
  hw.read_format = kTimes;
  ASSERT_OK_AND_ASSIGN(Group g, Group::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_TASK_CLOCK, kTimed), {hw}));
  ASSERT_OK(g.leader().Enable());
  ASSERT_OK(backend().RunWorkload(Workload::Instructions(1000000)));
  ASSERT_OK(g.leader().Disable());
  const ReadValues v = Values(g.member(0));
  if (exact()) {
    EXPECT_EQ(v.counters[0].value, 1000000u);
  } else {
    EXPECT_GE(v.counters[0].value, 900000u);
  }
  EXPECT_EQ(v.time_enabled, Values(g.leader()).time_enabled);
}

PERFTEST_CASE(Groups, SoftwareMemberOfAHardwareLeader, "groups.hardware_leader_software_member",
              "core.c perf_event_open(): a software event joins a hardware group in the leader's context") {
  PERFTEST_REQUIRE_HARDWARE();
  perf_event_attr hw = MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
  hw.exclude_kernel = hw.exclude_hv = 1;
  hw.read_format = kTimes;
  ASSERT_OK_AND_ASSIGN(
      Group g,
      Group::Open(backend(), hw,
                  {SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS, {.read_format = kTimes, .disabled = false})}));
  ASSERT_OK(g.leader().Enable());
  Touch(8);
  ASSERT_OK(g.leader().Disable());
  ExpectFaults(Values(g.member(0)).counters[0].value, 8, "the software member counts with its hardware leader");
  EXPECT_GT(Values(g.leader()).counters[0].value, 0u) << "cycles";
}

}  // namespace
}  // namespace perftest
