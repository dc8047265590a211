// MockBackend, the occurrences events count: software events
// (___perf_sw_event()), tracepoints (perf_tp_event()), breakpoints
// (perf_bp_event()) and the core PMU's hardware counters (cycles over
// simulated time, instructions and branches of the workloads, with the
// counter width's wrap-around and the sampling period's overflows). Each
// hands an overflow to Overflow() (mock_overflow.cc).
#include <linux/perf_event.h>

#include <algorithm>

#include "mocks/internal/mock_backend_impl.h"
#include "mocks/software_pmu.h"

namespace perftest::mock {

// ___perf_sw_event() -> do_perf_sw_event(): every ACTIVE software event of
// this config on CPU 0 that perf_swevent_match() accepts.
void MockBackend::SoftwareOccurrence(uint64_t config, const SampleData& data) {
  for (size_t i = 0; i < events_.size(); ++i) {
    MockEvent& ev = *events_[i];
    if (!ev.active || ev.hw.stopped) continue;  // perf_exclude_event(): PERF_HES_STOPPED
    if (ev.attr.type != PERF_TYPE_SOFTWARE || ev.attr.config != config) continue;
    if (ev.pid == -1 ? ev.cpu != static_cast<int>(data.cpu) : ev.pid != data.tid) continue;
    if (data.user_mode ? ev.attr.exclude_user : ev.attr.exclude_kernel) continue;
    SoftwareEventCount(ev, 1, data,
                       [this](MockEvent& e, int throttle, const SampleData& d) { return Overflow(e, throttle, d); });
  }
}


// The core PMU's view of [from, to) ns of the task running on CPU 0: cycles
// and ref-cycles at cpu_mhz, bus cycles at a tenth of that, and, while the
// task retires instructions (Spin), one instruction per cycle and a branch
// every two. Counted from absolute time so that splitting an interval changes
// nothing.
void MockBackend::CoreClockTicks(uint64_t from, uint64_t to) {
  if (!profile_.has_hardware) return;
  auto at = [&](uint64_t t, uint64_t div) {
    return static_cast<uint64_t>(static_cast<unsigned __int128>(t) * profile_.cpu_mhz / (1000 * div));
  };
  const uint64_t cycles = at(to, 1) - at(from, 1);
  HardwareCount(HwKind::kCycles, cycles);
  HardwareCount(HwKind::kRefCycles, cycles);
  HardwareCount(HwKind::kBusCycles, at(to, 10) - at(from, 10));
  if (task_.retiring) {
    HardwareCount(HwKind::kInstructions, cycles);
    HardwareCount(HwKind::kBranches, at(to, 2) - at(from, 2));
  }
}

// `n` occurrences of `kind` in the task (user mode) on CPU 0: every ACTIVE
// core event counting it there, unless it excludes user mode. Sampling events
// overflow every sample_period (x86_perf_event_set_period(): the counter
// starts at -left).
void MockBackend::HardwareCount(HwKind kind, uint64_t n) {
  if (n == 0) return;
  if (kind == HwKind::kInstructions) PtInstructions(n);
  for (size_t i = 0; i < events_.size(); ++i) {
    MockEvent& ev = *events_[i];
    if (!ev.active || ev.hw.stopped || ev.pmu != PmuId::kCore || ev.hw_event.kind != kind) continue;
    if (ev.pid == -1 ? ev.cpu != 0 : ev.pid != task_.tid) continue;
    if (ev.attr.exclude_user) continue;
    const uint32_t width = profile_.hardware.counter_width;
    const uint64_t mask = width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
    if (!ev.is_sampling()) {
      // The counter advances modulo 2^width; x86_perf_event_update() folds
      // each read's CounterDelta() into the 64-bit count. When it reaches 0
      // the overflow interrupt re-arms it at -max_period.
      uint64_t left = n;
      bool rearmed = false;
      while (left > 0) {
        const uint64_t to_zero = ((mask - ev.pmc) & mask) + 1;  // increments until it wraps to 0
        const uint64_t step = std::min(left, to_zero);
        const uint64_t next = (ev.pmc + step) & mask;
        ev.count += step == to_zero ? CounterDelta(ev.pmc, 0, width) : CounterDelta(ev.pmc, next, width);
        ev.pmc = step == to_zero ? (uint64_t{0} - MaxPeriod(width)) & mask : next;
        rearmed |= step == to_zero;
        left -= step;
      }
      // x86_perf_event_set_period() ends with perf_event_update_userpage().
      if (rearmed) UpdateUserPage(ev);
      continue;
    }
    uint64_t left = n;
    while (left > 0) {
      const uint64_t until = ev.hw.period_left > 0 ? static_cast<uint64_t>(ev.hw.period_left) : ev.hw.sample_period;
      if (left < until) {
        ev.count += left;
        ev.hw.period_left = static_cast<int64_t>(until - left);
        break;
      }
      ev.count += until;
      left -= until;
      ev.hw.period_left = static_cast<int64_t>(ev.hw.sample_period);
      SampleData d = UserData(kUserSpinIp, 0);
      d.period = ev.hw.sample_period;
      if (Overflow(ev, 1, d) != 0) {
        SoftwareEventStop(ev, /*from_overflow=*/true);
        break;
      }
    }
    ev.pmc = (uint64_t{0} - static_cast<uint64_t>(ev.hw.period_left)) & mask;  // programmed to -left
  }
}

// perf_tp_event(): every event on the tracepoint's per-CPU list (ACTIVE ones)
// that perf_tp_event_match() accepts counts `count` via perf_swevent_event().
void MockBackend::TracepointFire(const std::string& name, TraceValues values, const SampleData& data, uint64_t count) {
  auto it = profile_.tracepoints.find(name);
  if (it == profile_.tracepoints.end()) return;  // not in this machine's tracefs
  const uint64_t id = it->second;
  bool any = false;
  for (const auto& e : events_) any |= e->active && e->attr.type == PERF_TYPE_TRACEPOINT && e->attr.config == id;
  if (!any) return;
  values.numbers["common_type"] = static_cast<int64_t>(id);
  values.numbers["common_flags"] = 0;
  values.numbers["common_preempt_count"] = 1;
  values.numbers["common_pid"] = data.pid;
  SampleData d = data;
  d.has_raw = true;
  d.raw = TraceRawData(*FindTracepointModel(name), static_cast<uint16_t>(id), values);
  for (size_t i = 0; i < events_.size(); ++i) {
    MockEvent& ev = *events_[i];
    if (!ev.active || ev.hw.stopped) continue;
    if (ev.attr.type != PERF_TYPE_TRACEPOINT || ev.attr.config != id) continue;
    if (ev.pid == -1 ? ev.cpu != static_cast<int>(d.cpu) : ev.pid != d.tid) continue;
    // perf_tp_event_match(): exclude_kernel drops kernel-regs firings; exclude_user is not looked at.
    if (ev.attr.exclude_kernel && !d.user_mode) continue;
    if (ev.filter != nullptr && !ev.filter->Match(values)) continue;
    SoftwareEventCount(ev, count, d,
                       [this](MockEvent& e, int throttle, const SampleData& sd) { return Overflow(e, throttle, sd); });
  }
}

// perf_bp_event(): sample addr = bp_addr; perf_exclude_event() for the mode.
void MockBackend::BreakpointAccess(uint64_t addr, uint32_t width, Access access, uint64_t ip) {
  for (size_t i = 0; i < events_.size(); ++i) {
    MockEvent& ev = *events_[i];
    if (!ev.active || ev.hw.stopped || ev.pmu != PmuId::kBreakpoint) continue;
    if (ev.pid == -1 ? ev.cpu != 0 : ev.pid != task_.tid) continue;
    if (!BreakpointHits(ev.attr, addr, width, access, BreakpointArchOf(profile_.arch), BreakpointTaskOf(ev).compat_bp())) {
      continue;
    }
    if (ev.attr.exclude_user) continue;  // a user-mode access
    SoftwareEventCount(ev, 1, UserData(ip, ev.attr.bp_addr),
                       [this](MockEvent& e, int throttle, const SampleData& sd) { return Overflow(e, throttle, sd); });
  }
}


}  // namespace perftest::mock
