// Unit tests of the model's child tasks (mocks/mock_tasks.cc): inherited
// copies at fork, folding at exit, live children in reads, inherit_thread,
// ioctls reaching the copies, close freeing them, POLLHUP once the monitored
// task exits, enable_on_exec and remove_on_exec at exec. The expected values
// are the kernel's (suites/inherit and suites/signals pass on Linux 6.18).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>

#include "mocks/internal/mock_test_fixture.h"

namespace perftest {
namespace {

using namespace std::chrono_literals;

perf_event_attr Faults(bool inherit = true) {
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.disabled = 0;
  a.inherit = inherit;
  return a;
}

class TasksModel : public MockTest {
 protected:
  pid_t Spawn() {
    Result<pid_t> p = b().SpawnTask();
    EXPECT_OK(p);
    return p.ok() ? *p : -1;
  }
  void RunIn(pid_t pid, const Workload& w) { EXPECT_OK(b().RunInTask(pid, w)); }
  void Exit(pid_t pid) { EXPECT_OK(b().ExitTask(pid)); }
  int PollOne(int fd) {
    pollfd p{fd, POLLIN, 0};
    EXPECT_OK(b().Poll(std::span<pollfd>(&p, 1), 0));
    return p.revents;
  }
};

// inherit_task_group() at fork, sync_child_event() at exit.
TEST_F(TasksModel, ForkedChildrenFoldIntoTheParent) {
  const int fd = MustOpen(Faults());
  Run(Workload::ForkTouch(2, 5));
  EXPECT_EQ(Count(fd), 10u);
  const int plain = MustOpen(Faults(false));
  Run(Workload::ForkTouch(2, 5));
  EXPECT_EQ(Count(plain), 0u) << "no inherit, no copies";
}

// perf_event_init_task() runs at fork with the events open then.
TEST_F(TasksModel, ChildForkedBeforeTheOpenIsNotFollowed) {
  const pid_t child = Spawn();
  const int fd = MustOpen(Faults());
  RunIn(child, Workload::TouchPages(5));
  Exit(child);
  EXPECT_EQ(Count(fd), 0u);
}

// __perf_event_read_value(): live copies count in the parent's read, once.
TEST_F(TasksModel, ReadAddsLiveChildrenOnce) {
  const int fd = MustOpen(Faults());
  const pid_t child = Spawn();
  RunIn(child, Workload::TouchPages(5));
  EXPECT_EQ(Count(fd), 5u) << "before exit";
  Exit(child);
  EXPECT_EQ(Count(fd), 5u) << "after exit: folded, not doubled";
}

// __perf_event_read_value(): times too (child_total_time_*, live children's).
TEST_F(TasksModel, ReadAddsChildrenTimes) {
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_TASK_CLOCK);
  a.disabled = 0;
  a.inherit = 1;
  a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  const int fd = MustOpen(a);
  const pid_t child = Spawn();
  RunIn(child, Workload::Spin(1ms));
  EXPECT_EQ(Words(fd), (std::vector<uint64_t>{1000000, 1000000, 1000000})) << "the parent was off CPU";
  Exit(child);
  EXPECT_EQ(Words(fd), (std::vector<uint64_t>{1000000, 1000000, 1000000}));
}

// inherit_task_group(): inherit_thread events only for CLONE_THREAD.
TEST_F(TasksModel, InheritThreadFollowsThreadsOnly) {
  perf_event_attr a = Faults();
  a.inherit_thread = 1;
  const int fd = MustOpen(a);
  Run(Workload::ForkTouch(1, 5));
  EXPECT_EQ(Count(fd), 0u);
  Run(Workload::Threads(1, 5));
  EXPECT_EQ(Count(fd), 5u);
}

// inherit_event(): OFF stays OFF; perf_event_for_each_child(): ENABLE reaches the copy.
TEST_F(TasksModel, EnableReachesTheCopies) {
  perf_event_attr a = Faults();
  a.disabled = 1;
  const int fd = MustOpen(a);
  const pid_t child = Spawn();
  RunIn(child, Workload::TouchPages(3));
  EXPECT_EQ(Count(fd), 0u);
  Enable(fd);
  RunIn(child, Workload::TouchPages(5));
  Exit(child);
  EXPECT_EQ(Count(fd), 5u);
}

// perf_event_release_kernel(): closing the parent frees its copies (the
// child's exit must not fold into a freed event).
TEST_F(TasksModel, CloseFreesTheCopies) {
  const int closed = MustOpen(Faults());
  const int kept = MustOpen(Faults());
  const pid_t child = Spawn();
  ASSERT_OK(b().Close(closed));
  RunIn(child, Workload::TouchPages(4));
  Exit(child);
  EXPECT_EQ(Count(kept), 4u);
}

// perf_event_exit_event(): state EXIT; is_event_hup() -> POLLHUP alone.
TEST_F(TasksModel, ExitedTaskPollsHup) {
  const pid_t child = Spawn();
  perf_event_attr a = Faults(false);
  a.sample_period = 1;
  a.wakeup_events = 1;
  const int fd = MustOpen(a, child);
  std::optional<RingBuffer> rb = Map(fd, 4);
  EXPECT_EQ(PollOne(fd), 0);
  RunIn(child, Workload::TouchPages(2));
  EXPECT_EQ(Count(fd), 2u) << "the event counts its task";
  Run(Workload::TouchPages(2));
  EXPECT_EQ(Count(fd), 2u) << "and not the current one";
  RunIn(child, Workload::TouchPages(2));
  Exit(child);
  EXPECT_EQ(PollOne(fd), POLLHUP) << "samples unread, POLLHUP alone";
  EXPECT_EQ(Count(fd), 4u) << "the count stays readable";
  EXPECT_THAT(b().RunInTask(child, Workload::TouchPages(1)), FailsWithErrno(ESRCH));
}

// perf_event_enable_on_exec(): the child's OFF copy is enabled by its exec.
TEST_F(TasksModel, EnableOnExecEnablesTheCopy) {
  perf_event_attr a = Faults();
  a.disabled = 1;
  a.enable_on_exec = 1;
  const int fd = MustOpen(a);
  Run(Workload::ForkTouch(1, 5));
  EXPECT_EQ(Count(fd), 0u);
  Run(Workload::ForkExec(1, "/bin/true"));
  const uint64_t after_exec = Count(fd);
  EXPECT_GT(after_exec, 0u);
  Run(Workload::TouchPages(3));
  EXPECT_EQ(Count(fd), after_exec) << "the parent did not exec: still off";
}

// perf_event_remove_on_exec(): the copy is removed (folded) at exec.
TEST_F(TasksModel, RemoveOnExecRemovesTheCopy) {
  perf_event_attr a = Faults();
  a.remove_on_exec = 1;
  const int removed = MustOpen(a);
  const int kept = MustOpen(Faults());
  const pid_t child = Spawn();
  RunIn(child, Workload::TouchPages(3));
  Exit(child);
  EXPECT_EQ(Count(removed), 3u) << "no exec: counted like any copy";
  Run(Workload::ForkExec(1, "/bin/true"));
  EXPECT_EQ(Count(removed), 3u) << "the exec'd program is not counted";
  EXPECT_GT(Count(kept), 3u);
}

// A fork workload: the parent blocks in waitpid() while the child runs, a
// voluntary PERF_RECORD_SWITCH out then in (records.switch_around_fork).
TEST_F(TasksModel, ParentSwitchesAroundItsChild) {
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_DUMMY);
  a.disabled = 0;
  a.context_switch = 1;
  a.task = 1;
  a.sample_type = PERF_SAMPLE_TID;
  a.sample_id_all = 1;
  const int fd = MustOpen(a);
  std::optional<RingBuffer> rb = Map(fd, 8);
  ASSERT_TRUE(rb.has_value());
  Run(Workload::ForkTouch(1, 2));
  std::vector<uint32_t> types;
  std::vector<uint16_t> miscs;
  for (const Record& r : Records(*rb, a)) {
    types.push_back(r.header.type);
    if (r.header.type == PERF_RECORD_SWITCH) miscs.push_back(r.header.misc);
  }
  EXPECT_THAT(types, ::testing::ElementsAre(PERF_RECORD_FORK, PERF_RECORD_SWITCH, PERF_RECORD_SWITCH));
  EXPECT_THAT(miscs, ::testing::ElementsAre(PERF_RECORD_MISC_SWITCH_OUT, 0)) << "voluntary out (no PREEMPT), then in";
}

