// MockProfile: a machine for MockBackend, described as data (DESIGN.md "arch
// profile"): CPUs, page size, the perf sysctls, privileges, and the PMUs with
// their sysfs `type`, `format/*`, `events/*` and `caps/*`.
//
//   Result<MockProfile> p = LoadProfile("software-only");          // by name
//   Result<MockProfile> q = LoadProfile("/tmp/my-machine.json");   // by path
//   std::unique_ptr<Backend> b = MakeMockBackend(std::move(*p));
//   std::string text = WriteProfile(*p);  // JSON that ParseProfile reads back
//
// Profiles live in fixtures/profiles/<name>.json. A name is resolved in the
// directory named by the environment variable PERFTEST_PROFILES_DIR (the
// runner's variable too, runner/README.md), else in the directory compiled in
// by CMake (the macro PERFTEST_PROFILE_DIR: the source tree's
// fixtures/profiles). Every profile carries a `provenance`: what machine it
// models and where its numbers come from.
//
// JSON keys (all required unless a default is given):
//   name (string; default: the file's stem), arch, description, provenance (string),
//   kernel_release (string, default ""; `uname -r` of the kernel the profile describes),
//   ncpus (>= 1), page_size (power of two >= 4096),
//   perf_event_paranoid (-1..4), max_sample_rate (Hz, >= 1), max_stack (frames),
//   mlock_kb (KiB),
//   max_contexts_per_stack (default 8; /proc/sys/kernel/perf_event_max_contexts_per_stack),
//   hz (default 250; CONFIG_HZ, the scheduler tick that paces throttling),
//   kernel_release (string, default: the release of the UAPI header this was
//     built with, LINUX_VERSION_CODE): the Linux release the profile describes,
//     "major.minor" (e.g. "6.18"; a uname -r such as "6.18.44-fc-v857" is
//     accepted and kept as written). perf_copy_attr() of the mock accepts the
//     perf_event_attr bits that release knows, not those of the build's header
//     (mocks/attr_validation.h AttrBitsFor(), which cites the commit that added
//     each bit): e.g. branch_sample_type bit 19 (PERF_SAMPLE_BRANCH_COUNTERS,
//     Linux 6.8) is accepted with "6.18" and refused (EINVAL) with "6.1". It
//     also gives the defaults of attr_size and attr_aux_action below.
//   attr_size (default: 136 for kernel_release 6.3 and later (config3,
//     PERF_ATTR_SIZE_VER8), else sizeof(struct perf_event_attr) of the UAPI
//     header this was built with: the kernel's own sizeof, written back into
//     attr.size on E2BIG),
//   privileged (default true: the task has CAP_PERFMON/CAP_SYS_ADMIN/CAP_IPC_LOCK),
//   memlock_rlimit_kb (default 8192; RLIMIT_MEMLOCK, used when not privileged),
//   pmus: [{name, kind (default: name), type, format: {file: contents}, events: {...}, caps: {...}}],
//   tracepoints (default none; needs the "tracepoint" PMU): {"system:event": id},
//     the simulated tracefs events/<system>/<event>/id; only tracepoints the
//     model fires (mocks/tracepoint_pmu.h) may be listed,
//   hw_breakpoint_slots (default 4; HBP_NUM, the debug registers for breakpoints),
//   hw_watchpoint_slots (default none): without it, instruction breakpoints and
//     data watchpoints share the hw_breakpoint_slots (x86:
//     CONFIG_HAVE_MIXED_BREAKPOINTS_REGS, kernel/events/hw_breakpoint.c
//     find_slot_idx() maps both to one slot type); with it, the slots are
//     accounted per type (hw_breakpoint_slots(TYPE_INST) and (TYPE_DATA): arm64's
//     BRPs and WRPs from ID_AA64DFR0_EL1) and this is the data watchpoints' count,
//   cpu_mhz (default 1000; the simulated CPU clock: Workload::Instructions(n)
//     takes n cycles, one instruction per cycle).
//   hardware (required with a core PMU): {gp_counters, fixed_counters,
//     counter_width, max_precise, overflow_interrupt (default true),
//     mode_exclusion (default true)} of the core PMU (mocks/hardware_pmu.h).
//   clock_pmu_types (default none): {"cpu_clock": T, "task_clock": T}, the
//     dynamic types of the kernel's perf_cpu_clock/perf_task_clock PMUs
//     (perf_event_init(): perf_pmu_register(..., -1); Linux 6.x, e.g. 6 and 7):
//     perf_swevent_init() hands cpu-clock/task-clock to them (attr.type is
//     rewritten), so they open by that type too and PERF_EVENT_IOC_MODIFY_ATTRIBUTES
//     with type PERF_TYPE_SOFTWARE is EINVAL. Without the key the clocks are
//     only reachable as PERF_TYPE_SOFTWARE and MODIFY_ATTRIBUTES says EOPNOTSUPP.
//   sched_clock_counter (default none): {khz, bits (default 64), start (default 0)},
//     the hardware counter the machine's sched_clock() runs on (mocks/sched_clock.h):
//     with it, every event's user page has cap_user_time and the time_* fields
//     (x86_64: the TSC, arch_perf_update_userpage() in arch/x86/events/core.c;
//     aarch64/riscv64: the generic sched_clock's counter, with cap_user_time_short),
//     and Backend::ReadCycleCounter() reads it. Without it (a guest on
//     kvm-clock, as this project's VM) the page has no time fields.
//   attr_aux_action (default: kernel_release is 6.13 or later): the kernel knows
//     attr.aux_start_paused, aux_pause and aux_resume (Linux 6.13+, commit
//     18d92bb57c39; older kernels refuse those bits of __reserved_3 with
//     EINVAL). Set it only for a kernel that differs from its release (a backport).
//   compat_task (default false; arch aarch64 only, else EINVAL): the simulated
//     tasks are AArch32 processes on the arm64 kernel (is_compat_thread()):
//     per-task breakpoints follow the AArch32 length and alignment rules and
//     TASK_SIZE is TASK_SIZE_32 (mocks/breakpoint_pmu.h says what else is not
//     modelled, and why the suites cannot run under it).
// Only PMU kinds the mock implements may be listed (ImplementedPmuKinds()):
// "software" (type 1), "tracepoint" (2), "breakpoint" (5), and one core PMU —
// "cpu"/"intel_core" (Intel, type 4 = PERF_TYPE_RAW), "armv8_pmuv3" (a dynamic
// type >= PERF_TYPE_MAX, e.g. the PMU named armv8_pmuv3_0), "riscv_sbi" (type 4,
// named "cpu"), "intel_pt" (a dynamic type; its caps/ drive
// pt_event_valid(), mocks/intel_pt_pmu.h), and "msr" and "power" (dynamic
// types; count-only, their events/ are the configs they accept:
// mocks/free_running_pmu.h). The core PMU also takes PERF_TYPE_HARDWARE and PERF_TYPE_HW_CACHE
// (and PERF_TYPE_RAW when its own type is dynamic). Any other kind is EINVAL
// naming the kind. Profile aliases (e.g. "software-only" is "sw-only") are
// listed in fixtures/profiles/aliases.txt, which the runner reads too.
#pragma once

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/backend.h"
#include "harness/pmu.h"
#include "harness/result.h"
#include "mocks/hardware_pmu.h"

