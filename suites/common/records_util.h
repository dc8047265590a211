// Suite-side helpers over the harness ring-buffer reader: drain and parse.
//
//   ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> recs, DrainRecords(rb, layout, /*consume=*/true));
//   std::vector<const SampleRecord*> samples = SamplesOf(recs);
#pragma once

#include <cstdint>
#include <vector>

#include "harness/records.h"
#include "harness/result.h"
#include "harness/ring_buffer.h"

namespace perftest {

struct ParsedRecord {
  Record record;
  uint64_t position = 0;  // free-running position in the buffer
  bool wrapped = false;   // ran past the end of the data area
};

// Reads every published record (RingBuffer::Begin/Next) and parses it with
// `layout`; with `consume`, publishes data_tail afterwards. Errors: EBADMSG for
// a malformed record or header (the call string says which and where).
Result<std::vector<ParsedRecord>> DrainRecords(RingBuffer& rb, const SampleLayout& layout, bool consume);

// The PERF_RECORD_SAMPLE bodies, in buffer order.
std::vector<const SampleRecord*> SamplesOf(const std::vector<ParsedRecord>& records);
// Records of one PERF_RECORD_* type.
std::vector<const ParsedRecord*> OfType(const std::vector<ParsedRecord>& records, uint32_t type);

}  // namespace perftest
