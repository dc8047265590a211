// Measuring one event over one workload, for the suites that count
// (tracepoint, breakpoint, multiplex, rdpmc, counting, sampling).
//
//   Result<uint64_t> n = MeasureCount(backend, ev, Workload::Syscalls(10));
//   // ev enabled, the workload run, ev disabled, the counter read.
#pragma once

#include <sys/resource.h>
#include <time.h>

#include <cstdint>

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

// The CPU time this thread has received, in ns (CLOCK_THREAD_CPUTIME_ID:
// the scheduler's sum_exec_runtime). On a VM it leaves out time the
// hypervisor stole (paravirt steal accounting), which cpu-clock and
// task-clock count: their count minus this, over a window, is what the
// guest lost to steal there.
inline uint64_t ThreadCpuNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// This thread's context switches so far: getrusage(RUSAGE_THREAD) ru_nvcsw
// (voluntary: it slept or blocked) and ru_nivcsw (involuntary: preempted),
// the kernel's task->nvcsw and task->nivcsw (also the voluntary_ctxt_switches
// and nonvoluntary_ctxt_switches lines of /proc/thread-self/status). The one
// way the suites count them. -1 each if getrusage fails.
struct ContextSwitchCounts {
  long voluntary = -1;
  long involuntary = -1;
};
inline ContextSwitchCounts ThreadContextSwitchCounts() {
  rusage ru{};
  if (::getrusage(RUSAGE_THREAD, &ru) != 0) return {};
  return {ru.ru_nvcsw, ru.ru_nivcsw};
}

// Voluntary plus involuntary context switches of this thread so far; -1 if unavailable.
inline long ThreadContextSwitches() {
  const ContextSwitchCounts c = ThreadContextSwitchCounts();
  return c.voluntary < 0 ? -1 : c.voluntary + c.involuntary;
}

}  // namespace perftest
