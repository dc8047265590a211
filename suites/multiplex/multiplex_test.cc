// Conformance suite: multiplex — time_enabled/time_running, rotation of
// groups that do not all fit on the counters, scaled counts, pinned groups in
// the error state, exclusive groups.
//
// Software events never multiplex (group_can_go_on(): a group whose events are
// all software always goes on), so on a machine without a hardware PMU the
// kernel checks the time bookkeeping for real and the hardware cases skip with
// that reason; they run on the mock with a profile that has counters
// (x86_64-intel: 4 general-purpose + 3 fixed). Under the mock times are exact.
// References: perf_event_open(2) "read_format", "pinned", "exclusive";
// kernel/events/core.c perf_event_update_time(), ctx_sched_in(),
// merge_sched_in(), group_can_go_on(), group_sched_in(), event_sched_in(),
// perf_rotate_context(), rotate_ctx(), __perf_read(), _perf_event_enable().
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <vector>

#include "harness/attr.h"
#include "harness/event.h"
#include "harness/syscall_matchers.h"
#include "suites/common/attrs.h"
#include "suites/common/hardware.h"
#include "suites/common/measure.h"
#include "suites/common/suite.h"

namespace perftest {
namespace {

using namespace std::chrono_literals;

// More than any core PMU has general-purpose counters (8 on Intel without SMT).
constexpr int kOvercommit = 12;

// A general-purpose-only hardware event: branch instructions (no fixed counter).
perf_event_attr Branches() { return CounterAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, kTimed); }

class Multiplex : public SuiteTest {
 protected:
  ReadValues Values(Event& ev) {
    Result<ReadValues> v = ev.Read();
    EXPECT_OK(v);
    return v.ok() ? *v : ReadValues{};
  }
  static uint64_t Enabled(const ReadValues& v) { return v.time_enabled.value_or(0); }
  static uint64_t Running(const ReadValues& v) { return v.time_running.value_or(0); }
  // Opens `n` events of `attr`, each its own group, enabled.
  std::vector<Event> OpenEnabled(const perf_event_attr& attr, int n) {
    std::vector<Event> evs;
    for (int i = 0; i < n; ++i) {
      perf_event_attr a = attr;
      a.disabled = 0;
      Result<Event> ev = Event::Open(backend(), a);
      EXPECT_OK(ev);
      if (ev.ok()) evs.push_back(std::move(*ev));
    }
    return evs;
  }
  void Spin(std::chrono::nanoseconds d) { EXPECT_OK(backend().RunWorkload(Workload::Spin(d))); }
};

#define REQUIRE_HARDWARE()                                                     \
  do {                                                                         \
    if (auto why = NoHardwareFor(backend(), Branches())) PERFTEST_SKIP(why->first, why->second); \
  } while (0)

// --- software: time bookkeeping, no multiplexing ---

PERFTEST_CASE(Multiplex, TimesGrowOnlyWhileEnabled, "multiplex.times_enabled_window",
              "<linux/perf_event.h> PERF_FORMAT_TOTAL_TIME_ENABLED/RUNNING; core.c perf_event_update_time(): times "
              "advance in states >= INACTIVE (enabled) / ACTIVE (running) only") {
  ASSERT_OK_AND_ASSIGN(Event ev,
                       Event::Open(backend(), CounterAttr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, kTimed)));
  Spin(2ms);
  ReadValues v = Values(ev);
  EXPECT_EQ(Enabled(v), 0u) << "opened disabled: no enabled time yet";
  EXPECT_EQ(Running(v), 0u);
  ASSERT_OK(ev.Enable());
  Spin(3ms);
  ASSERT_OK(ev.Disable());
  const ReadValues first = Values(ev);
  // The task context's clock runs only while the task is on a CPU: on a busy
  // machine a 3 ms spin may get less.
  if (exact()) {
    EXPECT_EQ(Enabled(first), 3'000'000u) << "a 3 ms spin while enabled";
  } else {
    EXPECT_GT(Enabled(first), 0u);
    EXPECT_LT(Enabled(first), 50'000'000u) << "a 3 ms spin while enabled";
  }
  EXPECT_EQ(Running(first), Enabled(first)) << "a software event runs whenever it is enabled";
  Spin(2ms);
  const ReadValues second = Values(ev);
  EXPECT_EQ(Enabled(second), Enabled(first)) << "disabled: the times stand still";
  EXPECT_EQ(Running(second), Running(first));
  ASSERT_OK(ev.Enable());
  Spin(1ms);
  ASSERT_OK(ev.Disable());
  EXPECT_GT(Enabled(Values(ev)), Enabled(first)) << "enabled again: the times resume";
}

