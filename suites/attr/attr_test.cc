// Conformance suite: perf_event_attr validation and perf_event_open(2)'s
// arguments — attr.size versions, reserved and unknown bits, each errno the
// syscall returns, provoked on purpose, and the PERF_FLAG_* flags.
//
// The spec is kernel/events/core.c: SYSCALL_DEFINE5(perf_event_open) (flags,
// perf_copy_attr(), the paranoid checks, pid/group_fd, perf_event_set_clock(),
// perf_check_permission()), perf_copy_attr() (size, reserved bits,
// sample_type/read_format/branch_sample_type), perf_event_alloc() (cpu,
// sigtrap, inherit, PMU, perf_cgroup_connect(), get_callchain_buffers()) and
// include/linux/uaccess.h copy_struct_from_user(); perf_event_open(2)
// "ERRORS" for the documented meaning of each errno. Software events, a
// tracepoint and breakpoints make every case run on a kernel without a
// hardware PMU; privilege is dropped in a forked child (Backend::RunInChild).
#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <linux/hw_breakpoint.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "harness/attr.h"
#include "harness/event.h"
#include "harness/syscall_matchers.h"
#include "suites/common/attrs.h"
#include "suites/common/suite.h"

namespace perftest {
namespace {

constexpr unsigned long kNoFlags = 0;
constexpr uid_t kNobody = 65534;

// A software dummy counter this task may open at any perf_event_paranoid
// below 3: exclude_kernel and exclude_hv set.
perf_event_attr Dummy() { return SoftwareCounterAttr(PERF_COUNT_SW_DUMMY); }

// An attr followed by `tail` more bytes, all zero: attr.size may cover them.
struct BigAttr {
  perf_event_attr attr;
  unsigned char tail[4096 - sizeof(perf_event_attr)];
};

// The 64-bit word of the flag bitfield (disabled .. __reserved_1), right
// after read_format.
uint64_t* FlagWord(perf_event_attr* a) {
  return reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(a) + offsetof(perf_event_attr, read_format) +
                                     sizeof(a->read_format));
}

// Bits of the flag word the UAPI defines (sigtrap, bit 37, is the last).
constexpr int kFirstReservedFlagBit = 38;

int Log2(uint64_t power_of_two) { return __builtin_ctzll(power_of_two); }

class Attr : public SuiteTest {
 protected:
  // perf_event_open(2) through the backend; a returned fd is closed at once.
  Result<int> Try(perf_event_attr* a, pid_t pid = 0, int cpu = -1, int group_fd = -1,
                  unsigned long flags = PERF_FLAG_FD_CLOEXEC) {
    Result<int> r = backend().PerfEventOpen(a, pid, cpu, group_fd, flags);
    if (r.ok()) (void)backend().Close(*r);
    return r;
  }
  Result<int> Try(perf_event_attr a, pid_t pid = 0, int cpu = -1, int group_fd = -1,
                  unsigned long flags = PERF_FLAG_FD_CLOEXEC) {
    return Try(&a, pid, cpu, group_fd, flags);
  }
  // The errno of perf_event_open(a) in a child that runs as `creds` (0 when it opens).
  Result<int> TryAs(const ChildCredentials& creds, perf_event_attr a, pid_t pid = 0, int cpu = -1) {
    return backend().RunInChild(creds, [a, pid, cpu](Backend& b) mutable {
      Result<int> r = b.PerfEventOpen(&a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
      if (!r.ok()) return r.error();
      (void)b.Close(*r);
      return 0;
    });
  }
};

// --- attr.size -------------------------------------------------------------

PERFTEST_CASE(Attr, SizeZeroMeansVer0, "attr.size_zero_is_ver0",
              "core.c perf_copy_attr(): \"if (!size) size = PERF_ATTR_SIZE_VER0\"; <linux/perf_event.h> PERF_ATTR_SIZE_VER0") {
  // sample_stack_user lies past the first 64 bytes: with size 0 it is not
  // copied, so its bad value (not a multiple of 8) cannot be refused.
  perf_event_attr a = Dummy();
  a.sample_period = 1000;
  a.sample_type = PERF_SAMPLE_STACK_USER;
  a.sample_stack_user = 7;
  static_assert(offsetof(perf_event_attr, sample_stack_user) >= PERF_ATTR_SIZE_VER0);
  EXPECT_THAT(Try(a), FailsWithErrno(EINVAL)) << "with the full size the bad sample_stack_user is seen";
  a.size = 0;
  EXPECT_THAT(Try(a), Succeeds()) << "size 0 copies VER0's 64 bytes only";
  a.size = PERF_ATTR_SIZE_VER0;
  EXPECT_THAT(Try(a), Succeeds()) << "size 64: the same";
}

PERFTEST_CASE(Attr, EachPublishedSizeOpens, "attr.size_versions",
              "<linux/perf_event.h> PERF_ATTR_SIZE_VER0..VER7; core.c perf_copy_attr() -> copy_struct_from_user()") {
  for (uint32_t size : {PERF_ATTR_SIZE_VER0, PERF_ATTR_SIZE_VER1, PERF_ATTR_SIZE_VER2, PERF_ATTR_SIZE_VER3,
                        PERF_ATTR_SIZE_VER4, PERF_ATTR_SIZE_VER5, PERF_ATTR_SIZE_VER6, PERF_ATTR_SIZE_VER7}) {
    perf_event_attr a = Dummy();
    a.size = size;
    EXPECT_THAT(Try(a), Succeeds()) << "attr.size " << size;
  }
}

PERFTEST_CASE(Attr, UnalignedSizeAccepted, "attr.size_unaligned",
              "include/linux/uaccess.h copy_struct_from_user(): any size in [VER0, PAGE_SIZE], no alignment rule") {
  perf_event_attr a = Dummy();
  a.size = PERF_ATTR_SIZE_VER0 + 1;
  EXPECT_THAT(Try(a), Succeeds());
  a.size = sizeof(perf_event_attr) - 3;
  EXPECT_THAT(Try(a), Succeeds());
}

PERFTEST_CASE(Attr, LargerSizeWithZeroTailAccepted, "attr.size_larger_zero_tail",
              "copy_struct_from_user(): bytes past the kernel's struct must be zero (check_zeroed_user())") {
  BigAttr big{};
  big.attr = Dummy();
  big.attr.size = sizeof big;  // a page: larger than any kernel's perf_event_attr
  EXPECT_THAT(Try(&big.attr), Succeeds());
  big.attr.size = sizeof(perf_event_attr) + 64;
  EXPECT_THAT(Try(&big.attr), Succeeds());
}

PERFTEST_CASE(Attr, NonZeroTailIsE2BIGWithSizeWrittenBack, "attr.size_e2big_writeback",
              "core.c perf_copy_attr(): E2BIG -> put_user(sizeof(*attr), &uattr->size); perf_event_open(2) E2BIG") {
  BigAttr big{};
  big.attr = Dummy();
  big.attr.size = sizeof big;
  big.tail[sizeof big.tail - 1] = 1;
  EXPECT_THAT(Try(&big.attr), FailsWithErrno(E2BIG));
  const uint32_t kernel_size = big.attr.size;
  EXPECT_GE(kernel_size, sizeof(perf_event_attr)) << "the kernel knows at least this UAPI's fields";
  EXPECT_LT(kernel_size, sizeof big) << "attr.size now holds the kernel's own sizeof(struct perf_event_attr)";
  EXPECT_EQ(kernel_size % 8, 0u);
  // That size is exact: a non-zero byte right past it is refused, a zero tail up to it is not.
  big.tail[sizeof big.tail - 1] = 0;
  auto* bytes = reinterpret_cast<unsigned char*>(&big);
  big.attr.size = kernel_size;
  EXPECT_THAT(Try(&big.attr), Succeeds()) << "size " << kernel_size;
  bytes[kernel_size] = 1;
  big.attr.size = kernel_size + 8;
  EXPECT_THAT(Try(&big.attr), FailsWithErrno(E2BIG)) << "byte " << kernel_size << " is past the kernel's struct";
  EXPECT_EQ(big.attr.size, kernel_size);
}

PERFTEST_CASE(Attr, SizeBelowVer0IsE2BIG, "attr.size_too_small",
              "core.c perf_copy_attr(): \"if (size < PERF_ATTR_SIZE_VER0) goto err_size\" -> E2BIG, size written back") {
  for (uint32_t size : {1u, 32u, uint32_t{PERF_ATTR_SIZE_VER0 - 1}}) {
    perf_event_attr a = Dummy();
    a.size = size;
    EXPECT_THAT(Try(&a), FailsWithErrno(E2BIG)) << "attr.size " << size;
    EXPECT_GE(a.size, sizeof(perf_event_attr)) << "the kernel's size is written back";
  }
}

PERFTEST_CASE(Attr, SizeAbovePageIsE2BIG, "attr.size_above_page",
              "core.c perf_copy_attr(): \"if (size > PAGE_SIZE) goto err_size\" -> E2BIG") {
  struct {
    BigAttr big;
    unsigned char more[8];
  } huge{};
  huge.big.attr = Dummy();
  huge.big.attr.size = static_cast<uint32_t>(backend().Machine().page_size) + 1;
  ASSERT_LE(huge.big.attr.size, sizeof huge);
  EXPECT_THAT(Try(&huge.big.attr), FailsWithErrno(E2BIG));
}

// --- reserved and unknown bits --------------------------------------------

PERFTEST_CASE(Attr, Reserved1BitsAreEINVAL, "attr.reserved_1",
              "core.c perf_copy_attr(): \"if (attr->__reserved_1) return -EINVAL\" (the flag word's bits after sigtrap)") {
  for (int bit = kFirstReservedFlagBit; bit < 64; ++bit) {
    perf_event_attr a = Dummy();
    *FlagWord(&a) |= uint64_t{1} << bit;
    EXPECT_THAT(Try(a), FailsWithErrno(EINVAL)) << "flag word bit " << bit;
  }
}

PERFTEST_CASE(Attr, Reserved2IsEINVAL, "attr.reserved_2",
              "core.c perf_copy_attr(): \"if (attr->__reserved_2) return -EINVAL\"") {
  for (int bit = 0; bit < 16; ++bit) {
    perf_event_attr a = Dummy();
    a.__reserved_2 = static_cast<uint16_t>(1u << bit);
    EXPECT_THAT(Try(a), FailsWithErrno(EINVAL)) << "__reserved_2 bit " << bit;
  }
}

PERFTEST_CASE(Attr, Reserved3HighBitsAreEINVAL, "attr.reserved_3",
              "core.c perf_copy_attr(): __reserved_3 must be 0; since 6.13 its low 3 bits are aux_action "
              "(aux_start_paused, aux_pause, aux_resume), the rest stay reserved") {
  for (int bit = 3; bit < 32; ++bit) {
    perf_event_attr a = Dummy();
    a.__reserved_3 = 1u << bit;
    EXPECT_THAT(Try(a), FailsWithErrno(EINVAL)) << "__reserved_3 bit " << bit;
  }
}

PERFTEST_CASE(Attr, AuxActionBitsOnANonAuxPmu, "attr.aux_action",
              "core.c perf_event_alloc() (Linux 6.13+, aux_action carved out of __reserved_3): aux_output without "
              "PERF_PMU_CAP_AUX_OUTPUT -> EOPNOTSUPP; aux_pause with aux_resume -> EINVAL; aux_start_paused without "
              "PERF_PMU_CAP_AUX_PAUSE -> EOPNOTSUPP; perf_event_open(): has_aux_action() -> perf_get_aux_event() "
              "finds no AUX leader -> EINVAL") {
  constexpr uint32_t kStartPaused = 1, kPause = 2, kResume = 4;  // bits 0-2 of the word after __reserved_2
  perf_event_attr probe = Dummy();
  probe.__reserved_3 = kStartPaused;
  Result<int> r = Try(probe);
  if (!r.ok() && r.error() == EINVAL) {
    PERFTEST_SKIP(SkipClass::kKernelVersion,
                  "the kernel refuses aux_start_paused as a reserved bit: aux_action needs Linux 6.13+ (" +
                      r.ToString() + ")");
  }
  const struct {
    uint32_t bits;
    int err;
  } cases[] = {
      {kStartPaused, EOPNOTSUPP},         {kPause, EINVAL},
      {kResume, EINVAL},                  {kStartPaused | kPause, EOPNOTSUPP},
      {kStartPaused | kResume, EOPNOTSUPP}, {kPause | kResume, EINVAL},
      {kStartPaused | kPause | kResume, EINVAL},
  };
  for (const auto& c : cases) {
    perf_event_attr a = Dummy();
    a.__reserved_3 = c.bits;
    EXPECT_THAT(Try(a), FailsWithErrno(c.err)) << "aux_action " << c.bits;
    a.aux_output = 1;
    EXPECT_THAT(Try(a), FailsWithErrno(EOPNOTSUPP)) << "aux_action " << c.bits << " with aux_output";
  }
}

PERFTEST_CASE(Attr, TracepointIdNoEventHasIsEINVAL, "attr.tracepoint_unknown_id",
              "kernel/trace/trace_event_perf.c perf_trace_init(): no trace event has attr.config as its id -> EINVAL") {
  for (uint64_t id : {uint64_t{0xffffffff}, uint64_t{1} << 40}) {
    perf_event_attr a = MakeAttr(PERF_TYPE_TRACEPOINT, id);
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    EXPECT_THAT(Try(a), FailsWithErrno(EINVAL)) << "tracepoint id " << id;
  }
}

PERFTEST_CASE(Attr, SideBandBitsOpenOnDummy, "attr.side_band_bits",
              "<linux/perf_event.h> mmap, comm, task, mmap_data, sample_id_all, mmap2, comm_exec, context_switch, "
              "ksymbol, bpf_event, cgroup, text_poke, build_id: accepted on a dummy event (perf_copy_attr() has no "
              "rule for them)") {
  perf_event_attr a = Dummy();
  a.mmap = a.comm = a.task = a.mmap_data = a.sample_id_all = a.mmap2 = a.comm_exec = a.context_switch = 1;
  a.ksymbol = a.bpf_event = a.cgroup = a.text_poke = a.build_id = 1;
  EXPECT_THAT(Try(a), Succeeds());
  a = Dummy();
  a.build_id = 1;  // without mmap2 it has nothing to change
  EXPECT_THAT(Try(a), Succeeds()) << "build_id alone";
}

PERFTEST_CASE(Attr, SampleRegsUserOnX86, "attr.sample_regs_user_x86",
              "arch/x86/kernel/perf_regs.c perf_reg_validate(): DS/ES/FS/GS and bits 24-31 -> EINVAL; core.c "
              "perf_try_init_event(): XMM registers (bit 32+) without PERF_PMU_CAP_EXTENDED_REGS -> EOPNOTSUPP") {
  if (backend().Machine().arch != "x86_64") {
    PERFTEST_SKIP(SkipClass::kUnsupported, "x86_64 register numbering; this machine is " + backend().Machine().arch);
  }
  perf_event_attr a = Dummy();
  a.sample_period = 1000;
  a.sample_type = PERF_SAMPLE_REGS_USER;
  a.sample_regs_user = 1;  // AX
  EXPECT_THAT(Try(a), Succeeds()) << "AX";
  a.sample_regs_user = uint64_t{1} << 12;  // PERF_REG_X86_DS
  EXPECT_THAT(Try(a), FailsWithErrno(EINVAL)) << "DS";
  a.sample_regs_user = uint64_t{1} << 30;
  EXPECT_THAT(Try(a), FailsWithErrno(EINVAL)) << "reserved bit 30";
  a.sample_regs_user = uint64_t{1} << 33;  // PERF_REG_X86_XMM0's upper half
  EXPECT_THAT(Try(a), FailsWithErrno(EOPNOTSUPP)) << "XMM on the software PMU";
}

PERFTEST_CASE(Attr, UnknownSampleTypeBitsAreEINVAL, "attr.sample_type_unknown",
              "core.c perf_copy_attr(): \"if (attr->sample_type & ~(PERF_SAMPLE_MAX-1)) return -EINVAL\"") {
  for (int bit = Log2(PERF_SAMPLE_MAX); bit < 64; ++bit) {
    perf_event_attr a = Dummy();
    a.sample_type = uint64_t{1} << bit;
    EXPECT_THAT(Try(a), FailsWithErrno(EINVAL)) << "sample_type bit " << bit;
  }
}

PERFTEST_CASE(Attr, UnknownReadFormatBitsAreEINVAL, "attr.read_format_unknown",
              "core.c perf_copy_attr(): \"if (attr->read_format & ~(PERF_FORMAT_MAX-1)) return -EINVAL\"") {
  for (int bit = Log2(PERF_FORMAT_MAX); bit < 64; ++bit) {
    perf_event_attr a = Dummy();
    a.read_format = uint64_t{1} << bit;
    EXPECT_THAT(Try(a), FailsWithErrno(EINVAL)) << "read_format bit " << bit;
  }
}

PERFTEST_CASE(Attr, UnknownBranchSampleTypeBitsAreEINVAL, "attr.branch_sample_type_unknown",
              "core.c perf_copy_attr(): \"if (mask & ~(PERF_SAMPLE_BRANCH_MAX - 1)) return -EINVAL\"; a mask of "
              "privilege levels alone is EINVAL") {
  // Bit 19 (PERF_SAMPLE_BRANCH_COUNTERS, Linux 6.8) may be newer than this
  // UAPI header: start above it, where no kernel defines a branch type.
  for (int bit = 20; bit < 64; ++bit) {
    perf_event_attr a = Dummy();
    a.sample_type = PERF_SAMPLE_BRANCH_STACK;
    a.branch_sample_type = PERF_SAMPLE_BRANCH_ANY | (uint64_t{1} << bit);
    EXPECT_THAT(Try(a), FailsWithErrno(EINVAL)) << "branch_sample_type bit " << bit;
  }
  perf_event_attr a = Dummy();
  a.sample_type = PERF_SAMPLE_BRANCH_STACK;
  a.branch_sample_type = PERF_SAMPLE_BRANCH_USER;
  EXPECT_THAT(Try(a), FailsWithErrno(EINVAL)) << "privilege levels but no branch type";
}

// --- each errno, on purpose -------------------------------------------------

PERFTEST_CASE(Attr, EfaultForUnreadableAttr, "attr.efault",
              "core.c perf_copy_attr(): get_user(size, &uattr->size) faults -> EFAULT; perf_event_open(2) EFAULT") {
  EXPECT_THAT(backend().PerfEventOpen(nullptr, 0, -1, -1, kNoFlags), FailsWithErrno(EFAULT));
  EXPECT_THAT(backend().PerfEventOpen(nullptr, 0, -1, -1, uint64_t{1} << 20), FailsWithErrno(EINVAL))
      << "unknown flags are checked before the attr is read";
}

PERFTEST_CASE(Attr, EbadfForGroupFdThatIsNoEvent, "attr.ebadf_group_fd",
              "SYSCALL_DEFINE5(perf_event_open): \"if (!is_perf_file(group)) err = -EBADF\"") {
  EXPECT_THAT(Try(Dummy(), 0, -1, STDIN_FILENO), FailsWithErrno(EBADF)) << "an fd that is not a perf event";
  ASSERT_OK_AND_ASSIGN(Event leader, Event::Open(backend(), Dummy()));
  const int closed = leader.fd();
  ASSERT_OK(leader.Close());
  EXPECT_THAT(Try(Dummy(), 0, -1, closed), FailsWithErrno(EBADF)) << "a closed group leader's fd";
}

PERFTEST_CASE(Attr, EinvalForNoTaskAndNoCpu, "attr.einval_pid_cpu",
              "core.c perf_event_alloc(): \"if ((unsigned)cpu >= nr_cpu_ids) { if (!task || cpu != -1) return -EINVAL\"") {
  EXPECT_THAT(Try(Dummy(), -1, -1), FailsWithErrno(EINVAL)) << "pid -1 with cpu -1";
  const int ncpus = backend().Machine().ncpus;
  EXPECT_THAT(Try(Dummy(), 0, ncpus + 1000), FailsWithErrno(EINVAL)) << "cpu past nr_cpu_ids";
  EXPECT_THAT(Try(Dummy(), 0, -2), FailsWithErrno(EINVAL)) << "cpu -2";
  EXPECT_THAT(Try(Dummy(), 0, ncpus - 1), Succeeds()) << "the last CPU";
}

PERFTEST_CASE(Attr, EsrchForMissingTask, "attr.esrch",
              "SYSCALL_DEFINE5(perf_event_open): find_lively_task_by_vpid() -> ESRCH; perf_event_open(2) ESRCH") {
  EXPECT_THAT(Try(Dummy(), INT_MAX), FailsWithErrno(ESRCH)) << "a pid above pid_max";
  ASSERT_OK_AND_ASSIGN(WorkloadResult w, backend().RunWorkload(Workload::Fork(1)));
  ASSERT_EQ(w.children.size(), 1u);
  EXPECT_THAT(Try(Dummy(), w.children[0]), FailsWithErrno(ESRCH)) << "a child that exited and was reaped";
}

PERFTEST_CASE(Attr, EnoentForUnknownTypeOrConfig, "attr.enoent",
              "core.c perf_init_event(): no PMU accepts the type -> ENOENT; perf_swevent_init(): config >= "
              "PERF_COUNT_SW_MAX -> ENOENT") {
  uint32_t max_type = PERF_TYPE_MAX;
  for (const Pmu& p : backend().Machine().pmus) max_type = std::max(max_type, p.type);
  perf_event_attr a = Dummy();
  a.type = max_type + 1000;
  EXPECT_THAT(Try(a), FailsWithErrno(ENOENT)) << "type " << a.type;
  a = Dummy();
  a.config = PERF_COUNT_SW_MAX;
  EXPECT_THAT(Try(a), FailsWithErrno(ENOENT)) << "software config PERF_COUNT_SW_MAX";
}

PERFTEST_CASE(Attr, EnospcWhenBreakpointSlotsRunOut, "attr.enospc",
              "kernel/events/hw_breakpoint.c reserve_bp_slot(): no free debug register -> ENOSPC") {
  alignas(8) static volatile uint64_t targets[64];
  std::vector<Event> held;
  Result<int> last = Result<int>::Failure(0);
  for (int i = 0; i < 64; ++i) {
    perf_event_attr a = MakeAttr(PERF_TYPE_BREAKPOINT, 0);
    a.bp_type = HW_BREAKPOINT_W;
    a.bp_addr = reinterpret_cast<uint64_t>(&targets[i]);
    a.bp_len = HW_BREAKPOINT_LEN_8;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    Result<Event> ev = Event::Open(backend(), a);
    if (!ev.ok()) {
      last = Result<int>::FailureFrom(ev);
      break;
    }
    held.push_back(std::move(*ev));
  }
  EXPECT_GE(held.size(), 1u) << "at least one breakpoint slot";
  EXPECT_LT(held.size(), 64u) << "slots are finite";
  EXPECT_THAT(last, FailsWithErrno(ENOSPC)) << "after " << held.size() << " breakpoints";
  held.pop_back();
  perf_event_attr again = MakeAttr(PERF_TYPE_BREAKPOINT, 0);
  again.bp_type = HW_BREAKPOINT_W;
  again.bp_addr = reinterpret_cast<uint64_t>(&targets[63]);
  again.bp_len = HW_BREAKPOINT_LEN_8;
  again.exclude_kernel = 1;
  again.exclude_hv = 1;
  EXPECT_THAT(Try(again), Succeeds()) << "a freed slot is reusable";
}

PERFTEST_CASE(Attr, EoverflowForSampleMaxStackPastSysctl, "attr.eoverflow",
              "core.c perf_event_alloc() -> get_callchain_buffers(): sample_max_stack > "
              "kernel.perf_event_max_stack -> EOVERFLOW") {
  const uint32_t max_stack = backend().Machine().max_stack;
  ASSERT_LT(max_stack, 65535u);
  perf_event_attr a = Dummy();
  a.sample_period = 1000;
  a.sample_type = PERF_SAMPLE_CALLCHAIN;
  a.sample_max_stack = static_cast<uint16_t>(max_stack + 1);
  EXPECT_THAT(Try(a), FailsWithErrno(EOVERFLOW));
  a.sample_max_stack = static_cast<uint16_t>(max_stack);
  EXPECT_THAT(Try(a), Succeeds()) << "exactly perf_event_max_stack";
  a.sample_max_stack = static_cast<uint16_t>(max_stack + 1);
  a.sample_type = PERF_SAMPLE_IP;
  EXPECT_THAT(Try(a), Succeeds()) << "no PERF_SAMPLE_CALLCHAIN: the limit does not apply";
}

PERFTEST_CASE(Attr, EopnotsuppForCapabilityThePmuLacks, "attr.eopnotsupp",
              "core.c perf_event_alloc(): aux_output without PERF_PMU_CAP_AUX_OUTPUT -> EOPNOTSUPP; "
              "perf_swevent_init(): has_branch_stack() -> EOPNOTSUPP") {
  perf_event_attr a = Dummy();
  a.aux_output = 1;
  EXPECT_THAT(Try(a), FailsWithErrno(EOPNOTSUPP)) << "aux_output on the software PMU";
  a = Dummy();
  a.sample_period = 1000;
  a.sample_type = PERF_SAMPLE_BRANCH_STACK;
  a.branch_sample_type = PERF_SAMPLE_BRANCH_ANY;
  EXPECT_THAT(Try(a), FailsWithErrno(EOPNOTSUPP)) << "branch stack sampling on the software PMU";
}

PERFTEST_CASE(Attr, EmfileWhenNoFdIsLeft, "attr.emfile",
              "SYSCALL_DEFINE5(perf_event_open): get_unused_fd_flags() -> EMFILE past RLIMIT_NOFILE") {
  ChildCredentials c;
  c.rlimit_nofile = 64;
  Result<int> r = backend().RunInChild(c, [](Backend& b) {
    for (int i = 0; i < 128; ++i) {
      perf_event_attr a = Dummy();
      Result<int> fd = b.PerfEventOpen(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
      if (!fd.ok()) return i == 0 ? -fd.error() : fd.error();  // negative: not even one opened
    }
    return 0;  // never ran out
  });
  EXPECT_THAT(r, SucceedsWith(EMFILE)) << "events open until RLIMIT_NOFILE=64 is reached";
}

PERFTEST_CASE(Attr, EaccesForKernelProfilingUnprivileged, "attr.eacces",
              "SYSCALL_DEFINE5(perf_event_open): !exclude_kernel -> perf_allow_kernel(): EACCES when "
              "perf_event_paranoid > 1 and !perfmon_capable()") {
  const int paranoid = backend().Machine().perf_event_paranoid;
  if (paranoid <= 1) {
    PERFTEST_SKIP(SkipClass::kPermission,
                  fmt::format("perf_event_paranoid={} lets every user profile the kernel: no EACCES to provoke", paranoid));
  }
  perf_event_attr a = Dummy();
  a.exclude_kernel = 0;
  ChildCredentials nobody;
  nobody.uid = kNobody;
  Result<int> r = TryAs(nobody, a);
  if (!r.ok() && r.error() == EPERM) {
    PERFTEST_SKIP(SkipClass::kPermission, "a child cannot become uid 65534 (needs CAP_SETUID): " + r.ToString());
  }
  EXPECT_THAT(r, SucceedsWith(EACCES));
}

PERFTEST_CASE(Attr, EpermForRawTracepointDataUnprivileged, "attr.eperm",
              "kernel/trace/trace_event_perf.c perf_trace_event_perm(): PERF_SAMPLE_RAW -> perf_allow_tracepoint(): "
              "EPERM when perf_event_paranoid > -1 and !perfmon_capable()") {
  const int paranoid = backend().Machine().perf_event_paranoid;
  if (paranoid <= -1) {
    PERFTEST_SKIP(SkipClass::kPermission, "perf_event_paranoid=-1 allows raw tracepoint data to everyone");
  }
  PERFTEST_ASSIGN_OR_SKIP(uint64_t id, backend().TracepointId("sched", "sched_switch"), "tracepoint sched:sched_switch");
  perf_event_attr a = MakeAttr(PERF_TYPE_TRACEPOINT, id);
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  a.sample_period = 1;
  a.sample_type = PERF_SAMPLE_RAW;
  ChildCredentials nobody;
  nobody.uid = kNobody;
  Result<int> r = TryAs(nobody, a);
  if (!r.ok() && r.error() == EPERM) {
    PERFTEST_SKIP(SkipClass::kPermission, "a child cannot become uid 65534 (needs CAP_SETUID): " + r.ToString());
  }
  EXPECT_THAT(r, SucceedsWith(paranoid >= 3 ? EACCES : EPERM));
}

// --- flags -----------------------------------------------------------------

PERFTEST_CASE(Attr, UnknownFlagBitsAreEINVAL, "attr.flags_unknown",
              "SYSCALL_DEFINE5(perf_event_open): \"if (flags & ~PERF_FLAG_ALL) return -EINVAL\"") {
  for (int bit = 4; bit < 64; ++bit) {
    EXPECT_THAT(Try(Dummy(), 0, -1, -1, uint64_t{1} << bit), FailsWithErrno(EINVAL)) << "flags bit " << bit;
  }
}

PERFTEST_CASE(Attr, FdCloexecSetsFdCloexec, "attr.flag_fd_cloexec",
              "SYSCALL_DEFINE5(perf_event_open): PERF_FLAG_FD_CLOEXEC -> O_CLOEXEC for get_unused_fd_flags()") {
  RecordDivergence("attr.flags_used",
                   "perf-design.txt (perf_event_open() parameters): \"The 'flags' parameter is currently unused and "
                   "must be zero.\"",
                   "SYSCALL_DEFINE5(perf_event_open): PERF_FLAG_FD_NO_GROUP, FD_OUTPUT, PID_CGROUP and FD_CLOEXEC "
                   "(PERF_FLAG_ALL) are accepted; only other bits give EINVAL");
  perf_event_attr a = Dummy();
  ASSERT_OK_AND_ASSIGN(int with, backend().PerfEventOpen(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
  ASSERT_OK_AND_ASSIGN(int without, backend().PerfEventOpen(&a, 0, -1, -1, kNoFlags));
  EXPECT_THAT(backend().Fcntl(with, F_GETFD, 0), SucceedsWith(FD_CLOEXEC));
  EXPECT_THAT(backend().Fcntl(without, F_GETFD, 0), SucceedsWith(0));
  ASSERT_OK(backend().Close(with));
  ASSERT_OK(backend().Close(without));
}

PERFTEST_CASE(Attr, FdNoGroupOpensASingleton, "attr.flag_fd_no_group",
              "SYSCALL_DEFINE5(perf_event_open): PERF_FLAG_FD_NO_GROUP -> group_leader = NULL") {
  perf_event_attr leader_attr = Dummy();
  leader_attr.read_format = PERF_FORMAT_GROUP;
  ASSERT_OK_AND_ASSIGN(Event leader, Event::Open(backend(), leader_attr));
  perf_event_attr m = Dummy();
  ASSERT_OK_AND_ASSIGN(int alone, backend().PerfEventOpen(&m, 0, -1, leader.fd(),
                                                          PERF_FLAG_FD_NO_GROUP | PERF_FLAG_FD_CLOEXEC));
  ASSERT_OK_AND_ASSIGN(ReadValues v, leader.Read(2));
  EXPECT_EQ(v.counters.size(), 1u) << "the group read holds the leader alone";
  ASSERT_OK(backend().Close(alone));
  ASSERT_OK_AND_ASSIGN(int member, backend().PerfEventOpen(&m, 0, -1, leader.fd(), PERF_FLAG_FD_CLOEXEC));
  ASSERT_OK_AND_ASSIGN(ReadValues w, leader.Read(2));
  EXPECT_EQ(w.counters.size(), 2u) << "without the flag the event joins the group";
  ASSERT_OK(backend().Close(member));
}

PERFTEST_CASE(Attr, FdOutputRedirectsToGroupFd, "attr.flag_fd_output",
              "SYSCALL_DEFINE5(perf_event_open): PERF_FLAG_FD_OUTPUT -> perf_event_set_output(event, group_leader), "
              "which needs a mapped target buffer (ring_buffer_get()) and refuses events on different clocks (EINVAL)") {
  perf_event_attr target_attr = Dummy();
  target_attr.use_clockid = 1;
  target_attr.clockid = CLOCK_MONOTONIC_RAW;
  ASSERT_OK_AND_ASSIGN(Event target, Event::Open(backend(), target_attr));
  EXPECT_THAT(Try(target_attr, 0, -1, target.fd(), PERF_FLAG_FD_OUTPUT | PERF_FLAG_FD_NO_GROUP | PERF_FLAG_FD_CLOEXEC),
              FailsWithErrno(EINVAL))
      << "FD_OUTPUT to an event without a buffer";
  const size_t len = 2 * backend().Machine().page_size;
  ASSERT_OK_AND_ASSIGN(void* map, backend().Mmap(len, PROT_READ | PROT_WRITE, MAP_SHARED, target.fd(), 0));
  perf_event_attr other_clock = Dummy();  // local_clock(): not the target's clock
  EXPECT_THAT(Try(other_clock, 0, -1, target.fd(), PERF_FLAG_FD_NO_GROUP | PERF_FLAG_FD_CLOEXEC), Succeeds())
      << "without FD_OUTPUT nothing is redirected";
  EXPECT_THAT(Try(other_clock, 0, -1, target.fd(), PERF_FLAG_FD_OUTPUT | PERF_FLAG_FD_NO_GROUP | PERF_FLAG_FD_CLOEXEC),
              FailsWithErrno(EINVAL))
      << "FD_OUTPUT to an event of another clock";
  EXPECT_THAT(Try(target_attr, 0, -1, target.fd(), PERF_FLAG_FD_OUTPUT | PERF_FLAG_FD_NO_GROUP | PERF_FLAG_FD_CLOEXEC),
              Succeeds())
      << "FD_OUTPUT to a compatible event with a buffer";
  ASSERT_OK(backend().Munmap(map, len));
}

PERFTEST_CASE(Attr, PidCgroupNeedsACpu, "attr.flag_pid_cgroup_cpu",
              "SYSCALL_DEFINE5(perf_event_open): \"(flags & PERF_FLAG_PID_CGROUP) && (pid == -1 || cpu == -1)\" -> EINVAL") {
  EXPECT_THAT(Try(Dummy(), 0, -1, -1, PERF_FLAG_PID_CGROUP), FailsWithErrno(EINVAL)) << "cpu -1";
  EXPECT_THAT(Try(Dummy(), -1, 0, -1, PERF_FLAG_PID_CGROUP), FailsWithErrno(EINVAL)) << "pid -1";
}

// The mount point of the cgroup v2 hierarchy, from /proc/self/mounts.
std::optional<std::string> Cgroup2Mount() {
  std::ifstream in("/proc/self/mounts");
  std::string dev, dir, type, rest;
  while (in >> dev >> dir >> type && std::getline(in, rest)) {
    if (type == "cgroup2") return dir;
  }
  return std::nullopt;
}

PERFTEST_CASE(Attr, PidCgroupTakesACgroupDirectory, "attr.flag_pid_cgroup",
              "core.c perf_cgroup_connect(): pid is an fd of a cgroup directory with the perf_event controller; "
              "another fd -> EBADF") {
  const std::optional<std::string> mount = Cgroup2Mount();
  if (!mount) PERFTEST_SKIP(SkipClass::kUnsupported, "no cgroup v2 hierarchy is mounted (/proc/self/mounts)");
  const int cg = ::open(mount->c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(cg, 0) << *mount;
  const int tmp = ::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(tmp, 0);
  perf_event_attr a = Dummy();
  Result<int> on_cgroup = Try(a, cg, 0, -1, PERF_FLAG_PID_CGROUP | PERF_FLAG_FD_CLOEXEC);
  Result<int> on_dir = Try(a, tmp, 0, -1, PERF_FLAG_PID_CGROUP | PERF_FLAG_FD_CLOEXEC);
  ::close(cg);
  ::close(tmp);
  if (!on_cgroup.ok() && (on_cgroup.error() == EACCES || on_cgroup.error() == EPERM)) {
    PERFTEST_SKIP(SkipClass::kPermission,
                  "a cgroup event is CPU-wide: needs CAP_PERFMON or perf_event_paranoid <= 0 (perf_allow_cpu()): " +
                      on_cgroup.ToString());
  }
  if (!on_cgroup.ok() && on_cgroup.error() == ENOENT) {
    PERFTEST_SKIP(SkipClass::kUnsupported,
                  fmt::format("the perf_event controller is not on the cgroup v2 hierarchy at {}: {}", *mount,
                              on_cgroup.ToString()));
  }
  EXPECT_THAT(on_cgroup, Succeeds()) << "the cgroup v2 root " << *mount << " on CPU 0";
  EXPECT_THAT(on_dir, FailsWithErrno(EBADF)) << "a directory that is no cgroup";
}

// --- field rules ------------------------------------------------------------

PERFTEST_CASE(Attr, FreqAboveMaxSampleRateIsEINVAL, "attr.freq_max",
              "SYSCALL_DEFINE5(perf_event_open): \"if (attr.sample_freq > sysctl_perf_event_sample_rate) return -EINVAL\"") {
  const uint32_t max_rate = backend().Machine().max_sample_rate;
  perf_event_attr a = Dummy();
  a.freq = 1;
  a.sample_freq = max_rate + 1;
  EXPECT_THAT(Try(a), FailsWithErrno(EINVAL)) << "perf_event_max_sample_rate " << max_rate;
  a.sample_freq = max_rate;
  EXPECT_THAT(Try(a), Succeeds());
}

PERFTEST_CASE(Attr, PeriodWithBit63IsEINVAL, "attr.period_bit63",
              "SYSCALL_DEFINE5(perf_event_open): \"if (attr.sample_period & (1ULL << 63)) return -EINVAL\"") {
  perf_event_attr a = Dummy();
  a.sample_period = uint64_t{1} << 63;
  EXPECT_THAT(Try(a), FailsWithErrno(EINVAL));
  a.sample_period = (uint64_t{1} << 63) - 1;
  EXPECT_THAT(Try(a), Succeeds());
}

PERFTEST_CASE(Attr, PreciseIpIgnoredBySoftwareEvents, "attr.precise_ip_software",
              "core.c perf_swevent_init() does not look at precise_ip (only PMUs with PEBS/IBS refuse it)") {
  for (uint32_t precise = 0; precise <= 3; ++precise) {
    perf_event_attr a = Dummy();
    a.precise_ip = precise;
    EXPECT_THAT(Try(a), Succeeds()) << "counting, precise_ip " << precise;
    a = SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK);
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.sample_period = 1000000;
    a.precise_ip = precise;
    EXPECT_THAT(Try(a), Succeeds()) << "sampling cpu-clock, precise_ip " << precise;
  }
}

PERFTEST_CASE(Attr, ClockidValid, "attr.clockid_valid",
              "core.c perf_event_set_clock(): MONOTONIC, MONOTONIC_RAW, REALTIME, BOOTTIME, TAI; the last three "
              "need PERF_PMU_CAP_NO_NMI, which software events have") {
  for (int clock : {CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, CLOCK_REALTIME, CLOCK_BOOTTIME, CLOCK_TAI}) {
    perf_event_attr a = Dummy();
    a.use_clockid = 1;
    a.clockid = clock;
    EXPECT_THAT(Try(a), Succeeds()) << "clockid " << clock;
  }
  perf_event_attr a = Dummy();
  a.clockid = 99;  // without use_clockid the field is not looked at
  EXPECT_THAT(Try(a), Succeeds()) << "clockid without use_clockid";
}

PERFTEST_CASE(Attr, ClockidInvalid, "attr.clockid_invalid",
              "core.c perf_event_set_clock(): any other clockid -> EINVAL") {
  for (int clock : {CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID, CLOCK_REALTIME_COARSE, 99, -1}) {
    perf_event_attr a = Dummy();
    a.use_clockid = 1;
    a.clockid = clock;
    EXPECT_THAT(Try(a), FailsWithErrno(EINVAL)) << "clockid " << clock;
  }
}

PERFTEST_CASE(Attr, InheritRestrictions, "attr.inherit_read_format",
              "core.c perf_event_alloc() (6.10+): inherit with PERF_SAMPLE_READ needs PERF_SAMPLE_TID; inherit with "
              "PERF_FORMAT_GROUP counts (refused before 6.x only for sampling reads)") {
  perf_event_attr a = Dummy();
  a.inherit = 1;
  a.read_format = PERF_FORMAT_GROUP;
  EXPECT_THAT(Try(a), Succeeds()) << "inherit + PERF_FORMAT_GROUP, counting";
  a = Dummy();
  a.inherit = 1;
  a.sample_period = 1000;
  EXPECT_THAT(Try(a), Succeeds()) << "inherit + sampling";
  a.sample_type = PERF_SAMPLE_READ;
  EXPECT_THAT(Try(a), FailsWithErrno(EINVAL)) << "inherit + PERF_SAMPLE_READ without PERF_SAMPLE_TID";
  a.sample_type = PERF_SAMPLE_READ | PERF_SAMPLE_TID;
  EXPECT_THAT(Try(a), Succeeds()) << "inherit + PERF_SAMPLE_READ|TID";
  a.inherit = 0;
  a.inherit_thread = 1;
  EXPECT_THAT(Try(a), FailsWithErrno(EINVAL)) << "inherit_thread without inherit (perf_copy_attr())";
}

PERFTEST_CASE(Attr, SigtrapNeedsRemoveOnExecAndATask, "attr.sigtrap",
              "core.c perf_copy_attr(): sigtrap without remove_on_exec -> EINVAL; perf_event_alloc(): "
              "\"if (attr->sigtrap && !task) return -EINVAL\"") {
  perf_event_attr a = Dummy();
  a.sigtrap = 1;
  EXPECT_THAT(Try(a), FailsWithErrno(EINVAL)) << "sigtrap alone";
  a.remove_on_exec = 1;
  EXPECT_THAT(Try(a), Succeeds()) << "sigtrap + remove_on_exec";
  EXPECT_THAT(Try(a, -1, 0), FailsWithErrno(EINVAL)) << "sigtrap on a CPU-wide event";
  a.sigtrap = 0;
  a.enable_on_exec = 1;
  EXPECT_THAT(Try(a), FailsWithErrno(EINVAL)) << "remove_on_exec + enable_on_exec";
}

PERFTEST_CASE(Attr, AuxFieldsOnANonAuxPmu, "attr.aux_fields",
              "core.c perf_event_open(): aux_sample_size -> perf_get_aux_event() finds no AUX leader -> EINVAL; "
              "aux_watermark is only read by AUX PMUs (rb_alloc_aux())") {
  perf_event_attr a = Dummy();
  a.aux_sample_size = 4096;
  EXPECT_THAT(Try(a), FailsWithErrno(EINVAL)) << "aux_sample_size";
  a = Dummy();
  a.aux_watermark = 4096;
  EXPECT_THAT(Try(a), Succeeds()) << "aux_watermark";
  a = Dummy();
  a.sample_period = 1000;
  a.sample_type = PERF_SAMPLE_AUX;
  EXPECT_THAT(Try(a), Succeeds()) << "PERF_SAMPLE_AUX with aux_sample_size 0";
}

PERFTEST_CASE(Attr, SampleFieldRules, "attr.sample_field_rules",
              "core.c perf_copy_attr(): sample_stack_user a multiple of 8 below USHRT_MAX; PERF_SAMPLE_WEIGHT and "
              "PERF_SAMPLE_WEIGHT_STRUCT exclude each other; x86 perf_reg_validate() for sample_regs_user") {
  perf_event_attr a = Dummy();
  a.sample_period = 1000;
  a.sample_type = PERF_SAMPLE_STACK_USER;
  a.sample_stack_user = 7;
  EXPECT_THAT(Try(a), FailsWithErrno(EINVAL)) << "sample_stack_user 7";
  a.sample_stack_user = 8192;
  EXPECT_THAT(Try(a), Succeeds()) << "sample_stack_user 8192";
  a.sample_stack_user = USHRT_MAX + 1;
  EXPECT_THAT(Try(a), FailsWithErrno(EINVAL)) << "sample_stack_user past USHRT_MAX";
  a = Dummy();
  a.sample_type = PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT;
  EXPECT_THAT(Try(a), FailsWithErrno(EINVAL)) << "WEIGHT with WEIGHT_STRUCT";
  a = Dummy();
  a.sample_period = 1000;
  a.sample_type = PERF_SAMPLE_REGS_USER;
  a.sample_regs_user = 0;
  EXPECT_THAT(Try(a), FailsWithErrno(EINVAL)) << "PERF_SAMPLE_REGS_USER with an empty mask";
}

}  // namespace
}  // namespace perftest
