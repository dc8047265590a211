// MockBackend, workloads (DESIGN.md "Workloads"): what each Workload kind
// does to the simulated task, in simulated time, and the occurrences it
// produces — page faults, context switches, COMM/MMAP side-band, forks,
// memory accesses for breakpoints, system calls for tracepoints, retired
// instructions for the core PMU. RunWorkload() dispatches; each kind is one
// function below. Under the mock the counts are exact and deterministic.
#include <fmt/format.h>
#include <linux/perf_event.h>

#include <algorithm>
#include <cerrno>

#include "mocks/internal/mock_backend_impl.h"

namespace perftest::mock {
namespace {

// Top of the simulated mmap area: regions are handed out top-down below it
// and unmapped when the workload ends, so a region of the same size comes back
// at the same address (as mmap(2) would).
constexpr uint64_t kMmapTop = 0x00007ffff7fc0000;
// The least simulated time a page touch takes (the fault itself), ns.
constexpr uint64_t kMinTouchNs = 1000;
// One memory access or call of kWriteMemory/kReadMemory/kExecute, ns.
constexpr uint64_t kMemoryAccessNs = 1;
// One getpid(2), ns.
constexpr uint64_t kSyscallNs = 200;
// __NR_getpid (x86_64).
constexpr int64_t kGetpidNr = 39;
// From fork() to the child's exit, ns (the kernel here: tens of microseconds).
constexpr uint64_t kForkNs = 50000;

uint64_t NonNegative(std::chrono::nanoseconds d) { return static_cast<uint64_t>(std::max<int64_t>(0, d.count())); }

}  // namespace

uint64_t MockBackend::NewRegion(uint64_t pages) { return kMmapTop - pages * profile_.page_size; }

Result<WorkloadResult> MockBackend::RunWorkload(const Workload& w) {
  const std::string call = "run_workload(" + w.Describe() + ")";
  const size_t page = profile_.page_size;
  WorkloadResult out;
  switch (w.kind) {
    case Workload::Kind::kTouchPages:
      if (w.count == 0) break;
      out.region_begin = NewRegion(w.count);
      out.region_end = out.region_begin + w.count * page;
      TouchPages(out.region_begin, w.count, static_cast<uint64_t>(w.duration.count()));
      break;
    case Workload::Kind::kSpin:
      task_.stack = SampleData::Stack::kUserSpin;
      task_.retiring = true;
      Advance(NonNegative(w.duration));
      task_.retiring = false;
      break;
    case Workload::Kind::kSleep:
      for (uint64_t i = 0; i < w.count; ++i) SleepOnce(NonNegative(w.duration));
      break;
    case Workload::Kind::kSetComm:
      // __set_task_comm() -> perf_event_comm(task, exec = false).
      task_.comm = w.comm.substr(0, 15);  // TASK_COMM_LEN - 1
      CommEvent(/*exec=*/false);
      break;
    case Workload::Kind::kMmapExec:
      if (w.count == 0) return Result<WorkloadResult>::Failure(EINVAL, call + " [mock: mmap of 0 bytes]");
      out.region_begin = NewRegion(w.count);
      out.region_end = out.region_begin + w.count * page;
      MmapEvent(MmapRegion::Anon(out.region_begin, w.count * page, /*exec=*/true));
      break;
    case Workload::Kind::kFork:
    case Workload::Kind::kThreads:
    case Workload::Kind::kForkExec:
      if (w.kind == Workload::Kind::kForkExec && (w.path.empty() || w.path[0] != '/')) {
        return Result<WorkloadResult>::Failure(EINVAL, call + " [mock: path must be absolute]");
      }
      for (uint64_t i = 0; i < w.count; ++i) out.children.push_back(ForkAndWait(w));
      break;
    case Workload::Kind::kWriteMemory:
    case Workload::Kind::kReadMemory:
      if ((w.width != 1 && w.width != 2 && w.width != 4 && w.width != 8) || w.addr % w.width != 0) {
        return Result<WorkloadResult>::Failure(EINVAL, call + " [mock: width 1, 2, 4 or 8, aligned]");
      }
      AccessMemory(w.addr, w.width, w.kind == Workload::Kind::kWriteMemory, w.count);
      break;
    case Workload::Kind::kExecute:
      for (uint64_t i = 0; i < w.count; ++i) {
        Advance(kMemoryAccessNs);
        // An instruction breakpoint is a fault: ip is the instruction's address.
        BreakpointAccess(ExecuteTargetAddress(), 1, Access::kExecute, ExecuteTargetAddress());
        UprobeExecute(ExecuteTargetAddress(), 1);
      }
      break;
    case Workload::Kind::kSyscalls:
      Syscalls(w.count);
      break;
    case Workload::Kind::kInstructions:
      // The counted loop: exactly `count` instructions, a branch every two,
      // one mispredicted exit; it takes `count` cycles.
      task_.stack = SampleData::Stack::kUserSpin;
      Advance(w.count * 1000 / profile_.cpu_mhz);
      HardwareCount(HwKind::kInstructions, w.count);
      HardwareCount(HwKind::kBranches, w.count / 2);
      HardwareCount(HwKind::kBranchMisses, w.count >= 2 ? 1 : 0);
      break;
  }
  return Result<WorkloadResult>::Ok(std::move(out), call);
}

// Workload::TouchPages: the region is mapped (MMAP with mmap_data), then each
// page's first store faults: do_user_addr_fault() counts
// PERF_COUNT_SW_PAGE_FAULTS, then mm_account_fault() a minor fault. Each page
// takes max(step_ns, kMinTouchNs); the fault comes kMinTouchNs into it.
void MockBackend::TouchPages(uint64_t begin, uint64_t pages, uint64_t step_ns) {
  const size_t page = profile_.page_size;
  MmapEvent(MmapRegion::Anon(begin, pages * page, /*exec=*/false));
  task_.stack = SampleData::Stack::kUserTouch;
  const uint64_t step = std::max<uint64_t>(kMinTouchNs, step_ns);
  for (uint64_t i = 0; i < pages; ++i) {
    Advance(kMinTouchNs);
    const SampleData d = UserData(kUserTouchIp, begin + i * page);
    SoftwareOccurrence(PERF_COUNT_SW_PAGE_FAULTS, d);
    SoftwareOccurrence(PERF_COUNT_SW_PAGE_FAULTS_MIN, d);
    Advance(step - kMinTouchNs);
  }
  task_.stack = SampleData::Stack::kUserSpin;
}

// One sleep of Workload::Sleep: the task switches out to the idle task for
// `ns` and back, with what each switch shows (sched_switch, the
// context-switch software event, SWITCH records, the task's context out and in).
void MockBackend::SleepOnce(uint64_t ns) {
  // __schedule() -> deactivate_task() -> dequeue: update_curr() first.
  UpdateCurr();
  // perf_event_task_sched_out(): the switch is counted while the task's
  // events are still in, from kernel regs (perf_sw_event_sched()).
  const SampleData d = KernelData(kKernelSwitchIp);
  // __schedule(): trace_sched_switch() fires before the context
  // switch (prepare_task_switch()), so the task's events see it.
  TracepointFire("sched:sched_switch",
                 TraceValues{{{"prev_pid", task_.pid}, {"prev_prio", 120}, {"prev_state", 1},
                              {"next_pid", 0}, {"next_prio", 120}},
                             {{"prev_comm", task_.comm}, {"next_comm", "swapper/0"}}},
                 d);
  SoftwareOccurrence(PERF_COUNT_SW_CONTEXT_SWITCHES, d);
  SwitchEvent(/*sched_in=*/false, &task_, nullptr);
  task_.running = false;
  Reschedule();
  SwitchEvent(/*sched_in=*/true, nullptr, &task_);
  Advance(ns);
  // The idle task switches back to the task: CPU-wide events count it.
  SampleData idle;
  idle.ip = kKernelSwitchIp;
  idle.user_mode = false;
  idle.stack = SampleData::Stack::kKernelIdle;
  TracepointFire("sched:sched_switch",
                 TraceValues{{{"prev_pid", 0}, {"prev_prio", 120}, {"prev_state", 0},
                              {"next_pid", task_.pid}, {"next_prio", 120}},
                             {{"prev_comm", "swapper/0"}, {"next_comm", task_.comm}}},
                 idle);
  SoftwareOccurrence(PERF_COUNT_SW_CONTEXT_SWITCHES, idle);
  SwitchEvent(/*sched_in=*/false, nullptr, &task_);
  task_.running = true;
  exec_start_ = now_;  // set_next_entity(): the task's runtime starts anew
  // perf_event_task_sched_in(): the whole context goes in, group by group.
  for (const auto& e : events_) e->deferred = false;
  Reschedule();
  SwitchEvent(/*sched_in=*/true, &task_, nullptr);
}

// One child of Workload::Fork/Threads/ForkExec: forked (inherited copies,
// FORK), runs (exec, or touches its pages), exits (EXIT, copies folded);
// mock_tasks.cc. Returns the child's tid.
pid_t MockBackend::ForkAndWait(const Workload& w) {
  Task child = ForkTask(/*thread=*/w.kind == Workload::Kind::kThreads);
  Advance(kForkNs);  // fork takes time: FORK, the child's records and EXIT have increasing times
  // The parent blocks in waitpid()/join while the child runs: a
  // voluntary switch out (no PREEMPT) to the child, and in again from
  // the child once its exit wakes the parent (Linux 6.18: the records
  // suite's records.switch_around_fork and records.switch_cpu_wide_fork).
  const Task parent = task_;
  SwitchEvent(/*sched_in=*/false, &parent, &child);
  (void)RunAsTask(child, [&]() -> Result<WorkloadResult> {
    SwitchEvent(/*sched_in=*/true, &task_, &parent);  // its inherited events see it
    if (w.kind == Workload::Kind::kForkExec) {
      ExecCurrent(w.path);
    } else if (w.pages_each != 0) {
      return RunWorkload(Workload::TouchPages(w.pages_each));
    }
    return Result<WorkloadResult>::Ok(WorkloadResult{});
  });
  ExitTaskModel(child);
  Advance(kForkNs);  // the rest of do_exit(); then waitpid() returns in the parent
  // do_task_dead(): the child's last switch out, after perf_event_exit_task()
  // (its own events are gone), not runnable: no PREEMPT.
  SwitchEvent(/*sched_in=*/false, &child, &parent);
  SwitchEvent(/*sched_in=*/true, &task_, &child);
  return child.tid;
}

// Workload::WriteMemory/ReadMemory: `count` accesses of `width` bytes at `addr`.
void MockBackend::AccessMemory(uint64_t addr, uint32_t width, bool write, uint64_t count) {
  for (uint64_t i = 0; i < count; ++i) {
    Advance(kMemoryAccessNs);
    // The data breakpoint traps after the access: ip is the next instruction.
    BreakpointAccess(addr, width, write ? Access::kWrite : Access::kRead, write ? kUserStoreIp : kUserLoadIp);
    HardwareCount(write ? HwKind::kL1dWrites : HwKind::kL1dReads, 1);
  }
}

// Workload::Syscalls: `count` getpid(2) calls.
void MockBackend::Syscalls(uint64_t count) {
  PtSyscalls(count);
  for (uint64_t i = 0; i < count; ++i) {
    // syscall(SYS_getpid): the syscall tracepoints fire with the task's
    // user regs (perf_syscall_enter()/exit() pass them), ip after `syscall`.
    const SampleData d = UserData(kUserSyscallIp, 0);
    Advance(kSyscallNs / 2);
    TracepointFire("syscalls:sys_enter_getpid", TraceValues{{{"__syscall_nr", kGetpidNr}}, {}}, d);
    Advance(kSyscallNs - kSyscallNs / 2);
    TracepointFire("syscalls:sys_exit_getpid", TraceValues{{{"__syscall_nr", kGetpidNr}, {"ret", task_.pid}}, {}},
                   d);
  }
}

}  // namespace perftest::mock
