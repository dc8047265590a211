// MockBackend, the syscall surface but for perf_event_open (mock_open.cc) and
// ioctl (mock_ioctl.cc): read, mmap/munmap, close, prctl, poll, fcntl, and the
// event's life (perf_event_release_kernel()). What the simulated task does is
// in mock_workloads.cc and the files it calls (mocks/internal/mock_backend_impl.h
// lists them).
#include "mocks/mock_backend.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <new>

#include "harness/describe.h"
#include "mocks/internal/mock_backend_impl.h"
#include "mocks/internal/mock_fail.h"
#include "mocks/breakpoint_pmu.h"
#include "mocks/free_running_pmu.h"
#include "mocks/software_pmu.h"
#include "mocks/tracepoint_pmu.h"
#include "mocks/uprobe_pmu.h"

namespace perftest::mock {
namespace {

// ReadFormatSize(read_format) of one counter for each read_format below
// PERF_FORMAT_MAX (CopyAttr() refuses other bits): a lookup on Read()'s hot path.
const std::array<uint8_t, PERF_FORMAT_MAX> kReadOneSize = [] {
  std::array<uint8_t, PERF_FORMAT_MAX> t{};
  for (uint64_t rf = 0; rf < PERF_FORMAT_MAX; ++rf) t[rf] = static_cast<uint8_t>(ReadFormatSize(rf, 1));
  return t;
}();

}  // namespace

MockBackend::MockBackend(MockProfile profile, MockModels models)
    : profile_(std::move(profile)), models_(std::move(models)) {
  machine_ = profile_.ToMachineInfo();
  creds_ = ProfileCredentials(profile_);
  tick_ns_ = kNsecPerSec / profile_.hz;
  // perf_event_max_sample_rate handler: max_samples_per_tick = DIV_ROUND_UP(rate, HZ).
  max_samples_per_tick_ = (profile_.max_sample_rate + profile_.hz - 1) / profile_.hz;
  limits_.attr_size = profile_.attr_size;
  limits_.page_size = profile_.page_size;
  limits_.max_stack = profile_.max_stack;
  limits_.max_sample_rate = profile_.max_sample_rate;
  limits_.paranoid = profile_.perf_event_paranoid;
  limits_.x86_64 = profile_.arch == "x86_64";
  // PERF_REG_ARM64_MAX (arch/arm64/include/uapi/asm/perf_regs.h), PERF_REG_RISCV_MAX
  if (profile_.arch == "aarch64") limits_.perf_reg_max = 33;
  if (profile_.arch == "riscv64") limits_.perf_reg_max = 32;
  limits_.aux_action = profile_.attr_aux_action;
  // perf_copy_attr() knows the bits of the profile's kernel release.
  limits_.kernel_version = profile_.kernel_version != 0 ? profile_.kernel_version : kUapiKernelVersion;
  limits_.known = AttrBitsFor(limits_.kernel_version);
}

MockBackend::~MockBackend() {
  CloseAllFds();
  // Caller mappings stay valid (as after close(2) of a mapped perf fd); the
  // writer views go with the buffers.
  for (auto& ev : events_) ev->rb.reset();
}

// The hot path (read(2) of a counting event, bench/mock_bench.cc): an event
// that is not in error, without PERF_FORMAT_GROUP, into a buffer that holds
// its record. Everything else takes ReadSlow(), which makes the same checks
// in the kernel's order.
Result<size_t> MockBackend::Read(int fd, void* buf, size_t len) {
  MockEvent* ev = FindFd(fd);
  if (ev != nullptr && !ev->error && !(ev->attr.read_format & PERF_FORMAT_GROUP) &&
      len >= kReadOneSize[ev->attr.read_format & (PERF_FORMAT_MAX - 1)]) [[likely]] {
    // The Result is made first, in place, while the arguments are still in
    // registers; the record EncodeReadOne() writes is ReadSize() bytes (perf_read_one()).
    auto read_one = [&] {
      const size_t size = kReadOneSize[ev->attr.read_format & (PERF_FORMAT_MAX - 1)];  // ReadSize(*ev)
      Result<size_t> r = Result<size_t>::OkWith(size, [&] { return ReadCall(fd, len); });
      EncodeReadOne(*ev, buf);
      return r;
    };
    return read_one();
  }
  return ReadSlow(fd, buf, len);
}

Result<size_t> MockBackend::ReadSlow(int fd, void* buf, size_t len) {
  CallDescription call = ReadCall(fd, len);
  MockEvent* ev = FindFd(fd);
  if (ev == nullptr) {
    if (IsSpareFd(fd)) return Result<size_t>::Failure(EBADF, call);
    const ssize_t n = ::read(fd, buf, len);
    if (n < 0) return Result<size_t>::Failure(errno, call);
    return Result<size_t>::Ok(static_cast<size_t>(n), call);
  }
  // __perf_read(): "Return end-of-file for a read on an event that is in
  // error state" (a pinned group that could not go on), before the size check.
  if (ev->error) return Result<size_t>::Ok(0, std::move(call));
  // __perf_read(): the buffer must hold the whole read_format record.
  const size_t size = ReadSize(*ev);
  if (len < size) return Fail<size_t>(ENOSPC, call, fmt::format("read_format needs {} bytes", size));
  if (!(ev->attr.read_format & PERF_FORMAT_GROUP)) return Result<size_t>::Ok(EncodeReadOne(*ev, buf), std::move(call));
  std::vector<std::byte> out;
  EncodeReadFormat(ev->attr.read_format, ReadEventValues(*ev), &out);
  std::memcpy(buf, out.data(), out.size());
  return Result<size_t>::Ok(out.size(), std::move(call));
}


// kernel/events/core.c perf_mmap() (mm/mmap.c do_mmap() for the generic checks).
Result<void*> MockBackend::Mmap(size_t length, int prot, int flags, int fd, off_t offset) {
  const CallDescription call = MmapCall(length, prot, flags, fd, offset);
  MockEvent* ev = FindFd(fd);
  if (ev == nullptr) {
    if (IsSpareFd(fd)) return Result<void*>::Failure(EBADF, call);
    void* p = ::mmap(nullptr, length, prot, flags, fd, offset);
    if (p == MAP_FAILED) return Result<void*>::Failure(errno, call);
    foreign_mappings_[reinterpret_cast<uintptr_t>(p)] = length;
    return Result<void*>::Ok(p, call);
  }
  const size_t page = profile_.page_size;
  if (length == 0) return Fail<void*>(EINVAL, call, "zero length");
  if (offset < 0 || static_cast<size_t>(offset) % page != 0) return Fail<void*>(EINVAL, call, "unaligned offset");
  // The perf fd lives on the anon inode mount, noexec since Linux 6.15
  // ("anon_inode: raise SB_I_NODEV and SB_I_NOEXEC", fs/anon_inodes.c):
  // do_mmap() refuses PROT_EXEC there (path_noexec()); before, perf_mmap()
  // maps it like any other (seen in Debian's 6.1 arm64 guest).
  if ((prot & PROT_EXEC) != 0 && limits_.kernel_version >= KernelVersion(6, 15)) {
    return Fail<void*>(EPERM, call, "PROT_EXEC on a noexec file");
  }
  const size_t vma_size = (length + page - 1) / page * page;
  // "Don't allow mmap() of inherited per-task counters."
  if (ev->cpu == -1 && ev->attr.inherit) return Fail<void*>(EINVAL, call, "inherited per-task event");
  if (!(flags & MAP_SHARED)) return Fail<void*>(EINVAL, call, "the mapping must be MAP_SHARED");
  if (int err = BackWithMemfd(*ev)) return Fail<void*>(err, call, "no memfd for the buffer");
  if (offset != 0) return MmapAux(*ev, length, prot, offset, call.str());
  const size_t nr_pages = vma_size / page - 1;
  if (nr_pages != 0 && (nr_pages & (nr_pages - 1)) != 0) {
    return Fail<void*>(EINVAL, call, fmt::format("{} data pages is not a power of two", nr_pages));
  }

  std::shared_ptr<MockRingBuffer> rb = ev->rb;
  if (rb != nullptr) {
    if (rb->nr_pages() != nr_pages) {
      return Fail<void*>(EINVAL, call, fmt::format("the buffer has {} data pages", rb->nr_pages()));
    }
    if (!ev->owns_rb) return Fail<void*>(EBUSY, call, "the event's output is redirected (SET_OUTPUT)");
  } else {
    // rb_alloc(): the page array must fit a kmalloc (order <= MAX_PAGE_ORDER).
    if (nr_pages >= (size_t{1} << 19)) return Fail<void*>(ENOMEM, call, "buffer too large for rb_alloc()");
    // perf_mmap(): perf_event_mlock_kb per user (times the CPUs), then RLIMIT_MEMLOCK.
    uint64_t user_extra = 0, extra = 0;
    if (!MlockLimits(nr_pages + 1, &user_extra, &extra)) {
      return Fail<void*>(EPERM, call, "over perf_event_mlock_kb and RLIMIT_MEMLOCK without CAP_IPC_LOCK");
    }
    const uint64_t watermark = ev->attr.watermark ? ev->attr.wakeup_watermark : 0;
    auto created = MockRingBuffer::Create(ev->memfd, page, nr_pages, (prot & PROT_WRITE) != 0, watermark);
    if (!created.ok()) return Fail<void*>(created.error(), call, created.call());
    rb = *created;
    locked_vm_ += user_extra;
    pinned_vm_ += extra;
    rb_charge_[rb.get()] = {user_extra, extra};
    ev->rb = rb;
    ev->owns_rb = true;
  }
  void* p = ::mmap(nullptr, vma_size, prot, MAP_SHARED, ev->memfd, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    if (rb->mmap_count == 0) ReleaseBuffer(rb);
    return Result<void*>::Failure(err, call);
  }
  ++rb->mmap_count;
  mappings_[reinterpret_cast<uintptr_t>(p)] = Mapping{vma_size, ev, rb};
  UpdateUserPage(*ev);
  return Result<void*>::Ok(p, call);
}

// perf_mmap_close() of the last mapping: every event writing to the buffer
// is detached (ring_buffer_attach(event, NULL)) and the buffer freed.
void MockBackend::ReleaseBuffer(const std::shared_ptr<MockRingBuffer>& rb) {
  auto charge = rb_charge_.find(rb.get());
  if (charge != rb_charge_.end()) {
    locked_vm_ -= charge->second.first;
    pinned_vm_ -= charge->second.second;
    rb_charge_.erase(charge);
  }
  for (auto& e : events_) {
    if (e->rb == rb) {
      e->rb.reset();
      e->owns_rb = false;
    }
  }
}

Result<void> MockBackend::Munmap(void* addr, size_t length) {
  const CallDescription call = MunmapCall(addr, length);
  const uintptr_t key = reinterpret_cast<uintptr_t>(addr);
  if (auto f = foreign_mappings_.find(key); f != foreign_mappings_.end()) {
    if (::munmap(addr, length) != 0) return Result<void>::Failure(errno, call);
    foreign_mappings_.erase(f);
    return Result<void>::Ok({}, call);
  }
  auto it = mappings_.find(key);
  const size_t rounded = (length + profile_.page_size - 1) / profile_.page_size * profile_.page_size;
  if (it == mappings_.end() || it->second.length != rounded) {
    // Splitting a perf buffer mapping is refused (perf_mmap_may_split()).
    return Fail<void>(EINVAL, call, "not a whole mapping returned by Mmap");
  }
  Mapping m = std::move(it->second);
  mappings_.erase(it);
  ::munmap(addr, m.length);
  if (m.aux) UnmapAux(m);
  if (--m.rb->mmap_count == 0) ReleaseBuffer(m.rb);
  // An event whose fd is closed lives while a mapping holds its file.
  MockEvent* ev = m.event;
  if (ev->fd < 0) {
    bool mapped = false;
    for (const auto& [a, other] : mappings_) mapped |= other.event == ev;
    if (!mapped) DestroyEvent(ev);
  }
  return Result<void>::Ok({}, call);
}

// perf_release() -> perf_event_release_kernel(): group members become
// singletons (perf_group_detach()).
void MockBackend::DestroyEvent(MockEvent* ev) {
  if (!ev->children.empty()) FreeChildren(ev);
  if (ev->active) SchedOut(*ev);
  if (ev->is_leader()) {
    // perf_group_detach(): the siblings become singleton groups, but nothing
    // schedules those that were not running: they wait for the task's next
    // sched-in (or a ctx_resched() of their PMU) — Linux 6.18.
    for (MockEvent* s : ev->siblings) {
      s->leader = s;
      if (s->enabled && !s->active && s->pid != -1) s->deferred = true;
    }
    ev->siblings.clear();
  } else {
    auto& sib = ev->leader->siblings;
    sib.erase(std::remove(sib.begin(), sib.end(), ev), sib.end());
  }
  ev->rb.reset();
  auto it = std::find_if(events_.begin(), events_.end(), [&](const auto& p) { return p.get() == ev; });
  if (it != events_.end()) {
    std::unique_ptr<MockEvent> freed = std::move(*it);
    events_.erase(it);
    RecycleEvent(std::move(freed));
  }
  Reschedule();
}

std::unique_ptr<MockEvent> MockBackend::NewEvent() {
  if (free_events_.empty()) return std::make_unique<MockEvent>();
  std::unique_ptr<MockEvent> ev = std::move(free_events_.back());
  free_events_.pop_back();
  return ev;
}

void MockBackend::RecycleEvent(std::unique_ptr<MockEvent> ev) {
  if (free_events_.size() >= kMaxFreeEvents) return;  // freed here
  // A new event in the old one's memory: what it held (buffer, filter, PT
  // trace) goes now, as with delete.
  MockEvent* raw = ev.get();
  raw->~MockEvent();
  ::new (static_cast<void*>(raw)) MockEvent();
  free_events_.push_back(std::move(ev));
}

Result<void> MockBackend::Close(int fd) {
  auto call = [fd] { return CloseCall(fd); };  // made in place in the Result
  MockEvent* ev = FindFd(fd);
  if (ev == nullptr) {
    if (IsSpareFd(fd)) return Result<void>::Failure(EBADF, call());
    if (::close(fd) != 0) return Result<void>::Failure(errno, call());
    epolls_.erase(fd);
    return Result<void>::OkWith(call);
  }
  // The fd goes (reused as a spare when it has no memfd); a mapping keeps
  // the memfd, and the event with it.
  ReleaseEventFd(fd, ev->memfd >= 0, ev->cloexec);
  fds_.Erase(fd);
  ev->fd = -1;
  bool mapped = false;
  for (const auto& [a, m] : mappings_) mapped |= m.event == ev;
  if (!mapped) DestroyEvent(ev);
  return Result<void>::OkWith(call);
}

// perf_event_task_enable()/disable(): every event the task created (its
// owner list), each with its children; disabled=1 events are enabled too.
Result<int> MockBackend::Prctl(int option) {
  const std::string call = DescribePrctl(option);
  if (option == PR_TASK_PERF_EVENTS_ENABLE) {
    for (auto& e : events_) EnableEvent(*e);
    return Result<int>::Ok(0, call);
  }
  if (option == PR_TASK_PERF_EVENTS_DISABLE) {
    for (auto& e : events_) DisableEvent(*e);
    return Result<int>::Ok(0, call);
  }
  return Fail<int>(EINVAL, call, "only PR_TASK_PERF_EVENTS_ENABLE/DISABLE are modelled");
}

// do_poll() over perf_poll(): no rb -> POLLHUP; else rb->poll, cleared by the
// read. Nothing runs concurrently, so the timeout is never waited for.
Result<int> MockBackend::Poll(std::span<pollfd> fds, int timeout_ms) {
  const std::string call = DescribePoll(fds, timeout_ms);
  int ready = 0;
  for (pollfd& p : fds) {
    p.revents = 0;
    if (p.fd < 0) continue;
    if (MockEvent* ev = FindFd(p.fd)) {
      const uint32_t mask = PerfPoll(*ev);
      p.revents = static_cast<short>(mask & (static_cast<uint32_t>(static_cast<uint16_t>(p.events)) | POLLERR | POLLHUP));
    } else {
      pollfd one{p.fd, p.events, 0};
      if (IsSpareFd(p.fd)) {
        one.revents = POLLNVAL;  // closed
      } else if (::poll(&one, 1, 0) < 0) {
        return Result<int>::Failure(errno, call);
      }
      p.revents = one.revents;
    }
    if (p.revents != 0) ++ready;
  }
  return Result<int>::Ok(ready, call);
}

// The simulated tracefs: events/<system>/<name>/id from the profile.
Result<uint64_t> MockBackend::TracepointId(std::string_view system, std::string_view name) {
  const std::string key = fmt::format("{}:{}", system, name);
  const std::string call = fmt::format("tracepoint_id({}): events/{}/{}/id", key, system, name);
  auto it = profile_.tracepoints.find(key);
  if (it == profile_.tracepoints.end()) {
    return Fail<uint64_t>(ENOENT, call, fmt::format("profile '{}' has no such tracepoint", profile_.name));
  }
  return Result<uint64_t>::Ok(it->second, call);
}

Result<int> MockBackend::Fcntl(int fd, int cmd, long arg) {
  const CallDescription call = FcntlCall(fd, cmd, arg);
  if (MockEvent* ev = FindFd(fd)) {
    // The fd's own flag and the file's status flags need no file of its own;
    // the rest (F_SETFL, F_SETFD, F_DUPFD, locks, ...) act on the memfd.
    if (cmd != F_GETFD && cmd != F_GETFL && cmd != F_GETOWN && cmd != F_SETOWN && cmd != F_GETOWN_EX &&
        cmd != F_SETOWN_EX && cmd != F_GETSIG && cmd != F_SETSIG) {
      if (int err = BackWithMemfd(*ev)) return Fail<int>(err, call, "no memfd for the event");
    }
    if (std::optional<Result<int>> r = EventFcntl(*ev, fd, cmd, arg)) return *r;  // mock_signals.cc
  } else if (IsSpareFd(fd)) {
    return Result<int>::Failure(EBADF, call);
  }
  int r = ::fcntl(fd, cmd, arg);
  if (r < 0) return Result<int>::Failure(errno, call);
  // perf_event_open() makes the file with anon_inode_getfile(..., O_RDWR)
  // (fs/anon_inodes.c): f_flags carry no O_LARGEFILE, which the memfd behind
  // the model has (memfd_create() -> alloc_file_pseudo() with O_LARGEFILE).
  // The kernel's O_LARGEFILE of the arch this runs on (glibc spells it 0 on
  // 64-bit): asm-generic/fcntl.h 00100000; arm64's uapi asm/fcntl.h 0400000.
#if defined(__aarch64__) || defined(__arm__)
  constexpr int kKernelOLargefile = 0400000;
#else
  constexpr int kKernelOLargefile = 0100000;
#endif
  if (cmd == F_GETFL && FindFd(fd) != nullptr) {
    r &= ~kKernelOLargefile;
    if (FindFd(fd)->async) r |= O_ASYNC;  // modelled: EventFcntl()
  }
  return Result<int>::Ok(r, call);
}

}  // namespace perftest::mock

namespace perftest {

std::unique_ptr<Backend> MakeMockBackend(MockProfile profile, MockModels models) {
  return std::make_unique<mock::MockBackend>(std::move(profile), std::move(models));
}

}  // namespace perftest
