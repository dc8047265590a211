// The uprobe PMU of the sw-only profile (mocks/uprobe_pmu.h): one test per
// rule of perf_uprobe_event_init(), perf_uprobe_init(),
// create_local_trace_uprobe() and uprobe_register(), with the errno the
// kernel on the development VM returned for the same call (Linux 6.18, root,
// perf_event_paranoid=2; a perf_event_open(type=8) probe program and
// perftest fidelity). Paths are real files of any Linux host (/proc/self/exe,
// /dev/null, /tmp); UprobeEventInit() is also driven through a fake file table.
#include "mocks/uprobe_pmu.h"

#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <tuple>

#include "harness/file_mapping.h"
#include "harness/workload.h"
#include "mocks/internal/mock_test_fixture.h"

namespace perftest {
namespace {

class UprobePmu : public MockTest {
 protected:
  perf_event_attr Attr(const char* path, uint64_t offset = 0, uint64_t config = 0) {
    perf_event_attr a = MakeAttr(8, config);  // sw-only: the VM's uprobe type
    a.config1 = reinterpret_cast<uintptr_t>(path);
    a.config2 = offset;
    return a;
  }
  int Err(const perf_event_attr& a, pid_t pid = 0, int cpu = -1) {
    Result<int> r = Open(a, pid, cpu);
    return r.ok() ? 0 : r.error();
  }
};

// A file table for UprobeEventInit() alone: strings by address, inodes by path.
class FakeFiles final : public mock::UprobeFiles {
 public:
  std::map<uint64_t, std::string> strings;  // a missing address faults
  std::map<std::string, mock::UprobeInode> inodes;
  int CopyString(uint64_t addr, size_t max, std::string* out) const override {
    auto it = strings.find(addr);
    if (it == strings.end()) return EFAULT;
    if (it->second.size() >= max) return EINVAL;
    *out = it->second;
    return 0;
  }
  int Lookup(const std::string& path, mock::UprobeInode* inode) const override {
    auto it = inodes.find(path);
    if (it == inodes.end()) return ENOENT;
    *inode = it->second;
    return 0;
  }
};

TEST_F(UprobePmu, OpensOnARegularFile) {
  EXPECT_EQ(Err(Attr("/proc/self/exe")), 0) << "kern_path() follows the symlink to the executable";
  EXPECT_EQ(Err(Attr("/proc/self/exe"), -1, 0), 0) << "CPU-wide, as root";
  perf_event_attr s = Attr("/proc/self/exe");
  s.sample_period = 1;
  s.sample_type = PERF_SAMPLE_RAW | PERF_SAMPLE_IP;
  EXPECT_EQ(Err(s), 0) << "sampling with raw data: perf_trace_event_perm() allows it to CAP_PERFMON";
}

// perf_uprobe_event_init(): PERF_PROBE_CONFIG_IS_RETPROBE (config:0) picks a
// return probe; config bits 1-31 are not looked at.
TEST_F(UprobePmu, RetprobeBitAndUnusedConfigBits) {
  EXPECT_EQ(Err(Attr("/proc/self/exe", 0, mock::kPerfProbeConfigIsRetprobe)), 0);
  EXPECT_EQ(Err(Attr("/proc/self/exe", 0, 0xfffffffe)), 0);
}

// perf_uprobe_event_init(): capable(CAP_SYS_ADMIN) before anything else of the PMU.
TEST_F(UprobePmu, NeedsSysAdminEvenForOwnTask) {
  FakeFiles files;
  std::string why;
  perf_event_attr a = Attr("/x");
  EXPECT_EQ(mock::UprobeEventInit(a, /*sys_admin=*/false, 1, files, &why), EACCES) << why;
  a.config1 = 0;
  EXPECT_EQ(mock::UprobeEventInit(a, false, 1, files, &why), EACCES) << "checked before the path";
  // Through the backend: a child task keeping only CAP_PERFMON is refused (6.18).
  ChildCredentials perfmon;
  perfmon.uid = 65534;
  perfmon.caps = std::vector<int>{CAP_PERFMON};
  auto open = [&](Backend& c) {
    perf_event_attr p = Attr("/proc/self/exe");
    p.exclude_kernel = 1;
    p.exclude_hv = 1;
    Result<int> r = c.PerfEventOpen(&p, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    return r.ok() ? 0 : r.error();
  };
  EXPECT_THAT(b().RunInChild(perfmon, open), SucceedsWith(EACCES));
  perfmon.caps = std::vector<int>{CAP_SYS_ADMIN};
  EXPECT_THAT(b().RunInChild(perfmon, open), SucceedsWith(0));
}

// perf_uprobe_event_init(): "no branch sampling for probe events", before the path.
TEST_F(UprobePmu, BranchStackIsEopnotsupp) {
  perf_event_attr a = Attr(nullptr);
  a.sample_type = PERF_SAMPLE_BRANCH_STACK;
  a.branch_sample_type = PERF_SAMPLE_BRANCH_ANY;
  EXPECT_EQ(Err(a), EOPNOTSUPP);
}

// perf_uprobe_init(): no path is EINVAL, an unreadable one EFAULT, the empty one EINVAL.
TEST_F(UprobePmu, PathPointerRules) {
  EXPECT_EQ(Err(Attr(nullptr)), EINVAL);
  perf_event_attr a = Attr(nullptr);
  a.config1 = 1;  // the NULL page
  EXPECT_EQ(Err(a), EFAULT);
  a.config1 = 0x8ddf1ea626ddc6eeull;  // non-canonical (a fidelity case)
  EXPECT_EQ(Err(a), EFAULT);
  EXPECT_EQ(Err(Attr("")), EINVAL);
}

// strndup_user(path, PATH_MAX): EINVAL (reported as E2BIG) when the first
// PATH_MAX bytes hold no NUL, even if the next byte is unmapped; EFAULT only
// when an unreadable byte comes before the NUL within PATH_MAX.
TEST_F(UprobePmu, PathLengthRules) {
  const std::string long_path(mock::kPathMax, 'a');
  EXPECT_EQ(Err(Attr(long_path.c_str())), E2BIG);
  const std::string slashes(mock::kPathMax - 1, '/');
  EXPECT_EQ(Err(Attr(slashes.c_str())), EINVAL) << "4095 bytes fit: the root directory, not a regular file";

  const size_t page = 4096;
  char* mem = static_cast<char*>(mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(mem, MAP_FAILED);
  ASSERT_EQ(munmap(mem + 2 * page, page), 0);
  std::memset(mem, 'a', 2 * page);
  EXPECT_EQ(Err(Attr(mem + page)), E2BIG) << "PATH_MAX bytes without NUL right before a hole";
  EXPECT_EQ(Err(Attr(mem + page + 10)), EFAULT) << "the hole comes before PATH_MAX bytes";
  munmap(mem, 2 * page);
}

// create_local_trace_uprobe(): kern_path(LOOKUP_FOLLOW)'s errno, then d_is_reg().
TEST_F(UprobePmu, PathLookupRules) {
  EXPECT_EQ(Err(Attr("/nonexistent/perftest")), ENOENT);
  EXPECT_EQ(Err(Attr("/proc/self/exe/x")), ENOTDIR);
  EXPECT_EQ(Err(Attr("/tmp")), EINVAL) << "a directory";
  EXPECT_EQ(Err(Attr("/dev/null")), EINVAL) << "a character device";
  const std::string name = "/tmp/" + std::string(300, 'a');
  EXPECT_EQ(Err(Attr(name.c_str())), ENAMETOOLONG) << "a component past NAME_MAX";
}

// uprobe_register(): EIO for a file whose address space cannot read pages (procfs, tracefs).
TEST_F(UprobePmu, ProcfsFileIsEio) {
  EXPECT_EQ(Err(Attr("/proc/self/status")), EIO);
  FakeFiles files;
  files.strings[1] = "/sys/kernel/tracing/trace";
  files.inodes["/sys/kernel/tracing/trace"] = {S_IFREG | 0644, 0, /*readable_mapping=*/false};
  perf_event_attr a = Attr(nullptr);
  a.config1 = 1;
  std::string why;
  EXPECT_EQ(mock::UprobeEventInit(a, true, 1, files, &why), EIO) << why;
}

// uprobe_register(): offset > i_size is EINVAL; offset is a signed loff_t, so
// a "negative" config2 passes; any offset alignment does on x86.
TEST_F(UprobePmu, OffsetRules) {
  FakeFiles files;
  files.strings[1] = "/bin/f";
  files.inodes["/bin/f"] = {S_IFREG | 0755, 2, true};
  perf_event_attr a = Attr(nullptr);
  a.config1 = 1;
  std::string why;
  for (uint64_t ok : {uint64_t{0}, uint64_t{1}, uint64_t{2}, ~uint64_t{0}, uint64_t{1} << 63}) {
    a.config2 = ok;
    EXPECT_EQ(mock::UprobeEventInit(a, true, 1, files, &why), 0) << ok << ": " << why;
  }
  a.config2 = 3;
  EXPECT_EQ(mock::UprobeEventInit(a, true, 1, files, &why), EINVAL) << "past the 2-byte file";
  // IS_ALIGNED(offset, UPROBE_SWBP_INSN_SIZE): arm64's brk is 4 bytes, riscv's c.ebreak 2.
  files.inodes["/bin/f"].size = 64;
  EXPECT_EQ(mock::UprobeSwbpInsnSize("x86_64"), 1u);
  for (auto [arch, ok, bad] : {std::tuple{"aarch64", 8, 6}, std::tuple{"riscv64", 6, 5}}) {
    const uint64_t size = mock::UprobeSwbpInsnSize(arch);
    a.config2 = ok;
    EXPECT_EQ(mock::UprobeEventInit(a, true, size, files, &why), 0) << arch << ": " << why;
    a.config2 = bad;
    EXPECT_EQ(mock::UprobeEventInit(a, true, size, files, &why), EINVAL) << arch;
  }
  EXPECT_EQ(Err(Attr("/proc/self/exe", uint64_t{1} << 40)), EINVAL);
}

// uprobe_register(): IS_ALIGNED(ref_ctr_offset, sizeof(short)); ref_ctr_offset
// is config >> PERF_UPROBE_REF_CTR_OFFSET_SHIFT (32).
TEST_F(UprobePmu, RefCtrOffsetMustBeEven) {
  EXPECT_EQ(Err(Attr("/proc/self/exe", 0, uint64_t{1} << 32)), EINVAL);
  EXPECT_EQ(Err(Attr("/proc/self/exe", 0, uint64_t{2} << 32)), 0);
  EXPECT_EQ(Err(Attr("/proc/self/exe", 0, uint64_t{0xfffffffe} << 32)), 0);
}

// The event is a trace event: PERF_EVENT_IOC_SET_FILTER takes the common_*
// fields, once (EEXIST after), and refuses the probe's own __probe_ip (as the VM does).
TEST_F(UprobePmu, FiltersSeeCommonFields) {
  const int fd = MustOpen(Attr("/proc/self/exe"));
  const char* probe_ip = "__probe_ip == 0";
  EXPECT_EQ(b().Ioctl(fd, PERF_EVENT_IOC_SET_FILTER, reinterpret_cast<uintptr_t>(probe_ip)).error(), EINVAL);
  const char* pid = "common_pid == 1";
  EXPECT_OK(b().Ioctl(fd, PERF_EVENT_IOC_SET_FILTER, reinterpret_cast<uintptr_t>(pid)));
  EXPECT_EQ(b().Ioctl(fd, PERF_EVENT_IOC_SET_FILTER, reinterpret_cast<uintptr_t>(pid)).error(), EEXIST);
  EXPECT_EQ(Count(fd), 0u) << "nothing executed the probed file";
}

// Counting (mocks/mock_uprobes.cc). A probe on the Workload::Execute target,
// named by its file and offset as the kernel takes them.
class UprobeCounting : public UprobePmu {
 protected:
  void SetUp() override {
    UprobePmu::SetUp();
    Result<FileLocation> at = FileLocationOf(ExecuteTargetAddress());
    ASSERT_OK(at);
    path_ = at->path;
    offset_ = at->offset;
  }
  int Probe(uint64_t config = 0, pid_t pid = 0, int cpu = -1, const std::string* path = nullptr) {
    return MustOpen(Attr((path != nullptr ? *path : path_).c_str(), offset_, config), pid, cpu);
  }
  uint64_t CountOver(int fd, const Workload& w) {
    Enable(fd);
    Run(w);
    Disable(fd);
    return Count(fd);
  }
  std::string path_;
  uint64_t offset_ = 0;
};

// handle_swbp() -> uprobe_dispatcher() -> uprobe_perf_func(): one count per
// execution of the probed offset.
TEST_F(UprobeCounting, EntryProbeCountsEachCall) {
  const int fd = Probe();
  EXPECT_EQ(CountOver(fd, Workload::Execute(37)), 37u);
  EXPECT_EQ(CountOver(fd, Workload::Syscalls(3)), 37u) << "other code does not hit the probe";
}

// handle_trampoline() -> uretprobe_dispatcher() -> uretprobe_perf_func(): one
// count per return; the entry probe of the same place is a different event.
TEST_F(UprobeCounting, ReturnProbeCountsEachReturn) {
  const int ret = Probe(mock::kPerfProbeConfigIsRetprobe);
  const int entry = Probe();
  Enable(entry);
  EXPECT_EQ(CountOver(ret, Workload::Execute(19)), 19u);
  EXPECT_EQ(Count(entry), 19u);
}

// find_uprobe(inode, offset): another offset or another inode is another probe.
TEST_F(UprobeCounting, OnlyTheProbedInodeAndOffsetCount) {
  const int next = MustOpen(Attr(path_.c_str(), offset_ + 1));  // any offset opens on x86 (sw-only)
  EXPECT_EQ(CountOver(next, Workload::Execute(5)), 0u);
  char copy[] = "/tmp/perftest-uprobe-copy-XXXXXX";
  const int tmp = ::mkstemp(copy);
  ASSERT_GE(tmp, 0);
  ASSERT_EQ(::ftruncate(tmp, static_cast<off_t>(offset_ + 16)), 0);  // long enough for the offset
  ::close(tmp);
  const int other_inode = MustOpen(Attr(copy, offset_));
  EXPECT_EQ(CountOver(other_inode, Workload::Execute(5)), 0u) << "the same offset in another file";
  const std::string link = std::string(copy) + ".link";
  std::filesystem::create_symlink(path_, link);
  const int via_link = MustOpen(Attr(link.c_str(), offset_));
  std::filesystem::remove(link);
  std::filesystem::remove(copy);
  EXPECT_EQ(CountOver(via_link, Workload::Execute(5)), 5u) << "kern_path(LOOKUP_FOLLOW): the same inode";
}

// perf_tp_event(): only ACTIVE events see the hit — not a disabled one, not a
// CPU-wide one of another CPU (the task runs on CPU 0).
TEST_F(UprobeCounting, OnlyActiveEventsOfTheTasksCpuCount) {
  const int disabled = Probe();
  const int cpu0 = Probe(0, -1, 0);
  const int cpu1 = Probe(0, -1, 1);
  Enable(cpu1);
  EXPECT_EQ(CountOver(cpu0, Workload::Execute(6)), 6u) << "a CPU-wide probe counts any task on its CPU";
  EXPECT_EQ(Count(cpu1), 0u);
  EXPECT_EQ(Count(disabled), 0u);
}

// inherit_event() copies the probe: the child's calls fold into the parent's read.
TEST_F(UprobeCounting, InheritedCopyCountsTheChild) {
  perf_event_attr a = Attr(path_.c_str(), offset_);
  a.inherit = 1;
  a.disabled = 0;
  const int fd = MustOpen(a);
  Result<pid_t> child = b().SpawnTask();
  ASSERT_OK(child);
  EXPECT_OK(b().RunInTask(*child, Workload::Execute(8)));
  Run(Workload::Execute(3));
  EXPECT_OK(b().ExitTask(*child));
  EXPECT_EQ(Count(fd), 11u);
}

// perf_tp_event_match(): the event's filter sees the common_* fields of the hit.
TEST_F(UprobeCounting, FilterOnCommonPid) {
  const int mine = Probe();
  const int other = Probe();
  const std::string keep = "common_pid == " + std::to_string(b().CurrentTask().pid);
  const char* drop = "common_pid == 1";
  EXPECT_OK(b().Ioctl(mine, PERF_EVENT_IOC_SET_FILTER, reinterpret_cast<uintptr_t>(keep.c_str())));
  EXPECT_OK(b().Ioctl(other, PERF_EVENT_IOC_SET_FILTER, reinterpret_cast<uintptr_t>(drop)));
  Enable(other);
  EXPECT_EQ(CountOver(mine, Workload::Execute(4)), 4u);
  EXPECT_EQ(Count(other), 0u);
}

// __uprobe_perf_func(): sample ip and the raw uprobe_trace_entry_head, as the
// VM wrote them (entry: 20 bytes, vaddr[0] = ip = the probe address; return:
// 28 bytes, vaddr[0] = the function, vaddr[1] = ip = the return address; common_type 0).
TEST_F(UprobeCounting, SamplesCarryTheProbeAddresses) {
  for (bool ret : {false, true}) {
    SCOPED_TRACE(ret ? "retprobe" : "entry");
    perf_event_attr a = Attr(path_.c_str(), offset_, ret ? mock::kPerfProbeConfigIsRetprobe : 0);
    a.sample_period = 1;
    a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_RAW;
    const int fd = MustOpen(a);
    std::optional<RingBuffer> rb = Map(fd, 2);
    ASSERT_TRUE(rb.has_value());
    CountOver(fd, Workload::Execute(2));
    std::vector<SampleRecord> samples;
    for (const Record& r : Records(*rb, a)) {
      if (const auto* s = std::get_if<SampleRecord>(&r.body)) samples.push_back(*s);
    }
    ASSERT_EQ(samples.size(), 2u);
    for (const SampleRecord& s : samples) {
      ASSERT_TRUE(s.raw.has_value());
      EXPECT_EQ(s.raw->size(), ret ? 28u : 20u);
      uint64_t v0 = 0, v1 = 0;
      uint16_t type = 1;
      std::memcpy(&type, s.raw->data(), 2);
      std::memcpy(&v0, s.raw->data() + 8, 8);
      EXPECT_EQ(type, 0u);
      EXPECT_EQ(v0, ExecuteTargetAddress());
      if (ret) {
        std::memcpy(&v1, s.raw->data() + 16, 8);
        EXPECT_EQ(v1, s.ip.value_or(0));
        EXPECT_NE(v1, ExecuteTargetAddress());
      } else {
        EXPECT_EQ(s.ip.value_or(0), ExecuteTargetAddress());
      }
    }
  }
}

TEST(UprobeSite, InodeAndOffsetBothMatch) {
  const mock::UprobeTarget t{1, 2, 0x1670, false};
  EXPECT_TRUE(mock::UprobeSiteMatches(t, 1, 2, 0x1670));
  EXPECT_FALSE(mock::UprobeSiteMatches(t, 1, 2, 0x1671));
  EXPECT_FALSE(mock::UprobeSiteMatches(t, 1, 3, 0x1670)) << "another inode";
  EXPECT_FALSE(mock::UprobeSiteMatches(t, 9, 2, 0x1670)) << "the same inode number on another device";
}

}  // namespace
}  // namespace perftest