namespace perftest {

// A PMU kind MockBackend implements: its sysfs type (fixed, or dynamic), and
// whether it is the core PMU (and which driver the core model follows).
struct PmuKind {
  static constexpr int64_t kDynamicType = -1;  // perf_pmu_register(pmu, name, -1)
  const char* kind;
  int64_t type;
  bool core;
  mock::CoreKind core_kind;
};
const std::vector<PmuKind>& ImplementedPmuKinds();

struct MockProfile {
  std::string name;
  std::string arch;
  std::string description;
  std::string provenance;
  std::string kernel_release;  // uname -r of the kernel described; "" when not recorded
  int ncpus = 1;
  size_t page_size = 4096;
  int perf_event_paranoid = 2;
  uint32_t max_sample_rate = 100000;
  uint32_t max_stack = 127;
  uint32_t max_contexts_per_stack = 8;
  uint32_t mlock_kb = 516;
  uint32_t hz = 250;
  std::string kernel_release;       // as the profile says it ("6.18"); empty: the build's UAPI release
  uint32_t kernel_version = 0;      // mock::KernelVersion() of it (mock::kUapiKernelVersion when empty)
  uint32_t attr_size = sizeof(perf_event_attr);
  bool privileged = true;
  uint32_t memlock_rlimit_kb = 8192;
  std::vector<Pmu> pmus;
  std::map<std::string, uint64_t> tracepoints;  // "system:event" -> tracefs id
  uint32_t hw_breakpoint_slots = 4;
  std::optional<uint32_t> hw_watchpoint_slots;  // set: separate TYPE_INST/TYPE_DATA pools
  uint32_t cpu_mhz = 1000;  // the simulated CPU's clock; it retires one instruction per cycle
  bool has_hardware = false;        // a core PMU is listed
  uint32_t core_pmu_type = PERF_TYPE_RAW;  // its sysfs type
  mock::HardwareModel hardware;     // its counters
  uint32_t cpu_clock_type = 0;      // clock_pmu_types; 0: not modelled
  uint32_t task_clock_type = 0;
  bool attr_aux_action = false;
  bool compat_task = false;  // aarch64: the tasks are AArch32 (compat) processes
  // sched_clock_counter; khz 0: not modelled.
  struct SchedClockCounter {
    uint64_t khz = 0;
    uint32_t bits = 64;
    uint64_t start = 0;
  } sched_clock_counter;

  // Whether a PMU of this sysfs type is listed.
  bool HasPmu(uint32_t type) const;

  // The MachineInfo the backend reports (Backend::Machine()).
  MachineInfo ToMachineInfo() const;
};

// Loads a profile: `name_or_path` is a path when it ends in ".json" or contains
// '/', else a name resolved as described above.
// Errors: ENOENT no such profile (or file); EINVAL malformed JSON or a key
// missing, of the wrong type, out of range, unknown, or a PMU the mock does not
// implement — the call string names the file and the key.
Result<MockProfile> LoadProfile(std::string_view name_or_path);

// Parses profile JSON text. `origin` names the source in messages and supplies
// the default `name` (its stem). Errors: EINVAL as for LoadProfile.
Result<MockProfile> ParseProfile(std::string_view json_text, std::string_view origin);

// The profile as JSON text (2-space indented, keys in the order listed above,
// optional keys only when set) that ParseProfile() reads back into an equal
// profile: ParseProfile(WriteProfile(p)) gives p, and WriteProfile of that
// gives the same text. A PMU's `kind` is written when its name alone would
// not select its kind (the core PMU named armv8_pmuv3_0, riscv64's "cpu").
// `p` must be one ParseProfile() could return (a valid profile).
std::string WriteProfile(const MockProfile& p);

// The directory names are resolved in: $PERFTEST_PROFILES_DIR, else the compiled-in default.
std::string ProfileSearchDir();

}  // namespace perftest
