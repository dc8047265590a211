// PerfDataOutput: `perftest profile --format=perf.data -o FILE`, the samples
// of a ring-mode profile written as a perf.data file (harness/perf_data's
// writer) that perf report / perf script read as they read perf record's.
//
//   PerfDataOutput out(sampler.attr(), "cpu-clock");
//   sampler.OnNewProcess([&](pid_t pid) { out.SynthesizeProcess(pid); });
//   sampler.OnRecord([&](std::span<const std::byte> r) { out.Add(r); });
//   ... profile ...
//   Result<void> w = out.Write("perf.data", sampler.ids(), argv_list);
//
// What perf record writes and perf report needs, done the same way
// (tools/perf/util/synthetic-events.c, perf 6.1): the records as the kernel
// wrote them to the ring buffers (samples with PERF_SAMPLE_TIME, so perf
// orders them; side-band from attr.mmap2/comm/task); for the kernel a
// PERF_RECORD_MMAP of "[kernel.kallsyms]_text" from _text to _etext with
// pgoff = _text (perf__synthesize_kernel_mmap(), addresses from
// /proc/kallsyms; left out when kptr_restrict hides them); for every process
// sampled, synthesized at its first sample, PERF_RECORD_COMM of each thread
// and PERF_RECORD_MMAP2 of each executable mapping in /proc/PID/maps (and
// with attr.mmap_data each readable file mapping, PERF_RECORD_MISC_MMAP_DATA:
// perf_event__synthesize_mmap_events()), with time 0 so they sort first.
// Every synthesized record carries the sample_id_all trailer of the attr.
// Feature sections: HOSTNAME, OSRELEASE, ARCH, NRCPUS, CMDLINE, EVENT_DESC.
#pragma once

#include <linux/perf_event.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "harness/perf_data/reader.h"
#include "harness/records.h"
#include "harness/result.h"

namespace perftest::profile {

class PerfDataOutput {
 public:
  // `attr`: the events' (sample_id_all set); `event_name` for HEADER_EVENT_DESC.
  PerfDataOutput(const perf_event_attr& attr, std::string event_name);

  // Appends one record as read from a ring buffer (header.size bytes).
  void Add(std::span<const std::byte> record);
  // PERF_RECORD_COMM per thread and PERF_RECORD_MMAP2 per executable mapping
  // of `pid`, from /proc (nothing when it has exited).
  void SynthesizeProcess(pid_t pid);
  // The kernel's PERF_RECORD_MMAP; false (and nothing added) when
  // /proc/kallsyms gives no _text address.
  bool SynthesizeKernel();

  // The perf.data file: one attr with `ids`, the records, the features.
  perf_data::PerfData Build(const std::vector<uint64_t>& ids, const std::vector<std::string>& cmdline) const;
  // Build() written to `path`. Errors: the errno of open/write.
  Result<void> Write(const std::string& path, const std::vector<uint64_t>& ids,
                     const std::vector<std::string>& cmdline) const;

  size_t samples() const { return samples_; }
  size_t records() const { return records_.size(); }

 private:
  void AddSynthesized(Record r, pid_t pid, pid_t tid);

  perf_event_attr attr_;
  SampleLayout layout_;
  std::string event_name_;
  std::vector<perf_data::DataRecord> records_;
  size_t samples_ = 0;
};

}  // namespace perftest::profile
