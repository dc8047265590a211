// Conformance suite: rdpmc — self-monitoring through the first page of an
// event's mmap (struct perf_event_mmap_page): the lock seqlock, index, offset,
// cap_user_rdpmc, pmc_width, the time_* fields, and reading a counter from
// user space with RDPMC.
//
// The page is read with the protocol the UAPI header documents above
// perf_event_mmap_page.lock (ReadPage()). Software events have no counter
// (index 0, cap_user_rdpmc 0): the kernel here checks those for real; the
// RDPMC cases need a hardware PMU and run on the mock's x86_64-intel profile,
// where Backend::ReadPmc() stands in for the instruction.
// References: <linux/perf_event.h> struct perf_event_mmap_page and its
// comments; kernel/events/core.c perf_event_init_userpage(),
// perf_event_update_userpage(), perf_mmap(), _perf_event_reset();
// arch/x86/events/core.c arch_perf_update_userpage(), x86_pmu_event_idx(),
// x86_pmu_event_mapped(); drivers/perf/arm_pmuv3.c and drivers/perf/riscv_pmu.c
// arch_perf_update_userpage() (cap_user_time_short). The time cases read the
// counter the page's time_mult/time_shift convert with Backend::ReadCycleCounter()
// (RDTSC here; the mock's profile sched_clock_counter).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "harness/attr.h"
#include "harness/event.h"
#include "harness/pmu.h"
#include "harness/ring_buffer.h"
#include "harness/syscall_matchers.h"
#include "harness/user_time.h"
#include "suites/common/attrs.h"
#include "suites/common/hardware.h"
#include "suites/common/measure.h"
#include "suites/common/records_util.h"
#include "suites/common/suite.h"

