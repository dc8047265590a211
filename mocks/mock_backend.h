// MockBackend: the Backend seam served by a userspace model of the kernel side
// of perf_event_open(2), for a machine described by an arch profile
// (DESIGN.md "MockBackend"; the model follows kernel/events/core.c and
// kernel/events/ring_buffer.c, cited where each rule is implemented).
//
//   Result<MockProfile> p = LoadProfile("software-only");
//   std::unique_ptr<Backend> b = MakeMockBackend(std::move(*p));
//   perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
//   a.sample_period = 1;
//   Result<int> fd = b->PerfEventOpen(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
//   b->Ioctl(*fd, PERF_EVENT_IOC_ENABLE, 0);
//   b->RunWorkload(Workload::TouchPages(16));   // exactly 16 faults, 16 samples
//
// What is real: every event is a real fd (memfd_create(2), MFD_CLOEXEC iff
// PERF_FLAG_FD_CLOEXEC), so fd numbers are unique, close(2)/fcntl(2) work on
// it; the ring buffer lives in that memfd and mmap(2) returns a MAP_SHARED
// mapping of it, so readers read genuine shared memory.
//
// What is simulated: one task (pid = tid = kMockPid, comm "perftest") running
// on CPU 0, and a clock (ns, from kMockStartTimeNs) that only workloads
// advance: TouchPages costs max(spacing, 1 us) per page, Spin its duration,
// Sleep each sleep (off CPU). Everything is deterministic: the same calls on a
// fresh backend give byte-identical buffers. Nothing runs concurrently, so
// poll(2) never waits: a timeout that finds nothing ready returns 0 at once.
//
// The model (details in the .cc files):
//  - perf_event_open validation with the kernel's errno (attr_validation.h,
//    software_pmu.h), groups, SET_OUTPUT, CPU-wide and per-task events.
//  - The software PMU: cpu-clock, task-clock (ns of running time), page-faults
//    and minor-faults (1 per page touched), context-switches (1 per sleep),
//    the rest count 0; dummy counts nothing.
//  - Sampling by period and frequency (software events adapt their period per
//    perf_adjust_period(); cpu-clock/task-clock get NSEC_PER_SEC/freq), with
//    throttling at ceil(max_sample_rate / hz) samples per tick (THROTTLE and
//    UNTHROTTLE records).
//  - The ring buffer (mock_ring_buffer.h): forward and backward, overwrite,
//    LOST, wakeups and poll, PAUSE_OUTPUT.
//  - Side-band: COMM, MMAP/MMAP2, FORK/EXIT (EXIT through inherited events),
//    SWITCH / SWITCH_CPU_WIDE, all with sample_id_all trailers.
//  - The tracepoint PMU (tracepoint_pmu.h): ids from the profile's simulated
//    tracefs, syscalls:sys_{enter,exit}_getpid (Syscalls), sched:sched_switch
//    (Sleep), sched:sched_process_fork (Fork); raw data; SET_FILTER.
//  - The breakpoint PMU (breakpoint_pmu.h): x86 bp_type/bp_len rules, slots,
//    WriteMemory/ReadMemory/Execute, MODIFY_ATTRIBUTES.
//  - A core PMU when the profile has one (hardware_pmu.h): generic, hw_cache
//    and raw events, general-purpose and fixed counters, group validation.
//  - Group scheduling as Linux 6.18 does it: ctx_resched() of one PMU on
//    enable, siblings of a closed leader waiting for the next sched-in,
//    member times frozen while the leader is off; core-PMU groups pinned
//    first, rotated every tick when they do not all fit, pinned groups in
//    the ERROR state, exclusive groups (mock_sched.cc Reschedule()).
//  - Self-monitoring: the user page's index/offset/cap_user_rdpmc/pmc_width
//    and ReadPmc() for RDPMC; cap_user_time* and time_* from the profile's
//    sched_clock_counter (mocks/sched_clock.h), ReadCycleCounter() for RDTSC.
//  - Child tasks (mock_tasks.cc): Fork/Threads/ForkExec workloads and
//    SpawnTask/RunInTask/ExitTask run simulated children with inherited
//    copies (folded at exit, live ones in reads), exec with enable_on_exec and
//    remove_on_exec, POLLHUP once an event's task exited.
//  - Signals (mock_signals.cc): real signals queued to this thread with the
//    kernel's siginfo: SIGIO/F_SETSIG (fasync state modelled per event), sigtrap.
//  - Credentials (mock_permissions.cc): uid, capabilities, RLIMIT_MEMLOCK/NOFILE
//    of RunInChild() children; cgroup v2 directories for PERF_FLAG_PID_CGROUP.
// Not modelled yet: POLLERR for a pinned event in ERROR, SWITCH records when a
// child task is handed the CPU, signals to processes other than this one.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>

#include "harness/backend.h"
#include "mocks/profile.h"

namespace perftest {

// The simulated current task.
inline constexpr pid_t kMockPid = 4242;
inline constexpr char kMockComm[] = "perftest";
// The simulated clock at creation, ns (as if the machine had been up 1000 s).
inline constexpr uint64_t kMockStartTimeNs = 1000ull * 1000 * 1000 * 1000;

// A MockBackend for the machine `profile` describes.
std::unique_ptr<Backend> MakeMockBackend(MockProfile profile);

}  // namespace perftest
