// The perf_event_attr the suites open most: a counter of this task in user
// mode only, built in one place so that every suite means the same by it.
//
//   Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS));
//   SoftwareCounterAttr(PERF_COUNT_SW_DUMMY, {.read_format = kTimes, .disabled = false});
//   SoftwareSamplerAttr(PERF_COUNT_SW_PAGE_FAULTS, /*sample_period=*/1, PERF_SAMPLE_IP | PERF_SAMPLE_ADDR);
//   CounterAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, kTimed);  // {.read_format = kTimes}
//
// Options are named (designated initializers, in the order declared), never
// positional flags: read_format, disabled and exclude_kernel are too easy to
// swap.
//
// "User mode only" is exclude_kernel = 1 and exclude_hv = 1: what an
// unprivileged task may open on itself at perf_event_paranoid 2
// (kernel/events/core.c perf_event_open() -> perf_allow_kernel(); <linux/perf_event.h>
// exclude_kernel, exclude_hv). Without privilege, exclude_kernel = 0 is EACCES
// at paranoid >= 2.
#pragma once

#include <linux/perf_event.h>

#include <cstdint>

#include "harness/attr.h"

namespace perftest {

// read_format with both times: PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING.
inline constexpr uint64_t kTimes = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;

struct CounterOptions {
  uint64_t read_format = 0;    // attr.read_format (PERF_FORMAT_* bits)
  bool disabled = true;        // attr.disabled: starts off, PERF_EVENT_IOC_ENABLE turns it on
  bool exclude_kernel = true;  // false: counts kernel mode too (needs paranoid <= 1 or CAP_PERFMON)
};

// The options of a counter that reads both times (read_format = kTimes).
inline constexpr CounterOptions kTimed{.read_format = kTimes};

// A counting event (sample_period 0) of `type`/`config` with exclude_hv = 1
// and the options above; every other field zero, size = sizeof(perf_event_attr).
inline perf_event_attr CounterAttr(uint32_t type, uint64_t config, CounterOptions o = {}) {
  perf_event_attr a = MakeAttr(type, config);
  a.read_format = o.read_format;
  a.disabled = o.disabled;
  a.exclude_kernel = o.exclude_kernel;
  a.exclude_hv = 1;
  return a;
}

// CounterAttr of PERF_TYPE_SOFTWARE: `config` is a PERF_COUNT_SW_* value.
inline perf_event_attr SoftwareCounterAttr(uint64_t config, CounterOptions o = {}) {
  return CounterAttr(PERF_TYPE_SOFTWARE, config, o);
}

// A sampling event: SoftwareCounterAttr(config, o) with attr.sample_period
// (events per sample, > 0) and attr.sample_type (PERF_SAMPLE_* bits).
inline perf_event_attr SoftwareSamplerAttr(uint64_t config, uint64_t sample_period, uint64_t sample_type,
                                           CounterOptions o = {}) {
  perf_event_attr a = SoftwareCounterAttr(config, o);
  a.sample_period = sample_period;
  a.sample_type = sample_type;
  return a;
}

}  // namespace perftest