PERFTEST_CASE(Multiplex, SoftwareNeverMultiplexes, "multiplex.software_never",
              "core.c group_can_go_on(): 'if (event->group_caps & PERF_EV_CAP_SOFTWARE) return 1' — any number of "
              "software groups are all on at once: time_running == time_enabled") {
  const uint64_t configs[] = {PERF_COUNT_SW_PAGE_FAULTS, PERF_COUNT_SW_TASK_CLOCK, PERF_COUNT_SW_CONTEXT_SWITCHES,
                              PERF_COUNT_SW_PAGE_FAULTS_MIN, PERF_COUNT_SW_DUMMY};
  std::vector<Event> evs;
  for (int i = 0; i < 40; ++i) {
    perf_event_attr a = CounterAttr(PERF_TYPE_SOFTWARE, configs[i % 5], kTimed);
    a.disabled = 0;
    ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), a));
    evs.push_back(std::move(ev));
  }
  Spin(5ms);
  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(4)));
  for (Event& ev : evs) ASSERT_OK(ev.Disable());
  for (size_t i = 0; i < evs.size(); ++i) {
    const ReadValues v = Values(evs[i]);
    EXPECT_GT(Enabled(v), 0u) << "event " << i;
    EXPECT_EQ(Running(v), Enabled(v)) << "event " << i << ": never rotated out";
  }
}

PERFTEST_CASE(Multiplex, TaskTimeStopsWhileSwitchedOut, "multiplex.task_time_switched_out",
              "core.c perf_event_update_time() with the task context's time (ctx->time runs only while the task is "
              "scheduled in: perf_event_context_sched_out() stops it)") {
  perf_event_attr a = CounterAttr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, kTimed);
  a.exclude_kernel = 0;  // switches happen in the kernel
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), a));
  ASSERT_OK_AND_ASSIGN(ReadValues v, MeasureValues(backend(), ev, Workload::Sleep(5, 4ms)));
  EXPECT_GE(v.counters[0].value, 5u) << "it did switch out";
  EXPECT_LT(Enabled(v), 10'000'000u) << "20 ms asleep, hardly any of it on the task's clock";
  EXPECT_EQ(Running(v), Enabled(v));
}

PERFTEST_CASE(Multiplex, SoftwarePinnedExclusiveGroupsCoexist, "multiplex.software_pinned_exclusive",
              "core.c group_can_go_on(): a software group goes on before the exclusive checks; merge_sched_in(): "
              "only a pinned group left INACTIVE goes to ERROR") {
  perf_event_attr a = CounterAttr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, kTimed);
  a.pinned = 1;
  a.exclusive = 1;
  a.disabled = 0;
  std::vector<Event> evs;
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), a));
    evs.push_back(std::move(ev));
  }
  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(6)));
  Spin(1ms);
  for (Event& ev : evs) {
    ASSERT_OK(ev.Disable());
    std::vector<std::byte> buf(64);
    EXPECT_THAT(backend().Read(ev.fd(), buf.data(), buf.size()), SucceedsWith(24u)) << "not in the error state";
    const ReadValues v = Values(ev);
    EXPECT_GE(v.counters[0].value, 6u);
    EXPECT_EQ(Running(v), Enabled(v));
  }
}

PERFTEST_CASE(Multiplex, GroupMembersShareTheLeadersTimes, "multiplex.group_times",
              "core.c perf_read_group(): one time_enabled/time_running for the group (the leader's); members are "
              "scheduled with it (group_sched_in())") {
  perf_event_attr leader = CounterAttr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, kTimed);
  leader.read_format |= PERF_FORMAT_GROUP;
  perf_event_attr member = CounterAttr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, kTimed);
  member.disabled = 0;
  ASSERT_OK_AND_ASSIGN(Group g, Group::Open(backend(), leader, {member, member}));
  ASSERT_OK(g.leader().Enable());
  Spin(2ms);
  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(3)));
  ASSERT_OK(g.leader().Disable());
  ASSERT_OK_AND_ASSIGN(ReadValues group, g.leader().Read(3));
  ASSERT_EQ(group.counters.size(), 3u);
  EXPECT_EQ(Running(group), Enabled(group));
  for (size_t i = 0; i < 2; ++i) {
    const ReadValues m = Values(g.member(i));
    EXPECT_EQ(Enabled(m), Enabled(group)) << "member " << i;
    EXPECT_EQ(Running(m), Running(group)) << "member " << i;
    EXPECT_EQ(m.counters[0].value, group.counters[i + 1].value);
  }
}

