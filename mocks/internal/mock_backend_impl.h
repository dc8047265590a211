// MockBackend's class, one kernel concept per source file (kernel/events/core.c's
// own seams), each rule beside its citation. Internal to mocks/.
//   mock_open.cc        perf_event_open(): perf_copy_attr() (attr_validation.h),
//                       perf_event_alloc(), group checks, perf_event_validate_size()
//   mock_pmu_init.cc    perf_init_event(): the PMUs' event_init()
//   mock_ioctl.cc       _perf_ioctl()
//   mock_backend.cc     read, mmap/munmap, close, prctl, poll, fcntl; event release
//   mock_sched.cc       scheduling and multiplexing (event_sched_in/out, ctx_resched,
//                       merge_sched_in, perf_rotate_context), enable/disable
//   mock_time.cc        the clock, the tick, cpu-clock/task-clock hrtimers
//   mock_counting.cc    occurrences: software, tracepoint, breakpoint, hardware counts
//   mock_overflow.cc    __perf_event_overflow(): throttling, PERF_EVENT_IOC_REFRESH
//   mock_sideband.cc    COMM, MMAP/MMAP2, FORK/EXIT/NAMESPACES, SWITCH records
//   mock_user_page.cc   the user page, RDPMC, RDTSC
//   mock_workloads.cc   RunWorkload(): what each workload does
//   mock_tasks.cc       child tasks: inherit, exec, exit
//   mock_signals.cc, mock_epoll.cc, mock_fds.cc, mock_permissions.cc,
//   mock_aux.cc, mock_uprobes.cc: as their headers say.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "harness/backend.h"
#include "harness/records.h"
#include "mocks/attr_validation.h"
#include "mocks/breakpoint_pmu.h"
#include "mocks/event_output.h"
#include "mocks/internal/mock_event.h"
#include "mocks/mock_backend.h"
#include "mocks/mock_control.h"
#include "mocks/mock_ring_buffer.h"
#include "mocks/profile.h"
#include "mocks/sched_clock.h"
#include "mocks/tracepoint_pmu.h"

namespace perftest::mock {

// The open event fds: the event of each fd, in a vector indexed by fd (a
// lookup is one index), iterated in fd order as (fd, event) pairs.
class FdTable {
 public:
  MockEvent* Find(int fd) const {
    return fd >= 0 && static_cast<size_t>(fd) < slots_.size() ? slots_[fd] : nullptr;
  }
  void Insert(int fd, MockEvent* ev) {
    if (slots_.size() <= static_cast<size_t>(fd)) slots_.resize(static_cast<size_t>(fd) + 1, nullptr);
    slots_[fd] = ev;
  }
  void Erase(int fd) {
    if (Find(fd) != nullptr) slots_[fd] = nullptr;
  }

  class const_iterator {
   public:
    const_iterator(const std::vector<MockEvent*>* s, size_t i) : s_(s), i_(i) { Skip(); }
    std::pair<int, MockEvent*> operator*() const { return {static_cast<int>(i_), (*s_)[i_]}; }
    const_iterator& operator++() {
      ++i_;
      Skip();
      return *this;
    }
    bool operator!=(const const_iterator& o) const { return i_ != o.i_; }

   private:
    void Skip() {
      while (i_ < s_->size() && (*s_)[i_] == nullptr) ++i_;
    }
    const std::vector<MockEvent*>* s_;
    size_t i_;
  };
  const_iterator begin() const { return {&slots_, 0}; }
  const_iterator end() const { return {&slots_, slots_.size()}; }