namespace perftest {
namespace {

using namespace std::chrono_literals;

// One consistent snapshot of the page's self-monitoring fields.
struct PageSnapshot {
  uint32_t lock = 0;  // the (even) sequence the snapshot was read under
  uint32_t index = 0;
  int64_t offset = 0;
  uint64_t time_enabled = 0, time_running = 0;
  bool cap_user_rdpmc = false, cap_user_time = false, cap_user_time_zero = false, cap_user_time_short = false;
  uint16_t pmc_width = 0, time_shift = 0;
  uint32_t time_mult = 0;
  uint64_t time_offset = 0, time_zero = 0;
  uint64_t pmc = 0;  // ReadPmc(index) inside the loop, when cap_user_rdpmc && index
  bool pmc_read = false;
  UserTimeFields time;  // the time fields, as harness/user_time.h converts them
  uint64_t cyc = 0;     // ReadCycleCounter() inside the loop, when cap_user_time
  bool cyc_read = false;
  int retries = 0;
};

// The UAPI's loop: "seq = pc->lock; barrier(); ... read ...; barrier();
// } while (pc->lock != seq);" — retried also while the sequence is odd (an
// update in progress). `backend` reads the counter when the page allows it.
PageSnapshot ReadPage(const volatile perf_event_mmap_page& pc, Backend* backend) {
  PageSnapshot s;
  for (;;) {
    const uint32_t seq = pc.lock;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    s.lock = seq;
    s.index = pc.index;
    s.offset = pc.offset;
    s.time_enabled = pc.time_enabled;
    s.time_running = pc.time_running;
    s.cap_user_rdpmc = pc.cap_user_rdpmc;
    s.cap_user_time = pc.cap_user_time;
    s.cap_user_time_zero = pc.cap_user_time_zero;
    s.cap_user_time_short = pc.cap_user_time_short;
    s.pmc_width = pc.pmc_width;
    s.time_shift = pc.time_shift;
    s.time_mult = pc.time_mult;
    s.time_offset = pc.time_offset;
    s.time_zero = pc.time_zero;
    s.time = UserTimeFieldsOf(pc);
    s.pmc_read = false;
    s.cyc_read = false;
    if (backend != nullptr && s.cap_user_time) {
      Result<uint64_t> cyc = backend->ReadCycleCounter();
      if (cyc.ok()) {
        s.cyc = *cyc;
        s.cyc_read = true;
      }
    }
    if (backend != nullptr && s.cap_user_rdpmc && s.index != 0) {
      Result<uint64_t> pmc = backend->ReadPmc(s.index);
      if (pmc.ok()) {
        s.pmc = *pmc;
        s.pmc_read = true;
      }
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (pc.lock == seq && (seq & 1) == 0) return s;
    ++s.retries;
  }
}

// "count = offset; if (cap_user_rdpmc && index) { pmc = rdpmc(index - 1);
// pmc <<= 64 - width; pmc >>= 64 - width; count += pmc; }" (sign-extending).
uint64_t SelfCount(const PageSnapshot& s) {
  uint64_t count = static_cast<uint64_t>(s.offset);
  if (s.pmc_read) {
    const int shift = 64 - s.pmc_width;
    count += static_cast<uint64_t>(static_cast<int64_t>(s.pmc << shift) >> shift);
  }
  return count;
}

class Rdpmc : public SuiteTest {
 protected:
  std::optional<RingBuffer> MapPage(Event& ev) {
    Result<RingBuffer> rb = RingBuffer::Map(backend(), ev.fd(), 0);
    EXPECT_OK(rb);
    if (!rb.ok()) return std::nullopt;
    return std::move(*rb);
  }
  // An enabled counter of `a` with its user page mapped, after one sleep: the
  // switch-in rewrote the page (perf_event_update_userpage() from
  // perf_event_sched_in). nullopt, with the failure recorded, on error.
  struct PagedEvent {
    Event ev;
    RingBuffer rb;
  };
  std::optional<PagedEvent> EnabledWithFreshPage(const perf_event_attr& a) {
    Result<Event> ev = Event::Open(backend(), a);
    EXPECT_OK(ev);
    if (!ev.ok()) return std::nullopt;
    std::optional<RingBuffer> rb = MapPage(*ev);
    if (!rb.has_value()) return std::nullopt;
    EXPECT_OK(ev->Enable());
    EXPECT_OK(backend().RunWorkload(Workload::Sleep(1, 200us)));
    return PagedEvent{std::move(*ev), std::move(*rb)};
  }
  ReadValues Values(Event& ev) {
    Result<ReadValues> v = ev.Read();
    EXPECT_OK(v);
    return v.ok() ? *v : ReadValues{};
  }
  // A hardware counter that user space may read: x86 maps every counter of a
  // mapped event for RDPMC (x86_pmu_event_mapped(), sysfs cpu/rdpmc = 1);
  // arm64 only an event that asks with the core PMU's format term "rdpmc"
  // (config1:1, drivers/perf/arm_pmuv3.c armv8pmu_event_want_user_access()),
  // which this sets wherever a PMU has that format.
  perf_event_attr UserReadable(uint32_t type, uint64_t config) {
    perf_event_attr a = CounterAttr(type, config, kTimed);
    for (const Pmu& p : backend().Machine().pmus) {
      auto term = p.format.find("rdpmc");
      if (term == p.format.end()) continue;
      Result<PmuFormat> f = ParseFormat(term->second);
      if (f.ok() && f->field == "config1") a.config1 |= f->Mask();
      break;
    }
    return a;
  }
  // Why user space got no counter while cap_user_rdpmc says it may read one,
  // or nullopt: on arm64 armv8pmu_user_event_idx() gives index 0 unless
  // sysctl kernel.perf_user_access is 1; on x86 cap_user_rdpmc is 0 instead.
  std::optional<std::string> NoUserCounter(const PageSnapshot& s) {
    if (!s.cap_user_rdpmc) return "cap_user_rdpmc is 0: /sys/bus/event_source/devices/cpu/rdpmc is 0";
    if (s.index == 0 && backend().Machine().arch == "aarch64") {
      return "cap_user_rdpmc is 1 but index is 0 for a counting event: arm64 hands out counters to user space only "
             "with /proc/sys/kernel/perf_user_access = 1 (armv8pmu_user_event_idx())";
    }
    return std::nullopt;
  }
};

#define REQUIRE_HARDWARE()                                                                                          \
  do {                                                                                                              \
    if (auto why = NoHardwareFor(backend(), CounterAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, kTimed))) { \
      PERFTEST_SKIP(why->first, why->second);                                                                       \
    }                                                                                                               \
  } while (0)

PERFTEST_CASE(Rdpmc, PageAfterMmap, "rdpmc.page_after_mmap",
              "core.c perf_event_init_userpage(): cap_bit0_is_deprecated = 1, size = offsetof(__reserved); perf_mmap() "
              "-> perf_event_update_userpage(): one locked update") {
  ASSERT_OK_AND_ASSIGN(Event ev,
                       Event::Open(backend(), CounterAttr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, kTimed)));
  std::optional<RingBuffer> rb = MapPage(ev);
  ASSERT_TRUE(rb.has_value());
  const volatile perf_event_mmap_page& pg = rb->page();
  EXPECT_EQ(pg.lock, 2u) << "one update: ++lock, fields, ++lock";
  EXPECT_EQ(static_cast<uint64_t>(pg.cap_bit0), 0u) << "'Always 0, deprecated'";
  EXPECT_EQ(static_cast<uint64_t>(pg.cap_bit0_is_deprecated), 1u);
  EXPECT_EQ(static_cast<uint64_t>(pg.cap_____res), 0u);
  EXPECT_EQ(pg.size, offsetof(perf_event_mmap_page, __reserved));
  const PageSnapshot s = ReadPage(pg, nullptr);
  EXPECT_EQ(s.index, 0u);
  EXPECT_EQ(s.offset, 0) << "count 0";
  EXPECT_EQ(s.time_enabled, 0u) << "never enabled";
  EXPECT_EQ(s.time_running, 0u);
}

PERFTEST_CASE(Rdpmc, SoftwareEventsHaveNoCounter, "rdpmc.software_index_zero",
              "<linux/perf_event.h> perf_event_mmap_page.index: '0 if not available'; core.c perf_event_index(): "
              "event_idx() of a software PMU is 0; x86 arch_perf_update_userpage(): cap_user_rdpmc only for an "
              "mmapped x86 counter (PERF_EVENT_FLAG_USER_READ_CNT)") {
  for (uint64_t config : {PERF_COUNT_SW_TASK_CLOCK, PERF_COUNT_SW_PAGE_FAULTS, PERF_COUNT_SW_CPU_CLOCK}) {
    SCOPED_TRACE(fmt::format("software config {}", config));
    perf_event_attr a = CounterAttr(PERF_TYPE_SOFTWARE, config, kTimed);
    a.disabled = 0;
    ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), a));
    std::optional<RingBuffer> rb = MapPage(ev);
    ASSERT_TRUE(rb.has_value());
    ASSERT_OK(backend().RunWorkload(Workload::Sleep(1, 200us)));  // a switch-in rewrites the page
    const PageSnapshot s = ReadPage(rb->page(), &backend());
    EXPECT_EQ(s.index, 0u);
    EXPECT_FALSE(s.cap_user_rdpmc);
    EXPECT_TRUE(s.pmc_width == 0 || (s.pmc_width >= 32 && s.pmc_width <= 64))
        << "pmc_width " << s.pmc_width << ": x86_pmu.cntval_bits, 0 without a PMU";
  }
  EXPECT_THAT(backend().ReadPmc(0), FailsWithErrno(EINVAL)) << "index 0 names no counter";
}