// --- hardware: rotation, pinned, exclusive (the mock's x86_64-intel profile here) ---

PERFTEST_CASE(Multiplex, FittingEventsAreNotRotated, "multiplex.hw_fit",
              "core.c merge_sched_in(): every group found counters, rotate_necessary stays 0 "
              "(perf_rotate_context() does nothing)") {
  REQUIRE_HARDWARE();
  std::vector<Event> evs = OpenEnabled(Branches(), 2);
  Spin(20ms);
  for (Event& ev : evs) {
    ASSERT_OK(ev.Disable());
    const ReadValues v = Values(ev);
    EXPECT_GT(v.counters[0].value, 0u);
    EXPECT_EQ(Running(v), Enabled(v));
  }
}

PERFTEST_CASE(Multiplex, OvercommittedEventsRotate, "multiplex.hw_rotation",
              "core.c perf_rotate_context() -> rotate_ctx(): every multiplexing interval the first flexible group "
              "moves to the end; each event runs part of the time; perf_event_open(2) 'scaled count = count * "
              "time_enabled / time_running'") {
  REQUIRE_HARDWARE();
  std::vector<Event> evs = OpenEnabled(Branches(), kOvercommit);
  ASSERT_EQ(evs.size(), static_cast<size_t>(kOvercommit));
  Spin(60ms);
  for (Event& ev : evs) ASSERT_OK(ev.Disable());
  std::vector<ReadValues> vs;
  for (Event& ev : evs) vs.push_back(Values(ev));
  double min_scaled = 1e300, max_scaled = 0;
  for (size_t i = 0; i < vs.size(); ++i) {
    SCOPED_TRACE(fmt::format("event {}", i));
    EXPECT_GE(Enabled(vs[i]), 60'000'000u);
    EXPECT_LT(Running(vs[i]), Enabled(vs[i])) << "more events than counters: none runs all the time";
    EXPECT_GT(Running(vs[i]), 0u) << "rotation gives every event a turn";
    if (Running(vs[i]) == 0) continue;
    const double scaled = static_cast<double>(vs[i].counters[0].value) * static_cast<double>(Enabled(vs[i])) /
                          static_cast<double>(Running(vs[i]));
    min_scaled = std::min(min_scaled, scaled);
    max_scaled = std::max(max_scaled, scaled);
  }
  // The same event counted by each: the scaled estimates agree.
  EXPECT_LE(max_scaled, min_scaled * (exact() ? 1.05 : 1.5)) << "scaled counts of one event, " << min_scaled << " .. "
                                                              << max_scaled;
}

PERFTEST_CASE(Multiplex, GroupsRotateAsAUnit, "multiplex.hw_group_unit",
              "core.c group_sched_in(): a group goes on whole or not at all, so its events' time_running are equal") {
  REQUIRE_HARDWARE();
  perf_event_attr leader = Branches();
  leader.disabled = 0;
  std::vector<Group> groups;
  for (int i = 0; i < kOvercommit / 2; ++i) {
    ASSERT_OK_AND_ASSIGN(Group g, Group::Open(backend(), leader, {leader}));
    groups.push_back(std::move(g));
  }
  Spin(40ms);
  for (Group& g : groups) ASSERT_OK(g.leader().Disable(/*whole_group=*/true));
  for (size_t i = 0; i < groups.size(); ++i) {
    const ReadValues l = Values(groups[i].leader());
    const ReadValues m = Values(groups[i].member(0));
    EXPECT_EQ(Running(l), Running(m)) << "group " << i;
    EXPECT_LT(Running(l), Enabled(l)) << "group " << i;
  }
}

