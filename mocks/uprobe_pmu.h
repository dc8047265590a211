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
// Counting (mocks/mock_uprobes.cc; checked on the VM by the pmu.uprobe_counts_calls,
// uprobe_retprobe_counts_returns, uprobe_uncalled_zero, uprobe_disabled,
// uprobe_inherit, uprobe_sample_ip and uprobe_sample_retprobe cases): a uprobe sits at (inode, offset)
// (uprobes.c uprobe_register(), alloc_uprobe()), and traps whenever a task
// executes that offset of that file through any mapping of it (handle_swbp():
// find_active_uprobe() maps the trap address back through the vma,
// vaddr_to_offset()). Each hit runs uprobe_dispatcher() -> uprobe_perf_func()
// (trace_uprobe.c): __uprobe_perf_func() -> perf_trace_buf_submit(count 1) ->
// perf_tp_event(), which counts 1 on each ACTIVE event of the CPU that
// perf_tp_event_match() accepts (exclude_kernel drops nothing: the regs are
// user regs), with sample ip the probe's address (handle_swbp() sets it before
// handler_chain()). A return probe (config bit 0) hijacks the return address at
// entry (prepare_uretprobe()) and counts at the return (handle_trampoline() ->
// uretprobe_dispatcher() -> uretprobe_perf_func()), ip the caller's return
// address; its raw entry holds vaddr[0] = the function, vaddr[1] = that return
// address, an entry probe's vaddr[0] = the probe address. The VM wrote
// common_type 0 for these local events (they have no tracefs id), and raw
// sizes 20 (entry) and 28 (return).
// The task the mock simulates runs this process's code: what it executes is
// a function of this process (Workload::kExecute calls ExecuteTargetAddress()),
// so its file mapping is this process's (/proc/self/maps, harness/file_mapping.h),
// and the uprobe's inode is compared by (st_dev, st_ino).
// What the model leaves out: install-time failures (arch_uprobe_analyze_insn()
// refusing an instruction in a process that maps the file) do not happen;
// alloc_uprobe()'s EINVAL for a second probe at the same inode and offset with
// another ref_ctr_offset is not modelled; the return address a retprobe
// sample reports is a fixed stand-in (the mock does not know the real caller);
// trace_uprobe.c uprobe_perf_filter()'s per-mm filtering is moot (one
// simulated address space); only Workload::kExecute executes file-backed code
// in the model, so probes elsewhere (libc, the workloads' other code) never fire.
#pragma once

#include <linux/perf_event.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

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
  uint64_t dev = 0, ino = 0;  // st_dev, st_ino: which inode the probe sits on
};

// Where a uprobe sits and what it counts (struct trace_uprobe: the inode,
// offset, and is_ret_probe()).
struct UprobeTarget {
  uint64_t dev = 0, ino = 0;  // the inode (st_dev, st_ino), symlinks followed
  uint64_t offset = 0;        // attr.probe_offset (config2): bytes into the file
  bool retprobe = false;      // config bit 0: counts returns, not entries
};

// Whether executing the instruction at `offset` of the file (dev, ino) traps
// on the uprobe `t` (uprobes.c find_uprobe(inode, offset) in handle_swbp()).
// A retprobe is found at entry the same way; it counts at the return.
bool UprobeSiteMatches(const UprobeTarget& t, uint64_t dev, uint64_t ino, uint64_t offset);

// PERF_SAMPLE_RAW bytes of one hit (trace_uprobe.c __uprobe_perf_func(): struct
// uprobe_trace_entry_head, the local event has no fetch args): the trace_entry
// (common_type 0 as on the VM, common_pid `pid`), then vaddr[0] = `ip` for an entry
// probe; vaddr[0] = `func`, vaddr[1] = `ip` (the return address) for a return
// probe; padded as perf_trace_buf_alloc()'s callers pad.
std::vector<std::byte> UprobeRawData(bool retprobe, uint64_t func, uint64_t ip, int32_t pid);

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
// On success, *target (when not null) says where the probe sits.
int UprobeEventInit(const perf_event_attr& attr, bool sys_admin, uint64_t insn_size, const UprobeFiles& files,
                    std::string* why, UprobeTarget* target = nullptr);

// The trace event a uprobe event is (create_local_trace_uprobe(): "uprobes/
// DUMMY_EVENT", never added to tracefs): PERF_EVENT_IOC_SET_FILTER sees only
// the common_* fields (a filter on __probe_ip is EINVAL on the VM, common_pid works).
const TracepointModel* UprobeTraceModel();

}  // namespace perftest::mock
