// MockBackend, the real fds behind events.
//
// Every event is a real fd of this process, so its number is unique and
// close(2)/fcntl(2)/poll(2) see a real file. Creating a memfd per event,
// though, costs more than the kernel's own perf_event_open (bench/mock_bench.cc),
// so an event's fd starts as a dup of one placeholder memfd (F_DUPFD: the
// lowest free number, FD_CLOEXEC as PERF_FLAG_FD_CLOEXEC asks) and gets a
// memfd of its own (dup3(2) onto the same number) only when something needs
// the file itself: mmap(2), where the ring buffer lives, and the fcntl(2)
// commands that change or share the open file (F_SETFL, F_SETFD, F_DUPFD, ...).
// F_GETFD and F_GETFL read the same as from a memfd of its own.
//
// When an event without a memfd is closed, its fd is kept as a spare and
// handed to the next event (the lowest spare first) instead of being closed
// and taken again: no syscall per open+close. To the caller a spare is a
// closed fd: read, ioctl, mmap, close and fcntl on it fail with EBADF and
// poll reports POLLNVAL (mock_backend.cc). What this changes: a spare's
// number stays taken in the process, so a real file opened meanwhile gets
// another number than under the kernel, and an event may get a spare's
// number where the kernel would give a lower one freed since; when the
// lowest spare is at or past the modelled RLIMIT_NOFILE, a fresh fd (the
// lowest free) is taken, so EMFILE comes as from the kernel.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <iterator>

#include "mocks/internal/mock_backend_impl.h"

namespace perftest::mock {
namespace {

// At most this many spares are kept; more are closed.
constexpr size_t kMaxSpareFds = 64;

}  // namespace

int MockBackend::NewEventFd(bool cloexec, int* fd) {
  // The lowest spare (the last: they are kept highest first), unless it
  // would pass the modelled RLIMIT_NOFILE.
  if (!spare_fds_.empty() &&
      (creds_.nofile == 0 || static_cast<uint64_t>(spare_fds_.back().first) < creds_.nofile)) {
    const auto [spare, spare_cloexec] = spare_fds_.back();
    if (spare_cloexec != cloexec && ::fcntl(spare, F_SETFD, cloexec ? FD_CLOEXEC : 0) != 0) return errno;
    spare_fds_.pop_back();
    *fd = spare;
    return 0;
  }
  if (placeholder_fd_ < 0) {
    // Out of the way of the numbers events get: the highest number below
    // min(RLIMIT_NOFILE, 1024) that is free, else the lowest free one.
    const int low = ::memfd_create("perf_event", MFD_CLOEXEC);
    if (low < 0) return errno;
    const long max = ::sysconf(_SC_OPEN_MAX);
    const int high = ::fcntl(low, F_DUPFD_CLOEXEC, static_cast<int>(max > 0 && max < 1024 ? max - 1 : 1023));
    if (high >= 0) {
      ::close(low);
      placeholder_fd_ = high;
    } else {
      placeholder_fd_ = low;
    }
  }
  const int dup = ::fcntl(placeholder_fd_, cloexec ? F_DUPFD_CLOEXEC : F_DUPFD, 0);
  if (dup < 0) return errno;
  *fd = dup;
  return 0;
}

void MockBackend::ReleaseEventFd(int fd, bool memfd_backed, bool cloexec) {
  if (!memfd_backed && spare_fds_.size() < kMaxSpareFds) {
    // Highest first: before the first lower one from the end.
    auto pos = spare_fds_.end();
    while (pos != spare_fds_.begin() && std::prev(pos)->first < fd) --pos;
    spare_fds_.emplace(pos, fd, cloexec);
    return;
  }
  ::close(fd);
}

int MockBackend::BackWithMemfd(MockEvent& ev) {
  if (ev.memfd >= 0) return 0;
  const int memfd = ::memfd_create("perf_event", MFD_CLOEXEC);
  if (memfd < 0) return errno;
  // dup3(): the fd keeps its number and FD_CLOEXEC, now on the memfd.
  const int flags = ::fcntl(ev.fd, F_GETFD);
  const int r = flags < 0 ? -1 : ::dup3(memfd, ev.fd, (flags & FD_CLOEXEC) ? O_CLOEXEC : 0);
  const int err = errno;
  ::close(memfd);
  if (r < 0) return err;
  ev.memfd = ev.fd;
  return 0;
}

bool MockBackend::IsSpareFd(int fd) const {
  for (const auto& [spare, cloexec] : spare_fds_) {
    if (spare == fd) return true;
  }
  return false;
}

bool MockBackend::FdIsOpen(int fd) const { return fd >= 0 && !IsSpareFd(fd) && ::fcntl(fd, F_GETFD) != -1; }

void MockBackend::CloseAllFds() {
  for (const auto& [fd, ev] : fds_) ::close(fd);
  for (const auto& [fd, cloexec] : spare_fds_) ::close(fd);
  spare_fds_.clear();
  if (placeholder_fd_ >= 0) ::close(placeholder_fd_);
  placeholder_fd_ = -1;
}

}  // namespace perftest::mock
