#include "mocks/event_output.h"

#include "mocks/aux_area.h"
#include <cstring>

#include <linux/perf_event.h>

#include <bit>
#include <ctime>

namespace perftest::mock {
namespace {

// CLOCK_REALTIME / CLOCK_TAI are this far ahead of the monotonic clock the
// model runs on (a fixed date in 2025, so records stay deterministic).
constexpr uint64_t kRealtimeOffsetNs = 1'750'000'000ull * 1'000'000'000ull;
constexpr uint64_t kTaiOffsetNs = kRealtimeOffsetNs + 37ull * 1'000'000'000ull;

// Simulated call stacks, innermost first (excluding the sample ip itself).
constexpr uint64_t kUserTouchCallers[] = {0x0000555555555c10, 0x0000555555555e02, 0x00007ffff7dc3d8f};
constexpr uint64_t kUserSpinCallers[] = {0x0000555555555c64, 0x0000555555555e02, 0x00007ffff7dc3d8f};
constexpr uint64_t kUserSleepCallers[] = {0x00007ffff7e9f7a7, 0x0000555555555ca8, 0x0000555555555e02,
                                          0x00007ffff7dc3d8f};
constexpr uint64_t kKernelSwitchCallers[] = {0xffffffff81f3c8d7, 0xffffffff81f43b4e, 0xffffffff8118a2d3,
                                             0xffffffff8118a4a0, 0xffffffff81f2e8a9, 0xffffffff820000b0};
constexpr uint64_t kKernelIdleCallers[] = {0xffffffff81f4a3e5, 0xffffffff8110c1a9, 0xffffffff8110c3df,
                                           0xffffffff81002b5a};

// include/linux/perf_event.h PERF_MEM_NA, LVLNUM included (Linux 6.18 writes
// 0x1e05080021 into a software event's PERF_SAMPLE_DATA_SRC).
constexpr uint64_t kPerfMemNa = (uint64_t{PERF_MEM_OP_NA} << PERF_MEM_OP_SHIFT) |
                                (uint64_t{PERF_MEM_LVL_NA} << PERF_MEM_LVL_SHIFT) |
                                (uint64_t{PERF_MEM_SNOOP_NA} << PERF_MEM_SNOOP_SHIFT) |
                                (uint64_t{PERF_MEM_LOCK_NA} << PERF_MEM_LOCK_SHIFT) |
                                (uint64_t{PERF_MEM_TLB_NA} << PERF_MEM_TLB_SHIFT) |
                                (uint64_t{PERF_MEM_LVLNUM_NA} << PERF_MEM_LVLNUM_SHIFT);

bool IsIdle(const SampleData& d) { return d.stack == SampleData::Stack::kKernelIdle; }

// kernel/events/callchain.c get_perf_callchain(): kernel part when the regs
// are kernel regs, then the user part from the task's user regs; at most
// sample_max_stack ips and max_contexts_per_stack markers.
std::vector<uint64_t> Callchain(const MockEvent& ev, const SampleData& d, const OutputContext& ctx) {
  std::vector<uint64_t> out;
  const bool kernel = !ev.attr.exclude_callchain_kernel;
  const bool user = !ev.attr.exclude_callchain_user;
  const uint32_t max_stack = ev.attr.sample_max_stack;
  uint32_t nr = 0, contexts = 0;
  bool maxed = false;
  auto store_context = [&](uint64_t c) {
    if (contexts < ctx.max_contexts_per_stack) {
      out.push_back(c);
      ++contexts;
    } else {
      maxed = true;
    }
  };
  auto store = [&](uint64_t ip) {
    if (nr < max_stack && !maxed) {
      out.push_back(ip);
      ++nr;
    }
  };
  if (kernel && !d.user_mode) {
    store_context(PERF_CONTEXT_KERNEL);
    store(d.ip);
    if (IsIdle(d)) {
      for (uint64_t ip : kKernelIdleCallers) store(ip);
    } else {
      for (uint64_t ip : kKernelSwitchCallers) store(ip);
    }
  }
  if (user && !IsIdle(d) && d.served) {  // a real task's own stack (tools/exec)
    store_context(PERF_CONTEXT_USER);
    store(d.served_user_ip);
    for (uint64_t ip : d.served_callers) store(ip);
  } else if (user && !IsIdle(d)) {  // the idle task is a kernel thread: no user part
    store_context(PERF_CONTEXT_USER);
    switch (d.stack) {
      case SampleData::Stack::kUserTouch:
        store(d.ip);
        for (uint64_t ip : kUserTouchCallers) store(ip);
        break;
      case SampleData::Stack::kUserSpin:
        store(d.ip);
        for (uint64_t ip : kUserSpinCallers) store(ip);
        break;
      case SampleData::Stack::kKernelSwitch:
        store(kUserSleepIp);  // task_pt_regs(current)->ip
        for (uint64_t ip : kUserSleepCallers) store(ip);
        break;
      case SampleData::Stack::kKernelIdle:
        break;
    }
  }
  return out;
}

// Deterministic register values for PERF_SAMPLE_REGS_*: the ip and sp slots
// carry the sample's, the rest a fixed pattern.
SampleRecord::Regs Regs(uint64_t mask, bool x86_64, uint64_t ip, uint64_t sp) {
  SampleRecord::Regs r;
  r.abi = PERF_SAMPLE_REGS_ABI_64;
  for (int bit = 0; bit < 64; ++bit) {
    if (!(mask & (uint64_t{1} << bit))) continue;
    uint64_t v = 0x1000 + static_cast<uint64_t>(bit);
    if (x86_64 && bit == 8) v = ip;  // PERF_REG_X86_IP
    if (x86_64 && bit == 7) v = sp;  // PERF_REG_X86_SP
    r.regs.push_back(v);
  }
  return r;
}

}  // namespace

uint64_t EventClock(const MockEvent& ev, uint64_t now) {
  if (!ev.attr.use_clockid) return now;  // local_clock()
  switch (ev.attr.clockid) {
    case CLOCK_REALTIME: return now + kRealtimeOffsetNs;
    case CLOCK_TAI: return now + kTaiOffsetNs;
    default: return now;  // MONOTONIC, MONOTONIC_RAW, BOOTTIME: the model never suspends
  }
}

ReadValues ReadEventValues(const MockEvent& ev) {
  const uint64_t rf = ev.attr.read_format;
  ReadValues v;
  auto counter = [&](const MockEvent& e) {
    CounterValue c;
    // __perf_event_read_value(): the count, the exited children's, and the live children's.
    c.value = e.count + e.child_count;
    for (const MockEvent* child : e.children) c.value += child->count;
    if (rf & PERF_FORMAT_ID) c.id = e.primary_id();
    if (rf & PERF_FORMAT_LOST) c.lost = e.lost_samples;
    return c;
  };
  // Group reads report the leader's times (__perf_read_group_add()).
  const MockEvent& timer = (rf & PERF_FORMAT_GROUP) ? *ev.leader : ev;
  uint64_t enabled = timer.time_enabled + timer.child_time_enabled;
  uint64_t running = timer.time_running + timer.child_time_running;
  for (const MockEvent* child : timer.children) {
    enabled += child->time_enabled;
    running += child->time_running;
  }
  if (rf & PERF_FORMAT_TOTAL_TIME_ENABLED) v.time_enabled = enabled;
  if (rf & PERF_FORMAT_TOTAL_TIME_RUNNING) v.time_running = running;
  if (rf & PERF_FORMAT_GROUP) {
    v.counters.push_back(counter(*ev.leader));
    for (const MockEvent* s : ev.leader->siblings) v.counters.push_back(counter(*s));
  } else {
    v.counters.push_back(counter(ev));
  }
  return v;
}

size_t EncodeReadOne(const MockEvent& ev, void* buf) {
  const uint64_t rf = ev.attr.read_format;
  auto* out = static_cast<unsigned char*>(buf);
  size_t n = 0;
  auto put = [&](uint64_t word) { std::memcpy(out + sizeof word * n++, &word, sizeof word); };
  // As ReadEventValues(): exited children's totals plus the live children's.
  uint64_t value = ev.count + ev.child_count;
  uint64_t enabled = ev.time_enabled + ev.child_time_enabled;
  uint64_t running = ev.time_running + ev.child_time_running;
  for (const MockEvent* child : ev.children) {
    value += child->count;
    enabled += child->time_enabled;
    running += child->time_running;
  }
  put(value);
  if (rf & PERF_FORMAT_TOTAL_TIME_ENABLED) put(enabled);
  if (rf & PERF_FORMAT_TOTAL_TIME_RUNNING) put(running);
  if (rf & PERF_FORMAT_ID) put(ev.primary_id());
  if (rf & PERF_FORMAT_LOST) put(ev.lost_samples);
  return n * sizeof(uint64_t);
}

SampleId MakeSampleId(const MockEvent& ev, const OutputContext& ctx) {
  const uint64_t st = ev.attr.sample_type;
  SampleId id;
  if (st & PERF_SAMPLE_TID) {
    id.pid = static_cast<uint32_t>(ctx.pid);
    id.tid = static_cast<uint32_t>(ctx.tid);
  }
  if (st & PERF_SAMPLE_TIME) id.time = EventClock(ev, ctx.now);
  if (st & PERF_SAMPLE_ID) id.id = ev.primary_id();
  if (st & PERF_SAMPLE_STREAM_ID) id.stream_id = ev.id;
  if (st & PERF_SAMPLE_CPU) {
    id.cpu = ctx.cpu;
    id.res = 0;
  }
  if (st & PERF_SAMPLE_IDENTIFIER) id.identifier = ev.primary_id();
  return id;
}

MockRingBuffer* OutputBuffer(const MockEvent& ev) {
  const MockEvent& out = ev.parent != nullptr ? *ev.parent : ev;
  return out.rb.get();
}

MockRingBuffer::Outcome Output(MockEvent& ev, const std::vector<std::byte>& bytes, bool sample,
                               const OutputContext& ctx) {
  // __perf_output_begin(): "For inherited events we send all the output towards the parent."
  MockEvent& writer = ev.parent != nullptr ? *ev.parent : ev;
  MockRingBuffer* rb = writer.rb.get();
  if (rb == nullptr) return MockRingBuffer::Outcome::kNoPages;
  OutputOptions opt;
  opt.backward = ev.attr.write_backward;
  opt.sample = sample;
  opt.wakeup_events = ev.attr.watermark ? 0 : ev.attr.wakeup_events;
  opt.make_lost = [&writer, &ctx](uint64_t lost) {
    Record r;
    r.header.type = PERF_RECORD_LOST;
    r.body = LostRecord{writer.id, lost};
    r.sample_id = MakeSampleId(writer, ctx);
    std::vector<std::byte> out;
    EncodeRecord(SampleLayout::FromAttr(writer.attr), r, &out);
    return out;
  };
  const MockRingBuffer::Outcome o = rb->Output(bytes, opt, &writer.lost_samples);
  if (o == MockRingBuffer::Outcome::kWritten) rb->UpdateUserPage(ev.count, ev.time_enabled, ev.time_running, ctx.now, ev.attr.use_clockid);
  return o;
}

SampleRecord BuildSample(const MockEvent& ev, const SampleData& d, const OutputContext& ctx) {
  const uint64_t st = ev.attr.sample_type;
  SampleRecord s;
  if (st & PERF_SAMPLE_IDENTIFIER) s.identifier = ev.primary_id();
  if (st & PERF_SAMPLE_IP) s.ip = d.ip;
  if (st & PERF_SAMPLE_TID) {
    s.pid = static_cast<uint32_t>(d.pid);
    s.tid = static_cast<uint32_t>(d.tid);
  }
  if (st & PERF_SAMPLE_TIME) s.time = EventClock(ev, ctx.now);
  if (st & PERF_SAMPLE_ADDR) s.addr = d.addr;
  if (st & PERF_SAMPLE_ID) s.id = ev.primary_id();
  if (st & PERF_SAMPLE_STREAM_ID) s.stream_id = ev.id;
  if (st & PERF_SAMPLE_CPU) {
    s.cpu = ctx.cpu;
    s.res = 0;
  }
  if (st & PERF_SAMPLE_PERIOD) s.period = d.period;
  if (st & PERF_SAMPLE_READ) {
    // perf_output_read(): the sampling event's times, group values if GROUP.
    ReadValues v = ReadEventValues(ev);
    const uint64_t rf = ev.attr.read_format;
    if (rf & PERF_FORMAT_TOTAL_TIME_ENABLED) v.time_enabled = ev.time_enabled;
    if (rf & PERF_FORMAT_TOTAL_TIME_RUNNING) v.time_running = ev.time_running;
    s.read = std::move(v);
  }
  if (st & PERF_SAMPLE_CALLCHAIN) s.callchain = Callchain(ev, d, ctx);
  if (st & PERF_SAMPLE_RAW) {
    // Tracepoints: the trace entry. No raw data for other events:
    // perf_output_sample() writes {size = 4, data = 0}.
    s.raw = d.has_raw ? d.raw : std::vector<std::byte>(4, std::byte{0});
  }
  const bool has_user_regs = !IsIdle(d);  // perf_sample_regs_user(): kernel threads have none
  const uint64_t user_ip = d.user_mode ? d.ip : kUserSleepIp;
  if (st & PERF_SAMPLE_REGS_USER) {
    s.regs_user = has_user_regs ? Regs(ev.attr.sample_regs_user, ctx.x86_64, user_ip, kUserStackPointer)
                                : SampleRecord::Regs{};
  }
  if (st & PERF_SAMPLE_STACK_USER) {
    SampleRecord::StackUser su;
    if (has_user_regs && ev.attr.sample_stack_user != 0) {
      su.data.resize(ev.attr.sample_stack_user);
      for (size_t i = 0; i < su.data.size(); ++i) su.data[i] = static_cast<std::byte>((kUserStackPointer + i) & 0xff);
      su.dyn_size = su.data.size();
    }
    s.stack_user = std::move(su);
  }
  if (st & PERF_SAMPLE_WEIGHT_TYPE) s.weight = 0;
  if (st & PERF_SAMPLE_DATA_SRC) s.data_src = kPerfMemNa;
  if (st & PERF_SAMPLE_TRANSACTION) s.transaction = 0;
  if (st & PERF_SAMPLE_REGS_INTR) {
    s.regs_intr = Regs(ev.attr.sample_regs_intr, ctx.x86_64, d.ip,
                       d.user_mode ? kUserStackPointer : 0xffffc90000a7bd88ull);
  }
  if (st & PERF_SAMPLE_PHYS_ADDR) s.phys_addr = 0;  // the faulting page is not mapped yet
  if (st & PERF_SAMPLE_CGROUP) s.cgroup = 1;        // the root cgroup's id
  if (st & PERF_SAMPLE_DATA_PAGE_SIZE) s.data_page_size = 0;  // perf_get_page_size() of an unmapped address
  if (st & PERF_SAMPLE_CODE_PAGE_SIZE) s.code_page_size = ctx.page_size;
  if (st & PERF_SAMPLE_AUX) {
    // perf_prepare_sample(): the AUX data is limited so that the whole record
    // stays within U16_MAX bytes, rounded down to 8, then to the AUX size.
    s.aux = std::vector<std::byte>{};
    std::vector<std::byte> probe;
    EncodeSample(SampleLayout::FromAttr(ev.attr), 0, s, &probe);
    const size_t room = probe.size() < 0xffff ? 0xffff - probe.size() : 0;
    const size_t size = std::min<size_t>(room, ev.attr.aux_sample_size) / 8 * 8;
    s.aux = AuxSampleData(ev, size);
  }
  return s;
}

void EmitSample(MockEvent& ev, const SampleData& data, const OutputContext& ctx) {
  if (OutputBuffer(ev) == nullptr) return;
  std::vector<std::byte> bytes;
  const uint16_t misc = data.user_mode ? PERF_RECORD_MISC_USER : PERF_RECORD_MISC_KERNEL;
  EncodeSample(SampleLayout::FromAttr(ev.attr), misc, BuildSample(ev, data, ctx), &bytes);
  Output(ev, bytes, /*sample=*/true, ctx);
}

void EmitRecord(MockEvent& ev, Record r, const OutputContext& ctx) {
  if (OutputBuffer(ev) == nullptr) return;
  if (!r.sample_id) r.sample_id = MakeSampleId(ev, ctx);
  std::vector<std::byte> bytes;
  EncodeRecord(SampleLayout::FromAttr(ev.attr), r, &bytes);
  Output(ev, bytes, /*sample=*/false, ctx);
}

}  // namespace perftest::mock
