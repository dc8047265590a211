// suite profile: what a timer-sampling CPU profiler (bcc's profile.py,
// reference/bcc-profile-rfc.txt) relies on, case by case.
//
// The RFC's prototype saw "between 1 and 15 extra kernel frames on the top of
// the kernel stacks" (perf_swevent_hrtimer, __hrtimer_run_queues,
// hrtimer_interrupt, ...) because it took stacks from a kprobe inside the
// timer; a perf_event callchain instead starts at the interrupted ip
// (kernel/events/callchain.c get_perf_callchain(): perf_callchain_store(
// regs->ip) first). exclude_idle on cpu-clock: the RFC's patch shows the check
// in perf_swevent_hrtimer() (`exclude_idle && is_idle_task(current)`).
// sample_max_stack bounds each callchain (get_perf_callchain()'s max_stack).
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include <memory>
#include <optional>

#include "harness/attr.h"
#include "harness/result.h"
#include "harness/event.h"
#include "harness/records.h"
#include "harness/ring_buffer.h"
#include "harness/syscall_matchers.h"
#include "harness/workload.h"
#include "mocks/simulated_symbols.h"
#include "suites/common/records_util.h"
#include "suites/common/suite.h"

namespace perftest {
namespace {

class Profile : public SuiteTest {
 protected:
  // cpu-clock at `freq` Hz; `cpu_wide`: one event per CPU with pid -1 (needs
  // CAP_PERFMON or perf_event_paranoid <= 0, else the case skips), else this
  // task on any CPU. Runs a 300 ms spin, returns every sample.
  // Samples of `a` (one event, or one per CPU when `cpu_wide`) over `work`.
  void Sample(perf_event_attr a, bool cpu_wide, std::vector<SampleRecord>* out,
              const Workload& work = Workload::Spin(std::chrono::milliseconds(300))) {
    std::vector<Event> events;
    std::vector<RingBuffer> rings;
    const int ncpus = backend().Machine().ncpus;
    for (int cpu = 0; cpu < (cpu_wide ? ncpus : 1); ++cpu) {
      PERFTEST_ASSIGN_OR_SKIP(Event ev, Event::Open(backend(), a, cpu_wide ? -1 : 0, cpu_wide ? cpu : -1),
                              "cpu-clock sampling");
      ASSERT_OK_AND_ASSIGN(RingBuffer rb, RingBuffer::Map(backend(), ev.fd(), 64));
      events.push_back(std::move(ev));
      rings.push_back(std::move(rb));
    }
    for (Event& e : events) ASSERT_OK(e.Enable());
    ASSERT_OK(backend().RunWorkload(work));
    for (Event& e : events) ASSERT_OK(e.Disable());
    const SampleLayout layout = SampleLayout::FromAttr(a);
    for (RingBuffer& rb : rings) {
      ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> recs, DrainRecords(rb, layout, true));
      for (const SampleRecord* s : SamplesOf(recs)) out->push_back(*s);
    }
  }

  static perf_event_attr CpuClock(uint64_t sample_type, uint64_t freq = 1000) {
    perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK);
    a.freq = 1;
    a.sample_freq = freq;
    a.sample_type = sample_type;
    a.disabled = 1;
    return a;
  }

  // The function holding `ip`: the mock's simulated symbol table, or the
  // kernel's /proc/kallsyms ("" when kptr_restrict hides the addresses).
  std::string KernelSymbol(uint64_t ip) {
    if (exact()) {
      const mock::SimulatedSymbol* s = mock::FindSimulatedSymbol(ip);
      return s ? std::string(s->name) : "";
    }
    if (kallsyms_.empty()) {
      std::ifstream in("/proc/kallsyms");
      std::string line;
      while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::string addr, type, name;
        if (!(ls >> addr >> type >> name) || (type != "t" && type != "T")) continue;
        uint64_t a = std::stoull(addr, nullptr, 16);
        if (a) kallsyms_.emplace(a, name);
      }
    }
    auto it = kallsyms_.upper_bound(ip);
    if (it == kallsyms_.begin()) return "";
    return std::prev(it)->second;
  }

  std::map<uint64_t, std::string> kallsyms_;
};