PERFTEST_CASE(Rdpmc, SeqlockUpdates, "rdpmc.lock_protocol",
              "<linux/perf_event.h> perf_event_mmap_page.lock 'seqlock for synchronization'; core.c "
              "perf_event_update_userpage() (++lock; fields; ++lock), called when the event goes in and by "
              "_perf_event_reset(); _perf_event_disable() does not call it") {
  RecordDivergence("rdpmc.disable_leaves_page",
                   "<linux/perf_event.h> perf_event_mmap_page: offset, time_enabled and time_running are what a "
                   "self-monitoring reader adds to (no word on when they are refreshed)",
                   "Linux 6.x rewrites the page when the event is scheduled in (ENABLE, each switch-in), on RESET and "
                   "on mmap, but not on DISABLE: after a DISABLE the page keeps the values of the last sched-in, so a "
                   "software event's page lags read(2)");
  ASSERT_OK_AND_ASSIGN(Event ev,
                       Event::Open(backend(), CounterAttr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, kTimed)));
  std::optional<RingBuffer> rb = MapPage(ev);
  ASSERT_TRUE(rb.has_value());
  const volatile perf_event_mmap_page& pg = rb->page();
  const uint32_t at_mmap = pg.lock;
  EXPECT_EQ(at_mmap % 2, 0u) << "even between updates";
  ASSERT_OK(ev.Enable());
  const uint32_t at_enable = pg.lock;
  EXPECT_GE(at_enable, at_mmap + 2) << "ENABLE schedules the event in: an update";
  EXPECT_EQ(at_enable % 2, 0u);
  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(5)));
  // A switch-in between reading the lock and the DISABLE would update the
  // page too (the kernel's task may be preempted): a DISABLE that updated
  // would bump the lock every time, so one clean try in a few proves it does not.
  bool disable_left_page = false;
  for (int attempt = 0; attempt < 5 && !disable_left_page; ++attempt) {
    if (attempt > 0) ASSERT_OK(ev.Enable());
    const uint32_t before = pg.lock;
    ASSERT_OK(ev.Disable());
    disable_left_page = pg.lock == before;
  }
  EXPECT_TRUE(disable_left_page) << "DISABLE rewrote the page on every try";
  const uint32_t before_disable = pg.lock;
  ASSERT_OK(backend().RunWorkload(Workload::Sleep(2, 200us)));
  EXPECT_EQ(pg.lock, before_disable) << "a disabled event is not scheduled in: no updates";
  const PageSnapshot stale = ReadPage(pg, nullptr);
  ASSERT_OK_AND_ASSIGN(uint64_t count, ev.ReadValue());
  EXPECT_GE(count, 5u);
  EXPECT_LE(static_cast<uint64_t>(stale.offset), count) << "the page never runs ahead of read(2)";
  ASSERT_OK(ev.Reset());
  EXPECT_EQ(pg.lock, before_disable + 2) << "RESET rewrites it";
  EXPECT_EQ(ReadPage(pg, nullptr).offset, 0);
}