 private:
  std::vector<MockEvent*> slots_;
};

// The CPU whose counters an event uses while active (the task runs on CPU 0).
inline int CountersCpu(const MockEvent& e) { return e.pid == -1 ? e.cpu : 0; }

// The Backend, and the mock-only controls (mocks/mock_control.h) that
// MakeMockBackendWithControl() hands out beside it.
class MockBackend final : public Backend, public MockControl {
 public:
  explicit MockBackend(MockProfile profile, MockModels models = {});
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
  Result<int> RunInChild(const ChildCredentials& creds, const std::function<int(Backend&)>& fn) override;
  Result<pid_t> SpawnTask() override;
  Result<WorkloadResult> RunInTask(pid_t pid, const Workload& w) override;
  Result<void> ExitTask(pid_t pid) override;
  Result<int> EpollCreate() override;
  Result<int> EpollAdd(int epfd, int fd, uint32_t events) override;
  Result<int> EpollWait(int epfd, std::span<epoll_event> out, int timeout_ms) override;
  Result<uint64_t> ReadPmc(uint32_t index) override;  // mock_user_page.cc
  Result<uint64_t> ReadCycleCounter() override;     // mock_user_page.cc
  // MockControl (mock_aux.cc).
  void SetVmxOperation(bool on) override { PtHandleVmx(on); }
  const pt_sim::GroundTruth* PtGroundTruth(int fd) override;
  void ServeTask(pid_t pid, pid_t tid, std::string comm) override {
    served_real_task_ = true;
    task_.pid = pid;
    task_.tid = tid;
    task_.comm = std::move(comm);
  }
  void ServedExec(const std::string& path) override { ExecCurrent(path, /*simulate_program=*/false); }
  void SetServedContext(uint64_t ip, std::vector<uint64_t> callers) override {
    task_.served_context = true;
    task_.served_ip = ip;
    task_.served_callers = std::move(callers);
  }
  void ServedFork(pid_t child_pid, pid_t child_tid) override {
    Task child = task_;
    child.pid = child_pid;
    child.tid = child_tid;
    ForkEvent(child);
  }
  void ServedExit() override { ExitEvent(task_); }
  void SetSignalSink(SignalSink sink) override { signal_sink_ = std::move(sink); }
  void ServedComm(const std::string& comm) override {
    task_.comm = comm.substr(0, 15);  // TASK_COMM_LEN - 1
    CommEvent(/*exec=*/false);
  }
  void ServedMmap(const ServedMapping& m) override {
    MmapEvent(MmapRegion{m.addr, m.len, m.pgoff, m.exec, m.maj, m.min, m.ino, m.filename});
  }

 private:
  // The simulated current task.
  struct Task {
    pid_t pid = kMockPid;
    pid_t tid = kMockPid;
    std::string comm = kMockComm;
    bool running = true;  // on CPU 0; false while it sleeps (CPU 0 idles)
    bool retiring = false;  // busy in user code (Spin): the core PMU sees instructions retire
    SampleData::Stack stack = SampleData::Stack::kUserSpin;  // what an interrupt would find
    // A real task (tools/exec): where an interrupt finds it instead (SetServedContext).
    bool served_context = false;
    uint64_t served_ip = 0;
    std::vector<uint64_t> served_callers;
  };

  // One mmap(2) handed out.
  struct Mapping {
    size_t length = 0;
    MockEvent* event = nullptr;                // the event whose fd was mapped
    std::shared_ptr<MockRingBuffer> rb;
    bool aux = false;                          // the AUX area mapping (offset aux_offset)
  };

  // The simulated task's credentials and limits (mock_permissions.cc): the
  // profile's at creation, a child's inside RunInChild.
  struct Credentials {
    uid_t uid = 0;
    uint64_t caps = 0;             // bit n: capability n (CAP_PERFMON is 38)
    uint64_t memlock_rlimit = 0;   // RLIMIT_MEMLOCK, bytes
    uint64_t nofile = 0;           // RLIMIT_NOFILE; 0: no limit modelled
  };
  // --- mock_permissions.cc ---
  static Credentials ProfileCredentials(const MockProfile& p);
  bool Perfmon() const;   // perfmon_capable(): CAP_PERFMON or CAP_SYS_ADMIN
  bool SysAdmin() const;  // capable(CAP_SYS_ADMIN)
  bool IpcLock() const;   // capable(CAP_IPC_LOCK)
  // perf_mmap_calc_limits(): `pages` more locked pages fill user->locked_vm up
  // to perf_event_mlock_kb * ncpus (*user_extra), the rest counts against
  // RLIMIT_MEMLOCK as pinned_vm (*extra); false (EPERM) when that is over the
  // limit, perf_event_paranoid > -1 and the task lacks CAP_IPC_LOCK.
  bool MlockLimits(uint64_t pages, uint64_t* user_extra, uint64_t* extra) const;
  // find_lively_task_by_vpid(): ESRCH unless `pid` is 0, the current task
  // or (inside RunInChild) its parent.
  int FindTask(pid_t pid, std::string* why) const;
  // perf_check_permission(): perfmon_capable() or
  // ptrace_may_access(PTRACE_MODE_READ_REALCREDS): EACCES for the parent of a
  // child without CAP_PERFMON/CAP_SYS_ADMIN/CAP_SYS_PTRACE whose uid differs
  // or whose capabilities are not a superset of the parent's.
  int CheckTaskPermission(pid_t pid, std::string* why) const;
  // perf_cgroup_connect(): `fd` must be a directory of a cgroup hierarchy
  // with the perf_event controller. EBADF when it is no cgroup directory,
  // ENOENT for a cgroup v1 directory (the host binds perf_event to v2).
  int CgroupConnect(int fd, std::string* why) const;