PERFTEST_CASE(Multiplex, PinnedGroupThatCannotGoOnErrs, "multiplex.pinned_error",
              "core.c merge_sched_in(): a pinned group left INACTIVE -> PERF_EVENT_STATE_ERROR; __perf_read(): 'Return "
              "end-of-file for a read on an event that is in error state'; _perf_event_enable() clears ERROR") {
  REQUIRE_HARDWARE();
  perf_event_attr pinned = Branches();
  pinned.pinned = 1;
  std::vector<Event> evs;
  std::optional<size_t> erred;
  std::vector<std::byte> buf(64);
  for (int i = 0; i < kOvercommit + 4 && !erred; ++i) {
    ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), pinned));
    ASSERT_OK(ev.Enable());
    Spin(1ms);
    ASSERT_OK_AND_ASSIGN(size_t n, backend().Read(ev.fd(), buf.data(), buf.size()));
    if (n == 0) erred = evs.size();
    evs.push_back(std::move(ev));
  }
  ASSERT_TRUE(erred.has_value()) << "more pinned events than counters: one must fail to go on";
  EXPECT_GT(*erred, 0u);
  EXPECT_EQ(Running(Values(evs[0])), Enabled(Values(evs[0]))) << "the first pinned event runs all the time";
  Event& err = evs[*erred];
  Spin(5ms);
  EXPECT_THAT(backend().Read(err.fd(), buf.data(), buf.size()), SucceedsWith(0u)) << "still in error: EOF";
  ASSERT_OK(evs[0].Close());  // a counter is free now, but ERROR stays until re-enabled
  Spin(5ms);
  EXPECT_THAT(backend().Read(err.fd(), buf.data(), buf.size()), SucceedsWith(0u)) << "no way back by itself";
  ASSERT_OK(err.Enable());
  Spin(5ms);
  ASSERT_OK(err.Disable());
  const ReadValues v = Values(err);
  EXPECT_GT(v.counters[0].value, 0u) << "enabled again, it counts";
  EXPECT_EQ(Running(v), Enabled(v)) << "ERROR had no enabled time; since the ENABLE it ran throughout";
}

PERFTEST_CASE(Multiplex, PinnedGoesBeforeFlexible, "multiplex.pinned_first",
              "core.c perf_event_sched_in(): EVENT_PINNED groups are scheduled before EVENT_FLEXIBLE ones, so a pinned "
              "group keeps a counter while flexible ones rotate") {
  REQUIRE_HARDWARE();
  std::vector<Event> flexible = OpenEnabled(Branches(), kOvercommit);
  perf_event_attr pinned = Branches();
  pinned.pinned = 1;
  pinned.disabled = 0;
  ASSERT_OK_AND_ASSIGN(Event p, Event::Open(backend(), pinned));
  Spin(40ms);
  ASSERT_OK(p.Disable());
  for (Event& ev : flexible) ASSERT_OK(ev.Disable());
  const ReadValues pv = Values(p);
  EXPECT_EQ(Running(pv), Enabled(pv)) << "pinned: on all the time";
  EXPECT_GT(pv.counters[0].value, 0u);
  for (size_t i = 0; i < flexible.size(); ++i) {
    const ReadValues v = Values(flexible[i]);
    EXPECT_LT(Running(v), Enabled(v)) << "flexible " << i;
  }
}

PERFTEST_CASE(Multiplex, ExclusiveGroupRunsAlone, "multiplex.exclusive",
              "core.c group_can_go_on(): 'if (epc->exclusive) return 0' and an exclusive group needs an empty active "
              "list; so an exclusive flexible group and another flexible group take turns (perf_rotate_context())") {
  REQUIRE_HARDWARE();
  perf_event_attr excl = Branches();
  excl.exclusive = 1;
  excl.disabled = 0;
  ASSERT_OK_AND_ASSIGN(Event e, Event::Open(backend(), excl));
  std::vector<Event> others = OpenEnabled(Branches(), 1);
  ASSERT_EQ(others.size(), 1u);
  Spin(40ms);
  ASSERT_OK(e.Disable());
  ASSERT_OK(others[0].Disable());
  const ReadValues ev = Values(e), ov = Values(others[0]);
  EXPECT_LT(Running(ev), Enabled(ev)) << "two events would fit, but the exclusive one runs alone";
  EXPECT_LT(Running(ov), Enabled(ov));
  EXPECT_GT(Running(ev), 0u);
  EXPECT_GT(Running(ov), 0u);
  EXPECT_LE(Running(ev) + Running(ov), Enabled(ev) + Enabled(ev) / 20) << "never both on at once";
}

}  // namespace
}  // namespace perftest
