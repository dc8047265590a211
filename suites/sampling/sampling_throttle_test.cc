// Conformance suite: sampling — throttling: max_sample_rate's per-tick
// budget, PERF_RECORD_THROTTLE/UNTHROTTLE, the cpu-clock hrtimer at its
// fastest rate. References: core.c __perf_event_account_interrupt(),
// perf_adjust_freq_unthr_context(), perf_swevent_hrtimer().
#include "suites/sampling/sampling_fixture.h"

namespace perftest::sampling_test {
namespace {

using namespace std::chrono_literals;

// ------------------------------------------------------------- throttling

// Reads `rb`'s records in order and counts samples and THROTTLE/UNTHROTTLE.
struct ThrottleRun {
  size_t samples = 0, throttle = 0, unthrottle = 0;
  std::vector<size_t> samples_before_throttle;  // samples since the last UNTHROTTLE (or start)
  std::vector<const ParsedRecord*> throttle_records;
};
ThrottleRun Summarize(const std::vector<ParsedRecord>& recs) {
  ThrottleRun t;
  size_t run = 0;
  for (const ParsedRecord& r : recs) {
    switch (r.record.header.type) {
      case PERF_RECORD_SAMPLE: ++t.samples; ++run; break;
      case PERF_RECORD_THROTTLE: ++t.throttle; t.samples_before_throttle.push_back(run); t.throttle_records.push_back(&r); break;
      case PERF_RECORD_UNTHROTTLE: ++t.unthrottle; run = 0; t.throttle_records.push_back(&r); break;
    }
  }
  return t;
}

// sched:sched_stat_runtime counts the task's runtime in ns (__perf_count()):
// one firing per tick is millions of events, so with a small sample_period
// perf_swevent_overflow() takes hundreds of overflows in one call, all but the
// first with throttle=1 -- throttling every tick the task runs through.
perf_event_attr RuntimeSampler(uint64_t id, uint64_t sample_type) {
  perf_event_attr a = MakeAttr(PERF_TYPE_TRACEPOINT, id);
  a.sample_period = 1000;
  a.sample_type = sample_type;  // not PERF_SAMPLE_PERIOD: that makes one sample per firing
  return a;
}

// Checks one event's records (`c`) against the throttle protocol and adds its
// counts to `total`. per_tick: max_samples_per_tick.
void CheckThrottleProtocol(const Capture& c, uint64_t per_tick, ThrottleRun* total) {
  const ThrottleRun t = Summarize(c.records);
  total->samples += t.samples;
  total->throttle += t.throttle;
  total->unthrottle += t.unthrottle;
  EXPECT_GE(t.unthrottle + 1, t.throttle);
  for (size_t n : t.samples_before_throttle) {
    // interrupts >= max_samples_per_tick: the per_tick-th interrupt of the
    // tick throttles; earlier firings of a tick that never throttled add to the run.
    EXPECT_GE(n, per_tick - 1) << "samples from the UNTHROTTLE to the next THROTTLE";
  }
  for (const ParsedRecord* r : t.throttle_records) {
    const auto& th = std::get<ThrottleRecord>(r->record.body);
    EXPECT_EQ(th.id, c.id);
    EXPECT_EQ(th.stream_id, c.id);
    EXPECT_EQ(r->record.header.size, 8u + 24);
  }
  // THROTTLE and UNTHROTTLE alternate, and between them lies exactly one
  // sample: the one whose interrupt tripped the limit, written after the
  // THROTTLE record (__perf_event_overflow() accounts, then outputs); the
  // stopped event takes nothing more until the tick restarts it.
  int state = 0;
  size_t while_throttled = 0;
  for (const ParsedRecord& r : c.records) {
    if (r.record.header.type == PERF_RECORD_THROTTLE) {
      EXPECT_EQ(state++, 0);
      while_throttled = 0;
    } else if (r.record.header.type == PERF_RECORD_UNTHROTTLE) {
      EXPECT_EQ(state--, 1);
      EXPECT_EQ(while_throttled, 1u) << "samples between THROTTLE and UNTHROTTLE";
    } else if (r.record.header.type == PERF_RECORD_SAMPLE) {
      ++while_throttled;
    }
  }
}

PERFTEST_CASE(Sampling, ThrottleAtMaxSamplesPerTick, "sampling.throttle",
              "<linux/perf_event.h> PERF_RECORD_THROTTLE/UNTHROTTLE; core.c __perf_event_account_interrupt() "
              "(interrupts >= max_samples_per_tick), perf_swevent_overflow(), perf_adjust_freq_unthr_events()") {
  PERFTEST_ASSIGN_OR_SKIP(const uint64_t tp, backend().TracepointId("sched", "sched_stat_runtime"),
                          "no sched:sched_stat_runtime tracepoint");
  const perf_event_attr a = RuntimeSampler(tp, PERF_SAMPLE_IP | PERF_SAMPLE_TIME | PERF_SAMPLE_ID);
  PERFTEST_ASSIGN_OR_SKIP(Event probe, Event::Open(backend(), a), "a tracepoint with kernel regs (exclude_kernel=0)");
  ASSERT_OK(probe.Close());
  // DIV_ROUND_UP(perf_event_max_sample_rate, HZ) with HZ 250 (this kernel and the profiles).
  const uint64_t per_tick = (backend().Machine().max_sample_rate + 249) / 250;
  // A fresh event each round, until three ticks have throttled. One event
  // for all rounds is not deterministic on a busy machine: seen on 6.18 with
  // three samplers running at once, an event that logged THROTTLE then
  // UNTHROTTLE took no sample again for the rest of the run, across
  // PERF_EVENT_IOC_DISABLE/ENABLE too (1 THROTTLE and 400 samples in 25
  // rounds). Likely path: the limit trips in the update_curr() of a context
  // switch, not of a tick; event_sched_in() later logs UNTHROTTLE and clears
  // hw.interrupts, but the throttle's pmu->stop() (perf_swevent_stop(),
  // PERF_HES_STOPPED) is not undone by perf_trace_add(). Only ticks the task
  // runs through count.
  ThrottleRun total;
  int rounds = 0;
  for (; rounds < 25 && total.throttle < 3; ++rounds) {
    Capture c;
    ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), a));
    ASSERT_OK_AND_ASSIGN(c.id, ev.Id());
    ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), 256));
    ASSERT_OK(ev.Enable());
    ASSERT_OK(backend().RunWorkload(Workload::Spin(20ms)));
    ASSERT_OK(ev.Disable());
    ASSERT_OK_AND_ASSIGN(c.records, DrainRecords(rb, SampleLayout::FromAttr(a), true));
    ASSERT_NO_FATAL_FAILURE(CheckThrottleProtocol(c, per_tick, &total)) << "round " << rounds;
  }
  RecordProperty("throttle_rounds", rounds);
  ASSERT_GE(total.throttle, 3u) << total.samples << " samples, " << total.unthrottle << " UNTHROTTLE in " << rounds
                                << " rounds";
}

