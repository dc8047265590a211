// Conformance suite: read(2) on an event fd and attr.read_format.
//
// Every case uses software events (page-faults, minor-faults, task-clock,
// cpu-clock, dummy), so it runs for real on any kernel with perf events and
// on the mock. The expected layouts are computed here from the UAPI comment
// (<linux/perf_event.h> "struct read_format"), independently of the harness's
// own decoder. References: perf_event_open(2) "Reading results";
// kernel/events/core.c perf_read(), __perf_read(), perf_read_one(),
// perf_read_group(), __perf_read_group_add(), __perf_event_read_size(),
// perf_event_validate_size(); kernel/events/ring_buffer.c __perf_output_begin()
// (lost_samples).
#include "harness/read_format.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <chrono>
#include <cstring>
#include <optional>
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

using ::testing::Ge;
using namespace std::chrono_literals;

constexpr uint64_t kAllBits = kTimes | PERF_FORMAT_ID | PERF_FORMAT_GROUP | PERF_FORMAT_LOST;
// Page faults the kernel may add to a workload's own (first touches of stack
// or heap by the harness between enable and disable).

// Word positions of a read_format record, from the UAPI comment:
//   { u64 value; { u64 time_enabled; } { u64 time_running; } { u64 id; } { u64 lost; } }
//   { u64 nr; { u64 time_enabled; } { u64 time_running; } { u64 value; { u64 id; } { u64 lost; } } cntr[nr]; }
struct Layout {
  uint64_t rf;
  size_t nr;
  bool group() const { return rf & PERF_FORMAT_GROUP; }
  size_t header() const {
    return (group() ? 1 : 0) + ((rf & PERF_FORMAT_TOTAL_TIME_ENABLED) ? 1 : 0) +
           ((rf & PERF_FORMAT_TOTAL_TIME_RUNNING) ? 1 : 0);
  }
  size_t entry() const { return 1 + ((rf & PERF_FORMAT_ID) ? 1 : 0) + ((rf & PERF_FORMAT_LOST) ? 1 : 0); }
  size_t words() const { return group() ? header() + nr * entry() : header() + entry(); }
  // Index of time_enabled / time_running (nullopt when absent).
  std::optional<size_t> enabled() const {
    if (!(rf & PERF_FORMAT_TOTAL_TIME_ENABLED)) return std::nullopt;
    return 1;  // after value (single) or nr (group)
  }
  std::optional<size_t> running() const {
    if (!(rf & PERF_FORMAT_TOTAL_TIME_RUNNING)) return std::nullopt;
    return 1 + ((rf & PERF_FORMAT_TOTAL_TIME_ENABLED) ? 1 : 0);
  }
  // Counter i's value / id / lost.
  size_t value(size_t i) const { return group() ? header() + i * entry() : 0; }
  std::optional<size_t> id(size_t i) const {
    if (!(rf & PERF_FORMAT_ID)) return std::nullopt;
    return group() ? value(i) + 1 : 1 + header();  // single: value, times, id
  }
  std::optional<size_t> lost(size_t i) const {
    if (!(rf & PERF_FORMAT_LOST)) return std::nullopt;
    return group() ? value(i) + entry() - 1 : 1 + header() + ((rf & PERF_FORMAT_ID) ? 1 : 0);
  }
};

class ReadFormat : public SuiteTest {
 protected:
  // read(2) of `len` bytes into a buffer pre-filled with 0xa5; the words read.
  Result<std::vector<uint64_t>> ReadWords(int fd, size_t len, std::vector<std::byte>* raw = nullptr) {
    std::vector<std::byte> buf(len + 64, std::byte{0xa5});
    Result<size_t> n = backend().Read(fd, buf.data(), len);
    if (!n.ok()) return Result<std::vector<uint64_t>>::FailureFrom(n);
    std::vector<uint64_t> words(*n / 8);
    std::memcpy(words.data(), buf.data(), words.size() * 8);
    if (raw != nullptr) *raw = std::move(buf);
    return Result<std::vector<uint64_t>>::Ok(std::move(words), n.call());
  }

};

