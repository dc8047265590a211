// Conformance suite: the perf mmap ring buffer.
//
// Every case drives software events (page-faults, dummy), so it runs for real
// on any kernel with perf events, PMU or not, and on the mock. References:
// <linux/perf_event.h> struct perf_event_mmap_page and enum perf_event_type;
// shared/reference/perf-design.txt; kernel/events/core.c perf_mmap(),
// kernel/events/ring_buffer.c perf_output_begin()/perf_output_put_handle().
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>

#include "harness/attr.h"
#include "harness/event.h"
#include "harness/records.h"
#include "harness/ring_buffer.h"
#include "harness/syscall_matchers.h"
#include "suites/common/attrs.h"
#include "suites/common/records_util.h"
#include "suites/common/suite.h"

namespace perftest {
namespace {

using ::testing::Each;
using ::testing::Ge;
using ::testing::Gt;
using ::testing::IsEmpty;
using ::testing::Not;
using namespace std::chrono_literals;

// Page touches need no spacing: a software event with one overflow per
// occurrence is never throttled (kernel/events/core.c perf_swevent_overflow()
// passes throttle=0 for the first overflow), so with sample_period 1 every
// fault is either a sample or counted in a LOST record.
constexpr auto kSpacing = 0us;

// A page-faults event sampling every fault in this task, user faults only
// (allowed at perf_event_paranoid 2 without privilege).
perf_event_attr PageFaultSampler(uint64_t sample_type) {
  return SoftwareSamplerAttr(PERF_COUNT_SW_PAGE_FAULTS, /*sample_period=*/1, sample_type);
}

// Size of a PERF_RECORD_SAMPLE whose fields are all fixed-size u64 pairs.
size_t FixedSampleSize(uint64_t sample_type) {
  size_t n = sizeof(perf_event_header);
  for (uint64_t bit : {PERF_SAMPLE_IDENTIFIER, PERF_SAMPLE_IP, PERF_SAMPLE_TID, PERF_SAMPLE_TIME, PERF_SAMPLE_ADDR,
                       PERF_SAMPLE_ID, PERF_SAMPLE_STREAM_ID, PERF_SAMPLE_CPU, PERF_SAMPLE_PERIOD}) {
    if (sample_type & bit) n += 8;
  }
  return n;
}

class RingBuffer : public SuiteTest {
 protected:
  size_t page() { return backend().Machine().page_size; }
};

PERFTEST_CASE(RingBuffer, MmapSizeRule, "ringbuffer.mmap_size_rule",
              "perf_event_open(2) 'MMAP layout': 1+2^n pages; kernel/events/core.c perf_mmap()") {
  const perf_event_attr attr = PageFaultSampler(PERF_SAMPLE_IP);
  for (size_t pages : {1, 2, 3, 5, 9, 17}) {
    ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), attr));
    Result<void*> m = backend().Mmap(pages * page(), PROT_READ | PROT_WRITE, MAP_SHARED, ev.fd(), 0);
    EXPECT_THAT(m, Succeeds()) << pages << " pages = 1 + 2^n";
    if (m.ok()) EXPECT_OK(backend().Munmap(*m, pages * page()));
  }
  for (size_t pages : {4, 6, 7, 10}) {
    ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), attr));
    EXPECT_THAT(backend().Mmap(pages * page(), PROT_READ | PROT_WRITE, MAP_SHARED, ev.fd(), 0),
                FailsWithErrno(EINVAL))
        << pages << " pages is not 1 + 2^n";
  }
  // The data area starts at page offset 0; MAP_PRIVATE is refused.
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), attr));
  EXPECT_THAT(backend().Mmap(3 * page(), PROT_READ | PROT_WRITE, MAP_PRIVATE, ev.fd(), 0), FailsWithErrno(EINVAL));
}

