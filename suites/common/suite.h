// What every conformance suite binary shares: the backend chosen at run time,
// case metadata (feature id + spec reference), and skips with a class.
//
//   class RingBuffer : public perftest::SuiteTest {};
//   PERFTEST_CASE(RingBuffer, MmapSizeRule, "ringbuffer.mmap_size_rule",
//                 "perf_event_open(2) 'MMAP layout'; kernel/events/core.c perf_mmap()") {
//     perftest::Backend& b = backend();
//     ...
//     PERFTEST_SKIP(perftest::SkipClass::kUnsupported, "no hardware PMU: ...");
//   }
//
// The binary takes --backend=kernel|mock and --profile=NAME|PATH (mock), and
// --perftest_list / --perftest_probe for the runner (runner/README.md).
// Each case's feature id and spec are recorded as GoogleTest properties
// `feature` and `spec`; a skip records `skip_class` and `skip_reason`.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/backend.h"
#include "harness/event.h"

namespace perftest {

// DESIGN.md "Report": skip_class values.
enum class SkipClass { kUnsupported, kPermission, kSandbox, kKernelVersion };
std::string_view SkipClassName(SkipClass c);

struct CaseInfo {
  std::string test_suite;  // GoogleTest suite (the fixture class)
  std::string test_name;
  std::string feature;     // stable id, "suite.behaviour"
  std::string spec;        // reference document section, UAPI field, or kernel function
};

// Registers metadata at static-initialization time; used by PERFTEST_CASE.
struct CaseRegistration {
  CaseRegistration(const char* test_suite, const char* test_name, const char* feature, const char* spec);
};
const std::vector<CaseInfo>& RegisteredCases();

// The backend this run uses (set up by the suite main before any test runs).
Backend& TestBackend();

// Records skip_class / skip_reason properties; PERFTEST_SKIP then skips.
void RecordSkip(SkipClass c, const std::string& reason);

// Records that the kernel's behaviour, which the case checks, differs from a
// reference document (DESIGN.md: "the case follows the kernel and records the
// documented-versus-actual divergence"): GoogleTest properties
// `divergence_id` (stable, e.g. "ioctl.refresh_zero"), `divergence_documented`
// (what the document says, with its reference) and `divergence_actual` (what
// the kernel does, with the kernel function). One per case.
void RecordDivergence(const std::string& id, const std::string& documented, const std::string& actual);

// Whether `err` from an open (or a tracefs lookup) means the thing asked for
// is not there (ENOENT, ENODEV, EOPNOTSUPP, ENXIO, ENOSYS: kUnsupported) or not
// allowed (EACCES, EPERM: kPermission) — a precondition a case may skip on.
// nullopt for any other errno, which is a failure, never a skip.
std::optional<SkipClass> UnavailableClass(int err);

// "WHAT: ERROR", the reason PERFTEST_ASSIGN_OR_SKIP gives. Out of line: GCC
// 12's -Warray-bounds misfires on std::string's operator+ inlined into a case
// (GCC bug 105329).
std::string UnavailableReason(std::string_view what, const std::string& error);

// Base fixture: records the case's properties; on the kernel backend, skips
// every case with its true reason when perf_event_open is unavailable here.
class SuiteTest : public ::testing::Test {
 protected:
  void SetUp() override;
  Backend& backend() { return TestBackend(); }
  // Whether counts are exact (the mock's model: DESIGN.md "Under the mock,
  // counts are exact and deterministic; under the kernel, suites assert bounds").
  bool exact() { return backend().kind() == "mock"; }

  // Page faults the harness itself may add on the kernel while a workload
  // runs (its own stack and heap pages): the slack of ExpectFaults.
  static constexpr uint64_t kFaultSlack = 32;
  // Checks a page-fault count against a workload of `pages` touches: exact
  // on the mock; on the kernel at least `pages` and at most kFaultSlack more.
  void ExpectFaults(uint64_t count, uint64_t pages, const std::string& what);
  // The event's counter (Event::ReadValue); records a failure and returns
  // ~0 when the read fails.
  uint64_t Value(Event& ev);
  // Runs Workload::TouchPages(pages) in the current task; fails the case if it cannot.
  void Touch(uint64_t pages);
};

}  // namespace perftest

#define PERFTEST_CASE(test_suite, test_name, feature, spec)                                       \
  static const ::perftest::CaseRegistration PERFTEST_CONCAT(perftest_case_, __LINE__)(           \
      #test_suite, #test_name, feature, spec);                                                    \
  TEST_F(test_suite, test_name)

#define PERFTEST_SKIP(skip_class, reason)                                                         \
  do {                                                                                            \
    const std::string perftest_reason = (reason);                                                 \
    ::perftest::RecordSkip(skip_class, perftest_reason);                                          \
    GTEST_SKIP() << "[" << ::perftest::SkipClassName(skip_class) << "] " << perftest_reason;     \
  } while (0)

// In a SuiteTest (SetUp or a case): a permission skip unless a child can take
// `creds` (Backend::RunInChild(): another uid with chosen capabilities needs
// root, CAP_SETUID and CAP_SETGID); any other failure fails the test.
#define PERFTEST_REQUIRE_CHILD_CREDENTIALS(creds)                                                     \
  do {                                                                                                \
    ::perftest::Result<int> perftest_child =                                                          \
        backend().RunInChild((creds), [](::perftest::Backend&) { return 0; });                        \
    if (!perftest_child.ok() && (perftest_child.error() == EPERM || perftest_child.error() == EACCES)) { \
      PERFTEST_SKIP(::perftest::SkipClass::kPermission,                                               \
                    "a child cannot take another uid with chosen capabilities (needs root: CAP_SETUID, " \
                    "CAP_SETGID and the capabilities it keeps): " + perftest_child.ToString());       \
    }                                                                                                 \
    ASSERT_OK(perftest_child);                                                                        \
  } while (0)

// Evaluates `expr` (a Result<T>): on an errno UnavailableClass() accepts,
// skips the case with that class and "`what`: <the call> = -E..." as the
// reason; on any other failure ends the test; else move-assigns to `lhs`.
//   PERFTEST_ASSIGN_OR_SKIP(Event bp, Event::Open(backend(), attr), "no breakpoint PMU");
#define PERFTEST_ASSIGN_OR_SKIP(lhs, expr, what) \
  PERFTEST_ASSIGN_OR_SKIP_IMPL(PERFTEST_CONCAT(perftest_skip_result_, __LINE__), lhs, expr, what)
#define PERFTEST_ASSIGN_OR_SKIP_IMPL(tmp, lhs, expr, what)                                   \
  auto tmp = (expr);                                                                        \
  if (!tmp.ok()) {                                                                          \
    if (std::optional<::perftest::SkipClass> perftest_class = ::perftest::UnavailableClass(tmp.error())) { \
      PERFTEST_SKIP(*perftest_class, ::perftest::UnavailableReason(what, tmp.ToString()));  \
    }                                                                                       \
  }                                                                                         \
  ASSERT_TRUE(tmp.ok()) << tmp.ToString();                                                  \
  lhs = std::move(tmp).value()

#ifndef PERFTEST_CONCAT
#define PERFTEST_CONCAT_INNER(a, b) a##b
#define PERFTEST_CONCAT(a, b) PERFTEST_CONCAT_INNER(a, b)
#endif
