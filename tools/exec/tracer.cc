#include "tools/exec/tracer.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "tools/exec/sysfs_view.h"
#include "tools/exec/syscall_filter.h"
#include "tools/exec/tracer_impl.h"

namespace perftest::exec {
namespace {

volatile sig_atomic_t g_terminate = 0;
void OnTerminate(int sig) { g_terminate = sig; }
volatile sig_atomic_t g_sample_tick = 0;
void OnSampleTick(int) { g_sample_tick = 1; }
constexpr long kSampleIntervalNs = 1'000'000;  // 1 ms: perf record's default 4000 Hz is served at 1000 Hz

// The state letter of /proc/<tid>/stat (proc(5): R running, S sleeping, ...), '?' if gone.
char TaskState(pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", tid);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return '?';
  char buf[512];
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return '?';
  buf[n] = '\0';
  const char* close_paren = std::strrchr(buf, ')');
  return close_paren != nullptr && close_paren[1] == ' ' ? close_paren[2] : '?';
}

// The third field of /proc/<tid>/schedstat: how many times the task got a CPU.
uint64_t Timeslices(pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/schedstat", tid);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[128];
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  unsigned long long run = 0, wait = 0, slices = 0;
  return std::sscanf(buf, "%llu %llu %llu", &run, &wait, &slices) == 3 ? slices : 0;
}

int StatusToExit(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 125;
}

}  // namespace

int ProbePerfEventOpenBlocked() {
  const long rc = syscall(SYS_perf_event_open, nullptr, 0, -1, -1, 0);
  if (rc >= 0) {
    close(static_cast<int>(rc));
    return 0;
  }
  return errno == EFAULT ? 0 : errno;
}

Tracer::Tracer(const ExecOptions& options, Intercept mode, PerfFdRange range, MockProfile profile)
    : options_(options), mode_(mode), self_(getpid()), fds_(range), backends_(profile, &tasks_),
      inject_(options.inject), debug_(getenv("PERFTEST_EXEC_DEBUG") != nullptr) {
  for (const auto& pmu : profile.pmus) {
    if (pmu.name == "uprobe") uprobe_type_ = pmu.type;
  }
  backends_.SetSignalSink([this](pid_t pid, pid_t tid, const siginfo_t& mock_info) {
    siginfo_t info = mock_info;
    if (info.si_signo != SIGTRAP && info.si_code > 0) {  // F_SETSIG's si_fd: the program's fd, not the tracer's
      if (const auto* fds = fds_.Process(pid)) {
        for (const auto& [fd, e] : *fds) {
          if (e.tracer_fd == info.si_fd) info.si_fd = fd;
        }
      }
    }
    pending_siginfo_[tid].push_back(info);
    if (syscall(SYS_tgkill, pid, tid, info.si_signo) != 0) pending_siginfo_[tid].pop_back();
  });
}

pid_t Tracer::TgidOf(pid_t tid) {
  if (const TrackedTask* t = tasks_.Find(tid); t != nullptr && t->tgid != 0) return t->tgid;
  std::ifstream in("/proc/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Tgid:", 0) == 0) return static_cast<pid_t>(std::strtol(line.c_str() + 5, nullptr, 10));
  }
  return tid;
}

std::string Tracer::CommOf(pid_t tid) {
  std::ifstream in("/proc/" + std::to_string(tid) + "/comm");
  std::string comm;
  std::getline(in, comm);
  return comm;
}

void Tracer::Resume(pid_t tid, int sig) {
  ptrace(mode_ == Intercept::kSyscallStops ? PTRACE_SYSCALL : PTRACE_CONT, tid, nullptr,
         reinterpret_cast<void*>(static_cast<uintptr_t>(sig)));
}

int Tracer::StartChild() {
  const PerfFdRange range = fds_.range();
  const pid_t pid = fork();
  if (pid < 0) return -errno;
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != self_) _exit(125);
    if (ptrace(PTRACE_TRACEME, 0, nullptr, nullptr) != 0) {
      std::fprintf(stderr, "perftest exec: PTRACE_TRACEME: %s\n", std::strerror(errno));
      _exit(125);
    }
    raise(SIGSTOP);
    if (mode_ == Intercept::kSeccomp) {
      if (const int err = InstallServeFilter(range); err != 0) {
        std::fprintf(stderr, "perftest exec: cannot install the seccomp filter: %s\n", std::strerror(err));
        _exit(125);
      }
    }
    std::vector<char*> argv;
    for (const std::string& a : options_.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "perftest exec: cannot execute %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, __WALL) != pid || !WIFSTOPPED(status)) return -ECHILD;
  const long opts = PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE |
                    PTRACE_O_TRACEEXEC | PTRACE_O_TRACEEXIT | PTRACE_O_TRACESECCOMP | PTRACE_O_EXITKILL;
  if (ptrace(PTRACE_SETOPTIONS, pid, nullptr, reinterpret_cast<void*>(opts)) != 0) {
    const int err = errno;
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, __WALL);
    return -err;
  }
  root_ = pid;
  tasks_.Add(pid, pid, 0);
  tasks_.Find(pid)->seen_stop = true;
  Resume(pid);
  return pid;
}

