// Unit tests of the model's overflow signals (mocks/mock_signals.cc): the
// fasync state kept per event by fcntl(2), SIGIO with SI_KERNEL, F_SETSIG
// siginfo (POLL_IN/POLL_HUP, si_band, si_fd), REFRESH's last signal, sigtrap
// (TRAP_PERF, si_addr, si_perf_*). The mock queues real signals to this
// thread; the expected values are the kernel's (suites/signals on Linux 6.18).
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/hw_breakpoint.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>

#include "harness/siginfo_perf.h"
#include "mocks/internal/mock_test_fixture.h"

namespace perftest {
namespace {

std::atomic<int> g_count{0};
std::atomic<int> g_signo{0};
std::atomic<int> g_code{0};
std::atomic<int> g_fd{-1};
std::atomic<long> g_band{0};
std::atomic<uint64_t> g_addr{0};
std::atomic<uint64_t> g_perf_data{0};
std::atomic<uint32_t> g_perf_type{0};

void Handler(int signo, siginfo_t* si, void*) {
  g_signo.store(signo);
  g_code.store(si->si_code);
  g_fd.store(si->si_fd);
  g_band.store(si->si_band);
  g_addr.store(reinterpret_cast<uint64_t>(si->si_addr));
  g_perf_data.store(SigPerfData(*si));
  g_perf_type.store(SigPerfType(*si));
  g_count.fetch_add(1);
}

alignas(8) volatile uint64_t g_target = 0;

class SignalsModel : public MockTest {
 protected:
  void Catch(int signo) {
    struct sigaction sa {};
    sa.sa_sigaction = Handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    ASSERT_EQ(::sigaction(signo, &sa, nullptr), 0);
    g_count.store(0);
    g_code.store(0);
  }
  int Sampler() {
    perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
    a.sample_period = 1;
    a.sample_type = PERF_SAMPLE_ADDR;
    a.wakeup_events = 1;
    return MustOpen(a);
  }
  void Own(int fd, bool async = true) {
    ASSERT_OK(b().Fcntl(fd, F_SETOWN, ::getpid()));
    if (async) ASSERT_OK(b().Fcntl(fd, F_SETFL, O_ASYNC));
  }
};

// fcntl(2): the fasync state reads back (the memfd behind the fd keeps none).
TEST_F(SignalsModel, FcntlKeepsFasyncState) {
  const int fd = Sampler();
  EXPECT_THAT(b().Fcntl(fd, F_GETOWN, 0), SucceedsWith(0));
  Own(fd);
  EXPECT_THAT(b().Fcntl(fd, F_GETOWN, 0), SucceedsWith(::getpid()));
  Result<int> fl = b().Fcntl(fd, F_GETFL, 0);
  ASSERT_OK(fl);
  EXPECT_NE(*fl & O_ASYNC, 0);
  EXPECT_THAT(b().Fcntl(fd, F_SETSIG, SIGRTMIN), Succeeds());
  EXPECT_THAT(b().Fcntl(fd, F_GETSIG, 0), SucceedsWith(SIGRTMIN));
  EXPECT_THAT(b().Fcntl(fd, F_SETSIG, _NSIG + 1), FailsWithErrno(EINVAL));
}

// send_sigio_to_task(): F_SETSIG 0 -> SIGIO, SEND_SIG_PRIV (SI_KERNEL).
TEST_F(SignalsModel, SigioIsSiKernel) {
  Catch(SIGIO);
  const int fd = Sampler();
  Own(fd);
  Enable(fd);
  Run(Workload::TouchPages(2));
  EXPECT_EQ(g_count.load(), 2);
  EXPECT_EQ(g_signo.load(), SIGIO);
  EXPECT_EQ(g_code.load(), SI_KERNEL);
}

// perf_fasync(): no O_ASYNC, no signal.
TEST_F(SignalsModel, NoSignalWithoutOAsync) {
  Catch(SIGIO);
  const int fd = Sampler();
  Own(fd, /*async=*/false);
  Enable(fd);
  Run(Workload::TouchPages(2));
  EXPECT_EQ(g_count.load(), 0);
}

// send_sigio_to_task() with F_SETSIG: si_code POLL_IN, si_band, si_fd.
TEST_F(SignalsModel, FSetsigCarriesSiginfo) {
  const int sig = SIGRTMIN + 3;
  Catch(sig);
  const int fd = Sampler();
  Own(fd);
  ASSERT_OK(b().Fcntl(fd, F_SETSIG, sig));
  Enable(fd);
  Run(Workload::TouchPages(1));
  EXPECT_EQ(g_count.load(), 1);
  EXPECT_EQ(g_code.load(), POLL_IN);
  EXPECT_EQ(g_fd.load(), fd);
  EXPECT_EQ(g_band.load(), POLLIN | POLLRDNORM);
}

// __perf_event_overflow(): the overflow that ends the REFRESH budget signals POLL_HUP.
TEST_F(SignalsModel, RefreshEndsWithPollHup) {
  const int sig = SIGRTMIN + 4;
  Catch(sig);
  const int fd = Sampler();
  Own(fd);
  ASSERT_OK(b().Fcntl(fd, F_SETSIG, sig));
  ASSERT_OK(b().Ioctl(fd, PERF_EVENT_IOC_REFRESH, 2));
  Run(Workload::TouchPages(5));
  EXPECT_EQ(g_count.load(), 2);
  EXPECT_EQ(g_code.load(), POLL_HUP);
  EXPECT_EQ(g_band.load(), POLLHUP | POLLERR);
}

// perf_event_fasync(): a copy in a child signals through its parent's fd.
TEST_F(SignalsModel, InheritedCopySignalsThroughTheParent) {
  Catch(SIGIO);
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.sample_period = 1;
  a.inherit = 1;
  a.disabled = 0;
  const int fd = MustOpen(a);
  Own(fd);
  Run(Workload::ForkTouch(1, 3));
  EXPECT_EQ(g_count.load(), 3);
}

// perf_sigtrap() -> send_sig_perf(): SIGTRAP, TRAP_PERF, si_addr, si_perf_data/type.
TEST_F(SignalsModel, SigtrapFields) {
  Catch(SIGTRAP);
  perf_event_attr a = MakeAttr(PERF_TYPE_BREAKPOINT, 0);
  a.bp_type = HW_BREAKPOINT_W;
  a.bp_addr = reinterpret_cast<uint64_t>(&g_target);
  a.bp_len = HW_BREAKPOINT_LEN_8;
  a.sample_period = 1;
  a.sigtrap = 1;
  a.remove_on_exec = 1;
  a.sig_data = 0xabcdef;
  a.disabled = 0;
  MustOpen(a);
  Run(Workload::WriteMemory(&g_target, 8, 1));
  EXPECT_EQ(g_count.load(), 1);
  EXPECT_EQ(g_signo.load(), SIGTRAP);
  EXPECT_EQ(g_code.load(), kTrapPerf);
  EXPECT_EQ(g_addr.load(), a.bp_addr);
  EXPECT_EQ(g_perf_data.load(), 0xabcdefu);
  EXPECT_EQ(g_perf_type.load(), static_cast<uint32_t>(PERF_TYPE_BREAKPOINT));
}

// fs/eventpoll.c ep_insert(): the add polls once (taking rb->poll); a wakeup
// after the add is reported once; EPOLLHUP without a buffer whatever was asked.
TEST_F(SignalsModel, EpollAddPollsOnce) {
  const int fd = Sampler();
  std::optional<RingBuffer> rb = Map(fd, 4);
  Enable(fd);
  Run(Workload::TouchPages(1));
  Result<int> ep = b().EpollCreate();
  ASSERT_OK(ep);
  ASSERT_OK(b().EpollAdd(*ep, fd, EPOLLIN));
  epoll_event out[2];
  EXPECT_THAT(b().EpollWait(*ep, out, 0), SucceedsWith(0)) << "taken by the add";
  Run(Workload::TouchPages(1));
  EXPECT_THAT(b().EpollWait(*ep, out, 0), SucceedsWith(1));
  EXPECT_EQ(out[0].events, static_cast<uint32_t>(EPOLLIN));
  EXPECT_EQ(out[0].data.fd, fd);
  EXPECT_THAT(b().EpollWait(*ep, out, 0), SucceedsWith(0));
  const int unmapped = Sampler();
  ASSERT_OK(b().EpollAdd(*ep, unmapped, EPOLLIN));
  EXPECT_THAT(b().EpollAdd(*ep, unmapped, EPOLLIN), FailsWithErrno(EEXIST));
  EXPECT_THAT(b().EpollWait(*ep, out, 0), SucceedsWith(1));
  EXPECT_EQ(out[0].events, static_cast<uint32_t>(EPOLLHUP));
  ASSERT_OK(b().Close(*ep));
  EXPECT_THAT(b().EpollWait(*ep, out, 0), FailsWithErrno(EBADF));
}

// merge_sched_in() (Linux 6.16+): a pinned group that cannot go on goes to
// ERROR, its fasync owner gets POLL_ERR (si_band POLLERR) and perf_poll() says
// EPOLLERR, with or without a buffer.
TEST_F(SignalsModel, PinnedErrorSignalsPollErr) {
  Result<MockProfile> p = LoadProfile("x86_64-intel");
  ASSERT_OK(p);
  Remake(*p);
  const int sig = SIGRTMIN + 5;
  Catch(sig);
  perf_event_attr a = MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS);
  a.pinned = 1;
  a.disabled = 1;
  std::vector<int> fds;
  for (uint32_t i = 0; i <= p->hardware.gp_counters; ++i) {
    fds.push_back(MustOpen(a));
    Own(fds.back());
    ASSERT_OK(b().Fcntl(fds.back(), F_SETSIG, sig));
    Enable(fds.back());
  }
  const int err = fds.back();  // one more than the general-purpose counters
  EXPECT_EQ(g_count.load(), 1);
  EXPECT_EQ(g_signo.load(), sig);
  EXPECT_EQ(g_code.load(), POLL_ERR);
  EXPECT_EQ(g_band.load(), POLLERR);
  EXPECT_EQ(g_fd.load(), err);
  pollfd pf[2] = {{err, POLLIN, 0}, {fds[0], POLLIN, 0}};
  EXPECT_OK(b().Poll(pf, 0));
  EXPECT_EQ(pf[0].revents, POLLERR);
  EXPECT_EQ(pf[1].revents, POLLHUP) << "running, no buffer";
  std::optional<RingBuffer> rb = Map(err, 1);
  EXPECT_OK(b().Poll(pf, 0));
  EXPECT_EQ(pf[0].revents, POLLERR) << "a buffer does not change it";
  // _perf_event_enable() clears ERROR; ctx_resched() finds no counter again: ERROR, signalled again.
  Enable(err);
  EXPECT_EQ(g_count.load(), 2);
  EXPECT_EQ(g_code.load(), POLL_ERR);
}

// F_SETOWN another process (or, negative, its group): the mock sends it a real
// SIGIO (send_sigio() to that owner); this process gets none.
TEST_F(SignalsModel, SigioToAnotherProcess) {
  for (const bool group : {false, true}) {
    sigset_t io;
    sigemptyset(&io);
    sigaddset(&io, SIGIO);
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::setpgid(0, 0);
      ::sigprocmask(SIG_BLOCK, &io, nullptr);
      char c = 'r';
      (void)!::write(ready[1], &c, 1);
      const timespec limit{2, 0};
      ::_exit(::sigtimedwait(&io, nullptr, &limit) == SIGIO ? 0 : 1);
    }
    ::setpgid(child, child);
    char c = 0;
    ASSERT_EQ(::read(ready[0], &c, 1), 1);
    ::close(ready[0]);
    ::close(ready[1]);
    Catch(SIGIO);
    const int fd = Sampler();
    ASSERT_OK(b().Fcntl(fd, F_SETOWN, group ? -child : child));
    ASSERT_OK(b().Fcntl(fd, F_SETFL, O_ASYNC));
    Enable(fd);
    Run(Workload::TouchPages(1));
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << (group ? "group" : "pid") << " owner got no SIGIO";
    EXPECT_EQ(g_count.load(), 0) << "not the owner";
    ASSERT_OK(b().Close(fd));
  }
}

}  // namespace
}  // namespace perftest
