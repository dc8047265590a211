#include "tools/exec/fault_injection.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace perftest::exec {
namespace {

TEST(ParseInjectRule, CallErrnoAndOrdinal) {
  Result<InjectRule> r = ParseInjectRule("perf_event_open:EMFILE@3");
  ASSERT_TRUE(r.ok()) << r.call();
  EXPECT_EQ(r->call, ServedCall::kPerfEventOpen);
  EXPECT_EQ(r->err, EMFILE);
  EXPECT_EQ(r->nth, 3u);
  Result<InjectRule> e = ParseInjectRule("read:4");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->call, ServedCall::kRead);
  EXPECT_EQ(e->err, EINTR);
  EXPECT_EQ(e->nth, 0u);
}

TEST(ParseInjectRule, RejectsWhatIsWrongAndSaysWhich) {
  Result<InjectRule> a = ParseInjectRule("open:EPERM");
  EXPECT_EQ(a.error(), EINVAL);
  EXPECT_NE(a.call().find("unknown call 'open'"), std::string::npos) << a.call();
  Result<InjectRule> b = ParseInjectRule("read:EWHAT");
  EXPECT_NE(b.call().find("unknown errno 'EWHAT'"), std::string::npos) << b.call();
  EXPECT_EQ(ParseInjectRule("read:EINTR@0").error(), EINVAL);
  EXPECT_EQ(ParseInjectRule("read").error(), EINVAL);
}

TEST(FaultInjector, FailsTheNthCallOnlyOrEvery) {
  FaultInjector f({{ServedCall::kPerfEventOpen, EMFILE, 2}, {ServedCall::kMmap, ENOMEM, 0}});
  EXPECT_EQ(f.Next(ServedCall::kPerfEventOpen), 0);
  EXPECT_EQ(f.Next(ServedCall::kRead), 0);
  EXPECT_EQ(f.Next(ServedCall::kPerfEventOpen), EMFILE);
  EXPECT_EQ(f.Next(ServedCall::kPerfEventOpen), 0);
  EXPECT_EQ(f.Next(ServedCall::kMmap), ENOMEM);
  EXPECT_EQ(f.Next(ServedCall::kMmap), ENOMEM);
}

TEST(ErrnoName, NamesOrNumbers) {
  EXPECT_EQ(ErrnoName(EMFILE), "EMFILE");
  EXPECT_EQ(ErrnoName(4000), "4000");
}

}  // namespace
}  // namespace perftest::exec