PERFTEST_CASE(ReadFormat, SingleLayoutEveryCombination, "read_format.layout_single",
              "<linux/perf_event.h> struct read_format (!PERF_FORMAT_GROUP); core.c perf_read_one()") {
  constexpr uint64_t kPages = 4;
  for (uint64_t rf = 0; rf <= kAllBits; ++rf) {
    if (rf & PERF_FORMAT_GROUP) continue;
    SCOPED_TRACE("read_format=" + DescribeReadFormat(rf));
    ASSERT_OK_AND_ASSIGN(Event ev,
                         Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS, {.read_format = rf})));
    ASSERT_OK_AND_ASSIGN(const uint64_t id, ev.Id());
    ASSERT_OK(ev.Enable());
    ASSERT_OK(backend().RunWorkload(Workload::TouchPages(kPages)));
    ASSERT_OK(ev.Disable());
    const Layout l{rf, 1};
    ASSERT_OK_AND_ASSIGN(std::vector<uint64_t> w, ReadWords(ev.fd(), 8 * l.words()));
    ASSERT_EQ(w.size(), l.words()) << "read(2) returns the whole record";
    EXPECT_EQ(w.size() * 8, ReadFormatSize(rf)) << "the harness's size agrees with the kernel's";
    ExpectFaults(w[l.value(0)], kPages, "value");
    if (l.enabled()) {
      EXPECT_GT(w[*l.enabled()], 0u) << "time_enabled";
    }
    if (l.running()) {
      EXPECT_GT(w[*l.running()], 0u) << "time_running";
    }
    if (l.enabled() && l.running()) {
      EXPECT_EQ(w[*l.enabled()], w[*l.running()]) << "a software event is never multiplexed";
    }
    if (l.id(0)) {
      EXPECT_EQ(w[*l.id(0)], id) << "PERF_FORMAT_ID is PERF_EVENT_IOC_ID";
    }
    if (l.lost(0)) {
      EXPECT_EQ(w[*l.lost(0)], 0u) << "a counting event loses nothing";
    }
  }
}

PERFTEST_CASE(ReadFormat, GroupLayoutEveryCombination, "read_format.layout_group",
              "<linux/perf_event.h> struct read_format (PERF_FORMAT_GROUP); core.c perf_read_group(), "
              "__perf_read_group_add()") {
  constexpr uint64_t kPages = 4;
  for (uint64_t rf = PERF_FORMAT_GROUP; rf <= kAllBits; ++rf) {
    if (!(rf & PERF_FORMAT_GROUP)) continue;
    SCOPED_TRACE("read_format=" + DescribeReadFormat(rf));
    // Members open enabled: they count whenever the leader does.
    ASSERT_OK_AND_ASSIGN(
        Group g,
        Group::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS, {.read_format = rf}),
                    {SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN, {.read_format = rf, .disabled = false}),
                     SoftwareCounterAttr(PERF_COUNT_SW_DUMMY, {.read_format = rf, .disabled = false})}));
    uint64_t ids[3];
    for (size_t i = 0; i < 3; ++i) {
      ASSERT_OK_AND_ASSIGN(ids[i], (i == 0 ? g.leader() : g.member(i - 1)).Id());
    }
    ASSERT_OK(g.leader().Enable());
    ASSERT_OK(backend().RunWorkload(Workload::TouchPages(kPages)));
    ASSERT_OK(g.leader().Disable());
    const Layout l{rf, 3};
    ASSERT_OK_AND_ASSIGN(std::vector<uint64_t> w, ReadWords(g.leader().fd(), 8 * l.words()));
    ASSERT_EQ(w.size(), l.words());
    EXPECT_EQ(w.size() * 8, ReadFormatSize(rf, 3));
    EXPECT_EQ(w[0], 3u) << "nr: the leader and its two members";
    if (l.enabled()) {
      EXPECT_GT(w[*l.enabled()], 0u);
    }
    if (l.enabled() && l.running()) {
      EXPECT_EQ(w[*l.enabled()], w[*l.running()]);
    }
    ExpectFaults(w[l.value(0)], kPages, "leader (page-faults)");
    ExpectFaults(w[l.value(1)], kPages, "member 1 (minor-faults)");
    EXPECT_EQ(w[l.value(2)], 0u) << "member 2 (dummy) counts nothing";
    for (size_t i = 0; i < 3; ++i) {
      if (l.id(i)) {
        EXPECT_EQ(w[*l.id(i)], ids[i]) << "entry " << i << ": leader first, then members in open order";
      }
      if (l.lost(i)) {
        EXPECT_EQ(w[*l.lost(i)], 0u) << "entry " << i;
      }
    }
  }
}