int Tracer::Run() {
  if (!options_.log_path.empty()) {
    if (const int err = log_.Open(options_.log_path); err != 0) {
      std::fprintf(stderr, "perftest exec: --log=%s: %s\n", options_.log_path.c_str(), std::strerror(err));
      return 2;
    }
  }
  // Ctrl-C and Ctrl-\ reach the program (same process group); perftest
  // waits for it to end. SIGTERM/SIGHUP: the program is killed, then perftest ends.
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  struct sigaction old_int {}, old_quit {};
  if (options_.sysfs_view) {
    std::string why;
    if (!EnterSysfsView(backends_.Machine(), &why)) {
      std::fprintf(stderr, "perftest exec: the profile's PMUs are not shown in sysfs: %s\n", why.c_str());
    }
  }
  const int started = StartChild();
  if (started < 0) {
    std::fprintf(stderr, "perftest exec: cannot start %s under ptrace: %s\n", options_.argv[0].c_str(),
                 std::strerror(-started));
    return 125;
  }
  sigaction(SIGINT, &ign, &old_int);
  sigaction(SIGQUIT, &ign, &old_quit);
  struct sigaction term {};
  term.sa_handler = OnTerminate;  // no SA_RESTART: waitpid(2) returns EINTR
  sigaction(SIGTERM, &term, nullptr);
  sigaction(SIGHUP, &term, nullptr);
  Loop();
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  if (g_terminate != 0) return 128 + g_terminate;
  return root_status_ ? StatusToExit(*root_status_) : 125;
}

void Tracer::KillAll() {
  for (pid_t tid : tasks_.Live()) kill(tid, SIGKILL);
}

void Tracer::Loop() {
  bool killed = false;
  // Every stop that is reportable now is collected before any is handled:
  // do_wait() scans the tracer's own children first and its ptraced list in
  // attach order, so a task that stops again at once (a poll loop) would
  // otherwise be reported every time and starve the others.
  std::vector<std::pair<pid_t, int>> ready;
  for (;;) {
    ready.clear();
    int status = 0;
    const pid_t first = waitpid(-1, &status, __WALL);
    if (first < 0) {
      if (errno == EINTR) {
        if (g_terminate != 0 && !killed) {
          KillAll();
          killed = true;
        }
        if (g_sample_tick != 0) {
          g_sample_tick = 0;
          SampleRound();
        }
        continue;
      }
      break;  // ECHILD: every traced task is reaped
    }
    ready.emplace_back(first, status);
    for (pid_t more; (more = waitpid(-1, &status, __WALL | WNOHANG)) > 0;) ready.emplace_back(more, status);
    for (const auto& [tid, st] : ready) {
      if (debug_ && !WIFSTOPPED(st)) std::fprintf(stderr, "perftest exec: [%d] gone status=0x%x\n", tid, st);
      if (WIFEXITED(st) || WIFSIGNALED(st)) {
        OnGone(tid, st);
      } else if (WIFSTOPPED(st)) {
        OnStop(tid, st);
      }
    }
    if (g_sample_tick != 0) {
      g_sample_tick = 0;
      SampleRound();
    }
    if ((root_status_ || g_terminate != 0) && !killed) {
      // The program is done: what it left running goes too (no orphans).
      KillAll();
      killed = true;
    }
  }
}

void Tracer::OnNewTask(pid_t parent, pid_t child) {
  const pid_t tgid = TgidOf(child);
  const pid_t parent_tgid = TgidOf(parent);
  const TrackedTask* known = tasks_.Find(child);
  const bool seen = known != nullptr && known->seen_stop;
  tasks_.Add(child, tgid, parent);
  tasks_.Find(child)->seen_stop = seen;
  for (size_t b = 0; b < backends_.size(); ++b) {
    if (backends_.TaskOf(static_cast<int>(b)) != parent) continue;
    backends_.Sync(static_cast<int>(b));
    backends_.Control(static_cast<int>(b)).ServedFork(tgid, child);
  }
  if (tgid != parent_tgid) fds_.Fork(parent_tgid, tgid);
}

