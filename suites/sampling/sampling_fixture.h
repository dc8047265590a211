// The sampling suite's fixture, shared by its files (one binary, suite_sampling):
// Sampling (open, map, enable/run/disable, drain), Capture, Faults(), the
// x86_64 sample_regs_user mask and MedianSampleGap().
//
//   PERFTEST_CASE(Sampling, Name, "sampling.id", "spec") {
//     Capture c;
//     ASSERT_NO_FATAL_FAILURE(RunFaults(PERF_SAMPLE_IP, &c));
//   }
//
// The files, by concept: sampling_period_test.cc (period and frequency mode),
// sampling_fields_test.cc (the layout of every PERF_RECORD_SAMPLE field,
// sample_id_all), sampling_callchain_test.cc (callchains, sample_max_stack),
// sampling_throttle_test.cc (max_sample_rate, THROTTLE/UNTHROTTLE),
// sampling_pmu_test.cc (precise_ip, branch stacks: the PMU's checks).
//
// Software events (page-faults, context-switches, cpu-clock, task-clock) and
// tracepoints sample for real on any kernel with perf events; branch stacks and
// precise_ip limits need a hardware PMU and skip where PERF_TYPE_HARDWARE is
// ENOENT (they run on the mock's x86_64-intel profile). Every sample is parsed
// with harness/records.h ParseSample(), which rejects a record whose size is
// not exactly what sample_type/read_format/the register masks call for.
// References: <linux/perf_event.h> enum perf_event_sample_format and
// PERF_RECORD_SAMPLE; kernel/events/core.c perf_prepare_sample(),
// perf_output_sample(), perf_swevent_event(), perf_swevent_hrtimer(),
// perf_swevent_init_hrtimer(), __perf_event_account_interrupt(),
// perf_adjust_period(); kernel/events/callchain.c get_perf_callchain().
#pragma once

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <optional>
#include <set>

#include "harness/attr.h"
#include "harness/event.h"
#include "harness/records.h"
#include "harness/ring_buffer.h"
#include "harness/syscall_matchers.h"
#include "suites/common/arch.h"
#include "suites/common/attrs.h"
#include "suites/common/hardware.h"
#include "suites/common/measure.h"
#include "suites/common/records_util.h"
#include "suites/common/suite.h"

// A named namespace, not an anonymous one: GoogleTest requires every case of
// the Sampling test suite to use the same fixture type, across the files.
namespace perftest::sampling_test {

// x86_64 perf_regs: AX..IP (PERF_REG_X86_AX = 0 .. PERF_REG_X86_IP = 8).
constexpr uint64_t kRegsMask = 0x1ff;
constexpr int kRegIp = 8;
constexpr int kRegSp = 7;

// A page-faults sampler of this task, user faults only.
inline perf_event_attr Faults(uint64_t sample_type, uint64_t period = 1) {
  return SoftwareSamplerAttr(PERF_COUNT_SW_PAGE_FAULTS, period, sample_type);
}

// What one enable / workload / disable round left in an event's buffer.
struct Capture {
  std::vector<ParsedRecord> records;
  std::vector<const SampleRecord*> samples;
  uint64_t count = 0;  // the event's value afterwards
  uint64_t id = 0;     // PERF_EVENT_IOC_ID
  WorkloadResult work;
};

class Sampling : public SuiteTest {
 protected:
  size_t page() { return backend().Machine().page_size; }
  bool X86() { return backend().Machine().arch == "x86_64"; }

  // Opens `attr`, maps `pages` data pages, runs `w` between enable and
  // disable, reads the count and drains the buffer into `out`.
  void Run(const perf_event_attr& attr, const Workload& w, Capture* out, size_t pages = 64) {
    ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), attr));
    ASSERT_OK_AND_ASSIGN(out->id, ev.Id());
    ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), pages));
    ASSERT_OK(ev.Enable());
    ASSERT_OK_AND_ASSIGN(out->work, backend().RunWorkload(w));
    ASSERT_OK(ev.Disable());
    ASSERT_OK_AND_ASSIGN(out->count, ev.ReadValue());
    ASSERT_OK_AND_ASSIGN(out->records, DrainRecords(rb, SampleLayout::FromAttr(attr), /*consume=*/true));
    out->samples = SamplesOf(out->records);
  }

  // Page faults with every sample carrying `sample_type`: at least one sample.
  void RunFaults(uint64_t sample_type, Capture* out, uint64_t pages = 16) {
    ASSERT_NO_FATAL_FAILURE(Run(Faults(sample_type), Workload::TouchPages(pages), out));
    ASSERT_GE(out->samples.size(), pages) << "one sample per fault at sample_period 1";
  }

  // cpu-clock or task-clock in frequency mode `freq` over a spin.
  void ClockFrequency(uint64_t config, uint64_t freq);
};

// The median of the gaps between consecutive samples' PERF_SAMPLE_TIME, ns
// (0 with fewer than two samples): the period a sampling timer really ran
// at, whatever a few long gaps (a stalled vCPU, a throttled tick, a
// switch-out) did.
inline uint64_t MedianSampleGap(const std::vector<const SampleRecord*>& samples) {
  std::vector<uint64_t> gaps;
  for (size_t i = 1; i < samples.size(); ++i) gaps.push_back(*samples[i]->time - *samples[i - 1]->time);
  if (gaps.empty()) return 0;
  std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
  return gaps[gaps.size() / 2];
}

}  // namespace perftest::sampling_test