size_t Ips(const std::vector<uint64_t>& chain) {
  size_t n = 0;
  for (uint64_t ip : chain) n += IsCallchainContext(ip) ? 0 : 1;
  return n;
}

PERFTEST_CASE(Profile, CpuClockKernelCallchainStartsAtInterruptedIp, "profile.cpu_clock_kernel_callchain",
              "bcc-profile-rfc.txt (extra perf/hrtimer frames); kernel/events/callchain.c get_perf_callchain(), "
              "<linux/perf_event.h> PERF_CONTEXT_KERNEL") {
  perf_event_attr a = CpuClock(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_CALLCHAIN);
  a.exclude_user = 1;  // kernel-mode samples only: idle CPUs, interrupts, other tasks' system time
  std::vector<SampleRecord> samples;
  // This task sleeps, so its CPU idles in the kernel even on a one-CPU
  // machine (a guest): a spin there interrupts only user mode, which
  // exclude_user drops (perf_exclude_event()), and left no sample at all.
  ASSERT_NO_FATAL_FAILURE(Sample(a, /*cpu_wide=*/true, &samples, Workload::Sleep(3, std::chrono::milliseconds(100))));
  if (IsSkipped()) return;
  ASSERT_FALSE(samples.empty()) << "no kernel-mode cpu-clock sample on any CPU in 300 ms of sleep";
  // The frames the RFC's kprobe-based stacks began with; a perf_event
  // callchain never has them above the interrupted ip.
  const std::vector<std::string> timer_frames{"perf_swevent_hrtimer", "__hrtimer_run_queues", "hrtimer_interrupt",
                                              "__sysvec_apic_timer_interrupt", "perf_event_overflow",
                                              "__perf_event_overflow", "perf_callchain_kernel"};
  size_t named = 0;
  for (const SampleRecord& s : samples) {
    ASSERT_TRUE(s.callchain.has_value());
    ASSERT_GE(s.callchain->size(), 2u);
    EXPECT_EQ((*s.callchain)[0], static_cast<uint64_t>(PERF_CONTEXT_KERNEL));
    EXPECT_EQ((*s.callchain)[1], *s.ip) << "the kernel part starts at the interrupted ip";
    std::string name = KernelSymbol(*s.ip);
    if (!name.empty()) ++named;
    for (const std::string& t : timer_frames) EXPECT_NE(name, t) << "the sampled ip is in the timer path";
  }
  if (named == 0) {
    PERFTEST_SKIP(SkipClass::kPermission,
                  "kernel ips cannot be named: /proc/kallsyms shows 0 addresses (kernel.kptr_restrict); the "
                  "PERF_CONTEXT_KERNEL / interrupted-ip checks passed");
  }
  RecordProperty("kernel_samples", static_cast<int>(samples.size()));
}

PERFTEST_CASE(Profile, CpuClockExcludeIdle, "profile.cpu_clock_exclude_idle",
              "bcc-profile-rfc.txt (exclude_idle patch); kernel/events/core.c perf_swevent_hrtimer(): "
              "exclude_idle && is_idle_task(current)") {
  perf_event_attr a = CpuClock(PERF_SAMPLE_TID | PERF_SAMPLE_CPU);
  a.exclude_idle = 1;
  std::vector<SampleRecord> samples;
  ASSERT_NO_FATAL_FAILURE(Sample(a, /*cpu_wide=*/true, &samples));
  if (IsSkipped()) return;
  ASSERT_FALSE(samples.empty()) << "our own 300 ms spin gives samples";
  size_t idle = 0;
  for (const SampleRecord& s : samples) idle += (*s.tid == 0) ? 1 : 0;
  EXPECT_EQ(idle, 0u) << "exclude_idle: no sample of the idle task (pid 0) out of " << samples.size();

  // Without it the idle task is sampled whenever a CPU idles (on the mock,
  // always: its other CPUs are idle); the count is recorded, not required
  // on a busy machine.
  a.exclude_idle = 0;
  std::vector<SampleRecord> all;
  ASSERT_NO_FATAL_FAILURE(Sample(a, /*cpu_wide=*/true, &all));
  size_t idle_without = 0;
  for (const SampleRecord& s : all) idle_without += (*s.tid == 0) ? 1 : 0;
  RecordProperty("idle_samples_without_exclude_idle", static_cast<int>(idle_without));
  if (exact()) {
    EXPECT_GT(idle_without, 0u) << "the model's idle CPUs are sampled without exclude_idle";
  }
}

