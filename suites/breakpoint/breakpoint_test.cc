// Conformance suite: breakpoint — PERF_TYPE_BREAKPOINT events: bp_type
// R/W/RW/X/EMPTY, bp_len and alignment, exact counts per access, sample
// ip/addr, the debug-register slot pool, PERF_EVENT_IOC_MODIFY_ATTRIBUTES.
//
// Breakpoints need no hardware PMU (the debug registers are always there on
// x86), so everything runs for real on the kernel here. The targets are
// file-scope volatile variables and the never-inlined function of
// Workload::Execute. The exact bp_type/bp_len rules checked are x86's; other
// arches skip those with that reason.
// References: <linux/hw_breakpoint.h>; perf_event_open(2) "bp_type", "bp_addr",
// "bp_len"; kernel/events/hw_breakpoint.c hw_breakpoint_parse(),
// reserve_bp_slot(), modify_user_hw_breakpoint_check(), perf_bp_event();
// arch/x86/kernel/hw_breakpoint.c arch_build_bp_info(),
// hw_breakpoint_arch_parse(); kernel/events/core.c perf_event_modify_breakpoint().
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/hw_breakpoint.h>

#include <optional>
#include <string>
#include <vector>

#include "harness/attr.h"
#include "harness/event.h"
#include "harness/records.h"
#include "harness/ring_buffer.h"
#include "harness/syscall_matchers.h"
#include "suites/common/measure.h"
#include "suites/common/records_util.h"
#include "suites/common/suite.h"