PERFTEST_CASE(ReadFormat, ShortBufferIsEnospc, "read_format.enospc",
              "perf_event_open(2) 'Reading results'; core.c __perf_read(): count < event->read_size -> -ENOSPC") {
  for (uint64_t rf = 0; rf <= kAllBits; ++rf) {
    SCOPED_TRACE("read_format=" + DescribeReadFormat(rf));
    ASSERT_OK_AND_ASSIGN(Group g, Group::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_DUMMY, {.read_format = rf}),
                                              {SoftwareCounterAttr(PERF_COUNT_SW_DUMMY, {.read_format = rf})}));
    const size_t size = ReadFormatSize(rf, 2);
    std::vector<std::byte> buf(size + 8);
    EXPECT_THAT(backend().Read(g.leader().fd(), buf.data(), 0), FailsWithErrno(ENOSPC));
    EXPECT_THAT(backend().Read(g.leader().fd(), buf.data(), size - 1), FailsWithErrno(ENOSPC));
    EXPECT_THAT(backend().Read(g.leader().fd(), buf.data(), size - 8), FailsWithErrno(ENOSPC));
    EXPECT_THAT(backend().Read(g.leader().fd(), buf.data(), size), SucceedsWith(size));
    EXPECT_THAT(backend().Read(g.member(0).fd(), buf.data(), size - 1), FailsWithErrno(ENOSPC)) << "a member's read";
  }
}

PERFTEST_CASE(ReadFormat, LargerBufferGetsTheRecordOnly, "read_format.oversized_buffer",
              "core.c __perf_read(): returns event->read_size bytes whatever the buffer size") {
  const uint64_t rf = kTimes | PERF_FORMAT_ID | PERF_FORMAT_LOST;
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_DUMMY, {.read_format = rf})));
  std::vector<std::byte> raw;
  ASSERT_OK_AND_ASSIGN(std::vector<uint64_t> w, ReadWords(ev.fd(), 4096, &raw));
  EXPECT_EQ(w.size() * 8, ReadFormatSize(rf));
  for (size_t i = ReadFormatSize(rf); i < raw.size(); ++i) {
    ASSERT_EQ(raw[i], std::byte{0xa5}) << "byte " << i << " past the record was written";
  }
}

PERFTEST_CASE(ReadFormat, IdIsIocIdAndUnique, "read_format.id",
              "<linux/perf_event.h> PERF_FORMAT_ID; core.c primary_event_id(), PERF_EVENT_IOC_ID") {
  ASSERT_OK_AND_ASSIGN(
      Event a, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_DUMMY, {.read_format = PERF_FORMAT_ID})));
  ASSERT_OK_AND_ASSIGN(
      Event b, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_DUMMY, {.read_format = PERF_FORMAT_ID})));
  ASSERT_OK_AND_ASSIGN(const uint64_t ida, a.Id());
  ASSERT_OK_AND_ASSIGN(const uint64_t idb, b.Id());
  EXPECT_NE(ida, idb);
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK_AND_ASSIGN(ReadValues va, a.Read());
    ASSERT_OK_AND_ASSIGN(ReadValues vb, b.Read());
    EXPECT_EQ(va.counters[0].id, ida) << "stable across reads";
    EXPECT_EQ(vb.counters[0].id, idb);
  }
}

PERFTEST_CASE(ReadFormat, NeverEnabledReadsZero, "read_format.never_enabled",
              "core.c perf_event_alloc(): state OFF for attr.disabled; __perf_update_times() accrues nothing while OFF") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_TASK_CLOCK, kTimed)));
  ASSERT_OK(backend().RunWorkload(Workload::Spin(2ms)));
  ASSERT_OK_AND_ASSIGN(ReadValues v, ev.Read());
  EXPECT_EQ(v.counters[0].value, 0u);
  EXPECT_EQ(v.time_enabled, 0u);
  EXPECT_EQ(v.time_running, 0u);
}

PERFTEST_CASE(ReadFormat, TimesStopWhileDisabled, "read_format.times_stop_disabled",
              "<linux/perf_event.h> PERF_FORMAT_TOTAL_TIME_ENABLED: time the event was enabled; "
              "core.c __perf_update_times()") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_TASK_CLOCK, kTimed)));
  ASSERT_OK(ev.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::Spin(2ms)));
  ASSERT_OK(ev.Disable());
  ASSERT_OK_AND_ASSIGN(ReadValues first, ev.Read());
  EXPECT_GT(*first.time_enabled, 0u);
  ASSERT_OK(backend().RunWorkload(Workload::Spin(5ms)));
  ASSERT_OK_AND_ASSIGN(ReadValues second, ev.Read());
  EXPECT_EQ(first, second) << "nothing moves while the event is disabled";
  // And they move again once it is re-enabled.
  ASSERT_OK(ev.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::Spin(1ms)));
  ASSERT_OK(ev.Disable());
  ASSERT_OK_AND_ASSIGN(ReadValues third, ev.Read());
  EXPECT_GT(*third.time_enabled, *second.time_enabled);
  EXPECT_GT(third.counters[0].value, second.counters[0].value);
}

