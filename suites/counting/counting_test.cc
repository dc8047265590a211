// Conformance suite: counting — software, tracepoint, breakpoint, hardware,
// hw_cache and raw events, the exclude_* bits, counts that scale with the work.
//
// Software events, tracepoints and breakpoints run for real on any kernel with
// perf events; hardware, hw_cache and raw events need a hardware PMU: where
// opening PERF_TYPE_HARDWARE returns ENOENT (a VM without a virtual PMU) those
// cases skip with that reason, and they run on the mock with a profile that
// has one (x86_64-intel). Under the mock counts are exact; under the kernel the
// cases assert bounds. References: perf_event_open(2) "type", "config",
// "exclude_*"; <linux/perf_event.h> enum perf_sw_ids, perf_hw_id,
// perf_hw_cache_*; kernel/events/core.c perf_swevent_init(), cpu_clock_event_*,
// task_clock_event_*, perf_tp_event(); kernel/events/hw_breakpoint.c;
// arch/x86/events/core.c x86_pmu_event_init(), set_ext_hw_attr().
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/hw_breakpoint.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "harness/attr.h"
#include "harness/event.h"
#include "harness/syscall_matchers.h"
#include "suites/common/attrs.h"
#include "suites/common/hardware.h"
#include "suites/common/measure.h"
#include "suites/common/suite.h"

namespace perftest {
namespace {

using namespace std::chrono_literals;

// Breakpoint targets.
alignas(64) volatile uint8_t g_watch[64];

perf_event_attr Bp(uint32_t type, const volatile void* addr, uint64_t len) {
  perf_event_attr a = MakeAttr(PERF_TYPE_BREAKPOINT, 0);
  a.bp_type = type;
  a.bp_addr = reinterpret_cast<uint64_t>(addr);
  a.bp_len = len;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  return a;
}

// PERF_TYPE_HW_CACHE config: id | (op << 8) | (result << 16).
constexpr uint64_t CacheConfig(uint64_t id, uint64_t op, uint64_t result) { return id | (op << 8) | (result << 16); }

class Counting : public SuiteTest {
 protected:
  // Runs `w` with `ev` enabled; returns the values read after DISABLE.
  Result<ReadValues> Measure(Event& ev, const Workload& w) {
    Result<void> e = ev.Enable();
    if (!e.ok()) return Result<ReadValues>::FailureFrom(e);
    Result<WorkloadResult> r = backend().RunWorkload(w);
    Result<void> d = ev.Disable();
    if (!r.ok()) return Result<ReadValues>::FailureFrom(r);
    if (!d.ok()) return Result<ReadValues>::FailureFrom(d);
    return ev.Read();
  }
  Result<uint64_t> MeasureCount(Event& ev, const Workload& w) {
    Result<ReadValues> v = Measure(ev, w);
    if (!v.ok()) return Result<uint64_t>::FailureFrom(v);
    return Result<uint64_t>::Ok(v->counters[0].value);
  }
  void ExpectAbout(uint64_t count, uint64_t n, uint64_t slack, const std::string& what) {
    if (exact()) {
      EXPECT_EQ(count, n) << what;
    } else {
      EXPECT_GE(count, n) << what;
      EXPECT_LE(count, n + slack) << what;
    }
  }
  // Whether opening `attr` shows a hardware PMU: the skip class and reason when not.
  std::optional<std::pair<SkipClass, std::string>> NoHardware() {
    return NoHardwareFor(backend(), CounterAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, kTimed));
  }
  bool X86() { return backend().Machine().arch == "x86_64"; }