PERFTEST_CASE(Profile, SampleMaxStackBoundsCallchains, "profile.sample_max_stack",
              "<linux/perf_event.h> perf_event_attr.sample_max_stack; kernel/events/callchain.c "
              "get_perf_callchain() max_stack; /proc/sys/kernel/perf_event_max_stack") {
  perf_event_attr a = CpuClock(PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN);
  a.exclude_kernel = 1;  // this task's user stacks: permitted at paranoid 2
  a.exclude_hv = 1;
  std::vector<SampleRecord> full;
  ASSERT_NO_FATAL_FAILURE(Sample(a, /*cpu_wide=*/false, &full));
  ASSERT_FALSE(full.empty());
  size_t deepest = 0;
  for (const SampleRecord& s : full) {
    deepest = std::max(deepest, Ips(*s.callchain));
    EXPECT_LE(Ips(*s.callchain), backend().Machine().max_stack) << "bounded by perf_event_max_stack";
  }
  ASSERT_GT(deepest, 2u) << "the spin runs deeper than 2 frames, so a limit of 2 is observable";

  a.sample_max_stack = 2;
  std::vector<SampleRecord> bounded;
  ASSERT_NO_FATAL_FAILURE(Sample(a, /*cpu_wide=*/false, &bounded));
  ASSERT_FALSE(bounded.empty());
  for (const SampleRecord& s : bounded) {
    EXPECT_LE(Ips(*s.callchain), 2u);
    ASSERT_GE(s.callchain->size(), 2u);
    EXPECT_EQ((*s.callchain)[0], static_cast<uint64_t>(PERF_CONTEXT_USER));
    EXPECT_EQ((*s.callchain)[1], *s.ip) << "the limit keeps the innermost frames";
  }
}

// The user stack a sample copies (PERF_SAMPLE_STACK_USER, from the user sp
// in PERF_SAMPLE_REGS_USER; kernel/events/core.c perf_output_sample_ustack())
// is this thread's stack: a marker in this case's frame, which stays put
// while the spin below it runs, is found at its address's offset from sp.
PERFTEST_CASE(Profile, StackUserIsTheSampledThreadsStack, "profile.stack_user_content",
              "<linux/perf_event.h> PERF_SAMPLE_STACK_USER {size, data[size], dyn_size}, PERF_SAMPLE_REGS_USER; "
              "kernel/events/core.c perf_output_sample_ustack()") {
  if (exact()) {
    PERFTEST_SKIP(SkipClass::kUnsupported,
                  "the mock's simulated task has no stack memory to compare with: its STACK_USER bytes are a "
                  "pattern (mocks/event_output.cc)");
  }
  // The stack pointer's bit in sample_regs_user (arch/*/include/uapi/asm/perf_regs.h).
  const std::string& arch = backend().Machine().arch;
  const int sp_bit = arch == "x86_64" ? 7 : arch == "aarch64" ? 31 : arch == "riscv64" ? 2 : -1;
  if (sp_bit < 0) PERFTEST_SKIP(SkipClass::kUnsupported, "no known PERF_REG_*_SP for arch " + arch);
  volatile uint64_t marker[4] = {0x7065726674657374ull, 0x737461636b5f7573ull, 0x6572000000000000ull,
                                 reinterpret_cast<uintptr_t>(&marker)};
  perf_event_attr a = CpuClock(PERF_SAMPLE_IP | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER);
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  a.sample_regs_user = uint64_t{1} << sp_bit;
  a.sample_stack_user = 32768;
  std::vector<SampleRecord> samples;
  ASSERT_NO_FATAL_FAILURE(Sample(a, /*cpu_wide=*/false, &samples));
  if (IsSkipped()) return;
  ASSERT_FALSE(samples.empty());
  const uint64_t m = reinterpret_cast<uintptr_t>(&marker[0]);
  size_t covered = 0, matched = 0;
  for (const SampleRecord& s : samples) {
    ASSERT_TRUE(s.regs_user.has_value() && s.stack_user.has_value());
    if (s.regs_user->abi == PERF_SAMPLE_REGS_ABI_NONE) continue;  // no user regs at this sample
    ASSERT_EQ(s.regs_user->regs.size(), 1u);
    const uint64_t sp = s.regs_user->regs[0];
    const uint64_t dyn = s.stack_user->dyn_size;
    EXPECT_LE(dyn, s.stack_user->data.size()) << "dyn_size <= size";
    if (m < sp || m + sizeof marker > sp + dyn) continue;
    ++covered;
    if (std::memcmp(s.stack_user->data.data() + (m - sp), const_cast<uint64_t*>(marker), sizeof marker) == 0) ++matched;
  }
  ASSERT_GT(covered, 0u) << "no sample's stack copy reached this frame (" << samples.size() << " samples)";
  EXPECT_EQ(matched, covered) << "the copied stack holds the marker at its address - sp";
  RecordProperty("samples_reaching_marker", static_cast<int>(covered));
}

