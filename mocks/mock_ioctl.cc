// MockBackend, ioctl(2) on an event fd: _perf_ioctl() of kernel/events/core.c
// and the functions it calls — _perf_event_enable()/disable() (mock_sched.cc),
// _perf_event_reset(), _perf_event_refresh() (mock_overflow.cc, with the
// overflow side of the budget), _perf_event_period(), perf_event_set_output(),
// perf_event_set_filter(), perf_event_query_prog_array() and
// perf_event_modify_attr().
#include <fmt/format.h>
#include <linux/perf_event.h>

#include <cerrno>
#include <cstring>

#include "harness/internal/describe.h"
#include "mocks/breakpoint_pmu.h"
#include "mocks/internal/mock_backend_impl.h"
#include "mocks/internal/mock_fail.h"
#include "mocks/software_pmu.h"
#include "mocks/tracepoint_pmu.h"

namespace perftest::mock {
namespace {

using internal::IoctlCall;

}  // namespace

// kernel/events/core.c perf_event_set_output().
int MockBackend::SetOutput(MockEvent& ev, MockEvent* output, std::string* why) {
  auto fail = [&](std::string text) {
    *why = std::move(text);
    return EINVAL;
  };
  if (output != nullptr) {
    if (output == &ev) return fail("an event cannot redirect to itself");
    if (output->cpu != ev.cpu) return fail("cross-CPU buffers are not allowed");
    if (output->cpu == -1 && output->pid != ev.pid) return fail("a per-task buffer must be the same task's");
    if (ClockOf(*output) != ClockOf(ev)) return fail("events with different clocks cannot share a buffer");
    if (output->attr.write_backward != ev.attr.write_backward) return fail("write_backward differs");
  }
  // "Can't redirect output if we've got an active mmap()".
  if (ev.owns_rb && ev.rb != nullptr) return fail("the event has its own mapped buffer");
  std::shared_ptr<MockRingBuffer> rb;
  if (output != nullptr) {
    rb = output->rb;
    if (rb == nullptr || rb->mmap_count == 0) return fail("the target has no mapped buffer");
  }
  ev.rb = std::move(rb);
  ev.owns_rb = false;
  return 0;
}

// _perf_event_period() and __perf_event_period().
int MockBackend::PeriodIoctl(MockEvent& ev, uintptr_t arg, std::string* why) {
  if (arg == 0) {
    *why = "NULL period pointer";
    return EFAULT;
  }
  uint64_t value;
  std::memcpy(&value, reinterpret_cast<const void*>(arg), sizeof value);
  if (!ev.is_sampling()) {
    *why = "not a sampling event";
    return EINVAL;
  }
  if (value == 0) {
    *why = "period 0";
    return EINVAL;
  }
  if (ev.attr.freq) {
    if (value > profile_.max_sample_rate) {
      *why = fmt::format("frequency {} > perf_event_max_sample_rate", value);
      return EINVAL;
    }
    ev.attr.sample_freq = value;
  } else {
    if (value & (uint64_t{1} << 63)) {
      *why = "period has bit 63 set";
      return EINVAL;
    }
    ev.attr.sample_period = value;
    ev.hw.sample_period = value;
  }
  if (ev.active) {
    // "We could be throttled; unthrottle now to avoid the tick trying to
    // unthrottle while we already re-started the event."
    if (ev.hw.interrupts == kMaxInterrupts) {
      ev.hw.interrupts = 0;
      LogThrottle(ev, /*unthrottle=*/true);
    }
    SoftwareEventStop(ev);
    ev.hw.period_left = 0;
    SoftwareEventStart(ev, /*add=*/false);
  } else {
    ev.hw.period_left = 0;
  }
  UpdateUserPage(ev);
  return 0;
}

// perf_event_modify_attr() -> perf_event_modify_breakpoint(): the event is
// disabled, the new attr checked (hw_breakpoint_parse(), then every field but
// bp_addr/bp_type/bp_len/disabled must equal the event's), copied, and the
// event re-enabled only if its attr.disabled is 0 — the open-time value when
// the check fails, so a breakpoint opened disabled stays disabled after any
// MODIFY_ATTRIBUTES that does not say disabled = 0 (Linux 6.18).
int MockBackend::ModifyBreakpoint(MockEvent& ev, const perf_event_attr& new_attr, std::string* why) {
  ev.attr.sig_data = new_attr.sig_data;  // perf_event_modify_copy_attr()
  DisableEvent(ev);
  int err = BreakpointParse(new_attr, BreakpointArchOf(profile_.arch), BreakpointTaskOf(ev), why);
  if (err == 0) {
    perf_event_attr old_attr = ev.attr;
    BreakpointCopyAttr(new_attr, &old_attr);
    if (std::memcmp(&old_attr, &new_attr, sizeof old_attr) != 0) {
      *why = "only bp_addr, bp_type, bp_len and disabled may change";
      err = EINVAL;
    } else {
      BreakpointCopyAttr(new_attr, &ev.attr);
    }
  }
  if (!ev.attr.disabled) EnableEvent(ev);
  return err;
}

uint32_t MockBackend::KernelAttrType(const MockEvent& ev) const {
  if (profile_.cpu_clock_type != 0 && ev.pmu == PmuId::kCpuClock) return profile_.cpu_clock_type;
  if (profile_.task_clock_type != 0 && ev.pmu == PmuId::kTaskClock) return profile_.task_clock_type;
  return ev.attr.type;
}

// The hot path (bench/mock_bench.cc): ENABLE, DISABLE and RESET of one
// event (no PERF_IOC_FLAG_GROUP) that has no inherited copies. The rest, and
// every failure, goes through IoctlSlow(): _perf_ioctl() in full.
Result<int> MockBackend::Ioctl(int fd, unsigned long request, uintptr_t arg) {
  MockEvent* ev = FindFd(fd);
  if (ev != nullptr && !(arg & PERF_IOC_FLAG_GROUP) && ev->children.empty()) [[likely]] {
    // The Result (0: these cannot fail) is made first, in place, while the
    // arguments are still in registers; then the action.
    auto ok_after = [&](auto action) {
      Result<int> r = Result<int>::OkWith(0, [&] { return IoctlCall(fd, request, arg); });
      action();
      return r;
    };
    switch (request) {
      case PERF_EVENT_IOC_ENABLE:
        return ok_after([&] { EnableEvent(*ev); });
      case PERF_EVENT_IOC_DISABLE:
        return ok_after([&] { DisableEvent(*ev); });
      case PERF_EVENT_IOC_RESET:
        return ok_after([&] { ResetEvent(*ev); });
      default:
        break;
    }
  }
  return IoctlSlow(fd, request, arg);
}

// _perf_event_reset(): the count only; times, child counts and the period stay.
void MockBackend::ResetEvent(MockEvent& ev) {
  ev.count = 0;
  UpdateUserPage(ev);
}

// _perf_ioctl().
Result<int> MockBackend::IoctlSlow(int fd, unsigned long request, uintptr_t arg) {
  CallDescription call = IoctlCall(fd, request, arg);
  MockEvent* ev = FindFd(fd);
  if (ev == nullptr) {
    return Fail<int>(FdIsOpen(fd) ? ENOTTY : EBADF, call, "not a perf event fd");
  }
  // perf_event_for_each_child(): the event, then its inherited copies.
  auto with_children = [](MockEvent& e, auto& fn) {
    fn(e);
    if (e.children.empty()) return;
    const std::vector<MockEvent*> kids = e.children;  // a copy: fn may change the list
    for (MockEvent* c : kids) fn(*c);
  };
  auto group_or_self = [&](auto fn) {
    if (arg & PERF_IOC_FLAG_GROUP) {
      MockEvent* leader = ev->leader;
      with_children(*leader, fn);
      for (MockEvent* s : leader->siblings) with_children(*s, fn);
    } else {
      with_children(*ev, fn);
    }
  };
  switch (request) {
    case PERF_EVENT_IOC_ENABLE:
      group_or_self([&](MockEvent& e) { EnableEvent(e); });
      return Result<int>::Ok(0, std::move(call));
    case PERF_EVENT_IOC_DISABLE:
      group_or_self([&](MockEvent& e) { DisableEvent(e); });
      return Result<int>::Ok(0, std::move(call));
    case PERF_EVENT_IOC_RESET:
      group_or_self([&](MockEvent& e) { ResetEvent(e); });
      return Result<int>::Ok(0, std::move(call));
    case PERF_EVENT_IOC_REFRESH: {
      std::string why;
      if (int err = Refresh(*ev, static_cast<int>(arg), &why)) return Fail<int>(err, call, why);  // mock_overflow.cc
      return Result<int>::Ok(0, std::move(call));
    }
    case PERF_EVENT_IOC_PERIOD: {
      std::string why;
      if (int err = PeriodIoctl(*ev, arg, &why)) return Fail<int>(err, call, why);
      return Result<int>::Ok(0, std::move(call));
    }
    case PERF_EVENT_IOC_ID: {
      if (arg == 0) return Fail<int>(EFAULT, call, "NULL id pointer");
      const uint64_t id = ev->primary_id();
      std::memcpy(reinterpret_cast<void*>(arg), &id, sizeof id);
      return Result<int>::Ok(0, std::move(call));
    }
    case PERF_EVENT_IOC_SET_OUTPUT: {
      std::string why;
      MockEvent* output = nullptr;
      if (arg != ~uintptr_t{0}) {  // "if (arg != -1)"; otherwise fdget() of the (unsigned int) fd
        output = FindFd(static_cast<int>(static_cast<unsigned int>(arg)));
        if (output == nullptr) return Fail<int>(EBADF, call, "the output fd is not a perf event");
      }
      if (int err = SetOutput(*ev, output, &why)) return Fail<int>(err, call, why);
      return Result<int>::Ok(0, std::move(call));
    }
    case PERF_EVENT_IOC_SET_FILTER: {
      std::string why;
      // strndup_user() first, then perf_event_set_filter(): only tracepoints and address filters.
      if (arg == 0) return Fail<int>(EFAULT, call, "NULL filter string");
      if (ev->tracepoint == nullptr) return Fail<int>(EINVAL, call, "filters need a tracepoint or an address-filter PMU");
      // ftrace_profile_set_filter(): one filter per event, ever.
      if (ev->filter != nullptr) return Fail<int>(EEXIST, call, "the event already has a filter");
      std::unique_ptr<TraceFilter> f;
      const char* text = reinterpret_cast<const char*>(arg);
      if (int err = TraceFilter::Parse(*ev->tracepoint, std::string_view(text, ::strnlen(text, profile_.page_size)),
                                       &f, &why)) {
        return Fail<int>(err, call, why);
      }
      ev->filter = std::move(f);
      return Result<int>::Ok(0, std::move(call));
    }
    case PERF_EVENT_IOC_SET_BPF: {
      const int prog_fd = static_cast<int>(static_cast<unsigned int>(arg));
      return Fail<int>(FdIsOpen(prog_fd) ? EINVAL : EBADF, call, "not a BPF program fd (bpf_prog_get())");
    }
    case PERF_EVENT_IOC_PAUSE_OUTPUT: {
      MockRingBuffer* rb = ev->rb.get();
      if (rb == nullptr || rb->nr_pages() == 0) return Fail<int>(EINVAL, call, "no buffer with data pages");
      rb->SetPaused(arg != 0);  // rb_toggle_paused()
      return Result<int>::Ok(0, std::move(call));
    }
    case PERF_EVENT_IOC_QUERY_BPF: {
      // kernel/trace/bpf_trace.c perf_event_query_prog_array().
      if (!Perfmon()) return Fail<int>(EPERM, call, "needs CAP_PERFMON (perfmon_capable())");
      if (ev->attr.type != PERF_TYPE_TRACEPOINT) return Fail<int>(EINVAL, call, "only tracepoints have BPF programs");
      if (arg == 0) return Fail<int>(EFAULT, call, "NULL query");
      perf_event_query_bpf query;
      std::memcpy(&query, reinterpret_cast<const void*>(arg), sizeof query);
      if (query.ids_len > 64) return Fail<int>(E2BIG, call, "ids_len > BPF_TRACE_MAX_PROGS");
      const uint32_t prog_cnt = 0;  // no BPF programs in the model
      std::memcpy(reinterpret_cast<char*>(arg) + offsetof(perf_event_query_bpf, prog_cnt), &prog_cnt, sizeof prog_cnt);
      return Result<int>::Ok(0, std::move(call));
    }
    case PERF_EVENT_IOC_MODIFY_ATTRIBUTES: {
      std::string why;
      // perf_event_modify_attr(): only breakpoints can be modified.
      if (arg == 0) return Fail<int>(EFAULT, call, "NULL attr pointer");
      perf_event_attr new_attr;
      if (int err = CopyAttr(reinterpret_cast<perf_event_attr*>(arg), Limits(), &new_attr, &why)) {
        return Fail<int>(err, call, why);
      }
      // event->attr.type is the PMU's own type: perf_swevent_init() rewrote it
      // for cpu-clock/task-clock when they have their own PMUs (clock_pmu_types).
      const uint32_t type = KernelAttrType(*ev);
      if (new_attr.type != type) {
        return Fail<int>(EINVAL, call, fmt::format("attr.type {} is not the event's type {}", new_attr.type, type));
      }
      if (type != PERF_TYPE_BREAKPOINT) return Fail<int>(EOPNOTSUPP, call, "only breakpoint attributes can be modified");
      if (int err = ModifyBreakpoint(*ev, new_attr, &why)) return Fail<int>(err, call, why);
      return Result<int>::Ok(0, std::move(call));
    }
    default:
      return Fail<int>(ENOTTY, call, "unknown perf ioctl");
  }
}

}  // namespace perftest::mock
