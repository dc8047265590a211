#include "tools/exec/fd_table.h"

#include <gtest/gtest.h>

namespace perftest::exec {
namespace {

TEST(FdTable, AllocatesTheLowestFreeNumberOfTheRange) {
  FdTable t({512, 4});
  EXPECT_EQ(t.Allocate(100), 512);
  t.Insert(100, 512, {1, 10, false});
  EXPECT_EQ(t.Allocate(100), 513);
  EXPECT_EQ(t.Allocate(200), 512);  // another process, another fd table
  t.Insert(100, 513, {1, 11, false});
  t.Insert(100, 514, {1, 12, false});
  t.Insert(100, 515, {1, 13, false});
  EXPECT_EQ(t.Allocate(100), -1);  // full: EMFILE
  t.Erase(100, 513);
  EXPECT_EQ(t.Allocate(100), 513);
}

TEST(FdTable, FindsPerProcess) {
  FdTable t({512, 8});
  t.Insert(100, 512, {3, 20, true});
  ASSERT_NE(t.Find(100, 512), nullptr);
  EXPECT_EQ(t.Find(100, 512)->tracer_fd, 20);
  EXPECT_EQ(t.Find(200, 512), nullptr);
  EXPECT_EQ(t.Find(100, 513), nullptr);
  EXPECT_EQ(t.Erase(100, 513).backend, -1);
}

TEST(FdTable, ForkCopiesAndCountsReferences) {
  FdTable t({512, 8});
  t.Insert(100, 512, {1, 20, false});
  t.Insert(100, 513, {1, 21, true});
  t.Fork(100, 101);
  EXPECT_EQ(t.References(1, 20), 2);
  ASSERT_NE(t.Find(101, 513), nullptr);
  // exec in the child closes its FD_CLOEXEC fds only.
  std::vector<PerfFd> closed = t.Exec(101);
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_EQ(closed[0].tracer_fd, 21);
  EXPECT_EQ(t.References(1, 21), 1);
  EXPECT_NE(t.Find(101, 512), nullptr);
  EXPECT_EQ(t.ReleaseProcess(101).size(), 1u);
  EXPECT_EQ(t.References(1, 20), 1);
}

TEST(FdTable, CloseRangeClosesThoseInside) {
  FdTable t({512, 8});
  for (int fd = 512; fd < 516; ++fd) t.Insert(7, fd, {0, fd, false});
  EXPECT_EQ(t.CloseRange(7, 513, 514).size(), 2u);
  EXPECT_NE(t.Find(7, 512), nullptr);
  EXPECT_EQ(t.Find(7, 513), nullptr);
  EXPECT_NE(t.Find(7, 515), nullptr);
}

}  // namespace
}  // namespace perftest::exec
