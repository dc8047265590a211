// Conformance suite: overflow notification — poll(2) and epoll(7) readiness, POLLHUP when
// the monitored task exits, SIGIO through fcntl(2) (F_SETOWN, O_ASYNC,
// F_SETSIG), PERF_EVENT_IOC_REFRESH, sigtrap (SIGTRAP with TRAP_PERF), and the
// exec rules remove_on_exec and enable_on_exec.
//
// Page-fault sampling, data breakpoints and inherited counters run for real on
// a kernel without a hardware PMU, and on the mock (which delivers real
// signals to this process: mocks/mock_signals.cc). References: perf_event_open(2)
// "Overflow handling", "MMAP layout" (wakeup_events), sigtrap/sig_data,
// remove_on_exec, enable_on_exec; kernel/events/core.c perf_poll(),
// is_event_hup(), __perf_event_overflow(), perf_event_wakeup(),
// perf_pending_task(), perf_sigtrap(), _perf_event_refresh(),
// perf_event_enable_on_exec(), perf_event_remove_on_exec(),
// perf_event_exit_event(); kernel/signal.c send_sig_perf(); fs/fcntl.c
// send_sigio_to_task().
//
// Everything a signal handler touches is a lock-free std::atomic.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/hw_breakpoint.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <ctime>
#include <optional>
#include <utility>
#include <vector>

#include "harness/attr.h"
#include "harness/event.h"
#include "harness/ring_buffer.h"
#include "harness/siginfo_perf.h"
#include "harness/syscall_matchers.h"
#include "harness/task.h"
#include "suites/common/attrs.h"
#include "suites/common/hardware.h"
#include "suites/common/suite.h"

namespace perftest {
namespace {

using namespace std::chrono_literals;

// What the handler saw. Signals arrive in this thread (the events monitor it).
struct Caught {
  std::atomic<int> count{0};
  std::atomic<int> signo{0};
  std::array<std::atomic<int>, 16> codes{};  // si_code of the first 16
  std::atomic<int> last_code{0};
  std::atomic<int> last_fd{-1};
  std::atomic<long> last_band{0};
  std::atomic<uint64_t> last_addr{0};
  std::atomic<uint64_t> perf_data{0};
  std::atomic<uint32_t> perf_type{0};
};
Caught g_caught;
static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<int>::is_always_lock_free);

void Record(int signo, siginfo_t* si, void*) {
  const int n = g_caught.count.load(std::memory_order_relaxed);
  if (n < static_cast<int>(g_caught.codes.size())) g_caught.codes[n].store(si->si_code, std::memory_order_relaxed);
  g_caught.signo.store(signo, std::memory_order_relaxed);
  g_caught.last_code.store(si->si_code, std::memory_order_relaxed);
  g_caught.last_fd.store(si->si_fd, std::memory_order_relaxed);
  g_caught.last_band.store(si->si_band, std::memory_order_relaxed);
  g_caught.last_addr.store(reinterpret_cast<uint64_t>(si->si_addr), std::memory_order_relaxed);
  if (signo == SIGTRAP) {
    g_caught.perf_data.store(SigPerfData(*si), std::memory_order_relaxed);
    g_caught.perf_type.store(SigPerfType(*si), std::memory_order_relaxed);
  }
  g_caught.count.store(n + 1, std::memory_order_release);
}

// Installs Record() for `signo` and clears what was caught. The handler stays
// installed afterwards: a late signal must not take the default action (SIGIO
// terminates).
void Catch(int signo) {
  struct sigaction sa {};
  sa.sa_sigaction = Record;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(::sigaction(signo, &sa, nullptr), 0);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signo);
  ASSERT_EQ(::sigprocmask(SIG_UNBLOCK, &set, nullptr), 0);
  g_caught.count.store(0);
  g_caught.signo.store(0);
  g_caught.last_code.store(0);
  g_caught.last_fd.store(-1);
  for (auto& c : g_caught.codes) c.store(0);
}

// Signals may come from irq_work or task_work a little after the overflow:
// waits up to `limit` for at least `n`. Returns the count caught.
int WaitForSignals(int n, std::chrono::milliseconds limit = 200ms) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (g_caught.count.load(std::memory_order_acquire) < n && std::chrono::steady_clock::now() < until) {
    timespec ts{0, 1000000};
    ::nanosleep(&ts, nullptr);
  }
  return g_caught.count.load(std::memory_order_acquire);
}

// Breakpoint target: written only through workloads.
alignas(64) volatile uint64_t g_watch = 0;

