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

// Bits of the flag word this build's UAPI defines (sigtrap is the last: bit 37).
constexpr uint64_t kKnownFlagBits = (uint64_t{1} << 38) - 1;

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
  if ((FlagWord(a) & ~kKnownFlagBits) || a.__reserved_2 || reserved_3) {
    return Fail(EINVAL, why, "reserved bits are set (__reserved_1/2/3)");
  }
  if (a.sample_type & ~(uint64_t{PERF_SAMPLE_MAX} - 1)) {
    return Fail(EINVAL, why, fmt::format("sample_type has unknown bits {:#x}", a.sample_type & ~(uint64_t{PERF_SAMPLE_MAX} - 1)));
  }
  if (a.read_format & ~(uint64_t{PERF_FORMAT_MAX} - 1)) {
    return Fail(EINVAL, why, fmt::format("read_format has unknown bits {:#x}", a.read_format & ~(uint64_t{PERF_FORMAT_MAX} - 1)));
  }
  if (a.sample_type & PERF_SAMPLE_BRANCH_STACK) {
    const uint64_t mask = a.branch_sample_type;
    if (mask & ~(uint64_t{PERF_SAMPLE_BRANCH_MAX} - 1)) return Fail(EINVAL, why, "branch_sample_type has unknown bits");
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
