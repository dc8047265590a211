// MockEvent: MockBackend's struct perf_event — the state kernel/events/core.c
// keeps per event, reduced to what the model uses. Internal to mocks/.
#pragma once

#include <linux/perf_event.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "mocks/hardware_pmu.h"

namespace perftest::mock {

class MockRingBuffer;
class PtTraceSource;
class TraceFilter;
struct TracepointModel;
struct UprobeTarget;

// Which struct pmu an event belongs to (event->pmu). The kernel's software
// PMU is three: perf_swevent (page faults, switches, dummy, ...),
// perf_cpu_clock and perf_task_clock.
// kFreeRunning: the msr and power (RAPL) PMUs (mocks/free_running_pmu.h).
enum class PmuId { kSwevent, kCpuClock, kTaskClock, kTracepoint, kBreakpoint, kCore, kIntelPt, kFreeRunning };

// hwc->interrupts when throttled (include/linux/perf_event.h MAX_INTERRUPTS).
inline constexpr uint64_t kMaxInterrupts = std::numeric_limits<uint64_t>::max();

// struct hw_perf_event, the software-event part.
struct HwState {
  uint64_t sample_period = 0;  // hwc->sample_period
  uint64_t last_period = 0;    // hwc->last_period
  int64_t period_left = 0;     // hwc->period_left (negative: events until overflow)
  uint64_t interrupts = 0;     // hwc->interrupts, kMaxInterrupts while throttled
  uint64_t interrupts_seq = 0; // hwc->interrupts_seq (tick sequence of `interrupts`)
  uint64_t freq_time_stamp = 0;   // hwc->freq_time_stamp, ns
  uint64_t freq_count_stamp = 0;  // hwc->freq_count_stamp
  // cpu-clock / task-clock: the hrtimer (perf_swevent_start_hrtimer()).
  bool hrtimer_active = false;
  uint64_t hrtimer_left = 0;   // ns of the event's clock until it fires
  bool stopped = false;        // PERF_HES_STOPPED (throttled hrtimer events)
};

// What the overflow path knows about the interrupted context (struct
// perf_sample_data + pt_regs, reduced).
struct SampleData {
  uint64_t ip = 0;
  uint64_t addr = 0;           // data->addr (page faults: the faulting address)
  uint64_t period = 0;         // data->period
  bool user_mode = true;       // user_mode(regs): PERF_RECORD_MISC_USER, else KERNEL
  enum class Stack { kUserTouch, kUserSpin, kKernelSwitch, kKernelIdle } stack = Stack::kUserTouch;
  // A real task served by tools/exec (MockControl::SetServedContext): its
  // user-mode ip and the return addresses of its frame-pointer chain make
  // the user part of the callchain instead of the simulated stacks.
  bool served = false;
  uint64_t served_user_ip = 0;
  std::vector<uint64_t> served_callers;
  pid_t pid = 0, tid = 0;      // current at the time (idle: 0)
  uint32_t cpu = 0;            // smp_processor_id()
  // PERF_SAMPLE_RAW: the tracepoint's trace entry (has_raw), else none.
  bool has_raw = false;
  std::vector<std::byte> raw;
};

struct MockEvent {
  uint64_t id = 0;              // event->id (global counter, from 1)
  int fd = -1;                  // the event's fd; -1 once closed (kept alive by a mapping)
  int memfd = -1;               // the memfd backing the buffer (== fd once backed, -1 before: mock_fds.cc)
  bool cloexec = false;         // PERF_FLAG_FD_CLOEXEC: the fd's FD_CLOEXEC while it has no memfd
  perf_event_attr attr{};       // as the kernel keeps it after perf_copy_attr()/pmu init
  pid_t pid = -1;               // target task (tid), -1 for a CPU-wide event
  int cpu = -1;
  MockEvent* leader = this;     // group leader (this for a leader)
  std::vector<MockEvent*> siblings;  // members, in open order (leader only)
  MockEvent* parent = nullptr;  // inherited copy: the parent event
  std::vector<MockEvent*> children;  // event->child_list: the live inherited copies (parent only)
  bool exited = false;          // PERF_EVENT_STATE_EXIT: its task exited (perf_event_exit_event())
  // The file's fasync state (fs/fcntl.c): O_ASYNC puts the fd on event->fasync
  // (perf_fasync()); F_SETOWN/F_SETOWN_EX name who gets the signal, F_SETSIG which.
  bool async = false;
  int owner_type = 0;           // F_OWNER_TID, F_OWNER_PID (0) or F_OWNER_PGRP
  pid_t owner = 0;              // 0: nobody
  int signum = 0;               // F_SETSIG; 0 means SIGIO without siginfo
  bool enabled = false;         // state >= PERF_EVENT_STATE_INACTIVE
  bool active = false;          // state == PERF_EVENT_STATE_ACTIVE (scheduled in)
  bool is_clock = false;        // cpu-clock / task-clock (hrtimer driven)
  // Enabled, but the kernel has not scheduled it in yet and will not before
  // the task's next sched-in or a ctx_resched() of its group's PMU (see
  // MockBackend::EnableEvent()).
  bool deferred = false;
  PmuId pmu = PmuId::kSwevent;  // event->pmu
  const TracepointModel* tracepoint = nullptr;  // PERF_TYPE_TRACEPOINT: what attr.config names
  std::shared_ptr<const TraceFilter> filter;   // PERF_EVENT_IOC_SET_FILTER (tracepoints)
  std::shared_ptr<const UprobeTarget> uprobe;  // the uprobe PMU: where the probe sits (mocks/uprobe_pmu.h)
  HwEvent hw_event;             // PmuId::kCore: what it counts and on which counters
  // PmuId::kCore while ACTIVE: the counter it holds (gp index, or fixed index
  // with gp = -1) and its raw value (counter_width bits).
  int counter_gp = -1;
  int counter_fixed = -1;
  uint64_t pmc = 0;
  // PERF_EVENT_STATE_ERROR: a pinned group that could not go on (merge_sched_in()).
  bool error = false;
  // The group's place in ctx->{pinned,flexible}_groups (perf_event_groups_insert():
  // groups->index++), renewed by rotate_ctx(); 0 until first scheduled.
  uint64_t group_index = 0;

