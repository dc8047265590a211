// The hardware PMU ("cpu", PERF_TYPE_HARDWARE / HW_CACHE / RAW) of MockBackend,
// modelled on an Intel core PMU: general-purpose and fixed counters, the
// generic event map, a reduced hw_cache table, raw event codes, and which
// counter each event may use.
//
//   HwEvent e;
//   if (int err = HardwareEventInit(attr, model, &e, &why)) return err;   // at open
//   if (!HardwareFits({leader_e, member_e}, model)) return EINVAL;           // validate_group()
//
// Sources: arch/x86/events/core.c x86_pmu_event_init(), x86_setup_perfctr()
// (an unmapped generic event is -ENOENT; config >= PERF_COUNT_HW_MAX -EINVAL),
// set_ext_hw_attr() (hw_cache ids past their MAX -EINVAL, a table value of 0
// -ENOENT, of -1 -EINVAL), x86_pmu_hw_config() (precise_ip above the PMU's
// max_precise -EOPNOTSUPP; raw configs are masked, not refused),
// validate_group() (a group that cannot be scheduled at once -EINVAL);
// arch/x86/events/intel/core.c intel_perfmon_event_map and the fixed counters
// (INST_RETIRED.ANY -> fixed 0, CPU_CLK_UNHALTED.THREAD -> fixed 1,
// REF_CYCLES (0x0300, fixed only) -> fixed 2).
//
// What the model counts (mock_counting.cc): cycles and ref-cycles at the profile's
// cpu_mhz while the task runs; instructions retired by Workload::Instructions
// (exactly n) and Spin (one per cycle); branch instructions one per two
// instructions; one branch miss per Instructions workload; L1D read/write
// accesses one per ReadMemory/WriteMemory access. All of it is user mode.
// Counters are `counter_width` bits: the model keeps each event's raw counter
// and folds it into the 64-bit count as x86_perf_event_update() does
// (CounterDelta()), so the count runs on past a wraparound. A counting event's
// counter starts at -max_period (x86_perf_event_set_period(), max_period =
// 2^(width-1) - 1). While on a counter the event has an rdpmc index
// (RdpmcIndex(): x86_pmu_event_idx()). Scheduling, rotation, pinned and
// exclusive groups: mock_sched.cc Reschedule().
#pragma once

#include <linux/perf_event.h>

#include <cstdint>
#include <string>
#include <vector>

namespace perftest::mock {

// Which core PMU driver the model follows (the profile's core PMU "kind").
//   kIntelCore    arch/x86/events/intel/core.c: type 4 "cpu", fixed counters
//                 for instructions/cycles/ref-cycles, precise_ip up to max_precise.
//   kArmv8Pmuv3   drivers/perf/arm_pmuv3.c + arm_pmu.c: a dynamic type, the
//                 cycle counter (PMCCNTR) as "fixed" counter 0 for CPU_CYCLES
//                 (0x11), armv8_pmuv3_perf_map, no REF_CPU_CYCLES (ENOENT),
//                 no branch sampling (EOPNOTSUPP), CHAIN (0x1e) refused (EINVAL).
//   kRiscvSbi     drivers/perf/riscv_pmu_sbi.c: type 4 "cpu", fixed counters
//                 CY (cycles, 0) and IR (instret, 1), SBI generic event ids.
enum class CoreKind { kIntelCore, kArmv8Pmuv3, kRiscvSbi };

// The profile's "hardware" object.
struct HardwareModel {
  CoreKind kind = CoreKind::kIntelCore;
  uint32_t gp_counters = 4;     // general-purpose counters per CPU
  uint32_t fixed_counters = 3;  // fixed counters (0: instructions, 1: cycles, 2: ref-cycles)
  uint32_t counter_width = 48;  // bits
  uint32_t max_precise = 3;     // caps/max_precise (Intel only: other drivers do not check precise_ip)
  // false: PERF_PMU_CAP_NO_INTERRUPT — no counter overflow interrupt, so a
  // sampling event fails with EOPNOTSUPP in perf_event_open() (riscv_pmu_sbi.c
  // without the Sscofpmf extension).
  bool overflow_interrupt = true;
  // false: PERF_PMU_CAP_NO_EXCLUDE — any exclude_* bit is EINVAL in
  // perf_try_init_event() (riscv_pmu_sbi.c without Sscofpmf sets both caps).
  bool mode_exclusion = true;
};

// "intel_core", "armv8_pmuv3", "riscv_sbi".
const char* CoreKindName(CoreKind k);

// What an event counts in the model.
enum class HwKind {
  kCycles,
  kInstructions,
  kRefCycles,
  kBusCycles,
  kBranches,
  kBranchMisses,
  kCacheReferences,
  kCacheMisses,
  kL1dReads,
  kL1dWrites,
  kNothing,  // a valid event the model never sees happen (misses, other raw codes)
};

struct HwEvent {
  uint64_t code = 0;     // umask << 8 | event select
  HwKind kind = HwKind::kNothing;
  int fixed = -1;        // the fixed counter that can count it, or -1
  bool gp = true;        // whether a general-purpose counter can count it
};

// Decodes attr.type/attr.config (PERF_TYPE_HARDWARE, PERF_TYPE_HW_CACHE, or the
// PMU's own type for raw codes). Errors as the header says.
int HardwareEventInit(const perf_event_attr& attr, uint32_t pmu_type, const HardwareModel& m, HwEvent* out,
                      std::string* why);

// Whether `events` can all be on counters at once (x86_schedule_events(),
// fixed counters first).
bool HardwareFits(const std::vector<HwEvent>& events, const HardwareModel& m);

// x86_perf_event_update(): the events counted between two reads, `prev` and
// `now`, of a `width`-bit counter (shift both to the top of a u64, subtract,
// shift back: a wraparound between the reads is one lap, not a huge jump).
uint64_t CounterDelta(uint64_t prev, uint64_t now, uint32_t width);
// The counter's value sign-extended from `width` bits: what a self-monitoring
// reader adds to perf_event_mmap_page.offset (UAPI comment on pmc_width).
int64_t SignExtend(uint64_t raw, uint32_t width);
// x86_pmu.max_period for `width`-bit counters: 2^(width-1) - 1.
uint64_t MaxPeriod(uint32_t width);
// The rdpmc counter number (ECX) of general-purpose counter `gp` or, if `gp`
// is negative, fixed counter `fixed`: fixed counters are 1 << 30 | n
// (Intel SDM vol. 3B 'RDPMC'; arch/x86/events/core.c x86_assign_hw_event()).
uint32_t RdpmcCounter(int gp, int fixed);

}  // namespace perftest::mock