PERFTEST_CASE(RingBuffer, SecondMmapMustMatch, "ringbuffer.mmap_shared_size",
              "kernel/events/core.c perf_mmap(): a second mapping of an event's buffer must have its size") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), PageFaultSampler(PERF_SAMPLE_IP)));
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer first, perftest::RingBuffer::Map(backend(), ev.fd(), 4));
  EXPECT_THAT(backend().Mmap(3 * page(), PROT_READ | PROT_WRITE, MAP_SHARED, ev.fd(), 0), FailsWithErrno(EINVAL));
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer second, perftest::RingBuffer::Map(backend(), ev.fd(), 4));
  // Same buffer: a sample written once is seen through both mappings.
  ASSERT_OK(ev.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(4, kSpacing)));
  ASSERT_OK(ev.Disable());
  EXPECT_GT(first.ReadHead(), 0u);
  EXPECT_EQ(first.ReadHead(), second.ReadHead());
}

PERFTEST_CASE(RingBuffer, MmapPageFields, "ringbuffer.mmap_page_fields",
              "<linux/perf_event.h> struct perf_event_mmap_page: version, compat_version, data_offset, data_size") {
  for (size_t data_pages : {1, 8}) {
    ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), PageFaultSampler(PERF_SAMPLE_IP)));
    ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), data_pages));
    const volatile perf_event_mmap_page& pg = rb.page();
    EXPECT_EQ(pg.version, 0u);
    EXPECT_EQ(pg.compat_version, 0u);
    EXPECT_EQ(pg.data_offset, page()) << "data follows the metadata page";
    EXPECT_EQ(pg.data_size, data_pages * page());
    EXPECT_EQ(pg.data_head, 0u) << "nothing written yet";
    EXPECT_EQ(pg.data_tail, 0u);
    // Software events have no hardware counter for rdpmc.
    EXPECT_EQ(pg.index, 0u);
  }
}

PERFTEST_CASE(RingBuffer, DataHeadAdvances, "ringbuffer.data_head_advances",
              "<linux/perf_event.h> perf_event_mmap_page.data_head: 'head in the data section'") {
  const perf_event_attr attr = PageFaultSampler(PERF_SAMPLE_IP | PERF_SAMPLE_TID);
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), attr));
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), 16));
  const SampleLayout layout = SampleLayout::FromAttr(attr);

  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(8, kSpacing)));
  EXPECT_EQ(rb.ReadHead(), 0u) << "a disabled event writes nothing";

  uint64_t last_head = 0;
  for (int round = 0; round < 3; ++round) {
    ASSERT_OK(ev.Enable());
    ASSERT_OK(backend().RunWorkload(Workload::TouchPages(16, kSpacing)));
    ASSERT_OK(ev.Disable());
    const uint64_t head = rb.ReadHead();
    EXPECT_GE(head - last_head, 16 * FixedSampleSize(attr.sample_type))
        << "round " << round << ": at least one sample per fault";
    ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> recs, DrainRecords(rb, layout, /*consume=*/true));
    uint64_t bytes = 0;
    for (const ParsedRecord& r : recs) bytes += r.record.header.size;
    EXPECT_EQ(bytes, head - last_head) << "data_head moves by exactly the records written";
    EXPECT_EQ(rb.ReadTail(), head);
    last_head = head;
  }
}

PERFTEST_CASE(RingBuffer, RecordSizesAndTypes, "ringbuffer.record_size_alignment",
              "<linux/perf_event.h> struct perf_event_header: size is a multiple of 8; enum perf_event_type") {
  perf_event_attr attr = PageFaultSampler(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_CALLCHAIN);
  attr.mmap = attr.comm = attr.task = 1;
  attr.sample_id_all = 1;
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), attr));
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), 16));
  ASSERT_OK(ev.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(8, kSpacing)));
  ASSERT_OK(backend().RunWorkload(Workload::SetComm("perftest-rb")));
  ASSERT_OK(backend().RunWorkload(Workload::MmapExec(1)));
  ASSERT_OK(backend().RunWorkload(Workload::Fork(1)));
  ASSERT_OK(ev.Disable());

  rb.Begin();
  std::set<uint32_t> types;
  uint64_t bytes = 0;
  int n = 0;
  while (std::optional<RawRecord> r = rb.Next()) {
    ++n;
    bytes += r->header.size;
    types.insert(r->header.type);
    EXPECT_EQ(r->header.size % 8, 0u) << RecordTypeName(r->header.type) << " at " << r->position;
    EXPECT_TRUE(IsKnownRecordType(r->header.type)) << "type " << r->header.type << " at " << r->position;
    EXPECT_OK(ParseRecord(SampleLayout::FromAttr(attr), r->bytes));
  }
  ASSERT_FALSE(rb.error().has_value()) << *rb.error();
  EXPECT_EQ(bytes, rb.ReadHead());
  EXPECT_TRUE(types.count(PERF_RECORD_SAMPLE)) << "page-fault samples";
  EXPECT_TRUE(types.count(PERF_RECORD_COMM)) << "prctl(PR_SET_NAME)";
  EXPECT_TRUE(types.count(PERF_RECORD_MMAP)) << "mmap(PROT_EXEC)";
  EXPECT_TRUE(types.count(PERF_RECORD_FORK)) << "fork()";
}

