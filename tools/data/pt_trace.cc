#include "tools/data/pt_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace perftest::data {

using namespace perftest::perf_data;

Result<pt::CaptureTrace> PtTraceOf(const PerfData& data, const AuxQueues& queues, size_t queue) {
  using R = Result<pt::CaptureTrace>;
  if (!queues.intel_pt) return R::Failure(EINVAL, "PtTraceOf: no Intel PT AUXTRACE_INFO in the file");
  if (queue >= queues.queues.size()) {
    return R::Failure(EINVAL, fmt::format("PtTraceOf: queue {} of {}", queue, queues.queues.size()));
  }
  const IntelPtInfo& info = *queues.intel_pt;
  pt::CaptureTrace t;
  t.timing.tsc_ctc_ratio_n = static_cast<uint32_t>(info.tsc_ctc_ratio_n);
  t.timing.tsc_ctc_ratio_d = static_cast<uint32_t>(info.tsc_ctc_ratio_d);
  t.timing.max_nonturbo_ratio = static_cast<uint32_t>(info.max_non_turbo_ratio);
  for (const Attr& a : data.attrs) {
    if (a.attr.type == info.pmu_type && info.mtc_freq_bits != 0) {
      t.timing.mtc_period = static_cast<uint32_t>((a.attr.config & info.mtc_freq_bits) >>
                                                  std::countr_zero(info.mtc_freq_bits));
      break;
    }
  }
  const AuxQueue& q = queues.queues[queue];
  // Where each buffer's bytes start in the trace: for the AUX stream
  // offsets of TRUNCATED AUX records below.
  std::vector<uint64_t> starts;
  for (size_t i = 0; i < q.buffers.size(); ++i) {
    const AuxBuffer& b = q.buffers[i];
    if (i > 0 && !b.contiguous) t.data_lost.push_back(t.trace.size());
    starts.push_back(t.trace.size());
    const auto* p = reinterpret_cast<const uint8_t*>(b.data.data());
    t.trace.insert(t.trace.end(), p, p + b.data.size());
  }
  t.aux_records = q.buffers.size();

  RecordParser parser(data);
  // A PERF_RECORD_AUX with PERF_AUX_FLAG_TRUNCATED: the AUX area was full
  // and the trace stopped at aux_offset + aux_size (perf_aux_output_end());
  // what follows (after the event was enabled again) does not continue it.
  // perf reports each as a "Lost trace data" error (intel_pt_lost()). The
  // record is this queue's when its sample_id cpu is the queue's (any, for
  // a single queue or a per-thread queue, cpu -1).
  for (const DataRecord& r : data.records) {
    if (r.header.type != PERF_RECORD_AUX || r.bytes.size() < sizeof(perf_event_header) + 24) continue;
    uint64_t f[3];
    std::memcpy(f, r.bytes.data() + sizeof(perf_event_header), sizeof f);
    if ((f[2] & PERF_AUX_FLAG_TRUNCATED) == 0) continue;
    if (queues.queues.size() > 1 && q.cpu != -1) {
      Result<ParsedRecord> p = parser.Parse(r);
      if (!p.ok()) return R::FailureFrom(p);
      const auto* k = std::get_if<perftest::Record>(&*p);
      if (k == nullptr || !k->sample_id || !k->sample_id->cpu || static_cast<int32_t>(*k->sample_id->cpu) != q.cpu) {
        continue;
      }
    }
    const uint64_t end = f[0] + f[1];
    for (size_t i = 0; i < q.buffers.size(); ++i) {
      const AuxBuffer& b = q.buffers[i];
      if (end < b.offset || end > b.offset + b.data.size()) continue;
      const uint64_t at = starts[i] + (end - b.offset);
      if (at < t.trace.size() && std::find(t.data_lost.begin(), t.data_lost.end(), at) == t.data_lost.end()) {
        t.data_lost.push_back(at);
      }
      break;
    }
  }
  std::sort(t.data_lost.begin(), t.data_lost.end());
  for (const DataRecord& r : data.records) {
    if (r.header.type != PERF_RECORD_MMAP && r.header.type != PERF_RECORD_MMAP2) continue;
    Result<ParsedRecord> p = parser.Parse(r);
    if (!p.ok()) return R::FailureFrom(p);
    const std::string spec = pt::ImageSpecOf(std::get<perftest::Record>(*p));
    if (spec.empty() || std::find(t.image_specs.begin(), t.image_specs.end(), spec) != t.image_specs.end()) continue;
    // ADDR:FILE:PGOFF:LEN; FILE may hold ':' only in odd paths, which stay notes.
    const size_t first = spec.find(':');
    const size_t last = spec.rfind(':', spec.rfind(':') - 1);
    const std::string file = spec.substr(first + 1, last - first - 1);
    std::error_code ec;
    if (std::filesystem::exists(file, ec)) {
      t.image_specs.push_back(spec);
    } else {
      t.notes.push_back(fmt::format("{} is mapped at offset {:#x} but not on this machine: its code is not walked",
                                    file, r.offset));
    }
  }
  return R::Ok(std::move(t));
}

}  // namespace perftest::data
