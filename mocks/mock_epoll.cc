// MockBackend, perf_poll() and epoll(7) over event fds.
//
// The epoll fd is a real one (epoll_create1(2): a unique fd that close(2)
// and the mock's Close() release); its interest list is kept here, since a
// memfd cannot be added to a real epoll (EPERM: regular files). The model of
// fs/eventpoll.c reduced to what perf_poll() makes observable:
//  - ep_insert() polls the fd once: a pending POLLIN is taken (atomic_xchg
//    in perf_poll()) and the item goes on the ready list;
//  - epoll_wait() re-polls the ready items (ep_send_events() ->
//    ep_item_poll()) and reports those whose mask meets their events (plus
//    EPOLLERR/EPOLLHUP, always reported); an item not on the ready list has had
//    no wakeup, so its rb->poll is 0 too: polling every item gives the same
//    answer, which is what EpollWait() does. Nothing runs concurrently, so the
//    timeout is never waited for.
#include <sys/epoll.h>

#include <fmt/format.h>

#include <cerrno>

#include "mocks/internal/mock_backend_impl.h"

namespace perftest::mock {

// perf_poll(): is_event_hup() (task exited, no live copies): EPOLLHUP alone;
// a pinned event in the ERROR state: EPOLLERR alone, buffer or not (Linux
// 6.16+; EPOLLHUP before); EPOLLHUP without a buffer; else rb->poll, taken.
uint32_t MockBackend::PerfPoll(MockEvent& ev) {
  const bool hup = ev.exited && ev.children.empty();
  if (hup) return EPOLLHUP;
  if (ev.error && ev.attr.pinned) return EPOLLERR;
  return ev.rb != nullptr ? ev.rb->TakePoll() : EPOLLHUP;
}

Result<int> MockBackend::EpollCreate() {
  const std::string call = "epoll_create1(EPOLL_CLOEXEC)";
  const int epfd = ::epoll_create1(EPOLL_CLOEXEC);
  if (epfd < 0) return Result<int>::Failure(errno, call);
  epolls_[epfd] = {};
  return Result<int>::Ok(epfd, call);
}

Result<int> MockBackend::EpollAdd(int epfd, int fd, uint32_t events) {
  const std::string call = fmt::format("epoll_ctl({}, EPOLL_CTL_ADD, {}, {:#x})", epfd, fd, events);
  auto it = epolls_.find(epfd);
  if (it == epolls_.end()) return Result<int>::Failure(EBADF, call + " [mock: not an epoll fd of this backend]");
  MockEvent* ev = FindFd(fd);
  if (ev == nullptr) return Result<int>::Failure(EBADF, call + " [mock: only event fds are modelled]");
  for (const auto& [f, e] : it->second) {
    if (f == fd) return Result<int>::Failure(EEXIST, call);
  }
  it->second.emplace_back(fd, events);
  (void)PerfPoll(*ev);  // ep_insert() -> ep_item_poll()
  return Result<int>::Ok(0, call);
}

Result<int> MockBackend::EpollWait(int epfd, std::span<epoll_event> out, int timeout_ms) {
  const std::string call = fmt::format("epoll_wait({}, {}, {})", epfd, out.size(), timeout_ms);
  auto it = epolls_.find(epfd);
  if (it == epolls_.end()) return Result<int>::Failure(EBADF, call + " [mock: not an epoll fd of this backend]");
  if (out.empty()) return Result<int>::Failure(EINVAL, call);
  int n = 0;
  for (const auto& [fd, events] : it->second) {
    if (static_cast<size_t>(n) == out.size()) break;
    MockEvent* ev = FindFd(fd);
    if (ev == nullptr) continue;  // closed: removed from the set (eventpoll_release())
    const uint32_t mask = PerfPoll(*ev) & (events | EPOLLERR | EPOLLHUP);
    if (mask == 0) continue;
    out[n].events = mask;
    out[n].data.fd = fd;
    ++n;
  }
  return Result<int>::Ok(n, call);
}

}  // namespace perftest::mock