// Samples every `period` page faults of this task (user mode), disabled.
perf_event_attr FaultSampler(uint64_t period = 1, uint32_t wakeup_events = 1) {
  perf_event_attr a = SoftwareSamplerAttr(PERF_COUNT_SW_PAGE_FAULTS, period, PERF_SAMPLE_TID | PERF_SAMPLE_ADDR);
  a.wakeup_events = wakeup_events;
  return a;
}

class Signals : public SuiteTest {
 protected:
  // poll(2) of one fd with timeout 0: its revents (or -1 with a failure recorded).
  int PollNow(const Event& ev) {
    pollfd p{ev.fd(), POLLIN, 0};
    Result<int> r = backend().Poll(std::span<pollfd>(&p, 1), 0);
    EXPECT_TRUE(r.ok()) << r.ToString();
    return r.ok() ? p.revents : -1;
  }
  // F_SETOWN this process, then O_ASYNC (fs/fcntl.c f_setown(), setfl() -> perf_fasync()).
  void Own(const Event& ev, bool async = true) {
    ASSERT_THAT(backend().Fcntl(ev.fd(), F_SETOWN, ::getpid()), Succeeds());
    if (async) {
      Result<int> fl = backend().Fcntl(ev.fd(), F_GETFL, 0);
      ASSERT_TRUE(fl.ok()) << fl.ToString();
      ASSERT_THAT(backend().Fcntl(ev.fd(), F_SETFL, *fl | O_ASYNC), Succeeds());
    }
  }
  // A fresh child task (it exits on demand) sampled by an enabled
  // FaultSampler(1, wakeup_events), with an 8-page ring buffer. nullopt, with
  // the failure recorded, on error.
  struct SampledChild {
    ChildTask task;
    Event ev;
    RingBuffer rb;
  };
  std::optional<SampledChild> SampleChild(uint32_t wakeup_events) {
    Result<ChildTask> task = ChildTask::Spawn(backend());
    EXPECT_OK(task);
    if (!task.ok()) return std::nullopt;
    perf_event_attr a = FaultSampler(1, wakeup_events);
    a.disabled = 0;
    Result<Event> ev = Event::Open(backend(), a, task->pid());
    EXPECT_OK(ev);
    if (!ev.ok()) return std::nullopt;
    Result<RingBuffer> rb = RingBuffer::Map(backend(), ev->fd(), 8);
    EXPECT_OK(rb);
    if (!rb.ok()) return std::nullopt;
    return SampledChild{std::move(*task), std::move(*ev), std::move(*rb)};
  }
};

PERFTEST_CASE(Signals, PollNotReadyBeforeWakeupEvents, "signals.poll_not_ready_before_wakeup_events",
              "perf_event_open(2) wakeup_events; kernel/events/ring_buffer.c perf_output_end() -> "
              "perf_output_wakeup(); kernel/events/core.c perf_poll()") {
  // wakeup_events far above what the workload (and the harness, kFaultSlack) can fault.
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), FaultSampler(1, 256)));
  ASSERT_OK_AND_ASSIGN(RingBuffer rb, RingBuffer::Map(backend(), ev.fd(), 8));
  EXPECT_EQ(PollNow(ev), 0) << "nothing written yet";
  ASSERT_OK(ev.Enable());
  Touch(8);
  ASSERT_OK(ev.Disable());
  ExpectFaults(Value(ev), 8, "samples taken");
  EXPECT_GT(rb.ReadHead(), 0u) << "samples were written";
  EXPECT_EQ(PollNow(ev), 0) << "fewer samples than wakeup_events: no POLLIN";
}

PERFTEST_CASE(Signals, PollInAfterWakeupEvents, "signals.poll_in_after_wakeup_events",
              "perf_event_open(2) wakeup_events, 'Overflow handling' (poll POLLIN); kernel/events/core.c perf_poll()") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), FaultSampler(1, 4)));
  ASSERT_OK_AND_ASSIGN(RingBuffer rb, RingBuffer::Map(backend(), ev.fd(), 8));
  ASSERT_OK(ev.Enable());
  Touch(8);
  ASSERT_OK(ev.Disable());
  EXPECT_EQ(PollNow(ev), POLLIN);
}

