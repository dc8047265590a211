// KernelBackend: the Backend seam as real syscalls, /proc and sysfs.
#include <fcntl.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "harness/attr.h"
#include "harness/backend.h"
#include "harness/describe.h"
#include "harness/internal/child_process.h"
#include "harness/internal/child.h"

namespace perftest {
namespace {

using namespace internal;  // ChildProcess, child helpers

template <typename T>
Result<T> FromSyscall(long rc, CallDescription call) {
  if (rc < 0) return Result<T>::Failure(errno, std::move(call));
  return Result<T>::Ok(static_cast<T>(rc), std::move(call));
}

uint64_t ReadSysctl(const char* path, uint64_t fallback) {
  std::ifstream in(path);
  long long v;
  return (in >> v) ? static_cast<uint64_t>(v) : fallback;
}

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

// Memory accesses of Workload::kWriteMemory / kReadMemory: one access of
// exactly `width` bytes per iteration (volatile, never merged or elided), in
// functions that are never inlined so the loop stays as written at -O2.
template <typename T>
__attribute__((noinline)) void StoreLoop(volatile T* p, uint64_t times) {
  for (uint64_t i = 0; i < times; ++i) *p = static_cast<T>(i);
}
template <typename T>
__attribute__((noinline)) void LoadLoop(const volatile T* p, uint64_t times) {
  for (uint64_t i = 0; i < times; ++i) (void)*p;
}

// Retires about `n` user-mode instructions: a two-instruction loop on x86_64
// and aarch64, a volatile counter elsewhere.
__attribute__((noinline)) void RetireInstructions(uint64_t n) {
  uint64_t iters = n / 2;
  if (iters == 0) return;
#if defined(__x86_64__)
  asm volatile("1: sub $1, %0\n\tjnz 1b" : "+r"(iters) : : "cc");
#elif defined(__aarch64__)
  asm volatile("1: subs %0, %0, #1\n\tb.ne 1b" : "+r"(iters) : : "cc");
#else
  volatile uint64_t i = iters;
  while (i != 0) i = i - 1;
#endif
}

void SpinFor(std::chrono::nanoseconds d) {
  const uint64_t until = MonotonicNs() + d.count();
  while (MonotonicNs() < until) {
  }
}

class KernelBackend final : public Backend {
 public:
  std::string_view kind() const override { return "kernel"; }

  Result<int> PerfEventOpen(perf_event_attr* attr, pid_t pid, int cpu, int group_fd, unsigned long flags) override {
    // Described before the call: on E2BIG the kernel writes attr->size.
    CallDescription call = OpenCall(attr, pid, cpu, group_fd, flags);
    return FromSyscall<int>(syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags), std::move(call));
  }

  Result<size_t> Read(int fd, void* buf, size_t len) override {
    ssize_t n;
    do {
      n = ::read(fd, buf, len);
    } while (n < 0 && errno == EINTR);
    return FromSyscall<size_t>(n, ReadCall(fd, len));
  }

  Result<int> Ioctl(int fd, unsigned long request, uintptr_t arg) override {
    return FromSyscall<int>(::ioctl(fd, request, arg), IoctlCall(fd, request, arg));
  }

  Result<void*> Mmap(size_t length, int prot, int flags, int fd, off_t offset) override {
    CallDescription call = MmapCall(length, prot, flags, fd, offset);
    void* p = ::mmap(nullptr, length, prot, flags, fd, offset);
    if (p == MAP_FAILED) return Result<void*>::Failure(errno, std::move(call));
    return Result<void*>::Ok(p, std::move(call));
  }

  Result<void> Munmap(void* addr, size_t length) override {
    CallDescription call = MunmapCall(addr, length);
    if (::munmap(addr, length) != 0) return Result<void>::Failure(errno, std::move(call));
    return Result<void>::Ok({}, std::move(call));
  }

  Result<void> Close(int fd) override {
    CallDescription call = CloseCall(fd);
    if (::close(fd) != 0) return Result<void>::Failure(errno, std::move(call));
    return Result<void>::Ok({}, std::move(call));
  }