  // Runs a spin of `d` with `ev` enabled. Returns {values, CPU time}: on the
  // kernel the CPU time this thread received meanwhile
  // (CLOCK_THREAD_CPUTIME_ID, the ground truth a loaded machine needs: a
  // spin of d wall time may get much less of a CPU); on the mock, d.
  Result<std::pair<ReadValues, uint64_t>> MeasureSpin(Event& ev, std::chrono::nanoseconds d) {
    const uint64_t before = exact() ? 0 : ThreadCpuNs();
    const auto wall_before = std::chrono::steady_clock::now();
    Result<ReadValues> v = Measure(ev, Workload::Spin(d));
    measured_wall_ = std::chrono::steady_clock::now() - wall_before;
    const uint64_t cpu = exact() ? static_cast<uint64_t>(d.count()) : ThreadCpuNs() - before;
    if (!v.ok()) return Result<std::pair<ReadValues, uint64_t>>::FailureFrom(v);
    return Result<std::pair<ReadValues, uint64_t>>::Ok({std::move(*v), cpu});
  }
  // The wall time of the last MeasureSpin(), ENABLE to READ.
  std::chrono::nanoseconds measured_wall_{0};
  // A clock event's count against a spin of `wall` that got `cpu` ns of CPU.
  void ExpectClock(uint64_t count, uint64_t cpu, std::chrono::nanoseconds wall) {
    if (exact()) {
      EXPECT_EQ(count, static_cast<uint64_t>(wall.count()));
      return;
    }
    EXPECT_GT(cpu, 0u);
    // The wall time from before ENABLE to after DISABLE: a vCPU preempted
    // around the ioctls makes it longer than the spin asked for.
    const auto window = std::max<std::chrono::nanoseconds>(wall, measured_wall_);
    EXPECT_LE(count, static_cast<uint64_t>(window.count()) + 200000) << "no more than the wall time of the window";
    // No upper bound from `cpu`: CLOCK_THREAD_CPUTIME_ID leaves out time the
    // hypervisor stole (paravirt steal accounting), which cpu-clock and
    // task-clock count (seen on this VM: 2.03 ms counted, 1.49 ms of thread CPU
    // time). That the clocks stop while the task is off the CPU is
    // counting.clocks_exclude_sleep.
    EXPECT_GE(count + 1000000 + cpu / 10, cpu) << "about the CPU time the thread got (" << cpu << " ns)";
  }
};

#define PERFTEST_REQUIRE_HARDWARE()                                  \
  do {                                                               \
    if (auto perftest_no_hw = NoHardware()) {                        \
      PERFTEST_SKIP(perftest_no_hw->first, perftest_no_hw->second);  \
    }                                                                \
  } while (0)

// --- software events ---

PERFTEST_CASE(Counting, CpuClockScalesWithSpin, "counting.cpu_clock",
              "<linux/perf_event.h> PERF_COUNT_SW_CPU_CLOCK; core.c cpu_clock_event_update(): ns of the task's CPU time") {
  for (auto d : {2ms, 16ms}) {
    SCOPED_TRACE(fmt::format("spin {} ms", d.count()));
    ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_CPU_CLOCK, kTimed)));
    ASSERT_OK_AND_ASSIGN(auto m, MeasureSpin(ev, d));
    const auto& [v, cpu] = m;
    ExpectClock(v.counters[0].value, cpu, d);
    const uint64_t count = v.counters[0].value, running = *v.time_running;
    EXPECT_LE(std::max(count, running) - std::min(count, running), std::max<uint64_t>(100000, running / 50))
        << "cpu-clock follows the time the event ran";
  }
}

PERFTEST_CASE(Counting, TaskClockScalesWithSpin, "counting.task_clock",
              "<linux/perf_event.h> PERF_COUNT_SW_TASK_CLOCK; core.c task_clock_event_update(): the context's time") {
  for (auto d : {2ms, 16ms}) {
    SCOPED_TRACE(fmt::format("spin {} ms", d.count()));
    ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_TASK_CLOCK, kTimed)));
    ASSERT_OK_AND_ASSIGN(auto m, MeasureSpin(ev, d));
    const auto& [v, cpu] = m;
    ExpectClock(v.counters[0].value, cpu, d);
    EXPECT_EQ(v.counters[0].value, *v.time_running) << "task-clock is the context's time";
  }
}

PERFTEST_CASE(Counting, ClocksCountNoSleep, "counting.clocks_exclude_sleep",
              "core.c: cpu-clock/task-clock of a task event count while the task runs; a sleeping task is off CPU") {
  for (uint64_t config : {PERF_COUNT_SW_CPU_CLOCK, PERF_COUNT_SW_TASK_CLOCK}) {
    ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), SoftwareCounterAttr(config, kTimed)));
    ASSERT_OK_AND_ASSIGN(ReadValues v, Measure(ev, Workload::Sleep(4, 5ms)));
    EXPECT_LT(v.counters[0].value, 20000000u / 2) << "config " << config << ": 20 ms asleep";
  }
}

PERFTEST_CASE(Counting, PageFaultsPerTouchedPage, "counting.page_faults",
              "<linux/perf_event.h> PERF_COUNT_SW_PAGE_FAULTS/_MIN/_MAJ; arch/x86/mm/fault.c do_user_addr_fault(), "
              "mm/memory.c mm_account_fault()") {
  ASSERT_OK_AND_ASSIGN(Event faults, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS, kTimed)));
  ASSERT_OK_AND_ASSIGN(Event minor, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN, kTimed)));
  ASSERT_OK_AND_ASSIGN(Event major, Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS_MAJ, kTimed)));
  for (uint64_t pages : {8, 64}) {
    SCOPED_TRACE(fmt::format("{} pages", pages));
    for (Event* e : {&faults, &minor, &major}) {
      ASSERT_OK(e->Reset());
      ASSERT_OK(e->Enable());
    }
    ASSERT_OK(backend().RunWorkload(Workload::TouchPages(pages)));
    for (Event* e : {&faults, &minor, &major}) ASSERT_OK(e->Disable());
    ASSERT_OK_AND_ASSIGN(uint64_t f, faults.ReadValue());
    ASSERT_OK_AND_ASSIGN(uint64_t mi, minor.ReadValue());
    ASSERT_OK_AND_ASSIGN(uint64_t ma, major.ReadValue());
    ExpectAbout(f, pages, kFaultSlack, "page-faults: one per fresh anonymous page");
    ExpectAbout(mi, pages, kFaultSlack, "minor-faults");
    EXPECT_EQ(ma, 0u) << "anonymous memory never faults from disk";
    EXPECT_EQ(f, mi + ma) << "every fault is minor or major";
  }
}