PERFTEST_CASE(Signals, PollInClearedByPoll, "signals.poll_in_cleared_by_poll",
              "kernel/events/core.c perf_poll(): events = atomic_xchg(&rb->poll, 0)") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), FaultSampler(1, 1)));
  ASSERT_OK_AND_ASSIGN(RingBuffer rb, RingBuffer::Map(backend(), ev.fd(), 8));
  ASSERT_OK(ev.Enable());
  Touch(2);
  ASSERT_OK(ev.Disable());
  EXPECT_EQ(PollNow(ev), POLLIN);
  EXPECT_EQ(PollNow(ev), 0) << "the first poll took the readiness";
}

PERFTEST_CASE(Signals, PollHupWithoutBuffer, "signals.pollhup_without_buffer",
              "kernel/events/core.c perf_poll(): events = EPOLLHUP unless event->rb") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), FaultSampler()));
  EXPECT_EQ(PollNow(ev), POLLHUP);
}

PERFTEST_CASE(Signals, PollHupOnTaskExit, "signals.pollhup_on_task_exit",
              "perf_event_open(2) 'Overflow handling'; kernel/events/core.c perf_event_exit_event() "
              "(state EXIT, wakeup), is_event_hup(), perf_poll()") {
  std::optional<SampledChild> sampled = SampleChild(1000);
  ASSERT_TRUE(sampled.has_value());
  auto& [child, ev, rb] = *sampled;
  ASSERT_OK(child.Run(Workload::TouchPages(4)));
  EXPECT_EQ(PollNow(ev), 0) << "the task lives and wakeup_events is not reached";
  ASSERT_OK(child.Exit());
  EXPECT_EQ(PollNow(ev), POLLHUP);
}

PERFTEST_CASE(Signals, PollHupHidesPollIn, "signals.pollhup_hides_pollin",
              "kernel/events/core.c perf_poll(): 'if (is_event_hup(event)) return events;' before rb->poll") {
  std::optional<SampledChild> sampled = SampleChild(1);
  ASSERT_TRUE(sampled.has_value());
  auto& [child, ev, rb] = *sampled;
  ASSERT_OK(child.Run(Workload::TouchPages(4)));
  EXPECT_EQ(PollNow(ev), POLLIN) << "samples of a live task";
  ASSERT_OK(child.Run(Workload::TouchPages(4)));
  ASSERT_OK(child.Exit());
  EXPECT_GT(rb.ReadHead(), 0u);
  EXPECT_EQ(PollNow(ev), POLLHUP) << "once the task is gone, POLLHUP alone, unread samples or not";
}

// An epoll fd of the backend, closed with it.
class EpollFd {
 public:
  explicit EpollFd(Backend& b) : b_(b) {
    Result<int> fd = b.EpollCreate();
    EXPECT_TRUE(fd.ok()) << fd.ToString();
    fd_ = fd.ok() ? *fd : -1;
  }
  ~EpollFd() {
    if (fd_ >= 0) (void)b_.Close(fd_);
  }
  int fd() const { return fd_; }
  // epoll_wait(timeout 0): the ready events (failure recorded on error).
  std::vector<epoll_event> WaitNow() {
    std::array<epoll_event, 4> out{};
    Result<int> n = b_.EpollWait(fd_, out, 0);
    EXPECT_TRUE(n.ok()) << n.ToString();
    return n.ok() ? std::vector<epoll_event>(out.begin(), out.begin() + *n) : std::vector<epoll_event>{};
  }

 private:
  Backend& b_;
  int fd_ = -1;
};

PERFTEST_CASE(Signals, EpollInAfterWakeupEvents, "signals.epoll_in_after_wakeup_events",
              "epoll(7) over perf_poll(); kernel/events/core.c perf_poll(), ring_buffer.c perf_output_wakeup(); "
              "fs/eventpoll.c ep_poll_callback()") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), FaultSampler(1, 4)));
  ASSERT_OK_AND_ASSIGN(RingBuffer rb, RingBuffer::Map(backend(), ev.fd(), 8));
  EpollFd ep(backend());
  ASSERT_GE(ep.fd(), 0);
  ASSERT_THAT(backend().EpollAdd(ep.fd(), ev.fd(), EPOLLIN), Succeeds());
  EXPECT_TRUE(ep.WaitNow().empty()) << "nothing written yet";
  ASSERT_OK(ev.Enable());
  Touch(8);
  ASSERT_OK(ev.Disable());
  std::vector<epoll_event> ready = ep.WaitNow();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].events, static_cast<uint32_t>(EPOLLIN));
  EXPECT_EQ(ready[0].data.fd, ev.fd());
  EXPECT_TRUE(ep.WaitNow().empty()) << "level-triggered, but perf_poll() took rb->poll";
}

