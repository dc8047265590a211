// What a MockEvent writes: read(2) values, PERF_RECORD_SAMPLE and the
// side-band records with their sample_id_all trailers, and the buffer they go
// to. The record layouts come from harness/records.h encoders.
//
//   OutputContext ctx = ...;                          // now, current task, CPU
//   ReadValues v = ReadEventValues(ev);               // perf_read_one()/perf_read_group()
//   EmitSample(ev, data, ctx);                        // perf_event_output()
//   EmitRecord(ev, comm_record, ctx);                 // perf_event_comm_output() & co.
//
// Sources (kernel/events/core.c): perf_prepare_sample()/perf_output_sample()
// for the sample body, __perf_event_header__init_id() for the trailer
// (id = primary_event_id(), stream_id = event->id), perf_output_read_one()/
// perf_output_read_group() for PERF_SAMPLE_READ, get_perf_callchain()
// (kernel/events/callchain.c) for PERF_SAMPLE_CALLCHAIN, and __perf_output_begin()
// (ring_buffer.c), which sends an inherited event's output to its parent's buffer.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "harness/read_format.h"
#include "harness/records.h"
#include "mocks/internal/mock_event.h"
#include "mocks/mock_ring_buffer.h"

namespace perftest::mock {

// The simulated context a record is written in.
struct OutputContext {
  uint64_t now = 0;         // perf_clock(), ns
  pid_t pid = 0, tid = 0;   // current (0/0 for the idle task)
  uint32_t cpu = 0;         // smp_processor_id()
  size_t page_size = 4096;
  uint32_t max_contexts_per_stack = 8;
  bool x86_64 = true;
};

// Simulated addresses (stable, so records are byte-identical run to run).
inline constexpr uint64_t kUserTouchIp = 0x0000555555555a30;  // the page-touching store
inline constexpr uint64_t kUserSpinIp = 0x0000555555555b48;   // the spin loop
inline constexpr uint64_t kUserSleepIp = 0x00007ffff7e9a1f5;  // libc clock_nanosleep, after the syscall
inline constexpr uint64_t kKernelSwitchIp = 0xffffffff81f3c1a2;  // __schedule
inline constexpr uint64_t kKernelIdleIp = 0xffffffff81f4a0c6;    // default_idle
inline constexpr uint64_t kUserStackPointer = 0x00007ffffffde3a0;
inline constexpr uint64_t kUserStoreIp = 0x0000555555555c3e;    // after the store of WriteMemory
inline constexpr uint64_t kUserLoadIp = 0x0000555555555c7b;     // after the load of ReadMemory
inline constexpr uint64_t kUserSyscallIp = 0x00007ffff7e8b829;  // libc syscall(), after `syscall`
inline constexpr uint64_t kKernelForkIp = 0xffffffff810a6d4e;   // copy_process

// time for event records: perf_event_clock() for the event's clockid.
uint64_t EventClock(const MockEvent& ev, uint64_t now);

// The event's read(2) values (perf_read_one(), or perf_read_group() of its
// leader with PERF_FORMAT_GROUP: leader first, then members in open order).
ReadValues ReadEventValues(const MockEvent& ev);

// perf_read_one() without PERF_FORMAT_GROUP, encoded straight into `buf`
// (which holds ReadSize(ev) bytes): the same values as ReadEventValues(), with
// no allocation (read(2) is the model's hottest call). Returns the bytes written.
size_t EncodeReadOne(const MockEvent& ev, void* buf);

// Bytes read(2) returns: perf_event_read_size() (group size counted now).
inline size_t ReadSize(const MockEvent& ev) {
  const uint64_t rf = ev.attr.read_format;
  return ReadFormatSize(rf, (rf & PERF_FORMAT_GROUP) ? ev.group_size() : 1);
}

// The sample_id_all trailer of `ev` in `ctx` (__perf_event_header__init_id()).
SampleId MakeSampleId(const MockEvent& ev, const OutputContext& ctx);

// The buffer `ev` writes to: its parent's for an inherited event (may be null).
MockRingBuffer* OutputBuffer(const MockEvent& ev);

// Writes `bytes` (one whole record of `ev`) to its buffer; updates the
// metadata page with `ev`'s count and times. `sample`: a PERF_RECORD_SAMPLE.
MockRingBuffer::Outcome Output(MockEvent& ev, const std::vector<std::byte>& bytes, bool sample,
                               const OutputContext& ctx);

// perf_event_output(): builds the sample `ev` takes in `data`/`ctx` and writes it.
void EmitSample(MockEvent& ev, const SampleData& data, const OutputContext& ctx);

// Encodes a non-sample record of `ev` (header type/misc and body as given; the
// trailer is filled from `ctx` unless `sample_id` is set) and writes it.
void EmitRecord(MockEvent& ev, Record r, const OutputContext& ctx);

// The sample body for `ev` (exposed for tests).
SampleRecord BuildSample(const MockEvent& ev, const SampleData& data, const OutputContext& ctx);

}  // namespace perftest::mock