PERFTEST_CASE(Counting, ContextSwitchesPerSleep, "counting.context_switches",
              "<linux/perf_event.h> PERF_COUNT_SW_CONTEXT_SWITCHES; core.c perf_event_task_sched_out() -> "
              "perf_sw_event_sched()") {
  ASSERT_OK_AND_ASSIGN(Event ev,
                       Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_CONTEXT_SWITCHES,
                                                                  {.read_format = kTimes, .exclude_kernel = false})));
  for (uint64_t n : {3, 12}) {
    ASSERT_OK(ev.Reset());
    const long voluntary_before = ThreadContextSwitchCounts().voluntary;
    ASSERT_OK_AND_ASSIGN(const uint64_t count, MeasureCount(ev, Workload::Sleep(n, 200us)));
    // A sleep whose timer fired before schedule() (the vCPU was preempted by
    // the hypervisor meanwhile) returns without switching: on the kernel the
    // floor is the voluntary switches getrusage() saw, at most n.
    const long voluntary = ThreadContextSwitchCounts().voluntary - voluntary_before;
    const uint64_t floor = exact() ? n : std::min<uint64_t>(n, static_cast<uint64_t>(voluntary));
    ExpectAbout(count, floor, n + 8, fmt::format("{} sleeps, {} of them switched", n, floor));  // involuntary switches may add some
  }
}

PERFTEST_CASE(Counting, QuietSoftwareEventsStayZero, "counting.software_zero",
              "<linux/perf_event.h> PERF_COUNT_SW_DUMMY ('no event'), ALIGNMENT_FAULTS/EMULATION_FAULTS (x86: none), "
              "BPF_OUTPUT (only bpf_perf_event_output())") {
  std::vector<uint64_t> configs = {PERF_COUNT_SW_DUMMY, PERF_COUNT_SW_BPF_OUTPUT};
  if (X86()) {
    configs.push_back(PERF_COUNT_SW_ALIGNMENT_FAULTS);
    configs.push_back(PERF_COUNT_SW_EMULATION_FAULTS);
  }
  for (uint64_t config : configs) {
    ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), SoftwareCounterAttr(config, kTimed)));
    ASSERT_OK(ev.Enable());
    ASSERT_OK(backend().RunWorkload(Workload::TouchPages(8)));
    ASSERT_OK(backend().RunWorkload(Workload::Sleep(2, 100us)));
    ASSERT_OK(backend().RunWorkload(Workload::Spin(1ms)));
    ASSERT_OK(ev.Disable());
    ASSERT_OK_AND_ASSIGN(ReadValues v, ev.Read());
    EXPECT_EQ(v.counters[0].value, 0u) << "config " << config;
    EXPECT_GT(*v.time_enabled, 0u) << "config " << config << ": it was enabled, just nothing to count";
  }
}

PERFTEST_CASE(Counting, SoftwareConfigOutOfRange, "counting.software_config_range",
              "core.c perf_swevent_init(): config >= PERF_COUNT_SW_MAX -> -ENOENT") {
  for (uint64_t config : {uint64_t{PERF_COUNT_SW_MAX}, uint64_t{100}, uint64_t{1} << 40}) {
    EXPECT_THAT(Event::Open(backend(), SoftwareCounterAttr(config, kTimed)), FailsWithErrno(ENOENT))
        << "config " << config;
  }
}

// --- exclude_user / exclude_kernel on software events ---

PERFTEST_CASE(Counting, ExcludeUserDropsUserFaults, "counting.exclude_user_software",
              "core.c perf_exclude_event(): exclude_user && user_mode(regs); a page fault of a user store has user regs") {
  perf_event_attr a = SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS, {.read_format = kTimes, .exclude_kernel = false});
  a.exclude_user = 1;
  ASSERT_OK_AND_ASSIGN(Event user_excluded, Event::Open(backend(), a));
  ASSERT_OK_AND_ASSIGN(Event kernel_excluded,
                       Event::Open(backend(), SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS, kTimed)));
  ASSERT_OK(user_excluded.Enable());
  ASSERT_OK(kernel_excluded.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(16)));
  ASSERT_OK(user_excluded.Disable());
  ASSERT_OK(kernel_excluded.Disable());
  ASSERT_OK_AND_ASSIGN(const uint64_t kernel_mode, user_excluded.ReadValue());
  // The 16 faults of the workload are user-mode stores. On the kernel a stray
  // kernel-mode fault of the harness (a syscall writing to a user page not yet
  // present) may land in the window: CI saw one, under load. Far below the 16
  // that ignoring exclude_user would count.
  if (exact()) {
    EXPECT_EQ(kernel_mode, 0u) << "every fault came from user mode";
  } else {
    EXPECT_LE(kernel_mode, 2u) << "every workload fault came from user mode";
  }
  ASSERT_OK_AND_ASSIGN(const uint64_t counted, kernel_excluded.ReadValue());
  ExpectAbout(counted, 16, kFaultSlack, "exclude_kernel keeps them");
}

