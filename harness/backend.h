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
#include <sys/epoll.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
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

// Who Backend::RunInChild's child task runs as, and with which limits. Each
// field left unset keeps the parent's value.
struct ChildCredentials {
  // setresgid(uid)/setgroups(0)/setresuid(uid): e.g. 65534 (nobody). Without
  // `caps`, changing the uid drops every capability (capabilities(7)).
  std::optional<uid_t> uid;
  // The capabilities (CAP_PERFMON, CAP_IPC_LOCK, ...) the child keeps,
  // permitted and effective; every other one is dropped (capset(2)).
  std::optional<std::vector<int>> caps;
  // setrlimit(2) soft and hard limits. Only lowering is possible without
  // CAP_SYS_RESOURCE. RLIMIT_MEMLOCK in bytes; RLIMIT_NOFILE in fds.
  std::optional<uint64_t> rlimit_memlock;
  std::optional<uint64_t> rlimit_nofile;

  // e.g. "uid=65534, caps={CAP_IPC_LOCK}, RLIMIT_MEMLOCK=0".
  std::string Describe() const;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // "kernel" or "mock": the value of report key run.backend.
  virtual std::string_view kind() const = 0;

  // perf_event_open(2). `attr` is not const: on E2BIG the kernel writes the
  // size it supports into attr->size (kernel/events/core.c perf_copy_attr()).
  // `attr` may be NULL, the one unreadable pointer the seam can describe:
  // perf_copy_attr() then fails with EFAULT (after the flags check).
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

  // Runs fn(*this) in a new child task (fork(2): its own process group,
  // always reaped) that first takes `creds`; returns what fn returned (an
  // errno, a count: any int). Events and mappings the child made go away when
  // it exits; the parent's are untouched. fn must not use GoogleTest
  // assertions (they would not reach the parent). Errors: the errno of
  // fork(2)/pipe(2); the errno of setrlimit(2)/setresuid(2)/capset(2) when the
  // child cannot take `creds` (EPERM: raising a limit without
  // CAP_SYS_RESOURCE); ECHILD when the child died before answering. The
  // default (a backend with no tasks) fails with ENOSYS.
  virtual Result<int> RunInChild(const ChildCredentials& creds, const std::function<int(Backend&)>& fn) {
    (void)fn;
    return Result<int>::Failure(ENOSYS, "run_in_child(" + creds.Describe() + ")");
  }

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

  // Tasks the suite drives step by step (inherit, POLLHUP on exit, exec):
  // SpawnTask() forks a child of the calling task now, so it inherits the
  // attr.inherit events open at this moment (kernel/events/core.c
  // perf_event_init_task()); the child then waits. RunInTask() runs `w` in it
  // and returns when `w` is done (the child lives on); ExitTask() makes it
  // _exit(0) and reaps it, which folds its inherited counts into the parent
  // events (perf_event_exit_task() -> sync_child_event()). The pid is a valid
  // perf_event_open() pid until ExitTask(). KernelBackend: a fork(2)ed process
  // in its own process group with PR_SET_PDEATHSIG SIGKILL, reaped by the
  // backend at destruction at the latest; MockBackend: a simulated task.
  // Errors: ESRCH for a pid SpawnTask() did not return (or already exited);
  // the errno of fork(2)/pipe(2); the child's workload errno. The default (a
  // backend without tasks) fails with ENOSYS.
  virtual Result<pid_t> SpawnTask() { return Result<pid_t>::Failure(ENOSYS, "spawn_task()"); }
  virtual Result<WorkloadResult> RunInTask(pid_t pid, const Workload& w) {
    return Result<WorkloadResult>::Failure(ENOSYS, "run_in_task(" + std::to_string(pid) + ", " + w.Describe() + ")");
  }
  virtual Result<void> ExitTask(pid_t pid) {
    return Result<void>::Failure(ENOSYS, "exit_task(" + std::to_string(pid) + ")");
  }

  // epoll(7) over event fds (perf_poll() is the file's ->poll): EpollCreate()
  // is epoll_create1(EPOLL_CLOEXEC) (close it with Close()); EpollAdd() is
  // epoll_ctl(EPOLL_CTL_ADD, fd, {events, data.fd = fd}) — which polls the fd
  // once, consuming a pending POLLIN (ep_insert()); EpollWait() is
  // epoll_wait(2) into `out`, returning how many are ready. Errors: epoll's
  // errno (EBADF, EEXIST, EINVAL). The default fails with ENOSYS.
  virtual Result<int> EpollCreate() { return Result<int>::Failure(ENOSYS, "epoll_create1(EPOLL_CLOEXEC)"); }
  virtual Result<int> EpollAdd(int epfd, int fd, uint32_t events) {
    return Result<int>::Failure(ENOSYS, "epoll_ctl(" + std::to_string(epfd) + ", EPOLL_CTL_ADD, " +
                                            std::to_string(fd) + ", " + std::to_string(events) + ")");
  }
  virtual Result<int> EpollWait(int epfd, std::span<epoll_event> out, int timeout_ms) {
    return Result<int>::Failure(ENOSYS, "epoll_wait(" + std::to_string(epfd) + ", " + std::to_string(out.size()) +
                                            ", " + std::to_string(timeout_ms) + ")");
  }

  // Self-monitoring: the counter a user-space RDPMC would read, for a
  // perf_event_mmap_page whose cap_user_rdpmc is 1 and `index` is non-zero
  // (<linux/perf_event.h>, the comment above perf_event_mmap_page.index: the
  // instruction's counter number is index - 1). The raw counter value, pmc_width
  // bits, not sign-extended. KernelBackend executes RDPMC on x86 and reads
  // PMEVCNTR<index-1>_EL0 (PMCCNTR_EL0 for index 32) on arm64 (the caller must
  // have seen cap_user_rdpmc set and a non-zero index, else the instruction
  // faults); MockBackend reads its model's counter. Errors: EINVAL for index 0
  // (no counter), an index past the arch's counters, or an index no active
  // event holds (mock); ENOSYS on other arches — the default.
  virtual Result<uint64_t> ReadPmc(uint32_t index) {
    return Result<uint64_t>::Failure(ENOSYS, "rdpmc(index=" + std::to_string(index) + ")");
  }

  // Self-monitoring: the counter the page's time_mult/time_shift convert —
  // "cyc" in the comment above perf_event_mmap_page.time_shift ("rdtsc or
  // similar"): RDTSC on x86_64, CNTVCT_EL0 on arm64, rdtime on riscv64.
  // Raw counter value; meaningful when the page says cap_user_time.
  // KernelBackend executes the instruction; MockBackend reads its profile's
  // sched_clock_counter at the simulated time. Errors: ENOSYS where the
  // architecture has no such counter (the default) or the profile models none.
  virtual Result<uint64_t> ReadCycleCounter() { return Result<uint64_t>::Failure(ENOSYS, "read_cycle_counter()"); }
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