PERFTEST_CASE(Rdpmc, PageTimesTrackSchedIn, "rdpmc.page_times",
              "core.c perf_event_update_userpage(): time_enabled/time_running as of the update "
              "(calc_timer_values()); never ahead of read(2)'s") {
  perf_event_attr a = CounterAttr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, kTimed);
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), a));
  std::optional<RingBuffer> rb = MapPage(ev);
  ASSERT_TRUE(rb.has_value());
  ASSERT_OK(ev.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::Spin(2ms)));
  ASSERT_OK(backend().RunWorkload(Workload::Sleep(2, 300us)));
  const PageSnapshot s = ReadPage(rb->page(), nullptr);
  ASSERT_OK(ev.Disable());
  const ReadValues v = Values(ev);
  EXPECT_GT(s.time_enabled, 0u) << "the switch-in after the spin rewrote the page";
  EXPECT_EQ(s.time_running, s.time_enabled) << "a software event runs whenever enabled";
  EXPECT_LE(s.time_enabled, v.time_enabled.value_or(0));
  EXPECT_LE(static_cast<uint64_t>(s.offset), v.counters[0].value) << "task-clock ns as of the update";
  EXPECT_GT(s.offset, 0);
}

PERFTEST_CASE(Rdpmc, TimeFieldsFollowTheirCaps, "rdpmc.time_fields",
              "<linux/perf_event.h> cap_user_time / cap_user_time_zero / cap_user_time_short and the conversion in "
              "the comment above time_shift; x86 arch_perf_update_userpage(): set only with a stable native "
              "sched_clock (TSC)") {
  std::optional<PagedEvent> p = EnabledWithFreshPage(CounterAttr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, kTimed));
  ASSERT_TRUE(p.has_value());
  auto& [ev, rb] = *p;
  const PageSnapshot s = ReadPage(rb.page(), nullptr);
  if (!s.cap_user_time) {
    // Nothing to convert with: the fields stay zero.
    EXPECT_EQ(s.time_mult, 0u);
    EXPECT_EQ(s.time_shift, 0u);
    EXPECT_EQ(s.time_offset, 0u);
    EXPECT_FALSE(s.cap_user_time_zero);
  } else {
    EXPECT_NE(s.time_mult, 0u);
    EXPECT_LT(s.time_shift, 64u);
  }
  if (!s.cap_user_time_zero) {
    EXPECT_EQ(s.time_zero, 0u);
  }