PERFTEST_CASE(Counting, ExcludeKernelDropsContextSwitches, "counting.exclude_kernel_software",
              "core.c perf_sw_event_sched(): the switch is counted with the scheduler's (kernel) regs") {
  perf_event_attr a = SoftwareCounterAttr(PERF_COUNT_SW_CONTEXT_SWITCHES, kTimed);
  ASSERT_OK_AND_ASSIGN(Event kernel_excluded, Event::Open(backend(), a));
  a.exclude_kernel = 0;
  a.exclude_user = 1;
  ASSERT_OK_AND_ASSIGN(Event user_excluded, Event::Open(backend(), a));
  ASSERT_OK(kernel_excluded.Enable());
  ASSERT_OK(user_excluded.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::Sleep(5, 200us)));
  ASSERT_OK(kernel_excluded.Disable());
  ASSERT_OK(user_excluded.Disable());
  EXPECT_THAT(kernel_excluded.ReadValue(), SucceedsWith(0u)) << "switches happen in the kernel";
  ASSERT_OK_AND_ASSIGN(const uint64_t counted, user_excluded.ReadValue());
  ExpectAbout(counted, 5, 5 + 8, "exclude_user keeps them");
}

PERFTEST_CASE(Counting, ClocksIgnoreExcludeBits, "counting.clock_exclude_bits",
              "core.c cpu_clock_event_update()/task_clock_event_update(): the count is time; exclude_* only filter "
              "samples (perf_swevent_hrtimer())") {
  for (uint64_t config : {PERF_COUNT_SW_CPU_CLOCK, PERF_COUNT_SW_TASK_CLOCK}) {
    perf_event_attr a = SoftwareCounterAttr(config, {.read_format = kTimes, .exclude_kernel = false});
    a.exclude_user = 1;
    ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), a));
    ASSERT_OK_AND_ASSIGN(auto m, MeasureSpin(ev, 4ms));
    SCOPED_TRACE(fmt::format("config {}: a user-mode spin still counts", config));
    ExpectClock(m.first.counters[0].value, m.second, 4ms);
  }
}

// --- tracepoints ---

class CountingTracepoint : public Counting {
 protected:
  // The tracefs id of `system`:`name`, or nullopt after recording a skip.
  Result<uint64_t> Id(const char* system, const char* name) { return backend().TracepointId(system, name); }
};

PERFTEST_CASE(CountingTracepoint, SyscallTracepointCountsEachCall, "counting.tracepoint_syscall",
              "kernel/trace/trace_syscalls.c perf_syscall_enter(); core.c perf_tp_event(): one count per firing") {
  PERFTEST_ASSIGN_OR_SKIP(const uint64_t id, Id("syscalls", "sys_enter_getpid"), "tracepoint syscalls:sys_enter_getpid");
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), MakeAttr(PERF_TYPE_TRACEPOINT, id)));
  for (uint64_t n : {10, 250}) {
    ASSERT_OK(ev.Reset());
    EXPECT_THAT(MeasureCount(ev, Workload::Syscalls(n)), SucceedsWith(n)) << "exactly one per getpid(2)";
  }
  ASSERT_OK(ev.Reset());
  EXPECT_THAT(MeasureCount(ev, Workload::TouchPages(4)), SucceedsWith(0u)) << "no getpid, no count";
}

PERFTEST_CASE(CountingTracepoint, SchedSwitchCountsSleeps, "counting.tracepoint_sched_switch",
              "kernel/sched/core.c __schedule() trace_sched_switch(), before the task's perf context is switched out") {
  PERFTEST_ASSIGN_OR_SKIP(const uint64_t id, Id("sched", "sched_switch"), "tracepoint sched:sched_switch");
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), MakeAttr(PERF_TYPE_TRACEPOINT, id)));
  ASSERT_OK_AND_ASSIGN(const uint64_t count, MeasureCount(ev, Workload::Sleep(6, 200us)));
  ExpectAbout(count, 6, 6 + 8, "one switch away per sleep");
}

PERFTEST_CASE(CountingTracepoint, ForkTracepointCountsChildren, "counting.tracepoint_fork",
              "kernel/fork.c copy_process() -> trace_sched_process_fork(), in the parent") {
  PERFTEST_ASSIGN_OR_SKIP(const uint64_t id, Id("sched", "sched_process_fork"), "tracepoint sched:sched_process_fork");
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), MakeAttr(PERF_TYPE_TRACEPOINT, id)));
  EXPECT_THAT(MeasureCount(ev, Workload::Fork(3)), SucceedsWith(3u));
}