PERFTEST_CASE(RingBuffer, SampleFieldLayout, "ringbuffer.sample_layout",
              "<linux/perf_event.h> PERF_RECORD_SAMPLE field order; kernel/events/core.c perf_output_sample()") {
  perf_event_attr attr = PageFaultSampler(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |
                                          PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |
                                          PERF_SAMPLE_PERIOD | PERF_SAMPLE_READ | PERF_SAMPLE_CALLCHAIN);
  attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID;
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), attr));
  ASSERT_OK_AND_ASSIGN(const uint64_t id, ev.Id());
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), 16));
  ASSERT_OK(ev.Enable());
  constexpr uint64_t kPages = 32;
  ASSERT_OK_AND_ASSIGN(WorkloadResult w, backend().RunWorkload(Workload::TouchPages(kPages, kSpacing)));
  ASSERT_OK(ev.Disable());

  ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> recs, DrainRecords(rb, SampleLayout::FromAttr(attr), false));
  const TaskId self = backend().CurrentTask();
  const int ncpus = backend().Machine().ncpus;
  std::set<uint64_t> fault_pages;
  uint64_t last_value = 0;
  std::optional<uint64_t> last_time;
  std::optional<uint32_t> last_cpu;
  size_t samples = 0;
  for (const ParsedRecord& r : recs) {
    const auto* s = std::get_if<SampleRecord>(&r.record.body);
    if (s == nullptr) continue;
    ++samples;
    SCOPED_TRACE(fmt::format("sample {} at position {}", samples, r.position));
    // Size: header + 8 fixed u64 slots + read (value, enabled, running, id) + nr + ips.
    EXPECT_EQ(r.record.header.size, 8 + 8 * 8 + 4 * 8 + 8 + 8 * s->callchain->size());
    EXPECT_EQ(r.record.header.misc & PERF_RECORD_MISC_CPUMODE_MASK, PERF_RECORD_MISC_USER) << "a user-mode fault";
    EXPECT_NE(*s->ip, 0u);
    EXPECT_EQ(*s->pid, static_cast<uint32_t>(self.pid));
    EXPECT_EQ(*s->tid, static_cast<uint32_t>(self.tid));
    if (last_time && last_cpu == s->cpu) {
      EXPECT_GE(*s->time, *last_time) << "time runs forward on one CPU";
    }
    last_time = s->time;
    last_cpu = s->cpu;
    if (*s->addr >= w.region_begin && *s->addr < w.region_end) fault_pages.insert(*s->addr & ~(page() - 1));
    EXPECT_EQ(*s->id, id) << "PERF_SAMPLE_ID is PERF_EVENT_IOC_ID";
    EXPECT_EQ(*s->stream_id, id) << "not inherited: stream_id is the event's own id";
    EXPECT_LT(*s->cpu, static_cast<uint32_t>(ncpus));
    EXPECT_EQ(*s->res, 0u);
    EXPECT_EQ(*s->period, 1u);
    ASSERT_EQ(s->read->counters.size(), 1u);
    EXPECT_GT(s->read->counters[0].value, last_value) << "the count grows with every sample";
    last_value = s->read->counters[0].value;
    EXPECT_EQ(s->read->counters[0].id, id);
    EXPECT_GE(*s->read->time_enabled, *s->read->time_running);
    EXPECT_GT(*s->read->time_running, 0u);
    // Callchain of a user-mode fault: PERF_CONTEXT_USER, then the faulting ip first.
    ASSERT_GE(s->callchain->size(), 2u);
    EXPECT_EQ((*s->callchain)[0], static_cast<uint64_t>(PERF_CONTEXT_USER));
    EXPECT_EQ((*s->callchain)[1], *s->ip);
    EXPECT_LE(s->callchain->size(), backend().Machine().max_stack + 1) << "bounded by perf_event_max_stack";
  }
  EXPECT_GE(samples, kPages);
  EXPECT_EQ(fault_pages.size(), kPages) << "PERF_SAMPLE_ADDR names every touched page once";
}

