// The profile probe: a mock arch profile (mocks/profile.h) of the machine a
// Backend runs on, so that `perftest run --backend=mock --profile=FILE`
// imitates it. `perftest doctor --write-profile=FILE` runs it on the kernel
// through perftest_write_profile (main.cc).
//
//   std::unique_ptr<Backend> kernel = MakeKernelBackend();
//   Result<MockProfile> p = ProbeProfile(*kernel, ReadHostFacts(), "host");
//   std::string json = WriteProfile(*p);
//
// What is probed, and where from:
//   arch, ncpus, page_size, perf_event_paranoid, max_sample_rate, max_stack,
//   mlock_kb, pmus       Backend::Machine() (KernelBackend: uname(2), sysconf(3),
//                        /proc/sys/kernel/perf_event_*, sysfs); only the PMU kinds
//                        MockBackend implements (ImplementedPmuKinds(): software,
//                        tracepoint, breakpoint, msr, power, uprobe, and one core
//                        PMU: cpu on Intel x86_64, armv8_pmuv3*, cpu on riscv64);
//                        the others are named in the provenance
//   kernel_release, hz, max_contexts_per_stack, privileged, memlock_rlimit_kb
//                        HostFacts (ReadHostFacts(): uname -r, CONFIG_HZ, the
//                        sysctl, CapEff, RLIMIT_MEMLOCK)
//   attr_size            perf_event_open(attr.size = 8): E2BIG, and the kernel
//                        writes its sizeof(struct perf_event_attr) back
//                        (kernel/events/core.c perf_copy_attr())
//   hw_breakpoint_slots, hw_watchpoint_slots
//                        write watchpoints opened for this task until ENOSPC;
//                        then execute breakpoints: ENOSPC at once when both
//                        share the debug registers (x86), else counted apart (arm64)
//   clock_pmu_types      the types (>= PERF_TYPE_MAX, not in sysfs) where
//                        perf_event_open(type=T, config=0|1) opens cpu-clock /
//                        task-clock (Linux 6.x registers them with dynamic types)
//   attr_aux_action      aux_start_paused (bit 0 of the word before sig_data,
//                        __reserved_3 in older headers) is EOPNOTSUPP (Linux
//                        6.13+) rather than EINVAL
//   tracepoints          Backend::TracepointId() of the tracepoints the model can
//                        fire (mock::ModelledTracepoints())
//   hardware             gp_counters: members of one group of branch-miss events
//                        (a general-purpose-only event) until the open fails;
//                        fixed counters and width from the PMU kind (CoreShape)
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "harness/backend.h"
#include "harness/result.h"
#include "mocks/profile.h"

namespace perftest::tools {

// What the profile needs of the host besides the Backend.
struct HostFacts {
  std::string kernel_release;           // uname(2) release ("uname -r")
  std::string cpu_vendor;               // /proc/cpuinfo vendor_id ("GenuineIntel"); "" elsewhere
  uint32_t max_contexts_per_stack = 8;  // /proc/sys/kernel/perf_event_max_contexts_per_stack
  uint32_t hz = 250;                    // CONFIG_HZ
  std::string hz_source;                // where hz came from, for the provenance
  bool privileged = false;              // CapEff has CAP_PERFMON (38) or CAP_SYS_ADMIN (21)
  uint32_t memlock_rlimit_kb = 0;       // RLIMIT_MEMLOCK soft limit, KiB (2^31 for unlimited)
  uid_t euid = 0;
};

// This machine's HostFacts. CONFIG_HZ comes from /boot/config-RELEASE or
// /proc/config.gz (250, the x86 and arm64 defconfig value, when neither is
// readable, said in hz_source). Never fails: an unreadable file keeps the
// default.
HostFacts ReadHostFacts();

// The profile named `name` of the machine `b` runs on (see the file comment).
// Opens and closes events through `b`; leaves none open. Errors: the errno
// of the first perf_event_open (a user-mode page-fault counter of this task)
// when it fails — EPERM under a seccomp filter, EACCES at perf_event_paranoid
// 3, ENOSYS without CONFIG_PERF_EVENTS — with a call string saying nothing
// could be probed.
Result<MockProfile> ProbeProfile(Backend& b, const HostFacts& host, std::string_view name);

}  // namespace perftest::tools
