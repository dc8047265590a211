// The AUX area data of a perf.data file (PERF_RECORD_AUXTRACE records, e.g.
// Intel PT), sorted into perf's queues: what a trace decoder reads.
//
//   Result<AuxQueues> q = AuxQueuesOf(data);
//   if (q->intel_pt) use(q->intel_pt->tsc_ctc_ratio_n);
//   for (const AuxQueue& queue : q->queues)            // per CPU or per thread
//     for (const AuxBuffer& b : queue.buffers) decode(b.data);
//
// As perf queues them (tools/perf/util/auxtrace.c auxtrace_queues__add_event()):
// a record's `idx` is its queue (the index of the mmap it was read from:
// one per CPU, or one per thread with --per-thread); within a queue the
// buffers stay in file order. Buffers whose `offset` does not continue the
// previous one's end in the AUX stream (its offset + size, less up to 7
// bytes of the zero padding perf adds to each buffer and counts in `size`) (data lost in between, or snapshot
// mode, where each buffer is a snapshot of its own) start a new stretch:
// `contiguous` is false on them. The queue's cpu and tid are its first
// record's (perf: -1 for "any"). The AUXTRACE_INFO record gives the trace
// type and, for Intel PT, its parameters (user_records.h IntelPtInfo).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "harness/perf_data/reader.h"
#include "harness/perf_data/user_records.h"
#include "harness/result.h"

namespace perftest::perf_data {

struct AuxBuffer {
  uint64_t file_offset = 0;       // of its PERF_RECORD_AUXTRACE
  uint64_t offset = 0;            // in the AUX stream of its mmap
  uint64_t reference = 0;         // perf's snapshot reference (a TSC in snapshot mode)
  bool contiguous = false;        // continues the previous buffer of the queue without a gap
  std::vector<std::byte> data;    // `size` bytes
};

struct AuxQueue {
  uint32_t idx = 0;
  int32_t cpu = -1, tid = -1;
  std::vector<AuxBuffer> buffers;
  uint64_t bytes() const;
};

struct AuxQueues {
  std::optional<uint32_t> auxtrace_type;  // AUXTRACE_INFO.type (PERF_AUXTRACE_INTEL_PT = 1)
  std::optional<IntelPtInfo> intel_pt;    // when the type is Intel PT
  std::vector<AuxQueue> queues;           // by idx, ascending
  size_t aux_records = 0;                 // kernel PERF_RECORD_AUX records
  size_t truncated_aux_records = 0;       // ... with PERF_AUX_FLAG_TRUNCATED (data lost)
};

// The queues of `data`. Errors (naming the record's offset): EBADMSG for an
// AUXTRACE or AUXTRACE_INFO that does not parse, an Intel PT AUXTRACE_INFO
// whose words do not parse, or a payload that is not `size` bytes.
Result<AuxQueues> AuxQueuesOf(const PerfData& data);

}  // namespace perftest::perf_data
