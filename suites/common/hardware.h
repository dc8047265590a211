// Whether this machine has a hardware counter, for suites whose cases need
// one (multiplex, rdpmc): they run on a PMU (or the mock's x86_64-intel
// profile) and skip with the true reason elsewhere.
//
//   if (!HaveHardware(backend(), attr, "no hardware PMU")) GTEST_SKIP();
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <optional>
#include <string_view>

#include "harness/backend.h"
#include "suites/common/suite.h"

namespace perftest {

// Opens (and closes) `probe`, a hardware event for this task. true when it
// opens. Otherwise records the skip (RecordSkip): kUnsupported "<what>:
// PERF_TYPE_HARDWARE returns ENOENT" for a missing PMU, kPermission for
// EACCES/EPERM; any other errno is a test failure. Returns false then.
inline bool HaveHardware(Backend& backend, perf_event_attr probe, std::string_view what) {
  Result<int> fd = backend.PerfEventOpen(&probe, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd.ok()) {
    (void)backend.Close(*fd);
    return true;
  }
  const std::optional<SkipClass> c = UnavailableClass(fd.error());
  if (!c) {
    ADD_FAILURE() << fd.ToString();
    return false;
  }
  RecordSkip(*c, *c == SkipClass::kUnsupported
                     ? fmt::format("{}: PERF_TYPE_HARDWARE returns {}", what, ErrnoName(fd.error()))
                     : fmt::format("{}: PERF_TYPE_HARDWARE returns {}; needs CAP_PERFMON or a lower "
                                   "perf_event_paranoid",
                                   what, ErrnoName(fd.error())));
  return false;
}

}  // namespace perftest
