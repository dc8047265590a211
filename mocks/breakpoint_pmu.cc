#include "mocks/breakpoint_pmu.h"

#include <fmt/format.h>
#include <linux/hw_breakpoint.h>

#include <cerrno>

namespace perftest::mock {
namespace {

int Fail(int err, std::string* why, std::string text) {
  if (why != nullptr) *why = std::move(text);
  return err;
}

// arch_check_bp_in_kernelspace(): the range reaches the kernel half.
bool InKernelSpace(uint64_t addr, uint64_t len) { return addr >= 0xffff800000000000ull || addr + len < addr; }

// arm64: TASK_SIZE for 48-bit user VAs (vabits_actual = 48 without FEAT_LPA2, as on Neoverse N1).
constexpr uint64_t kArm64TaskSize = uint64_t{1} << 48;

// arm64 TASK_SIZE_32 (arch/arm64/include/asm/processor.h, 4K/16K pages or no
// KUSER_HELPERS): the top page of the 4 GiB holds the compat vectors.
uint64_t Arm64TaskSize32(uint64_t page_size) { return (uint64_t{1} << 32) - page_size; }

// arm64 arch_build_bp_info(): the length after the execute fix-up (none for a compat breakpoint).
uint64_t Arm64Len(const perf_event_attr& a, bool compat_bp) {
  return a.bp_type == HW_BREAKPOINT_X && !compat_bp ? 4 : a.bp_len;
}

// arm64 hw_breakpoint_arch_parse(): the alignment mask the address is rounded
// down by: 64-bit tasks 3 for X (BVR: a word), 7 for data (WVR: a doubleword);
// AArch32 tasks 7 for bp_len 8, else 3.
uint64_t Arm64AlignmentMask(const perf_event_attr& a, bool compat_bp) {
  if (compat_bp) return a.bp_len == HW_BREAKPOINT_LEN_8 ? 0x7 : 0x3;
  return a.bp_type == HW_BREAKPOINT_X ? 0x3 : 0x7;
}

// arm64 hw_breakpoint_arch_parse(): the word or doubleword the breakpoint
// register holds and the byte-select mask within it (8 bits).
struct Arm64Watch {
  uint64_t base;
  uint32_t bas;
};
Arm64Watch Arm64WatchOf(const perf_event_attr& a, bool compat_bp) {
  const uint64_t mask = Arm64AlignmentMask(a, compat_bp);
  const uint64_t offset = a.bp_addr & mask;
  const uint32_t len_bits = (1u << Arm64Len(a, compat_bp)) - 1;  // ARM_BREAKPOINT_LEN_n: n low bits
  return {a.bp_addr & ~mask, static_cast<uint32_t>((len_bits << offset) & 0xff)};
}

// hw_breakpoint_arch_parse(), is_compat_bp(): AArch32 tasks "expect some simple
// alignment fixups": an offset within the mask is allowed for a halfword at 1-2
// and a byte at 1-3 only.
bool Arm64CompatAligned(const perf_event_attr& a) {
  const uint64_t offset = a.bp_addr & Arm64AlignmentMask(a, /*compat_bp=*/true);
  if (offset == 0) return true;
  if (offset <= 2 && a.bp_len == HW_BREAKPOINT_LEN_2) return true;
  return offset <= 3 && a.bp_len == HW_BREAKPOINT_LEN_1;
}

int Arm64Parse(const perf_event_attr& a, const BreakpointTask& task, std::string* why) {
  const bool compat_bp = task.compat_bp();
  switch (a.bp_type) {
    case HW_BREAKPOINT_X:
    case HW_BREAKPOINT_R:
    case HW_BREAKPOINT_W:
    case HW_BREAKPOINT_RW:
      break;
    default:
      return Fail(EINVAL, why, fmt::format("bp_type {:#x}: arm64 has X, R, W and RW breakpoints only", a.bp_type));
  }
  if (a.bp_len < HW_BREAKPOINT_LEN_1 || a.bp_len > HW_BREAKPOINT_LEN_8) {
    return Fail(EINVAL, why, fmt::format("bp_len {} is not 1..8 (arm64 arch_build_bp_info())", a.bp_len));
  }
  if (compat_bp && a.bp_type == HW_BREAKPOINT_X && a.bp_len != HW_BREAKPOINT_LEN_2 && a.bp_len != HW_BREAKPOINT_LEN_4) {
    return Fail(EINVAL, why, fmt::format("bp_len {}: an AArch32 task's execute breakpoint is 2 (Thumb) or 4 bytes "
                                         "(arm64 arch_build_bp_info(), is_compat_bp())",
                                         a.bp_len));
  }
  if (compat_bp && !Arm64CompatAligned(a)) {
    return Fail(EINVAL, why, fmt::format("bp_addr {:#x} with bp_len {}: not an alignment an AArch32 task may use "
                                         "(arm64 hw_breakpoint_arch_parse(), is_compat_bp())",
                                         a.bp_addr, a.bp_len));
  }
  // arch_check_bp_in_kernelspace() with the length after the fix-up, against the opener's TASK_SIZE.
  const uint64_t len = Arm64Len(a, compat_bp);
  const uint64_t task_size = task.compat ? Arm64TaskSize32(task.page_size) : kArm64TaskSize;
  const bool kernel = a.bp_addr >= task_size && a.bp_addr + len - 1 >= task_size;
  if (kernel && task.per_task) {
    return Fail(EINVAL, why, "a per-task breakpoint on a kernel address (arm64 hw_breakpoint_arch_parse())");
  }
  if (kernel && a.exclude_kernel) {
    return Fail(EINVAL, why, "a kernel address with exclude_kernel (hw_breakpoint_parse())");
  }
  return 0;
}

}  // namespace

BreakpointArch BreakpointArchOf(const std::string& profile_arch) {
  return profile_arch == "aarch64" || profile_arch == "arm64" ? BreakpointArch::kArm64 : BreakpointArch::kX86_64;
}

int BreakpointParse(const perf_event_attr& a, BreakpointArch arch, const BreakpointTask& task, std::string* why) {
  if (arch == BreakpointArch::kArm64) return Arm64Parse(a, task, why);
  const uint64_t len = a.bp_len;
  switch (a.bp_type) {
    case HW_BREAKPOINT_X:
      if (len != sizeof(long)) {
        return Fail(EINVAL, why, fmt::format("an execute breakpoint needs bp_len == sizeof(long), not {}", len));
      }
      break;
    case HW_BREAKPOINT_W:
    case HW_BREAKPOINT_RW:
      if (len != 1 && len != 2 && len != 4 && len != 8) {
        if (len == 0 || (len & (len - 1)) != 0) return Fail(EINVAL, why, fmt::format("bp_len {} is not 1, 2, 4 or 8", len));
        if (a.bp_addr & (len - 1)) return Fail(EINVAL, why, "range breakpoint not aligned to its length");
        return Fail(EOPNOTSUPP, why, fmt::format("bp_len {}: a range breakpoint needs X86_FEATURE_BPEXT", len));
      }
      if (a.bp_addr & (len - 1)) {
        return Fail(EINVAL, why, fmt::format("bp_addr {:#x} is not aligned to bp_len {}", a.bp_addr, len));
      }
      break;
    default:
      return Fail(EINVAL, why, fmt::format("bp_type {:#x}: x86 has W, RW and X breakpoints only", a.bp_type));
  }
  if (InKernelSpace(a.bp_addr, len) && a.exclude_kernel) {
    return Fail(EINVAL, why, "a kernel address with exclude_kernel (hw_breakpoint_parse())");
  }
  return 0;
}

bool BreakpointHits(const perf_event_attr& a, uint64_t addr, uint32_t width, Access access, BreakpointArch arch,
                    bool compat_bp) {
  if (arch == BreakpointArch::kArm64) {
    // breakpoint_handler(): the word matches and the byte select has the
    // pc's byte; watchpoint_handler(): the access kind is the watchpoint's and
    // it touches a selected byte of the doubleword.
    const uint32_t kind = access == Access::kExecute ? HW_BREAKPOINT_X
                          : access == Access::kRead  ? HW_BREAKPOINT_R
                                                     : HW_BREAKPOINT_W;
    if ((a.bp_type & kind) == 0) return false;  // X is never combined with R/W (Arm64Parse())
    const Arm64Watch w = Arm64WatchOf(a, compat_bp);
    // BVR holds a word, WVR a doubleword — or a word, when an AArch32 task's
    // watchpoint leaves it word-aligned (BAS then selects within that word).
    const uint64_t span = kind == HW_BREAKPOINT_X || (w.base & 0x7) != 0 ? 4 : 8;
    for (uint64_t byte = addr; byte < addr + (kind == HW_BREAKPOINT_X ? 1 : width); ++byte) {
      if (byte >= w.base && byte < w.base + span && ((w.bas >> (byte - w.base)) & 1) != 0) return true;
    }
    return false;
  }
  switch (access) {
    case Access::kExecute:
      return a.bp_type == HW_BREAKPOINT_X && addr == a.bp_addr;
    case Access::kRead:
      if (a.bp_type != HW_BREAKPOINT_RW) return false;
      break;
    case Access::kWrite:
      if (a.bp_type != HW_BREAKPOINT_W && a.bp_type != HW_BREAKPOINT_RW) return false;
      break;
  }
  return addr < a.bp_addr + a.bp_len && a.bp_addr < addr + width;
}

void BreakpointCopyAttr(const perf_event_attr& from, perf_event_attr* to) {
  to->bp_addr = from.bp_addr;
  to->bp_type = from.bp_type;
  to->bp_len = from.bp_len;
  to->disabled = from.disabled;
}

BreakpointSlot SlotOf(uint32_t bp_type) {
  return (bp_type & HW_BREAKPOINT_RW) != 0 ? BreakpointSlot::kData : BreakpointSlot::kInst;
}

}  // namespace perftest::mock
