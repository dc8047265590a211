// Backend: the syscall surface the harness talks through (DESIGN.md "Backend: the seam").
//
//   std::unique_ptr<Backend> b = MakeKernelBackend();   // or MakeMockBackend(profile)
//   perf_event_attr attr = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
//   Result<int> fd = b->PerfEventOpen(attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
//   b->RunWorkload(Workload::TouchPages(16));
//
// Every kernel-facing call goes through here. Errors are errno values exactly as
// the kernel returns them (Result<T>); nothing throws. Each method documents the
// syscall it stands for; the kernel's semantics are those of perf_event_open(2)
// and kernel/events/core.c.
#pragma once

#include <linux/perf_event.h>
#include <poll.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "harness/pmu.h"
#include "harness/result.h"
#include "harness/workload.h"

namespace perftest {

// What a machine offers the interface: the facts a suite needs to decide what
// to expect (and what to skip).
struct MachineInfo {
  std::string arch;          // uname machine: "x86_64", "aarch64", "riscv64"
  std::string description;   // kernel: "Linux 6.1.0 x86_64"; mock: the profile's description
  int ncpus = 1;             // online CPUs
  size_t page_size = 4096;   // bytes
  int perf_event_paranoid = 2;       // /proc/sys/kernel/perf_event_paranoid
  uint32_t max_sample_rate = 100000; // /proc/sys/kernel/perf_event_max_sample_rate, Hz
  uint32_t max_stack = 127;          // /proc/sys/kernel/perf_event_max_stack, frames
  uint32_t mlock_kb = 516;           // /proc/sys/kernel/perf_event_mlock_kb, KiB per user
  std::vector<Pmu> pmus;             // as in sysfs
};

// A task as the records name it: PERF_SAMPLE_TID's {pid, tid}.
struct TaskId {
  pid_t pid = 0;
  pid_t tid = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // "kernel" or "mock": the value of report key run.backend.
  virtual std::string_view kind() const = 0;

  // perf_event_open(2). `attr` is not const: on E2BIG the kernel writes the
  // size it supports into attr->size (kernel/events/core.c perf_copy_attr()).
  // Returns the new fd.
  virtual Result<int> PerfEventOpen(perf_event_attr* attr, pid_t pid, int cpu, int group_fd,
                                    unsigned long flags) = 0;
  // read(2) on an event fd: a read_format record. Returns the bytes read.
  virtual Result<size_t> Read(int fd, void* buf, size_t len) = 0;
  // ioctl(2): PERF_EVENT_IOC_*. `arg` is the integer or the pointer, as the request needs.
  virtual Result<int> Ioctl(int fd, unsigned long request, uintptr_t arg) = 0;
  // mmap(2) of an event fd (addr is always NULL). Returns the mapping.
  virtual Result<void*> Mmap(size_t length, int prot, int flags, int fd, off_t offset) = 0;
  // munmap(2) of a mapping returned by Mmap.
  virtual Result<void> Munmap(void* addr, size_t length) = 0;
  // close(2).
  virtual Result<void> Close(int fd) = 0;
  // prctl(2) PR_TASK_PERF_EVENTS_ENABLE / PR_TASK_PERF_EVENTS_DISABLE for the current task.
  virtual Result<int> Prctl(int option) = 0;
  // poll(2). Returns the number of fds with revents set; fills revents.
  virtual Result<int> Poll(std::span<pollfd> fds, int timeout_ms) = 0;
  // fcntl(2) with an integer argument (F_GETFD, F_SETFL, F_SETOWN, F_SETSIG, ...).
  virtual Result<int> Fcntl(int fd, int cmd, long arg) = 0;

  // The machine: PMUs, CPUs, sysctls.
  virtual const MachineInfo& Machine() = 0;
  // The calling task as records name it (pid 0 in perf_event_open means this task).
  virtual TaskId CurrentTask() = 0;
  // Runs `w` in the current task. Errors: the errno of the first failing step.
  virtual Result<WorkloadResult> RunWorkload(const Workload& w) = 0;

  // The id of tracepoint `system`:`name`, the attr.config of a
  // PERF_TYPE_TRACEPOINT event: the contents of
  // <tracefs>/events/<system>/<name>/id (Documentation/trace/events.rst).
  // KernelBackend looks in /sys/kernel/tracing and /sys/kernel/debug/tracing
  // and, when neither has events/, mounts tracefs at /sys/kernel/tracing
  // (needs CAP_SYS_ADMIN). Errors: ENOENT no such tracepoint; the errno of
  // mount(2) (EPERM, ENODEV) when tracefs is not mounted and cannot be;
  // EACCES when the id file is not readable. The default (a backend that has
  // no tracefs) fails with ENOSYS.
  virtual Result<uint64_t> TracepointId(std::string_view system, std::string_view name) {
    return Result<uint64_t>::Failure(ENOSYS, "tracepoint_id(" + std::string(system) + ":" + std::string(name) + ")");
  }

  // Self-monitoring: the counter a user-space RDPMC would read, for a
  // perf_event_mmap_page whose cap_user_rdpmc is 1 and `index` is non-zero
  // (<linux/perf_event.h>, the comment above perf_event_mmap_page.index: the
  // instruction's counter number is index - 1). The raw counter value, pmc_width
  // bits, not sign-extended. KernelBackend executes RDPMC (x86 only; the caller
  // must have seen cap_user_rdpmc set, else the instruction faults); MockBackend
  // reads its model's counter. Errors: EINVAL for index 0 (no counter) or an
  // index no active event holds (mock); ENOSYS where RDPMC does not exist (not
  // x86) — the default.
  virtual Result<uint64_t> ReadPmc(uint32_t index) {
    return Result<uint64_t>::Failure(ENOSYS, "rdpmc(index=" + std::to_string(index) + ")");
  }
};

// The real kernel: syscalls, /proc and sysfs.
std::unique_ptr<Backend> MakeKernelBackend();

// Whether the real kernel accepts perf_event_open here: opens (and closes) a
// software dummy event for this task. Returns 0, or the errno (EPERM under a
// seccomp profile that denies it, EACCES when paranoid forbids, ENOSYS).
int ProbeKernelPerfEventOpen();

// The size of perf_event_attr the running kernel knows: an attr larger than
// any kernel's, with a non-zero byte past what the kernel knows, makes
// perf_copy_attr() fail with E2BIG and write its own size into attr.size.
// Returns that size, or 0 when the kernel answered otherwise (perf_event_open
// denied, ENOSYS). Compare with sizeof(perf_event_attr), the UAPI's size.
uint32_t ProbeKernelAttrSize();

}  // namespace perftest
