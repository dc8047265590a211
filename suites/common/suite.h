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

#include <string>
#include <string_view>
#include <vector>

#include "harness/backend.h"

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

// Base fixture: records the case's properties; on the kernel backend, skips
// every case with its true reason when perf_event_open is unavailable here.
class SuiteTest : public ::testing::Test {
 protected:
  void SetUp() override;
  Backend& backend() { return TestBackend(); }
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

#ifndef PERFTEST_CONCAT
#define PERFTEST_CONCAT_INNER(a, b) a##b
#define PERFTEST_CONCAT(a, b) PERFTEST_CONCAT_INNER(a, b)
#endif