  // --- mock_fds.cc: the real fds behind events ---
  // get_unused_fd_flags(): a real fd for a new event, FD_CLOEXEC as asked;
  // errno on failure. A dup of one placeholder memfd (or one such dup that a
  // closed event left, reused): no memfd per event.
  int NewEventFd(bool cloexec, int* fd);
  // The fd of an event that is gone (close, or an open that failed).
  void ReleaseEventFd(int fd, bool memfd_backed, bool cloexec);
  // Gives `ev` its own memfd (ev.memfd) behind the same fd number, before
  // anything that needs the file itself: mmap(2) (the ring buffer lives in
  // it) and fcntl(2) commands that change or share the open file. errno on failure.
  int BackWithMemfd(MockEvent& ev);
  // Whether `fd` is one of those kept for reuse: closed, as far as the caller knows.
  bool IsSpareFd(int fd) const;
  // The fd is open and no spare: fcntl(F_GETFD) works on it.
  bool FdIsOpen(int fd) const;
  void CloseAllFds();

  // --- mock_open.cc: perf_event_open() ---
  // What perf_event_open() knows once the fd is taken: the call and what the
  // group_fd and pid resolved to (OpenEvent() fills those in).
  struct OpenRequest {
    const perf_event_attr& attr;  // the kernel's copy (perf_copy_attr())
    pid_t pid;
    int cpu;
    int group_fd;
    unsigned long flags;
    int fd;                       // the event's fd (get_unused_fd_flags())
    bool cloexec;
    AttrLimits limits;
    bool task = false;            // a per-task event (pid != -1, no PERF_FLAG_PID_CGROUP)
    bool cgroup = false;          // PERF_FLAG_PID_CGROUP: pid is a cgroup fd
    MockEvent* group_leader = nullptr;
    MockEvent* output_event = nullptr;  // PERF_FLAG_FD_OUTPUT
  };
  // What perf_init_event() learnt of the event's PMU, for the checks after it.
  struct PmuCaps {
    bool software = false;     // PERF_PMU_CAP_NO_NMI: the software PMUs
    bool no_exclude = false;   // PERF_PMU_CAP_NO_EXCLUDE
    bool no_task_ctx = false;  // perf_invalid_context: no task events (uncore)
  };
  AttrLimits Limits() const;
  int OpenEvent(OpenRequest& req, std::string* why);
  int PerfEventAlloc(const OpenRequest& req, std::unique_ptr<MockEvent>* out, PmuCaps* caps, std::string* why);
  int PerfEventSetClock(const MockEvent& ev, const PmuCaps& caps, std::string* why) const;
  int FindGetContext(const OpenRequest& req, const MockEvent& ev, std::string* why) const;
  int CheckGroup(const MockEvent& leader, const MockEvent& ev, std::string* why) const;
  int PerfGetAuxEvent(const OpenRequest& req, std::string* why) const;
  // --- mock_pmu_init.cc: perf_init_event() ---
  int PerfInitEvent(MockEvent& ev, const AttrLimits& limits, PmuCaps* caps, std::string* why);
  int TracepointEventInit(MockEvent& ev, std::string* why);           // perf_tp_event_init()
  int BreakpointEventInit(MockEvent& ev, std::string* why);           // hw_breakpoint_event_init()
  BreakpointTask BreakpointTaskOf(const MockEvent& ev) const;         // bp->hw.target, is_compat_bp()

  // --- mock_ioctl.cc: _perf_ioctl() ---
  Result<int> IoctlSlow(int fd, unsigned long request, uintptr_t arg);  // Ioctl() but for its hot path
  void ResetEvent(MockEvent& ev);  // _perf_event_reset()
  // event->attr.type as the kernel keeps it (the clock PMUs' own types, clock_pmu_types).
  uint32_t KernelAttrType(const MockEvent& ev) const;
  int SetOutput(MockEvent& ev, MockEvent* output, std::string* why);  // perf_event_set_output()
  int PeriodIoctl(MockEvent& ev, uintptr_t arg, std::string* why);    // _perf_event_period()
  int ModifyBreakpoint(MockEvent& ev, const perf_event_attr& attr, std::string* why);  // perf_event_modify_breakpoint()