PERFTEST_CASE(CountingTracepoint, ExcludeBitsFollowTheRegs, "counting.tracepoint_exclude",
              "core.c perf_tp_event_match(): exclude_kernel && !user_mode(regs) -> dropped; exclude_user is not "
              "checked; syscall tracepoints pass the task's user regs") {
  RecordDivergence("counting.tracepoint_exclude",
                   "perf_event_open(2) exclude_kernel: 'the count excludes events that happen in kernel space'",
                   "Linux 6.18 tracepoints: syscalls:* still count with exclude_kernel (they carry user regs), "
                   "sched:* do not; exclude_user changes nothing for any tracepoint");
  PERFTEST_ASSIGN_OR_SKIP(const uint64_t getpid, Id("syscalls", "sys_enter_getpid"), "tracepoint syscalls:sys_enter_getpid");
  PERFTEST_ASSIGN_OR_SKIP(const uint64_t sched, Id("sched", "sched_switch"), "tracepoint sched:sched_switch");
  auto with = [&](uint64_t id, bool exclude_user, bool exclude_kernel, const Workload& w) -> uint64_t {
    perf_event_attr a = MakeAttr(PERF_TYPE_TRACEPOINT, id);
    a.exclude_user = exclude_user;
    a.exclude_kernel = exclude_kernel;
    Result<Event> ev = Event::Open(backend(), a);
    EXPECT_OK(ev);
    if (!ev.ok()) return ~uint64_t{0};
    Result<uint64_t> c = MeasureCount(*ev, w);
    EXPECT_OK(c);
    return c.ok() ? *c : ~uint64_t{0};
  };
  EXPECT_EQ(with(getpid, false, true, Workload::Syscalls(20)), 20u) << "syscalls, exclude_kernel";
  EXPECT_EQ(with(getpid, true, false, Workload::Syscalls(20)), 20u) << "syscalls, exclude_user";
  EXPECT_EQ(with(sched, false, true, Workload::Sleep(4, 200us)), 0u) << "sched_switch, exclude_kernel";
  ExpectAbout(with(sched, true, false, Workload::Sleep(4, 200us)), 4, 4 + 8, "sched_switch, exclude_user");
}

PERFTEST_CASE(CountingTracepoint, UnknownIdIsEinval, "counting.tracepoint_unknown_id",
              "kernel/trace/trace_event_perf.c perf_trace_init(): no event with that id -> -EINVAL") {
  for (uint64_t config : {uint64_t{0}, uint64_t{999999}, uint64_t{1} << 40}) {
    EXPECT_THAT(Event::Open(backend(), MakeAttr(PERF_TYPE_TRACEPOINT, config)), FailsWithErrno(EINVAL))
        << "config " << config;
  }
}

// --- breakpoints ---

PERFTEST_CASE(Counting, BreakpointWriteEveryLength, "counting.breakpoint_write_lengths",
              "<linux/hw_breakpoint.h> HW_BREAKPOINT_W, HW_BREAKPOINT_LEN_1/2/4/8; kernel/events/hw_breakpoint.c "
              "perf_bp_event()") {
  for (uint32_t len : {1u, 2u, 4u, 8u}) {
    SCOPED_TRACE(fmt::format("bp_len {}", len));
    volatile uint8_t* target = g_watch + 8;  // aligned to every length
    PERFTEST_ASSIGN_OR_SKIP(Event bp, Event::Open(backend(), Bp(HW_BREAKPOINT_W, target, len)), "a data breakpoint");
    EXPECT_THAT(MeasureCount(bp, Workload::WriteMemory(target, len, 13)), SucceedsWith(13u));
    ASSERT_OK(bp.Reset());
    EXPECT_THAT(MeasureCount(bp, Workload::WriteMemory(target + len, len, 5)), SucceedsWith(0u))
        << "the next location is not watched";
    ASSERT_OK(bp.Reset());
    EXPECT_THAT(MeasureCount(bp, Workload::ReadMemory(target, len, 5)), SucceedsWith(0u)) << "W ignores loads";
  }
}

PERFTEST_CASE(Counting, BreakpointReadWrite, "counting.breakpoint_rw",
              "<linux/hw_breakpoint.h> HW_BREAKPOINT_RW: loads and stores") {
  PERFTEST_ASSIGN_OR_SKIP(Event bp, Event::Open(backend(), Bp(HW_BREAKPOINT_RW, g_watch, 8)), "a data breakpoint");
  ASSERT_OK(bp.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::WriteMemory(g_watch, 8, 10)));
  ASSERT_OK(backend().RunWorkload(Workload::ReadMemory(g_watch, 8, 7)));
  ASSERT_OK(bp.Disable());
  EXPECT_THAT(bp.ReadValue(), SucceedsWith(17u));
}

PERFTEST_CASE(Counting, BreakpointExecute, "counting.breakpoint_x",
              "<linux/hw_breakpoint.h> HW_BREAKPOINT_X with bp_len sizeof(long) (x86 arch_build_bp_info())") {
  PERFTEST_ASSIGN_OR_SKIP(Event bp,
                          Event::Open(backend(), Bp(HW_BREAKPOINT_X, reinterpret_cast<const void*>(ExecuteTargetAddress()),
                                                    sizeof(long))),
                          "an instruction breakpoint");
  for (uint64_t n : {9, 40}) {
    ASSERT_OK(bp.Reset());
    EXPECT_THAT(MeasureCount(bp, Workload::Execute(n)), SucceedsWith(n));
  }
}