PERFTEST_CASE(Sampling, CpuClockAtMaxRate, "sampling.cpu_clock_max_rate",
              "core.c perf_swevent_start_hrtimer(): period = max_t(u64, 10000, sample_period), at least 10 us "
              "between expiries; perf_swevent_hrtimer() overflows with throttle=1") {
  // The hrtimer's least period is 10 us: 100 kHz, perf_event_max_sample_rate
  // here, i.e. max_samples_per_tick expiries per tick -- at the limit, so
  // timer jitter decides whether a tick throttles (the model throttles every
  // tick). Checked: the rate cap, that a period below the floor samples as
  // the floor itself does, and the throttle protocol where it happens.
  //
  // How close to 100 kHz the timer gets is the machine's, not the
  // interface's: perf_swevent_hrtimer() re-arms with hrtimer_forward_now(),
  // which skips the expiries that passed while the last one was handled; on
  // a VM, whose expiries are late by a VM exit, that is about one in two
  // (seen on 6.18 under Firecracker: a sample every ~19 us, no THROTTLE), and
  // now and then the vCPU stalls for most of a second, which the guest
  // charges to the spinning thread. So the lower bound is relative and by
  // the median gap between samples: sample_period 1000 against 10000, the
  // floor itself, on the same timer in the same case.
  auto run = [&](uint64_t period, Capture* c) {
    perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK);
    a.sample_period = period;
    a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD;
    a.exclude_kernel = a.exclude_hv = 1;
    Run(a, Workload::Spin(50ms), c, 256);
  };
  Capture c, floor;
  ASSERT_NO_FATAL_FAILURE(run(1000, &c));  // below the hrtimer's floor
  ASSERT_NO_FATAL_FAILURE(run(10000, &floor));
  ASSERT_GE(c.samples.size(), 10u);
  ASSERT_GE(floor.samples.size(), 10u);
  EXPECT_LE(c.samples.size(), c.count / 10000 + 1) << "at most one sample per 10 us of cpu-clock";
  // The gaps: about 10 us (the floor) or a multiple of it where expiries were
  // skipped, the same for both periods; a 1000 ns period taken as asked would
  // give a gap several times shorter, a floor above 10 us a longer one.
  const uint64_t gap = MedianSampleGap(c.samples), floor_gap = MedianSampleGap(floor.samples);
  EXPECT_GE(gap, 9000u) << "the median gap between samples at sample_period 1000, ns";
  EXPECT_GE(gap * 10, floor_gap * 7) << "median gap at sample_period 1000 vs 10000 (the floor), ns: " << gap << " vs "
                                     << floor_gap;
  EXPECT_LE(gap * 10, floor_gap * 13) << "median gap at sample_period 1000 vs 10000 (the floor), ns: " << gap
                                      << " vs " << floor_gap;
  if (exact()) {
    EXPECT_EQ(gap, 10000u) << "the model's timer is never late";
  }
  for (const SampleRecord* s : c.samples) EXPECT_EQ(*s->period, 1000u) << "the period asked for is reported";
  const ThrottleRun t = Summarize(c.records);
  EXPECT_GE(t.unthrottle + 1, t.throttle);
  EXPECT_LE(t.unthrottle, t.throttle);
}

PERFTEST_CASE(Sampling, SoftwareEventNeverThrottles, "sampling.no_throttle_one_overflow",
              "core.c perf_swevent_overflow(): the first overflow of an occurrence passes throttle=0") {
  // Far more samples than max_samples_per_tick within one tick's time.
  Capture c;
  const uint64_t per_tick = (backend().Machine().max_sample_rate + 249) / 250;
  ASSERT_NO_FATAL_FAILURE(Run(Faults(PERF_SAMPLE_IP), Workload::TouchPages(3 * per_tick), &c, 128));
  EXPECT_EQ(c.samples.size(), c.count) << "every fault sampled";
  EXPECT_TRUE(OfType(c.records, PERF_RECORD_THROTTLE).empty());
}

}  // namespace
}  // namespace perftest::sampling_test
