#include "tools/exec/call_log.h"

#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "harness/describe.h"

namespace perftest::exec {
namespace {

TEST(CallLog, LinesInTheHarnessNotation) {
  EXPECT_EQ(FormatLogLine(42, DescribeRead(19712, 24), 24), "[42] read(fd=19712, len=24) = 24");
  EXPECT_EQ(FormatLogLine(42, DescribeClose(5), -EBADF), "[42] close(fd=5) = -EBADF");
  EXPECT_EQ(FormatLogLine(1, "x()", -EMFILE, "injected"), "[1] x() = -EMFILE (injected)");
}

TEST(CallLog, WritesEachLineToTheFile) {
  const std::string path = ::testing::TempDir() + "/exec_call_log_test.txt";
  {
    CallLog log;
    ASSERT_EQ(log.Open(path), 0);
    log.Write(7, DescribeIoctl(19712, PERF_EVENT_IOC_ENABLE, 0), 0);
    log.Write(7, DescribeClose(19712), 0, "then native");
  }
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_EQ(s.str(),
            "[7] " + DescribeIoctl(19712, PERF_EVENT_IOC_ENABLE, 0) + " = 0\n[7] close(fd=19712) = 0 (then native)\n");
  CallLog bad;
  EXPECT_EQ(bad.Open("/nonexistent-dir/x"), ENOENT);
}

}  // namespace
}  // namespace perftest::exec
