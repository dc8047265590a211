// Whether the machine can count the hardware events the suites use, and the
// skip class and reason when it cannot — shared by the suites' hardware cases.
//
//   if (auto why = NoHardwareFor(backend(), Hw(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES)))
//     PERFTEST_SKIP(why->first, why->second);
#pragma once

#include <linux/perf_event.h>

#include <optional>
#include <string>
#include <utility>

#include "harness/backend.h"
#include "suites/common/suite.h"

namespace perftest {

// Opens `attr` for this task (and closes it). nullopt when it opens, or when it
// fails with an errno that is no precondition (the case then fails on it).
// Otherwise:
//   kUnsupported "no hardware PMU: PERF_TYPE_HARDWARE returns ENOENT" (and the
//     other UnavailableClass() errnos);
//   kPermission  EACCES/EPERM: needs CAP_PERFMON or a lower perf_event_paranoid;
//   kUnsupported EINVAL when `attr` has exclude_* bits and the same event
//     without them opens (or is refused only for permission): the core PMU
//     cannot filter privilege levels — PERF_PMU_CAP_NO_EXCLUDE, refused in
//     kernel/events/core.c perf_try_init_event(); e.g. the RISC-V SBI PMU
//     without the Sscofpmf extension (drivers/perf/riscv_pmu_sbi.c);
//   kUnsupported EOPNOTSUPP when `attr` samples (sample_period/sample_freq)
//     and the same event without a period counts (or is refused only for
//     permission): the PMU has no overflow interrupt — PERF_PMU_CAP_NO_INTERRUPT,
//     refused in kernel/events/core.c perf_event_open() (the same RISC-V PMU).
std::optional<std::pair<SkipClass, std::string>> NoHardwareFor(Backend& backend, perf_event_attr attr);

}  // namespace perftest
