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
// arm64 (BreakpointArch::kArm64, the arm64-pmuv3 profile; from the source of
// arch/arm64/kernel/hw_breakpoint.c arch_build_bp_info() and
// hw_breakpoint_arch_parse(), Linux 6.18 — no arm64 machine to check on):
//  - bp_type: X, R, W or RW (a load-only watchpoint exists); anything else EINVAL.
//  - bp_len: any of HW_BREAKPOINT_LEN_1..8, for every type; anything else
//    EINVAL (no range breakpoints, so no EOPNOTSUPP).
//  - X (a 64-bit task): any accepted length is silently made 4 (the "FIXME:
//    perf assumes sizeof(long)" fix-up).
//  - No alignment rule for a 64-bit task: the address is rounded down to the
//    doubleword (8 bytes; 4 for X) and the length becomes a byte-select mask
//    (BAS, 8 bits) shifted by the offset; bytes past the doubleword fall off
//    the 8-bit field, so a watchpoint crossing a doubleword watches only its
//    part in the first one.
//  - A kernel address (va >= TASK_SIZE, 1 << 48 for 48-bit VAs, and so its end)
//    on a per-task breakpoint is EINVAL ("Disallow per-task kernel breakpoints");
//    then hw_breakpoint_parse()'s exclude_kernel rule as on x86.
//  - Slots: BRPs for X and WRPs for data, apart (profile hw_watchpoint_slots).
// arm64, AArch32 (compat) tasks (profile compat_task: every simulated task is
// a 32-bit process, is_compat_thread()). is_compat_bp() is true for a per-task
// breakpoint only (bp->hw.target set); a CPU-wide one keeps the 64-bit rules
// ("we don't have the notion of a compat CPU"):
//  - X: bp_len must be 2 (Thumb) or 4 (EINVAL otherwise; no fix-up).
//    R/W/RW: 1..8 as for a 64-bit task.
//  - Alignment (hw_breakpoint_arch_parse()): the mask is 7 for bp_len 8, else
//    3; offset = bp_addr & mask must be 0, or 1-2 with bp_len 2 ("halfword
//    watchpoints and breakpoints"), or 1-3 with bp_len 1 ("single byte
//    watchpoint"); anything else EINVAL. Then the address is rounded down by
//    the mask and BAS = the length's bits shifted by the offset.
//  - TASK_SIZE is the opener's (test_thread_flag(TIF_32BIT)): TASK_SIZE_32 =
//    4 GiB - PAGE_SIZE for a compat opener, for per-task and CPU-wide events
//    alike (arch_check_bp_in_kernelspace()).
//  - What is watched: a word-aligned (not doubleword-aligned) WVR makes BAS
//    select bytes of that word only (Arm ARM, DBGWCR<n>_EL1.BAS: "a byte from
//    within the word or double-word addressed by DBGWVR"; Arm deprecates
//    DBGWVR[2] == 1), so the model watches at most those 4 bytes.
// Limits of this seam: the flag describes the tasks, not one task (the kernel
// decides per target and per opener); and the suites run in this 64-bit
// process, whose variables and code sit above TASK_SIZE_32, so under a compat
// profile every per-task breakpoint of a suite is EINVAL as a kernel address:
// the rules are checked by the model's unit tests (breakpoint_pmu_test.cc), not
// by the breakpoint suite. Nothing else of a compat task is modelled (32-bit
// sample_regs_user ABI, callchains).
#pragma once

#include <linux/perf_event.h>

#include <cstdint>
#include <string>

namespace perftest::mock {

enum class BreakpointArch { kX86_64, kArm64 };

// The rules a profile's arch follows: "aarch64"/"arm64" -> kArm64; x86_64 and
// the others (riscv64's SBI debug triggers are not modelled) -> kX86_64.
BreakpointArch BreakpointArchOf(const std::string& profile_arch);

// kernel/events/hw_breakpoint.c find_slot_idx(): a breakpoint with any
// HW_BREAKPOINT_RW bit takes a data slot (TYPE_DATA), else an instruction slot
// (TYPE_INST). Whether the two share registers is the arch's (profile
// hw_watchpoint_slots).
enum class BreakpointSlot { kInst, kData };
BreakpointSlot SlotOf(uint32_t bp_type);

enum class Access { kRead, kWrite, kExecute };

// The task side of a breakpoint, as hw_breakpoint_parse() sees it.
struct BreakpointTask {
  bool per_task = false;      // the event has a target task (bp->hw.target)
  bool compat = false;        // arm64: the tasks (target and opener) are AArch32 (profile compat_task)
  uint64_t page_size = 4096;  // PAGE_SIZE, for TASK_SIZE_32
  // is_compat_bp(): AArch32 rules apply (a compat target; CPU-wide events never).
  bool compat_bp() const { return per_task && compat; }
};

// Validates bp_type/bp_len/bp_addr (hw_breakpoint_parse()). Errors: EINVAL,
// EOPNOTSUPP as above.
int BreakpointParse(const perf_event_attr& attr, BreakpointArch arch, const BreakpointTask& task, std::string* why);
// A 64-bit task; `per_task`: the event has a target task (bp->hw.target).
inline int BreakpointParse(const perf_event_attr& attr, BreakpointArch arch, bool per_task, std::string* why) {
  return BreakpointParse(attr, arch, BreakpointTask{per_task}, why);
}
inline int BreakpointParse(const perf_event_attr& attr, BreakpointArch arch, std::string* why) {
  return BreakpointParse(attr, arch, /*per_task=*/false, why);
}

// Whether an access of `width` bytes at `addr` (kExecute: a call to `addr`)
// triggers the breakpoint described by `attr` (one that BreakpointParse() accepted for `arch`).
// `compat_bp`: arm64, BreakpointTask::compat_bp() of the event (AArch32 alignment and BAS).
bool BreakpointHits(const perf_event_attr& attr, uint64_t addr, uint32_t width, Access access,
                    BreakpointArch arch = BreakpointArch::kX86_64, bool compat_bp = false);

// hw_breakpoint_copy_attr(): the fields PERF_EVENT_IOC_MODIFY_ATTRIBUTES may
// change (bp_addr, bp_type, bp_len, disabled), copied from `from` to `to`.
void BreakpointCopyAttr(const perf_event_attr& from, perf_event_attr* to);

}  // namespace perftest::mock