PERFTEST_CASE(Counting, BreakpointAccessOverlap, "counting.breakpoint_overlap",
              "x86 debug registers: a data breakpoint fires on any access overlapping [bp_addr, bp_addr + bp_len)") {
  if (!X86()) PERFTEST_SKIP(SkipClass::kUnsupported, "overlap rules checked here are x86's debug registers");
  PERFTEST_ASSIGN_OR_SKIP(Event bp, Event::Open(backend(), Bp(HW_BREAKPOINT_W, g_watch + 2, 2)), "a data breakpoint");
  ASSERT_OK(bp.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::WriteMemory(g_watch, 8, 10)));      // covers bytes 2-3
  ASSERT_OK(backend().RunWorkload(Workload::WriteMemory(g_watch + 1, 1, 3)));   // byte 1: outside
  ASSERT_OK(backend().RunWorkload(Workload::WriteMemory(g_watch + 3, 1, 5)));   // byte 3: inside
  ASSERT_OK(backend().RunWorkload(Workload::WriteMemory(g_watch + 4, 4, 2)));   // bytes 4-7: outside
  ASSERT_OK(bp.Disable());
  EXPECT_THAT(bp.ReadValue(), SucceedsWith(15u));
}

PERFTEST_CASE(Counting, BreakpointExcludeUser, "counting.breakpoint_exclude_user",
              "kernel/events/hw_breakpoint.c perf_bp_event(): perf_exclude_event() of a user-mode access") {
  perf_event_attr a = Bp(HW_BREAKPOINT_W, g_watch, 8);
  a.exclude_user = 1;
  a.exclude_kernel = 0;
  PERFTEST_ASSIGN_OR_SKIP(Event bp, Event::Open(backend(), a), "a data breakpoint");
  EXPECT_THAT(MeasureCount(bp, Workload::WriteMemory(g_watch, 8, 10)), SucceedsWith(0u));
}

PERFTEST_CASE(Counting, BreakpointAttrRules, "counting.breakpoint_attr_rules",
              "arch/x86/kernel/hw_breakpoint.c arch_build_bp_info(), hw_breakpoint_arch_parse(); "
              "kernel/events/hw_breakpoint.c hw_breakpoint_parse()") {
  if (!X86()) PERFTEST_SKIP(SkipClass::kUnsupported, "the rules checked here are x86's");
  PERFTEST_ASSIGN_OR_SKIP(Event probe, Event::Open(backend(), Bp(HW_BREAKPOINT_W, g_watch, 8)), "a data breakpoint");
  ASSERT_OK(probe.Close());
  struct Case {
    uint32_t type;
    uint64_t offset, len;
    int err;
    const char* what;
  };
  const Case cases[] = {
      {HW_BREAKPOINT_R, 0, 8, EINVAL, "x86 has no read-only breakpoint"},
      {HW_BREAKPOINT_EMPTY, 0, 8, EINVAL, "HW_BREAKPOINT_EMPTY"},
      {HW_BREAKPOINT_W | HW_BREAKPOINT_X, 0, 8, EINVAL, "W|X"},
      {HW_BREAKPOINT_W, 0, 0, EINVAL, "length 0"},
      {HW_BREAKPOINT_W, 0, 3, EINVAL, "length 3"},
      {HW_BREAKPOINT_W, 0, 16, EOPNOTSUPP, "length 16: an AMD range breakpoint (needs BPEXT)"},
      {HW_BREAKPOINT_W, 1, 2, EINVAL, "misaligned for its length"},
      {HW_BREAKPOINT_W, 4, 8, EINVAL, "misaligned for its length"},
      {HW_BREAKPOINT_X, 0, 4, EINVAL, "execute needs sizeof(long)"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(Event::Open(backend(), Bp(c.type, g_watch + c.offset, c.len)), FailsWithErrno(c.err)) << c.what;
  }
  perf_event_attr kernel_addr = Bp(HW_BREAKPOINT_W, reinterpret_cast<const void*>(0xffffffff81000000ull), 8);
  EXPECT_THAT(Event::Open(backend(), kernel_addr), FailsWithErrno(EINVAL)) << "a kernel address with exclude_kernel";
}

PERFTEST_CASE(Counting, BreakpointSlotsRunOut, "counting.breakpoint_slots",
              "kernel/events/hw_breakpoint.c reserve_bp_slot() -> -ENOSPC; x86: HBP_NUM = 4 debug registers") {
  std::vector<Event> held;
  Result<Event> last = Result<Event>::Failure(0);
  for (int i = 0; i < 16; ++i) {
    last = Event::Open(backend(), Bp(HW_BREAKPOINT_W, g_watch + 8 * (i % 8), 8));
    if (!last.ok()) break;
    held.push_back(std::move(*last));
  }
  if (held.empty()) {
    if (auto c = UnavailableClass(last.error())) PERFTEST_SKIP(*c, "a data breakpoint: " + last.ToString());
  }
  EXPECT_THAT(last, FailsWithErrno(ENOSPC)) << "after " << held.size() << " breakpoints";
  if (X86()) {
    EXPECT_EQ(held.size(), 4u) << "four debug registers, held from open (disabled or not)";
  }
  held.pop_back();
  EXPECT_THAT(Event::Open(backend(), Bp(HW_BREAKPOINT_W, g_watch, 8)), Succeeds()) << "a closed one frees its slot";
}

// --- hardware, hw_cache, raw ---

PERFTEST_CASE(Counting, HardwareInstructions, "counting.hw_instructions",
              "<linux/perf_event.h> PERF_COUNT_HW_INSTRUCTIONS: 'retired instructions'") {
  PERFTEST_REQUIRE_HARDWARE();
  ASSERT_OK_AND_ASSIGN(Event ev,
                       Event::Open(backend(), CounterAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, kTimed)));
  uint64_t last = 0;
  for (uint64_t n : {100000, 1000000}) {
    ASSERT_OK(ev.Reset());
    ASSERT_OK_AND_ASSIGN(const uint64_t count, MeasureCount(ev, Workload::Instructions(n)));
    if (exact()) {
      EXPECT_EQ(count, n);
    } else {
      EXPECT_GE(count, n * 9 / 10);
      EXPECT_LE(count, n + n / 10 + 100000);
    }
    EXPECT_GT(count, last);
    last = count;
  }
}

