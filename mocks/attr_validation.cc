#include "mocks/attr_validation.h"

#include <fmt/format.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>

namespace perftest::mock {
namespace {

int Fail(int err, std::string* why, std::string text) {
  if (why != nullptr) *why = std::move(text);
  return err;
}

// The 64-bit word of perf_event_attr that holds the flag bitfield (disabled ..
// __reserved_1), right after read_format.
uint64_t FlagWord(const perf_event_attr& a) {
  uint64_t w;
  std::memcpy(&w, reinterpret_cast<const char*>(&a) + offsetof(perf_event_attr, read_format) + sizeof(a.read_format),
              sizeof w);
  return w;
}

// A bit added to perf_event_attr after Linux 4.11, with the release and the
// commit that added it (include/uapi/linux/perf_event.h, perf_copy_attr()).
// Each hash and release checked against the tip-bot merge notices and the
// perf-event-open crate's per-field "Since linux-X" table (2026-11-28):
// PERF_SAMPLE_PHYS_ADDR landed in 4.14 and PERF_SAMPLE_BRANCH_PRIV_SAVE in
// 6.1 (tip perf/core, August 2022), not 4.13 and 5.19 as first written.
// A release before `since` refuses it in perf_copy_attr(): the flag word's
// bits are __reserved_1, the others "unknown bits" of their field (EINVAL).
enum class AttrField { kFlags, kSampleType, kReadFormat, kBranchSampleType };
struct AttrBitSince {
  AttrField field;
  uint64_t bit;
  uint32_t since;  // KernelVersion()
  const char* name;
  const char* commit;
};
constexpr uint64_t Bit(unsigned n) { return uint64_t{1} << n; }
constexpr AttrBitSince kAttrBitsSince[] = {
    // The flag word (disabled = bit 0 .. sigtrap = bit 37).
    {AttrField::kFlags, Bit(28), KernelVersion(4, 12), "namespaces",
     "e422267322cd \"perf: Add PERF_RECORD_NAMESPACES to include namespaces related info\""},
    {AttrField::kFlags, Bit(29), KernelVersion(5, 1), "ksymbol", "76193a94522f \"perf, bpf: Introduce PERF_RECORD_KSYMBOL\""},
    {AttrField::kFlags, Bit(30), KernelVersion(5, 1), "bpf_event", "6ee52e2a3fe4 \"perf, bpf: Introduce PERF_RECORD_BPF_EVENT\""},
    {AttrField::kFlags, Bit(31), KernelVersion(5, 4), "aux_output", "ab43762ef010 \"perf: Allow normal events to output AUX data\""},
    {AttrField::kFlags, Bit(32), KernelVersion(5, 7), "cgroup", "96aaab686505 \"perf/core: Add PERF_RECORD_CGROUP event\""},
    {AttrField::kFlags, Bit(33), KernelVersion(5, 9), "text_poke", "e17d43b93e54 \"perf: Add perf text poke event\""},
    {AttrField::kFlags, Bit(34), KernelVersion(5, 12), "build_id", "88a16a130933 \"perf: Add build id data in mmap2 event\""},
    {AttrField::kFlags, Bit(35), KernelVersion(5, 13), "inherit_thread",
     "2b26f0aa0049 \"perf: Support only inheriting events if cloned with CLONE_THREAD\""},
    {AttrField::kFlags, Bit(36), KernelVersion(5, 13), "remove_on_exec",
     "2e498d0a74e5 \"perf: Add support for event removal on exec\""},
    {AttrField::kFlags, Bit(37), KernelVersion(5, 13), "sigtrap", "97ba62b27867 \"perf: Add support for SIGTRAP on perf events\""},
    // sample_type.
    {AttrField::kSampleType, Bit(19), KernelVersion(4, 14), "PERF_SAMPLE_PHYS_ADDR",
     "fc7ce9c74c3a \"perf/core, x86: Add PERF_SAMPLE_PHYS_ADDR\""},
    {AttrField::kSampleType, Bit(20), KernelVersion(5, 5), "PERF_SAMPLE_AUX",
     "a4faf00d994c \"perf/aux: Allow using AUX data in perf samples\""},
    {AttrField::kSampleType, Bit(21), KernelVersion(5, 7), "PERF_SAMPLE_CGROUP",
     "6546b19f95ac \"perf/core: Add PERF_SAMPLE_CGROUP feature\""},
    {AttrField::kSampleType, Bit(22), KernelVersion(5, 11), "PERF_SAMPLE_DATA_PAGE_SIZE",
     "8d97e71811aa \"perf/core: Add PERF_SAMPLE_DATA_PAGE_SIZE\""},
    {AttrField::kSampleType, Bit(23), KernelVersion(5, 11), "PERF_SAMPLE_CODE_PAGE_SIZE",
     "995f088efebe \"perf/core: Add support for PERF_SAMPLE_CODE_PAGE_SIZE\""},
    {AttrField::kSampleType, Bit(24), KernelVersion(5, 12), "PERF_SAMPLE_WEIGHT_STRUCT",
     "2a6c6b7d7ad3 \"perf/core: Add PERF_SAMPLE_WEIGHT_STRUCT\""},
    // read_format.
    {AttrField::kReadFormat, Bit(4), KernelVersion(6, 0), "PERF_FORMAT_LOST",
     "119a784c8127 \"perf/core: Add a new read format to get a number of lost samples\""},
    // branch_sample_type.
    {AttrField::kBranchSampleType, Bit(17), KernelVersion(5, 7), "PERF_SAMPLE_BRANCH_HW_INDEX",
     "bbfd5e4fab63 \"perf/core: Add new branch sample type for HW index of raw branch records\""},
    {AttrField::kBranchSampleType, Bit(18), KernelVersion(6, 1), "PERF_SAMPLE_BRANCH_PRIV_SAVE",
     "5402d25aa571 \"perf: Capture branch privilege information\""},
    {AttrField::kBranchSampleType, Bit(19), KernelVersion(6, 8), "PERF_SAMPLE_BRANCH_COUNTERS",
     "571d91dcadfa \"perf: Add branch stack counters\""},
};
// Every bit of each field that the table's newest release knows (6.8..6.18:
// flags up to sigtrap, PERF_SAMPLE_MAX 1 << 25, PERF_FORMAT_MAX 1 << 5,
// PERF_SAMPLE_BRANCH_MAX 1 << 20); the table takes the newer ones away.
constexpr uint64_t kAllFlagBits = Bit(38) - 1;
constexpr uint64_t kAllSampleTypeBits = Bit(25) - 1;
constexpr uint64_t kAllReadFormatBits = Bit(5) - 1;
constexpr uint64_t kAllBranchSampleTypeBits = Bit(20) - 1;
// aux_start_paused, aux_pause, aux_resume in the word that was __reserved_3:
// 18d92bb57c39 "perf/core: Add aux_pause, aux_resume, aux_start_paused" (Linux 6.13).
constexpr uint32_t kAuxActionSince = KernelVersion(6, 13);

// perf_reg_validate(), per arch; every flavour refuses an empty mask.
// arch/x86/kernel/perf_regs.c (x86_64): DS, ES, FS, GS are not sampled and bits
// between PERF_REG_X86_64_MAX (24) and PERF_REG_X86_XMM0 (32) are reserved. XMM
// registers (bit 32 and up) pass here and are refused later by PMUs without
// PERF_PMU_CAP_EXTENDED_REGS (HasExtendedRegs()).
// arch/arm64/kernel/perf_regs.c, arch/riscv/kernel/perf_regs.c: bits at and
// above PERF_REG_ARM64_MAX / PERF_REG_RISCV_MAX are REG_RESERVED (arm64 lets
// PERF_REG_ARM64_VG through only with SVE, which the profiles do not model).
int ValidateRegs(uint64_t mask, const AttrLimits& limits, const char* which, std::string* why) {
  uint64_t refused = 0;
  if (limits.x86_64) {
    constexpr uint64_t kNoSupport =
        (uint64_t{1} << 12) | (uint64_t{1} << 13) | (uint64_t{1} << 14) | (uint64_t{1} << 15);
    constexpr uint64_t kReserved = ((uint64_t{1} << 32) - 1) & ~((uint64_t{1} << 24) - 1);
    refused = kNoSupport | kReserved;
  } else if (limits.perf_reg_max != 0 && limits.perf_reg_max < 64) {
    refused = ~((uint64_t{1} << limits.perf_reg_max) - 1);
  }
  if (mask == 0 || (mask & refused)) {
    return Fail(EINVAL, why, fmt::format("{}={:#x}: perf_reg_validate() refuses it{}", which, mask,
                                         mask == 0 ? " (empty mask)" : ""));
  }
  return 0;
}

}  // namespace

std::optional<uint32_t> ParseKernelRelease(std::string_view release) {
  uint32_t major = 0, minor = 0;
  size_t i = 0;
  auto number = [&](uint32_t* out) {
    const size_t start = i;
    while (i < release.size() && release[i] >= '0' && release[i] <= '9' && i - start < 4) {
      *out = *out * 10 + static_cast<uint32_t>(release[i++] - '0');
    }
    return i > start;
  };
  if (!number(&major) || i >= release.size() || release[i++] != '.' || !number(&minor)) return std::nullopt;
  if (i < release.size() && release[i] >= '0' && release[i] <= '9') return std::nullopt;  // a 5-digit part
  if (major == 0 || major > 255 || minor > 255) return std::nullopt;
  return KernelVersion(major, minor);
}

std::string KernelReleaseName(uint32_t version) { return fmt::format("{}.{}", version >> 16, (version >> 8) & 0xff); }

AttrBits AttrBitsFor(uint32_t kernel_version) {
  AttrBits b{kAllFlagBits, kAllSampleTypeBits, kAllReadFormatBits, kAllBranchSampleTypeBits,
             kernel_version >= kAuxActionSince};
  for (const AttrBitSince& e : kAttrBitsSince) {
    if (kernel_version >= e.since) continue;
    switch (e.field) {
      case AttrField::kFlags: b.flags &= ~e.bit; break;
      case AttrField::kSampleType: b.sample_type &= ~e.bit; break;
      case AttrField::kReadFormat: b.read_format &= ~e.bit; break;
      case AttrField::kBranchSampleType: b.branch_sample_type &= ~e.bit; break;
    }
  }
  return b;
}

int CheckOpenFlags(unsigned long flags, std::string* why) {
  constexpr unsigned long kAll =
      PERF_FLAG_FD_NO_GROUP | PERF_FLAG_FD_OUTPUT | PERF_FLAG_PID_CGROUP | PERF_FLAG_FD_CLOEXEC;
  if (flags & ~kAll) return Fail(EINVAL, why, fmt::format("flags {:#x} has unknown bits", flags & ~kAll));
  return 0;
}

int CopyAttr(perf_event_attr* uattr, const AttrLimits& limits, perf_event_attr* out, std::string* why) {
  uint32_t size = uattr->size;
  if (size == 0) size = PERF_ATTR_SIZE_VER0;  // "ABI compatibility quirk"
  auto e2big = [&](std::string text) {
    uattr->size = limits.attr_size;  // put_user(sizeof(*attr), &uattr->size)
    return Fail(E2BIG, why, std::move(text));
  };
  if (size < PERF_ATTR_SIZE_VER0 || size > limits.page_size) {
    return e2big(fmt::format("attr.size={} is outside [{}, {}]", size, PERF_ATTR_SIZE_VER0, limits.page_size));
  }
  // copy_struct_from_user(): a larger struct is fine if the tail the kernel
  // does not know is zero.
  const auto* bytes = reinterpret_cast<const unsigned char*>(uattr);
  for (uint32_t i = limits.attr_size; i < size; ++i) {
    if (bytes[i] != 0) {
      return e2big(fmt::format("attr.size={} and byte {} is non-zero past the kernel's {} bytes", size, i,
                               limits.attr_size));
    }
  }
  if (size >= sizeof *out) {
    std::memcpy(out, uattr, sizeof *out);  // the usual case: one fixed-size copy
  } else {
    std::memset(out, 0, sizeof *out);
    std::memcpy(out, uattr, size);
  }
  out->size = size;
  perf_event_attr& a = *out;

  // Linux 6.13+ took bits 0-2 of __reserved_3 for aux_action (limits.aux_action).
  const uint32_t reserved_3 = limits.aux_action ? a.__reserved_3 & ~kAuxActionBits : a.__reserved_3;
  // The bits are those of the profile's kernel release (limits.known).
  const AttrBits& known = limits.known;
  const std::string release = KernelReleaseName(limits.kernel_version);
  if ((FlagWord(a) & ~known.flags) || a.__reserved_2 || reserved_3) {
    return Fail(EINVAL, why, fmt::format("reserved bits are set (__reserved_1/2/3 of Linux {})", release));
  }
  if (a.sample_type & ~known.sample_type) {
    return Fail(EINVAL, why, fmt::format("sample_type has bits {:#x} Linux {} does not know", a.sample_type & ~known.sample_type,
                                         release));
  }
  if (a.read_format & ~known.read_format) {
    return Fail(EINVAL, why, fmt::format("read_format has bits {:#x} Linux {} does not know", a.read_format & ~known.read_format,
                                         release));
  }
  if (a.sample_type & PERF_SAMPLE_BRANCH_STACK) {
    const uint64_t mask = a.branch_sample_type;
    if (mask & ~known.branch_sample_type) {
      return Fail(EINVAL, why, fmt::format("branch_sample_type has bits {:#x} Linux {} does not know",
                                           mask & ~known.branch_sample_type, release));
    }
    if (!(mask & ~uint64_t{PERF_SAMPLE_BRANCH_PLM_ALL})) return Fail(EINVAL, why, "branch_sample_type names no branch type");
    // Privilege levels default to the event's; kernel branches need perf_allow_kernel().
    if ((mask & PERF_SAMPLE_BRANCH_KERNEL) && !limits.privileged && limits.paranoid > 1) {
      return Fail(EACCES, why, "PERF_SAMPLE_BRANCH_KERNEL needs privilege at this perf_event_paranoid");
    }
  }
  if (a.sample_type & PERF_SAMPLE_REGS_USER) {
    if (int err = ValidateRegs(a.sample_regs_user, limits, "sample_regs_user", why)) return err;
  }
  if (a.sample_type & PERF_SAMPLE_STACK_USER) {
    if (a.sample_stack_user >= USHRT_MAX) return Fail(EINVAL, why, "sample_stack_user >= USHRT_MAX");
    if (a.sample_stack_user % sizeof(uint64_t) != 0) return Fail(EINVAL, why, "sample_stack_user is not a multiple of 8");
  }
  if (a.sample_max_stack == 0) a.sample_max_stack = static_cast<uint16_t>(limits.max_stack);
  if (a.sample_type & PERF_SAMPLE_REGS_INTR) {
    if (int err = ValidateRegs(a.sample_regs_intr, limits, "sample_regs_intr", why)) return err;
  }
  if ((a.sample_type & PERF_SAMPLE_WEIGHT) && (a.sample_type & PERF_SAMPLE_WEIGHT_STRUCT)) {
    return Fail(EINVAL, why, "PERF_SAMPLE_WEIGHT and PERF_SAMPLE_WEIGHT_STRUCT together");
  }
  if (!a.inherit && a.inherit_thread) return Fail(EINVAL, why, "inherit_thread without inherit");
  if (a.remove_on_exec && a.enable_on_exec) return Fail(EINVAL, why, "remove_on_exec with enable_on_exec");
  if (a.sigtrap && !a.remove_on_exec) return Fail(EINVAL, why, "sigtrap without remove_on_exec");
  return 0;
}

int CheckOpenAttr(const perf_event_attr& a, unsigned long flags, pid_t pid, int cpu, const AttrLimits& limits,
                  std::string* why) {
  const bool may_kernel = limits.privileged || limits.paranoid <= 1;  // perf_allow_kernel()
  if (!limits.privileged && limits.paranoid >= 3) {
    return Fail(EACCES, why, fmt::format("perf_event_paranoid={} refuses unprivileged users", limits.paranoid));
  }
  if (!a.exclude_kernel && !may_kernel) {
    return Fail(EACCES, why, fmt::format("exclude_kernel=0 needs privilege at perf_event_paranoid={}", limits.paranoid));
  }
  if (a.namespaces && !limits.privileged) return Fail(EACCES, why, "attr.namespaces needs CAP_PERFMON");
  if (a.freq) {
    if (a.sample_freq > limits.max_sample_rate) {
      return Fail(EINVAL, why, fmt::format("sample_freq={} > perf_event_max_sample_rate={}", a.sample_freq,
                                           limits.max_sample_rate));
    }
  } else if (a.sample_period & (uint64_t{1} << 63)) {
    return Fail(EINVAL, why, "sample_period has bit 63 set");
  }
  if ((a.sample_type & PERF_SAMPLE_PHYS_ADDR) && !may_kernel) {
    return Fail(EACCES, why, "PERF_SAMPLE_PHYS_ADDR needs privilege at this perf_event_paranoid");
  }
  if ((flags & PERF_FLAG_PID_CGROUP) && (pid == -1 || cpu == -1)) {
    return Fail(EINVAL, why, "PERF_FLAG_PID_CGROUP needs a cgroup fd and a CPU");
  }
  return 0;
}

bool HasExtendedRegs(const perf_event_attr& a, bool x86_64) {
  if (!x86_64) return false;
  constexpr uint64_t kExtended = ~((uint64_t{1} << 32) - 1);  // PERF_REG_EXTENDED_MASK
  // kernel/events/core.c has_extended_regs() looks at the masks alone, not at
  // sample_type: the masks are refused even when no registers are sampled.
  return (a.sample_regs_user & kExtended) || (a.sample_regs_intr & kExtended);
}

int CheckClockId(int clockid) {
  switch (clockid) {
    case CLOCK_MONOTONIC:
    case CLOCK_MONOTONIC_RAW:
    case CLOCK_REALTIME:
    case CLOCK_BOOTTIME:
    case CLOCK_TAI:
      return 0;
    default:
      return EINVAL;
  }
}

}  // namespace perftest::mock
