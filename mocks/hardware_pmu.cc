#include "mocks/hardware_pmu.h"

#include <fmt/format.h>

#include <cerrno>

namespace perftest::mock {
namespace {

int Fail(int err, std::string* why, std::string text) {
  if (why != nullptr) *why = std::move(text);
  return err;
}

// arch/x86/events/intel/core.c intel_perfmon_event_map (0: not mapped).
constexpr uint64_t kGenericMap[PERF_COUNT_HW_MAX] = {
    0x003c,  // CPU_CYCLES
    0x00c0,  // INSTRUCTIONS
    0x4f2e,  // CACHE_REFERENCES
    0x412e,  // CACHE_MISSES
    0x00c4,  // BRANCH_INSTRUCTIONS
    0x00c5,  // BRANCH_MISSES
    0x013c,  // BUS_CYCLES
    0,       // STALLED_CYCLES_FRONTEND: no Intel mapping
    0,       // STALLED_CYCLES_BACKEND
    0x0300,  // REF_CPU_CYCLES (a pseudo-encoding for fixed counter 2)
};

// A reduced hw_cache_event_ids table, [id][op][result]: 0 not supported
// (-ENOENT), -1 not applicable (-EINVAL); the supported codes are the
// Skylake ones where the model counts something.
constexpr int64_t kNone = 0;
constexpr int64_t kNa = -1;
constexpr int64_t kCacheTable[PERF_COUNT_HW_CACHE_MAX][PERF_COUNT_HW_CACHE_OP_MAX][PERF_COUNT_HW_CACHE_RESULT_MAX] = {
    /* L1D  */ {{0x81d0, 0x0151}, {0x82d0, kNone}, {kNone, kNone}},
    /* L1I  */ {{kNone, 0x0283}, {kNa, kNa}, {kNone, kNone}},
    /* LL   */ {{0x01b7, 0x01b7}, {0x01b7, 0x01b7}, {kNone, kNone}},
    /* DTLB */ {{0x81d0, 0x0e08}, {0x82d0, 0x0e49}, {kNone, kNone}},
    /* ITLB */ {{0x2085, 0x0e85}, {kNa, kNa}, {kNa, kNa}},
    /* BPU  */ {{0x00c4, 0x00c5}, {kNa, kNa}, {kNa, kNa}},
    /* NODE */ {{0x01b7, 0x01b7}, {0x01b7, 0x01b7}, {kNone, kNone}},
};

HwEvent IntelFromCode(uint64_t code) {
  HwEvent e;
  e.code = code;
  switch (code) {
    case 0x003c: e.kind = HwKind::kCycles; e.fixed = 1; break;
    case 0x00c0: e.kind = HwKind::kInstructions; e.fixed = 0; break;
    case 0x0300: e.kind = HwKind::kRefCycles; e.fixed = 2; e.gp = false; break;
    case 0x013c: e.kind = HwKind::kBusCycles; break;
    case 0x00c4: e.kind = HwKind::kBranches; break;
    case 0x00c5: e.kind = HwKind::kBranchMisses; break;
    case 0x4f2e: e.kind = HwKind::kCacheReferences; break;
    case 0x412e: e.kind = HwKind::kCacheMisses; break;
    case 0x81d0: e.kind = HwKind::kL1dReads; break;
    case 0x82d0: e.kind = HwKind::kL1dWrites; break;
    default: e.kind = HwKind::kNothing; break;
  }
  return e;
}

// --- arm64 PMUv3: drivers/perf/arm_pmuv3.c ---
// armv8_pmuv3_perf_map (kUnsupported: HW_OP_UNSUPPORTED, -ENOENT in armpmu_map_hw_event()).
constexpr uint64_t kUnsupported = ~uint64_t{0};
constexpr uint64_t kArmGenericMap[PERF_COUNT_HW_MAX] = {
    0x11,          // CPU_CYCLES: ARMV8_PMUV3_PERFCTR_CPU_CYCLES
    0x08,          // INSTRUCTIONS: INST_RETIRED
    0x04,          // CACHE_REFERENCES: L1D_CACHE
    0x03,          // CACHE_MISSES: L1D_CACHE_REFILL
    0x21,          // BRANCH_INSTRUCTIONS: BR_RETIRED
    0x22,          // BRANCH_MISSES: BR_MIS_PRED_RETIRED
    0x1d,          // BUS_CYCLES
    0x23,          // STALLED_CYCLES_FRONTEND: STALL_FRONTEND
    0x24,          // STALLED_CYCLES_BACKEND: STALL_BACKEND
    kUnsupported,  // REF_CPU_CYCLES: not in the map
};
// armv8_pmuv3_perf_cache_map: only the READ op is mapped; everything else is
// CACHE_OP_UNSUPPORTED (-ENOENT in armpmu_map_cache_event()).
constexpr uint64_t kArmCacheRead[PERF_COUNT_HW_CACHE_MAX][PERF_COUNT_HW_CACHE_RESULT_MAX] = {
    /* L1D  */ {0x04, 0x03},  // L1D_CACHE, L1D_CACHE_REFILL
    /* L1I  */ {0x14, 0x01},  // L1I_CACHE, L1I_CACHE_REFILL
    /* LL   */ {0x36, 0x37},  // LL_CACHE_RD, LL_CACHE_MISS_RD
    /* DTLB */ {0x25, 0x05},  // L1D_TLB, L1D_TLB_REFILL
    /* ITLB */ {0x26, 0x02},  // L1I_TLB, L1I_TLB_REFILL
    /* BPU  */ {0x12, 0x10},  // BR_PRED, BR_MIS_PRED
    /* NODE */ {kUnsupported, kUnsupported},
};
constexpr uint64_t kArmChain = 0x1e;  // ARMV8_PMUV3_PERFCTR_CHAIN

HwEvent ArmFromCode(uint64_t code) {
  HwEvent e;
  e.code = code;
  switch (code) {
    case 0x11: e.kind = HwKind::kCycles; e.fixed = 0; break;  // PMCCNTR or any event counter
    case 0x08: e.kind = HwKind::kInstructions; break;
    case 0x21: e.kind = HwKind::kBranches; break;
    case 0x22: e.kind = HwKind::kBranchMisses; break;
    case 0x1d: e.kind = HwKind::kBusCycles; break;
    case 0x04: e.kind = HwKind::kL1dReads; break;
    default: e.kind = HwKind::kNothing; break;
  }
  return e;
}

// --- RISC-V SBI PMU: drivers/perf/riscv_pmu_sbi.c ---
// pmu_hw_event_map gives every generic event an SBI id; the model's SBI
// implementation (OpenSBI on QEMU virt) counts only cycles and instret, on the
// fixed counters CY and IR, so the others are ENOENT (pmu_sbi_check_std_events()
// marks what the firmware does not support). hw_cache: the QEMU virt device
// tree maps DTLB read/write misses and ITLB read misses (riscv,event-to-mhpmevent).
HwEvent RiscvFromGeneric(uint64_t config) {
  HwEvent e;
  e.code = config + 1;  // SBI_PMU_HW_CPU_CYCLES = 1, ...
  if (config == PERF_COUNT_HW_CPU_CYCLES) { e.kind = HwKind::kCycles; e.fixed = 0; e.gp = false; }
  if (config == PERF_COUNT_HW_INSTRUCTIONS) { e.kind = HwKind::kInstructions; e.fixed = 1; e.gp = false; }
  return e;
}

int IntelInit(const perf_event_attr& a, uint32_t pmu_type, const HardwareModel& m, HwEvent* out, std::string* why) {
  if (a.precise_ip > m.max_precise) {
    return Fail(EOPNOTSUPP, why, fmt::format("precise_ip {} > max_precise {}", a.precise_ip, m.max_precise));
  }
  uint64_t code = 0;
  if (a.type == PERF_TYPE_HARDWARE) {
    if (a.config >= PERF_COUNT_HW_MAX) return Fail(EINVAL, why, fmt::format("config {} >= PERF_COUNT_HW_MAX", a.config));
    code = kGenericMap[a.config];
    if (code == 0) return Fail(ENOENT, why, fmt::format("generic event {} has no mapping on this PMU", a.config));
  } else if (a.type == PERF_TYPE_HW_CACHE) {
    const uint64_t id = a.config & 0xff, op = (a.config >> 8) & 0xff, result = (a.config >> 16) & 0xff;
    if (id >= PERF_COUNT_HW_CACHE_MAX || op >= PERF_COUNT_HW_CACHE_OP_MAX || result >= PERF_COUNT_HW_CACHE_RESULT_MAX) {
      return Fail(EINVAL, why, fmt::format("hw_cache config {:#x}: id, op or result out of range", a.config));
    }
    const int64_t v = kCacheTable[id][op][result];
    if (v == kNone) return Fail(ENOENT, why, fmt::format("hw_cache config {:#x} is not supported", a.config));
    if (v == kNa) return Fail(EINVAL, why, fmt::format("hw_cache config {:#x} does not apply", a.config));
    code = static_cast<uint64_t>(v);
  } else if (a.type == pmu_type) {
    code = a.config & 0xffff;  // event select and umask; the other bits are flags the model ignores
  } else {
    return Fail(ENOENT, why, fmt::format("type {} is not the core PMU's", a.type));
  }
  *out = IntelFromCode(code);
  return 0;
}

// armpmu_event_init() -> __hw_perf_event_init() -> armv8_pmuv3_map_event().
int ArmInit(const perf_event_attr& a, uint32_t pmu_type, HwEvent* out, std::string* why) {
  if (a.sample_type & PERF_SAMPLE_BRANCH_STACK) {
    return Fail(EOPNOTSUPP, why, "armpmu_event_init(): no branch stack sampling on this PMU");
  }
  uint64_t code = 0;
  if (a.type == PERF_TYPE_HARDWARE) {  // armpmu_map_hw_event()
    if (a.config >= PERF_COUNT_HW_MAX) return Fail(EINVAL, why, fmt::format("config {} >= PERF_COUNT_HW_MAX", a.config));
    code = kArmGenericMap[a.config];
    if (code == kUnsupported) return Fail(ENOENT, why, fmt::format("generic event {} is HW_OP_UNSUPPORTED", a.config));
  } else if (a.type == PERF_TYPE_HW_CACHE) {  // armpmu_map_cache_event()
    const uint64_t id = a.config & 0xff, op = (a.config >> 8) & 0xff, result = (a.config >> 16) & 0xff;
    if (id >= PERF_COUNT_HW_CACHE_MAX || op >= PERF_COUNT_HW_CACHE_OP_MAX || result >= PERF_COUNT_HW_CACHE_RESULT_MAX) {
      return Fail(EINVAL, why, fmt::format("hw_cache config {:#x}: id, op or result out of range", a.config));
    }
    code = op == PERF_COUNT_HW_CACHE_OP_READ ? kArmCacheRead[id][result] : kUnsupported;
    if (code == kUnsupported) return Fail(ENOENT, why, fmt::format("hw_cache config {:#x} is CACHE_OP_UNSUPPORTED", a.config));
  } else if (a.type == PERF_TYPE_RAW || a.type == pmu_type) {  // armpmu_map_raw_event()
    code = a.config & 0xffff;  // ARMV8_PMU_EVTYPE_EVENT (PMUv3.1+)
  } else {
    return Fail(ENOENT, why, fmt::format("type {} is not the core PMU's", a.type));
  }
  if (code == kArmChain) return Fail(EINVAL, why, "the CHAIN event (0x1e) cannot be opened on its own");
  *out = ArmFromCode(code);
  return 0;
}

// pmu_sbi_event_init() -> pmu_sbi_event_map().
int RiscvInit(const perf_event_attr& a, HwEvent* out, std::string* why) {
  if (a.type == PERF_TYPE_HARDWARE) {
    if (a.config >= PERF_COUNT_HW_MAX) return Fail(EINVAL, why, fmt::format("config {} >= PERF_COUNT_HW_MAX", a.config));
    *out = RiscvFromGeneric(a.config);
    if (out->kind == HwKind::kNothing) {
      return Fail(ENOENT, why, fmt::format("generic event {} is not supported by the SBI implementation", a.config));
    }
    return 0;
  }
  if (a.type == PERF_TYPE_HW_CACHE) {
    const uint64_t id = a.config & 0xff, op = (a.config >> 8) & 0xff, result = (a.config >> 16) & 0xff;
    if (id >= PERF_COUNT_HW_CACHE_MAX || op >= PERF_COUNT_HW_CACHE_OP_MAX || result >= PERF_COUNT_HW_CACHE_RESULT_MAX) {
      return Fail(EINVAL, why, fmt::format("hw_cache config {:#x}: id, op or result out of range", a.config));
    }
    const bool miss = result == PERF_COUNT_HW_CACHE_RESULT_MISS;
    const bool mapped = miss && ((id == PERF_COUNT_HW_CACHE_DTLB &&
                                  (op == PERF_COUNT_HW_CACHE_OP_READ || op == PERF_COUNT_HW_CACHE_OP_WRITE)) ||
                                 (id == PERF_COUNT_HW_CACHE_ITLB && op == PERF_COUNT_HW_CACHE_OP_READ));
    if (!mapped) return Fail(ENOENT, why, fmt::format("hw_cache config {:#x} is not supported by the SBI implementation", a.config));
    out->code = a.config;
    out->kind = HwKind::kNothing;
    return 0;
  }
  // PERF_TYPE_RAW: config[63:62] 0 = a raw hardware event, 2 = an SBI firmware event.
  const uint64_t cls = a.config >> 62;
  if (cls != 0 && cls != 2) return Fail(ENOENT, why, fmt::format("raw config {:#x}: bits 63:62 = {}", a.config, cls));
  out->code = a.config;
  out->kind = HwKind::kNothing;
  return 0;
}

}  // namespace

const char* CoreKindName(CoreKind k) {
  switch (k) {
    case CoreKind::kIntelCore: return "intel_core";
    case CoreKind::kArmv8Pmuv3: return "armv8_pmuv3";
    case CoreKind::kRiscvSbi: return "riscv_sbi";
  }
  return "?";
}

int HardwareEventInit(const perf_event_attr& a, uint32_t pmu_type, const HardwareModel& m, HwEvent* out,
                      std::string* why) {
  *out = HwEvent{};
  int err = 0;
  switch (m.kind) {
    case CoreKind::kIntelCore: err = IntelInit(a, pmu_type, m, out, why); break;
    case CoreKind::kArmv8Pmuv3: err = ArmInit(a, pmu_type, out, why); break;
    case CoreKind::kRiscvSbi: err = RiscvInit(a, out, why); break;
  }
  if (err != 0) return err;
  if (out->fixed >= static_cast<int>(m.fixed_counters)) out->fixed = -1;
  if (!out->gp && out->fixed < 0) {
    return Fail(EINVAL, why, fmt::format("event {:#x} needs a fixed counter this PMU lacks", out->code));
  }
  return 0;
}

bool HardwareFits(const std::vector<HwEvent>& events, const HardwareModel& m) {
  std::vector<bool> fixed_used(m.fixed_counters, false);
  uint32_t gp_used = 0;
  // Each event takes its fixed counter if it has a free one, else a general-purpose one.
  for (const HwEvent& e : events) {
    if (e.fixed >= 0 && !fixed_used[e.fixed]) {
      fixed_used[e.fixed] = true;
    } else if (e.gp && gp_used < m.gp_counters) {
      ++gp_used;
    } else {
      return false;
    }
  }
  return true;
}

uint64_t CounterDelta(uint64_t prev, uint64_t now, uint32_t width) {
  const uint32_t shift = 64 - width;
  return ((now << shift) - (prev << shift)) >> shift;
}

int64_t SignExtend(uint64_t raw, uint32_t width) {
  const uint32_t shift = 64 - width;
  return static_cast<int64_t>(raw << shift) >> shift;
}

uint64_t MaxPeriod(uint32_t width) { return (uint64_t{1} << (width - 1)) - 1; }

uint32_t RdpmcCounter(int gp, int fixed) {
  return gp >= 0 ? static_cast<uint32_t>(gp) : (uint32_t{1} << 30) | static_cast<uint32_t>(fixed);
}

}  // namespace perftest::mock