  // --- mock_backend.cc: the rest of the syscall surface ---
  MockEvent* FindFd(int fd) { return fds_.Find(fd); }
  void DestroyEvent(MockEvent* ev);
  // A default MockEvent for perf_event_open(): one that DestroyEvent() freed
  // (RecycleEvent(): reset, kept in free_events_), else a new one. Saves the
  // allocation on the open/close path (bench/mock_bench.cc).
  std::unique_ptr<MockEvent> NewEvent();
  void RecycleEvent(std::unique_ptr<MockEvent> ev);
  Result<size_t> ReadSlow(int fd, void* buf, size_t len);  // Read() but for its hot path
  void ReleaseBuffer(const std::shared_ptr<MockRingBuffer>& rb);     // perf_mmap_close(), last mapping

  // --- mock_aux.cc: the AUX area and the intel_pt PMU ---
  int PtEventInit(MockEvent& ev, const Pmu& pmu, std::string* why);  // pt_event_init() + exclusive_event_init()
  Result<void*> MmapAux(MockEvent& ev, size_t length, int prot, off_t offset, const std::string& call);  // perf_mmap() AUX part
  void UnmapAux(const Mapping& m);   // perf_mmap_close() of an AUX mapping
  bool PtStart(MockEvent& ev);       // pt_event_add(PERF_EF_START): false = cannot run now
  void PtStop(MockEvent& ev);        // pt_event_del() -> pt_event_stop(PERF_EF_UPDATE)
  void PtInstructions(uint64_t n);   // the task retired `n` user instructions: trace for ACTIVE PT events
  void PtSyscalls(uint64_t n);       // the task made `n` system calls: trace for ACTIVE PT events
  void PtEnd(MockEvent& ev, const AuxArea::End& e);  // PERF_RECORD_AUX, wakeup, disable
  void LogItraceStart(MockEvent& ev);  // perf_log_itrace_start()
  // intel_pt_handle_vmx(): KVM turned VMX operation on or off on every CPU
  // (mock_aux.cc; a CPU whose PT cannot trace in VMX operation).
  void PtHandleVmx(bool on);
  bool pt_vmx_on_ = false;  // pt->vmx_on
  // ServeTask(): the task is a real one (tools/exec): no user-page RDPMC or TSC time.
  bool served_real_task_ = false;
  SignalSink signal_sink_;  // SetSignalSink(): a served task's signals
  // --- mock_tasks.cc: child tasks (inherit, exit, exec) ---
  // copy_process(): a child of the current task (a thread of it with
  // `thread`): sched_process_fork, PERF_RECORD_FORK, the inherited copies.
  Task ForkTask(bool thread);
  // Runs `fn` with `t` as the task on CPU 0 (the current task off CPU meanwhile).
  Result<WorkloadResult> RunAsTask(Task& t, const std::function<Result<WorkloadResult>()>& fn);
  // exec(2) in the current task: perf_event_exec(), COMM, then (with
  // `simulate_program`) the program's text MMAP and page faults.
  void ExecCurrent(const std::string& path, bool simulate_program = true);
  // perf_event_exit_task() of `t`: EXIT records, copies folded and freed, its own events EXIT.
  void ExitTaskModel(const Task& t);
  // perf_event_exit_event() of an inherited copy: sync_child_event() and free.
  void ExitChildEvent(MockEvent* child);
  // perf_event_release_kernel(): the copies of a closed event are freed.
  void FreeChildren(MockEvent* ev);
  void FreeCopy(MockEvent* c);
  // --- mock_signals.cc: overflow notification by real signals to this process ---
  // __perf_event_overflow()'s fasync wakeup (SIGIO/F_SETSIG, si_code `reason`).
  void SignalOverflow(MockEvent& ev, int reason);
  // perf_pending_task() -> perf_sigtrap(): SIGTRAP TRAP_PERF with `addr`.
  void SignalSigtrap(MockEvent& ev, uint64_t addr);
  // fcntl(2) commands on an event fd that touch its fasync state (F_SETOWN,
  // F_GETOWN, F_SETOWN_EX, F_GETOWN_EX, F_SETSIG, F_GETSIG, O_ASYNC in
  // F_SETFL); nullopt for the rest, which the memfd answers (F_GETFL adds O_ASYNC).
  std::optional<Result<int>> EventFcntl(MockEvent& ev, int fd, int cmd, long arg);
  // perf_poll() of `ev`: EPOLLHUP without a buffer or once its task exited,
  // else rb->poll, taken (mock_epoll.cc).
  uint32_t PerfPoll(MockEvent& ev);