PERFTEST_CASE(ReadFormat, TaskClockEqualsTimeRunning, "read_format.task_clock_time_running",
              "core.c task_clock_event_update(): task-clock counts the context's time, as time_running does") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_TASK_CLOCK, kTimed)));
  for (auto d : {1ms, 3ms}) {
    ASSERT_OK(ev.Enable());
    ASSERT_OK(backend().RunWorkload(Workload::Spin(d)));
    ASSERT_OK(backend().RunWorkload(Workload::Sleep(1, 1ms)));
    ASSERT_OK(ev.Disable());
    ASSERT_OK_AND_ASSIGN(ReadValues v, ev.Read());
    EXPECT_GT(v.counters[0].value, 0u);
    EXPECT_EQ(v.counters[0].value, *v.time_running) << "read after DISABLE: both stopped at the same context time";
    EXPECT_EQ(*v.time_enabled, *v.time_running);
  }
}

PERFTEST_CASE(ReadFormat, TaskTimesPauseWhileSleeping, "read_format.task_times_exclude_sleep",
              "core.c: a task context's time runs only while the task is scheduled in (perf_event_context_sched_in/out)") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS, kTimed)));
  constexpr auto kEach = 4ms;
  constexpr int kTimesSlept = 5;
  ASSERT_OK(ev.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::Sleep(kTimesSlept, kEach)));
  ASSERT_OK(ev.Disable());
  ASSERT_OK_AND_ASSIGN(ReadValues v, ev.Read());
  const uint64_t slept = std::chrono::nanoseconds(kEach).count() * kTimesSlept;
  EXPECT_LT(*v.time_enabled, slept / 2) << "a per-task event is not enabled-and-waiting while its task sleeps";
  EXPECT_EQ(*v.time_enabled, *v.time_running);
}

PERFTEST_CASE(ReadFormat, CpuWideTimesIncludeSleep, "read_format.cpu_times_include_sleep",
              "core.c: a CPU context's time always runs; perf_event_open(2) pid == -1, cpu >= 0") {
  perf_event_attr a = SoftwareCounterAttr(PERF_COUNT_SW_CPU_CLOCK, kTimed);
  Result<Event> ev = Event::Open(backend(), a, /*pid=*/-1, /*cpu=*/0);
  if (!ev.ok() && (ev.error() == EACCES || ev.error() == EPERM)) {
    PERFTEST_SKIP(SkipClass::kPermission,
                  fmt::format("a CPU-wide event returns {}: needs CAP_PERFMON or perf_event_paranoid <= 0",
                              ErrnoName(ev.error())));
  }
  ASSERT_OK(ev);
  constexpr auto kEach = 4ms;
  constexpr int kTimesSlept = 5;
  ASSERT_OK(ev->Enable());
  ASSERT_OK(backend().RunWorkload(Workload::Sleep(kTimesSlept, kEach)));
  ASSERT_OK(ev->Disable());
  ASSERT_OK_AND_ASSIGN(ReadValues v, ev->Read());
  const uint64_t slept = std::chrono::nanoseconds(kEach).count() * kTimesSlept;
  EXPECT_GE(*v.time_enabled, slept) << "CPU 0 runs on while this task sleeps";
  EXPECT_EQ(*v.time_enabled, *v.time_running);
  EXPECT_GT(v.counters[0].value, slept / 2) << "cpu-clock counts CPU 0's time";
}

PERFTEST_CASE(ReadFormat, MemberTimesFrozenWhileLeaderOff, "read_format.member_times_leader_off",
              "core.c __perf_effective_state(): a member's state is its leader's while the leader is OFF") {
  ASSERT_OK_AND_ASSIGN(
      Group g,
      Group::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS, kTimed),
                  {SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN, {.read_format = kTimes, .disabled = false})}));
  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(4)));
  ASSERT_OK(backend().RunWorkload(Workload::Spin(2ms)));
  ASSERT_OK_AND_ASSIGN(ReadValues off, g.member(0).Read());
  EXPECT_EQ(off.counters[0].value, 0u) << "the leader is off: the member does not count";
  EXPECT_EQ(off.time_enabled, 0u) << "nor is it 'enabled' in time";
  EXPECT_EQ(off.time_running, 0u);

  ASSERT_OK(g.leader().Enable());
  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(4)));
  ASSERT_OK(g.leader().Disable());
  ASSERT_OK_AND_ASSIGN(ReadValues on, g.member(0).Read());
  ExpectFaults(on.counters[0].value, 4, "member while the leader was on");
  EXPECT_GT(*on.time_enabled, 0u);
  EXPECT_EQ(*on.time_enabled, *on.time_running);

  ASSERT_OK(backend().RunWorkload(Workload::Spin(2ms)));
  ASSERT_OK_AND_ASSIGN(ReadValues later, g.member(0).Read());
  EXPECT_EQ(later, on) << "the member is still enabled, but its time stops with the leader's";
}

