// perf.data: the record types perf itself writes (type >= 64), parsed and
// encoded. The kernel's records (type < 64) are harness/records.h.
//
//   Result<UserRecord> r = ParseUserRecord(bytes);          // header included
//   if (auto* a = std::get_if<AuxtraceRecord>(&*r)) read(a->size, a->cpu);
//   Result<IntelPtInfo> pt = ParseIntelPtInfo(std::get<AuxtraceInfoRecord>(*r));
//
// Layouts: tools/lib/perf/include/perf/event.h (struct perf_record_*) and
// tools/perf/Documentation/perf.data-file-format.txt; Intel PT's private
// AUXTRACE_INFO words as tools/perf/arch/x86/util/intel-pt.c
// intel_pt_info_fill() writes them (indices: tools/perf/util/intel-pt.h).
// Fields that newer perf appended to a record (TIME_CONV's time_cycles,
// AUXTRACE_ERROR's machine_pid) are optional: present when header.size holds
// them. PERF_RECORD_AUXTRACE's data and PERF_RECORD_HEADER_TRACING_DATA's
// data follow the record and are not counted in header.size; the reader
// (reader.h) carries them as the record's payload.
#pragma once

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "harness/perf_data/format.h"
#include "harness/result.h"

namespace perftest::perf_data {

// PERF_RECORD_HEADER_ATTR (pipe mode): perf_event_attr (attr.size bytes,
// PERF_ATTR_SIZE_VER0 when 0), then the event's ids (u64 each).
struct HeaderAttrRecord {
  perf_event_attr attr{};               // zero-filled past what the file holds
  std::vector<std::byte> attr_bytes;    // as in the file (attr.size bytes)
  std::vector<uint64_t> ids;
};

// PERF_RECORD_HEADER_EVENT_TYPE (deprecated): {u64 event_id; char name[64]}.
struct EventTypeRecord {
  uint64_t event_id = 0;
  std::string name;
};

// PERF_RECORD_HEADER_TRACING_DATA: {u32 size}; `size` bytes of tracing data
// (8-byte aligned) follow the record.
struct TracingDataRecord {
  uint32_t size = 0;
};

// struct perf_record_header_build_id (PERF_RECORD_HEADER_BUILD_ID, and each
// entry of the HEADER_BUILD_ID feature): pid, build_id[24] (with
// PERF_RECORD_MISC_BUILD_ID_SIZE in misc: data[20], u8 size), filename.
struct BuildIdRecord {
  uint16_t misc = 0;                // PERF_RECORD_MISC_KERNEL/USER/GUEST_*, BUILD_ID_SIZE
  int32_t pid = 0;
  std::vector<std::byte> build_id;  // `size` bytes with BUILD_ID_SIZE, else 20
  std::string filename;
};
inline constexpr uint16_t PERF_RECORD_MISC_BUILD_ID_SIZE = 1 << 15;

// PERF_RECORD_FINISHED_ROUND, PERF_RECORD_FINISHED_INIT: no body.
struct FinishedRoundRecord {};
struct FinishedInitRecord {};

// PERF_RECORD_ID_INDEX: which event, CPU and thread each id belongs to.
struct IdIndexRecord {
  struct Entry {
    uint64_t id = 0, idx = 0, cpu = 0, tid = 0;  // idx: evsel's index in the attrs; cpu/tid: (u64)-1 for any
    bool operator==(const Entry&) const = default;
  };
  std::vector<Entry> entries;
};

// PERF_RECORD_AUXTRACE_INFO: {u32 type; u32 reserved; u64 priv[]}; type is
// enum auxtrace_type (PERF_AUXTRACE_INTEL_PT = 1, tools/perf/util/auxtrace.h).
struct AuxtraceInfoRecord {
  uint32_t type = 0;
  std::vector<uint64_t> priv;
};
inline constexpr uint32_t PERF_AUXTRACE_INTEL_PT = 1;

// Intel PT's priv[] words (INTEL_PT_PMU_TYPE .. INTEL_PT_FILTER_STR_LEN, 17
// u64), then the address filter string (filter_str_len chars, NUL, zeros to
// 8 bytes), then, from perf 5.19/6.0, the event_trace word.
struct IntelPtInfo {
  uint64_t pmu_type = 0;            // intel_pt PMU's perf_event_attr.type
  uint64_t time_shift = 0, time_mult = 0, time_zero = 0;  // perf_event_mmap_page TSC conversion
  uint64_t cap_user_time_zero = 0;
  uint64_t tsc_bit = 0;             // bit of `tsc` in the PMU's config (format/tsc)
  uint64_t noretcomp_bit = 0;
  uint64_t have_sched_switch = 0;   // 0 none, 1 sched:sched_switch, 2 context_switch, 3 both
  uint64_t snapshot_mode = 0;
  uint64_t per_cpu_mmaps = 0;
  uint64_t mtc_bit = 0;
  uint64_t mtc_freq_bits = 0;       // mask of mtc_period in config
  uint64_t tsc_ctc_ratio_n = 0, tsc_ctc_ratio_d = 0;  // CPUID.15H EBX/EAX
  uint64_t cyc_bit = 0;
  uint64_t max_non_turbo_ratio = 0;
  std::string filter;               // `--filter` address filters, "" when none
  std::optional<uint64_t> event_trace;  // perf >= 6.0 only
  bool operator==(const IntelPtInfo&) const = default;
};
inline constexpr size_t kIntelPtPrivFixed = 17;  // INTEL_PT_AUXTRACE_PRIV_MAX

// PERF_RECORD_AUXTRACE: `size` bytes of AUX data (8-byte padded) follow the
// record; `offset` is their position in the AUX area's stream, `reference`
// a value perf uses to match snapshots, `idx` the mmap (AUX queue) index.
struct AuxtraceRecord {
  uint64_t size = 0, offset = 0, reference = 0;
  uint32_t idx = 0, tid = 0, cpu = 0;
  bool operator==(const AuxtraceRecord&) const = default;
};

// PERF_RECORD_AUXTRACE_ERROR.
struct AuxtraceErrorRecord {
  uint32_t type = 0, code = 0, cpu = 0, pid = 0, tid = 0, fmt = 0;
  uint64_t ip = 0, time = 0;  // time: fmt >= 2
  std::string msg;            // char msg[64]
  std::optional<uint32_t> machine_pid, vcpu;
};

// PERF_RECORD_THREAD_MAP: {u64 nr; {u64 pid; char comm[16]}[nr]}.
struct ThreadMapRecord {
  struct Entry {
    uint64_t pid = 0;
    std::string comm;
    bool operator==(const Entry&) const = default;
  };
  std::vector<Entry> entries;
};

// struct perf_record_cpu_map_data (packed): u16 type, then CPUS {u16 nr;
// u16 cpu[nr]}, MASK {u16 nr; u16 long_size (4 or 8); (8: 4 pad bytes)
// mask[nr]} or RANGE_CPUS {u8 any_cpu; u8 pad; u16 start_cpu, end_cpu}
// (struct perf_record_range_cpu_map, perf 6.1+).
// Parsed into the CPU list either way (a -1 entry: "any CPU").
struct CpuMapData {
  uint16_t type = 0;  // PERF_CPU_MAP__CPUS 0, __MASK 1, __RANGE_CPUS 2
  std::vector<int32_t> cpus;
  bool operator==(const CpuMapData&) const = default;
};
struct CpuMapRecord {
  CpuMapData data;
};

// PERF_RECORD_STAT_CONFIG, PERF_RECORD_STAT, PERF_RECORD_STAT_ROUND (perf stat record).
struct StatConfigRecord {
  std::vector<std::pair<uint64_t, uint64_t>> terms;  // {tag, val}
};
struct StatRecord {
  uint64_t id = 0;
  uint32_t cpu = 0, thread = 0;
  uint64_t val = 0, ena = 0, run = 0;
};
struct StatRoundRecord {
  uint64_t type = 0, time = 0;
};

// PERF_RECORD_EVENT_UPDATE: {u64 type; u64 id; data}: UNIT (0) and NAME (2)
// a string, SCALE (1) a double, CPUS (3) a cpu_map_data.
struct EventUpdateRecord {
  uint64_t type = 0, id = 0;
  std::string text;   // UNIT, NAME
  double scale = 0;   // SCALE
  CpuMapData cpus;    // CPUS
};

// PERF_RECORD_TIME_CONV: the TSC conversion of perf_event_mmap_page
// (time_shift, time_mult, time_zero; perf 5.12+: time_cycles, time_mask,
// cap_user_time_zero, cap_user_time_short).
struct TimeConvRecord {
  uint64_t time_shift = 0, time_mult = 0, time_zero = 0;
  std::optional<uint64_t> time_cycles, time_mask;
  std::optional<uint8_t> cap_user_time_zero, cap_user_time_short;
  bool operator==(const TimeConvRecord&) const = default;
};

// PERF_RECORD_HEADER_FEATURE (pipe mode): {u64 feat_id; the feature's bytes
// as in a file's feature section}.
struct HeaderFeatureRecord {
  uint64_t feat_id = 0;
  std::vector<std::byte> data;
};

// PERF_RECORD_COMPRESSED: zstd-compressed records (`perf record -z`); not
// decompressed here.
struct CompressedRecord {
  size_t compressed_size = 0;
};

using UserRecord =
    std::variant<HeaderAttrRecord, EventTypeRecord, TracingDataRecord, BuildIdRecord, FinishedRoundRecord,
                 IdIndexRecord, AuxtraceInfoRecord, AuxtraceRecord, AuxtraceErrorRecord, ThreadMapRecord,
                 CpuMapRecord, StatConfigRecord, StatRecord, StatRoundRecord, EventUpdateRecord, TimeConvRecord,
                 HeaderFeatureRecord, CompressedRecord, FinishedInitRecord>;

// Parses one of perf's records, header included (`record` is header.size
// bytes). Errors: EBADMSG when a field does not fit or a count exceeds the
// record (the message names the record type and the field); ENOENT for a
// type that is not one of perf's (below 64, or PERF_RECORD_HEADER_MAX and up).
Result<UserRecord> ParseUserRecord(std::span<const std::byte> record);

// Parses a build_id_event body (after the perf_event_header) of `misc`.
Result<BuildIdRecord> ParseBuildId(uint16_t misc, std::span<const std::byte> body);
// Parses a cpu_map_data at the start of `bytes`.
Result<CpuMapData> ParseCpuMapData(std::span<const std::byte> bytes);

// Intel PT's words of an AUXTRACE_INFO of type PERF_AUXTRACE_INTEL_PT.
// Errors: EINVAL for another type; EBADMSG when priv[] is shorter than the
// 17 fixed words or the filter string they announce.
Result<IntelPtInfo> ParseIntelPtInfo(const AuxtraceInfoRecord& info);
// The priv[] words of `pt`, laid out as intel_pt_info_fill() lays them out.
AuxtraceInfoRecord EncodeIntelPtInfo(const IntelPtInfo& pt);

// Encoders: append the whole record, header included (size padded to 8
// bytes where perf pads). EncodeAuxtrace appends the header and the fields
// only; the caller appends `a.size` bytes of data after it.
void EncodeHeaderAttr(const perf_event_attr& attr, std::span<const uint64_t> ids, std::vector<std::byte>* out);
void EncodeHeaderFeature(uint64_t feat_id, std::span<const std::byte> data, std::vector<std::byte>* out);
void EncodeFinishedRound(std::vector<std::byte>* out);
void EncodeIdIndex(const IdIndexRecord& r, std::vector<std::byte>* out);
void EncodeAuxtraceInfo(const AuxtraceInfoRecord& r, std::vector<std::byte>* out);
void EncodeAuxtrace(const AuxtraceRecord& a, std::vector<std::byte>* out);
void EncodeTimeConv(const TimeConvRecord& r, std::vector<std::byte>* out);
void EncodeThreadMap(const ThreadMapRecord& r, std::vector<std::byte>* out);
// CPU map in the PERF_CPU_MAP__CPUS encoding.
void EncodeCpuMap(std::span<const int32_t> cpus, std::vector<std::byte>* out);

}  // namespace perftest::perf_data