// --- PERF_EVENT_IOC_SET_BPF: the RFC's design, a BPF program on each sample ---

// A loaded BPF program of `type` that returns `ret` (r0 = ret; exit), or the
// bpf(BPF_PROG_LOAD) errno. Owned: closed on destruction.
struct BpfProg {
  int fd = -1;
  int err = 0;
  BpfProg(bpf_prog_type type, int32_t ret) {
    bpf_insn insns[2] = {};
    insns[0].code = BPF_ALU64 | BPF_MOV | BPF_K;
    insns[0].dst_reg = BPF_REG_0;
    insns[0].imm = ret;
    insns[1].code = BPF_JMP | BPF_EXIT;
    static const char license[] = "GPL";
    bpf_attr attr{};
    attr.prog_type = type;
    attr.insn_cnt = 2;
    attr.insns = reinterpret_cast<uint64_t>(insns);
    attr.license = reinterpret_cast<uint64_t>(license);
    fd = static_cast<int>(syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof attr));
    err = fd < 0 ? errno : 0;
  }
  ~BpfProg() {
    if (fd >= 0) close(fd);
  }
  // bpf(BPF_OBJ_GET_INFO_BY_FD): the program's id (what QUERY_BPF lists); 0 on failure.
  uint32_t Id() const {
    bpf_prog_info info{};
    bpf_attr attr{};
    attr.info.bpf_fd = static_cast<uint32_t>(fd);
    attr.info.info_len = sizeof info;
    attr.info.info = reinterpret_cast<uint64_t>(&info);
    return syscall(SYS_bpf, BPF_OBJ_GET_INFO_BY_FD, &attr, sizeof attr) == 0 ? info.id : 0;
  }
};

class ProfileBpf : public Profile {
 protected:
  void SetUp() override {
    Profile::SetUp();
    if (IsSkipped()) return;
    if (exact()) {
      PERFTEST_SKIP(SkipClass::kUnsupported,
                    "the mock runs no BPF programs: its PERF_EVENT_IOC_SET_BPF takes no fd as a program "
                    "(mocks/mock_backend.cc, EINVAL/EBADF only)");
    }
  }
  // Loads or skips: EPERM/EACCES without CAP_BPF (+ CAP_PERFMON), ENOSYS without CONFIG_BPF_SYSCALL.
  void Load(bpf_prog_type type, int32_t ret, std::unique_ptr<BpfProg>* out) {
    *out = std::make_unique<BpfProg>(type, ret);
    if ((*out)->fd >= 0) return;
    if (std::optional<SkipClass> c = UnavailableClass((*out)->err)) {
      PERFTEST_SKIP(*c, fmt::format("bpf(BPF_PROG_LOAD, type {}) = -{}: loading BPF programs needs CAP_BPF "
                                    "(and CAP_PERFMON for perf_event programs) and CONFIG_BPF_SYSCALL",
                                    static_cast<int>(type), ErrnoName((*out)->err)));
    }
    FAIL() << "bpf(BPF_PROG_LOAD) = -" << ErrnoName((*out)->err);
  }
  Result<int> SetBpf(const Event& ev, int prog_fd) {
    return backend().Ioctl(ev.fd(), PERF_EVENT_IOC_SET_BPF, static_cast<uintptr_t>(prog_fd));
  }
};

