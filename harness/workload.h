// Workload: what a task should do to make events happen, independent of how.
//
//   Result<WorkloadResult> r = backend.RunWorkload(Workload::TouchPages(64));
//   // page-faults: 64 more (kernel: at least 64; mock: exactly 64),
//   // r->region_begin .. r->region_end is where they happened.
//
// Suites never generate events by hand (DESIGN.md "Workloads"): KernelBackend
// runs real code in the calling thread, MockBackend runs its model of the same
// work in the simulated current task, where counts are exact.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace perftest {

struct Workload {
  enum class Kind {
    kTouchPages,  // map `count` fresh anonymous pages and write one byte to each
    kSpin,        // busy-loop on the CPU for `duration`
    kSleep,       // sleep `count` times for `duration` each: voluntary context switches
    kSetComm,     // prctl(PR_SET_NAME, comm): a PERF_RECORD_COMM
    kMmapExec,    // map `count` anonymous pages PROT_READ|PROT_EXEC, then unmap: a PERF_RECORD_MMAP[2]
    kFork,        // fork `count` children that _exit(0) at once, reaped: FORK/EXIT records
    kWriteMemory, // store `width` bytes at `addr`, `count` times: breakpoints (HW_BREAKPOINT_W/RW)
    kReadMemory,  // load `width` bytes from `addr`, `count` times: breakpoints (HW_BREAKPOINT_RW)
    kExecute,     // call the function at ExecuteTargetAddress() `count` times: HW_BREAKPOINT_X
    kSyscalls,    // getpid(2) `count` times: syscalls:sys_enter_getpid / sys_exit_getpid
    kInstructions,  // retire about `count` user-mode instructions (a counted loop): hardware counters
    kThreads,     // create `count` threads (CLONE_THREAD) that each touch `pages_each` fresh pages and exit; joined
    kForkExec,    // fork `count` children that each execve(`path`) (no arguments) and exit 0; reaped:
                  // FORK, then in the child COMM (PERF_RECORD_MISC_COMM_EXEC) and the binary's MMAP2, EXIT
  };

  Kind kind = Kind::kSpin;
  uint64_t count = 0;
  // kSpin: how long. kSleep: each sleep. kTouchPages: minimum spacing between
  // two page touches (0: as fast as the CPU goes).
  std::chrono::nanoseconds duration{0};
  std::string comm;
  // kWriteMemory, kReadMemory: the address (must stay valid and writable for
  // the call: a variable of the caller) and the access width, 1, 2, 4 or 8.
  uint64_t addr = 0;
  uint32_t width = 0;
  // kFork, kThreads: fresh pages each child touches (one page fault each) before it exits.
  uint64_t pages_each = 0;
  // kForkExec: the program each child execs, an absolute path (e.g. "/bin/true"); it must exit 0.
  std::string path;

  static Workload TouchPages(uint64_t pages, std::chrono::nanoseconds spacing = std::chrono::nanoseconds{0});
  static Workload Spin(std::chrono::nanoseconds how_long);
  static Workload Sleep(uint64_t times, std::chrono::nanoseconds each);
  static Workload SetComm(std::string comm);
  static Workload MmapExec(uint64_t pages);
  static Workload Fork(uint64_t children);
  // Fork(children), each child touching `pages_each` fresh pages before _exit(0).
  static Workload ForkTouch(uint64_t children, uint64_t pages_each);
  static Workload Threads(uint64_t threads, uint64_t pages_each);
  // Errors at RunWorkload: EINVAL for a relative `path`; ENOENT when a child
  // cannot execute it (execve(2) failed: the child exits 127); ECHILD when the
  // program exits non-zero or is killed.
  static Workload ForkExec(uint64_t children, std::string path);
  // Errors at RunWorkload: EINVAL for a width other than 1, 2, 4, 8 or an addr not aligned to it.
  static Workload WriteMemory(const volatile void* addr, uint32_t width, uint64_t times);
  static Workload ReadMemory(const volatile void* addr, uint32_t width, uint64_t times);
  static Workload Execute(uint64_t times);
  static Workload Syscalls(uint64_t times);
  static Workload Instructions(uint64_t instructions);
  // ForkExec(1, path): one child that execs `path`. Errors as ForkExec.
  static Workload Exec(std::string path);

  // e.g. "touch_pages(64, spacing=100us)"; used in failure messages.
  std::string Describe() const;
};

// The function kExecute calls (never inlined; a real function of this
// process): the bp_addr of an HW_BREAKPOINT_X breakpoint that kExecute hits.
uint64_t ExecuteTargetAddress();

// What a workload did, as far as a suite can check it in the records.
struct WorkloadResult {
  // kTouchPages, kMmapExec: the mapping's address range [region_begin, region_end).
  uint64_t region_begin = 0;
  uint64_t region_end = 0;
  // kFork, kForkExec: the children's pids; kThreads: the threads' tids; in creation order.
  std::vector<pid_t> children;
};

}  // namespace perftest
