// perf.data: the feature sections (the "optional headers" after the data
// section, one per bit of perf_file_header.flags; in pipe mode each is a
// PERF_RECORD_HEADER_FEATURE record), parsed and encoded.
//
//   Result<std::string> host = ParseStringFeature(data.features[HEADER_HOSTNAME]);
//   Result<std::vector<EventDesc>> ev = ParseEventDesc(data.features[HEADER_EVENT_DESC]);
//
// Layouts: tools/perf/Documentation/perf.data-file-format.txt and the
// write_*()/process_*() pairs of tools/perf/util/header.c (perf 6.1). A
// perf_header_string is {u32 len; char str[len]} with len counting the NUL
// and zero padding to 64 bytes (NAME_ALIGN); a string list is {u32 nr;
// perf_header_string[nr]}. Every parser fails with EBADMSG naming the field
// that does not fit or the count that exceeds the section; none reads past
// the span it is given.
#pragma once

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "harness/perf_data/format.h"
#include "harness/perf_data/user_records.h"
#include "harness/result.h"

namespace perftest::perf_data {

// HEADER_HOSTNAME, OSRELEASE, VERSION, ARCH, CPUDESC, CPUID: one string.
Result<std::string> ParseStringFeature(std::span<const std::byte> section);
// HEADER_CMDLINE (argv[0] is perf's path), and the sibling lists: a string list.
Result<std::vector<std::string>> ParseStringListFeature(std::span<const std::byte> section);
// HEADER_TOTAL_MEM (kB), HEADER_CLOCKID (clock resolution, ns): one u64.
Result<uint64_t> ParseU64Feature(std::span<const std::byte> section);

// HEADER_NRCPUS: {u32 nr_cpus_online; u32 nr_cpus_available}.
struct NrCpus {
  uint32_t online = 0, available = 0;
  bool operator==(const NrCpus&) const = default;
};
Result<NrCpus> ParseNrCpus(std::span<const std::byte> section);

// HEADER_BUILD_ID: a sequence of build_id_event records (header.size each).
Result<std::vector<BuildIdRecord>> ParseBuildIds(std::span<const std::byte> section);

// HEADER_EVENT_DESC: {u32 nr; u32 attr_size; {attr; u32 nr_ids; string name;
// u64 ids[nr_ids]}[nr]}.
struct EventDesc {
  perf_event_attr attr{};  // zero-filled past attr_size
  std::string name;        // e.g. "cpu-clock"
  std::vector<uint64_t> ids;
};
Result<std::vector<EventDesc>> ParseEventDesc(std::span<const std::byte> section);

// HEADER_CPU_TOPOLOGY: core and thread sibling lists, {u32 core_id; u32
// socket_id} per available CPU, then (perf 5.3+) die sibling lists and a u32
// die_id per CPU. `nr_cpus_available` (HEADER_NRCPUS) says how many CPUs;
// 0 takes as many entries as the rest holds (no dies then).
struct CpuTopology {
  std::vector<std::string> core_siblings, thread_siblings, die_siblings;
  struct Cpu {
    uint32_t core_id = 0, socket_id = 0;
    std::optional<uint32_t> die_id;
    bool operator==(const Cpu&) const = default;
  };
  std::vector<Cpu> cpus;
};
Result<CpuTopology> ParseCpuTopology(std::span<const std::byte> section, uint32_t nr_cpus_available);

// HEADER_CLOCK_DATA: {u32 version (1); u32 clockid; u64 wall clock ns; u64
// clockid ns}, both times read together at record start (perf record
// --clockid with -k), for `perf script --clock-time`-style conversion.
struct ClockData {
  uint32_t version = 0, clockid = 0;
  uint64_t wall_clock_ns = 0, clockid_time_ns = 0;
  bool operator==(const ClockData&) const = default;
};
Result<ClockData> ParseClockData(std::span<const std::byte> section);

// HEADER_AUXTRACE: {u64 nr; {u64 file_offset; u64 sz}[nr]}: where each
// PERF_RECORD_AUXTRACE is (sz is its header.size; its data follows it).
struct AuxtraceIndexEntry {
  uint64_t file_offset = 0, sz = 0;
  bool operator==(const AuxtraceIndexEntry&) const = default;
};
Result<std::vector<AuxtraceIndexEntry>> ParseAuxtraceIndex(std::span<const std::byte> section);

// HEADER_SAMPLE_TIME: {u64 first; u64 last} sample time, ns.
struct SampleTime {
  uint64_t first = 0, last = 0;
};
Result<SampleTime> ParseSampleTime(std::span<const std::byte> section);

// HEADER_PMU_MAPPINGS: {u32 nr; {u32 type; string name}[nr]}.
struct PmuMapping {
  uint32_t type = 0;
  std::string name;
};
Result<std::vector<PmuMapping>> ParsePmuMappings(std::span<const std::byte> section);

// HEADER_GROUP_DESC: {u32 nr; {string name; u32 leader_idx; u32 nr_members}[nr]}.
struct GroupDesc {
  std::string name;
  uint32_t leader_idx = 0, nr_members = 0;
};
Result<std::vector<GroupDesc>> ParseGroupDesc(std::span<const std::byte> section);

// Encoders (the inverse of the parsers, with perf's padding).
std::vector<std::byte> EncodeStringFeature(std::string_view s);
std::vector<std::byte> EncodeStringListFeature(std::span<const std::string> list);
std::vector<std::byte> EncodeU64Feature(uint64_t v);
std::vector<std::byte> EncodeNrCpus(const NrCpus& n);
std::vector<std::byte> EncodeEventDesc(std::span<const EventDesc> events);
std::vector<std::byte> EncodeAuxtraceIndex(std::span<const AuxtraceIndexEntry> entries);
std::vector<std::byte> EncodeClockData(const ClockData& c);
// One build_id_event per entry, with PERF_RECORD_MISC_BUILD_ID_SIZE.
std::vector<std::byte> EncodeBuildIds(std::span<const BuildIdRecord> ids);

}  // namespace perftest::perf_data