  Result<int> Prctl(int option) override { return FromSyscall<int>(::prctl(option, 0, 0, 0, 0), DescribePrctl(option)); }

  Result<int> Poll(std::span<pollfd> fds, int timeout_ms) override {
    return FromSyscall<int>(::poll(fds.data(), fds.size(), timeout_ms), DescribePoll(fds, timeout_ms));
  }

  Result<int> Fcntl(int fd, int cmd, long arg) override {
    if (cmd == F_GETOWN) {
      // F_GETOWN returns a process-group owner as -pgid, which a plain
      // syscall result would read as a failure; F_GETOWN_EX tells them apart
      // (fcntl(2) BUGS: glibc implements F_GETOWN this way too).
      f_owner_ex owner{};
      if (::fcntl(fd, F_GETOWN_EX, &owner) == -1) return FromSyscall<int>(-1, FcntlCall(fd, cmd, arg));
      return Result<int>::Ok(owner.type == F_OWNER_PGRP ? -owner.pid : owner.pid, FcntlCall(fd, cmd, arg));
    }
    return FromSyscall<int>(::fcntl(fd, cmd, arg), FcntlCall(fd, cmd, arg));
  }

  Result<uint64_t> ReadPmc(uint32_t index) override {
    const std::string call = "rdpmc(index=" + std::to_string(index) + ")";
    if (index == 0) return Result<uint64_t>::Failure(EINVAL, call);
#if defined(__x86_64__)
    uint32_t lo = 0, hi = 0;
    asm volatile("rdpmc" : "=a"(lo), "=d"(hi) : "c"(index - 1));
    return Result<uint64_t>::Ok((static_cast<uint64_t>(hi) << 32) | lo, call);
#elif defined(__aarch64__)
    // arm64 (drivers/perf/arm_pmuv3.c armv8pmu_user_event_idx(); the reader
    // of tools/lib/perf/mmap.c): counter index - 1 is PMEVCNTR<n>_EL0 for
    // n < 31 and the cycle counter PMCCNTR_EL0 for 31. EL0 may read them while
    // the kernel sets PMUSERENR_EL0.ER/CR (sysctl kernel.perf_user_access=1).
    uint64_t v = 0;
    switch (index - 1) {
#define PERFTEST_PMEVCNTR(n) \
  case n: asm volatile("mrs %0, pmevcntr" #n "_el0" : "=r"(v)); break;
      PERFTEST_PMEVCNTR(0) PERFTEST_PMEVCNTR(1) PERFTEST_PMEVCNTR(2) PERFTEST_PMEVCNTR(3) PERFTEST_PMEVCNTR(4)
      PERFTEST_PMEVCNTR(5) PERFTEST_PMEVCNTR(6) PERFTEST_PMEVCNTR(7) PERFTEST_PMEVCNTR(8) PERFTEST_PMEVCNTR(9)
      PERFTEST_PMEVCNTR(10) PERFTEST_PMEVCNTR(11) PERFTEST_PMEVCNTR(12) PERFTEST_PMEVCNTR(13) PERFTEST_PMEVCNTR(14)
      PERFTEST_PMEVCNTR(15) PERFTEST_PMEVCNTR(16) PERFTEST_PMEVCNTR(17) PERFTEST_PMEVCNTR(18) PERFTEST_PMEVCNTR(19)
      PERFTEST_PMEVCNTR(20) PERFTEST_PMEVCNTR(21) PERFTEST_PMEVCNTR(22) PERFTEST_PMEVCNTR(23) PERFTEST_PMEVCNTR(24)
      PERFTEST_PMEVCNTR(25) PERFTEST_PMEVCNTR(26) PERFTEST_PMEVCNTR(27) PERFTEST_PMEVCNTR(28) PERFTEST_PMEVCNTR(29)
      PERFTEST_PMEVCNTR(30)
#undef PERFTEST_PMEVCNTR
      case 31: asm volatile("mrs %0, pmccntr_el0" : "=r"(v)); break;
      default: return Result<uint64_t>::Failure(EINVAL, call);
    }
    return Result<uint64_t>::Ok(v, call);
#else
    return Result<uint64_t>::Failure(ENOSYS, call);
#endif
  }

  Result<uint64_t> ReadCycleCounter() override {
    const std::string call = "read_cycle_counter()";
#if defined(__x86_64__)
    uint32_t lo = 0, hi = 0;
    asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return Result<uint64_t>::Ok((static_cast<uint64_t>(hi) << 32) | lo, call);
#elif defined(__aarch64__)
    uint64_t v = 0;
    asm volatile("isb; mrs %0, cntvct_el0" : "=r"(v));
    return Result<uint64_t>::Ok(v, call);
#elif defined(__riscv) && __riscv_xlen == 64
    uint64_t v = 0;
    asm volatile("rdtime %0" : "=r"(v));
    return Result<uint64_t>::Ok(v, call);
#else
    return Result<uint64_t>::Failure(ENOSYS, call);
#endif
  }

  Result<uint64_t> TracepointId(std::string_view system, std::string_view name) override {
    const std::string call = fmt::format("tracepoint_id({}:{})", system, name);
    std::string root;
    for (const char* dir : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}) {
      if (::access((std::string(dir) + "/events").c_str(), F_OK) == 0) {
        root = dir;
        break;
      }
    }
    if (root.empty()) {
      // No tracefs mounted: mount it where the kernel provides the mount point.
      if (::mount("nodev", "/sys/kernel/tracing", "tracefs", 0, nullptr) != 0) {
        return Result<uint64_t>::Failure(errno, call + ": tracefs is not mounted; mount(tracefs, /sys/kernel/tracing)");
      }
      root = "/sys/kernel/tracing";
    }
    const std::string path = fmt::format("{}/events/{}/{}/id", root, system, name);
    std::ifstream in(path);
    if (!in) {
      const int err = errno != 0 ? errno : ENOENT;
      return Result<uint64_t>::Failure(err, fmt::format("{}: {}", call, path));
    }
    uint64_t id = 0;
    if (!(in >> id)) return Result<uint64_t>::Failure(EINVAL, fmt::format("{}: {} is not a number", call, path));
    return Result<uint64_t>::Ok(id, fmt::format("{}: {}", call, path));
  }