PERFTEST_CASE(RingBuffer, WrappedRecordReadsIntact, "ringbuffer.wraparound",
              "<linux/perf_event.h> data_head/data_tail; records continue at the start of the data area") {
  const uint64_t st = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_ADDR | PERF_SAMPLE_PERIOD;
  const perf_event_attr attr = PageFaultSampler(st);
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), attr));
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), 1));
  ASSERT_NE(rb.data_size() % FixedSampleSize(st), 0u) << "the sample size must not divide the buffer";
  const TaskId self = backend().CurrentTask();
  int wrapped = 0, samples = 0;
  for (int round = 0; round < 40 && wrapped == 0; ++round) {
    ASSERT_OK(ev.Enable());
    ASSERT_OK_AND_ASSIGN(WorkloadResult w, backend().RunWorkload(Workload::TouchPages(20, kSpacing)));
    ASSERT_OK(ev.Disable());
    ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> recs, DrainRecords(rb, SampleLayout::FromAttr(attr), true));
    for (const ParsedRecord& r : recs) {
      const auto* s = std::get_if<SampleRecord>(&r.record.body);
      ASSERT_NE(s, nullptr) << RecordTypeName(r.record.header.type) << ": only samples expected";
      ++samples;
      EXPECT_EQ(*s->pid, static_cast<uint32_t>(self.pid));
      EXPECT_EQ(*s->tid, static_cast<uint32_t>(self.tid));
      EXPECT_EQ(*s->period, 1u);
      if (r.wrapped) {
        ++wrapped;
        EXPECT_EQ(r.record.header.size, FixedSampleSize(st));
        EXPECT_GT((r.position % rb.data_size()) + r.record.header.size, rb.data_size());
        EXPECT_TRUE(*s->addr >= w.region_begin && *s->addr < w.region_end)
            << "the wrapped sample's addr " << *s->addr << " is one of this round's pages";
      }
    }
  }
  EXPECT_GT(wrapped, 0) << "after " << samples << " samples no record straddled the end of the buffer";
}

PERFTEST_CASE(RingBuffer, ConsumedSpaceIsReused, "ringbuffer.data_tail_frees_space",
              "<linux/perf_event.h> data_tail: 'user-space writes data_tail'; ring_buffer.c perf_output_begin()") {
  const perf_event_attr attr = PageFaultSampler(PERF_SAMPLE_IP | PERF_SAMPLE_TID);
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), attr));
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), 1));
  size_t samples = 0;
  for (int round = 0; round < 20; ++round) {
    ASSERT_OK(ev.Enable());
    ASSERT_OK(backend().RunWorkload(Workload::TouchPages(16, kSpacing)));
    ASSERT_OK(ev.Disable());
    ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> recs, DrainRecords(rb, SampleLayout::FromAttr(attr), true));
    EXPECT_THAT(OfType(recs, PERF_RECORD_LOST), IsEmpty()) << "round " << round << ": nothing lost when consumed";
    samples += SamplesOf(recs).size();
  }
  ASSERT_OK_AND_ASSIGN(const uint64_t count, ev.ReadValue());
  EXPECT_EQ(samples, count) << "every fault became a sample";
  EXPECT_GT(samples * FixedSampleSize(attr.sample_type), rb.data_size()) << "the buffer was reused";
}

