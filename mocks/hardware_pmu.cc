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

HwEvent FromCode(uint64_t code) {
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

}  // namespace

int HardwareEventInit(const perf_event_attr& a, uint32_t pmu_type, const HardwareModel& m, HwEvent* out,
                      std::string* why) {
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
  *out = FromCode(code);
  if (out->fixed >= static_cast<int>(m.fixed_counters)) out->fixed = -1;
  if (!out->gp && out->fixed < 0) {
    return Fail(EINVAL, why, fmt::format("event {:#x} needs a fixed counter this PMU lacks", code));
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
