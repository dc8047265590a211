#include "tools/exec/task_table.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <time.h>

#include <chrono>

namespace perftest::exec {
namespace {

std::optional<TaskFigures> OnePerTask(pid_t tid) {
  TaskFigures f;
  f.cpu_ns = static_cast<uint64_t>(tid);
  f.faults = 1;
  return f;
}

TEST(TaskTable, SubtreeSumsLiveAndExitedDescendants) {
  TaskTable t;
  t.Add(10, 10, 0);
  t.Add(11, 11, 10);  // child process
  t.Add(12, 11, 11);  // its thread
  t.Add(20, 20, 0);   // another root
  t.Exited(12, {.cpu_ns = 1000, .faults = 5});
  EXPECT_TRUE(t.InSubtree(12, 10));
  EXPECT_FALSE(t.InSubtree(20, 10));
  const TaskFigures all = t.SubtreeFigures(10, &OnePerTask);
  EXPECT_EQ(all.cpu_ns, 10u + 11u + 1000u);
  EXPECT_EQ(all.faults, 1u + 1u + 5u);
  const TaskFigures child = t.SubtreeFigures(11, &OnePerTask);
  EXPECT_EQ(child.cpu_ns, 11u + 1000u);
  EXPECT_EQ(t.Live(), (std::vector<pid_t>{10, 11, 20}));
}

TEST(TaskTable, TheTracersStopsAreNotTheProgramsSwitches) {
  TaskTable t;
  t.Add(5, 5, 0);
  t.Find(5)->stops = 3;
  t.Exited(5, {.cpu_ns = 1, .switches = 10});
  EXPECT_EQ(t.SubtreeFigures(5, &OnePerTask).switches, 7u);
  t.Add(6, 6, 0);
  t.Find(6)->stops = 30;
  t.Exited(6, {.switches = 10});
  EXPECT_EQ(t.SubtreeFigures(6, &OnePerTask).switches, 0u);  // never below 0
}

TEST(TaskTable, InheritedCountsFollowOnlyLaterDescendants) {
  TaskTable t;
  t.Add(10, 10, 0);
  t.Add(11, 11, 10);  // forked before the inherited event was opened
  const uint64_t opened = t.Seq();
  t.Add(12, 12, 10);  // after
  t.Add(13, 13, 12);  // its child
  EXPECT_EQ(t.SubtreeFigures(10, opened, &OnePerTask).cpu_ns, 10u + 12u + 13u);
  EXPECT_EQ(t.SubtreeFigures(10, UINT64_MAX, &OnePerTask).cpu_ns, 10u);  // no inherit: the task alone
  EXPECT_EQ(t.SubtreeFigures(10, &OnePerTask).cpu_ns, 10u + 11u + 12u + 13u);
}

TEST(TaskTable, ExitedTwiceKeepsTheFirstFigures) {
  TaskTable t;
  t.Add(5, 5, 0);
  t.Exited(5, {.cpu_ns = 7});
  t.Exited(5, {.cpu_ns = 9});
  EXPECT_EQ(t.SubtreeFigures(5, &OnePerTask).cpu_ns, 7u);
}

TEST(ReadFigures, CountsThisThreadsCpuTimeAndFaults) {
  std::optional<TaskFigures> before = ReadFigures(gettid());
  ASSERT_TRUE(before.has_value());
  // Spin 20 ms of this thread's CPU time (not wall time: the machine may be
  // shared) and fault 64 fresh pages.
  auto thread_ns = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
  };
  const uint64_t start = thread_ns();
  volatile uint64_t x = 0;
  while (thread_ns() - start < 20'000'000u) x = x + 1;
  std::vector<char> pages(64 * 4096 * 2);
  for (size_t i = 0; i < pages.size(); i += 4096) pages[i] = 1;
  std::optional<TaskFigures> after = ReadFigures(gettid());
  ASSERT_TRUE(after.has_value());
  EXPECT_GE(after->cpu_ns - before->cpu_ns, 10'000'000u);
  EXPECT_GE(after->faults - before->faults, 64u);
}

TEST(ReadFigures, NulloptForAGoneTask) {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  EXPECT_FALSE(ReadFigures(pid).has_value());
}

}  // namespace
}  // namespace perftest::exec
