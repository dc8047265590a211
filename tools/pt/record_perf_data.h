// The perf.data file `perftest pt record` writes (harness/perf_data): what
// perf record -e intel_pt//u writes for the same capture, so that perf
// script / perf report decode it and `perftest pt decode` reads it back.
//
//   PerfDataSink sink({pt_attr, pt_id, "intel_pt//u"}, {dummy_attr, dummy_id, "dummy:u"}, info);
//   sink.Synthesized(comm_bytes);                // the task as it was (perf's /proc synthesis)
//   sink.Record(bytes);                          // each record read from a data buffer
//   sink.Aux(aux_record, data);                  // each PERF_RECORD_AUX's AUX bytes
//   sink.EndRound();                             // after each drain of the buffers
//   Result<void> w = sink.Write("t.data");
//
// Layout (perf record's, tools/perf/builtin-record.c and util/auxtrace.c):
// attrs [intel_pt event, dummy side-band event] with their ids; the data
// section opens with PERF_RECORD_TIME_CONV, PERF_RECORD_AUXTRACE_INFO (Intel
// PT's words as intel_pt_info_fill() writes them) and PERF_RECORD_ID_INDEX,
// then the synthesized records, then the records as read (a
// PERF_RECORD_FINISHED_ROUND after each round that wrote any), the AUX data
// as PERF_RECORD_AUXTRACE records after the records of the round that
// announced it, each zero-padded to 8 bytes as perf pads them (PT PAD
// packets). Each AUXTRACE ends at a packet boundary: the kernel's AUX
// transactions do (the PT PMU is stopped before perf_aux_output_end()),
// and perf's 64-bit decoder does not join a packet split across two
// AUXTRACE buffers (intel_pt_get_split_packet() only with BITS_PER_LONG ==
// 32) — but the mock's PT model cuts its AUX data wherever a transaction
// ends (mocks/pt_sim TakeBytes), so a packet cut at the end of one
// PERF_RECORD_AUX's data waits for the next one (harness/pt PacketDecoder
// finds the cut: EMSGSIZE); the last (at Write, or before a TRUNCATED gap)
// goes out as it is.
// One AUX queue: idx 0, cpu -1, the traced task's tid (a per-thread
// recording, perf record --per-thread). Features: HEADER_HOSTNAME,
// OSRELEASE, VERSION, ARCH, NRCPUS, CPUDESC, CPUID, TOTAL_MEM, CMDLINE,
// EVENT_DESC, BUILD_ID (one entry per file given), AUXTRACE (the writer's
// index).
#pragma once

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "harness/perf_data/reader.h"
#include "harness/perf_data/user_records.h"
#include "harness/result.h"

namespace perftest::pt {

struct PerfDataEvent {
  perf_event_attr attr{};
  uint64_t id = 0;       // PERF_EVENT_IOC_ID
  std::string name;      // HEADER_EVENT_DESC: perf's name for it
};

// What the header and the synthesized records say about the recording.
struct PerfDataInfo {
  perf_data::IntelPtInfo intel_pt;            // AUXTRACE_INFO (its time_* are TIME_CONV's too)
  uint32_t nr_cpus = 1;                       // HEADER_NRCPUS (online = available)
  std::vector<std::string> cmdline;           // HEADER_CMDLINE
  std::vector<perf_data::BuildIdRecord> build_ids;  // HEADER_BUILD_ID
  int32_t pid = 0, tid = 0;                   // the traced task (AUXTRACE tid, ID_INDEX)
};

class PerfDataSink {
 public:
  PerfDataSink(PerfDataEvent pt, PerfDataEvent sideband);

  // A record synthesized for the state before recording (COMM, MMAP2 of a
  // task already running): written before every recorded one.
  void Synthesized(std::vector<std::byte> record);
  // A record as read from either event's data buffer (header included).
  void Record(std::span<const std::byte> record);
  // The AUX data of a PERF_RECORD_AUX (aux_offset: its place in the AUX
  // stream; reference: the TSC when it was read, perf's
  // auxtrace_record__reference(), intel_pt_reference() = rdtsc()).
  // `lost_after`: the record had PERF_AUX_FLAG_TRUNCATED (the trace stops
  // there): what waits is written out.
  void Aux(uint64_t aux_offset, std::span<const std::byte> data, uint64_t reference, bool lost_after);
  // The end of one read of all buffers: PERF_RECORD_FINISHED_ROUND if
  // records were added since the last one.
  void EndRound();

  uint64_t aux_bytes() const { return aux_bytes_; }

  // The whole file; Write() writes it at `path`. Errors: as
  // perf_data::WritePerfDataFile().
  perf_data::PerfData Build(const PerfDataInfo& info);
  Result<void> Write(const std::string& path, const PerfDataInfo& info);

 private:
  void FlushAux(bool all);

  PerfDataEvent pt_, sideband_;
  std::vector<std::vector<std::byte>> synthesized_;
  std::vector<perf_data::DataRecord> records_;
  bool round_open_ = false;
  std::vector<std::byte> aux_pending_;   // AUX bytes not yet in an AUXTRACE record
  uint64_t aux_pending_offset_ = 0;      // their offset in the AUX stream
  uint64_t aux_reference_ = 0;
  uint64_t aux_bytes_ = 0;
  std::vector<size_t> auxtrace_at_;      // indices in records_ whose tid is set at Build
};

// The TIME_CONV record of `pt`'s time_* words (cap_user_time_zero as given,
// no short counter).
perf_data::TimeConvRecord TimeConvOf(const perf_data::IntelPtInfo& pt);

}  // namespace perftest::pt