PERFTEST_CASE(Signals, EpollAddTakesPendingPollIn, "signals.epoll_add_takes_pending_pollin",
              "fs/eventpoll.c ep_insert() -> ep_item_poll() polls the fd once; kernel/events/core.c "
              "perf_poll(): atomic_xchg(&rb->poll, 0)") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), FaultSampler(1, 1)));
  ASSERT_OK_AND_ASSIGN(RingBuffer rb, RingBuffer::Map(backend(), ev.fd(), 8));
  ASSERT_OK(ev.Enable());
  Touch(2);
  ASSERT_OK(ev.Disable());
  EpollFd ep(backend());
  ASSERT_GE(ep.fd(), 0);
  ASSERT_THAT(backend().EpollAdd(ep.fd(), ev.fd(), EPOLLIN), Succeeds());
  EXPECT_TRUE(ep.WaitNow().empty()) << "the wakeup came before the fd was added, and the add took it";
  EXPECT_EQ(PollNow(ev), 0);
}

PERFTEST_CASE(Signals, EpollHupOnTaskExit, "signals.epoll_hup_on_task_exit",
              "kernel/events/core.c perf_event_exit_event() wakes event->waitq; is_event_hup(), perf_poll(): "
              "EPOLLHUP, reported whatever the requested events") {
  std::optional<SampledChild> sampled = SampleChild(1000);
  ASSERT_TRUE(sampled.has_value());
  auto& [child, ev, rb] = *sampled;
  EpollFd ep(backend());
  ASSERT_GE(ep.fd(), 0);
  ASSERT_THAT(backend().EpollAdd(ep.fd(), ev.fd(), EPOLLIN), Succeeds());
  ASSERT_OK(child.Run(Workload::TouchPages(2)));
  EXPECT_TRUE(ep.WaitNow().empty());
  ASSERT_OK(child.Exit());
  std::vector<epoll_event> ready = ep.WaitNow();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].events, static_cast<uint32_t>(EPOLLHUP));
}

// Without F_SETSIG the signal carries no siginfo of its own: SEND_SIG_PRIV, si_code SI_KERNEL.
PERFTEST_CASE(Signals, SigioOnOverflow, "signals.sigio_on_overflow",
              "perf_event_open(2) 'Overflow handling' (O_ASYNC, F_SETOWN); kernel/events/core.c "
              "__perf_event_overflow() -> perf_event_wakeup() -> kill_fasync(SIGIO, POLL_IN); fs/fcntl.c "
              "send_sigio_to_task(): no F_SETSIG -> do_send_sig_info(SIGIO, SEND_SIG_PRIV)") {
  Catch(SIGIO);
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), FaultSampler(1, 1)));
  Own(ev);
  ASSERT_OK(ev.Enable());
  Touch(4);
  ASSERT_OK(ev.Disable());
  EXPECT_GE(WaitForSignals(1), 1);
  EXPECT_EQ(g_caught.signo.load(), SIGIO);
  EXPECT_EQ(g_caught.last_code.load(), SI_KERNEL) << "SEND_SIG_PRIV, not POLL_IN: F_SETSIG is 0";
}

PERFTEST_CASE(Signals, SigioWithoutBuffer, "signals.sigio_without_buffer",
              "kernel/events/core.c __perf_event_overflow(): 'if (*perf_event_fasync(event) && "
              "event->pending_kill)' queues the wakeup whether or not a buffer is mapped") {
  Catch(SIGIO);
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), FaultSampler(1, 1)));
  Own(ev);
  ASSERT_OK(ev.Enable());
  Touch(2);
  ASSERT_OK(ev.Disable());
  EXPECT_GE(WaitForSignals(1), 1) << "no mmap: SIGIO all the same";
}

PERFTEST_CASE(Signals, NoSigioWithoutOAsync, "signals.no_sigio_without_o_async",
              "fs/fcntl.c setfl() -> perf_fasync(): only O_ASYNC puts the fd on event->fasync") {
  Catch(SIGIO);
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), FaultSampler(1, 1)));
  Own(ev, /*async=*/false);
  ASSERT_OK(ev.Enable());
  Touch(4);
  ASSERT_OK(ev.Disable());
  EXPECT_EQ(WaitForSignals(1, 50ms), 0);
}

