// MockBackend's class, shared by its two halves: mock_backend.cc (the syscall
// surface: open, read, ioctl, mmap, poll, close, prctl, fcntl) and
// mock_task.cc (the simulated task: time, workloads, counting, sampling,
// throttling, side-band records). Internal to mocks/.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "harness/backend.h"
#include "harness/records.h"
#include "mocks/attr_validation.h"
#include "mocks/breakpoint_pmu.h"
#include "mocks/event_output.h"
#include "mocks/internal/mock_event.h"
#include "mocks/mock_backend.h"
#include "mocks/mock_ring_buffer.h"
#include "mocks/profile.h"
#include "mocks/tracepoint_pmu.h"

namespace perftest::mock {

class MockBackend final : public Backend {
 public:
  explicit MockBackend(MockProfile profile);
  ~MockBackend() override;

  std::string_view kind() const override { return "mock"; }
  Result<int> PerfEventOpen(perf_event_attr* attr, pid_t pid, int cpu, int group_fd, unsigned long flags) override;
  Result<size_t> Read(int fd, void* buf, size_t len) override;
  Result<int> Ioctl(int fd, unsigned long request, uintptr_t arg) override;
  Result<void*> Mmap(size_t length, int prot, int flags, int fd, off_t offset) override;
  Result<void> Munmap(void* addr, size_t length) override;
  Result<void> Close(int fd) override;
  Result<int> Prctl(int option) override;
  Result<int> Poll(std::span<pollfd> fds, int timeout_ms) override;
  Result<int> Fcntl(int fd, int cmd, long arg) override;
  const MachineInfo& Machine() override { return machine_; }
  TaskId CurrentTask() override { return {task_.pid, task_.tid}; }
  Result<WorkloadResult> RunWorkload(const Workload& w) override;
  Result<uint64_t> TracepointId(std::string_view system, std::string_view name) override;

 private:
  // The simulated current task.
  struct Task {
    pid_t pid = kMockPid;
    pid_t tid = kMockPid;
    std::string comm = kMockComm;
    bool running = true;  // on CPU 0; false while it sleeps (CPU 0 idles)
    bool retiring = false;  // busy in user code (Spin): the core PMU sees instructions retire
    SampleData::Stack stack = SampleData::Stack::kUserSpin;  // what an interrupt would find
  };

  // One mmap(2) handed out.
  struct Mapping {
    size_t length = 0;
    MockEvent* event = nullptr;                // the event whose fd was mapped
    std::shared_ptr<MockRingBuffer> rb;
  };

  // --- mock_backend.cc: syscall helpers ---
  MockEvent* FindFd(int fd);
  AttrLimits Limits() const;
  int SetOutput(MockEvent& ev, MockEvent* output, std::string* why);  // perf_event_set_output()
  int PeriodIoctl(MockEvent& ev, uintptr_t arg, std::string* why);    // _perf_event_period()
  int TracepointEventInit(MockEvent& ev, std::string* why);           // perf_tp_event_init()
  int BreakpointEventInit(MockEvent& ev, std::string* why);           // hw_breakpoint_event_init()
  int ModifyBreakpoint(MockEvent& ev, const perf_event_attr& attr, std::string* why);  // perf_event_modify_breakpoint()
  void DestroyEvent(MockEvent* ev);
  void ReleaseBuffer(const std::shared_ptr<MockRingBuffer>& rb);     // perf_mmap_close(), last mapping

  // --- mock_task.cc: the simulated task ---
  // Whether `ev` is ACTIVE: enabled, its group leader enabled, and (task
  // events) the task on a CPU the event accepts.
  bool Schedulable(const MockEvent& ev) const;
  // Whether the hardware events `joining` find counters next to the active ones.
  bool CountersFree(const std::vector<const MockEvent*>& joining) const;
  // Starts/stops events whose schedulability changed (event_sched_in()/out()).
  void Reschedule();
  void SchedIn(MockEvent& ev);
  void SchedOut(MockEvent& ev);
  void EnableEvent(MockEvent& ev);   // _perf_event_enable()
  void DisableEvent(MockEvent& ev);  // _perf_event_disable()
  void UpdateUserPage(MockEvent& ev);

