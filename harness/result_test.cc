// Unit tests of Result<T> (harness/result.h) and the syscall matchers
// (harness/syscall_matchers.h): the forms failure messages take, STYLE.md 3-4.
#include "harness/result.h"

#include <gmock/gmock.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <memory>
#include <string>
#include <vector>

#include "harness/syscall_matchers.h"

namespace perftest {
namespace {

using ::testing::Eq;
using ::testing::Gt;
using ::testing::HasSubstr;
using ::testing::Not;

// Runs `m` on `value`; returns {matched, explanation}.
template <typename T, typename M>
std::pair<bool, std::string> Explain(const M& m, const T& value) {
  ::testing::Matcher<const T&> matcher = m;
  ::testing::StringMatchResultListener listener;
  const bool matched = matcher.MatchAndExplain(value, &listener);
  return {matched, listener.str()};
}

template <typename T, typename M>
std::string Describe(const M& m) {
  return ::testing::DescribeMatcher<const T&>(m);
}

TEST(Result, OkCarriesValueAndCall) {
  Result<int> r = Result<int>::Ok(5, "perf_event_open(type=1)");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.error(), 0);
  EXPECT_EQ(r.value(), 5);
  EXPECT_EQ(*r, 5);
  EXPECT_EQ(r.call(), "perf_event_open(type=1)");
}

TEST(Result, FailureCarriesErrnoAndCall) {
  Result<int> r = Result<int>::Failure(ENOENT, "perf_event_open(type=4)");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error(), ENOENT);
  EXPECT_EQ(r.call(), "perf_event_open(type=4)");
}

TEST(Result, VoidOk) {
  Result<void> r = Result<void>::Ok();
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.error(), 0);
  EXPECT_EQ(r.ToString(), "call = 0");
}

TEST(Result, MoveOnlyValue) {
  Result<std::unique_ptr<int>> r = Result<std::unique_ptr<int>>::Ok(std::make_unique<int>(42));
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 42);
}

TEST(Result, ArrowReachesMembers) {
  Result<std::vector<int>> r = Result<std::vector<int>>::Ok(std::vector<int>{1, 2, 3});
  EXPECT_EQ(r->size(), 3u);
  r->push_back(4);
  EXPECT_EQ(r->back(), 4);
}

TEST(Result, ToStringOfIntegerSuccess) {
  EXPECT_EQ(Result<int>::Ok(5).ToString(), "call = 5");
  EXPECT_EQ(Result<int>::Ok(-3, "x()").ToString(), "x() = -3");
  EXPECT_EQ(Result<size_t>::Ok(size_t{24}, "read(fd=5, len=24)").ToString(), "read(fd=5, len=24) = 24");
  EXPECT_EQ(Result<uint64_t>::Ok(uint64_t{18446744073709551615u}, "id()").ToString(), "id() = 18446744073709551615");
}

TEST(Result, ToStringOfPointerSuccessIsHex) {
  int x = 0;
  const std::string s = Result<void*>::Ok(static_cast<void*>(&x), "mmap(NULL, 8192)").ToString();
  EXPECT_THAT(s, testing::StartsWith("mmap(NULL, 8192) = 0x"));
}

TEST(Result, ToStringOfOtherValueSaysOk) {
  EXPECT_EQ(Result<std::string>::Ok(std::string("abc"), "f()").ToString(), "f() = ok");
}

TEST(Result, ToStringOfFailureNamesErrno) {
  EXPECT_EQ(Result<int>::Failure(EINVAL).ToString(), "call = -EINVAL (Invalid argument)");
  EXPECT_EQ(Result<int>::Failure(ENOENT, "perf_event_open(type=1, config=0x0, pid=0, cpu=-1, group_fd=-1, flags=0x8)")
                .ToString(),
            "perf_event_open(type=1, config=0x0, pid=0, cpu=-1, group_fd=-1, flags=0x8) = -ENOENT (No such file or "
            "directory)");
  EXPECT_EQ(Result<void>::Failure(EBADF, "close(fd=9)").ToString(), "close(fd=9) = -EBADF (Bad file descriptor)");
}

TEST(Result, ErrnoName) {
  EXPECT_EQ(ErrnoName(EINVAL), "EINVAL");
  EXPECT_EQ(ErrnoName(EPERM), "EPERM");
  EXPECT_EQ(ErrnoName(EACCES), "EACCES");
  EXPECT_EQ(ErrnoName(EMSGSIZE), "EMSGSIZE");
  EXPECT_EQ(ErrnoName(EBADMSG), "EBADMSG");
  EXPECT_EQ(ErrnoName(E2BIG), "E2BIG");
}