PERFTEST_CASE(Signals, FSetsigSiginfo, "signals.f_setsig_siginfo",
              "fcntl(2) F_SETSIG; fs/fcntl.c send_sigio_to_task(): si_code = reason (POLL_IN), si_fd, "
              "si_band = band_table[POLL_IN - 1]") {
  const int sig = SIGRTMIN + 1;
  Catch(sig);
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), FaultSampler(1, 1)));
  Own(ev);
  ASSERT_THAT(backend().Fcntl(ev.fd(), F_SETSIG, sig), Succeeds());
  EXPECT_THAT(backend().Fcntl(ev.fd(), F_GETSIG, 0), SucceedsWith(sig));
  ASSERT_OK(ev.Enable());
  Touch(3);
  ASSERT_OK(ev.Disable());
  ASSERT_GE(WaitForSignals(3), 3) << "a realtime signal is queued once per overflow";
  EXPECT_EQ(g_caught.signo.load(), sig);
  EXPECT_EQ(g_caught.codes[0].load(), POLL_IN);
  EXPECT_EQ(g_caught.last_code.load(), POLL_IN);
  EXPECT_EQ(g_caught.last_fd.load(), ev.fd());
  EXPECT_EQ(g_caught.last_band.load(), POLLIN | POLLRDNORM);
}

PERFTEST_CASE(Signals, RefreshSignalsThenDisables, "signals.refresh_signals_then_disables",
              "perf_event_open(2) PERF_EVENT_IOC_REFRESH; kernel/events/core.c _perf_event_refresh(), "
              "__perf_event_overflow(): event_limit reaches 0 -> pending_kill = POLL_HUP, "
              "perf_event_disable_inatomic()") {
  const int sig = SIGRTMIN + 2;
  Catch(sig);
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), FaultSampler(1, 1)));
  Own(ev);
  ASSERT_THAT(backend().Fcntl(ev.fd(), F_SETSIG, sig), Succeeds());
  ASSERT_THAT(backend().Ioctl(ev.fd(), PERF_EVENT_IOC_REFRESH, 3), Succeeds());
  Touch(8);
  ASSERT_EQ(WaitForSignals(3), 3);
  EXPECT_EQ(WaitForSignals(4, 50ms), 3) << "no signal after the event disabled itself";
  EXPECT_EQ(g_caught.codes[0].load(), POLL_IN);
  EXPECT_EQ(g_caught.codes[1].load(), POLL_IN);
  EXPECT_EQ(g_caught.codes[2].load(), POLL_HUP) << "the overflow that exhausts the refresh";
  const uint64_t after = Value(ev);
  EXPECT_EQ(after, 3u) << "disabled at the third overflow";
  Touch(4);
  EXPECT_EQ(Value(ev), after) << "stays disabled";
}

PERFTEST_CASE(Signals, NoSignalAfterClose, "signals.no_signal_after_close",
              "kernel/events/core.c perf_release() -> perf_event_release_kernel(): the event and its "
              "fasync entry are gone (fs/fcntl.c fasync_helper() on the last fput)") {
  Catch(SIGIO);
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), FaultSampler(1, 1)));
  Own(ev);
  ASSERT_OK(ev.Enable());
  Touch(1);
  ASSERT_GE(WaitForSignals(1), 1) << "the setup delivers";
  ASSERT_OK(ev.Close());
  const int before = g_caught.count.load();
  Touch(8);
  EXPECT_EQ(WaitForSignals(before + 1, 50ms), before);
}