PERFTEST_CASE(RingBuffer, UnconsumedDataIsLostAndCounted, "ringbuffer.lost_records",
              "<linux/perf_event.h> PERF_RECORD_LOST; ring_buffer.c perf_output_begin() rb->lost") {
  const perf_event_attr attr = PageFaultSampler(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_ID);
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), attr));
  ASSERT_OK_AND_ASSIGN(const uint64_t id, ev.Id());
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), 1));
  // The writer keeps one byte free: CIRC_SPACE(head, tail, size) is at most
  // size - 1 (ring_buffer.c perf_output_begin() / ring_buffer_has_space()).
  const size_t capacity = (rb.data_size() - 1) / FixedSampleSize(attr.sample_type);

  // Phase 1: more faults than fit; nobody reads.
  ASSERT_OK(ev.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(capacity + 100, kSpacing)));
  ASSERT_OK(ev.Disable());
  ASSERT_OK_AND_ASSIGN(const uint64_t count1, ev.ReadValue());
  ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> full, DrainRecords(rb, SampleLayout::FromAttr(attr), false));
  const size_t kept = SamplesOf(full).size();
  EXPECT_EQ(kept, capacity) << "the buffer filled up";
  EXPECT_THAT(OfType(full, PERF_RECORD_LOST), IsEmpty()) << "no room for a LOST record while full";
  ASSERT_GT(count1, kept);

  // Phase 2: consume everything, then one more fault: LOST comes first, with the count.
  rb.Consume();
  ASSERT_OK(ev.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(1, kSpacing)));
  ASSERT_OK(ev.Disable());
  ASSERT_OK_AND_ASSIGN(const uint64_t count2, ev.ReadValue());
  ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> after, DrainRecords(rb, SampleLayout::FromAttr(attr), true));
  ASSERT_FALSE(after.empty());
  ASSERT_EQ(after[0].record.header.type, PERF_RECORD_LOST) << "the LOST record precedes the next record";
  const auto& lost = std::get<LostRecord>(after[0].record.body);
  EXPECT_EQ(lost.id, id);
  EXPECT_EQ(lost.lost, count1 - kept) << "every fault that did not fit is counted";
  EXPECT_EQ(SamplesOf(after).size(), count2 - count1);
  EXPECT_EQ(OfType(after, PERF_RECORD_LOST).size(), 1u);
}

PERFTEST_CASE(RingBuffer, OverwriteBackwardKeepsNewest, "ringbuffer.overwrite_backward",
              "<linux/perf_event.h> attr.write_backward; perf_event_open(2) PROT_READ mapping = overwrite mode") {
  perf_event_attr attr = PageFaultSampler(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_ADDR);
  attr.write_backward = 1;
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), attr));
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb,
                       perftest::RingBuffer::Map(backend(), ev.fd(), 1, RingMode::kOverwrite, /*write_backward=*/true));
  const size_t capacity = rb.data_size() / FixedSampleSize(attr.sample_type);
  const uint64_t pages = 3 * capacity;
  ASSERT_OK(ev.Enable());
  ASSERT_OK_AND_ASSIGN(WorkloadResult w, backend().RunWorkload(Workload::TouchPages(pages, kSpacing)));
  ASSERT_OK(ev.Disable());

  const uint64_t head = rb.ReadHead();
  EXPECT_GT(-head, rb.data_size()) << "data_head runs backward, past a whole buffer: the writer never waited";
  ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> recs, DrainRecords(rb, SampleLayout::FromAttr(attr), false));
  EXPECT_THAT(OfType(recs, PERF_RECORD_LOST), IsEmpty()) << "overwrite mode loses nothing it reports";
  // Newest first: the region's pages appear in descending order, ending with the last page touched.
  std::vector<uint64_t> addrs;
  for (const SampleRecord* s : SamplesOf(recs)) {
    if (*s->addr >= w.region_begin && *s->addr < w.region_end) addrs.push_back(*s->addr);
  }
  ASSERT_GE(addrs.size(), capacity - 8) << "a full buffer of region samples";
  EXPECT_EQ(addrs.front(), w.region_end - page()) << "the newest sample is the last page touched";
  EXPECT_TRUE(std::is_sorted(addrs.rbegin(), addrs.rend())) << "newest first";
  EXPECT_GT(addrs.back(), w.region_begin + (pages - capacity - 8) * page()) << "the oldest pages were overwritten";
}

