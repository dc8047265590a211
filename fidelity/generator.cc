#include "fidelity/generator.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/hw_breakpoint.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstddef>
#include <cstring>
#include <ctime>

namespace perftest::fidelity {
namespace {

constexpr uint32_t kAttrSize = sizeof(perf_event_attr);

// The attr.size values the UAPI names (PERF_ATTR_SIZE_VER0..VER7) and the
// kernel's larger ones (VER8 = 136 adds config3, Linux 6.3).
constexpr std::array<uint32_t, 9> kVersionSizes = {
    PERF_ATTR_SIZE_VER0, PERF_ATTR_SIZE_VER1, PERF_ATTR_SIZE_VER2, PERF_ATTR_SIZE_VER3, PERF_ATTR_SIZE_VER4,
    PERF_ATTR_SIZE_VER5, PERF_ATTR_SIZE_VER6, PERF_ATTR_SIZE_VER7, 136};

bool Contains(const std::vector<uint32_t>& v, uint32_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

bool HostHasType(const GeneratorParams& p, uint32_t type) {
  if (type == PERF_TYPE_SOFTWARE) return true;
  for (const auto& pmu : p.pmus) {
    if (pmu.type == type) return true;
  }
  return false;
}

// A type no sysfs PMU of the host has (and none it must avoid): mostly ENOENT.
uint32_t NonexistentType(Rng& rng, const GeneratorParams& p) {
  for (;;) {
    uint32_t t = rng.Percent(60) ? static_cast<uint32_t>(rng.Range(PERF_TYPE_MAX, 64)) : static_cast<uint32_t>(rng.Next());
    if (t <= PERF_TYPE_RAW && t != PERF_TYPE_TRACEPOINT && t != PERF_TYPE_SOFTWARE && !p.generate_hardware_types) continue;
    if (!HostHasType(p, t) && !Contains(p.avoid_types, t)) return t;
  }
}

uint32_t GenerateType(Rng& rng, const GeneratorParams& p) {
  const uint64_t r = rng.Below(100);
  if (r < 62) return PERF_TYPE_SOFTWARE;
  if (r < 72 && !p.pmus.empty()) return p.pmus[rng.Below(p.pmus.size())].type;
  if (r < 80 && p.generate_hardware_types) return rng.Pick({PERF_TYPE_HARDWARE, PERF_TYPE_HW_CACHE, PERF_TYPE_RAW});
  if (r < 97) return NonexistentType(rng, p);
  // Fully random bits (type coverage), never a PMU to avoid.
  for (;;) {
    const uint32_t t = static_cast<uint32_t>(rng.Next());
    if (!Contains(p.avoid_types, t) && (t > PERF_TYPE_RAW || p.generate_hardware_types || t == PERF_TYPE_SOFTWARE ||
                                        t == PERF_TYPE_TRACEPOINT)) {
      return t;
    }
  }
}

uint64_t GenerateConfig(Rng& rng, const GeneratorParams& p, uint32_t type) {
  if (rng.Percent(6)) return rng.Next();
  switch (type) {
    case PERF_TYPE_SOFTWARE:
      if (rng.Percent(88)) return rng.Below(PERF_COUNT_SW_MAX);
      return rng.Range(PERF_COUNT_SW_MAX, PERF_COUNT_SW_MAX + 4);
    case PERF_TYPE_TRACEPOINT:
      if (!p.tracepoint_ids.empty() && rng.Percent(70)) return p.tracepoint_ids[rng.Below(p.tracepoint_ids.size())];
      return rng.Percent(50) ? 0 : rng.Range(1u << 20, 1u << 21);
    case PERF_TYPE_HARDWARE:
      return rng.Below(PERF_COUNT_HW_MAX + 2);
    case PERF_TYPE_HW_CACHE:
      // id | (op << 8) | (result << 16), with out-of-range parts now and then.
      return rng.Below(PERF_COUNT_HW_CACHE_MAX + 1) | (rng.Below(PERF_COUNT_HW_CACHE_OP_MAX + 1) << 8) |
             (rng.Below(PERF_COUNT_HW_CACHE_RESULT_MAX + 1) << 16);
    case PERF_TYPE_BREAKPOINT:
      return rng.Percent(90) ? 0 : rng.Below(4);
    default:
      return rng.Below(16);
  }
}

// Known sample_type bits, with how often each is asked for: the ones that need
// other fields or a capability a software event lacks are rarer, so that
// most attrs get past them and exercise what follows.
struct BitOdds {
  uint64_t bit;
  unsigned pct;
};
constexpr std::array<BitOdds, 25> kSampleTypeOdds{{
    {PERF_SAMPLE_IP, 15},           {PERF_SAMPLE_TID, 15},         {PERF_SAMPLE_TIME, 15},
    {PERF_SAMPLE_ADDR, 10},         {PERF_SAMPLE_READ, 10},        {PERF_SAMPLE_CALLCHAIN, 8},
    {PERF_SAMPLE_ID, 10},           {PERF_SAMPLE_CPU, 10},         {PERF_SAMPLE_PERIOD, 10},
    {PERF_SAMPLE_STREAM_ID, 8},     {PERF_SAMPLE_RAW, 5},          {PERF_SAMPLE_BRANCH_STACK, 4},
    {PERF_SAMPLE_REGS_USER, 5},     {PERF_SAMPLE_STACK_USER, 5},   {PERF_SAMPLE_WEIGHT, 5},
    {PERF_SAMPLE_DATA_SRC, 5},      {PERF_SAMPLE_IDENTIFIER, 10},  {PERF_SAMPLE_TRANSACTION, 5},
    {PERF_SAMPLE_REGS_INTR, 4},     {PERF_SAMPLE_PHYS_ADDR, 4},    {PERF_SAMPLE_AUX, 4},
    {PERF_SAMPLE_CGROUP, 5},        {PERF_SAMPLE_DATA_PAGE_SIZE, 5}, {PERF_SAMPLE_CODE_PAGE_SIZE, 5},
    {PERF_SAMPLE_WEIGHT_STRUCT, 3},
}};

uint64_t GenerateSampleType(Rng& rng) {
  const uint64_t r = rng.Below(100);
  if (r < 40) return 0;
  if (r < 96) {
    uint64_t v = 0;
    for (const auto& [bit, pct] : kSampleTypeOdds) {
      if (rng.Percent(pct)) v |= bit;
    }
    if (r >= 92) v |= rng.OneBit(25, 63);  // a bit no kernel knows
    return v;
  }
  return rng.Next();
}

uint64_t GenerateReadFormat(Rng& rng) {
  const uint64_t r = rng.Below(100);
  if (r < 40) return 0;
  if (r < 95) {
    uint64_t v = 0;
    for (unsigned i = 0; i < 5; ++i) {  // TOTAL_TIME_ENABLED .. LOST
      if (rng.Percent(30)) v |= uint64_t{1} << i;
    }
    return v;
  }
  if (r < 98) return rng.OneBit(5, 63);
  return rng.Next();
}

// A register mask for sample_regs_user/intr when the sample_type asks for it
// (x86_64 numbering: AX..R15 are bits 0-23 except DS/ES/FS/GS 12-15, XMM from 32).
uint64_t GenerateRegs(Rng& rng, bool asked) {
  if (!asked) return rng.Percent(8) ? rng.Next() : 0;
  const uint64_t r = rng.Below(100);
  if (r < 55) return rng.Pick<uint64_t>({0xff, 0x1ff, 0xffffff & ~0xf000ull, 0x1, 0xf00ff});
  if (r < 65) return 0;
  if (r < 75) return rng.OneBit(12, 15) | 0x3;
  if (r < 82) return rng.OneBit(24, 31) | 0x3;
  if (r < 90) return rng.OneBit(32, 63) | 0x3;
  return rng.Next();
}

// The flag bitfield (disabled .. sigtrap), each bit with its odds.
void GenerateFlags(Rng& rng, perf_event_attr* a) {
  a->disabled = rng.Percent(50);
  a->inherit = rng.Percent(15);
  a->pinned = rng.Percent(8);
  a->exclusive = rng.Percent(8);
  a->exclude_user = rng.Percent(10);
  a->exclude_kernel = rng.Percent(40);
  a->exclude_hv = rng.Percent(30);
  a->exclude_idle = rng.Percent(10);
  a->mmap = rng.Percent(10);
  a->comm = rng.Percent(10);
  // freq is set with the period.
  a->inherit_stat = rng.Percent(8);
  a->enable_on_exec = rng.Percent(8);
  a->task = rng.Percent(10);
  a->watermark = rng.Percent(10);
  a->precise_ip = rng.Percent(80) ? 0 : rng.Range(1, 3);
  a->mmap_data = rng.Percent(8);
  a->sample_id_all = rng.Percent(20);
  a->exclude_host = rng.Percent(8);
  a->exclude_guest = rng.Percent(8);
  a->exclude_callchain_kernel = rng.Percent(8);
  a->exclude_callchain_user = rng.Percent(8);
  a->mmap2 = rng.Percent(10);
  a->comm_exec = rng.Percent(8);
  a->use_clockid = rng.Percent(15);
  a->context_switch = rng.Percent(8);
  a->write_backward = rng.Percent(8);
  a->namespaces = rng.Percent(5);
  a->ksymbol = rng.Percent(5);
  a->bpf_event = rng.Percent(5);
  a->aux_output = rng.Percent(4);
  a->cgroup = rng.Percent(5);
  a->text_poke = rng.Percent(5);
  a->build_id = rng.Percent(5);
  a->inherit_thread = rng.Percent(6);
  a->remove_on_exec = rng.Percent(8);
  a->sigtrap = rng.Percent(6);
  if (a->sigtrap && rng.Percent(80)) {
    // The combination the kernel accepts (perf_copy_attr(): sigtrap needs remove_on_exec).
    a->remove_on_exec = 1;
    a->enable_on_exec = 0;
  }
  const uint64_t r = rng.Below(100);
  if (r < 3) {
    a->__reserved_1 = uint64_t{1} << rng.Below(26);
  } else if (r < 4) {
    a->__reserved_1 = rng.Next() & ((uint64_t{1} << 26) - 1);
  }
}

void GeneratePeriod(Rng& rng, const GeneratorParams& p, perf_event_attr* a) {
  a->freq = rng.Percent(20);
  const uint64_t r = rng.Below(100);
  if (a->freq) {
    if (r < 45) a->sample_freq = rng.Range(1, 4000);
    else if (r < 60) a->sample_freq = p.max_sample_rate;
    else if (r < 75) a->sample_freq = uint64_t{p.max_sample_rate} + rng.Range(1, 1000);
    else if (r < 85) a->sample_freq = 0;
    else if (r < 92) a->sample_freq = rng.Range(1, p.max_sample_rate);
    else a->sample_freq = rng.Next();
    return;
  }
  if (r < 50) a->sample_period = 0;
  else if (r < 70) a->sample_period = rng.Range(1000, 10'000'000);
  else if (r < 76) a->sample_period = 1;
  else if (r < 82) a->sample_period = rng.Range(2, 999);
  else if (r < 88) a->sample_period = (uint64_t{1} << 63) | rng.Below(1000);
  else if (r < 92) a->sample_period = (uint64_t{1} << 63) - 1;
  else a->sample_period = rng.Next();
}

void GenerateSize(Rng& rng, const GeneratorParams& p, OpenCall* c) {
  perf_event_attr& a = c->attr;
  const uint32_t page = static_cast<uint32_t>(p.page_size);
  const uint64_t r = rng.Below(100);
  uint32_t size;
  bool nonzero_tail = false;
  if (r < 55) size = kAttrSize;
  else if (r < 70) size = kVersionSizes[rng.Below(kVersionSizes.size())];
  else if (r < 74) size = 0;
  else if (r < 80) size = rng.Pick<uint32_t>({kAttrSize + 8, kAttrSize + 16, 256, page});  // zero tail
  else if (r < 85) {
    size = rng.Pick<uint32_t>({kAttrSize + 8, kAttrSize + 16, 256, page});
    nonzero_tail = true;
  }
  else if (r < 88) size = static_cast<uint32_t>(rng.Range(1, PERF_ATTR_SIZE_VER0 - 1));
  else if (r < 91) size = rng.Pick<uint32_t>({page + 1, 2 * page, UINT32_MAX});
  else if (r < 95) size = static_cast<uint32_t>(rng.Range(PERF_ATTR_SIZE_VER0 + 1, kAttrSize + 64));  // not a VERn
  else size = static_cast<uint32_t>(rng.Next());
  a.size = size;
  if (size > kAttrSize && size <= page) {
    c->tail.assign(size - kAttrSize, 0);
    if (nonzero_tail) {
      // Bytes [128, 136) are the kernel's config3; past them, bytes no kernel knows.
      c->tail[rng.Below(c->tail.size())] = static_cast<uint8_t>(rng.Range(1, 255));
    }
  }
}

// Makes `c` a call the kernel is likely to accept: a software event with
// benign fields, so that the operations after it have an event to work on.
// Applied to a share of the opens; the rest keep their random fields.
void MakePlausible(Rng& rng, const GeneratorParams& p, OpenCall* c) {
  perf_event_attr& a = c->attr;
  a.type = PERF_TYPE_SOFTWARE;
  a.config = rng.Below(PERF_COUNT_SW_MAX);
  a.size = rng.Percent(80) ? kAttrSize : kVersionSizes[rng.Range(5, kVersionSizes.size() - 1)];
  c->tail.assign(a.size > kAttrSize ? a.size - kAttrSize : 0, 0);
  constexpr uint64_t kBenignSampleType = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |
                                         PERF_SAMPLE_READ | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_ID | PERF_SAMPLE_CPU |
                                         PERF_SAMPLE_PERIOD | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_IDENTIFIER;
  a.sample_type &= kBenignSampleType;
  a.read_format &= PERF_FORMAT_MAX - 1;
  // Flags that need no capability, other field or later kernel.
  a.pinned = a.exclusive = 0;
  a.namespaces = a.ksymbol = a.bpf_event = a.aux_output = a.cgroup = a.text_poke = a.build_id = 0;
  a.inherit_thread = a.inherit && a.inherit_thread;
  a.enable_on_exec = a.remove_on_exec ? 0 : a.enable_on_exec;
  a.sigtrap = a.sigtrap && a.remove_on_exec;
  a.precise_ip = 0;
  a.__reserved_1 = 0;
  if (a.freq) {
    a.sample_freq = rng.Range(1, p.max_sample_rate);
  } else if (a.sample_period >> 63) {
    a.sample_period = rng.Range(1000, 1000000);
  }
  if (a.use_clockid) a.clockid = rng.Pick<int32_t>({CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, CLOCK_REALTIME, CLOCK_BOOTTIME, CLOCK_TAI});
  a.wakeup_events = static_cast<uint32_t>(rng.Below(16));
  a.bp_type = 0;
  a.config1 = a.config2 = a.branch_sample_type = a.sample_regs_user = a.sample_regs_intr = 0;
  a.sample_stack_user = a.aux_watermark = a.aux_sample_size = 0;
  a.sample_max_stack = static_cast<uint16_t>(rng.Below(p.max_stack + 1));
  a.__reserved_2 = 0;
  a.__reserved_3 = 0;
  c->pid = rng.Percent(75) ? PidArg::kSelf : PidArg::kAny;
  c->cpu = c->pid == PidArg::kAny ? (rng.Percent(50) ? CpuArg::kFirst : CpuArg::kLast)
                                  : rng.Pick({CpuArg::kAny, CpuArg::kAny, CpuArg::kFirst});
  if (c->group.kind == FdArg::kBadFd || c->group.kind == FdArg::kNonPerf) c->group = {};
  c->flags &= PERF_FLAG_FD_CLOEXEC | PERF_FLAG_FD_NO_GROUP | PERF_FLAG_FD_OUTPUT;
}

}  // namespace

std::string PmuNameForType(uint32_t type, const GeneratorParams& params) {
  switch (type) {
    case PERF_TYPE_SOFTWARE: return "software";
    case PERF_TYPE_TRACEPOINT: return "tracepoint";
    case PERF_TYPE_BREAKPOINT: return "breakpoint";
    default: break;
  }
  for (const auto& pmu : params.pmus) {
    if (pmu.type == type) return pmu.name;
  }
  switch (type) {
    case PERF_TYPE_HARDWARE: return "hardware";
    case PERF_TYPE_HW_CACHE: return "hw_cache";
    case PERF_TYPE_RAW: return "raw";
    default: return "unlisted";
  }
}

OpenCall GenerateOpen(Rng& rng, const GeneratorParams& p, size_t prior_events) {
  OpenCall c;
  perf_event_attr& a = c.attr;
  std::memset(&a, 0, sizeof a);
  a.type = GenerateType(rng, p);
  a.config = GenerateConfig(rng, p, a.type);
  GenerateFlags(rng, &a);
  GeneratePeriod(rng, p, &a);
  a.sample_type = GenerateSampleType(rng);
  a.read_format = GenerateReadFormat(rng);

  a.wakeup_events = rng.Percent(70) ? 0 : rng.Percent(65) ? static_cast<uint32_t>(rng.Range(1, 100)) : static_cast<uint32_t>(rng.Next());

  if (a.type == PERF_TYPE_BREAKPOINT) {
    a.bp_type = rng.Percent(85) ? rng.Pick<uint32_t>({HW_BREAKPOINT_EMPTY, HW_BREAKPOINT_R, HW_BREAKPOINT_W,
                                                      HW_BREAKPOINT_RW, HW_BREAKPOINT_X, HW_BREAKPOINT_X | HW_BREAKPOINT_R})
                                : static_cast<uint32_t>(rng.Next());
    // User-space addresses only: nothing this process or the machine touches often.
    a.bp_addr = rng.Percent(85) ? rng.Pick<uint64_t>({0, 0x1000, 0x1001, 0x10000, 0x7fff0000}) : rng.Next() & 0x00007ffffffff000ull;
    a.bp_len = rng.Percent(85) ? rng.Pick<uint64_t>({HW_BREAKPOINT_LEN_1, HW_BREAKPOINT_LEN_2, HW_BREAKPOINT_LEN_4,
                                                     HW_BREAKPOINT_LEN_8, 0, 3, 16})
                               : rng.Next();
  } else {
    a.bp_type = rng.Percent(92) ? 0 : static_cast<uint32_t>(rng.Next());
    a.config1 = rng.Percent(85) ? 0 : rng.Percent(30) ? rng.Below(256) : rng.Next();
    a.config2 = rng.Percent(85) ? 0 : rng.Percent(30) ? rng.Below(256) : rng.Next();
    // A uprobe on the host's target file (uprobe_path, config1), at an
    // offset in it or just past it (config2), with the retprobe bit and a
    // small ref_ctr_offset (config bits 32-63) now and then.
    if (p.uprobe_path != nullptr && PmuNameForType(a.type, p) == "uprobe" && rng.Percent(60)) {
      a.config1 = reinterpret_cast<uintptr_t>(p.uprobe_path);
      a.config2 = rng.Percent(90) ? rng.Below(kUprobeTargetSize + 8) : rng.Next();
      a.config = rng.Below(2) | (rng.Percent(70) ? 0 : rng.Below(8) << 32);
    }
  }

  if (a.sample_type & PERF_SAMPLE_BRANCH_STACK) {
    const uint64_t r = rng.Below(100);
    if (r < 60) {
      a.branch_sample_type = rng.Pick<uint64_t>({PERF_SAMPLE_BRANCH_ANY, PERF_SAMPLE_BRANCH_ANY_CALL | PERF_SAMPLE_BRANCH_USER,
                                                 PERF_SAMPLE_BRANCH_ANY | PERF_SAMPLE_BRANCH_KERNEL,
                                                 PERF_SAMPLE_BRANCH_CALL_STACK | PERF_SAMPLE_BRANCH_USER});
    } else if (r < 70) {
      a.branch_sample_type = PERF_SAMPLE_BRANCH_USER | (rng.Percent(50) ? PERF_SAMPLE_BRANCH_KERNEL : 0);
    } else if (r < 80) {
      a.branch_sample_type = PERF_SAMPLE_BRANCH_ANY | rng.OneBit(19, 63);
    } else if (r < 85) {
      a.branch_sample_type = 0;
    } else {
      a.branch_sample_type = rng.Next();
    }
  } else {
    a.branch_sample_type = rng.Percent(90) ? 0 : rng.Next();
  }

  a.sample_regs_user = GenerateRegs(rng, a.sample_type & PERF_SAMPLE_REGS_USER);
  if (a.sample_type & PERF_SAMPLE_STACK_USER) {
    const uint64_t r = rng.Below(100);
    if (r < 60) a.sample_stack_user = static_cast<uint32_t>(8 * rng.Range(1, 8191));
    else if (r < 70) a.sample_stack_user = 0;
    else if (r < 80) a.sample_stack_user = static_cast<uint32_t>(8 * rng.Range(1, 1000) + rng.Range(1, 7));
    else if (r < 90) a.sample_stack_user = rng.Pick<uint32_t>({USHRT_MAX, USHRT_MAX + 1, USHRT_MAX - 7});
    else a.sample_stack_user = static_cast<uint32_t>(rng.Next());
  } else {
    a.sample_stack_user = rng.Percent(92) ? 0 : static_cast<uint32_t>(rng.Next());
  }

  if (a.use_clockid) {
    a.clockid = rng.Percent(70) ? rng.Pick<int32_t>({CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW,
                                                    CLOCK_BOOTTIME, CLOCK_TAI})
                                : rng.Percent(75) ? rng.Pick<int32_t>({CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID,
                                                                       CLOCK_REALTIME_COARSE, CLOCK_MONOTONIC_COARSE,
                                                                       CLOCK_REALTIME_ALARM, CLOCK_BOOTTIME_ALARM, 10, 12, -1})
                                                  : static_cast<int32_t>(rng.Next());
  } else {
    a.clockid = rng.Percent(92) ? 0 : static_cast<int32_t>(rng.Next());
  }

  a.sample_regs_intr = GenerateRegs(rng, a.sample_type & PERF_SAMPLE_REGS_INTR);
  a.aux_watermark = rng.Percent(90) ? 0 : rng.Percent(40) ? 4096 : static_cast<uint32_t>(rng.Next());
  {
    const uint64_t r = rng.Below(100);
    if (r < 50) a.sample_max_stack = 0;
    else if (r < 70) a.sample_max_stack = static_cast<uint16_t>(rng.Range(1, p.max_stack));
    else if (r < 80) a.sample_max_stack = static_cast<uint16_t>(p.max_stack);
    else if (r < 90) a.sample_max_stack = static_cast<uint16_t>(p.max_stack + 1);
    else a.sample_max_stack = static_cast<uint16_t>(rng.Next());
  }
  a.__reserved_2 = rng.Percent(97) ? 0 : static_cast<uint16_t>(rng.Next());
  a.aux_sample_size = rng.Percent(90) ? 0 : rng.Percent(50) ? 4096 : static_cast<uint32_t>(rng.Next());
  {
    // On Linux 6.13+ bits 0-2 of this word are aux_start_paused, aux_pause, aux_resume.
    const uint64_t r = rng.Below(100);
    a.__reserved_3 = r < 95   ? 0
                     : r < 98 ? static_cast<uint32_t>(rng.OneBit(0, 2))
                     : r < 99 ? static_cast<uint32_t>(rng.OneBit(3, 31))
                              : static_cast<uint32_t>(rng.Next());
  }
  a.sig_data = rng.Percent(80) ? 0 : rng.Next();
  GenerateSize(rng, p, &c);

  // The arguments.
  {
    const uint64_t r = rng.Below(100);
    c.pid = r < 60 ? PidArg::kSelf : r < 80 ? PidArg::kAny : r < 88 ? PidArg::kSelfTid : r < 95 ? PidArg::kNonexistent
                                                                                              : PidArg::kNegative;
  }
  {
    const uint64_t r = rng.Below(100);
    c.cpu = r < 50 ? CpuArg::kAny : r < 75 ? CpuArg::kFirst : r < 85 ? CpuArg::kLast : r < 92 ? CpuArg::kPastLast
            : r < 96 ? CpuArg::kHuge : CpuArg::kNegative;
  }
  {
    const uint64_t r = rng.Below(100);
    if (r < 28 && prior_events > 0) {
      c.group = {FdArg::kEvent, static_cast<EventRef>(rng.Below(8))};
    } else if (r < 33) {
      c.group = {FdArg::kBadFd, 0};
    } else if (r < 38) {
      c.group = {FdArg::kNonPerf, 0};
    }
  }
  {
    uint64_t f = 0;
    if (rng.Percent(60)) f |= PERF_FLAG_FD_CLOEXEC;
    if (rng.Percent(7)) f |= PERF_FLAG_FD_NO_GROUP;
    if (rng.Percent(7)) f |= PERF_FLAG_FD_OUTPUT;
    if (rng.Percent(4)) f |= PERF_FLAG_PID_CGROUP;
    if (rng.Percent(4)) f |= rng.OneBit(4, 63);
    if (rng.Percent(1)) f = rng.Next();
    c.flags = f;
  }
  // The first open of a sequence is more often plausible: the operations after
  // it need an event to act on.
  if (rng.Percent(prior_events == 0 ? 65 : 35)) MakePlausible(rng, p, &c);
  return c;
}

namespace {

IoctlCall GenerateIoctl(Rng& rng, const GeneratorParams& p) {
  IoctlCall c;
  c.target = static_cast<EventRef>(rng.Below(8));
  const uint64_t r = rng.Below(100);
  if (r < 36) {
    c.request = rng.Pick<unsigned long>({PERF_EVENT_IOC_ENABLE, PERF_EVENT_IOC_DISABLE, PERF_EVENT_IOC_RESET});
    c.arg = IoctlArg::kValue;
    c.value = rng.Percent(60) ? 0 : rng.Percent(75) ? uint64_t{PERF_IOC_FLAG_GROUP} : rng.Next();
  } else if (r < 44) {
    c.request = PERF_EVENT_IOC_REFRESH;
    c.arg = IoctlArg::kValue;
    c.value = rng.Pick<uint64_t>({0, 1, 3, ~uint64_t{0}, uint64_t{1} << 40});
  } else if (r < 54) {
    c.request = PERF_EVENT_IOC_PERIOD;
    if (rng.Percent(8)) {
      c.arg = IoctlArg::kNull;
    } else {
      c.arg = IoctlArg::kPtrU64;
      c.value = rng.Pick<uint64_t>({0, 1, 1000, 100000, p.max_sample_rate, uint64_t{p.max_sample_rate} + 1,
                                    uint64_t{1} << 63, rng.Next()});
    }
  } else if (r < 62) {
    c.request = PERF_EVENT_IOC_ID;
    c.arg = rng.Percent(85) ? IoctlArg::kPtrU64 : IoctlArg::kNull;
  } else if (r < 72) {
    c.request = PERF_EVENT_IOC_SET_OUTPUT;
    const uint64_t s = rng.Below(100);
    if (s < 20) {
      c.arg = IoctlArg::kMinusOne;
    } else {
      c.arg = IoctlArg::kFd;
      c.fd = s < 75 ? FdChoice{FdArg::kEvent, static_cast<EventRef>(rng.Below(8))}
             : s < 88 ? FdChoice{FdArg::kBadFd, 0} : FdChoice{FdArg::kNonPerf, 0};
    }
  } else if (r < 78) {
    c.request = PERF_EVENT_IOC_PAUSE_OUTPUT;
    c.arg = IoctlArg::kValue;
    c.value = rng.Pick<uint64_t>({0, 1, 2, rng.Next()});
  } else if (r < 82) {
    c.request = PERF_EVENT_IOC_SET_FILTER;
    if (rng.Percent(25)) {
      c.arg = IoctlArg::kNull;
    } else {
      c.arg = IoctlArg::kString;
      c.filter = rng.Pick<std::string>({"", "common_pid != 0", "filter 0x1000/8@/bin/true", "((("});
    }
  } else if (r < 85) {
    c.request = PERF_EVENT_IOC_SET_BPF;
    c.arg = rng.Percent(50) ? IoctlArg::kMinusOne : IoctlArg::kFd;
    c.fd = {rng.Percent(50) ? FdArg::kBadFd : FdArg::kNonPerf, 0};
  } else if (r < 88) {
    c.request = PERF_EVENT_IOC_QUERY_BPF;
    c.arg = rng.Percent(30) ? IoctlArg::kNull : IoctlArg::kQueryBpf;
  } else if (r < 92) {
    c.request = PERF_EVENT_IOC_MODIFY_ATTRIBUTES;
    const uint64_t s = rng.Below(100);
    c.arg = s < 15 ? IoctlArg::kNull : s < 65 ? IoctlArg::kAttrSame : IoctlArg::kAttrRetype;
  } else {
    // Requests perf_ioctl() does not know: ENOTTY.
    c.request = rng.Pick<unsigned long>({_IO('$', 12), _IO('$', 0x7f), _IOW('$', 4, uint32_t), 0x5401 /* TCGETS */});
    c.arg = IoctlArg::kValue;
    c.value = 0;
  }
  return c;
}

MmapCall GenerateMmap(Rng& rng, const GeneratorParams& p) {
  MmapCall c;
  c.target = static_cast<EventRef>(rng.Below(8));
  const uint64_t page = p.page_size;
  const uint64_t data_pages = rng.Percent(80) ? rng.Pick<uint64_t>({0, 1, 2, 4, 8, 16}) : rng.Pick<uint64_t>({3, 5, 6});
  const uint64_t r = rng.Below(100);
  if (r < 80) c.length = (1 + data_pages) * page;
  else if (r < 88) c.length = (1 + data_pages) * page - rng.Range(1, page - 1);  // rounds up to the same pages
  else if (r < 94) c.length = 0;
  else c.length = (1 + data_pages) * page + rng.Range(1, page - 1);
  {
    const uint64_t s = rng.Below(100);
    c.prot = s < 45 ? PROT_READ | PROT_WRITE : s < 80 ? PROT_READ : s < 87 ? PROT_WRITE : s < 92 ? PROT_NONE
             : s < 96 ? PROT_READ | PROT_EXEC : PROT_READ | PROT_WRITE | PROT_EXEC;
  }
  c.flags = rng.Percent(90) ? MAP_SHARED : MAP_PRIVATE;
  {
    const uint64_t s = rng.Below(100);
    c.offset = s < 88 ? 0 : s < 95 ? static_cast<int64_t>(page) : s < 98 ? 1 : static_cast<int64_t>(2 * page);
  }
  return c;
}

}  // namespace

Sequence GenerateSequence(uint64_t seed, const GeneratorParams& p) {
  Rng rng(seed);
  Sequence s;
  s.seed = seed;
  const size_t n = 1 + rng.Below(rng.Percent(20) ? 24 : 10);
  size_t opens = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t r = opens == 0 ? 0 : rng.Below(100);
    if (r < 35) {
      s.calls.emplace_back(GenerateOpen(rng, p, opens));
      ++opens;
    } else if (r < 49) {
      ReadCall c;
      c.target = static_cast<EventRef>(rng.Below(8));
      c.len = rng.Pick({ReadLen::kExact, ReadLen::kExact, ReadLen::kExactMinus1, ReadLen::kExactMinus8, ReadLen::kZero,
                        ReadLen::kLarge, ReadLen::kLarge});
      s.calls.emplace_back(c);
    } else if (r < 74) {
      s.calls.emplace_back(GenerateIoctl(rng, p));
    } else if (r < 84) {
      s.calls.emplace_back(GenerateMmap(rng, p));
    } else if (r < 87) {
      s.calls.emplace_back(MunmapCall{static_cast<uint32_t>(rng.Below(8)), rng.Percent(85)});
    } else if (r < 92) {
      s.calls.emplace_back(CloseCall{static_cast<EventRef>(rng.Below(8))});
    } else if (r < 95) {
      s.calls.emplace_back(FcntlCall{static_cast<EventRef>(rng.Below(8)), rng.Percent(50) ? F_GETFD : F_GETFL});
    } else if (r < 98) {
      s.calls.emplace_back(PollCall{static_cast<EventRef>(rng.Below(8))});
    } else {
      s.calls.emplace_back(PrctlCall{rng.Percent(50) ? PR_TASK_PERF_EVENTS_ENABLE : PR_TASK_PERF_EVENTS_DISABLE});
    }
  }
  return s;
}

// --- coverage -------------------------------------------------------------

namespace {

struct FieldSpec {
  const char* name;
  size_t offset;
  unsigned bytes;
};

// The flag bitfield word sits right after read_format.
constexpr size_t kFlagsOffset = offsetof(perf_event_attr, read_format) + sizeof(uint64_t);

constexpr std::array<FieldSpec, 22> kFields{{
    {"type", offsetof(perf_event_attr, type), 4},
    {"size", offsetof(perf_event_attr, size), 4},
    {"config", offsetof(perf_event_attr, config), 8},
    {"sample_period", offsetof(perf_event_attr, sample_period), 8},
    {"sample_type", offsetof(perf_event_attr, sample_type), 8},
    {"read_format", offsetof(perf_event_attr, read_format), 8},
    {"flags", kFlagsOffset, 8},
    {"wakeup_events", offsetof(perf_event_attr, wakeup_events), 4},
    {"bp_type", offsetof(perf_event_attr, bp_type), 4},
    {"config1", offsetof(perf_event_attr, config1), 8},
    {"config2", offsetof(perf_event_attr, config2), 8},
    {"branch_sample_type", offsetof(perf_event_attr, branch_sample_type), 8},
    {"sample_regs_user", offsetof(perf_event_attr, sample_regs_user), 8},
    {"sample_stack_user", offsetof(perf_event_attr, sample_stack_user), 4},
    {"clockid", offsetof(perf_event_attr, clockid), 4},
    {"sample_regs_intr", offsetof(perf_event_attr, sample_regs_intr), 8},
    {"aux_watermark", offsetof(perf_event_attr, aux_watermark), 4},
    {"sample_max_stack", offsetof(perf_event_attr, sample_max_stack), 2},
    {"__reserved_2", offsetof(perf_event_attr, __reserved_2), 2},
    {"aux_sample_size", offsetof(perf_event_attr, aux_sample_size), 4},
    {"__reserved_3", offsetof(perf_event_attr, __reserved_3), 4},
    {"sig_data", offsetof(perf_event_attr, sig_data), 8},
}};

constexpr bool FieldsTileTheStruct() {
  size_t at = 0;
  for (const FieldSpec& f : kFields) {
    if (f.offset != at) return false;
    at += f.bytes;
  }
  return at == sizeof(perf_event_attr);
}
static_assert(FieldsTileTheStruct(), "kFields must list every field of perf_event_attr of this UAPI header");

uint64_t Mask(unsigned bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }

}  // namespace

uint64_t FieldCoverage::never_set() const { return ~seen_set & Mask(bits); }
uint64_t FieldCoverage::never_clear() const { return ~seen_clear & Mask(bits); }

std::vector<FieldCoverage> NewCoverage() {
  std::vector<FieldCoverage> out;
  for (const FieldSpec& f : kFields) out.push_back({f.name, f.bytes * 8u, 0, 0});
  return out;
}

void AddCoverage(const perf_event_attr& attr, std::vector<FieldCoverage>* coverage) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(&attr);
  for (size_t i = 0; i < kFields.size() && i < coverage->size(); ++i) {
    uint64_t v = 0;
    std::memcpy(&v, bytes + kFields[i].offset, kFields[i].bytes);  // little-endian: low bytes
    FieldCoverage& c = (*coverage)[i];
    c.seen_set |= v;
    c.seen_clear |= ~v & Mask(c.bits);
  }
}

}  // namespace perftest::fidelity
