// Suite-side helpers for the aux and pt suites: the intel_pt PMU of the
// machine (or the skip that proves it is missing), and a PT event set up the
// way perf record sets it up (data buffer, then the AUX area).
//
//   PERFTEST_REQUIRE_INTEL_PT(pt);               // const Pmu* pt, or an unsupported skip
//   ASSERT_OK_AND_ASSIGN(PtSession s, PtSession::Open(backend(), *pt, kPtUser, 8, 16, AuxMode::kFullTrace));
#pragma once

#include <linux/perf_event.h>

#include <optional>
#include <string>
#include <vector>

#include "harness/attr.h"
#include "harness/aux_buffer.h"
#include "harness/backend.h"
#include "harness/event.h"
#include "harness/pmu.h"
#include "harness/records.h"
#include "harness/ring_buffer.h"
#include "suites/common/records_util.h"

namespace perftest {

// The skip reason when Machine().pmus (sysfs on the kernel) has no intel_pt.
inline std::string NoIntelPtReason() {
  return "no intel_pt PMU: " + std::string(kSysfsPmuRoot) + "/intel_pt does not exist (CPU or kernel without Intel PT)";
}

#define PERFTEST_REQUIRE_INTEL_PT(var)                                                   \
  const ::perftest::Pmu* var = ::perftest::FindPmu(backend().Machine().pmus, "intel_pt"); \
  if (var == nullptr) PERFTEST_SKIP(::perftest::SkipClass::kUnsupported, ::perftest::NoIntelPtReason())

// IA32_RTIT_CTL bits as pt.c's format/ names them: pt (config:0), tsc (config:10), branch (config:13).
inline constexpr uint64_t kPtConfigPtBranchTsc = (1ull << 0) | (1ull << 10) | (1ull << 13);

// An intel_pt event tracing user space of this task (intel_pt/tsc,pt,branch/u),
// disabled, with TID and TIME in every record's sample_id trailer.
inline perf_event_attr PtUserAttr(const Pmu& pt, uint64_t config = kPtConfigPtBranchTsc) {
  perf_event_attr a = MakeAttr(pt.type, config);
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  a.sample_id_all = 1;
  a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
  a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  return a;
}

// A PT event with its data buffer and AUX area mapped.
struct PtSession {
  Event event;
  RingBuffer rb;
  AuxBuffer aux;

  static Result<PtSession> Open(Backend& b, const perf_event_attr& attr, size_t data_pages, size_t aux_pages,
                                AuxMode mode, const Event* group_leader = nullptr) {
    Result<Event> ev = Event::Open(b, attr, 0, -1, group_leader);
    if (!ev.ok()) return Result<PtSession>::FailureFrom(ev);
    Result<RingBuffer> rb = RingBuffer::Map(b, ev->fd(), data_pages);
    if (!rb.ok()) return Result<PtSession>::FailureFrom(rb);
    Result<AuxBuffer> aux = AuxBuffer::Map(b, ev->fd(), *rb, aux_pages, mode);
    if (!aux.ok()) return Result<PtSession>::FailureFrom(aux);
    return Result<PtSession>::Ok(PtSession{std::move(*ev), std::move(*rb), std::move(*aux)}, "pt session");
  }

  // Drains the data buffer: the PERF_RECORD_AUX records in order (others counted in `other`).
  Result<std::vector<AuxRecord>> AuxRecords(std::vector<ParsedRecord>* all = nullptr) {
    Result<std::vector<ParsedRecord>> recs = DrainRecords(rb, SampleLayout::FromAttr(event.attr()), true);
    if (!recs.ok()) return Result<std::vector<AuxRecord>>::FailureFrom(recs);
    std::vector<AuxRecord> out;
    for (const ParsedRecord& r : *recs) {
      if (r.record.header.type != PERF_RECORD_AUX) continue;
      Result<AuxRecord> a = ParseAuxRecord(r.record);
      if (!a.ok()) return Result<std::vector<AuxRecord>>::FailureFrom(a);
      out.push_back(*a);
    }
    if (all != nullptr) *all = std::move(*recs);
    return Result<std::vector<AuxRecord>>::Ok(std::move(out), "aux records");
  }
};

}  // namespace perftest
