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

}  // namespace

int BreakpointParse(const perf_event_attr& a, BreakpointArch /*arch: x86_64 only so far*/, std::string* why) {
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

bool BreakpointHits(const perf_event_attr& a, uint64_t addr, uint32_t width, Access access) {
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