// CallDescription::Deferred(): arguments kept inline (small ones, and up to
// perf_event_open's attr) or on the heap (larger), formatted once on first
// use; copies and moves keep the arguments or the text made so far.
struct SmallArgs {
  int fd;
  size_t len;
};
std::string FormatSmall(const SmallArgs& a) { return "read(fd=" + std::to_string(a.fd) + ", len=" + std::to_string(a.len) + ")"; }
struct MediumArgs {
  uint64_t words[18];  // 144 bytes: inline, past the small-copy size
};
std::string FormatMedium(const MediumArgs& a) { return "medium(" + std::to_string(a.words[0] + a.words[17]) + ")"; }
struct LargeArgs {
  uint64_t words[40];  // 320 bytes: on the heap
};
std::string FormatLarge(const LargeArgs& a) { return "large(" + std::to_string(a.words[0] + a.words[39]) + ")"; }

template <typename D>
void ExpectCopiesAndMovesKeep(const D& d, const std::string& text) {
  CallDescription copy(d);
  CallDescription assigned;
  assigned = d;
  CallDescription moved(std::move(copy));
  CallDescription move_assigned("placeholder");
  move_assigned = std::move(assigned);
  EXPECT_EQ(moved.str(), text);
  EXPECT_EQ(move_assigned.str(), text);
  EXPECT_EQ(d.str(), text);
  CallDescription after_text(d);  // copies the text made by d.str()
  EXPECT_EQ(after_text.str(), text);
}

TEST(CallDescription, DeferredSmallMediumAndLargeArgs) {
  ExpectCopiesAndMovesKeep(CallDescription::Deferred<FormatSmall>(SmallArgs{5, 8}), "read(fd=5, len=8)");
  MediumArgs m{};
  m.words[0] = 40;
  m.words[17] = 2;
  ExpectCopiesAndMovesKeep(CallDescription::Deferred<FormatMedium>(m), "medium(42)");
  LargeArgs l{};
  l.words[0] = 7;
  l.words[39] = 3;
  ExpectCopiesAndMovesKeep(CallDescription::Deferred<FormatLarge>(l), "large(10)");
}

TEST(CallDescription, TextAndEmpty) {
  EXPECT_EQ(CallDescription().str(), "");
  ExpectCopiesAndMovesKeep(CallDescription("close(fd=3)"), "close(fd=3)");
  ExpectCopiesAndMovesKeep(CallDescription(std::string("close(fd=4)")), "close(fd=4)");
}

TEST(CallDescription, ResultKeepsDeferredCall) {
  Result<int> r = Result<int>::Ok(3, CallDescription::Deferred<FormatSmall>(SmallArgs{3, 16}));
  Result<int> copy = r;
  EXPECT_EQ(copy.ToString(), "read(fd=3, len=16) = 3");
  EXPECT_EQ(r.call(), "read(fd=3, len=16)");
}

TEST(Result, ErrnoNameOfUnknownValue) {
  EXPECT_EQ(ErrnoName(99999), "E<unknown 99999>");
  EXPECT_EQ(ErrnoName(-1), "E<unknown -1>");
}

TEST(Result, FailureFromKeepsErrnoAndCall) {
  Result<int> open = Result<int>::Failure(EACCES, "perf_event_open(type=0)");
  Result<std::string> r = Result<std::string>::FailureFrom(open);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error(), EACCES);
  EXPECT_EQ(r.call(), "perf_event_open(type=0)");
  Result<void> v = Result<void>::FailureFrom(open);
  EXPECT_EQ(v.ToString(), "perf_event_open(type=0) = -EACCES (Permission denied)");
}

TEST(ResultDeathTest, ValueOfFailureAbortsNamingTheCall) {
  Result<int> r = Result<int>::Failure(EBADF, "read(fd=7, len=8)");
  EXPECT_DEATH((void)r.value(), "value\\(\\) of a failed result: read\\(fd=7, len=8\\) = -EBADF");
}

// --- matchers ---

TEST(SyscallMatchers, SucceedsMatchesOk) {
  auto [matched, why] = Explain<Result<int>>(Succeeds(), Result<int>::Ok(3, "open()"));
  EXPECT_TRUE(matched);
  EXPECT_EQ(why, "open() = 3");
}

TEST(SyscallMatchers, SucceedsRejectsFailureNamingErrno) {
  auto [matched, why] = Explain<Result<int>>(Succeeds(), Result<int>::Failure(ENOENT, "open()"));
  EXPECT_FALSE(matched);
  EXPECT_EQ(why, "open() = -ENOENT (No such file or directory)");
  EXPECT_EQ((Describe<Result<int>>(Succeeds())), "succeeds");
}

TEST(SyscallMatchers, FailsWithErrnoMatchesThatErrnoOnly) {
  EXPECT_TRUE((Explain<Result<int>>(FailsWithErrno(EINVAL), Result<int>::Failure(EINVAL)).first));
  EXPECT_FALSE((Explain<Result<int>>(FailsWithErrno(EINVAL), Result<int>::Failure(EPERM)).first));
  EXPECT_FALSE((Explain<Result<int>>(FailsWithErrno(EINVAL), Result<int>::Ok(0)).first));
}

