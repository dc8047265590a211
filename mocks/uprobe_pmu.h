// The "uprobe" PMU (kernel/events/core.c perf_uprobe, registered with
// perf_pmu_register(&perf_uprobe, "uprobe", -1): a dynamic type, 8 on this
// project's VM). One perf_event_open() creates a local uprobe trace event on
// a file: attr.config1 (uprobe_path) points at the path in the caller's
// memory, attr.config2 (probe_offset) is the file offset, attr.config bit 0
// (PERF_PROBE_CONFIG_IS_RETPROBE, sysfs format/retprobe "config:0") asks for a
// return probe and config bits 32-63 (PERF_UPROBE_REF_CTR_OFFSET_SHIFT, format/
// ref_ctr_offset "config:32-63") give the reference counter's offset.
//
//   if (int err = UprobeEventInit(attr, SysAdmin(), 1, HostUprobeFiles(), &why)) return fail(err, why);
//
// The rules, in the kernel's order, each checked on the VM (Linux 6.18, root,
// perf_event_paranoid=2; the mock's unit tests in uprobe_pmu_test.cc name them):
//   perf_uprobe_event_init()   EACCES  without capable(CAP_SYS_ADMIN), whatever perf_event_paranoid: CAP_PERFMON
//                              is not enough ("perf: Require CAP_SYS_ADMIN for uprobes", 2025, in 6.18;
//                              perfmon_capable() before it; the VM: uid 65534 with CAP_PERFMON EACCES,
//                              with CAP_SYS_ADMIN ok)
//                              EOPNOTSUPP  PERF_SAMPLE_BRANCH_STACK ("no branch sampling for probe events")
//   perf_uprobe_init()         EINVAL  config1 == 0 (no path)
//     strndup_user(PATH_MAX)   EFAULT  the path is not readable; E2BIG  no NUL in its first PATH_MAX bytes
//                              (strndup_user()'s EINVAL, which perf_uprobe_init() turns into E2BIG)
//                              EINVAL  the empty path
//   create_local_trace_uprobe() kern_path(LOOKUP_FOLLOW): its errno (ENOENT, ENOTDIR, ENAMETOOLONG, ELOOP, EACCES)
//                              EINVAL  not a regular file (a directory, a device) once symlinks are followed
//   uprobe_register()          EIO     the file's mapping has no read_folio (procfs, tracefs files)
//                              EINVAL  probe_offset > i_size (loff_t: a negative offset passes),
//                                      probe_offset not a multiple of UPROBE_SWBP_INSN_SIZE (1 on x86,
//                                      whose int3 is one byte, so never there; 4 on arm64, 2 on riscv64
//                                      with the C extension), or ref_ctr_offset odd
//                                      (IS_ALIGNED(ref_ctr_offset, sizeof(short)))
// What the model leaves out: it plants no breakpoint, so the event never
// counts (the kernel counts each execution of the probed instruction by a
// task the event watches) and install-time failures (arch_uprobe_analyze_insn()
// refusing an instruction in a process that maps the file) do not happen;
// alloc_uprobe()'s EINVAL for a second probe at the same inode and offset with
// another ref_ctr_offset is not modelled.
#pragma once

#include <linux/perf_event.h>
#include <sys/types.h>

#include <cstdint>
#include <string>

#include "mocks/tracepoint_pmu.h"

namespace perftest::mock {

// include/linux/trace_events.h and kernel/events/core.c.
inline constexpr uint64_t kPerfProbeConfigIsRetprobe = 1u << 0;
inline constexpr unsigned kPerfUprobeRefCtrOffsetShift = 32;
inline constexpr size_t kPathMax = 4096;  // PATH_MAX, with the NUL

// What kern_path() finds for a path: st_mode and i_size of the inode
// (symlinks followed), and whether its address space can read pages
// (a_ops->read_folio, or shmem).
struct UprobeInode {
  mode_t mode = 0;
  int64_t size = 0;
  bool readable_mapping = true;
};

// The caller's memory and files as the kernel sees them during the open.
class UprobeFiles {
 public:
  virtual ~UprobeFiles() = default;
  // strndup_user(addr, max): 0 and the string; EFAULT when a byte before the
  // NUL (within `max`) cannot be read; EINVAL when the first `max` bytes hold no NUL.
  virtual int CopyString(uint64_t addr, size_t max, std::string* out) const = 0;
  // kern_path(path, LOOKUP_FOLLOW): 0 and the inode, or the errno.
  virtual int Lookup(const std::string& path, UprobeInode* inode) const = 0;
};

// This process's memory (read with process_vm_readv(2), which faults like
// copy_from_user() instead of crashing) and the filesystem it sees (stat(2),
// statfs(2): procfs, tracefs and debugfs files have no read_folio; sysfs,
// cgroup2 (kernfs), tmpfs and disk files do).
const UprobeFiles& HostUprobeFiles();

// UPROBE_SWBP_INSN_SIZE of a profile's arch (arch/*/include/asm/uprobes.h):
// x86_64 1, aarch64 4 (AARCH64_INSN_SIZE), riscv64 2 (c.ebreak, CONFIG_RISCV_ISA_C).
uint64_t UprobeSwbpInsnSize(const std::string& arch);

// perf_uprobe_event_init() through uprobe_register(): 0 or the errno, with the
// rule in *why. `sys_admin` is capable(CAP_SYS_ADMIN); `insn_size` UPROBE_SWBP_INSN_SIZE.
int UprobeEventInit(const perf_event_attr& attr, bool sys_admin, uint64_t insn_size, const UprobeFiles& files,
                    std::string* why);

// The trace event a uprobe event is (create_local_trace_uprobe(): "uprobes/
// DUMMY_EVENT", never added to tracefs): PERF_EVENT_IOC_SET_FILTER sees only
// the common_* fields (a filter on __probe_ip is EINVAL on the VM, common_pid works).
const TracepointModel* UprobeTraceModel();

}  // namespace perftest::mock