PERFTEST_CASE(ReadFormat, GroupReadFromMember, "read_format.group_from_member",
              "core.c perf_read_group(): reads event->group_leader and its siblings with the reader's read_format") {
  const uint64_t member_rf = PERF_FORMAT_GROUP | PERF_FORMAT_ID | kTimes;
  ASSERT_OK_AND_ASSIGN(
      Group g,
      Group::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS, kTimed),
                  {SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN, {.read_format = member_rf, .disabled = false})}));
  ASSERT_OK_AND_ASSIGN(const uint64_t leader_id, g.leader().Id());
  ASSERT_OK_AND_ASSIGN(const uint64_t member_id, g.member(0).Id());
  ASSERT_OK(g.leader().Enable());
  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(6)));
  ASSERT_OK(g.leader().Disable());
  ASSERT_OK_AND_ASSIGN(ReadValues leader, g.leader().Read());
  ASSERT_OK_AND_ASSIGN(ReadValues group, g.member(0).Read(2));
  ASSERT_EQ(group.counters.size(), 2u);
  EXPECT_EQ(group.counters[0].id, leader_id) << "the leader comes first even when a member reads";
  EXPECT_EQ(group.counters[1].id, member_id);
  EXPECT_EQ(group.counters[0].value, leader.counters[0].value);
  ExpectFaults(group.counters[1].value, 6, "member");
  EXPECT_EQ(group.time_enabled, leader.time_enabled) << "the group's times are the leader's";
  EXPECT_EQ(group.time_running, leader.time_running);
  // The leader's own read_format (no GROUP) still reads one counter.
  std::vector<std::byte> buf(64);
  EXPECT_THAT(backend().Read(g.leader().fd(), buf.data(), buf.size()), SucceedsWith(ReadFormatSize(kTimes)));
}

PERFTEST_CASE(ReadFormat, GroupTimesAreTheLeaders, "read_format.group_times_leader",
              "core.c __perf_read_group_add(): time_enabled/time_running of the leader") {
  // Two members that are never enabled: one reads alone, one reads the group.
  ASSERT_OK_AND_ASSIGN(
      Group g, Group::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_TASK_CLOCK, kTimed),
                           {SoftwareCounterAttr(PERF_COUNT_SW_DUMMY, kTimed),
                            SoftwareCounterAttr(PERF_COUNT_SW_DUMMY, {.read_format = kTimes | PERF_FORMAT_GROUP})}));
  ASSERT_OK(g.leader().Enable());
  ASSERT_OK(backend().RunWorkload(Workload::Spin(2ms)));
  ASSERT_OK(g.leader().Disable());
  ASSERT_OK_AND_ASSIGN(ReadValues leader, g.leader().Read());
  ASSERT_OK_AND_ASSIGN(ReadValues alone, g.member(0).Read());
  ASSERT_OK_AND_ASSIGN(ReadValues group, g.member(1).Read(3));
  EXPECT_GT(*leader.time_enabled, 0u);
  EXPECT_EQ(alone.time_enabled, 0u) << "a member never enabled has no time of its own";
  EXPECT_EQ(group.time_enabled, leader.time_enabled);
  EXPECT_EQ(group.time_running, leader.time_running);
  ASSERT_EQ(group.counters.size(), 3u);
  EXPECT_EQ(group.counters[0].value, leader.counters[0].value);
  EXPECT_EQ(group.counters[1].value, 0u);
  EXPECT_EQ(group.counters[2].value, 0u);
}