// A real process that counts the SIGIOs it receives: the F_SETOWN target
// other than this process. Its own process group (so F_SETOWN -pgid names it
// alone), SIGKILL when this process dies, killed and reaped by the destructor.
class SigioWatcher {
 public:
  // Forks the watcher; pid() is -1 when fork(2)/pipe(2) failed.
  SigioWatcher() {
    int down[2], up[2];
    if (::pipe2(down, O_CLOEXEC) != 0) return;
    if (::pipe2(up, O_CLOEXEC) != 0) {
      ::close(down[0]);
      ::close(down[1]);
      return;
    }
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      struct sigaction sa {};
      sa.sa_sigaction = Record;
      sa.sa_flags = SA_SIGINFO | SA_RESTART;
      sigemptyset(&sa.sa_mask);
      ::sigaction(SIGIO, &sa, nullptr);
      g_caught.count.store(0);
      char c = 'r';
      (void)!::write(up[1], &c, 1);                 // ready: the handler is in place
      while (::read(down[0], &c, 1) < 0 && errno == EINTR) {}  // the parent's "report"
      const int report[2] = {g_caught.count.load(), g_caught.signo.load()};
      (void)!::write(up[1], report, sizeof report);
      ::_exit(0);
    }
    if (pid_ > 0) ::setpgid(pid_, pid_);  // also from here: no race with F_SETOWN -pid
    ::close(down[0]);
    ::close(up[1]);
    down_ = down[1];
    up_ = up[0];
    char c = 0;
    if (pid_ < 0 || ::read(up_, &c, 1) != 1) pid_ = -1;
  }
  ~SigioWatcher() {
    if (pid_ > 0) {
      ::kill(-pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (down_ >= 0) ::close(down_);
    if (up_ >= 0) ::close(up_);
  }
  SigioWatcher(const SigioWatcher&) = delete;
  SigioWatcher& operator=(const SigioWatcher&) = delete;
  pid_t pid() const { return pid_; }
  // Waits until the watcher counted `n` SIGIOs or `limit` passed (it reports
  // once, so the caller gives signals time first). Returns {count, last signo}.
  std::pair<int, int> Report(std::chrono::milliseconds settle = 50ms) {
    timespec ts{0, static_cast<long>(std::chrono::nanoseconds(settle).count())};
    ::nanosleep(&ts, nullptr);
    int report[2] = {-1, 0};
    char c = 'q';
    if (::write(down_, &c, 1) != 1 || ::read(up_, report, sizeof report) != sizeof report) return {-1, 0};
    return {report[0], report[1]};
  }

 private:
  pid_t pid_ = -1;
  int down_ = -1, up_ = -1;
};

PERFTEST_CASE(Signals, SigioToOtherProcess, "signals.sigio_other_owner",
              "fcntl(2) F_SETOWN: 'a process ID or process group ID ... negative to specify a process group'; "
              "fs/fcntl.c f_setown() -> send_sigio() -> send_sigio_to_task() for the owner pid, or each task of the "
              "group (do_each_pid_task(PIDTYPE_PGID)); kernel/events/core.c perf_event_wakeup() -> kill_fasync()") {
  for (const bool group : {false, true}) {
    SCOPED_TRACE(group ? "F_SETOWN -pgid" : "F_SETOWN pid");
    Catch(SIGIO);
    SigioWatcher watcher;
    ASSERT_GT(watcher.pid(), 0) << "fork(2): " << std::strerror(errno);
    ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), FaultSampler(1, 1)));
    ASSERT_THAT(backend().Fcntl(ev.fd(), F_SETOWN, group ? -watcher.pid() : watcher.pid()), Succeeds());
    // F_GETOWN gives a process group as its negative id; F_GETOWN_EX names the owner's type.
    EXPECT_THAT(backend().Fcntl(ev.fd(), F_GETOWN, 0), SucceedsWith(group ? -watcher.pid() : watcher.pid()));
    f_owner_ex owner{};
    ASSERT_THAT(backend().Fcntl(ev.fd(), F_GETOWN_EX, reinterpret_cast<long>(&owner)), Succeeds());
    EXPECT_EQ(owner.type, group ? F_OWNER_PGRP : F_OWNER_PID);
    EXPECT_EQ(owner.pid, watcher.pid());
    ASSERT_OK_AND_ASSIGN(int fl, backend().Fcntl(ev.fd(), F_GETFL, 0));
    ASSERT_THAT(backend().Fcntl(ev.fd(), F_SETFL, fl | O_ASYNC), Succeeds());
    ASSERT_OK(ev.Enable());
    Touch(3);
    ASSERT_OK(ev.Disable());
    const auto [count, signo] = watcher.Report();
    EXPECT_GE(count, 1) << "the owner gets SIGIO for the overflows of an event it does not monitor";
    EXPECT_EQ(signo, SIGIO);
    EXPECT_EQ(WaitForSignals(1, 20ms), 0) << "this process is not the owner: no SIGIO here";
  }
}