  const MachineInfo& Machine() override {
    std::call_once(machine_once_, [this] { machine_ = Describe(); });
    return machine_;
  }

  Result<int> RunInChild(const ChildCredentials& creds, const std::function<int(Backend&)>& fn) override {
    return RunInForkedChild(*this, creds, fn);
  }

  TaskId CurrentTask() override { return {::getpid(), static_cast<pid_t>(::gettid())}; }

  Result<pid_t> SpawnTask() override {
    return tasks_.Spawn([this](const Workload& w) { return RunWorkload(w); });
  }
  Result<WorkloadResult> RunInTask(pid_t pid, const Workload& w) override { return tasks_.Run(pid, w); }
  Result<void> ExitTask(pid_t pid) override { return tasks_.Exit(pid); }

  Result<int> EpollCreate() override {
    return FromSyscall<int>(::epoll_create1(EPOLL_CLOEXEC), "epoll_create1(EPOLL_CLOEXEC)");
  }
  Result<int> EpollAdd(int epfd, int fd, uint32_t events) override {
    epoll_event e{};
    e.events = events;
    e.data.fd = fd;
    return FromSyscall<int>(::epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &e),
                            fmt::format("epoll_ctl({}, EPOLL_CTL_ADD, {}, {:#x})", epfd, fd, events));
  }
  Result<int> EpollWait(int epfd, std::span<epoll_event> out, int timeout_ms) override {
    int n;
    do {
      n = ::epoll_wait(epfd, out.data(), static_cast<int>(out.size()), timeout_ms);
    } while (n < 0 && errno == EINTR);
    return FromSyscall<int>(n, fmt::format("epoll_wait({}, {}, {})", epfd, out.size(), timeout_ms));
  }

