#include "harness/perf_data/aux_queues.h"

#include <fmt/format.h>
#include <linux/perf_event.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

namespace perftest::perf_data {

uint64_t AuxQueue::bytes() const {
  uint64_t n = 0;
  for (const AuxBuffer& b : buffers) n += b.data.size();
  return n;
}

Result<AuxQueues> AuxQueuesOf(const PerfData& data) {
  AuxQueues q;
  std::map<uint32_t, AuxQueue> queues;
  auto fail = [](const DataRecord& r, const std::string& detail) {
    return Result<AuxQueues>::Failure(EBADMSG, fmt::format("offset {:#x}: {}: {}", r.offset,
                                                           RecordTypeName(r.header.type), detail));
  };
  for (const DataRecord& r : data.records) {
    switch (r.header.type) {
      case PERF_RECORD_AUX: {
        ++q.aux_records;
        uint64_t flags = 0;
        if (r.bytes.size() >= sizeof(perf_event_header) + 24) {
          std::memcpy(&flags, r.bytes.data() + sizeof(perf_event_header) + 16, 8);
        }
        if (flags & PERF_AUX_FLAG_TRUNCATED) ++q.truncated_aux_records;
        break;
      }
      case PERF_RECORD_AUXTRACE_INFO: {
        Result<UserRecord> u = ParseUserRecord(r.bytes);
        if (!u.ok()) return fail(r, u.call());
        const auto& info = std::get<AuxtraceInfoRecord>(*u);
        q.auxtrace_type = info.type;
        if (info.type == PERF_AUXTRACE_INTEL_PT) {
          Result<IntelPtInfo> pt = ParseIntelPtInfo(info);
          if (!pt.ok()) return fail(r, pt.call());
          q.intel_pt = std::move(*pt);
        }
        break;
      }
      case PERF_RECORD_AUXTRACE: {
        Result<UserRecord> u = ParseUserRecord(r.bytes);
        if (!u.ok()) return fail(r, u.call());
        const auto& a = std::get<AuxtraceRecord>(*u);
        if (a.size != r.payload.size()) {
          return fail(r, fmt::format("size={} but {} bytes of data follow", a.size, r.payload.size()));
        }
        AuxQueue& queue = queues[a.idx];
        if (queue.buffers.empty()) {
          queue.idx = a.idx;
          queue.cpu = static_cast<int32_t>(a.cpu);
          queue.tid = static_cast<int32_t>(a.tid);
        }
        AuxBuffer b;
        b.file_offset = r.offset;
        b.offset = a.offset;
        b.reference = a.reference;
        if (!queue.buffers.empty()) {
          const AuxBuffer& prev = queue.buffers.back();
          // perf pads each buffer to 8 bytes (the padding counted in
          // `size`, not in the AUX stream: auxtrace.c
          // __auxtrace_mmap__read()), so the next one starts up to 7
          // bytes before the previous one's padded end.
          const uint64_t end = prev.offset + prev.data.size();
          b.contiguous = a.offset <= end && a.offset + 7 >= end;
        }
        b.data = r.payload;
        queue.buffers.push_back(std::move(b));
        break;
      }
      default: break;
    }
  }
  for (auto& [idx, queue] : queues) q.queues.push_back(std::move(queue));
  return Result<AuxQueues>::Ok(std::move(q));
}

}  // namespace perftest::perf_data