PERFTEST_CASE(Counting, HardwareCyclesTrackRunningTime, "counting.hw_cycles",
              "<linux/perf_event.h> PERF_COUNT_HW_CPU_CYCLES; the core clock while the task runs") {
  PERFTEST_REQUIRE_HARDWARE();
  ASSERT_OK_AND_ASSIGN(Event ev,
                       Event::Open(backend(), CounterAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, kTimed)));
  ASSERT_OK_AND_ASSIGN(ReadValues v, Measure(ev, Workload::Spin(4ms)));
  const double ghz = static_cast<double>(v.counters[0].value) / static_cast<double>(*v.time_running);
  EXPECT_GT(ghz, 0.1) << "cycles per ns of running time";
  EXPECT_LT(ghz, 10.0);
  EXPECT_EQ(*v.time_enabled, *v.time_running) << "one event: never multiplexed";
}

PERFTEST_CASE(Counting, HardwareGenericEvents, "counting.hw_generic_events",
              "<linux/perf_event.h> enum perf_hw_id; arch/x86/events/core.c x86_setup_perfctr(): an unmapped "
              "generic event -> -ENOENT, config >= PERF_COUNT_HW_MAX -> -EINVAL") {
  PERFTEST_REQUIRE_HARDWARE();
  for (uint64_t config = 0; config < PERF_COUNT_HW_MAX; ++config) {
    Result<Event> ev = Event::Open(backend(), CounterAttr(PERF_TYPE_HARDWARE, config, kTimed));
    if (config == PERF_COUNT_HW_CPU_CYCLES || config == PERF_COUNT_HW_INSTRUCTIONS) {
      EXPECT_THAT(ev, Succeeds()) << "every hardware PMU has cycles and instructions";
    } else if (!ev.ok()) {
      EXPECT_EQ(ev.error(), ENOENT) << "config " << config << ": not mapped on this PMU is ENOENT";
    }
  }
  EXPECT_THAT(Event::Open(backend(), CounterAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_MAX, kTimed)),
              FailsWithErrno(EINVAL));
}

PERFTEST_CASE(Counting, HardwareCacheL1dReads, "counting.hw_cache",
              "<linux/perf_event.h> PERF_TYPE_HW_CACHE: id | op << 8 | result << 16; x86 set_ext_hw_attr(): "
              "an id, op or result past its MAX -> -EINVAL") {
  PERFTEST_REQUIRE_HARDWARE();
  const uint64_t l1d_read = CacheConfig(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_OP_READ,
                                        PERF_COUNT_HW_CACHE_RESULT_ACCESS);
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), CounterAttr(PERF_TYPE_HW_CACHE, l1d_read, kTimed)));
  ASSERT_OK_AND_ASSIGN(const uint64_t count, MeasureCount(ev, Workload::ReadMemory(g_watch, 8, 100000)));
  if (exact()) {
    EXPECT_EQ(count, 100000u);
  } else {
    EXPECT_GE(count, 100000u) << "every load reads L1D";
  }
  for (uint64_t bad : {CacheConfig(PERF_COUNT_HW_CACHE_MAX, 0, 0), CacheConfig(0, PERF_COUNT_HW_CACHE_OP_MAX, 0),
                       CacheConfig(0, 0, PERF_COUNT_HW_CACHE_RESULT_MAX)}) {
    EXPECT_THAT(Event::Open(backend(), CounterAttr(PERF_TYPE_HW_CACHE, bad, kTimed)), FailsWithErrno(EINVAL))
        << fmt::format("config {:#x}", bad);
  }
}