  uint64_t count = 0;           // event->count
  uint64_t child_count = 0;     // event->child_count (inherited children that exited)
  uint64_t child_time_enabled = 0;  // event->child_total_time_enabled, ns (exited children)
  uint64_t child_time_running = 0;  // event->child_total_time_running, ns
  uint64_t time_enabled = 0;    // total_time_enabled, ns
  uint64_t time_running = 0;    // total_time_running, ns
  uint64_t lost_samples = 0;    // event->lost_samples (PERF_FORMAT_LOST)
  int64_t event_limit = 0;      // PERF_EVENT_IOC_REFRESH budget (0 = none)
  HwState hw;

  std::shared_ptr<MockRingBuffer> rb;  // own buffer, or the SET_OUTPUT target's
  bool owns_rb = false;         // rb was created by mmap() of this event

  // PmuId::kIntelPt (mocks/mock_aux.cc): PERF_ATTACH_ITRACE (the driver started
  // once: no more PERF_RECORD_ITRACE_START), and the trace it writes.
  bool itrace_started = false;
  bool pt_tracing = false;      // an AUX transaction is open (pt_event_start() succeeded)
  std::shared_ptr<PtTraceSource> pt_source;

  // primary_event_id(): the parent's id for an inherited event.
  uint64_t primary_id() const { return parent != nullptr ? parent->id : id; }
  bool is_sampling() const { return attr.sample_period != 0; }
  bool is_leader() const { return leader == this; }
  size_t group_size() const { return leader->siblings.size() + 1; }
};

}  // namespace perftest::mock