PERFTEST_CASE(RingBuffer, OverwriteForwardKeepsNewest, "ringbuffer.overwrite_forward",
              "perf_event_open(2): a PROT_READ mapping makes the kernel overwrite the oldest data") {
  const uint64_t st = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_ADDR;
  const perf_event_attr attr = PageFaultSampler(st);
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), attr));
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), 1, RingMode::kOverwrite));
  const size_t size = FixedSampleSize(st);
  const size_t capacity = rb.data_size() / size;
  const uint64_t pages = 3 * capacity;
  ASSERT_OK(ev.Enable());
  ASSERT_OK_AND_ASSIGN(WorkloadResult w, backend().RunWorkload(Workload::TouchPages(pages, kSpacing)));
  ASSERT_OK(ev.Disable());
  const uint64_t head = rb.ReadHead();
  ASSERT_GT(head, 2 * rb.data_size()) << "the writer went round without waiting for data_tail";
  // Every record has the same size, so records can be stepped backward from data_head.
  std::vector<uint64_t> addrs;
  for (uint64_t pos = head - size; pos + rb.data_size() >= head + size && addrs.size() < capacity; pos -= size) {
    std::vector<std::byte> bytes = rb.CopyOut(pos, size);
    ASSERT_OK_AND_ASSIGN(Record r, ParseRecord(SampleLayout::FromAttr(attr), bytes));
    ASSERT_EQ(r.header.type, PERF_RECORD_SAMPLE) << "at position " << pos;
    const uint64_t addr = *std::get<SampleRecord>(r.body).addr;
    if (addr >= w.region_begin && addr < w.region_end) addrs.push_back(addr);
  }
  ASSERT_FALSE(addrs.empty());
  EXPECT_EQ(addrs.front(), w.region_end - page()) << "the record ending at data_head is the newest";
  EXPECT_TRUE(std::is_sorted(addrs.rbegin(), addrs.rend()));
}

// Counts PERF_RECORD_SAMPLEs published so far, without consuming.
size_t PublishedSamples(perftest::RingBuffer& rb, const SampleLayout& layout) {
  Result<std::vector<ParsedRecord>> recs = DrainRecords(rb, layout, false);
  return recs.ok() ? SamplesOf(*recs).size() : 0;
}

bool PollIn(Backend& b, int fd) {
  pollfd p{fd, POLLIN, 0};
  Result<int> r = b.Poll({&p, 1}, 0);
  return r.ok() && *r == 1 && (p.revents & POLLIN);
}

PERFTEST_CASE(RingBuffer, WakeupEvents, "ringbuffer.wakeup_events",
              "<linux/perf_event.h> attr.wakeup_events: 'wakeup every n events'; core.c perf_output_sample(), perf_poll()") {
  perf_event_attr attr = PageFaultSampler(PERF_SAMPLE_IP | PERF_SAMPLE_TID);
  attr.wakeup_events = 4;
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), attr));
  // A large buffer keeps the default watermark (half the buffer) out of the way.
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), 16));
  const SampleLayout layout = SampleLayout::FromAttr(attr);
  EXPECT_FALSE(PollIn(backend(), ev.fd())) << "nothing written yet";
  size_t samples = 0;
  bool ready = false;
  for (int i = 0; i < 64 && !ready; ++i) {
    ASSERT_OK(ev.Enable());
    ASSERT_OK(backend().RunWorkload(Workload::TouchPages(1, kSpacing)));
    ASSERT_OK(ev.Disable());
    samples = PublishedSamples(rb, layout);
    ready = PollIn(backend(), ev.fd());
    EXPECT_EQ(ready, samples >= 4) << "after " << samples << " samples";
  }
  EXPECT_TRUE(ready);
  EXPECT_FALSE(PollIn(backend(), ev.fd())) << "perf_poll() hands out a wakeup once";
}