void Tracer::OnExec(pid_t tid) {
  unsigned long former = 0;
  ptrace(PTRACE_GETEVENTMSG, tid, nullptr, &former);
  const pid_t tgid = TgidOf(tid);
  if (static_cast<pid_t>(former) != tid) tasks_.ExecFromThread(static_cast<pid_t>(former), tgid);
  for (const PerfFd& e : fds_.Exec(tgid)) Release(e);
  char path[4096];
  const ssize_t n = readlink(("/proc/" + std::to_string(tid) + "/exe").c_str(), path, sizeof path - 1);
  backends_.Exec(tid, n > 0 ? std::string(path, static_cast<size_t>(n)) : CommOf(tid));
  // Until its first sample the new program is at its entry point, with no
  // frames: samples before then are not put at the mock's simulated addresses.
  Regs r;
  if (GetRegs(tid, &r)) {
    for (size_t b = 0; b < backends_.size(); ++b) {
      if (backends_.Counts(static_cast<int>(b), tid)) backends_.Control(static_cast<int>(b)).SetServedContext(r.rip, {});
    }
  }
}

void Tracer::OnStop(pid_t tid, int status) {
  const int sig = WSTOPSIG(status);
  const int event = status >> 16;
  if (debug_) {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    std::fprintf(stderr, "perftest exec: %ld.%06ld [%d] stop sig=%d event=%d\n", now.tv_sec, now.tv_nsec / 1000, tid, sig, event);
  }
  TrackedTask* t = tasks_.Find(tid);
  if (t == nullptr) {  // a new task's first stop, before its parent's event
    tasks_.Add(tid, TgidOf(tid), 0);
    t = tasks_.Find(tid);
  }
  ++t->stops;
  if (sig == (SIGTRAP | 0x80)) {
    __ptrace_syscall_info info{};
    if (ptrace(PTRACE_GET_SYSCALL_INFO, tid, sizeof info, &info) > 0 && info.op == PTRACE_SYSCALL_INFO_ENTRY) {
      OnSyscallEntry(tid);
    } else {
      Resume(tid);
    }
    return;
  }
  if (sig == SIGTRAP && event != 0) {
    unsigned long msg = 0;
    switch (event) {
      case PTRACE_EVENT_SECCOMP:
        OnSyscallEntry(tid);
        return;
      case PTRACE_EVENT_FORK:
      case PTRACE_EVENT_VFORK:
      case PTRACE_EVENT_CLONE:
        ptrace(PTRACE_GETEVENTMSG, tid, nullptr, &msg);
        OnNewTask(tid, static_cast<pid_t>(msg));
        break;
      case PTRACE_EVENT_EXEC:
        OnExec(tid);
        break;
      case PTRACE_EVENT_EXIT:
        if (std::optional<TaskFigures> f = ReadFigures(tid)) tasks_.Exited(tid, *f);
        backends_.TaskExited();
        for (size_t b = 0; b < backends_.size(); ++b) {
          if (backends_.TaskOf(static_cast<int>(b)) != tid) continue;
          backends_.Sync(static_cast<int>(b), /*force=*/true);
          backends_.Control(static_cast<int>(b)).ServedExit();
        }
        break;
      default:
        break;
    }
    Resume(tid);
    return;
  }
  if (!t->seen_stop && sig == SIGSTOP) {  // a new task's initial SIGSTOP (auto-attach)
    t->seen_stop = true;
    Resume(tid);
    return;
  }
  t->seen_stop = true;
  siginfo_t si;
  if (ptrace(PTRACE_GETSIGINFO, tid, nullptr, &si) != 0) {
    Resume(tid);  // a group-stop: end it (see tracer.h)
    return;
  }
  if (si.si_code == SI_TKILL && si.si_pid == self_) {
    // One of the mock's signals: it arrives with the kernel's siginfo.
    auto p = pending_siginfo_.find(tid);
    if (p != pending_siginfo_.end() && !p->second.empty() && p->second.front().si_signo == sig) {
      siginfo_t info = p->second.front();
      p->second.erase(p->second.begin());
      ptrace(PTRACE_SETSIGINFO, tid, nullptr, &info);
      Resume(tid, sig);
      return;
    }
  }
  if (sig == SIGSTOP && si.si_code == SI_TKILL && si.si_pid == self_ && sample_pending_.erase(tid) != 0) {
    OnSampleStop(tid);
    Resume(tid);  // the sampler's SIGSTOP is never delivered
    return;
  }
  Resume(tid, sig);  // a signal-delivery-stop: deliver the signal
}

