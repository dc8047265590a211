// What `perftest pt decode` needs from a perf.data file perf recorded with
// intel_pt: one AUX queue's trace, the code it ran (from the MMAP/MMAP2
// side-band) and the decoder's timing parameters, as a pt::CaptureTrace
// (harness/pt/capture_file.h), the form decode already takes from a .ptcap.
//
//   Result<perf_data::AuxQueues> q = perf_data::AuxQueuesOf(data);
//   for (size_t i = 0; i < q->queues.size(); ++i) {
//     Result<pt::CaptureTrace> t = PtTraceOf(data, *q, i);   // one CPU (or thread)
//     decode(t->trace, t->image_specs, t->timing, t->data_lost);
//   }
//
// Timing (perf's intel_pt_process_auxtrace_info()): tsc_ctc_ratio_n/d and
// max_nonturbo_ratio from AUXTRACE_INFO; mtc_period from the intel_pt
// event's attr.config, the bits AUXTRACE_INFO's mtc_freq_bits selects (the
// PMU's format/mtc_period). data_lost: the trace offset where each buffer
// that does not continue the previous one in the AUX stream begins, and
// where each PERF_RECORD_AUX with PERF_AUX_FLAG_TRUNCATED ends its data (the
// AUX area was full: the trace stopped there; perf's intel_pt_lost()).
// image_specs: each executable file mapping of the side-band
// (pt::ImageSpecOf()) whose file exists here; the others are `notes`.
#pragma once

#include <cstddef>

#include "harness/perf_data/aux_queues.h"
#include "harness/perf_data/reader.h"
#include "harness/pt/capture_file.h"
#include "harness/result.h"

namespace perftest::data {

// Errors: EINVAL when `queue` is not an index of `queues.queues` or the
// file's AUX data is not Intel PT (no AUXTRACE_INFO of type 1); EBADMSG for
// an MMAP/MMAP2 record that does not parse (naming its offset).
Result<pt::CaptureTrace> PtTraceOf(const perf_data::PerfData& data, const perf_data::AuxQueues& queues, size_t queue);

}  // namespace perftest::data
