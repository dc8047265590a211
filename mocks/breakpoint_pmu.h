// The breakpoint PMU (PERF_TYPE_BREAKPOINT) of MockBackend: which
// bp_type/bp_len/bp_addr an arch accepts, which accesses a breakpoint sees,
// and the debug-register slots.
//
//   if (int err = BreakpointParse(attr, BreakpointArch::kX86_64, &why)) return err;   // at open
//   if (BreakpointHits(attr, addr, 8, Access::kWrite)) ...                           // a store
//
// Sources (Linux 6.18, checked on x86_64 with the calls in the breakpoint
// cases): kernel/events/hw_breakpoint.c hw_breakpoint_parse() (a kernel
// address with exclude_kernel is EINVAL), arch/x86/kernel/hw_breakpoint.c
// arch_build_bp_info() and hw_breakpoint_arch_parse():
//  - bp_type: HW_BREAKPOINT_W, HW_BREAKPOINT_RW or HW_BREAKPOINT_X; R alone,
//    EMPTY and any other mix are EINVAL (x86 has no read-only breakpoint).
//  - W/RW: bp_len 1, 2, 4 or 8; another power of two is an AMD range
//    breakpoint, EOPNOTSUPP without X86_FEATURE_BPEXT; anything else EINVAL.
//    bp_addr must be aligned to bp_len (EINVAL).
//  - X: bp_len must be sizeof(long) (EINVAL); no alignment rule.
//  - A data breakpoint fires on any access of the kind that overlaps
//    [bp_addr, bp_addr + bp_len); an execute breakpoint on each execution of
//    the instruction at bp_addr (user mode: the trap after it).
//  - Slots: CONFIG_HAVE_MIXED_BREAKPOINTS_REGS: one pool (HBP_NUM = 4 on x86)
//    for data and instruction breakpoints; a breakpoint holds its slot from
//    perf_event_open() (disabled or not) to close; per CPU, the CPU-wide
//    breakpoints plus those of any task that may run there must fit
//    (reserve_bp_slot() -> ENOSPC).
#pragma once

#include <linux/perf_event.h>

#include <cstdint>
#include <string>

namespace perftest::mock {

enum class BreakpointArch { kX86_64 };

// kernel/events/hw_breakpoint.c find_slot_idx(): a breakpoint with any
// HW_BREAKPOINT_RW bit takes a data slot (TYPE_DATA), else an instruction slot
// (TYPE_INST). Whether the two share registers is the arch's (profile
// hw_watchpoint_slots).
enum class BreakpointSlot { kInst, kData };
BreakpointSlot SlotOf(uint32_t bp_type);

enum class Access { kRead, kWrite, kExecute };

// Validates bp_type/bp_len/bp_addr. Errors: EINVAL, EOPNOTSUPP as above.
int BreakpointParse(const perf_event_attr& attr, BreakpointArch arch, std::string* why);

// Whether an access of `width` bytes at `addr` (kExecute: a call to `addr`)
// triggers the breakpoint described by `attr`.
bool BreakpointHits(const perf_event_attr& attr, uint64_t addr, uint32_t width, Access access);

// hw_breakpoint_copy_attr(): the fields PERF_EVENT_IOC_MODIFY_ATTRIBUTES may
// change (bp_addr, bp_type, bp_len, disabled), copied from `from` to `to`.
void BreakpointCopyAttr(const perf_event_attr& from, perf_event_attr* to);

}  // namespace perftest::mock
