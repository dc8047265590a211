#include "harness/perf_data/format.h"

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "harness/attr.h"
#include "harness/perf_data/internal/bytes.h"
#include "harness/records.h"

namespace perftest::perf_data {
namespace {

using internal::ByteAppender;
using internal::ByteCursor;

// "PERFFILE": perf's version 1 magic.
constexpr uint64_t kMagicV1 = 0x454c494646524550ULL;

// Errors name the offset first, as every reader error does.
Result<FileHeader> Bad(int err, uint64_t offset, std::string detail) {
  return Result<FileHeader>::Failure(err, fmt::format("offset {:#x}: perf.data header: {}", offset, detail));
}

// Each name at its feature number (tools/perf/util/header.c feat_ops[].name).
constexpr std::array<const char*, HEADER_LAST_FEATURE> kFeatureNames = {
    "RESERVED",     "TRACING_DATA",  "BUILD_ID",      "HOSTNAME",       "OSRELEASE",
    "VERSION",      "ARCH",          "NRCPUS",        "CPUDESC",        "CPUID",
    "TOTAL_MEM",    "CMDLINE",       "EVENT_DESC",    "CPU_TOPOLOGY",   "NUMA_TOPOLOGY",
    "BRANCH_STACK", "PMU_MAPPINGS",  "GROUP_DESC",    "AUXTRACE",       "STAT",
    "CACHE",        "SAMPLE_TIME",   "MEM_TOPOLOGY",  "CLOCKID",        "DIR_FORMAT",
    "BPF_PROG_INFO", "BPF_BTF",      "COMPRESSED",    "CPU_PMU_CAPS",   "CLOCK_DATA",
    "HYBRID_TOPOLOGY", "PMU_CAPS",
};

constexpr std::array<const char*, PERF_RECORD_HEADER_MAX - PERF_RECORD_USER_TYPE_START> kUserNames = {
    "PERF_RECORD_HEADER_ATTR",     "PERF_RECORD_HEADER_EVENT_TYPE", "PERF_RECORD_HEADER_TRACING_DATA",
    "PERF_RECORD_HEADER_BUILD_ID", "PERF_RECORD_FINISHED_ROUND",    "PERF_RECORD_ID_INDEX",
    "PERF_RECORD_AUXTRACE_INFO",   "PERF_RECORD_AUXTRACE",          "PERF_RECORD_AUXTRACE_ERROR",
    "PERF_RECORD_THREAD_MAP",      "PERF_RECORD_CPU_MAP",           "PERF_RECORD_STAT_CONFIG",
    "PERF_RECORD_STAT",            "PERF_RECORD_STAT_ROUND",        "PERF_RECORD_EVENT_UPDATE",
    "PERF_RECORD_TIME_CONV",       "PERF_RECORD_HEADER_FEATURE",    "PERF_RECORD_COMPRESSED",
    "PERF_RECORD_FINISHED_INIT",
};

}  // namespace

Result<FileHeader> ParseFileHeader(std::span<const std::byte> file) {
  ByteCursor c(file);
  FileHeader h;
  uint64_t magic = 0;
  if (!c.Get(&magic, "magic") || !c.Get(&h.size, "size")) {
    return Bad(EBADMSG, 0, fmt::format("{} bytes, too short for a header", file.size()));
  }
  if (magic == kMagicSwapped) return Bad(ENOTSUP, 0, "magic is byte-swapped: a file of the other byte order");
  if (magic == kMagicV1) return Bad(ENOTSUP, 0, "magic \"PERFFILE\": version 1 files are not read");
  if (magic != kMagic) return Bad(EBADMSG, 0, fmt::format("magic is {:#018x}, not \"PERFILE2\"", magic));
  if (h.size == kPipeHeaderSize) {
    h.pipe = true;
    return Result<FileHeader>::Ok(std::move(h));
  }
  if (h.size != kFileHeaderSize) {
    return Bad(EBADMSG, 8, fmt::format("size is {}, neither {} (file) nor {} (pipe)", h.size,
                                    kFileHeaderSize, kPipeHeaderSize));
  }
  uint64_t flags[4] = {};
  const bool ok = c.Get(&h.attr_size, "attr_size") && c.Get(&h.attrs, "attrs") && c.Get(&h.data, "data") &&
                  c.Get(&h.event_types, "event_types") && c.Get(&flags, "flags");
  if (!ok) return Bad(EBADMSG, c.offset(), fmt::format("truncated: {}", c.error()));
  if (h.attr_size < kPerfAttrSizeVer0 + sizeof(FileSection) || h.attr_size % 8 != 0) {
    return Bad(EBADMSG, 0x10, fmt::format("attr_size is {}: below {} or not a multiple of 8", h.attr_size,
                                    kPerfAttrSizeVer0 + sizeof(FileSection)));
  }
  for (int i = 0; i < HEADER_FEAT_BITS; ++i) h.features[i] = (flags[i / 64] >> (i % 64)) & 1;
  return Result<FileHeader>::Ok(std::move(h));
}

void EncodeFileHeader(const FileHeader& h, std::vector<std::byte>* out) {
  ByteAppender w(out);
  w.Put(kMagic);
  if (h.pipe) {
    w.Put(uint64_t{kPipeHeaderSize});
    return;
  }
  w.Put(uint64_t{kFileHeaderSize});
  w.Put(h.attr_size);
  w.Put(h.attrs);
  w.Put(h.data);
  w.Put(h.event_types);
  uint64_t flags[4] = {};
  for (int i = 0; i < HEADER_FEAT_BITS; ++i) {
    if (h.features[i]) flags[i / 64] |= uint64_t{1} << (i % 64);
  }
  w.Put(flags);
}

std::string RecordTypeName(uint32_t type) {
  if (type >= PERF_RECORD_USER_TYPE_START && type < PERF_RECORD_HEADER_MAX) {
    return kUserNames[type - PERF_RECORD_USER_TYPE_START];
  }
  return perftest::RecordTypeName(type);
}

bool IsKnownRecordType(uint32_t type) {
  return perftest::IsKnownRecordType(type) || (type >= PERF_RECORD_USER_TYPE_START && type < PERF_RECORD_HEADER_MAX);
}

std::string FeatureName(int feature) {
  if (feature >= 0 && feature < HEADER_LAST_FEATURE) return kFeatureNames[feature];
  return fmt::format("FEATURE_{}", feature);
}

}  // namespace perftest::perf_data
