// perf.data: the constants of the file format and its fixed headers.
//
//   Result<FileHeader> h = ParseFileHeader(bytes);       // "PERFILE2", 104 bytes
//   if (h->features.test(HEADER_HOSTNAME)) ...
//   RecordTypeName(PERF_RECORD_AUXTRACE);                  // "PERF_RECORD_AUXTRACE"
//
// Source: tools/perf/Documentation/perf.data-file-format.txt; the feature
// numbers are tools/perf/util/header.h `enum HEADER_*` (perf 6.1); the record
// types at and above 64 are perf's own (tools/lib/perf/include/perf/event.h
// `enum perf_user_event_type`), the ones below are the kernel's
// (<linux/perf_event.h> `enum perf_event_type`). Every field is in the
// byte order of the machine that wrote the file; this reader takes files of
// its own byte order only (a byte-swapped magic is ENOTSUP, named as such).
#pragma once

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "harness/result.h"

namespace perftest::perf_data {

// "PERFILE2" read as a native u64 (perf_header magic, version 2).
inline constexpr uint64_t kMagic = 0x32454c4946524550ULL;
// The same bytes written by a machine of the other byte order.
inline constexpr uint64_t kMagicSwapped = 0x50455246494c4532ULL;
// sizeof(struct perf_file_header): magic, size, attr_size, attrs, data,
// event_types (perf_file_section each), flags + flags1[3] (256 feature bits).
inline constexpr size_t kFileHeaderSize = 104;
// sizeof(struct perf_pipe_file_header): magic, size.
inline constexpr size_t kPipeHeaderSize = 16;
// perf_event_attr as perf 6.1 writes it (PERF_ATTR_SIZE_VER7); older files
// carry smaller attrs (attr_size in the header), newer ones larger.
inline constexpr size_t kPerfAttrSizeVer0 = 64;

// perf's own record types (enum perf_user_event_type).
enum UserRecordType : uint32_t {
  PERF_RECORD_USER_TYPE_START = 64,
  PERF_RECORD_HEADER_ATTR = 64,
  PERF_RECORD_HEADER_EVENT_TYPE = 65,  // deprecated
  PERF_RECORD_HEADER_TRACING_DATA = 66,
  PERF_RECORD_HEADER_BUILD_ID = 67,
  PERF_RECORD_FINISHED_ROUND = 68,
  PERF_RECORD_ID_INDEX = 69,
  PERF_RECORD_AUXTRACE_INFO = 70,
  PERF_RECORD_AUXTRACE = 71,
  PERF_RECORD_AUXTRACE_ERROR = 72,
  PERF_RECORD_THREAD_MAP = 73,
  PERF_RECORD_CPU_MAP = 74,
  PERF_RECORD_STAT_CONFIG = 75,
  PERF_RECORD_STAT = 76,
  PERF_RECORD_STAT_ROUND = 77,
  PERF_RECORD_EVENT_UPDATE = 78,
  PERF_RECORD_TIME_CONV = 79,
  PERF_RECORD_HEADER_FEATURE = 80,
  PERF_RECORD_COMPRESSED = 81,
  PERF_RECORD_FINISHED_INIT = 82,
  PERF_RECORD_HEADER_MAX
};

// Feature bits of perf_file_header.flags (tools/perf/util/header.h).
enum Feature : int {
  HEADER_RESERVED = 0,
  HEADER_TRACING_DATA = 1,
  HEADER_BUILD_ID,
  HEADER_HOSTNAME,
  HEADER_OSRELEASE,
  HEADER_VERSION,
  HEADER_ARCH,
  HEADER_NRCPUS,
  HEADER_CPUDESC,
  HEADER_CPUID,
  HEADER_TOTAL_MEM,
  HEADER_CMDLINE,
  HEADER_EVENT_DESC,
  HEADER_CPU_TOPOLOGY,
  HEADER_NUMA_TOPOLOGY,
  HEADER_BRANCH_STACK,
  HEADER_PMU_MAPPINGS,
  HEADER_GROUP_DESC,
  HEADER_AUXTRACE,
  HEADER_STAT,
  HEADER_CACHE,
  HEADER_SAMPLE_TIME,
  HEADER_MEM_TOPOLOGY,
  HEADER_CLOCKID,
  HEADER_DIR_FORMAT,
  HEADER_BPF_PROG_INFO,
  HEADER_BPF_BTF,
  HEADER_COMPRESSED,
  HEADER_CPU_PMU_CAPS,
  HEADER_CLOCK_DATA,
  HEADER_HYBRID_TOPOLOGY,
  HEADER_PMU_CAPS,
  HEADER_LAST_FEATURE,
  HEADER_FEAT_BITS = 256,
};

// struct perf_file_section: bytes [offset, offset + size) of the file.
struct FileSection {
  uint64_t offset = 0, size = 0;
  bool operator==(const FileSection&) const = default;
};

// struct perf_file_header (file mode) or perf_pipe_file_header (pipe mode:
// only magic and size, size == kPipeHeaderSize).
struct FileHeader {
  bool pipe = false;
  uint64_t size = kFileHeaderSize;  // of this header, bytes
  uint64_t attr_size = 0;           // of one attrs entry: sizeof(struct perf_file_attr),
                                    // the perf_event_attr and its 16-byte ids FileSection
  FileSection attrs;                // {perf_event_attr (attr_size - 16 bytes), FileSection ids}[]
  FileSection data;                 // the records
  FileSection event_types;          // unused since perf 3.x (written as {0, 0})
  std::bitset<HEADER_FEAT_BITS> features;  // flags + flags1[3]
  bool operator==(const FileHeader&) const = default;
};

// Parses the header at the start of `file`. Errors (EBADMSG unless noted,
// the message naming the field and its byte offset): shorter than the
// header, a magic other than "PERFILE2" (ENOTSUP for the byte-swapped one,
// and for the version 1 "PERFFILE"), a file-mode header whose size is not
// 104, a pipe header whose size is not 16, attr_size below 80 (a
// PERF_ATTR_SIZE_VER0 attr and its ids section) or not a multiple of 8.
Result<FileHeader> ParseFileHeader(std::span<const std::byte> file);

// Appends the header's kFileHeaderSize (or kPipeHeaderSize) bytes.
void EncodeFileHeader(const FileHeader& h, std::vector<std::byte>* out);

// "PERF_RECORD_SAMPLE" (kernel types, harness/attr.h RecordTypeName()),
// "PERF_RECORD_AUXTRACE" (perf's), "PERF_RECORD_<n>" when unknown.
std::string RecordTypeName(uint32_t type);

// Whether `type` is a kernel record type of the UAPI this was built against
// or one of perf's (64 .. PERF_RECORD_HEADER_MAX-1).
bool IsKnownRecordType(uint32_t type);

// "HOSTNAME" for HEADER_HOSTNAME (as `perf report --header` names them in
// "missing features"); "FEATURE_<n>" when unknown.
std::string FeatureName(int feature);

}  // namespace perftest::perf_data