// A pinned group that cannot go on: hardware counters only (software events
// always fit), so the case needs a core PMU with fewer counters than events.
PERFTEST_CASE(Signals, PinnedErrorPollErrAndSigio, "signals.pinned_error_pollerr",
              "kernel/events/core.c merge_sched_in(): a pinned group left INACTIVE -> PERF_EVENT_STATE_ERROR, "
              "'if (*perf_event_fasync(event)) event->pending_kill = POLL_ERR' and a wakeup (perf_pending_irq() -> "
              "perf_event_wakeup() -> kill_fasync()); perf_poll(): 'state == PERF_EVENT_STATE_ERROR && "
              "attr.pinned' -> EPOLLERR (Linux 6.16+; EPOLLHUP/POLL_HUP since 6.15's f4b07fd62d4d, nothing before)") {
  perf_event_attr pinned = MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS);
  pinned.exclude_kernel = 1;
  pinned.exclude_hv = 1;
  if (auto why = NoHardwareFor(backend(), pinned)) PERFTEST_SKIP(why->first, why->second);
  pinned.pinned = 1;
  pinned.disabled = 1;
  const int sig = SIGRTMIN + 3;
  Catch(sig);
  std::vector<Event> evs;
  std::optional<size_t> erred;
  std::vector<std::byte> buf(64);
  // More pinned events than counters: enabled one by one, one finds none left.
  for (int i = 0; i < 72 && !erred; ++i) {
    ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), pinned));
    Own(ev);
    ASSERT_THAT(backend().Fcntl(ev.fd(), F_SETSIG, sig), Succeeds());
    ASSERT_OK(ev.Enable());
    ASSERT_OK(backend().RunWorkload(Workload::Spin(1ms)));
    ASSERT_OK_AND_ASSIGN(size_t n, backend().Read(ev.fd(), buf.data(), buf.size()));
    if (n == 0) erred = evs.size();  // __perf_read(): EOF in the ERROR state
    evs.push_back(std::move(ev));
  }
  ASSERT_TRUE(erred.has_value()) << "more pinned events than counters: one must fail to go on";
  const Event& err = evs[*erred];
  ASSERT_GE(WaitForSignals(1), 1) << "the ERROR transition signals the fasync owner";
  EXPECT_EQ(g_caught.signo.load(), sig);
  EXPECT_EQ(g_caught.last_code.load(), POLL_ERR);
  EXPECT_EQ(g_caught.last_band.load(), POLLERR) << "fs/fcntl.c band_table[POLL_ERR - 1]";
  EXPECT_EQ(g_caught.last_fd.load(), err.fd());
  EXPECT_EQ(PollNow(err), POLLERR) << "no buffer, yet POLLERR rather than POLLHUP: the ERROR check comes first";
  EXPECT_EQ(PollNow(evs[0]), POLLHUP) << "a running event without a buffer";
  ASSERT_OK_AND_ASSIGN(RingBuffer rb, RingBuffer::Map(backend(), err.fd(), 1));
  EXPECT_EQ(PollNow(err), POLLERR) << "with a buffer as well";
}

// sigtrap on a write breakpoint: SIGTRAP to the task, synchronous.
PERFTEST_CASE(Signals, SigtrapBreakpoint, "signals.sigtrap_breakpoint",
              "perf_event_open(2) sigtrap, sig_data; kernel/events/core.c perf_sigtrap() -> kernel/signal.c "
              "send_sig_perf(): SIGTRAP, si_code TRAP_PERF, si_addr = bp_addr, si_perf_data = sig_data, "
              "si_perf_type = attr.type") {
  Catch(SIGTRAP);
  perf_event_attr a = MakeAttr(PERF_TYPE_BREAKPOINT, 0);
  a.bp_type = HW_BREAKPOINT_W;
  a.bp_addr = reinterpret_cast<uint64_t>(&g_watch);
  a.bp_len = HW_BREAKPOINT_LEN_8;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  a.sample_period = 1;
  a.sigtrap = 1;
  a.remove_on_exec = 1;
  a.sig_data = 0x5eed5eed12345678ull;
  a.disabled = 0;
  PERFTEST_ASSIGN_OR_SKIP(Event ev, Event::Open(backend(), a), "no breakpoint PMU");
  ASSERT_OK(backend().RunWorkload(Workload::WriteMemory(&g_watch, 8, 2)));
  ASSERT_EQ(WaitForSignals(2), 2) << "one SIGTRAP per write";
  EXPECT_EQ(g_caught.signo.load(), SIGTRAP);
  EXPECT_EQ(g_caught.last_code.load(), kTrapPerf);
  EXPECT_EQ(g_caught.last_addr.load(), a.bp_addr);
  EXPECT_EQ(g_caught.perf_data.load(), a.sig_data);
  EXPECT_EQ(g_caught.perf_type.load(), static_cast<uint32_t>(PERF_TYPE_BREAKPOINT));
}

