// MockBackend, self-monitoring: the user page's count and time fields
// (perf_event_update_userpage() with x86 arch_perf_update_userpage()), RDPMC
// (ReadPmc(): the counter a user page's index names) and RDTSC
// (ReadCycleCounter(): the profile's sched_clock_counter).
#include <fmt/format.h>
#include <linux/perf_event.h>

#include <cerrno>

#include "mocks/internal/mock_backend_impl.h"

namespace perftest::mock {

// perf_event_update_userpage() + x86 arch_perf_update_userpage().
void MockBackend::UpdateUserPage(MockEvent& ev) {
  if (ev.rb == nullptr) return;
  MockRingBuffer::UserPage u;
  u.offset = static_cast<int64_t>(ev.count + ev.child_count);
  u.time_enabled = ev.time_enabled;
  u.time_running = ev.time_running;
  if (profile_.has_hardware) {
    const uint32_t width = profile_.hardware.counter_width;
    u.pmc_width = static_cast<uint16_t>(width);
    // x86_pmu_event_mapped(): an mmapped core event may be read with RDPMC
    // (sysfs rdpmc = 1, the default).
    // A real task served by tools/exec would execute RDPMC on the host's
    // CPU, whose counters are not the model's: no user RDPMC for it.
    u.cap_user_rdpmc = ev.pmu == PmuId::kCore && ev.owns_rb && !served_real_task_;
    // arm64 arch_perf_update_userpage() (arch/arm64/kernel/perf_event.c in
    // 6.1, drivers/perf/arm_pmuv3.c later) sets pmc_width only where it sets
    // cap_user_rdpmc (armv8pmu_event_has_user_read()); x86 sets it for every
    // event (x86_pmu.cntval_bits).
    if (profile_.arch == "aarch64" && !u.cap_user_rdpmc) u.pmc_width = 0;
    if (u.cap_user_rdpmc && ev.active) {
      u.index = RdpmcCounter(ev.counter_gp, ev.counter_fixed) + 1;  // x86_pmu_event_idx()
      u.offset -= SignExtend(ev.pmc, width);                        // - hwc->prev_count
    }
  }
  // The time fields: the same for every event (the TSC style leaves
  // cap_user_time_zero out for an event with its own clockid).
  // (Not for a real task served by tools/exec: its RDTSC reads the host's
  // counter, which the simulated clock does not follow.)
  if (sched_clock_ && !served_real_task_) u.time = sched_clock_->PageFields(now_, ev.attr.use_clockid);
  ev.rb->sched_clock = sched_clock_ ? &*sched_clock_ : nullptr;
  ev.rb->UpdateUserPage(u);
}

Result<uint64_t> MockBackend::ReadCycleCounter() {
  const std::string call = "read_cycle_counter()";
  if (!sched_clock_) {
    return Result<uint64_t>::Failure(ENOSYS, call + fmt::format(" [mock: profile '{}' has no sched_clock_counter]",
                                                                  profile_.name));
  }
  return Result<uint64_t>::Ok(sched_clock_->CyclesAt(now_), call);
}

Result<uint64_t> MockBackend::ReadPmc(uint32_t index) {
  const std::string call = fmt::format("rdpmc(index={})", index);
  for (const auto& e : events_) {
    if (index != 0 && e->active && e->pmu == PmuId::kCore && CountersCpu(*e) == 0 &&
        RdpmcCounter(e->counter_gp, e->counter_fixed) + 1 == index) {
      return Result<uint64_t>::Ok(e->pmc, call);
    }
  }
  return Result<uint64_t>::Failure(EINVAL, call + " [mock: no active event on that counter of CPU 0]");
}

}  // namespace perftest::mock
