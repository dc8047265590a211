// MockBackend, overflow notification by signals.
//
// How the mock delivers a signal: as a real signal to this process, queued
// with rt_tgsigqueueinfo(2) to the calling thread (the one that runs the
// simulated task), with the siginfo the kernel would build. A process may
// queue any si_code to itself (kernel/signal.c do_rt_tgsigqueueinfo() refuses
// si_code >= 0 only towards other processes), so SI_KERNEL, POLL_IN/POLL_HUP
// with si_band and si_fd, and TRAP_PERF with si_addr/si_perf_* arrive exactly
// as from the kernel, and synchronously: before the workload step that
// overflowed returns. Only the main simulated task's events (and copies of
// them) signal: a simulated child has no real process to signal. An owner
// that is another real process or process group (F_SETOWN pid or -pgrp) gets
// a real signal too, with the siginfo a process may send (SignalOther()).
//
// The fasync state is modelled per event (MockEvent::async, owner, signum):
// the memfd behind the fd cannot hold it (setfl() drops O_ASYNC on a file
// without ->fasync, and F_SETOWN does not stick on it, Linux 6.18).
//
// Rules (kernel/events/core.c unless named):
//  - __perf_event_overflow(): pending_kill = POLL_IN, or POLL_HUP on the
//    overflow that exhausts a PERF_EVENT_IOC_REFRESH budget; then
//    'if (*perf_event_fasync(event) && event->pending_kill)' -> perf_pending_irq()
//    -> perf_event_wakeup() -> kill_fasync(&event->fasync, SIGIO, pending_kill):
//    with or without a ring buffer. perf_event_fasync(): only the parent has
//    fasync state (copies signal through their parent's fd).
//  - fs/fcntl.c send_sigio_to_task(): F_SETSIG 0 sends SIGIO with
//    SEND_SIG_PRIV (si_code SI_KERNEL); otherwise the F_SETSIG signal with
//    si_code = reason, si_band = band_table[reason - POLL_IN], si_fd = fd.
//  - sigtrap: __perf_event_overflow() queues perf_pending_task() ->
//    perf_sigtrap() -> kernel/signal.c send_sig_perf(): SIGTRAP, TRAP_PERF,
//    si_addr = data->addr (when the sample has one), si_perf_data = sig_data,
//    si_perf_type = attr.type, si_perf_flags TRAP_PERF_FLAG_ASYNC when SIGTRAP
//    is blocked.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

#include "harness/describe.h"
#include "harness/siginfo_perf.h"
#include "mocks/internal/mock_backend_impl.h"