PERFTEST_CASE(ReadFormat, GroupShrinksWhenMembersClose, "read_format.group_member_close",
              "core.c perf_group_detach(): siblings and leader get a new read_size (perf_event__header_size())") {
  const uint64_t rf = PERF_FORMAT_GROUP | PERF_FORMAT_ID;
  ASSERT_OK_AND_ASSIGN(Event leader,
                       Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_DUMMY, {.read_format = rf})));
  ASSERT_OK_AND_ASSIGN(
      Event m1, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_DUMMY, {.read_format = rf}), 0, -1, &leader));
  ASSERT_OK_AND_ASSIGN(
      Event m2, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_DUMMY, {.read_format = rf}), 0, -1, &leader));
  ASSERT_OK_AND_ASSIGN(const uint64_t leader_id, leader.Id());
  ASSERT_OK_AND_ASSIGN(const uint64_t m2_id, m2.Id());
  std::vector<std::byte> buf(256);
  EXPECT_THAT(backend().Read(leader.fd(), buf.data(), buf.size()), SucceedsWith(ReadFormatSize(rf, 3)));

  ASSERT_OK(m1.Close());
  EXPECT_THAT(backend().Read(leader.fd(), buf.data(), buf.size()), SucceedsWith(ReadFormatSize(rf, 2)));
  ASSERT_OK_AND_ASSIGN(ReadValues two, m2.Read(2));
  ASSERT_EQ(two.counters.size(), 2u);
  EXPECT_EQ(two.counters[0].id, leader_id);
  EXPECT_EQ(two.counters[1].id, m2_id);

  // Closing the leader makes the member a singleton group of its own.
  ASSERT_OK(leader.Close());
  ASSERT_OK_AND_ASSIGN(ReadValues one, m2.Read(2));
  ASSERT_EQ(one.counters.size(), 1u);
  EXPECT_EQ(one.counters[0].id, m2_id);
}

PERFTEST_CASE(ReadFormat, GroupSizeLimitIsE2big, "read_format.group_size_limit",
              "core.c perf_event_validate_size() (Linux 6.7+): no group member's read_format record may exceed "
              "16 KiB; perf_event_open() -> -E2BIG") {
  // Up to ~700 fds are needed.
  rlimit rl{};
  ::getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < 2048 && rl.rlim_max >= 2048) {
    rl.rlim_cur = 2048;
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
  if (rl.rlim_cur < 2048) {
    PERFTEST_SKIP(SkipClass::kPermission,
                  fmt::format("RLIMIT_NOFILE is {} (hard {}): the case needs 2048 fds", rl.rlim_cur, rl.rlim_max));
  }
  struct Variant {
    uint64_t leader_rf, member_rf;
  };
  for (const Variant v : {Variant{kAllBits, 0}, Variant{0, PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_LOST}}) {
    SCOPED_TRACE(fmt::format("leader read_format={}, members {}", DescribeReadFormat(v.leader_rf),
                             DescribeReadFormat(v.member_rf)));
    // The largest nr whose record fits 16 KiB, for the read_format that has GROUP.
    const uint64_t group_rf = (v.leader_rf & PERF_FORMAT_GROUP) ? v.leader_rf : v.member_rf;
    size_t max_nr = 1;
    while (ReadFormatSize(group_rf, max_nr + 1) <= 16 * 1024) ++max_nr;
    ASSERT_OK_AND_ASSIGN(
        Event leader, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_DUMMY, {.read_format = v.leader_rf})));
    std::vector<Event> members;
    Result<Event> last = Result<Event>::Failure(0);
    while (true) {
      last = Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_DUMMY, {.read_format = v.member_rf}), 0, -1,
                         &leader);
      if (!last.ok() || members.size() > max_nr) break;
      members.push_back(std::move(*last));
    }
    EXPECT_THAT(last, FailsWithErrno(E2BIG));
    EXPECT_EQ(members.size() + 1, max_nr) << "members accepted before the record would pass 16 KiB";
  }
}

// A page-fault sampler with a one-page buffer that fills up.
perf_event_attr Sampler(uint64_t read_format) {
  return SoftwareSamplerAttr(PERF_COUNT_SW_PAGE_FAULTS, /*sample_period=*/1, PERF_SAMPLE_IP, {.read_format = read_format});
}

PERFTEST_CASE(ReadFormat, LostCountsRecordsThatDidNotFit, "read_format.lost_full_buffer",
              "<linux/perf_event.h> PERF_FORMAT_LOST; ring_buffer.c __perf_output_begin() fail: "
              "atomic64_inc(&event->lost_samples)") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), Sampler(PERF_FORMAT_LOST | PERF_FORMAT_ID)));
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), 1));
  const size_t capacity = (rb.data_size() - 1) / 16;  // header + ip
  ASSERT_OK(ev.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(capacity + 100)));
  ASSERT_OK(ev.Disable());
  ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> recs, DrainRecords(rb, SampleLayout::FromAttr(ev.attr()), false));
  ASSERT_OK_AND_ASSIGN(ReadValues v, ev.Read());
  const size_t kept = SamplesOf(recs).size();
  EXPECT_EQ(kept, capacity);
  EXPECT_EQ(*v.counters[0].lost, v.counters[0].value - kept) << "every fault is a sample, kept or lost";
  EXPECT_GE(*v.counters[0].lost, 100u);
}

