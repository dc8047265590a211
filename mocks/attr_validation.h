// Attr validation of perf_event_open(2) that depends on the attr alone (and on
// the machine's sysctls and privileges), with the kernel's errno for each bad
// input. Event-relation checks (group leader, target task, PMU) live in
// MockBackend; the software PMU's own checks in software_pmu.h.
//
//   perf_event_attr attr;                         // the kernel's copy
//   std::string why;
//   if (int err = CopyAttr(uattr, limits, &attr, &why)) return Fail(err, why);
//   if (int err = CheckOpenAttr(attr, flags, pid, cpu, limits, &why)) return Fail(err, why);
#pragma once

#include <linux/perf_event.h>
#include <linux/version.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace perftest::mock {

// A kernel release ordered as KERNEL_VERSION(major, minor, 0) orders it.
constexpr uint32_t KernelVersion(uint32_t major, uint32_t minor) { return (major << 16) | (minor << 8); }
// The release of the UAPI header this is built with (LINUX_VERSION_CODE, patch
// level dropped): what the model assumes when a profile names no kernel_release.
inline constexpr uint32_t kUapiKernelVersion = LINUX_VERSION_CODE & ~0xffu;
// "6.18", "6.1.0-18-amd64", "6.18.44-fc-v857": major.minor (the rest is
// ignored); nullopt when it does not start with two dot-separated numbers.
std::optional<uint32_t> ParseKernelRelease(std::string_view release);
// "6.18" for KernelVersion(6, 18).
std::string KernelReleaseName(uint32_t version);

// The perf_event_attr bits perf_copy_attr() of a kernel release accepts: each
// bit added to the ABI since Linux 4.12 is known from the release that added
// it (the table in attr_validation.cc cites each kernel commit); older bits
// are known to every release. Not the UAPI header this builds with: a profile
// of a newer kernel accepts bits this header does not name (e.g.
// PERF_SAMPLE_BRANCH_COUNTERS, Linux 6.8), an older one refuses bits it does.
struct AttrBits {
  uint64_t flags = 0;               // the bitfield word after read_format (disabled .. sigtrap)
  uint64_t sample_type = 0;         // < PERF_SAMPLE_MAX of that release
  uint64_t read_format = 0;         // < PERF_FORMAT_MAX of that release
  uint64_t branch_sample_type = 0;  // < PERF_SAMPLE_BRANCH_MAX of that release
  bool aux_action = false;          // aux_start_paused/aux_pause/aux_resume (Linux 6.13)
};
AttrBits AttrBitsFor(uint32_t kernel_version);

// What the checks need from the machine (the arch profile).
struct AttrLimits {
  uint32_t attr_size = sizeof(perf_event_attr);  // the kernel's sizeof(struct perf_event_attr)
  size_t page_size = 4096;
  uint32_t max_stack = 127;         // perf_event_max_stack
  uint32_t max_sample_rate = 100000;  // perf_event_max_sample_rate, Hz
  int paranoid = 2;                 // perf_event_paranoid
  bool privileged = true;           // CAP_PERFMON / CAP_SYS_ADMIN
  bool x86_64 = true;               // perf_reg_validate() flavour
  // Other arches: PERF_REG_<ARCH>_MAX (arm64 33, riscv64 32); mask bits at and
  // above it are REG_RESERVED in their perf_reg_validate(). 0: arch unknown,
  // only the empty mask is refused.
  uint32_t perf_reg_max = 0;
  bool aux_action = false;          // attr.aux_start_paused/aux_pause/aux_resume exist (Linux 6.13+)
  // The bits the kernel knows: AttrBitsFor(the profile's kernel_release);
  // by default those of the UAPI header this builds with.
  uint32_t kernel_version = kUapiKernelVersion;
  AttrBits known = AttrBitsFor(kUapiKernelVersion);
};

// The aux_action bits Linux 6.13 carved out of __reserved_3 (the UAPI
// header this builds with may still call the whole word __reserved_3):
// aux_start_paused, aux_pause, aux_resume. The rest of the word stays reserved.
inline constexpr uint32_t kAuxStartPaused = 1u << 0;
inline constexpr uint32_t kAuxPause = 1u << 1;
inline constexpr uint32_t kAuxResume = 1u << 2;
inline constexpr uint32_t kAuxActionBits = kAuxStartPaused | kAuxPause | kAuxResume;
inline bool AuxStartPaused(const perf_event_attr& a) { return (a.__reserved_3 & kAuxStartPaused) != 0; }
inline bool AuxPause(const perf_event_attr& a) { return (a.__reserved_3 & kAuxPause) != 0; }
inline bool AuxResume(const perf_event_attr& a) { return (a.__reserved_3 & kAuxResume) != 0; }

// kernel/events/core.c perf_copy_attr(): copies `uattr->size` bytes (0 means
// PERF_ATTR_SIZE_VER0) of the caller's attr into `*out`, zero-filled beyond.
// Bytes between sizeof(perf_event_attr) of this build and limits.attr_size are
// fields of a newer kernel that the model ignores.
// Errors: E2BIG when size < PERF_ATTR_SIZE_VER0, size > page size, or bytes past
//   limits.attr_size are not zero (copy_struct_from_user()); limits.attr_size is
//   then written into uattr->size. EINVAL for reserved bits, unknown
//   sample_type/read_format bits, a bad branch_sample_type, sample_regs_* the
//   arch does not have, a misaligned or too large sample_stack_user,
//   (all "unknown" and "reserved" as limits.known says: the kernel release's bits),
//   WEIGHT with WEIGHT_STRUCT, inherit_thread without inherit,
//   remove_on_exec with enable_on_exec, sigtrap without remove_on_exec.
// Sets sample_max_stack to limits.max_stack when 0. `why` says which rule.
int CopyAttr(perf_event_attr* uattr, const AttrLimits& limits, perf_event_attr* out, std::string* why);

// The checks SYSCALL_DEFINE5(perf_event_open) makes between perf_copy_attr()
// and perf_event_alloc(), in its order:
//   EINVAL  unknown `flags` bits (checked before perf_copy_attr(): call this first for flags)
//   EACCES  not privileged and perf_event_paranoid >= 3 (Debian/Android
//           perf_event_paranoid=3 patch), or exclude_kernel == 0 with
//           paranoid > 1 (perf_allow_kernel()), or attr.namespaces
//           (perfmon_capable()), or PERF_SAMPLE_PHYS_ADDR with paranoid > 1
//   EINVAL  freq and sample_freq > perf_event_max_sample_rate; !freq and
//           sample_period with bit 63 set; PERF_FLAG_PID_CGROUP with pid or cpu -1
int CheckOpenFlags(unsigned long flags, std::string* why);
int CheckOpenAttr(const perf_event_attr& attr, unsigned long flags, pid_t pid, int cpu, const AttrLimits& limits,
                  std::string* why);


// has_extended_regs(): x86_64 XMM registers in sample_regs_user/intr, which
// need a PMU with PERF_PMU_CAP_EXTENDED_REGS (else EOPNOTSUPP at open). The
// masks count whether or not sample_type has PERF_SAMPLE_REGS_USER/INTR.
bool HasExtendedRegs(const perf_event_attr& attr, bool x86_64);

// perf_event_set_clock(): the clocks attr.clockid may name. EINVAL otherwise.
int CheckClockId(int clockid);

}  // namespace perftest::mock