  // --- mock_sched.cc: scheduling and multiplexing ---
  // Whether `ev` is ACTIVE: enabled, its group leader enabled, and (task
  // events) the task on a CPU the event accepts.
  bool Schedulable(const MockEvent& ev) const;
  // Whether the hardware events `joining` find counters next to the active ones.
  bool CountersFree(const std::vector<const MockEvent*>& joining) const;
  // Starts/stops events whose schedulability changed (event_sched_in()/out()).
  void Reschedule();
  // Reschedule()'s test for an inactive, schedulable event other than a
  // core-PMU leader: a member goes on with its leader (a core one where
  // counters are free), a leader where its group's core members fit.
  bool MayScheduleIn(const MockEvent& e) const;
  // ctx_sched_in() for the core PMU: pinned then flexible groups, CPU contexts
  // before the task's, in group_index order; merge_sched_in() rules.
  void ScheduleCoreGroups();
  // group_can_go_on(): exclusive groups and can_add_hw.
  bool GroupCanGoOn(const MockEvent& leader, bool can_add_hw) const;
  // perf_rotate_context(): at each multiplexing interval (the tick here).
  void RotateCoreGroups();
  void SchedIn(MockEvent& ev);
  void SchedOut(MockEvent& ev);
  void EnableEvent(MockEvent& ev);   // _perf_event_enable()
  void DisableEvent(MockEvent& ev);  // _perf_event_disable()

  // --- mock_user_page.cc ---
  void UpdateUserPage(MockEvent& ev);  // perf_event_update_userpage()

  // --- mock_time.cc: the clock and the tick ---
  OutputContext Context() const;  // current task (or idle) on CPU 0, now
  OutputContext ContextOf(const SampleData& d) const;  // the interrupted context of `d`
  SampleData UserData(uint64_t ip, uint64_t addr) const;
  // The task in the kernel at `ip` (kernel regs, a kernel-then-user stack).
  SampleData KernelData(uint64_t ip) const;
  // Advances the clock by `dt` ns: accrues times and clock counts, fires
  // hrtimers and ticks in time order.
  void Advance(uint64_t dt);
  void Tick();
  void FireClock(MockEvent& ev);
  // update_curr(): the running task's runtime since exec_start_ (sched_stat_runtime).
  void UpdateCurr();

  // --- mock_counting.cc: occurrences ---
  // A tracepoint firing in the current task on CPU 0 (perf_tp_event()):
  // `values` are the entry's fields (common_pid is filled in here).
  // `count`: the occurrences it counts (__perf_count(), e.g. sched_stat_runtime's ns).
  void TracepointFire(const std::string& name, TraceValues values, const SampleData& data, uint64_t count = 1);
  // A memory access or an execution at `addr` by the task (perf_bp_event()).
  void BreakpointAccess(uint64_t addr, uint32_t width, Access access, uint64_t ip);
  // mock_uprobes.cc: the task executes the function at `func` `times` times
  // (each call: its entry, then its return); uprobe events on that file offset count.
  void UprobeExecute(uint64_t func, uint64_t times);
  // The core PMU: clock-driven counts over [from, to) ns, and `n` occurrences of `kind`.
  void CoreClockTicks(uint64_t from, uint64_t to);
  void HardwareCount(HwKind kind, uint64_t n);
  // A software event occurrence on CPU 0 (perf_sw_event()).
  void SoftwareOccurrence(uint64_t config, const SampleData& data);

  // --- mock_overflow.cc: __perf_event_overflow() ---
  int Overflow(MockEvent& ev, int throttle, const SampleData& data);
  // _perf_event_refresh(): PERF_EVENT_IOC_REFRESH adds `refresh` to the budget and enables.
  int Refresh(MockEvent& ev, int refresh, std::string* why);
  // The overflow's side of the budget: true when this overflow exhausts it.
  bool EventLimitReached(MockEvent& ev);
  void ThrottleGroup(MockEvent& ev, const OutputContext& ctx);
  void UnthrottleGroup(MockEvent& ev, bool start_self);
  void LogThrottle(MockEvent& ev, bool unthrottle);  // perf_log_throttle(), in Context()
  void LogThrottle(MockEvent& ev, bool unthrottle, const OutputContext& ctx);