#if defined(__x86_64__)
  if (s.cap_user_time && s.cap_user_time_zero && backend().kind() == "kernel") {
    // "timestamp = time_zero + quot * time_mult + ((rem * time_mult) >> time_shift)"
    // is perf's clock (local_clock()), within a few ms of CLOCK_MONOTONIC on x86.
    const uint64_t cyc = __rdtsc();
    const uint64_t quot = cyc >> s.time_shift, rem = cyc & ((uint64_t{1} << s.time_shift) - 1);
    const uint64_t ts = s.time_zero + quot * s.time_mult + ((rem * s.time_mult) >> s.time_shift);
    timespec mono{};
    clock_gettime(CLOCK_MONOTONIC, &mono);
    const int64_t now = static_cast<int64_t>(mono.tv_sec) * 1'000'000'000 + mono.tv_nsec;
    EXPECT_LT(std::llabs(static_cast<int64_t>(ts) - now), 1'000'000'000) << "TSC-derived perf time vs CLOCK_MONOTONIC";
  }
#endif
  ASSERT_OK(ev.Disable());
}

PERFTEST_CASE(Rdpmc, ReadCounterFromUserSpace, "rdpmc.hw_self_count",
              "<linux/perf_event.h> the self-monitoring loop above perf_event_mmap_page.index: count = offset + "
              "sign-extended rdpmc(index - 1) over pmc_width bits; x86_pmu_event_idx(): index = counter + 1") {
  REQUIRE_HARDWARE();
  ASSERT_OK_AND_ASSIGN(Event ev,
                       Event::Open(backend(), UserReadable(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS)));
  std::optional<RingBuffer> rb = MapPage(ev);
  ASSERT_TRUE(rb.has_value());
  ASSERT_OK(ev.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::Instructions(1'000'000)));
  const PageSnapshot s = ReadPage(rb->page(), &backend());
  ASSERT_OK_AND_ASSIGN(uint64_t by_read, ev.ReadValue());
  ASSERT_OK(ev.Disable());
  if (std::optional<std::string> why = NoUserCounter(s)) PERFTEST_SKIP(SkipClass::kPermission, *why);
  EXPECT_NE(s.index, 0u) << "an active counter";
  EXPECT_GE(s.pmc_width, 32u);
  EXPECT_LE(s.pmc_width, 64u);
  ASSERT_TRUE(s.pmc_read);
  // Only the low pmc_width bits are the counter (the UAPI's reader shifts the
  // rest out). x86 RDPMC returns exactly those; arm64 reads the whole 64-bit
  // PMEVCNTR<n>_EL0, which with FEAT_PMUv3p5 holds a 32-bit event biased by
  // GENMASK(63, 32) (drivers/perf/arm_pmuv3.c armv8pmu_bias_long_counter()).
  if (backend().Machine().arch == "x86_64") {
    EXPECT_LT(s.pmc, s.pmc_width == 64 ? ~uint64_t{0} : (uint64_t{1} << s.pmc_width)) << "a raw pmc_width-bit value";
  }
  const uint64_t self = SelfCount(s);
  if (exact()) {
    EXPECT_EQ(self, by_read);
  } else {
    EXPECT_GE(self, 1'000'000u);
    EXPECT_LE(self, by_read) << "read(2) came after";
  }
}