  OutputContext Context() const;  // current task (or idle) on CPU 0, now
  OutputContext ContextOf(const SampleData& d) const;  // the interrupted context of `d`
  // Advances the clock by `dt` ns: accrues times and clock counts, fires
  // hrtimers and ticks in time order.
  void Advance(uint64_t dt);
  void Tick();
  void FireClock(MockEvent& ev);
  // A tracepoint firing in the current task on CPU 0 (perf_tp_event()):
  // `values` are the entry's fields (common_pid is filled in here).
  // `count`: the occurrences it counts (__perf_count(), e.g. sched_stat_runtime's ns).
  void TracepointFire(const std::string& name, TraceValues values, const SampleData& data, uint64_t count = 1);
  // update_curr(): the running task's runtime since exec_start_ (sched_stat_runtime).
  void UpdateCurr();
  // A memory access or an execution at `addr` by the task (perf_bp_event()).
  void BreakpointAccess(uint64_t addr, uint32_t width, Access access, uint64_t ip);
  // The core PMU: clock-driven counts over [from, to) ns, and `n` occurrences of `kind`.
  void CoreClockTicks(uint64_t from, uint64_t to);
  void HardwareCount(HwKind kind, uint64_t n);
  // A software event occurrence on CPU 0 (perf_sw_event()).
  void SoftwareOccurrence(uint64_t config, const SampleData& data);
  // __perf_event_overflow() / __perf_event_account_interrupt().
  int Overflow(MockEvent& ev, int throttle, const SampleData& data);
  void ThrottleGroup(MockEvent& ev, const OutputContext& ctx);
  void UnthrottleGroup(MockEvent& ev, bool start_self);
  void LogThrottle(MockEvent& ev, bool unthrottle);  // perf_log_throttle(), in Context()
  void LogThrottle(MockEvent& ev, bool unthrottle, const OutputContext& ctx);
  SampleData UserData(uint64_t ip, uint64_t addr) const;
  // The task in the kernel at `ip` (kernel regs, a kernel-then-user stack).
  SampleData KernelData(uint64_t ip) const;

  // Side-band delivery (perf_iterate_sb()): CPU-wide side-band events of CPU 0
  // (most recent first), then the current task's events, each if enabled.
  template <typename Fn>
  void ForEachSideBand(Fn fn);
  void MmapEvent(uint64_t addr, uint64_t len, bool exec);  // perf_event_mmap()
  void SwitchEvent(bool sched_in, bool task);               // perf_event_switch(): the task or idle
  uint64_t NewRegion(uint64_t pages);
  // Workload::kExec in the forked child: COMM (COMM_EXEC) and the binary's mapping.
  void ExecInChild(pid_t child, const std::string& path, std::vector<std::unique_ptr<MockEvent>>& copies);

  MockProfile profile_;
  MachineInfo machine_;
  Task task_;
  uint64_t now_ = kMockStartTimeNs;
  uint64_t tick_ns_ = 4000000;      // NSEC_PER_SEC / HZ
  uint64_t max_samples_per_tick_ = 400;
  uint64_t tick_seq_ = 0;           // perf_throttled_seq
  uint64_t exec_start_ = kMockStartTimeNs;  // se.exec_start: update_curr()'s last accounting
  uint64_t next_id_ = 1;            // perf_event_id
  pid_t next_pid_ = kMockPid + 1;
  uint64_t locked_vm_ = 0;          // user->locked_vm, pages (mlock accounting)
  uint64_t pinned_vm_ = 0;          // mm->pinned_vm, pages

  std::vector<std::unique_ptr<MockEvent>> events_;  // creation order; includes closed-but-mapped ones
  std::map<int, MockEvent*> fds_;
  std::map<uintptr_t, Mapping> mappings_;
  std::map<const MockRingBuffer*, std::pair<uint64_t, uint64_t>> rb_charge_;  // locked_vm, pinned_vm charged
  std::map<uintptr_t, size_t> foreign_mappings_;  // mmap(2) of fds that are not events
};

}  // namespace perftest::mock