  Result<WorkloadResult> RunWorkload(const Workload& w) override {
    const std::string call = "run_workload(" + w.Describe() + ")";
    WorkloadResult out;
    switch (w.kind) {
      case Workload::Kind::kTouchPages: {
        const size_t page = Machine().page_size;
        const size_t len = w.count * page;
        if (len == 0) break;
        void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return Result<WorkloadResult>::Failure(errno, call);
        auto* bytes = static_cast<volatile char*>(p);
        for (size_t i = 0; i < w.count; ++i) {
          bytes[i * page] = 1;  // first touch of a fresh page: one page fault
          if (w.duration.count() > 0) SpinFor(w.duration);
        }
        out.region_begin = reinterpret_cast<uint64_t>(p);
        out.region_end = out.region_begin + len;
        ::munmap(p, len);
        break;
      }
      case Workload::Kind::kSpin:
        SpinFor(w.duration);
        break;
      case Workload::Kind::kSleep:
        for (uint64_t i = 0; i < w.count; ++i) {
          const auto secs = std::chrono::duration_cast<std::chrono::seconds>(w.duration);
          timespec ts{static_cast<time_t>(secs.count()), static_cast<long>((w.duration - secs).count())};
          while (::nanosleep(&ts, &ts) != 0 && errno == EINTR) {
          }
        }
        break;
      case Workload::Kind::kSetComm:
        if (::prctl(PR_SET_NAME, w.comm.c_str(), 0, 0, 0) != 0) return Result<WorkloadResult>::Failure(errno, call);
        break;
      case Workload::Kind::kMmapExec: {
        const size_t len = w.count * Machine().page_size;
        void* p = ::mmap(nullptr, len, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return Result<WorkloadResult>::Failure(errno, call);
        out.region_begin = reinterpret_cast<uint64_t>(p);
        out.region_end = out.region_begin + len;
        ::munmap(p, len);
        break;
      }
      case Workload::Kind::kFork:
        for (uint64_t i = 0; i < w.count; ++i) {
          const pid_t child = ForkChild();
          if (child < 0) return Result<WorkloadResult>::Failure(errno, call);
          if (child == 0) {
            if (w.pages_each != 0) (void)RunWorkload(Workload::TouchPages(w.pages_each));
            ::_exit(0);
          }
          out.children.push_back(child);
          ReapChild(child);
        }
        break;
      case Workload::Kind::kThreads: {
        std::vector<pid_t> tids(w.count);
        std::vector<std::thread> threads;
        for (uint64_t i = 0; i < w.count; ++i) {
          threads.emplace_back([this, &w, &tids, i] {
            tids[i] = static_cast<pid_t>(::gettid());
            if (w.pages_each != 0) (void)RunWorkload(Workload::TouchPages(w.pages_each));
          });
          threads.back().join();  // one at a time: each is a whole clone/exit before the next
        }
        out.children = std::move(tids);
        break;
      }
      case Workload::Kind::kForkExec:
        if (w.path.empty() || w.path[0] != '/') return Result<WorkloadResult>::Failure(EINVAL, call + ": path must be absolute");
        for (uint64_t i = 0; i < w.count; ++i) {
          const pid_t child = ForkChild();
          if (child < 0) return Result<WorkloadResult>::Failure(errno, call);
          if (child == 0) {
            char* const argv[] = {const_cast<char*>(w.path.c_str()), nullptr};
            char* const envp[] = {nullptr};
            ::execve(w.path.c_str(), argv, envp);
            ::_exit(127);
          }
          out.children.push_back(child);
          const int status = ReapChild(child);
          if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            // 127: execve() failed in the child.
            const bool no_exec = WIFEXITED(status) && WEXITSTATUS(status) == 127;
            return Result<WorkloadResult>::Failure(no_exec ? ENOENT : ECHILD,
                                                   fmt::format("{}: child status {:#x}", call, status));
          }
        }
        break;
      case Workload::Kind::kWriteMemory:
      case Workload::Kind::kReadMemory: {
        const bool write = w.kind == Workload::Kind::kWriteMemory;
        if ((w.width != 1 && w.width != 2 && w.width != 4 && w.width != 8) || w.addr % w.width != 0) {
          return Result<WorkloadResult>::Failure(EINVAL, call);
        }
        switch (w.width) {
          case 1:
            write ? StoreLoop(reinterpret_cast<volatile uint8_t*>(w.addr), w.count)
                  : LoadLoop(reinterpret_cast<volatile uint8_t*>(w.addr), w.count);
            break;
          case 2:
            write ? StoreLoop(reinterpret_cast<volatile uint16_t*>(w.addr), w.count)
                  : LoadLoop(reinterpret_cast<volatile uint16_t*>(w.addr), w.count);
            break;
          case 4:
            write ? StoreLoop(reinterpret_cast<volatile uint32_t*>(w.addr), w.count)
                  : LoadLoop(reinterpret_cast<volatile uint32_t*>(w.addr), w.count);
            break;
          default:
            write ? StoreLoop(reinterpret_cast<volatile uint64_t*>(w.addr), w.count)
                  : LoadLoop(reinterpret_cast<volatile uint64_t*>(w.addr), w.count);
            break;
        }
        break;
      }
      case Workload::Kind::kExecute: {
        auto* target = reinterpret_cast<void (*)()>(ExecuteTargetAddress());
        for (uint64_t i = 0; i < w.count; ++i) target();
        break;
      }
      case Workload::Kind::kSyscalls:
        for (uint64_t i = 0; i < w.count; ++i) ::syscall(SYS_getpid);
        break;
      case Workload::Kind::kInstructions:
        RetireInstructions(w.count);
        break;
    }
    return Result<WorkloadResult>::Ok(std::move(out), call);
  }