PERFTEST_CASE(Rdpmc, IndexOnlyWhileActive, "rdpmc.hw_index_active",
              "core.c perf_event_index(): 0 unless the event is ACTIVE; x86_pmu_event_mapped() sets cap_user_rdpmc "
              "for a mapped counter even while it is off") {
  REQUIRE_HARDWARE();
  ASSERT_OK_AND_ASSIGN(Event ev,
                       Event::Open(backend(), UserReadable(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS)));
  std::optional<RingBuffer> rb = MapPage(ev);
  ASSERT_TRUE(rb.has_value());
  const PageSnapshot off = ReadPage(rb->page(), &backend());
  EXPECT_EQ(off.index, 0u) << "disabled: no counter";
  EXPECT_FALSE(off.pmc_read);
  ASSERT_OK(ev.Enable());
  const PageSnapshot on = ReadPage(rb->page(), &backend());
  ASSERT_OK(ev.Disable());
  if (std::optional<std::string> why = NoUserCounter(on)) PERFTEST_SKIP(SkipClass::kPermission, *why);
  EXPECT_NE(on.index, 0u) << "enabled and on a counter";
}

PERFTEST_CASE(Rdpmc, MultiplexedCounterPageTimes, "rdpmc.hw_multiplexed_times",
              "<linux/perf_event.h>: 'time_enabled and time_running ... can be used to scale'; core.c "
              "perf_rotate_context() schedules the event in again, and event sched-in rewrites the page") {
  REQUIRE_HARDWARE();
  // More events than counters: branch instructions (general-purpose counters
  // only on x86), or instructions where the PMU has no branch event (QEMU's
  // PMUv3; on arm64 instructions never take the cycle counter).
  uint64_t config = PERF_COUNT_HW_BRANCH_INSTRUCTIONS;
  if (!Event::Open(backend(), CounterAttr(PERF_TYPE_HARDWARE, config, kTimed)).ok()) config = PERF_COUNT_HW_INSTRUCTIONS;
  std::vector<Event> others;
  for (int i = 0; i < 12; ++i) {
    perf_event_attr a = CounterAttr(PERF_TYPE_HARDWARE, config, kTimed);
    a.disabled = 0;
    ASSERT_OK_AND_ASSIGN(Event o, Event::Open(backend(), a));
    others.push_back(std::move(o));
  }
  perf_event_attr a = CounterAttr(PERF_TYPE_HARDWARE, config, kTimed);
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), a));
  std::optional<RingBuffer> rb = MapPage(ev);
  ASSERT_TRUE(rb.has_value());
  const uint32_t lock0 = rb->page().lock;
  ASSERT_OK(ev.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::Spin(60ms)));
  const PageSnapshot s = ReadPage(rb->page(), nullptr);
  ASSERT_OK(ev.Disable());
  EXPECT_GT(s.lock, lock0 + 2) << "rotation scheduled it in again: more updates than the ENABLE";
  EXPECT_LT(s.time_running, s.time_enabled) << "it was rotated out part of the time";
  EXPECT_GT(s.time_running, 0u);
}

// The UAPI's "enabled += delta; if (index) running += delta" from one
// snapshot: the times a self-monitoring reader computes without a syscall.
struct PageTimes {
  uint64_t enabled = 0, running = 0;
};
PageTimes TimesFromPage(const PageSnapshot& s) {
  PageTimes t{s.time_enabled, s.time_running};
  if (s.cap_user_time && s.cyc_read) {
    const uint64_t delta = UserTimeDelta(s.time, s.cyc);
    t.enabled += delta;
    if (s.index != 0) t.running += delta;
  }
  return t;
}