PERFTEST_CASE(RingBuffer, WakeupWatermark, "ringbuffer.wakeup_watermark",
              "<linux/perf_event.h> attr.watermark/wakeup_watermark: 'bytes before wakeup'; ring_buffer.c perf_output_begin()") {
  perf_event_attr attr = PageFaultSampler(PERF_SAMPLE_IP | PERF_SAMPLE_TID);
  attr.watermark = 1;
  attr.wakeup_watermark = 200;
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), attr));
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), 16));
  bool ready = false;
  uint64_t head = 0;
  for (int i = 0; i < 64 && !ready; ++i) {
    ASSERT_OK(ev.Enable());
    ASSERT_OK(backend().RunWorkload(Workload::TouchPages(1, kSpacing)));
    ASSERT_OK(ev.Disable());
    head = rb.ReadHead();
    ready = PollIn(backend(), ev.fd());
    // perf_output_begin() advances the wakeup mark once head - mark > watermark.
    EXPECT_EQ(ready, head > attr.wakeup_watermark) << "data_head=" << head;
  }
  EXPECT_TRUE(ready);
}

PERFTEST_CASE(RingBuffer, SampleIdAllTrailers, "ringbuffer.sample_id_all",
              "<linux/perf_event.h> attr.sample_id_all, struct sample_id; core.c __perf_event_header__init_id()") {
  perf_event_attr attr = SoftwareAttr(PERF_COUNT_SW_DUMMY);
  attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |
                     PERF_SAMPLE_IDENTIFIER;
  attr.sample_id_all = 1;
  attr.comm = attr.mmap = attr.task = 1;
  attr.exclude_kernel = attr.exclude_hv = 1;
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), attr));
  ASSERT_OK_AND_ASSIGN(const uint64_t id, ev.Id());
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), 8));
  ASSERT_OK(ev.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::SetComm("perftest-sid")));
  ASSERT_OK_AND_ASSIGN(WorkloadResult m, backend().RunWorkload(Workload::MmapExec(2)));
  ASSERT_OK_AND_ASSIGN(WorkloadResult f, backend().RunWorkload(Workload::Fork(1)));
  ASSERT_OK(ev.Disable());

  ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> recs, DrainRecords(rb, SampleLayout::FromAttr(attr), false));
  const TaskId self = backend().CurrentTask();
  bool comm = false, mmap = false, fork = false;
  std::optional<uint64_t> last_time;
  for (const ParsedRecord& r : recs) {
    SCOPED_TRACE(RecordTypeName(r.record.header.type));
    ASSERT_TRUE(r.record.sample_id.has_value());
    const SampleId& sid = *r.record.sample_id;
    EXPECT_EQ(sid.pid, static_cast<uint32_t>(self.pid)) << "the task the record was written from";
    EXPECT_EQ(sid.tid, static_cast<uint32_t>(self.tid));
    EXPECT_EQ(sid.id, id);
    EXPECT_EQ(sid.stream_id, id);
    EXPECT_EQ(sid.identifier, id);
    EXPECT_LT(*sid.cpu, static_cast<uint32_t>(backend().Machine().ncpus));
    EXPECT_EQ(sid.res, 0u);
    if (last_time) {
      EXPECT_GE(*sid.time, *last_time);
    }
    last_time = sid.time;
    if (const auto* c = std::get_if<CommRecord>(&r.record.body)) {
      comm |= c->comm == "perftest-sid";
      EXPECT_EQ(c->pid, static_cast<uint32_t>(self.pid));
    } else if (const auto* mm = std::get_if<MmapRecord>(&r.record.body)) {
      if (mm->addr == m.region_begin) {
        mmap = true;
        EXPECT_EQ(mm->len, m.region_end - m.region_begin);
        EXPECT_EQ(mm->filename, "//anon");
      }
    } else if (const auto* t = std::get_if<TaskRecord>(&r.record.body)) {
      if (r.record.header.type == PERF_RECORD_FORK && t->pid == static_cast<uint32_t>(f.children.at(0))) {
        fork = true;
        EXPECT_EQ(t->ppid, static_cast<uint32_t>(self.pid));
        EXPECT_EQ(t->ptid, static_cast<uint32_t>(self.tid));
      }
    }
  }
  EXPECT_TRUE(comm) << "PERF_RECORD_COMM for prctl(PR_SET_NAME)";
  EXPECT_TRUE(mmap) << "PERF_RECORD_MMAP for the PROT_EXEC mapping";
  EXPECT_TRUE(fork) << "PERF_RECORD_FORK for the child";
}