 private:
  static MachineInfo Describe() {
    MachineInfo m;
    utsname u{};
    ::uname(&u);
    m.arch = u.machine;
    m.description = fmt::format("Linux {} {}", u.release, u.machine);
    m.ncpus = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
    m.page_size = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    m.perf_event_paranoid = static_cast<int>(ReadSysctl("/proc/sys/kernel/perf_event_paranoid", 2));
    m.max_sample_rate = ReadSysctl("/proc/sys/kernel/perf_event_max_sample_rate", 100000);
    m.max_stack = ReadSysctl("/proc/sys/kernel/perf_event_max_stack", 127);
    m.mlock_kb = ReadSysctl("/proc/sys/kernel/perf_event_mlock_kb", 516);
    Result<std::vector<Pmu>> pmus = DiscoverPmus();
    if (pmus.ok()) m.pmus = std::move(*pmus);
    return m;
  }

  std::once_flag machine_once_;
  MachineInfo machine_;
  ChildProcesses tasks_;  // SpawnTask()'s children, killed and reaped at destruction
};

}  // namespace

std::unique_ptr<Backend> MakeKernelBackend() { return std::make_unique<KernelBackend>(); }

int ProbeKernelPerfEventOpen() {
  perf_event_attr attr = SoftwareAttr(PERF_COUNT_SW_DUMMY);
  attr.exclude_kernel = 1;  // allowed at perf_event_paranoid 2 without privilege
  attr.exclude_hv = 1;
  const long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) return errno;
  ::close(static_cast<int>(fd));
  return 0;
}

uint32_t ProbeKernelAttrSize() {
  // One page: far past any perf_event_attr a kernel has defined.
  struct {
    perf_event_attr attr;
    unsigned char tail[4096 - sizeof(perf_event_attr)];
  } big{};
  big.attr = SoftwareAttr(PERF_COUNT_SW_DUMMY);
  big.attr.exclude_kernel = 1;
  big.attr.exclude_hv = 1;
  big.attr.size = sizeof big;
  big.tail[sizeof big.tail - 1] = 1;
  const long fd = syscall(SYS_perf_event_open, &big.attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd >= 0) {
    ::close(static_cast<int>(fd));
    return 0;
  }
  return errno == E2BIG ? big.attr.size : 0;
}

}  // namespace perftest