// One tick of the page's counter, ns (the resolution of a conversion), plus one for rounding.
uint64_t CounterTickNs(const PageSnapshot& s) { return (uint64_t{s.time_mult} >> s.time_shift) + 1; }

PERFTEST_CASE(Rdpmc, TimesFromPageMatchRead, "rdpmc.user_time_scaling",
              "<linux/perf_event.h> comment above perf_event_mmap_page.time_shift: 'delta = time_offset + quot * "
              "time_mult + ((rem * time_mult) >> time_shift); enabled += delta; if (index) running += delta'; core.c "
              "perf_event_update_userpage() (calc_timer_values() at the update); arch_perf_update_userpage()") {
  std::optional<PagedEvent> p = EnabledWithFreshPage(CounterAttr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, kTimed));
  ASSERT_TRUE(p.has_value());
  auto& [ev, rb] = *p;
  // Then time passes on CPU, and the page and read(2) are taken together.
  // Any switch-in rewrites the page (perf_event_sched_in ->
  // perf_event_update_userpage()), so on the kernel a spin in which this
  // thread was switched out is tried again; `ran` is the CPU time it got (the
  // task context's clock runs only while the task does).
  uint64_t ran = 0;
  PageSnapshot s;
  ReadValues v;
  for (int attempt = 0; attempt < 20; ++attempt) {
    const long switches = exact() ? 0 : ThreadContextSwitches();
    const uint64_t cpu_before = exact() ? 0 : ThreadCpuNs();
    ASSERT_OK(backend().RunWorkload(Workload::Spin(3ms)));
    ran = exact() ? 3'000'000 : ThreadCpuNs() - cpu_before;
    s = ReadPage(rb.page(), &backend());
    v = Values(ev);
    if (exact() || ThreadContextSwitches() == switches) break;
  }
  ASSERT_OK(ev.Disable());
  ASSERT_TRUE(v.time_enabled.has_value() && v.time_running.has_value());
  const PageTimes t = TimesFromPage(s);
  EXPECT_LE(t.enabled, *v.time_enabled) << "the page (plus delta) never runs ahead of read(2)";
  EXPECT_LE(t.running, *v.time_running);
  EXPECT_LE(t.running, t.enabled);
  if (!s.cap_user_time) {
    // "If cap_usr_time the below fields can be used": without it the page's
    // times are those of its last update, at the switch-in before the spin.
    EXPECT_LT(t.enabled + ran * 2 / 3, *v.time_enabled) << "no delta: the page misses the spin (" << ran << " ns on CPU)";
    return;
  }
  ASSERT_TRUE(s.cyc_read) << "cap_user_time, but the counter could not be read";
  EXPECT_EQ(s.index, 0u) << "a software event: running gets no delta";
  // The delta covers the spin: enabled is read(2)'s up to the time between the
  // counter read and read(2) (a tick of the counter on the mock).
  const uint64_t slack = exact() ? CounterTickNs(s) : 10'000'000;
  EXPECT_LT(*v.time_enabled - t.enabled, slack) << "page time_enabled + delta vs read(2)";
  EXPECT_LT(t.running + ran * 2 / 3, *v.time_running) << "no delta for running without an index (stale by the spin)";
}

