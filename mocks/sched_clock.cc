#include "mocks/sched_clock.h"

#include <algorithm>
#include <limits>

namespace perftest::mock {
namespace {

constexpr uint64_t kNsecPerSec = 1'000'000'000;
constexpr uint64_t kNsecPerMsec = 1'000'000;

}  // namespace

MultShift CalcMultShift(uint64_t from, uint64_t to, uint32_t maxsec) {
  // The range limit: mult may use only as many bits as leave room for
  // maxsec * from cycles in 64 bits.
  uint32_t mult_bits = 32;
  for (uint64_t range = (uint64_t{maxsec} * from) >> 32; range != 0; range >>= 1) --mult_bits;
  // The most precise pair: the largest shift whose rounded mult fits.
  uint64_t mult = 0;
  uint32_t shift = 32;
  for (; shift > 0; --shift) {
    mult = ((to << shift) + from / 2) / from;
    if ((mult >> mult_bits) == 0) break;
  }
  return {static_cast<uint32_t>(mult), shift};
}

SchedClockCounter::SchedClockCounter(const Params& p, Style style) : p_(p), style_(style) {
  mask_ = p_.bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << p_.bits) - 1;
  p_.start &= mask_;
  // x86 set_cyc2ns_scale(): khz -> ns per ms, no range limit; the generic
  // sched_clock_register(): Hz -> ns over an hour.
  const MultShift ms = style_ == Style::kX86Tsc ? CalcMultShift(p_.khz, kNsecPerMsec, 0)
                                                : CalcMultShift(p_.khz * 1000, kNsecPerSec, 3600);
  mult_ = ms.mult;
  shift_ = ms.shift;
  // Published with shift <= 31 (arch_perf_update_userpage() and set_cyc2ns_scale()).
  if (shift_ == 32) {
    shift_ = 31;
    mult_ >>= 1;
  }
  if (style_ == Style::kGenericSchedClock) {
    // sched_clock_register(): wrap = clocks_calc_max_nsecs(mult, shift, 0, mask)
    // — the ns of min(mask, U64_MAX / mult) cycles less 12.5%.
    const uint64_t max_cycles = std::min(mask_, std::numeric_limits<uint64_t>::max() / mult_);
    uint64_t wrap = CycToNs(max_cycles);
    wrap -= wrap >> 3;
    epoch_period_ = wrap >= (uint64_t{1} << 63) ? 0 : wrap;
  }
}

uint64_t SchedClockCounter::CycToNs(uint64_t cyc) const {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(cyc) * mult_) >> shift_);
}

// The kernel's clock is the counter converted (sched_clock() = cyc2ns(counter));
// the model's clock is primary, so the counter at perf time `ns` is the
// largest count of cycles since `start` whose conversion is not after `ns`:
// a read converts back to within one tick below `ns`, however mult rounds.
uint64_t SchedClockCounter::ElapsedToNs(uint64_t n) const {
  if (style_ == Style::kX86Tsc) return CycToNs(p_.start + n) - CycToNs(p_.start);
  return CycToNs(n);
}

uint64_t SchedClockCounter::ElapsedAt(uint64_t ns) const {
  auto n = static_cast<uint64_t>(static_cast<unsigned __int128>(ns) * p_.khz / kNsecPerMsec);
  auto step = [&](uint64_t dt) { return std::max<uint64_t>(1, static_cast<uint64_t>(static_cast<unsigned __int128>(dt) * p_.khz / kNsecPerMsec)); };
  for (int i = 0; i < 128; ++i) {
    const uint64_t at = ElapsedToNs(n);
    if (at > ns) {
      n -= std::min(n, step(at - ns));
    } else if (ElapsedToNs(n + 1) <= ns) {
      n += step(ns - at);
    } else {
      break;
    }
  }
  return n;
}

uint64_t SchedClockCounter::CyclesAt(uint64_t ns) const { return (p_.start + ElapsedAt(ns)) & mask_; }

UserTimeFields SchedClockCounter::PageFields(uint64_t now, bool use_clockid) const {
  UserTimeFields f;
  f.cap_user_time = true;
  f.time_mult = mult_;
  f.time_shift = static_cast<uint16_t>(shift_);
  if (style_ == Style::kX86Tsc) {
    // cyc2ns_offset: perf time 0 is the counter's `start`.
    const uint64_t offset = uint64_t{0} - CycToNs(p_.start);
    f.time_offset = offset - now;
    if (!use_clockid) {  // "cap_user_time_zero doesn't make sense when we're using a different time base"
      f.cap_user_time_zero = true;
      f.time_zero = offset;
    }
    return f;
  }
  // The epoch update_sched_clock() last took, at a multiple of the refresh period.
  // update_sched_clock(): epoch_ns is the clock at epoch_cyc.
  const uint64_t epoch_n = ElapsedAt(epoch_period_ == 0 ? 0 : now / epoch_period_ * epoch_period_);
  const uint64_t epoch_cyc = (p_.start + epoch_n) & mask_;
  const uint64_t epoch_ns = ElapsedToNs(epoch_n);
  f.time_cycles = epoch_cyc;
  f.time_mask = mask_;
  f.time_zero = epoch_ns - CycToNs(epoch_cyc);
  f.time_offset = f.time_zero - now;
  f.cap_user_time_zero = true;
  f.cap_user_time_short = true;
  return f;
}

std::optional<SchedClockCounter> MakeSchedClockCounter(const SchedClockCounter::Params& p, std::string_view arch) {
  if (p.khz == 0) return std::nullopt;
  return SchedClockCounter(p, arch == "x86_64" ? SchedClockCounter::Style::kX86Tsc
                                               : SchedClockCounter::Style::kGenericSchedClock);
}

}  // namespace perftest::mock
