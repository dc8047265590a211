// read_format: the layout of read(2) on an event fd and of PERF_SAMPLE_READ,
// computed in one place (perf_event_attr.read_format; UAPI "struct read_format").
//
//   size_t n = ReadFormatSize(PERF_FORMAT_GROUP | PERF_FORMAT_ID, 3);  // 8 + 3*16 bytes
//   Result<ReadValues> v = DecodeReadFormat(attr.read_format, bytes);
//
// Non-group form:  value, [time_enabled], [time_running], [id], [lost]
// Group form:      nr, [time_enabled], [time_running], nr x {value, [id], [lost]}
#pragma once

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "harness/result.h"

namespace perftest {

struct CounterValue {
  uint64_t value = 0;
  std::optional<uint64_t> id;    // PERF_FORMAT_ID
  std::optional<uint64_t> lost;  // PERF_FORMAT_LOST
  bool operator==(const CounterValue&) const = default;
};

struct ReadValues {
  std::optional<uint64_t> time_enabled;  // PERF_FORMAT_TOTAL_TIME_ENABLED, ns
  std::optional<uint64_t> time_running;  // PERF_FORMAT_TOTAL_TIME_RUNNING, ns
  // One entry without PERF_FORMAT_GROUP; leader first, then members, with it.
  std::vector<CounterValue> counters;
  bool operator==(const ReadValues&) const = default;
};

// Bytes of a read_format record for `nr_counters` counters (1 unless
// PERF_FORMAT_GROUP). Bits outside PERF_FORMAT_MAX-1 are ignored. Inline: the
// mock computes it on every read(2).
inline size_t ReadFormatSize(uint64_t read_format, size_t nr_counters = 1) {
  const uint64_t rf = read_format;
  // Header u64 words: [nr], [time_enabled], [time_running].
  const size_t header = ((rf & PERF_FORMAT_GROUP) ? 1 : 0) + ((rf & PERF_FORMAT_TOTAL_TIME_ENABLED) ? 1 : 0) +
                        ((rf & PERF_FORMAT_TOTAL_TIME_RUNNING) ? 1 : 0);
  // Per-counter u64 words: value, [id], [lost].
  const size_t per_counter = 1 + ((rf & PERF_FORMAT_ID) ? 1 : 0) + ((rf & PERF_FORMAT_LOST) ? 1 : 0);
  if (!(rf & PERF_FORMAT_GROUP)) nr_counters = 1;
  return 8 * (header + nr_counters * per_counter);
}

// Decodes `bytes` laid out per `read_format`. Errors: EMSGSIZE when `bytes` is
// shorter than the layout needs (for GROUP, than `nr` entries need).
// Trailing bytes are ignored.
Result<ReadValues> DecodeReadFormat(uint64_t read_format, std::span<const std::byte> bytes);

// Appends the encoding of `values` per `read_format` to `out` (fields absent from
// `values` but required by `read_format` are written as 0). The inverse of
// DecodeReadFormat; MockBackend uses it for read(2) and PERF_SAMPLE_READ.
void EncodeReadFormat(uint64_t read_format, const ReadValues& values, std::vector<std::byte>* out);

}  // namespace perftest