namespace perftest::mock {
namespace {

// asm-generic/siginfo.h TRAP_PERF_FLAG_ASYNC.
constexpr uint32_t kTrapPerfFlagAsync = 1u << 0;

// fs/fcntl.c band_table[reason - POLL_IN]: POLL_IN -> EPOLLIN | EPOLLRDNORM,
// POLL_ERR -> EPOLLERR, POLL_HUP -> EPOLLHUP | EPOLLERR.
long BandOf(int reason) {
  if (reason == POLL_HUP) return POLLHUP | POLLERR;
  if (reason == POLL_ERR) return POLLERR;
  return POLLIN | POLLRDNORM;
}

void QueueToSelf(int sig, siginfo_t* info) {
  info->si_signo = sig;
  ::syscall(SYS_rt_tgsigqueueinfo, ::getpid(), ::gettid(), sig, info);
}

// send_sigio() to an owner that is not this thread/process/group: a real
// signal to that process (F_OWNER_PID, F_OWNER_TID: the thread of this
// process or another one) or group (F_OWNER_PGRP: every member). The
// siginfo cannot be the kernel's: a process may queue only si_code < 0 to
// another (do_rt_sigqueueinfo()), so SIGIO without F_SETSIG arrives as
// kill(2) sends it (SI_USER, not SI_KERNEL) and an F_SETSIG signal with
// si_code SI_QUEUE (not POLL_*), carrying the kernel's si_band and si_fd.
void SignalOther(int owner_type, pid_t owner, int sig, int reason, int fd) {
  if (sig <= 0) {
    if (owner_type == F_OWNER_PGRP) {
      ::killpg(owner, SIGIO);
    } else if (owner_type == F_OWNER_TID) {
      if (::syscall(SYS_tgkill, ::getpid(), owner, SIGIO) != 0) ::kill(owner, SIGIO);  // another process's thread
    } else {
      ::kill(owner, SIGIO);
    }
    return;
  }
  siginfo_t info;
  std::memset(&info, 0, sizeof info);
  info.si_signo = sig;
  info.si_code = SI_QUEUE;
  info.si_band = BandOf(reason);
  info.si_fd = fd;
  if (owner_type == F_OWNER_PGRP) {
    ::kill(-owner, sig);  // a group cannot be sigqueue'd: plain delivery to each member
  } else {
    ::syscall(SYS_rt_sigqueueinfo, owner, sig, &info);
  }
}

}  // namespace

std::optional<Result<int>> MockBackend::EventFcntl(MockEvent& ev, int fd, int cmd, long arg) {
  const std::string call = DescribeFcntl(fd, cmd, arg);
  auto ok = [&](int v) { return std::optional<Result<int>>(Result<int>::Ok(v, call)); };
  auto fail = [&](int err, const char* why) {
    return std::optional<Result<int>>(Result<int>::Failure(err, call + " [mock: " + why + "]"));
  };
  switch (cmd) {
    case F_SETFL: {
      const int r = ::fcntl(fd, F_SETFL, arg & ~static_cast<long>(O_ASYNC));
      if (r < 0) return std::optional<Result<int>>(Result<int>::Failure(errno, call));
      ev.async = (arg & O_ASYNC) != 0;  // setfl() -> perf_fasync() -> fasync_helper()
      return ok(r);
    }
    case F_SETOWN: {
      // f_setown(): a negative argument is a process group; a pid must exist (ESRCH).
      const pid_t who = static_cast<pid_t>(arg);
      if (who != 0 && ::kill(who, 0) != 0 && errno == ESRCH) return fail(ESRCH, "no such process");
      ev.owner_type = who < 0 ? F_OWNER_PGRP : F_OWNER_PID;
      ev.owner = who < 0 ? -who : who;
      return ok(0);
    }
    case F_GETOWN:
      return ok(ev.owner_type == F_OWNER_PGRP ? -ev.owner : ev.owner);
    case F_SETOWN_EX: {
      f_owner_ex o;
      std::memcpy(&o, reinterpret_cast<const void*>(arg), sizeof o);
      if (o.type != F_OWNER_TID && o.type != F_OWNER_PID && o.type != F_OWNER_PGRP) return fail(EINVAL, "owner type");
      ev.owner_type = o.type;
      ev.owner = o.pid;
      return ok(0);
    }
    case F_GETOWN_EX: {
      f_owner_ex o{static_cast<__pid_type>(ev.owner_type), ev.owner};
      std::memcpy(reinterpret_cast<void*>(arg), &o, sizeof o);
      return ok(0);
    }
    case F_SETSIG:
      if (arg < 0 || arg > _NSIG) return fail(EINVAL, "not a signal");  // valid_signal()
      ev.signum = static_cast<int>(arg);
      return ok(0);
    case F_GETSIG:
      return ok(ev.signum);
    default:
      return std::nullopt;
  }
}

void MockBackend::SignalOverflow(MockEvent& ev, int reason) {
  const MockEvent& owner_event = ev.parent != nullptr ? *ev.parent : ev;  // perf_event_fasync()
  const int fd = owner_event.fd;
  const pid_t self_pid = served_real_task_ ? task_.pid : kMockPid;
  if (fd < 0 || owner_event.pid != (served_real_task_ ? task_.tid : kMockPid) || !owner_event.async ||
      owner_event.owner == 0) {
    return;
  }
  const int sig = owner_event.signum;
  if (served_real_task_) {  // tools/exec: the owner is the real task (else a real signal to the owner)
    const bool to_task = (owner_event.owner_type == F_OWNER_TID && owner_event.owner == task_.tid) ||
                         (owner_event.owner_type == F_OWNER_PID && owner_event.owner == self_pid);
    if (!to_task) {
      SignalOther(owner_event.owner_type, owner_event.owner, sig, reason, fd);
      return;
    }
    if (!signal_sink_) return;
    siginfo_t info;
    std::memset(&info, 0, sizeof info);
    info.si_signo = sig <= 0 ? SIGIO : sig;
    info.si_code = sig <= 0 ? SI_KERNEL : reason;
    if (sig > 0) {
      info.si_band = BandOf(reason);
      info.si_fd = fd;
    }
    signal_sink_(task_.pid, owner_event.owner_type == F_OWNER_TID ? task_.tid : task_.pid, info);
    return;
  }
  const bool to_us = (owner_event.owner_type == F_OWNER_TID && owner_event.owner == ::gettid()) ||
                     (owner_event.owner_type == F_OWNER_PID && owner_event.owner == ::getpid()) ||
                     (owner_event.owner_type == F_OWNER_PGRP && owner_event.owner == ::getpgrp());
  if (!to_us) {
    SignalOther(owner_event.owner_type, owner_event.owner, sig, reason, fd);
    return;
  }
  siginfo_t info;
  std::memset(&info, 0, sizeof info);
  if (sig <= 0) {
    info.si_code = SI_KERNEL;  // SEND_SIG_PRIV
    QueueToSelf(SIGIO, &info);
    return;
  }
  info.si_code = reason;
  info.si_band = BandOf(reason);
  info.si_fd = fd;
  QueueToSelf(sig, &info);
}

void MockBackend::SignalSigtrap(MockEvent& ev, uint64_t addr) {
  if (served_real_task_ && signal_sink_) {  // tools/exec: the real task (its signal mask is not known here)
    siginfo_t info;
    std::memset(&info, 0, sizeof info);
    info.si_signo = SIGTRAP;
    info.si_code = kTrapPerf;
    info.si_addr = reinterpret_cast<void*>(addr);
    SetSigPerf(&info, ev.attr.sig_data, ev.attr.type, 0);
    signal_sink_(task_.pid, task_.tid, info);
    return;
  }
  if (task_.tid != kMockPid) return;  // perf_sigtrap() signals the task, which has no real process
  (void)ev;
  siginfo_t info;
  std::memset(&info, 0, sizeof info);
  info.si_code = kTrapPerf;
  info.si_addr = reinterpret_cast<void*>(addr);
  sigset_t blocked;
  ::sigprocmask(SIG_BLOCK, nullptr, &blocked);
  SetSigPerf(&info, ev.attr.sig_data, ev.attr.type, sigismember(&blocked, SIGTRAP) ? kTrapPerfFlagAsync : 0);
  QueueToSelf(SIGTRAP, &info);
}

}  // namespace perftest::mock