namespace perftest {
namespace {

// Breakpoint targets: volatile, so every access of the workload is a real access.
alignas(64) volatile uint8_t g_area[64];
alignas(8) volatile uint64_t g_other;

// A user-space breakpoint on `addr` (exclude_kernel, as an unprivileged tool sets it).
perf_event_attr Bp(uint32_t type, uint64_t addr, uint64_t len) {
  perf_event_attr a = MakeAttr(PERF_TYPE_BREAKPOINT, 0);
  a.bp_type = type;
  a.bp_addr = addr;
  a.bp_len = len;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  return a;
}
uint64_t Addr(const volatile void* p) { return reinterpret_cast<uint64_t>(p); }
perf_event_attr Bp(uint32_t type, const volatile void* p, uint64_t len) { return Bp(type, Addr(p), len); }
perf_event_attr ExecBp() { return Bp(HW_BREAKPOINT_X, ExecuteTargetAddress(), sizeof(long)); }

class Breakpoint : public SuiteTest {
 protected:
  // Whether breakpoints work at all here (a W breakpoint on g_area opens).
  // When they do not, unavailable_class_/unavailable_reason_ say why for
  // REQUIRE_BREAKPOINTS' skip (UnavailableClass() of the open's errno); any
  // other errno is a failure.
  bool Available() {
    perf_event_attr a = Bp(HW_BREAKPOINT_W, g_area, 8);
    Result<int> fd = backend().PerfEventOpen(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd.ok()) {
      (void)backend().Close(*fd);
      return true;
    }
    if (std::optional<SkipClass> c = UnavailableClass(fd.error())) {
      unavailable_class_ = *c;
      unavailable_reason_ = "a data breakpoint does not open: " + fd.ToString();
      return false;
    }
    ADD_FAILURE() << fd.ToString();
    return false;
  }
  SkipClass unavailable_class_ = SkipClass::kUnsupported;
  std::string unavailable_reason_;
  bool X86() { return backend().Machine().arch == "x86_64"; }
  uint64_t Count(Event& ev, const Workload& w) {
    Result<uint64_t> n = MeasureCount(backend(), ev, w);
    EXPECT_OK(n);
    return n.ok() ? *n : ~uint64_t{0};
  }
  Result<int> Modify(Event& ev, const perf_event_attr& attr) {
    return backend().Ioctl(ev.fd(), PERF_EVENT_IOC_MODIFY_ATTRIBUTES, reinterpret_cast<uintptr_t>(&attr));
  }
  // Runs `w` with `ev` enabled; the samples its buffer got.
  std::vector<SampleRecord> Samples(Event& ev, const Workload& w) {
    Result<RingBuffer> rb = RingBuffer::Map(backend(), ev.fd(), 8);
    EXPECT_OK(rb);
    if (!rb.ok()) return {};
    EXPECT_OK(MeasureCount(backend(), ev, w));
    Result<std::vector<ParsedRecord>> recs = DrainRecords(*rb, SampleLayout::FromAttr(ev.attr()), true);
    EXPECT_OK(recs);
    std::vector<SampleRecord> out;
    if (recs.ok()) {
      for (const SampleRecord* s : SamplesOf(*recs)) out.push_back(*s);
    }
    return out;
  }
};

#define REQUIRE_BREAKPOINTS()                                                                           \
  do {                                                                                                  \
    if (!Available()) {                                                                                 \
      if (HasFailure()) return;                                                                         \
      PERFTEST_SKIP(unavailable_class_, unavailable_reason_);                                           \
    }                                                                                                   \
  } while (0)
#define REQUIRE_X86()                                                                                   \
  do {                                                                                                  \
    if (!X86()) PERFTEST_SKIP(SkipClass::kUnsupported, "the bp_type/bp_len rules checked are x86's");   \
  } while (0)

PERFTEST_CASE(Breakpoint, ReadWriteEveryLength, "breakpoint.rw_lengths",
              "<linux/hw_breakpoint.h> HW_BREAKPOINT_RW, HW_BREAKPOINT_LEN_1/2/4/8; hw_breakpoint.c perf_bp_event(): "
              "one count per access") {
  REQUIRE_BREAKPOINTS();
  for (uint32_t len : {1u, 2u, 4u, 8u}) {
    SCOPED_TRACE(fmt::format("bp_len {}", len));
    volatile uint8_t* target = g_area + 16;
    ASSERT_OK_AND_ASSIGN(Event bp, Event::Open(backend(), Bp(HW_BREAKPOINT_RW, target, len)));
    ASSERT_OK(bp.Enable());
    ASSERT_OK(backend().RunWorkload(Workload::ReadMemory(target, len, 11)));
    ASSERT_OK(backend().RunWorkload(Workload::WriteMemory(target, len, 6)));
    ASSERT_OK(backend().RunWorkload(Workload::ReadMemory(target + len, len, 9)));  // next location: unwatched
    ASSERT_OK(bp.Disable());
    EXPECT_THAT(bp.ReadValue(), SucceedsWith(17u)) << "loads and stores of the watched bytes only";
  }
}

PERFTEST_CASE(Breakpoint, ReadOnlyTypeRefusedOnX86, "breakpoint.type_r",
              "arch/x86/kernel/hw_breakpoint.c arch_build_bp_info(): HW_BREAKPOINT_R alone -> -EINVAL (the debug "
              "registers have no read-only condition); HW_BREAKPOINT_R|W == HW_BREAKPOINT_RW") {
  REQUIRE_BREAKPOINTS();
  REQUIRE_X86();
  RecordDivergence("breakpoint.type_r",
                   "<linux/hw_breakpoint.h> and perf_event_open(2) bp_type list HW_BREAKPOINT_R ('count when we read "
                   "the memory location')",
                   "x86 refuses HW_BREAKPOINT_R alone with EINVAL (arch_build_bp_info()); reads are watched only by "
                   "HW_BREAKPOINT_RW");
  for (uint64_t len : {1, 2, 4, 8}) {
    EXPECT_THAT(Event::Open(backend(), Bp(HW_BREAKPOINT_R, g_area, len)), FailsWithErrno(EINVAL)) << "len " << len;
  }
  ASSERT_OK_AND_ASSIGN(Event rw, Event::Open(backend(), Bp(HW_BREAKPOINT_R | HW_BREAKPOINT_W, g_area, 4)));
  EXPECT_EQ(Count(rw, Workload::ReadMemory(g_area, 4, 5)), 5u) << "R|W is RW: loads count";
}

PERFTEST_CASE(Breakpoint, EmptyAndInvalidTypesRefused, "breakpoint.type_empty",
              "<linux/hw_breakpoint.h> HW_BREAKPOINT_EMPTY (0), HW_BREAKPOINT_INVALID (RW|X); hw_breakpoint.c "
              "reserve_bp_slot()/hw_breakpoint_parse() -> -EINVAL") {
  REQUIRE_BREAKPOINTS();
  for (uint32_t type : {uint32_t{HW_BREAKPOINT_EMPTY}, uint32_t{HW_BREAKPOINT_INVALID},
                        uint32_t{HW_BREAKPOINT_W | HW_BREAKPOINT_X}}) {
    EXPECT_THAT(Event::Open(backend(), Bp(type, g_area, 8)), FailsWithErrno(EINVAL)) << "bp_type " << type;
  }
}

PERFTEST_CASE(Breakpoint, DataAddressAlignedToLength, "breakpoint.alignment",
              "arch/x86/kernel/hw_breakpoint.c hw_breakpoint_arch_parse(): bp_addr & (bp_len - 1) -> -EINVAL") {
  REQUIRE_BREAKPOINTS();
  REQUIRE_X86();
  for (uint64_t len : {1, 2, 4, 8}) {
    for (uint64_t off = 0; off < 8; ++off) {
      const perf_event_attr a = Bp(HW_BREAKPOINT_W, g_area + 8 + off, len);
      if (off % len == 0) {
        EXPECT_THAT(Event::Open(backend(), a), Succeeds()) << fmt::format("len {} offset {}", len, off);
      } else {
        EXPECT_THAT(Event::Open(backend(), a), FailsWithErrno(EINVAL)) << fmt::format("len {} offset {}", len, off);
      }
    }
  }
}

PERFTEST_CASE(Breakpoint, ExecuteNeedsLongLength, "breakpoint.x_len",
              "arch/x86/kernel/hw_breakpoint.c arch_build_bp_info(): HW_BREAKPOINT_X needs bp_len == sizeof(long), "
              "else -EINVAL; an execute breakpoint counts each execution") {
  REQUIRE_BREAKPOINTS();
  REQUIRE_X86();
  for (uint64_t len : {1, 2, 4, 16}) {
    EXPECT_THAT(Event::Open(backend(), Bp(HW_BREAKPOINT_X, ExecuteTargetAddress(), len)), FailsWithErrno(EINVAL))
        << "len " << len;
  }
  ASSERT_OK_AND_ASSIGN(Event x, Event::Open(backend(), ExecBp()));
  EXPECT_EQ(Count(x, Workload::Execute(23)), 23u);
}

PERFTEST_CASE(Breakpoint, KindsDoNotMix, "breakpoint.kinds_separate",
              "<linux/hw_breakpoint.h>: an execute breakpoint ignores data accesses at its address, a data "
              "breakpoint ignores instruction fetches") {
  REQUIRE_BREAKPOINTS();
  ASSERT_OK_AND_ASSIGN(Event x, Event::Open(backend(), ExecBp()));
  EXPECT_EQ(Count(x, Workload::ReadMemory(g_area, 8, 10)), 0u) << "loads elsewhere";
  ASSERT_OK_AND_ASSIGN(Event w, Event::Open(backend(), Bp(HW_BREAKPOINT_W, g_area, 8)));
  EXPECT_EQ(Count(w, Workload::Execute(10)), 0u) << "executing code is not a store to g_area";
  ASSERT_OK_AND_ASSIGN(Event rw, Event::Open(backend(), Bp(HW_BREAKPOINT_RW, ExecuteTargetAddress(), 1)));
  EXPECT_EQ(Count(rw, Workload::Execute(10)), 0u) << "an RW breakpoint on code does not see its execution";
}

PERFTEST_CASE(Breakpoint, SampleAddrIsBpAddr, "breakpoint.sample_addr",
              "hw_breakpoint.c perf_bp_event(): perf_sample_data_init(&sample, bp->attr.bp_addr, 0): "
              "PERF_SAMPLE_ADDR is bp_addr (not the access's address); a data breakpoint traps after the access") {
  REQUIRE_BREAKPOINTS();
  perf_event_attr a = Bp(HW_BREAKPOINT_W, g_area + 2, 2);
  a.sample_period = 1;
  a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_ADDR | PERF_SAMPLE_TID;
  ASSERT_OK_AND_ASSIGN(Event bp, Event::Open(backend(), a));
  const std::vector<SampleRecord> samples = Samples(bp, Workload::WriteMemory(g_area, 8, 7));  // covers bytes 2-3
  ASSERT_EQ(samples.size(), 7u) << "one sample per store";
  for (const SampleRecord& s : samples) {
    EXPECT_EQ(s.addr.value_or(0), Addr(g_area + 2)) << "addr = bp_addr; the store began at g_area";
    EXPECT_NE(s.ip.value_or(0), 0u);
    if (X86()) {
      EXPECT_LT(s.ip.value_or(~uint64_t{0}), uint64_t{0x0000800000000000}) << "a user-mode ip";
    }
    EXPECT_EQ(s.tid.value_or(0), static_cast<uint32_t>(backend().CurrentTask().tid));
  }
}

PERFTEST_CASE(Breakpoint, SampleIpOfExecuteIsTheInstruction, "breakpoint.sample_ip_x",
              "x86: an instruction breakpoint is a fault (before the instruction runs), so the sample ip is bp_addr; "
              "hw_breakpoint.c perf_bp_event()") {
  REQUIRE_BREAKPOINTS();
  REQUIRE_X86();
  perf_event_attr a = ExecBp();
  a.sample_period = 1;
  a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_ADDR;
  ASSERT_OK_AND_ASSIGN(Event bp, Event::Open(backend(), a));
  const std::vector<SampleRecord> samples = Samples(bp, Workload::Execute(5));
  ASSERT_EQ(samples.size(), 5u);
  for (const SampleRecord& s : samples) {
    EXPECT_EQ(s.ip.value_or(0), ExecuteTargetAddress());
    EXPECT_EQ(s.addr.value_or(0), ExecuteTargetAddress());
  }
}

PERFTEST_CASE(Breakpoint, SamplePeriodCountsAccesses, "breakpoint.sample_period",
              "hw_breakpoint.c perf_bp_event() -> core.c perf_swevent_event(): an overflow every sample_period "
              "accesses; with PERF_SAMPLE_PERIOD (no freq) every access, period 1") {
  REQUIRE_BREAKPOINTS();
  perf_event_attr a = Bp(HW_BREAKPOINT_W, g_area, 8);
  a.sample_period = 4;
  a.sample_type = PERF_SAMPLE_IP;
  ASSERT_OK_AND_ASSIGN(Event every4, Event::Open(backend(), a));
  EXPECT_EQ(Samples(every4, Workload::WriteMemory(g_area, 8, 21)).size(), 5u) << "21 stores, one sample per 4";
  EXPECT_THAT(every4.ReadValue(), SucceedsWith(21u));
  a.sample_type |= PERF_SAMPLE_PERIOD;
  ASSERT_OK_AND_ASSIGN(Event every1, Event::Open(backend(), a));
  const std::vector<SampleRecord> samples = Samples(every1, Workload::WriteMemory(g_area, 8, 6));
  EXPECT_EQ(samples.size(), 6u) << "PERF_SAMPLE_PERIOD: every access";
  for (const SampleRecord& s : samples) EXPECT_EQ(s.period.value_or(0), 1u);
}

PERFTEST_CASE(Breakpoint, DataAndExecuteShareTheSlots, "breakpoint.slots_shared",
              "kernel/events/hw_breakpoint.c reserve_bp_slot() -> -ENOSPC; x86 "
              "CONFIG_HAVE_MIXED_BREAKPOINTS_REGS: data and instruction breakpoints share HBP_NUM = 4 registers") {
  REQUIRE_BREAKPOINTS();
  REQUIRE_X86();
  std::vector<Event> held;
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK_AND_ASSIGN(Event e, Event::Open(backend(), Bp(HW_BREAKPOINT_W, g_area + 8 * i, 8)));
    held.push_back(std::move(e));
    ASSERT_OK_AND_ASSIGN(Event x, Event::Open(backend(), ExecBp()));
    held.push_back(std::move(x));
  }
  EXPECT_THAT(Event::Open(backend(), ExecBp()), FailsWithErrno(ENOSPC)) << "a fifth, instruction";
  EXPECT_THAT(Event::Open(backend(), Bp(HW_BREAKPOINT_RW, g_area, 1)), FailsWithErrno(ENOSPC)) << "a fifth, data";
  held.erase(held.begin() + 1);  // close one instruction breakpoint
  EXPECT_THAT(Event::Open(backend(), Bp(HW_BREAKPOINT_RW, g_area, 1)), Succeeds()) << "its slot takes a data one";
}

PERFTEST_CASE(Breakpoint, ModifyTypeDataToExecute, "breakpoint.modify_type",
              "core.c perf_event_modify_breakpoint() -> modify_user_hw_breakpoint_check(): bp_type may change "
              "(modify_bp_slot()), together with bp_addr and bp_len") {
  REQUIRE_BREAKPOINTS();
  REQUIRE_X86();
  perf_event_attr a = Bp(HW_BREAKPOINT_W, g_area, 8);
  a.disabled = 0;
  ASSERT_OK_AND_ASSIGN(Event bp, Event::Open(backend(), a));
  ASSERT_OK(backend().RunWorkload(Workload::WriteMemory(g_area, 8, 3)));
  perf_event_attr x = a;
  x.bp_type = HW_BREAKPOINT_X;
  x.bp_addr = ExecuteTargetAddress();
  x.bp_len = sizeof(long);
  ASSERT_THAT(Modify(bp, x), SucceedsWith(0));
  ASSERT_OK(backend().RunWorkload(Workload::WriteMemory(g_area, 8, 3)));
  ASSERT_OK(backend().RunWorkload(Workload::Execute(4)));
  EXPECT_THAT(bp.ReadValue(), SucceedsWith(7u)) << "3 stores before, then 4 executions; the count carries over";
  perf_event_attr back = a;
  back.bp_type = HW_BREAKPOINT_RW;
  ASSERT_THAT(Modify(bp, back), SucceedsWith(0));
  ASSERT_OK(backend().RunWorkload(Workload::ReadMemory(g_area, 8, 2)));
  ASSERT_OK(backend().RunWorkload(Workload::Execute(4)));
  EXPECT_THAT(bp.ReadValue(), SucceedsWith(9u)) << "RW on g_area again";
}

PERFTEST_CASE(Breakpoint, ModifyLengthNarrowsTheWatch, "breakpoint.modify_len",
              "core.c perf_event_modify_breakpoint(): hw_breakpoint_copy_attr() copies bp_len") {
  REQUIRE_BREAKPOINTS();
  perf_event_attr a = Bp(HW_BREAKPOINT_W, g_area + 8, 8);
  a.disabled = 0;
  ASSERT_OK_AND_ASSIGN(Event bp, Event::Open(backend(), a));
  ASSERT_OK(backend().RunWorkload(Workload::WriteMemory(g_area + 12, 1, 5)));
  EXPECT_THAT(bp.ReadValue(), SucceedsWith(5u)) << "byte 4 of the 8 watched";
  perf_event_attr narrow = a;
  narrow.bp_len = 2;
  ASSERT_THAT(Modify(bp, narrow), SucceedsWith(0));
  ASSERT_OK(backend().RunWorkload(Workload::WriteMemory(g_area + 12, 1, 5)));
  ASSERT_OK(backend().RunWorkload(Workload::WriteMemory(g_area + 9, 1, 2)));
  EXPECT_THAT(bp.ReadValue(), SucceedsWith(7u)) << "only bytes 0-1 are watched now";
}

PERFTEST_CASE(Breakpoint, ModifyRefusalsKeepTheOldWatch, "breakpoint.modify_einval",
              "hw_breakpoint.c modify_user_hw_breakpoint_check(): hw_breakpoint_parse() of the new attr (-EINVAL for "
              "a misaligned address, an EMPTY or R type on x86), any field other than bp_addr/bp_type/bp_len/"
              "disabled changed -> -EINVAL; the breakpoint keeps its old settings") {
  REQUIRE_BREAKPOINTS();
  REQUIRE_X86();
  perf_event_attr a = Bp(HW_BREAKPOINT_W, &g_other, 8);
  a.disabled = 0;
  ASSERT_OK_AND_ASSIGN(Event bp, Event::Open(backend(), a));
  std::vector<std::pair<perf_event_attr, const char*>> bad;
  perf_event_attr m = a;
  m.bp_addr = Addr(g_area + 4);
  bad.emplace_back(m, "bp_addr misaligned for bp_len 8");
  m = a;
  m.bp_type = HW_BREAKPOINT_EMPTY;
  bad.emplace_back(m, "bp_type EMPTY");
  m = a;
  m.bp_type = HW_BREAKPOINT_R;
  bad.emplace_back(m, "bp_type R");
  m = a;
  m.exclude_user = 1;
  bad.emplace_back(m, "exclude_user changed");
  m = a;
  m.config = 1;
  bad.emplace_back(m, "config changed");
  m = a;
  m.bp_addr = Addr(g_area);
  m.sample_type = PERF_SAMPLE_IP;
  bad.emplace_back(m, "sample_type changed next to a valid bp_addr");
  for (const auto& [attr, what] : bad) EXPECT_THAT(Modify(bp, attr), FailsWithErrno(EINVAL)) << what;
  ASSERT_OK(backend().RunWorkload(Workload::WriteMemory(&g_other, 8, 4)));
  ASSERT_OK(backend().RunWorkload(Workload::WriteMemory(g_area, 8, 4)));
  EXPECT_THAT(bp.ReadValue(), SucceedsWith(4u)) << "still watching g_other only";
}

PERFTEST_CASE(Breakpoint, InheritedIntoChildren, "breakpoint.inherit_fork",
              "core.c inherit_event() -> perf_event_alloc() -> hw_breakpoint_event_init(): each child gets its own "
              "copy with its own slot (per-task reservation, hw_breakpoint.c toggle_bp_slot()); the children's "
              "counts fold into the parent's read (perf_event_read_value(): child_count)") {
  REQUIRE_BREAKPOINTS();
  std::vector<Event> bps;
  for (int i = 0; i < 4; ++i) {
    perf_event_attr a = Bp(HW_BREAKPOINT_W, g_area + 8 * i, 8);
    a.inherit = 1;
    a.disabled = 0;
    Result<Event> ev = Event::Open(backend(), a);
    if (!ev.ok() && ev.error() == ENOSPC) break;  // fewer debug registers than 4 (not x86)
    ASSERT_OK(ev);
    bps.push_back(std::move(*ev));
  }
  ASSERT_FALSE(bps.empty());
  ASSERT_OK_AND_ASSIGN(WorkloadResult forked, backend().RunWorkload(Workload::Fork(3)));
  EXPECT_EQ(forked.children.size(), 3u) << "every child took copies of all the parent's breakpoints";
  ASSERT_OK(backend().RunWorkload(Workload::WriteMemory(g_area, 8, 5)));
  EXPECT_THAT(bps[0].ReadValue(), SucceedsWith(5u)) << "the parent's stores; the children stored nothing";
  if (X86() && bps.size() == 4) {
    EXPECT_THAT(Event::Open(backend(), Bp(HW_BREAKPOINT_W, g_area, 8)), FailsWithErrno(ENOSPC))
        << "the children are gone; the parent still holds all four slots";
  }
}

}  // namespace
}  // namespace perftest