PERFTEST_CASE(RingBuffer, SetOutputRedirects, "ringbuffer.set_output",
              "<linux/perf_event.h> PERF_EVENT_IOC_SET_OUTPUT; kernel/events/core.c perf_event_set_output()") {
  // Two different software events: one fault is a separate sample for each.
  // (Two events of the *same* software type share one perf_sample_data per
  // fault in kernel/events/core.c ___perf_sw_event(), and since 6.x
  // perf_prepare_sample() skips fields already filled, so both samples carry
  // the first event's PERF_SAMPLE_ID; that is not what this case checks.)
  const perf_event_attr attr = PageFaultSampler(PERF_SAMPLE_TID | PERF_SAMPLE_ID);
  perf_event_attr other_attr = attr;
  other_attr.config = PERF_COUNT_SW_PAGE_FAULTS_MIN;
  ASSERT_OK_AND_ASSIGN(Event target, Event::Open(backend(), attr));
  ASSERT_OK_AND_ASSIGN(Event other, Event::Open(backend(), other_attr));
  ASSERT_OK_AND_ASSIGN(const uint64_t target_id, target.Id());
  ASSERT_OK_AND_ASSIGN(const uint64_t other_id, other.Id());
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), target.fd(), 16));
  ASSERT_OK(other.SetOutput(&target));

  ASSERT_OK(target.Enable());
  ASSERT_OK(other.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(8, kSpacing)));
  ASSERT_OK(other.Disable());
  ASSERT_OK(target.Disable());
  ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> recs, DrainRecords(rb, SampleLayout::FromAttr(attr), true));
  size_t from_target = 0, from_other = 0;
  for (const SampleRecord* s : SamplesOf(recs)) {
    from_target += *s->id == target_id;
    from_other += *s->id == other_id;
  }
  EXPECT_GE(from_target, 8u);
  EXPECT_GE(from_other, 8u) << "the redirected event's samples land in the target's buffer";

  // SET_OUTPUT -1 stops the redirection.
  ASSERT_OK(other.SetOutput(nullptr));
  ASSERT_OK(other.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(8, kSpacing)));
  ASSERT_OK(other.Disable());
  ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> later, DrainRecords(rb, SampleLayout::FromAttr(attr), true));
  EXPECT_THAT(SamplesOf(later), IsEmpty()) << "no samples after SET_OUTPUT -1";
}

PERFTEST_CASE(RingBuffer, MunmapWhileEnabled, "ringbuffer.munmap_enabled",
              "kernel/events/core.c perf_mmap_close(): the buffer goes with the last mapping, the event stays") {
  const perf_event_attr attr = PageFaultSampler(PERF_SAMPLE_IP | PERF_SAMPLE_TID);
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), attr));
  {
    ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), 2));
    ASSERT_OK(ev.Enable());
    ASSERT_OK(backend().RunWorkload(Workload::TouchPages(8, kSpacing)));
    EXPECT_GT(rb.ReadHead(), 0u);
    ASSERT_OK(rb.Unmap());  // still enabled
  }
  ASSERT_OK_AND_ASSIGN(const uint64_t before, ev.ReadValue());
  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(8, kSpacing)));  // samples with no buffer
  ASSERT_OK_AND_ASSIGN(const uint64_t after, ev.ReadValue());
  EXPECT_GE(after - before, 8u) << "the event keeps counting without a buffer";

  // A new mapping is a new, empty buffer that fills again.
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb2, perftest::RingBuffer::Map(backend(), ev.fd(), 2));
  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(8, kSpacing)));
  ASSERT_OK(ev.Disable());
  ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> recs, DrainRecords(rb2, SampleLayout::FromAttr(attr), true));
  EXPECT_GE(SamplesOf(recs).size(), 8u);
}

}  // namespace
}  // namespace perftest