  // --- mock_sideband.cc: side-band records ---
  // Side-band delivery (perf_iterate_sb()): CPU-wide side-band events of CPU 0
  // (most recent first), then the current task's events, each if enabled.
  template <typename Fn>
  void ForEachSideBand(Fn fn);
  // A mapping perf_event_mmap() reports: anonymous (Anon()) or of a file.
  struct MmapRegion {
    uint64_t addr = 0, len = 0, pgoff = 0;
    bool exec = false;             // PROT_EXEC (else PERF_RECORD_MISC_MMAP_DATA, for mmap_data)
    uint32_t maj = 0, min = 0;     // the file's device (MMAP2)
    uint64_t ino = 0;              // its inode (MMAP2)
    std::string filename = "//anon";
    // An anonymous mapping: "//anon", pgoff the address (vm_pgoff << PAGE_SHIFT), no inode.
    static MmapRegion Anon(uint64_t addr, uint64_t len, bool exec) { return {addr, len, addr, exec}; }
  };
  void MmapEvent(const MmapRegion& m);  // perf_event_mmap()
  void CommEvent(bool exec);            // perf_event_comm() of the current task
  void ForkEvent(const Task& child);    // perf_event_fork(): FORK, NAMESPACES
  void ExitEvent(const Task& t);        // perf_event_exit_task(): EXIT
  void SwitchEvent(bool sched_in, const Task* self, const Task* other);  // perf_event_switch(); nullptr: idle

  // --- mock_workloads.cc: RunWorkload() by kind ---
  uint64_t NewRegion(uint64_t pages);
  void TouchPages(uint64_t begin, uint64_t pages, uint64_t step_ns);
  void SleepOnce(uint64_t ns);
  pid_t ForkAndWait(const Workload& w);  // one child of Fork/Threads/ForkExec
  void AccessMemory(uint64_t addr, uint32_t width, bool write, uint64_t count);
  void Syscalls(uint64_t count);

  MockProfile profile_;
  MockModels models_;  // MakeMockBackend()'s: models_.pt_trace makes intel_pt trace sources
  MachineInfo machine_;
  Task task_;
  // The counter sched_clock() runs on (profile sched_clock_counter), if any.
  std::optional<SchedClockCounter> sched_clock_ = MakeSchedClockCounter(
      {profile_.sched_clock_counter.khz, profile_.sched_clock_counter.bits, profile_.sched_clock_counter.start},
      profile_.arch);
  Credentials creds_;
  // Inside RunInChild: the parent (a task that exists, of another pid) and its credentials.
  std::optional<pid_t> parent_pid_;
  Credentials parent_creds_;
  uint64_t now_ = kMockStartTimeNs;
  uint64_t tick_ns_ = 4000000;      // NSEC_PER_SEC / HZ
  uint64_t max_samples_per_tick_ = 400;
  uint64_t tick_seq_ = 0;           // perf_throttled_seq
  uint64_t exec_start_ = kMockStartTimeNs;  // se.exec_start: update_curr()'s last accounting
  uint64_t next_id_ = 1;            // perf_event_id
  uint64_t group_seq_ = 0;          // perf_event_groups.index
  pid_t next_pid_ = kMockPid + 1;
  std::map<pid_t, Task> spawned_;  // SpawnTask()'s live tasks, by tid
  std::map<int, std::vector<std::pair<int, uint32_t>>> epolls_;  // epoll fd -> {fd, events} added
  uint64_t locked_vm_ = 0;          // user->locked_vm, pages (mlock accounting)
  uint64_t pinned_vm_ = 0;          // mm->pinned_vm, pages

  std::vector<std::unique_ptr<MockEvent>> events_;  // creation order; includes closed-but-mapped ones
  static constexpr size_t kMaxFreeEvents = 16;
  std::vector<std::unique_ptr<MockEvent>> free_events_;  // fresh (default) events for NewEvent()
  FdTable fds_;
  int placeholder_fd_ = -1;  // the memfd that unbacked event fds are dups of (mock_fds.cc)
  std::vector<std::pair<int, bool>> spare_fds_;  // {fd, FD_CLOEXEC}: dups of it, of closed events, highest fd first
  AttrLimits limits_;  // Limits() but for `privileged`: from the profile, fixed at construction
  std::map<uintptr_t, Mapping> mappings_;
  std::map<const MockRingBuffer*, std::pair<uint64_t, uint64_t>> rb_charge_;  // locked_vm, pinned_vm charged
  std::map<uintptr_t, size_t> foreign_mappings_;  // mmap(2) of fds that are not events
};

}  // namespace perftest::mock