void Tracer::OnGone(pid_t tid, int status) {
  const TrackedTask* t = tasks_.Find(tid);
  if (t != nullptr && t->alive) tasks_.Exited(tid, t->final_figures);
  backends_.TaskExited();
  pass_.erase(tid);
  const pid_t tgid = t != nullptr ? t->tgid : tid;
  if (tid == tgid) {
    for (const PerfFd& e : fds_.ReleaseProcess(tgid)) Release(e);
  }
  if (tid == root_) root_status_ = status;
}

void Tracer::ArmSampler() {
  if (sampler_armed_) return;
  struct sigaction tick {};
  tick.sa_handler = OnSampleTick;  // no SA_RESTART: waitpid(2) returns EINTR
  sigaction(SIGALRM, &tick, nullptr);
  sigevent sev{};
  sev.sigev_notify = SIGEV_SIGNAL;
  sev.sigev_signo = SIGALRM;
  timer_t timer;
  if (timer_create(CLOCK_MONOTONIC, &sev, &timer) != 0) return;
  itimerspec its{{0, kSampleIntervalNs}, {0, kSampleIntervalNs}};
  timer_settime(timer, 0, &its, nullptr);
  sampler_armed_ = true;
}

void Tracer::SampleRound() {
  for (pid_t tid : tasks_.Live()) {
    if (sample_pending_.count(tid) != 0) continue;
    bool counted = false;
    for (int b : sampling_) counted |= backends_.Counts(b, tid);
    if (!counted) continue;
    // Only a task that is runnable and was given the CPU since its last
    // sample (schedstat's pcount, sched_info_arrive()): one that waits on
    // the runqueue since would be stopped again before running a single
    // instruction (a loaded machine); one that sleeps has nothing to sample.
    // Not the runtime: it is brought up to date at ticks and at the task's
    // own clock reads, which would bias the rounds towards those.
    if (TaskState(tid) != 'R' || Timeslices(tid) == timeslices_[tid]) continue;
    if (syscall(SYS_tgkill, TgidOf(tid), tid, SIGSTOP) == 0) sample_pending_.insert(tid);
  }
}

void Tracer::OnSampleStop(pid_t tid) {
  timeslices_[tid] = Timeslices(tid);
  Regs r;
  if (!GetRegs(tid, &r)) return;
  std::vector<uint64_t> callers;
  WalkFramePointers(tid, r.rbp, 127, &callers);
  const pid_t tgid = TgidOf(tid);
  for (int b : sampling_) {
    if (!backends_.Counts(b, tid)) continue;
    MockControl& c = backends_.Control(b);
    MappingScanner& scan = scanners_[b];
    bool known = scan.Known(tgid, r.rip);
    for (size_t i = 0; i < callers.size() && known; ++i) known = scan.Known(tgid, callers[i]);
    if (!known) {
      for (const Mapping& m : scan.NewExecutable(tgid)) {
        c.ServedMmap({m.start, m.end - m.start, m.pgoff, true, m.maj, m.min, m.ino, m.path});
      }
    }
    c.SetServedContext(r.rip, callers);
    backends_.Sync(b, /*force=*/true);
  }
}

void Tracer::Release(const PerfFd& e) {
  if (e.backend < 0 || fds_.References(e.backend, e.tracer_fd) > 0) return;
  (void)backends_.Get(e.backend).Close(e.tracer_fd);
  if (e.inherit) backends_.Uninherit(e.backend);
}

int RunServed(const ExecOptions& options) {
  if (options.argv.empty()) {
    std::fprintf(stderr, "perftest exec: no program given (perftest exec [OPTIONS] -- PROG [ARGS])\n");
    return 2;
  }
  Result<MockProfile> profile = LoadProfile(options.profile);
  if (!profile.ok()) {
    std::fprintf(stderr, "perftest exec: --profile=%s: %s\n", options.profile.c_str(), profile.call().c_str());
    return 2;
  }
  rlimit nofile{};
  getrlimit(RLIMIT_NOFILE, &nofile);
  Result<PerfFdRange> range = ChoosePerfFdRange(nofile.rlim_cur);
  if (!range.ok()) {
    std::fprintf(stderr, "perftest exec: RLIMIT_NOFILE %llu leaves no room for perf fds\n",
                 static_cast<unsigned long long>(nofile.rlim_cur));
    return 125;
  }
  Intercept mode = options.intercept;
  if (mode == Intercept::kAuto) {
    mode = ProbePerfEventOpenBlocked() != 0 ? Intercept::kSyscallStops : Intercept::kSeccomp;
  }
  Tracer tracer(options, mode, *range, std::move(*profile));
  return tracer.Run();
}

}  // namespace perftest::exec
