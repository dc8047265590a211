// Event: one perf event fd, owned (move-only; closed on destruction), and Group:
// a group leader with its members.
//
//   perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_TASK_CLOCK);
//   Result<Event> ev = Event::Open(backend, a);          // this task, any CPU
//   ev->Enable();  backend.RunWorkload(Workload::Spin(1ms));  ev->Disable();
//   Result<ReadValues> v = ev->Read();                   // decoded per attr.read_format
//
// All calls go through the Backend; errors are the kernel's errno.
#pragma once

#include <linux/perf_event.h>
#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "harness/backend.h"
#include "harness/read_format.h"
#include "harness/result.h"

namespace perftest {

class Event {
 public:
  // perf_event_open(attr, pid, cpu, group_fd = leader's fd or -1, flags).
  // Errors: perf_event_open(2)'s errno, unchanged.
  static Result<Event> Open(Backend& backend, perf_event_attr attr, pid_t pid = 0, int cpu = -1,
                            const Event* group_leader = nullptr,
                            unsigned long flags = PERF_FLAG_FD_CLOEXEC);

  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();

  int fd() const { return fd_; }
  const perf_event_attr& attr() const { return attr_; }
  Backend& backend() const { return *backend_; }

  // PERF_EVENT_IOC_ENABLE / DISABLE / RESET; with `whole_group`, PERF_IOC_FLAG_GROUP.
  Result<void> Enable(bool whole_group = false);
  Result<void> Disable(bool whole_group = false);
  Result<void> Reset(bool whole_group = false);
  // PERF_EVENT_IOC_ID: the event's id (the value PERF_SAMPLE_ID / PERF_FORMAT_ID carry).
  Result<uint64_t> Id();
  // PERF_EVENT_IOC_SET_OUTPUT: send this event's records to `target`'s buffer;
  // nullptr (fd -1) stops redirecting. Errors (kernel/events/core.c
  // perf_event_set_output(), 6.x): EINVAL when the two are on different CPUs
  // or tasks, use different clocks, or this event already has its own mapping.
  Result<void> SetOutput(const Event* target);
  // PERF_EVENT_IOC_PAUSE_OUTPUT: stop (true) or resume (false) writing to the buffer.
  Result<void> PauseOutput(bool pause);
  // read(2), decoded per attr.read_format. `nr_counters` sizes the buffer for
  // PERF_FORMAT_GROUP (leader + members). Errors: read(2)'s errno; EMSGSIZE on a
  // short read.
  Result<ReadValues> Read(size_t nr_counters = 1);
  // The counter value alone (first counter of Read()).
  Result<uint64_t> ReadValue();
  // close(2) now. Idempotent.
  Result<void> Close();

 private:
  Event(Backend* backend, int fd, const perf_event_attr& attr) : backend_(backend), fd_(fd), attr_(attr) {}
  Result<void> SimpleIoctl(unsigned long request, uintptr_t arg, bool whole_group);

  Backend* backend_ = nullptr;
  int fd_ = -1;
  perf_event_attr attr_{};
};

// A group leader and its members, opened together; members are opened with the
// leader's fd as group_fd. Closing order: members first, then the leader.
class Group {
 public:
  // Opens `leader` then each of `members` on the same pid/cpu. Errors: the first
  // perf_event_open that fails (already opened events are closed).
  static Result<Group> Open(Backend& backend, const perf_event_attr& leader,
                            const std::vector<perf_event_attr>& members, pid_t pid = 0, int cpu = -1);

  Event& leader() { return events_.front(); }
  Event& member(size_t i) { return events_.at(i + 1); }
  size_t size() const { return events_.size(); }

  Group(Group&&) noexcept = default;
  Group& operator=(Group&&) noexcept;
  ~Group();

 private:
  Group() = default;
  std::vector<Event> events_;  // [0] is the leader
};

}  // namespace perftest