PERFTEST_CASE(ReadFormat, LostCountsWhilePaused, "read_format.lost_paused",
              "ring_buffer.c __perf_output_begin(): rb->paused with pages -> lost_samples++; PERF_EVENT_IOC_PAUSE_OUTPUT") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), Sampler(PERF_FORMAT_LOST)));
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), 8));
  ASSERT_OK(ev.PauseOutput(true));
  ASSERT_OK(ev.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(20)));
  ASSERT_OK(ev.Disable());
  ASSERT_OK_AND_ASSIGN(ReadValues v, ev.Read());
  EXPECT_EQ(rb.ReadHead(), 0u) << "nothing written while paused";
  ExpectFaults(v.counters[0].value, 20, "count");
  EXPECT_EQ(*v.counters[0].lost, v.counters[0].value) << "each sample dropped while paused is lost";
}

PERFTEST_CASE(ReadFormat, NothingLostWithoutBuffer, "read_format.lost_needs_buffer",
              "ring_buffer.c __perf_output_begin(): no rb -> 'goto out' without counting") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), Sampler(PERF_FORMAT_LOST)));
  ASSERT_OK(ev.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(20)));
  ASSERT_OK(ev.Disable());
  ASSERT_OK_AND_ASSIGN(ReadValues v, ev.Read());
  ExpectFaults(v.counters[0].value, 20, "count");
  EXPECT_EQ(*v.counters[0].lost, 0u) << "samples with nowhere to go are not 'lost'";
  {
    ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), 1));
    ASSERT_OK(rb.Unmap());
  }
  ASSERT_OK(ev.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(20)));
  ASSERT_OK(ev.Disable());
  ASSERT_OK_AND_ASSIGN(ReadValues after, ev.Read());
  EXPECT_EQ(*after.counters[0].lost, 0u) << "nor after the buffer is unmapped";
}

PERFTEST_CASE(ReadFormat, LostCountsSideBandRecords, "read_format.lost_side_band",
              "ring_buffer.c __perf_output_begin(): lost_samples counts every record that did not fit, "
              "PERF_RECORD_MMAP included (despite the name)") {
  perf_event_attr a = SoftwareCounterAttr(PERF_COUNT_SW_DUMMY, {.read_format = PERF_FORMAT_LOST});
  a.mmap = 1;
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), a));
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), 1));
  constexpr int kMaps = 200;
  ASSERT_OK(ev.Enable());
  for (int i = 0; i < kMaps; ++i) ASSERT_OK(backend().RunWorkload(Workload::MmapExec(1)));
  ASSERT_OK(ev.Disable());
  ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> recs, DrainRecords(rb, SampleLayout::FromAttr(a), false));
  ASSERT_OK_AND_ASSIGN(ReadValues v, ev.Read());
  const uint64_t kept = OfType(recs, PERF_RECORD_MMAP).size();
  const uint64_t lost = *v.counters[0].lost;
  EXPECT_EQ(kept, recs.size()) << "only MMAP records are asked for";
  EXPECT_GT(lost, 0u);
  if (exact()) {
    EXPECT_EQ(kept + lost, static_cast<uint64_t>(kMaps));
  } else {
    EXPECT_GE(kept + lost, static_cast<uint64_t>(kMaps)) << "every PROT_EXEC mapping made a record, kept or lost";
  }
}

PERFTEST_CASE(ReadFormat, GroupLostIsPerEvent, "read_format.lost_group",
              "core.c __perf_read_group_add(): each entry's lost is atomic64_read(&sub->lost_samples)") {
  const uint64_t rf = PERF_FORMAT_GROUP | PERF_FORMAT_LOST;
  ASSERT_OK_AND_ASSIGN(
      Group g,
      Group::Open(backend(), Sampler(rf),
                  {SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN, {.read_format = rf, .disabled = false})}));
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), g.leader().fd(), 1));
  ASSERT_OK(g.leader().Enable());
  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(400)));
  ASSERT_OK(g.leader().Disable());
  ASSERT_OK_AND_ASSIGN(ReadValues v, g.leader().Read(2));
  ASSERT_EQ(v.counters.size(), 2u);
  EXPECT_GT(*v.counters[0].lost, 0u) << "the sampling leader lost samples";
  EXPECT_EQ(*v.counters[1].lost, 0u) << "the counting member wrote nothing, so lost nothing";
}

