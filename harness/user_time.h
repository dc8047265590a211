// The self-monitoring page's time fields and the conversions the comments in
// <linux/perf_event.h> give for them (above perf_event_mmap_page.time_shift,
// time_zero and time_cycles).
//
//   UserTimeFields f = UserTimeFieldsOf(rb.page());        // inside the lock loop
//   uint64_t cyc = *backend.ReadCycleCounter();            // "rdtsc or similar"
//   uint64_t enabled = page.time_enabled + UserTimeDelta(f, cyc);  // if f.cap_user_time
//   uint64_t ts = UserTimestamp(f, cyc);                   // if f.cap_user_time_zero: perf clock, ns
//
// `cyc` is the raw counter read (Backend::ReadCycleCounter()); with
// cap_user_time_short it is first unwrapped against time_cycles/time_mask.
#pragma once

#include <linux/perf_event.h>

#include <cstdint>

namespace perftest {

struct UserTimeFields {
  bool cap_user_time = false;
  bool cap_user_time_zero = false;
  bool cap_user_time_short = false;
  uint16_t time_shift = 0;
  uint32_t time_mult = 0;
  uint64_t time_offset = 0;
  uint64_t time_zero = 0;
  uint64_t time_cycles = 0;
  uint64_t time_mask = 0;
};

// The fields as they are now (call inside the page's lock loop).
inline UserTimeFields UserTimeFieldsOf(const volatile perf_event_mmap_page& pc) {
  UserTimeFields f;
  f.cap_user_time = pc.cap_user_time;
  f.cap_user_time_zero = pc.cap_user_time_zero;
  f.cap_user_time_short = pc.cap_user_time_short;
  f.time_shift = pc.time_shift;
  f.time_mult = pc.time_mult;
  f.time_offset = pc.time_offset;
  f.time_zero = pc.time_zero;
  f.time_cycles = pc.time_cycles;
  f.time_mask = pc.time_mask;
  return f;
}

// "cyc = time_cycles + ((cyc - time_cycles) & time_mask)" when cap_user_time_short.
inline uint64_t UserTimeCycles(const UserTimeFields& f, uint64_t cyc) {
  return f.cap_user_time_short ? f.time_cycles + ((cyc - f.time_cycles) & f.time_mask) : cyc;
}

// "quot = cyc >> time_shift; rem = cyc & ((1 << time_shift) - 1);
//  base + quot * time_mult + ((rem * time_mult) >> time_shift)".
inline uint64_t UserTimeScale(const UserTimeFields& f, uint64_t base, uint64_t cyc) {
  cyc = UserTimeCycles(f, cyc);
  const uint64_t quot = cyc >> f.time_shift;
  const uint64_t rem = cyc & ((uint64_t{1} << f.time_shift) - 1);
  return base + quot * f.time_mult + ((rem * f.time_mult) >> f.time_shift);
}

// The ns since the page's update (base time_offset): what to add to
// time_enabled, and to time_running "if (index)". Meaningful with cap_user_time.
inline uint64_t UserTimeDelta(const UserTimeFields& f, uint64_t cyc) { return UserTimeScale(f, f.time_offset, cyc); }

// The perf clock (the time records carry, PERF_SAMPLE_TIME) at `cyc`, ns
// (base time_zero). Meaningful with cap_user_time_zero.
inline uint64_t UserTimestamp(const UserTimeFields& f, uint64_t cyc) { return UserTimeScale(f, f.time_zero, cyc); }

}  // namespace perftest
