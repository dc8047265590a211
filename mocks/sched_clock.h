// SchedClockCounter: the hardware counter a machine's sched_clock() (perf's
// clock, local_clock()) is derived from, and the self-monitoring page's time
// fields that let user space convert a read of it ("cyc") into that clock.
//
//   SchedClockCounter tsc(SchedClockCounter::Params{.khz = 2'000'000, .bits = 64, .start = 1'000'000},
//                         SchedClockCounter::Style::kX86Tsc);
//   uint64_t cyc = tsc.CyclesAt(now_ns);                   // what RDTSC returns at perf time now_ns
//   UserTimeFields f = tsc.PageFields(now_ns, /*use_clockid=*/false);   // written at an update at now_ns
//
// The counter runs at `khz` from `start` cycles at perf time 0 and is `bits`
// wide (it wraps). The kernel converts cycles to ns with a mult/shift pair:
//   ns = (cyc * mult) >> shift   (mul_u64_u32_shr(), 128-bit intermediate)
// computed by clocks_calc_mult_shift() (kernel/time/clocksource.c): the
// largest shift (<= 32) whose mult = round((to << shift) / from) still fits
// the conversion range; a shift of 32 is published as 31 with mult halved
// (arch_perf_update_userpage(): "time_shift is not expected to be greater
// than 31").
//
// Two styles, after the two arch_perf_update_userpage() families:
//  - kX86Tsc (arch/x86/events/core.c): only with a native, stable TSC
//    sched_clock (using_native_sched_clock() && sched_clock_stable()): a guest
//    whose sched_clock is kvm-clock publishes no time fields (as this
//    project's VM: cap_user_time 0). cyc2ns (arch/x86/kernel/tsc.c
//    set_cyc2ns_scale(): clocks_calc_mult_shift(khz, NSEC_PER_MSEC, 0),
//    cyc2ns_offset = ns_now - cyc2ns(tsc_now) at setup) → cap_user_time = 1,
//    time_mult/shift, time_offset = cyc2ns_offset - now; cap_user_time_zero
//    and time_zero = cyc2ns_offset only without attr.use_clockid; no
//    cap_user_time_short (the TSC is 64 bits).
//  - kGenericSchedClock (arm64 arch timer, drivers/perf/arm_pmuv3.c; riscv
//    rdtime, drivers/perf/riscv_pmu.c; both over kernel/time/sched_clock.c):
//    sched_clock_register() computes mult/shift with
//    clocks_calc_mult_shift(rate, NSEC_PER_SEC, 3600) and refreshes the epoch
//    (epoch_cyc, epoch_ns) before the counter can wrap (update_sched_clock()
//    every wrap_kt, ~7/8 of the wrap time); the page gets time_cycles =
//    epoch_cyc, time_mask = sched_clock_mask, time_zero = epoch_ns -
//    cyc2ns(epoch_cyc), time_offset = time_zero - now, and
//    cap_user_time = cap_user_time_zero = cap_user_time_short = 1 whatever
//    the event's clockid.
// The model's perf time (MockBackend's now) is primary: CyclesAt() is the
// counter at that time, chosen so that a user conversion of CyclesAt(t) lands
// within one counter tick at or below t (the kernel's clock is the converted
// counter, so there the two agree by construction).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "harness/user_time.h"

namespace perftest::mock {

class SchedClockCounter {
 public:
  enum class Style { kX86Tsc, kGenericSchedClock };
  struct Params {
    uint64_t khz = 0;    // counter rate, kHz (>= 1)
    uint32_t bits = 64;  // counter width, 1..64
    uint64_t start = 0;  // the counter's value at perf time 0 (masked to `bits`)
  };

  SchedClockCounter(const Params& p, Style style);

  // The counter's value at perf time `ns`, `bits` wide: start + about
  // ns * khz / 10^6 — exactly the last count whose conversion is <= ns.
  uint64_t CyclesAt(uint64_t ns) const;
  // The fields an update of the page at perf time `now` writes; `use_clockid`
  // is the event's attr.use_clockid.
  UserTimeFields PageFields(uint64_t now, bool use_clockid) const;

  uint32_t mult() const { return mult_; }
  uint32_t shift() const { return shift_; }
  uint64_t mask() const { return mask_; }
  Style style() const { return style_; }
  // The epoch refresh period of kGenericSchedClock, ns (0: never, the counter
  // does not wrap within 2^63 ns).
  uint64_t epoch_period_ns() const { return epoch_period_; }

 private:
  uint64_t CycToNs(uint64_t cyc) const;  // mul_u64_u32_shr(cyc, mult, shift)
  uint64_t ElapsedToNs(uint64_t n) const;  // the clock `n` cycles after `start`
  uint64_t ElapsedAt(uint64_t ns) const;   // the cycles since `start` at perf time `ns`

  Params p_;
  Style style_;
  uint64_t mask_ = 0;
  uint32_t mult_ = 0;
  uint32_t shift_ = 0;
  uint64_t epoch_period_ = 0;
};

// The counter of a profile's sched_clock_counter (khz 0: none) on `arch`
// ("x86_64": kX86Tsc; any other: kGenericSchedClock).
std::optional<SchedClockCounter> MakeSchedClockCounter(const SchedClockCounter::Params& p, std::string_view arch);

// clocks_calc_mult_shift(): mult and shift converting `from` Hz-units to `to`
// units over at least `maxsec` seconds (0: no range limit beyond 32 bits of
// mult). Returns {mult, shift}.
struct MultShift {
  uint32_t mult;
  uint32_t shift;
};
MultShift CalcMultShift(uint64_t from, uint64_t to, uint32_t maxsec);

}  // namespace perftest::mock