PERFTEST_CASE(Signals, SigtrapSoftwareEvent, "signals.sigtrap_software_event",
              "kernel/events/core.c __perf_event_overflow(): pending_addr = data->addr when the sample has "
              "PERF_SAMPLE_ADDR (perf_sample_data_init(): the faulting address); send_sig_perf()") {
  Catch(SIGTRAP);
  perf_event_attr a = FaultSampler(1, 1);
  a.sigtrap = 1;
  a.remove_on_exec = 1;
  a.sig_data = 0xfeedull;
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), a));
  ASSERT_OK(ev.Enable());
  ASSERT_OK_AND_ASSIGN(WorkloadResult w, backend().RunWorkload(Workload::TouchPages(1)));
  ASSERT_OK(ev.Disable());
  ASSERT_GE(WaitForSignals(1), 1);
  EXPECT_EQ(g_caught.last_code.load(), kTrapPerf);
  EXPECT_EQ(g_caught.perf_data.load(), 0xfeedull);
  EXPECT_EQ(g_caught.perf_type.load(), static_cast<uint32_t>(PERF_TYPE_SOFTWARE));
  EXPECT_EQ(g_caught.last_addr.load(), w.region_begin) << "the faulting address";
}

PERFTEST_CASE(Signals, SigtrapNeedsRemoveOnExec, "signals.sigtrap_needs_remove_on_exec",
              "kernel/events/core.c perf_copy_attr(): 'if (attr->sigtrap && !attr->remove_on_exec) return -EINVAL'") {
  perf_event_attr a = FaultSampler(1, 1);
  a.sigtrap = 1;
  EXPECT_THAT(Event::Open(backend(), a), FailsWithErrno(EINVAL));
  a.remove_on_exec = 1;
  EXPECT_THAT(Event::Open(backend(), a), Succeeds());
}

PERFTEST_CASE(Signals, SigtrapNotAfterClose, "signals.sigtrap_not_after_close",
              "kernel/events/core.c perf_event_release_kernel(): no overflow, no perf_sigtrap()") {
  Catch(SIGTRAP);
  perf_event_attr a = FaultSampler(1, 1);
  a.sigtrap = 1;
  a.remove_on_exec = 1;
  a.disabled = 0;
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), a));
  ASSERT_OK(ev.Close());
  // A page fault between open and close (the harness's own allocations) is an
  // overflow of the live event, and its SIGTRAP comes before close returns
  // (task_work on the return to user mode); only what comes after counts.
  Catch(SIGTRAP);
  Touch(4);
  EXPECT_EQ(WaitForSignals(1, 50ms), 0);
}

// The exec rules, seen through an inherited counter: a child that execs.
PERFTEST_CASE(Signals, RemoveOnExec, "signals.remove_on_exec",
              "perf_event_open(2) remove_on_exec; kernel/events/core.c perf_event_remove_on_exec() -> "
              "perf_event_exit_event(): the child's copy is removed at exec, its count so far folded") {
  perf_event_attr keep = SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS);
  keep.inherit = 1;
  keep.disabled = 0;
  perf_event_attr removed = keep;
  removed.remove_on_exec = 1;
  ASSERT_OK_AND_ASSIGN(Event kept, Event::Open(backend(), keep));
  ASSERT_OK_AND_ASSIGN(Event gone, Event::Open(backend(), removed));
  ASSERT_OK(backend().RunWorkload(Workload::ForkExec(1, "/bin/true")));
  const uint64_t k = Value(kept), g = Value(gone);
  EXPECT_GE(k, g + 10) << "the exec'd program's faults count only without remove_on_exec";
  EXPECT_LT(g, k);
}

PERFTEST_CASE(Signals, EnableOnExec, "signals.enable_on_exec",
              "perf_event_open(2) enable_on_exec; kernel/events/core.c perf_event_enable_on_exec(): "
              "the inherited copy (OFF like its parent) is enabled by the child's exec") {
  perf_event_attr a = SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.inherit = 1;
  a.enable_on_exec = 1;
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), a));
  ASSERT_OK(backend().RunWorkload(Workload::ForkTouch(1, 16)));
  EXPECT_EQ(Value(ev), 0u) << "no exec: the copy stays off";
  ASSERT_OK(backend().RunWorkload(Workload::ForkExec(1, "/bin/true")));
  EXPECT_GE(Value(ev), 10u) << "the exec'd program's faults";
  Touch(4);
  const uint64_t v = Value(ev);
  Touch(4);
  EXPECT_EQ(Value(ev), v) << "the parent, which did not exec, stays off";
}

PERFTEST_CASE(Signals, RemoveOnExecWithEnableOnExec, "signals.remove_on_exec_with_enable_on_exec",
              "kernel/events/core.c perf_copy_attr(): remove_on_exec and enable_on_exec together are EINVAL") {
  perf_event_attr a = SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.remove_on_exec = 1;
  a.enable_on_exec = 1;
  EXPECT_THAT(Event::Open(backend(), a), FailsWithErrno(EINVAL));
}

}  // namespace
}  // namespace perftest
