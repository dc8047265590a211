// GoogleMock matchers for Result<T> (STYLE.md 4): they print the call as it
// was made and the errno by name when they fail.
//
//   EXPECT_THAT(backend.Mmap(3 * page, PROT_READ, MAP_SHARED, fd, 0), FailsWithErrno(EINVAL));
//   EXPECT_THAT(event.Id(), SucceedsWith(Gt(0u)));
//   ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend, attr));
#pragma once

#include <gmock/gmock.h>

#include <ostream>
#include <utility>

#include "harness/result.h"

namespace perftest {

// How gtest prints a Result<T> in "Actual:" lines: its ToString(), not its bytes.
template <typename T>
void PrintTo(const Result<T>& r, std::ostream* os) {
  *os << r.ToString();
}

MATCHER(Succeeds, "succeeds") {
  *result_listener << arg.ToString();
  return arg.ok();
}

MATCHER_P(FailsWithErrno, err, "fails with " + ::perftest::ErrnoName(err)) {
  *result_listener << arg.ToString();
  return !arg.ok() && arg.error() == err;
}

MATCHER_P(SucceedsWith, value_matcher,
          "succeeds with a value that " +
              ::testing::DescribeMatcher<decltype(*std::declval<const arg_type&>())>(value_matcher)) {
  *result_listener << arg.ToString();
  if (!arg.ok()) return false;
  return ::testing::ExplainMatchResult(value_matcher, *arg, result_listener);
}

}  // namespace perftest

#define PERFTEST_CONCAT_INNER(a, b) a##b
#define PERFTEST_CONCAT(a, b) PERFTEST_CONCAT_INNER(a, b)

// Evaluates `expr` (a Result<T>); on failure ends the test with the call and
// errno, else move-assigns the value to `lhs` (which may be a declaration).
#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  ASSERT_OK_AND_ASSIGN_IMPL(PERFTEST_CONCAT(perftest_result_, __LINE__), lhs, expr)
#define ASSERT_OK_AND_ASSIGN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  ASSERT_TRUE(tmp.ok()) << tmp.ToString();        \
  lhs = std::move(tmp).value()

// Ends the test unless `expr` (a Result<T>) succeeded.
#define ASSERT_OK(expr)                                                   \
  do {                                                                    \
    auto&& perftest_r = (expr);                                           \
    ASSERT_TRUE(perftest_r.ok()) << perftest_r.ToString();                \
  } while (0)
#define EXPECT_OK(expr)                                                   \
  do {                                                                    \
    auto&& perftest_r = (expr);                                           \
    EXPECT_TRUE(perftest_r.ok()) << perftest_r.ToString();                \
  } while (0)