TEST(SyscallMatchers, FailsWithErrnoExplainsWithErrnoNames) {
  EXPECT_EQ((Describe<Result<int>>(FailsWithErrno(EINVAL))), "fails with EINVAL");
  auto [matched, why] = Explain<Result<int>>(FailsWithErrno(EINVAL), Result<int>::Failure(EACCES, "mmap()"));
  EXPECT_FALSE(matched);
  EXPECT_EQ(why, "mmap() = -EACCES (Permission denied)");
  auto [matched_ok, why_ok] = Explain<Result<int>>(FailsWithErrno(EINVAL), Result<int>::Ok(4, "mmap()"));
  EXPECT_FALSE(matched_ok);
  EXPECT_EQ(why_ok, "mmap() = 4");
}

TEST(SyscallMatchers, SucceedsWithChecksTheValue) {
  EXPECT_TRUE((Explain<Result<int>>(SucceedsWith(Gt(3)), Result<int>::Ok(4)).first));
  EXPECT_FALSE((Explain<Result<int>>(SucceedsWith(Gt(3)), Result<int>::Ok(3)).first));
  EXPECT_FALSE((Explain<Result<int>>(SucceedsWith(Gt(3)), Result<int>::Failure(EINTR)).first));
  EXPECT_EQ((Describe<Result<int>>(SucceedsWith(Gt(3)))), "succeeds with a value that is > 3");
  EXPECT_EQ((Describe<Result<uint64_t>>(SucceedsWith(Eq(7u)))), "succeeds with a value that is equal to 7");
}

TEST(SyscallMatchers, SucceedsWithExplainsAFailureByErrno) {
  auto [matched, why] = Explain<Result<int>>(SucceedsWith(Gt(3)), Result<int>::Failure(EAGAIN, "read(fd=3, len=8)"));
  EXPECT_FALSE(matched);
  EXPECT_EQ(why, "read(fd=3, len=8) = -EAGAIN (Resource temporarily unavailable)");
}

TEST(SyscallMatchers, GtestPrintsAResultAsItsCall) {
  EXPECT_EQ(::testing::PrintToString(Result<int>::Failure(EAGAIN, "read(fd=3, len=8)")),
            "read(fd=3, len=8) = -EAGAIN (Resource temporarily unavailable)");
  EXPECT_EQ(::testing::PrintToString(Result<uint64_t>::Ok(1, "read(fd=3, len=8)")), "read(fd=3, len=8) = 1");
}

TEST(SyscallMatchers, NegatedMatchersWork) {
  EXPECT_THAT(Result<int>::Failure(EPERM), Not(Succeeds()));
  EXPECT_THAT(Result<int>::Failure(EPERM), Not(FailsWithErrno(EACCES)));
  EXPECT_THAT(Result<int>::Ok(1), Not(SucceedsWith(Gt(1))));
}

TEST(SyscallMatchers, ExpectThatFailureMessageNamesExpectedAndActualErrno) {
  EXPECT_NONFATAL_FAILURE(
      EXPECT_THAT(Result<int>::Failure(EPERM, "perf_event_open(type=0)"), FailsWithErrno(EACCES)),
      "fails with EACCES");
  EXPECT_NONFATAL_FAILURE(
      EXPECT_THAT(Result<int>::Failure(EPERM, "perf_event_open(type=0)"), FailsWithErrno(EACCES)),
      "perf_event_open(type=0) = -EPERM (Operation not permitted)");
  EXPECT_NONFATAL_FAILURE(EXPECT_THAT(Result<int>::Failure(ENODEV, "open()"), Succeeds()),
                          "open() = -ENODEV");
  EXPECT_NONFATAL_FAILURE(EXPECT_THAT(Result<int>::Ok(2, "open()"), SucceedsWith(Gt(5))), "open() = 2");
}

TEST(SyscallMatchers, ExpectOkReportsTheCall) {
  EXPECT_OK(Result<int>::Ok(1));
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(Result<int>::Failure(ENOSPC, "write()")), "write() = -ENOSPC");
}

void AssertOkOnFailure() { ASSERT_OK(Result<void>::Failure(EIO, "ioctl(fd=3)")); }

void AssertOkAndAssignOnFailure() {
  ASSERT_OK_AND_ASSIGN(int v, Result<int>::Failure(EBUSY, "ioctl(fd=4)"));
  (void)v;
}

TEST(SyscallMatchers, AssertOkIsFatalAndReportsTheCall) {
  EXPECT_FATAL_FAILURE(AssertOkOnFailure(), "ioctl(fd=3) = -EIO");
  EXPECT_FATAL_FAILURE(AssertOkAndAssignOnFailure(), "ioctl(fd=4) = -EBUSY");
}

TEST(SyscallMatchers, AssertOkAndAssignMovesTheValue) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<int> p, Result<std::unique_ptr<int>>::Ok(std::make_unique<int>(9)));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 9);
  int existing = 0;
  ASSERT_OK_AND_ASSIGN(existing, Result<int>::Ok(11));
  EXPECT_EQ(existing, 11);
}

}  // namespace
}  // namespace perftest
