#include "mocks/uprobe_pmu.h"

#include <fmt/format.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace perftest::mock {
namespace {

class HostFiles final : public UprobeFiles {
 public:
  int CopyString(uint64_t addr, size_t max, std::string* out) const override {
    out->clear();
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    char buf[8192];
    uint64_t at = addr;
    while (out->size() < max) {
      // One page at most per read: a fault anywhere in it fails the whole read.
      const size_t want = std::min<uint64_t>({page - at % page, max - out->size(), sizeof buf});
      iovec local{buf, want};
      iovec remote{reinterpret_cast<void*>(at), want};
      if (::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0) != static_cast<ssize_t>(want)) return EFAULT;
      const char* nul = static_cast<const char*>(std::memchr(buf, '\0', want));
      if (nul != nullptr) {
        out->append(buf, static_cast<size_t>(nul - buf));
        return 0;
      }
      out->append(buf, want);
      at += want;
    }
    return EINVAL;  // strndup_user(): no NUL within `max` bytes
  }

  int Lookup(const std::string& path, UprobeInode* inode) const override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return errno;
    inode->mode = st.st_mode;
    inode->size = st.st_size;
    inode->dev = st.st_dev;
    inode->ino = st.st_ino;
    // procfs and tracefs inodes keep empty address-space operations (no
    // read_folio): uprobe_register() says EIO for their files (seen on the
    // VM: /proc/self/status, /sys/kernel/tracing/trace; sysfs and cgroup2
    // files, kernfs, open fine). debugfs builds its inodes the same way as tracefs.
    struct statfs fs;
    inode->readable_mapping = true;
    if (::statfs(path.c_str(), &fs) == 0) {
      const auto magic = static_cast<unsigned long>(fs.f_type);
      inode->readable_mapping = magic != PROC_SUPER_MAGIC && magic != TRACEFS_MAGIC && magic != DEBUGFS_MAGIC;
    }
    return 0;
  }
};

}  // namespace

const UprobeFiles& HostUprobeFiles() {
  static const HostFiles files;
  return files;
}

const TracepointModel* UprobeTraceModel() {
  // struct uprobe_trace_entry_head: the trace_entry and one vaddr (two for a return probe).
  static const TracepointModel model{"uprobes:DUMMY_EVENT", 16, true, {}};
  return &model;
}

uint64_t UprobeSwbpInsnSize(const std::string& arch) {
  if (arch == "aarch64" || arch == "arm64") return 4;
  if (arch == "riscv64") return 2;
  return 1;
}

bool UprobeSiteMatches(const UprobeTarget& t, uint64_t dev, uint64_t ino, uint64_t offset) {
  return t.dev == dev && t.ino == ino && t.offset == offset;
}

std::vector<std::byte> UprobeRawData(bool retprobe, uint64_t func, uint64_t ip, int32_t pid) {
  // SIZEOF_TRACE_ENTRY(is_return): the 8-byte trace_entry and one or two vaddr.
  static const TracepointModel entry{"uprobes:DUMMY_EVENT", 16, true, {{"__probe_ip", 8, 8}}};
  static const TracepointModel ret{"uprobes:DUMMY_EVENT", 24, true, {{"__probe_func", 8, 8}, {"__probe_ret_ip", 16, 8}}};
  TraceValues v;
  v.numbers["common_pid"] = pid;
  if (retprobe) {
    v.numbers["__probe_func"] = static_cast<int64_t>(func);
    v.numbers["__probe_ret_ip"] = static_cast<int64_t>(ip);
  } else {
    v.numbers["__probe_ip"] = static_cast<int64_t>(ip);
  }
  return TraceRawData(retprobe ? ret : entry, 0, v);
}

int UprobeEventInit(const perf_event_attr& attr, bool sys_admin, uint64_t insn_size, const UprobeFiles& files,
                    std::string* why, UprobeTarget* target) {
  // perf_uprobe_event_init().
  if (!sys_admin) {
    *why = "uprobe events need CAP_SYS_ADMIN (perf_uprobe_event_init(): capable(CAP_SYS_ADMIN); CAP_PERFMON is not enough)";
    return EACCES;
  }
  if (attr.sample_type & PERF_SAMPLE_BRANCH_STACK) {
    *why = "no branch sampling for probe events (perf_uprobe_event_init())";
    return EOPNOTSUPP;
  }
  const uint64_t ref_ctr_offset = attr.config >> kPerfUprobeRefCtrOffsetShift;
  // perf_uprobe_init(): attr.uprobe_path is config1.
  if (attr.config1 == 0) {
    *why = "attr.uprobe_path (config1) is NULL (perf_uprobe_init())";
    return EINVAL;
  }
  std::string path;
  if (int err = files.CopyString(attr.config1, kPathMax, &path)) {
    if (err == EINVAL) {
      *why = fmt::format("the path at config1 {:#x} has no NUL in its first PATH_MAX ({}) bytes "
                         "(strndup_user() EINVAL, perf_uprobe_init() returns E2BIG)",
                         attr.config1, kPathMax);
      return E2BIG;
    }
    *why = fmt::format("the path at config1 {:#x} cannot be read (strndup_user())", attr.config1);
    return err;
  }
  if (path.empty()) {
    *why = "attr.uprobe_path (config1) is the empty string (perf_uprobe_init())";
    return EINVAL;
  }
  // create_local_trace_uprobe(): kern_path(LOOKUP_FOLLOW), then d_is_reg().
  UprobeInode inode;
  if (int err = files.Lookup(path, &inode)) {
    *why = fmt::format("kern_path(\"{}\"): {} (create_local_trace_uprobe())", path, std::strerror(err));
    return err;
  }
  if (!S_ISREG(inode.mode)) {
    *why = fmt::format("\"{}\" is not a regular file (create_local_trace_uprobe(): d_is_reg())", path);
    return EINVAL;
  }
  // uprobe_register(), through perf_trace_event_init() -> trace_uprobe_register().
  if (!inode.readable_mapping) {
    *why = fmt::format("\"{}\" has no read_folio in its address space operations (uprobe_register())", path);
    return EIO;
  }
  const auto offset = static_cast<int64_t>(attr.config2);  // loff_t
  if (offset > inode.size) {
    *why = fmt::format("probe_offset (config2) {} is past the end of \"{}\" ({} bytes; uprobe_register())", offset,
                       path, inode.size);
    return EINVAL;
  }
  if (attr.config2 % insn_size != 0) {
    *why = fmt::format("probe_offset (config2) {:#x} is not a multiple of UPROBE_SWBP_INSN_SIZE {} (uprobe_register())",
                       attr.config2, insn_size);
    return EINVAL;
  }
  if (ref_ctr_offset % sizeof(short) != 0) {
    *why = fmt::format("ref_ctr_offset (config bits 32-63) {:#x} is not 2-byte aligned (uprobe_register())",
                       ref_ctr_offset);
    return EINVAL;
  }
  if (target != nullptr) {
    *target = UprobeTarget{inode.dev, inode.ino, attr.config2, (attr.config & kPerfProbeConfigIsRetprobe) != 0};
  }
  return 0;
}

}  // namespace perftest::mock