PERFTEST_CASE(ReadFormat, ResetKeepsTimesAndLost, "read_format.reset_keeps_times_lost",
              "core.c _perf_event_reset(): local64_set(&event->count, 0) only") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), Sampler(kTimes | PERF_FORMAT_LOST)));
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), 1));
  ASSERT_OK(ev.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(400)));
  ASSERT_OK(ev.Disable());
  ASSERT_OK_AND_ASSIGN(ReadValues before, ev.Read());
  ASSERT_GT(*before.counters[0].lost, 0u);
  ASSERT_OK(ev.Reset());
  ASSERT_OK_AND_ASSIGN(ReadValues after, ev.Read());
  EXPECT_EQ(after.counters[0].value, 0u);
  EXPECT_EQ(after.time_enabled, before.time_enabled);
  EXPECT_EQ(after.time_running, before.time_running);
  EXPECT_EQ(after.counters[0].lost, before.counters[0].lost);
}

PERFTEST_CASE(ReadFormat, InheritWithGroupFormat, "read_format.inherit_group",
              "core.c perf_event_alloc()/has_inherit_and_sample_read(): inherit + PERF_FORMAT_GROUP reads; "
              "with PERF_SAMPLE_READ it needs PERF_SAMPLE_TID") {
  const uint64_t rf = PERF_FORMAT_GROUP | PERF_FORMAT_ID | kTimes;
  perf_event_attr leader = SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS, {.read_format = rf});
  perf_event_attr member = SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN, {.read_format = rf, .disabled = false});
  leader.inherit = member.inherit = 1;
  ASSERT_OK_AND_ASSIGN(Group g, Group::Open(backend(), leader, {member}));
  ASSERT_OK(g.leader().Enable());
  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(8)));
  ASSERT_OK(backend().RunWorkload(Workload::Fork(2)));
  ASSERT_OK(g.leader().Disable());
  ASSERT_OK_AND_ASSIGN(ReadValues v, g.leader().Read(2));
  ASSERT_EQ(v.counters.size(), 2u);
  EXPECT_GE(v.counters[0].value, 8u);
  EXPECT_GE(v.counters[1].value, 8u);

  perf_event_attr sampler = SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS, {.read_format = rf});
  sampler.inherit = 1;
  sampler.sample_period = 1;
  sampler.sample_type = PERF_SAMPLE_READ;
  EXPECT_THAT(Event::Open(backend(), sampler), FailsWithErrno(EINVAL)) << "inherit + PERF_SAMPLE_READ without TID";
  sampler.sample_type = PERF_SAMPLE_READ | PERF_SAMPLE_TID;
  EXPECT_THAT(Event::Open(backend(), sampler), Succeeds());
}

PERFTEST_CASE(ReadFormat, UnknownBitsAreEinval, "read_format.unknown_bits",
              "core.c perf_copy_attr(): attr->read_format & ~(PERF_FORMAT_MAX-1) -> -EINVAL") {
  for (uint64_t bit : {uint64_t{PERF_FORMAT_MAX}, uint64_t{PERF_FORMAT_MAX} << 1, uint64_t{1} << 63}) {
    perf_event_attr a = SoftwareCounterAttr(PERF_COUNT_SW_DUMMY, {.read_format = PERF_FORMAT_ID | bit});
    EXPECT_THAT(Event::Open(backend(), a), FailsWithErrno(EINVAL)) << "read_format bit " << bit;
  }
}

PERFTEST_CASE(ReadFormat, ValuesTrackTheWorkload, "read_format.values_consistent",
              "perf_event_open(2) 'Reading results': value, time_enabled, time_running grow with the work done") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS,
                                                                            {.read_format = kTimes | PERF_FORMAT_ID})));
  ReadValues last{std::optional<uint64_t>{0}, std::optional<uint64_t>{0}, {CounterValue{}}};
  for (uint64_t pages : {16, 32, 8}) {
    SCOPED_TRACE(fmt::format("{} pages", pages));
    ASSERT_OK(ev.Enable());
    ASSERT_OK(backend().RunWorkload(Workload::TouchPages(pages)));
    ASSERT_OK(ev.Disable());
    ASSERT_OK_AND_ASSIGN(ReadValues v, ev.Read());
    ExpectFaults(v.counters[0].value - last.counters[0].value, pages, "faults in this round");
    EXPECT_GT(*v.time_enabled, *last.time_enabled);
    EXPECT_EQ(*v.time_enabled, *v.time_running);
    last = v;
  }
}

}  // namespace
}  // namespace perftest
