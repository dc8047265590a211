// The served calls: each answers one system call of the program on a perf
// fd (or perf_event_open/prctl) with the mock, as kernel/events/core.c would
// (perf_fops: perf_read, perf_ioctl, perf_mmap, perf_poll, perf_fasync,
// perf_release), and logs it.
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <set>
#include <vector>

#include "harness/describe.h"
#include "tools/exec/tracer_impl.h"

namespace perftest::exec {
namespace {

constexpr size_t kMaxRead = 1 << 20;
constexpr int kPollSliceMs = 20;  // how long a poll(2) with perf fds waits natively before looking again

long ResultOf(int err, long value) { return err != 0 ? -err : value; }

}  // namespace

void Tracer::OnSyscallEntry(pid_t tid) {
  Regs r;
  if (!GetRegs(tid, &r)) return;
  if (pass_.erase(tid) != 0) {  // the reissued call of a served mmap/poll: native
    Resume(tid);
    return;
  }
  const pid_t tgid = TgidOf(tid);
  auto perf_fd = [&](int arg) { return fds_.Find(tgid, static_cast<int>(SyscallArg(r, arg))); };
  Injector inj(tid, r);
  Outcome o{.native = true};
  switch (SyscallNr(r)) {
    case SYS_perf_event_open:
      o = ServeOpen(tid, tgid, r, inj);
      break;
    case SYS_prctl:
      if (SyscallArg(r, 0) == PR_TASK_PERF_EVENTS_ENABLE || SyscallArg(r, 0) == PR_TASK_PERF_EVENTS_DISABLE) {
        o = ServePrctl(tid, tgid, static_cast<int>(SyscallArg(r, 0)));
      } else if (SyscallArg(r, 0) == PR_SET_NAME) {
        SideBandComm(tid, SyscallArg(r, 1));
      }
      break;
    case SYS_read:
      if (const PerfFd* e = perf_fd(0)) o = ServeRead(tid, tgid, r, *e);
      break;
    case SYS_ioctl:
      if (const PerfFd* e = perf_fd(0)) o = ServeIoctl(tid, tgid, r, *e);
      break;
    case SYS_mmap:
      if (PerfFd* e = perf_fd(4)) {
        o = ServeMmap(tid, tgid, r, *e, inj);
      } else if ((SyscallArg(r, 2) & PROT_EXEC) != 0) {
        o = SideBandExecMmap(tid, tgid, r, inj);
      }
      break;
    case SYS_close:
      if (perf_fd(0) != nullptr) o = ServeClose(tid, tgid, static_cast<int>(SyscallArg(r, 0)));
      break;
    case SYS_fcntl:
      if (PerfFd* e = perf_fd(0)) o = ServeFcntl(tid, tgid, r, *e, inj);
      break;
    case SYS_dup:
    case SYS_dup2:
    case SYS_dup3:
      if (const PerfFd* e = perf_fd(0)) o = ServeDup(tid, tgid, r, *e, inj);
      break;
    case SYS_poll:
    case SYS_ppoll:
      o = ServePoll(tid, tgid, r, inj);
      break;
    case SYS_close_range:
      CloseRange(tgid, r);
      break;
    default:
      break;
  }
  if (inj.dead()) return;
  if (TrackedTask* t = tasks_.Find(tid)) t->stops += inj.stops();
  if (o.native) {
    if (!inj.Reissue()) return;
    if (inj.injected()) pass_.insert(tid);
  } else if (!inj.Finish(o.result)) {
    return;
  }
  Resume(tid);
}

int Tracer::InstallFd(Injector& inj, int slot, int tracer_fd, bool cloexec) {
  std::optional<long> pidfd = inj.Call(SYS_pidfd_open, {static_cast<uint64_t>(self_), 0});
  if (!pidfd) return ESRCH;
  if (*pidfd < 0) return static_cast<int>(-*pidfd);
  std::optional<long> got = inj.Call(SYS_pidfd_getfd, {static_cast<uint64_t>(*pidfd), static_cast<uint64_t>(tracer_fd), 0});
  (void)inj.Call(SYS_close, {static_cast<uint64_t>(*pidfd)});
  if (!got) return ESRCH;
  if (*got < 0) return static_cast<int>(-*got);
  std::optional<long> placed = inj.Call(
      SYS_dup3, {static_cast<uint64_t>(*got), static_cast<uint64_t>(slot), static_cast<uint64_t>(cloexec ? O_CLOEXEC : 0)});
  (void)inj.Call(SYS_close, {static_cast<uint64_t>(*got)});
  if (!placed) return ESRCH;
  return *placed < 0 ? static_cast<int>(-*placed) : 0;
}

Tracer::Outcome Tracer::ServeOpen(pid_t tid, pid_t tgid, const Regs& r, Injector& inj) {
  const uint64_t attr_addr = SyscallArg(r, 0);
  const auto pid = static_cast<pid_t>(SyscallArg(r, 1));
  const auto cpu = static_cast<int>(SyscallArg(r, 2));
  const auto group_fd = static_cast<int>(SyscallArg(r, 3));
  const unsigned long flags = SyscallArg(r, 4);
  // perf_copy_attr(): size first, then as many bytes as it says (at most a page).
  std::vector<uint8_t> buf(std::max<size_t>(sizeof(perf_event_attr), 4096), 0);
  uint32_t size = 0;
  bool readable = attr_addr != 0 && ReadMemory(tid, attr_addr + 4, &size, sizeof size);
  if (readable) {
    const size_t want = size == 0 ? PERF_ATTR_SIZE_VER0 : std::min<size_t>(size, 4096);
    readable = ReadMemory(tid, attr_addr, buf.data(), want);
    // perf_copy_attr() takes the size with get_user() on its own: a size
    // under 8 bytes does not cover the field itself.
    std::memcpy(buf.data() + offsetof(perf_event_attr, size), &size, sizeof size);
  }
  auto* attr = readable ? reinterpret_cast<perf_event_attr*>(buf.data()) : nullptr;
  const std::string call = log_.enabled() ? DescribeOpen(attr, pid, cpu, group_fd, flags) : std::string();
  if (const int err = inject_.Next(ServedCall::kPerfEventOpen); err != 0) {
    log_.Write(tid, call, -err, "injected");
    return {.result = -err};
  }
  if (attr == nullptr && attr_addr != 0) {
    log_.Write(tid, call, -EFAULT);
    return {.result = -EFAULT};
  }
  // The task the event counts: find_lively_task_by_vpid(); -1 CPU-wide.
  pid_t target = pid == 0 ? tid : pid;
  if ((flags & PERF_FLAG_PID_CGROUP) != 0) target = -1;
  if (target > 0 && kill(target, 0) != 0 && errno == ESRCH) {
    log_.Write(tid, call, -ESRCH);
    return {.result = -ESRCH};
  }
  const int backend = backends_.ForTask(target, target > 0 ? TgidOf(target) : -1, target > 0 ? CommOf(target) : "");
  int tracer_group = -1;
  if (group_fd != -1) {
    const PerfFd* g = fds_.Find(tgid, group_fd);
    // perf_fget_light(): not an event fd -> EBADF; a leader of another
    // context (another task's backend) -> EINVAL, as perf_event_open() does.
    if (g == nullptr) {
      log_.Write(tid, call, -EBADF);
      return {.result = -EBADF};
    }
    if (g->backend != backend) {
      log_.Write(tid, call, -EINVAL, "group leader on another task");
      return {.result = -EINVAL};
    }
    tracer_group = g->tracer_fd;
  }
  // attr.uprobe_path (config1) points into the program: the mock reads a copy.
  if (attr != nullptr && uprobe_type_ != 0 && attr->type == uprobe_type_) {
    attr->config1 = probe_paths_.Relay(tid, attr->config1);
  }
  backends_.Sync(backend);
  Result<int> fd = backends_.Get(backend).PerfEventOpen(attr, target, cpu, tracer_group, flags);
  if (!fd.ok()) {
    if (fd.error() == E2BIG && attr != nullptr) WriteMemory(tid, attr_addr + 4, &attr->size, sizeof attr->size);
    log_.Write(tid, call, -fd.error());
    return {.result = -fd.error()};
  }
  const int slot = fds_.Allocate(tgid);
  const bool cloexec = (flags & PERF_FLAG_FD_CLOEXEC) != 0;
  const int err = slot < 0 ? EMFILE : InstallFd(inj, slot, *fd, cloexec);
  if (err != 0) {
    (void)backends_.Get(backend).Close(*fd);
    log_.Write(tid, call, -err, "cannot place the fd in the program");
    return {.result = -err};
  }
  const bool inherit = attr != nullptr && attr->inherit;
  fds_.Insert(tgid, slot, PerfFd{backend, *fd, cloexec, false, inherit});
  if (inherit) backends_.Inherit(backend);
  if (attr != nullptr && attr->sample_period != 0) {  // sample_period or sample_freq
    sampling_.insert(backend);
    ArmSampler();
  }
  log_.Write(tid, call, slot);
  return {.result = slot};
}

Tracer::Outcome Tracer::ServeRead(pid_t tid, pid_t tgid, const Regs& r, const PerfFd& e) {
  (void)tgid;
  const auto fd = static_cast<int>(SyscallArg(r, 0));
  const uint64_t addr = SyscallArg(r, 1);
  const size_t len = std::min<size_t>(SyscallArg(r, 2), kMaxRead);
  if (const int err = inject_.Next(ServedCall::kRead); err != 0) {
    if (log_.enabled()) log_.Write(tid, DescribeRead(fd, len), -err, "injected");
    return {.result = -err};
  }
  backends_.Sync(e.backend);
  uint8_t small[512];
  std::vector<uint8_t> big;
  uint8_t* buf = small;
  if (len > sizeof small) {
    big.resize(len);
    buf = big.data();
  }
  Result<size_t> n = backends_.Get(e.backend).Read(e.tracer_fd, buf, len);
  long result = n.ok() ? static_cast<long>(*n) : -n.error();
  if (n.ok() && !WriteMemory(tid, addr, buf, *n)) result = -EFAULT;
  if (log_.enabled()) log_.Write(tid, DescribeRead(fd, len), result);
  return {.result = result};
}

Tracer::Outcome Tracer::ServeIoctl(pid_t tid, pid_t tgid, const Regs& r, const PerfFd& e) {
  const auto fd = static_cast<int>(SyscallArg(r, 0));
  const unsigned long request = SyscallArg(r, 1);
  const uint64_t arg = SyscallArg(r, 2);
  const std::string call = log_.enabled() ? DescribeIoctl(fd, request, arg) : std::string();
  if (const int err = inject_.Next(ServedCall::kIoctl); err != 0) {
    log_.Write(tid, call, -err, "injected");
    return {.result = -err};
  }
  backends_.Sync(e.backend);
  Backend& b = backends_.Get(e.backend);
  long result = 0;
  switch (request) {
    case PERF_EVENT_IOC_ID: {
      uint64_t id = 0;
      Result<int> rc = b.Ioctl(e.tracer_fd, request, reinterpret_cast<uintptr_t>(&id));
      result = ResultOf(rc.error(), rc.ok() ? *rc : 0);
      if (rc.ok() && !WriteMemory(tid, arg, &id, sizeof id)) result = -EFAULT;
      break;
    }
    case PERF_EVENT_IOC_PERIOD: {
      uint64_t period = 0;
      if (!ReadMemory(tid, arg, &period, sizeof period)) {
        result = -EFAULT;
        break;
      }
      Result<int> rc = b.Ioctl(e.tracer_fd, request, reinterpret_cast<uintptr_t>(&period));
      result = ResultOf(rc.error(), rc.ok() ? *rc : 0);
      break;
    }
    case PERF_EVENT_IOC_SET_FILTER: {
      std::string filter;
      if (!ReadString(tid, arg, 4095, &filter)) {
        result = -EFAULT;
        break;
      }
      Result<int> rc = b.Ioctl(e.tracer_fd, request, reinterpret_cast<uintptr_t>(filter.c_str()));
      result = ResultOf(rc.error(), rc.ok() ? *rc : 0);
      break;
    }
    case PERF_EVENT_IOC_MODIFY_ATTRIBUTES: {
      std::vector<uint8_t> buf(std::max<size_t>(sizeof(perf_event_attr), 4096), 0);
      uint32_t size = 0;
      if (!ReadMemory(tid, arg + 4, &size, sizeof size) ||
          !ReadMemory(tid, arg, buf.data(), size == 0 ? PERF_ATTR_SIZE_VER0 : std::min<size_t>(size, 4096))) {
        result = -EFAULT;
        break;
      }
      Result<int> rc = b.Ioctl(e.tracer_fd, request, reinterpret_cast<uintptr_t>(buf.data()));
      result = ResultOf(rc.error(), rc.ok() ? *rc : 0);
      break;
    }
    case PERF_EVENT_IOC_SET_OUTPUT: {
      int out = -1;
      if (static_cast<int>(arg) != -1) {
        const PerfFd* o = fds_.Find(tgid, static_cast<int>(arg));
        if (o == nullptr) {
          result = -EBADF;
          break;
        }
        if (o->backend != e.backend) {
          result = -EINVAL;  // perf_event_set_output(): another context's buffer
          break;
        }
        out = o->tracer_fd;
      }
      Result<int> rc = b.Ioctl(e.tracer_fd, request, static_cast<uintptr_t>(static_cast<intptr_t>(out)));
      result = ResultOf(rc.error(), rc.ok() ? *rc : 0);
      break;
    }
    case PERF_EVENT_IOC_QUERY_BPF:
    case PERF_EVENT_IOC_SET_BPF:
      result = -EOPNOTSUPP;  // no BPF programs under exec
      break;
    default: {
      Result<int> rc = b.Ioctl(e.tracer_fd, request, arg);
      result = ResultOf(rc.error(), rc.ok() ? *rc : 0);
      break;
    }
  }
  log_.Write(tid, call, result);
  return {.result = result};
}

Tracer::Outcome Tracer::ServeMmap(pid_t tid, pid_t tgid, const Regs& r, PerfFd& e, Injector& inj) {
  (void)tgid;
  const size_t length = SyscallArg(r, 1);
  const auto prot = static_cast<int>(SyscallArg(r, 2));
  const auto flags = static_cast<int>(SyscallArg(r, 3));
  const auto fd = static_cast<int>(SyscallArg(r, 4));
  const auto offset = static_cast<off_t>(SyscallArg(r, 5));
  const std::string call = log_.enabled() ? DescribeMmap(length, prot, flags, fd, offset) : std::string();
  if (const int err = inject_.Next(ServedCall::kMmap); err != 0) {
    log_.Write(tid, call, -err, "injected");
    return {.result = -err};
  }
  Result<void*> m = backends_.Get(e.backend).Mmap(length, prot, flags, e.tracer_fd, offset);
  if (!m.ok()) {
    log_.Write(tid, call, -m.error());
    return {.result = -m.error()};
  }
  if (!e.backed) {
    // The event has its own memfd now (the ring buffer lives in it): the
    // program's fd becomes that file, then its mmap maps it natively.
    if (const int err = InstallFd(inj, fd, e.tracer_fd, e.cloexec); err != 0) {
      log_.Write(tid, call, -err, "cannot place the ring buffer's file in the program");
      return {.result = -err};
    }
    e.backed = true;
  }
  log_.Write(tid, call, 0, "served, then mapped natively");
  return {.native = true};
}

Tracer::Outcome Tracer::ServeClose(pid_t tid, pid_t tgid, int fd) {
  const PerfFd e = fds_.Erase(tgid, fd);
  Release(e);
  if (log_.enabled()) log_.Write(tid, DescribeClose(fd), 0, "then closed natively");
  return {.native = true};
}

Tracer::Outcome Tracer::ServeFcntl(pid_t tid, pid_t tgid, const Regs& r, PerfFd& e, Injector& inj) {
  const auto fd = static_cast<int>(SyscallArg(r, 0));
  const auto cmd = static_cast<int>(SyscallArg(r, 1));
  const auto arg = static_cast<long>(SyscallArg(r, 2));
  switch (cmd) {
    case F_GETFD:
    case F_GETFL:
    case F_SETOWN_EX:
    case F_GETOWN_EX:
      return {.native = true};
    case F_SETFD:
      e.cloexec = (arg & FD_CLOEXEC) != 0;
      return {.native = true};
    case F_DUPFD:
    case F_DUPFD_CLOEXEC:
      return ServeDup(tid, tgid, r, e, inj);
    default:
      break;
  }
  const std::string call = log_.enabled() ? DescribeFcntl(fd, cmd, arg) : std::string();
  if (const int err = inject_.Next(ServedCall::kFcntl); err != 0) {
    log_.Write(tid, call, -err, "injected");
    return {.result = -err};
  }
  Result<int> rc = backends_.Get(e.backend).Fcntl(e.tracer_fd, cmd, arg);
  const long result = ResultOf(rc.error(), rc.ok() ? *rc : 0);
  log_.Write(tid, call, result);
  return {.result = result};
}

Tracer::Outcome Tracer::ServeDup(pid_t tid, pid_t tgid, const Regs& r, const PerfFd& e, Injector& inj) {
  const uint64_t nr = SyscallNr(r);
  const auto oldfd = static_cast<int>(SyscallArg(r, 0));
  int newfd = -1;
  int flags = 0;
  if (nr == SYS_dup || nr == SYS_fcntl) {
    newfd = fds_.Allocate(tgid);
    if (nr == SYS_fcntl && static_cast<int>(SyscallArg(r, 1)) == F_DUPFD_CLOEXEC) flags = O_CLOEXEC;
    if (newfd < 0) return {.result = -EMFILE};
  } else {
    newfd = static_cast<int>(SyscallArg(r, 1));
    if (nr == SYS_dup3) flags = static_cast<int>(SyscallArg(r, 2));
    if (newfd == oldfd) return nr == SYS_dup3 ? Outcome{.result = -EINVAL} : Outcome{.result = newfd};
  }
  const PerfFd copy{e.backend, e.tracer_fd, (flags & O_CLOEXEC) != 0, e.backed, e.inherit};
  std::optional<long> rc = inj.Call(SYS_dup3, {static_cast<uint64_t>(oldfd), static_cast<uint64_t>(newfd),
                                               static_cast<uint64_t>(flags)});
  if (!rc) return {.result = -ESRCH};
  if (*rc >= 0) {
    Release(fds_.Erase(tgid, newfd));
    fds_.Insert(tgid, newfd, copy);
  }
  if (log_.enabled()) {
    log_.Write(tid, "dup3(oldfd=" + std::to_string(oldfd) + ", newfd=" + std::to_string(newfd) + ")", *rc);
  }
  return {.result = *rc};
}

Tracer::Outcome Tracer::ServePrctl(pid_t tid, pid_t tgid, int option) {
  const std::string call = DescribePrctl(option);
  if (const int err = inject_.Next(ServedCall::kPrctl); err != 0) {
    log_.Write(tid, call, -err, "injected");
    return {.result = -err};
  }
  // perf_event_task_enable()/disable(): the events the caller owns.
  std::set<int> backends;
  if (const auto* fds = fds_.Process(tgid)) {
    for (const auto& [fd, e] : *fds) backends.insert(e.backend);
  }
  for (int b : backends) {
    backends_.Sync(b);
    (void)backends_.Get(b).Prctl(option);
  }
  log_.Write(tid, call, 0);
  return {.result = 0};
}

Tracer::Outcome Tracer::ServePoll(pid_t tid, pid_t tgid, const Regs& r, Injector& inj) {
  const uint64_t addr = SyscallArg(r, 0);
  const uint64_t nfds = SyscallArg(r, 1);
  if (nfds == 0 || nfds > 4096) return {.native = true};
  std::vector<pollfd> fds(nfds);
  if (!ReadMemory(tid, addr, fds.data(), nfds * sizeof(pollfd))) return {.native = true};
  std::vector<size_t> perf;
  for (size_t i = 0; i < nfds; ++i) {
    if (fds_.Find(tgid, fds[i].fd) != nullptr) perf.push_back(i);
  }
  if (perf.empty()) return {.native = true};
  int timeout_ms = -1;
  if (SyscallNr(r) == SYS_poll) {
    timeout_ms = static_cast<int>(SyscallArg(r, 2));
  } else if (SyscallArg(r, 2) != 0) {
    timespec ts{};
    if (!ReadMemory(tid, SyscallArg(r, 2), &ts, sizeof ts)) return {.result = -EFAULT};
    timeout_ms = static_cast<int>(ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
  }
  if (const int err = inject_.Next(ServedCall::kPoll); err != 0) {
    if (log_.enabled()) log_.Write(tid, DescribePoll(fds, timeout_ms), -err, "injected");
    return {.result = -err};
  }
  // perf_poll() of each perf fd from its backend.
  auto perf_revents = [&] {
    int ready = 0;
    for (size_t i : perf) {
      const PerfFd* e = fds_.Find(tgid, fds[i].fd);
      backends_.Sync(e->backend);
      pollfd one{e->tracer_fd, fds[i].events, 0};
      Result<int> rc = backends_.Get(e->backend).Poll(std::span<pollfd>(&one, 1), 0);
      fds[i].revents = rc.ok() ? one.revents : POLLERR;
      ready += fds[i].revents != 0;
    }
    return ready;
  };
  int perf_ready = perf_revents();
  // The other fds natively, with the perf ones hidden (fd -1 is ignored):
  // no wait when a perf fd is ready, else a slice of the timeout.
  std::vector<pollfd> hidden = fds;
  for (size_t i : perf) hidden[i].fd = -1;
  if (!WriteMemory(tid, addr, hidden.data(), nfds * sizeof(pollfd))) return {.result = -EFAULT};
  const int wait = perf_ready > 0 ? 0 : (timeout_ms < 0 ? kPollSliceMs : std::min(timeout_ms, kPollSliceMs));
  std::optional<long> rc = inj.Call(SYS_poll, {addr, nfds, static_cast<uint64_t>(wait)});
  if (!rc) return {.result = -ESRCH};
  std::vector<pollfd> after(nfds);
  ReadMemory(tid, addr, after.data(), nfds * sizeof(pollfd));
  if (*rc < 0) {
    WriteMemory(tid, addr, fds.data(), nfds * sizeof(pollfd));
    return {.result = *rc};
  }
  if (perf_ready == 0) perf_ready = perf_revents();
  long count = 0;
  for (size_t i = 0; i < nfds; ++i) {
    if (std::find(perf.begin(), perf.end(), i) == perf.end()) fds[i].revents = after[i].revents;
    count += fds[i].revents != 0;
  }
  WriteMemory(tid, addr, fds.data(), nfds * sizeof(pollfd));
  if (log_.enabled()) log_.Write(tid, DescribePoll(fds, timeout_ms), count);
  return {.result = count};
}

void Tracer::SideBandComm(pid_t tid, uint64_t name_addr) {
  std::string name;
  if (!ReadString(tid, name_addr, 4096, &name)) return;  // the native call says EFAULT
  for (size_t b = 0; b < backends_.size(); ++b) {
    if (backends_.TaskOf(static_cast<int>(b)) != tid) continue;
    backends_.Sync(static_cast<int>(b));
    backends_.Control(static_cast<int>(b)).ServedComm(name);
  }
}

Tracer::Outcome Tracer::SideBandExecMmap(pid_t tid, pid_t tgid, const Regs& r, Injector& inj) {
  (void)tid;
  bool wanted = false;
  for (size_t b = 0; b < backends_.size(); ++b) wanted |= backends_.TaskOf(static_cast<int>(b)) == tgid;
  if (!wanted) return {.native = true};
  std::optional<long> addr = inj.Call(SYS_mmap, {SyscallArg(r, 0), SyscallArg(r, 1), SyscallArg(r, 2), SyscallArg(r, 3),
                                                 SyscallArg(r, 4), SyscallArg(r, 5)});
  if (!addr) return {.result = -ESRCH};
  if (*addr < 0 && *addr > -4096) return {.result = *addr};
  MockControl::ServedMapping m;
  m.addr = static_cast<uint64_t>(*addr);
  m.len = SyscallArg(r, 1);
  m.exec = true;
  m.filename = "//anon";
  m.pgoff = m.addr;  // an anonymous mapping's pgoff is its address (perf_event_mmap_event())
  const auto fd = static_cast<int>(SyscallArg(r, 4));
  if ((SyscallArg(r, 3) & MAP_ANONYMOUS) == 0 && fd >= 0) {
    const std::string link = "/proc/" + std::to_string(tgid) + "/fd/" + std::to_string(fd);
    char path[4096];
    const ssize_t n = readlink(link.c_str(), path, sizeof path - 1);
    struct stat st {};
    if (n > 0 && stat(link.c_str(), &st) == 0) {
      m.filename.assign(path, static_cast<size_t>(n));
      m.maj = major(st.st_dev);
      m.min = minor(st.st_dev);
      m.ino = st.st_ino;
      m.pgoff = SyscallArg(r, 5);
    }
  }
  for (size_t b = 0; b < backends_.size(); ++b) {
    if (backends_.TaskOf(static_cast<int>(b)) != tgid) continue;
    backends_.Sync(static_cast<int>(b));
    backends_.Control(static_cast<int>(b)).ServedMmap(m);
  }
  return {.result = *addr};
}

void Tracer::CloseRange(pid_t tgid, const Regs& r) {
  const auto first = static_cast<unsigned>(SyscallArg(r, 0));
  const auto last = static_cast<unsigned>(SyscallArg(r, 1));
  const auto flags = static_cast<unsigned>(SyscallArg(r, 2));
  constexpr unsigned kCloseRangeCloexec = 1u << 2;  // CLOSE_RANGE_CLOEXEC
  if ((flags & kCloseRangeCloexec) != 0) {
    if (const auto* fds = fds_.Process(tgid)) {
      for (const auto& [fd, e] : *fds) {
        if (static_cast<unsigned>(fd) >= first && static_cast<unsigned>(fd) <= last) fds_.Find(tgid, fd)->cloexec = true;
      }
    }
    return;
  }
  for (const PerfFd& e : fds_.CloseRange(tgid, first, last)) Release(e);
}

}  // namespace perftest::exec