PERFTEST_CASE(Counting, RawEventInstructionsRetired, "counting.raw_event",
              "<linux/perf_event.h> PERF_TYPE_RAW; Intel SDM vol. 3B 'architectural performance events': "
              "INST_RETIRED.ANY_P = event 0xc0 umask 0x00") {
  PERFTEST_REQUIRE_HARDWARE();
  if (!X86()) PERFTEST_SKIP(SkipClass::kUnsupported, "the raw encoding used here is x86's (event 0xc0)");
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), CounterAttr(PERF_TYPE_RAW, 0xc0, kTimed)));
  ASSERT_OK_AND_ASSIGN(const uint64_t count, MeasureCount(ev, Workload::Instructions(500000)));
  if (exact()) {
    EXPECT_EQ(count, 500000u);
  } else {
    EXPECT_GE(count, 450000u);
    EXPECT_LE(count, 650000u);
  }
}

PERFTEST_CASE(Counting, HardwareExcludeUserAndKernel, "counting.hw_exclude",
              "perf_event_open(2) exclude_user/exclude_kernel; x86 ARCH_PERFMON_EVENTSEL_USR/OS") {
  PERFTEST_REQUIRE_HARDWARE();
  perf_event_attr a = CounterAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, kTimed);
  a.exclude_kernel = 0;
  a.exclude_user = 1;
  ASSERT_OK_AND_ASSIGN(Event kernel_only, Event::Open(backend(), a));
  ASSERT_OK_AND_ASSIGN(Event user_only,
                       Event::Open(backend(), CounterAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, kTimed)));
  constexpr uint64_t kN = 1000000;
  ASSERT_OK(kernel_only.Enable());
  ASSERT_OK(user_only.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::Instructions(kN)));
  ASSERT_OK(user_only.Disable());
  ASSERT_OK(kernel_only.Disable());
  ASSERT_OK_AND_ASSIGN(const uint64_t kernel, kernel_only.ReadValue());
  ASSERT_OK_AND_ASSIGN(const uint64_t user, user_only.ReadValue());
  if (exact()) {
    EXPECT_EQ(kernel, 0u);
    EXPECT_EQ(user, kN);
  } else {
    EXPECT_LT(kernel, kN / 10) << "the loop runs in user mode";
    EXPECT_GE(user, kN * 9 / 10);
  }
}

PERFTEST_CASE(Counting, HardwareGroupCountsTogether, "counting.hw_group",
              "perf_event_open(2) group_fd: 'scheduled onto the CPU as a unit'; PERF_FORMAT_GROUP") {
  PERFTEST_REQUIRE_HARDWARE();
  perf_event_attr leader = CounterAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, kTimed);
  leader.read_format = kTimes | PERF_FORMAT_GROUP;
  perf_event_attr member = CounterAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, kTimed);
  member.disabled = 0;
  ASSERT_OK_AND_ASSIGN(Group g, Group::Open(backend(), leader, {member}));
  ASSERT_OK(g.leader().Enable());
  ASSERT_OK(backend().RunWorkload(Workload::Instructions(1000000)));
  ASSERT_OK(g.leader().Disable());
  ASSERT_OK_AND_ASSIGN(ReadValues v, g.leader().Read(2));
  ASSERT_EQ(v.counters.size(), 2u);
  EXPECT_GT(v.counters[0].value, 0u) << "cycles";
  if (exact()) {
    EXPECT_EQ(v.counters[1].value, 1000000u) << "instructions";
  } else {
    EXPECT_GE(v.counters[1].value, 900000u);
  }
  EXPECT_EQ(*v.time_enabled, *v.time_running) << "a group that fits the counters is not multiplexed";
}

PERFTEST_CASE(Counting, HardwareGroupTooBigForTheCounters, "counting.hw_group_too_big",
              "arch/x86/events/core.c validate_group(): x86_pmu.schedule_events() fails -> -EINVAL at open") {
  PERFTEST_REQUIRE_HARDWARE();
  // Branch instructions need a general-purpose counter: at most as many as there are.
  ASSERT_OK_AND_ASSIGN(
      Event leader, Event::Open(backend(), CounterAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, kTimed)));
  std::vector<Event> members;
  Result<Event> last = Result<Event>::Failure(0);
  for (int i = 0; i < 64; ++i) {
    last = Event::Open(backend(), CounterAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, kTimed), 0, -1,
                       &leader);
    if (!last.ok()) break;
    members.push_back(std::move(*last));
  }
  EXPECT_THAT(last, FailsWithErrno(EINVAL)) << "after a group of " << members.size() + 1;
  EXPECT_GE(members.size() + 1, 2u) << "every x86 PMU has at least two general-purpose counters";
}

}  // namespace
}  // namespace perftest
