// Measuring one event over one workload, for the suites that count
// (tracepoint, breakpoint, multiplex, rdpmc).
//
//   Result<uint64_t> n = MeasureCount(backend, ev, Workload::Syscalls(10));
//   // ev enabled, the workload run, ev disabled, the counter read.
#pragma once

#include "harness/backend.h"
#include "harness/event.h"
#include "harness/result.h"
#include "harness/workload.h"

namespace perftest {

// PERF_EVENT_IOC_ENABLE, RunWorkload(w), PERF_EVENT_IOC_DISABLE, read(2).
// Errors: the first failing call's errno (the workload's comes before the
// disable's).
inline Result<ReadValues> MeasureValues(Backend& backend, Event& ev, const Workload& w, size_t nr_counters = 1) {
  Result<void> e = ev.Enable();
  if (!e.ok()) return Result<ReadValues>::FailureFrom(e);
  Result<WorkloadResult> r = backend.RunWorkload(w);
  Result<void> d = ev.Disable();
  if (!r.ok()) return Result<ReadValues>::FailureFrom(r);
  if (!d.ok()) return Result<ReadValues>::FailureFrom(d);
  return ev.Read(nr_counters);
}

// The first counter of MeasureValues().
inline Result<uint64_t> MeasureCount(Backend& backend, Event& ev, const Workload& w) {
  Result<ReadValues> v = MeasureValues(backend, ev, w);
  if (!v.ok()) return Result<uint64_t>::FailureFrom(v);
  return Result<uint64_t>::Ok(v->counters[0].value);
}

}  // namespace perftest