PERFTEST_CASE(ProfileBpf, SetBpfProgramDecidesEachSample, "profile.set_bpf_perf_event",
              "bcc-profile-rfc.txt (BPF sampling); kernel/events/core.c perf_event_set_bpf_prog(), "
              "__perf_event_overflow(): a BPF_PROG_TYPE_PERF_EVENT program returning 0 drops the sample; "
              "a second program -> -EEXIST") {
  std::unique_ptr<BpfProg> drop, keep;
  ASSERT_NO_FATAL_FAILURE(Load(BPF_PROG_TYPE_PERF_EVENT, 0, &drop));
  if (IsSkipped()) return;
  ASSERT_NO_FATAL_FAILURE(Load(BPF_PROG_TYPE_PERF_EVENT, 1, &keep));
  perf_event_attr a = CpuClock(PERF_SAMPLE_IP | PERF_SAMPLE_TID);
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  auto samples_with = [&](const BpfProg& prog, uint64_t* count) {
    ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), a));
    ASSERT_OK_AND_ASSIGN(RingBuffer rb, RingBuffer::Map(backend(), ev.fd(), 16));
    ASSERT_OK(SetBpf(ev, prog.fd));
    EXPECT_THAT(SetBpf(ev, prog.fd == drop->fd ? keep->fd : drop->fd), FailsWithErrno(EEXIST))
        << "one program per perf event";
    ASSERT_OK(ev.Enable());
    ASSERT_OK(backend().RunWorkload(Workload::Spin(std::chrono::milliseconds(200))));
    ASSERT_OK(ev.Disable());
    ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> recs, DrainRecords(rb, SampleLayout::FromAttr(a), true));
    *count = SamplesOf(recs).size();
    EXPECT_GT(Value(ev), 0u) << "cpu-clock counted the spin (ns) either way";
  };
  uint64_t dropped = 0, kept = 0;
  ASSERT_NO_FATAL_FAILURE(samples_with(*drop, &dropped));
  ASSERT_NO_FATAL_FAILURE(samples_with(*keep, &kept));
  EXPECT_EQ(dropped, 0u) << "the program returned 0 on every sample";
  EXPECT_GT(kept, 10u) << "the program returned 1: samples reach the ring buffer";
  RecordProperty("samples_kept", static_cast<int>(kept));
}

PERFTEST_CASE(ProfileBpf, QueryBpfListsTheAttachedProgram, "profile.query_bpf_attached",
              "kernel/trace/bpf_trace.c perf_event_attach_bpf_prog() (a second program -> -EEXIST), "
              "perf_event_query_prog_array(): prog_cnt and ids[]") {
  std::unique_ptr<BpfProg> prog, other;
  ASSERT_NO_FATAL_FAILURE(Load(BPF_PROG_TYPE_TRACEPOINT, 0, &prog));
  if (IsSkipped()) return;
  ASSERT_NO_FATAL_FAILURE(Load(BPF_PROG_TYPE_TRACEPOINT, 0, &other));
  PERFTEST_ASSIGN_OR_SKIP(const uint64_t id, backend().TracepointId("syscalls", "sys_enter_getpid"),
                          "tracepoint syscalls:sys_enter_getpid");
  ASSERT_OK_AND_ASSIGN(Event tp, Event::Open(backend(), MakeAttr(PERF_TYPE_TRACEPOINT, id)));
  ASSERT_OK(SetBpf(tp, prog->fd));
  EXPECT_THAT(SetBpf(tp, other->fd), FailsWithErrno(EEXIST)) << "event->prog is set";
  // struct perf_event_query_bpf {u32 ids_len; u32 prog_cnt; u32 ids[];} with room for 4 ids.
  uint32_t query[2 + 4] = {4, 99, 0, 0, 0, 0};
  ASSERT_OK(backend().Ioctl(tp.fd(), PERF_EVENT_IOC_QUERY_BPF, reinterpret_cast<uintptr_t>(query)));
  EXPECT_EQ(query[1], 1u) << "prog_cnt";
  EXPECT_EQ(query[2], prog->Id()) << "ids[0] is the attached program";
  EXPECT_NE(query[2], 0u);
}

}  // namespace
}  // namespace perftest