PERFTEST_CASE(Rdpmc, TimeZeroIsPerfClock, "rdpmc.user_time_zero",
              "<linux/perf_event.h> comment above perf_event_mmap_page.time_zero: 'timestamp = time_zero + quot * "
              "time_mult + ((rem * time_mult) >> time_shift)' is the perf clock of PERF_SAMPLE_TIME; "
              "cap_user_time_short: 'cyc = time_cycles + ((cyc - time_cycles) & time_mask)'") {
  perf_event_attr a = CounterAttr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, kTimed);
  a.sample_period = 1;
  a.sample_type = PERF_SAMPLE_TIME;
  a.exclude_kernel = 0;  // page faults are counted in the kernel's handler
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), a));
  Result<RingBuffer> mapped = RingBuffer::Map(backend(), ev.fd(), 8);
  ASSERT_OK(mapped);
  RingBuffer& rb = *mapped;
  ASSERT_OK(ev.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::Sleep(1, 200us)));
  // Faults before the first counter read are sampled too: the Sleep's, and
  // those of code that runs for the first time (a static binary's text is
  // faulted in page by page, as in the arm64 guests). ReadPage() runs once
  // to fault its own code in; then the buffer's head tells the samples taken
  // before the first read from those after it.
  (void)ReadPage(rb.page(), &backend());
  const uint64_t head_at_t0 = rb.ReadHead();
  const PageSnapshot before = ReadPage(rb.page(), &backend());
  if (!before.cap_user_time_zero) {
    ASSERT_OK(ev.Disable());
    PERFTEST_SKIP(SkipClass::kUnsupported,
                  "cap_user_time_zero is 0: this machine's sched_clock is no counter user space can read (e.g. a "
                  "kvm-clock guest; x86 arch_perf_update_userpage() needs the native, stable TSC sched_clock)");
  }
  ASSERT_TRUE(before.cyc_read);
  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(3)));
  const PageSnapshot after = ReadPage(rb.page(), &backend());
  ASSERT_OK(ev.Disable());
  ASSERT_TRUE(after.cyc_read);
  const uint64_t t0 = UserTimestamp(before.time, before.cyc), t1 = UserTimestamp(after.time, after.cyc);
  EXPECT_LT(t0, t1);
  ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> recs, DrainRecords(rb, SampleLayout::FromAttr(a), true));
  size_t after_t0 = 0;
  for (const ParsedRecord& r : recs) {
    const auto* smp = std::get_if<SampleRecord>(&r.record.body);
    if (smp == nullptr) continue;
    ASSERT_TRUE(smp->time.has_value());
    if (r.position < head_at_t0) {
      EXPECT_LE(*smp->time, t0 + CounterTickNs(before)) << "a fault before the first counter read";
      continue;
    }
    ++after_t0;
    EXPECT_GE(*smp->time + CounterTickNs(before), t0) << "a fault after the first counter read";
    EXPECT_LE(*smp->time, t1 + CounterTickNs(after)) << "a fault before the second counter read";
  }
  EXPECT_GE(after_t0, 3u) << "one sample per page fault";
}

PERFTEST_CASE(Rdpmc, TimeZeroWithClockid, "rdpmc.user_time_zero_clockid",
              "x86 arch_perf_update_userpage(): 'cap_user_time_zero doesn't make sense when we're using a different "
              "time base for the records' (no time_zero with attr.use_clockid); arm64/riscv "
              "arch_perf_update_userpage() set cap_user_time_zero regardless") {
  perf_event_attr a = CounterAttr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, kTimed);
  a.use_clockid = 1;
  a.clockid = CLOCK_MONOTONIC_RAW;
  std::optional<PagedEvent> p = EnabledWithFreshPage(a);
  ASSERT_TRUE(p.has_value());
  auto& [ev, rb] = *p;
  const PageSnapshot s = ReadPage(rb.page(), nullptr);
  ASSERT_OK(ev.Disable());
  if (!s.cap_user_time) {
    EXPECT_FALSE(s.cap_user_time_zero) << "no time_zero without cap_user_time";
    PERFTEST_SKIP(SkipClass::kUnsupported,
                  "cap_user_time is 0: this machine's sched_clock is no counter user space can read (e.g. a "
                  "kvm-clock guest)");
  }
  if (backend().Machine().arch == "x86_64") {
    EXPECT_FALSE(s.cap_user_time_zero) << "x86: an event with its own clock has no time_zero";
    EXPECT_EQ(s.time_zero, 0u);
  } else {
    EXPECT_TRUE(s.cap_user_time_zero) << "arm64/riscv: time_zero whatever the clockid";
    EXPECT_TRUE(s.cap_user_time_short) << "arm64/riscv: the counter may be narrower than 64 bits";
  }
}

}  // namespace
}  // namespace perftest