// A CPU-wide event on CPU 0 sees the hand-over from the parent to the child
// it waits for and back, each side named (perf_event_switch(prev, next) in
// perf_event_task_sched_out()/sched_in(); records.switch_cpu_wide_fork on
// Linux 6.18): not the idle task.
TEST_F(TasksModel, CpuWideSwitchAtForkNamesTheChild) {
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_DUMMY);
  a.disabled = 0;
  a.context_switch = 1;
  a.sample_type = PERF_SAMPLE_TID;
  a.sample_id_all = 1;
  const int fd = MustOpen(a, -1, 0);
  std::optional<RingBuffer> rb = Map(fd, 8);
  ASSERT_TRUE(rb.has_value());
  const uint32_t parent = static_cast<uint32_t>(b().CurrentTask().tid);
  ASSERT_OK_AND_ASSIGN(WorkloadResult w, b().RunWorkload(Workload::ForkTouch(1, 2)));
  const auto child = static_cast<uint32_t>(w.children.at(0));
  std::vector<std::string> seen;
  for (const Record& r : Records(*rb, a)) {
    if (r.header.type != PERF_RECORD_SWITCH_CPU_WIDE) continue;
    const auto& s = std::get<SwitchRecord>(r.body);
    seen.push_back(fmt::format("{}{} {}->{}", (r.header.misc & PERF_RECORD_MISC_SWITCH_OUT) ? "out" : "in",
                               (r.header.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) ? "+preempt" : "",
                               *r.sample_id->tid, *s.next_prev_tid));
  }
  const auto rec = [](const char* kind, uint32_t self, uint32_t other) {
    return fmt::format("{} {}->{}", kind, self, other);
  };
  EXPECT_THAT(seen, ::testing::ElementsAre(rec("out", parent, child), rec("in", child, parent),
                                           rec("out", child, parent), rec("in", parent, child)));
}

}  // namespace
}  // namespace perftest
