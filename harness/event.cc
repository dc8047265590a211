#include "harness/event.h"

#include <fmt/format.h>

namespace perftest {

Result<Event> Event::Open(Backend& backend, perf_event_attr attr, pid_t pid, int cpu, const Event* group_leader,
                          unsigned long flags) {
  const int group_fd = group_leader != nullptr ? group_leader->fd() : -1;
  Result<int> fd = backend.PerfEventOpen(&attr, pid, cpu, group_fd, flags);
  if (!fd.ok()) return Result<Event>::FailureFrom(fd);
  return Result<Event>::Ok(Event(&backend, *fd, attr), fd.call_description());
}

Event::Event(Event&& o) noexcept : backend_(o.backend_), fd_(o.fd_), attr_(o.attr_) { o.fd_ = -1; }

Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    (void)Close();
    backend_ = o.backend_;
    fd_ = o.fd_;
    attr_ = o.attr_;
    o.fd_ = -1;
  }
  return *this;
}

Event::~Event() { (void)Close(); }

Result<void> Event::Close() {
  if (fd_ < 0) return Result<void>::Ok();
  const int fd = fd_;
  fd_ = -1;
  return backend_->Close(fd);
}

Result<void> Event::SimpleIoctl(unsigned long request, uintptr_t arg, bool whole_group) {
  Result<int> r = backend_->Ioctl(fd_, request, whole_group ? static_cast<uintptr_t>(PERF_IOC_FLAG_GROUP) : arg);
  if (!r.ok()) return Result<void>::FailureFrom(r);
  return Result<void>::Ok({}, r.call_description());
}

Result<void> Event::Enable(bool whole_group) { return SimpleIoctl(PERF_EVENT_IOC_ENABLE, 0, whole_group); }
Result<void> Event::Disable(bool whole_group) { return SimpleIoctl(PERF_EVENT_IOC_DISABLE, 0, whole_group); }
Result<void> Event::Reset(bool whole_group) { return SimpleIoctl(PERF_EVENT_IOC_RESET, 0, whole_group); }

Result<uint64_t> Event::Id() {
  uint64_t id = 0;
  Result<int> r = backend_->Ioctl(fd_, PERF_EVENT_IOC_ID, reinterpret_cast<uintptr_t>(&id));
  if (!r.ok()) return Result<uint64_t>::FailureFrom(r);
  return Result<uint64_t>::Ok(id, r.call_description());
}

Result<void> Event::SetOutput(const Event* target) {
  const int target_fd = target != nullptr ? target->fd() : -1;
  return SimpleIoctl(PERF_EVENT_IOC_SET_OUTPUT, static_cast<uintptr_t>(static_cast<intptr_t>(target_fd)), false);
}

Result<void> Event::PauseOutput(bool pause) { return SimpleIoctl(PERF_EVENT_IOC_PAUSE_OUTPUT, pause ? 1 : 0, false); }

Result<ReadValues> Event::Read(size_t nr_counters) {
  const size_t want = ReadFormatSize(attr_.read_format, nr_counters);
  std::vector<std::byte> buf(want);
  Result<size_t> n = backend_->Read(fd_, buf.data(), buf.size());
  if (!n.ok()) return Result<ReadValues>::FailureFrom(n);
  buf.resize(*n);
  Result<ReadValues> v = DecodeReadFormat(attr_.read_format, buf);
  if (!v.ok()) return Result<ReadValues>::Failure(v.error(), fmt::format("{} -> {}", n.ToString(), v.call()));
  return v;
}

Result<uint64_t> Event::ReadValue() {
  Result<ReadValues> v = Read();
  if (!v.ok()) return Result<uint64_t>::FailureFrom(v);
  return Result<uint64_t>::Ok(v->counters.at(0).value, v.call_description());
}

Result<Group> Group::Open(Backend& backend, const perf_event_attr& leader, const std::vector<perf_event_attr>& members,
                          pid_t pid, int cpu) {
  Group g;
  Result<Event> l = Event::Open(backend, leader, pid, cpu);
  if (!l.ok()) return Result<Group>::FailureFrom(l);
  g.events_.push_back(std::move(*l));
  for (const perf_event_attr& m : members) {
    Result<Event> e = Event::Open(backend, m, pid, cpu, &g.events_.front());
    if (!e.ok()) return Result<Group>::FailureFrom(e);
    g.events_.push_back(std::move(*e));
  }
  return Result<Group>::Ok(std::move(g));
}

Group& Group::operator=(Group&& o) noexcept {
  if (this != &o) {
    while (!events_.empty()) events_.pop_back();
    events_ = std::move(o.events_);
  }
  return *this;
}

Group::~Group() {
  // Members first, the leader last.
  while (!events_.empty()) events_.pop_back();
}

}  // namespace perftest
