// libFuzzer target for the perf.data reader (harness/perf_data/reader.h) and
// what it feeds: every record parsed with its event's layout, every feature
// section with its parser, and the writer. Beyond "no crash, no
// out-of-bounds read" (ASan/UBSan), it traps when a contract breaks:
//   - a file that does not read fails with EBADMSG or ENOTSUP, and its
//     message names a byte offset ("offset 0x...");
//   - a record that does not parse fails with EBADMSG (or ENOENT for an
//     unknown type), naming its offset; so do those decompressed from
//     PERF_RECORD_COMPRESSED, and bad compressed data (EBADMSG, EFBIG);
//   - a feature section parses or fails with EBADMSG, never anything else;
//   - the AUXTRACE data sorts into queues, or fails with EBADMSG naming an
//     offset;
//   - what was read, written back in file mode and read again, has the same
//     attrs (ids) and the same records (bytes and payload), pipe-only ones
//     aside.
//
// Input: a perf.data file, file or pipe mode. Seeds (seeds/): perf 6.1's
// `perf record -e cpu-clock -g -o cpu_clock_g.data -- ls` (and `-o -` for
// .pipe) on x86_64, and the writer's model with AUXTRACE_INFO (Intel PT) and
// AUXTRACE (harness/perf_data/test_util.h).
//
//   build-fuzz/bin/perf_data_fuzzer -max_total_time=60 -max_len=65536 CORPUS_DIR harness/perf_data/fuzz/seeds
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "harness/perf_data/aux_queues.h"
#include "harness/perf_data/compressed.h"
#include "harness/perf_data/features.h"
#include "harness/perf_data/reader.h"
#include "harness/perf_data/writer.h"

#define FUZZ_CHECK(cond)           \
  do {                             \
    if (!(cond)) __builtin_trap(); \
  } while (0)

namespace {

using namespace perftest::perf_data;

bool NamesOffset(const std::string& message) { return message.find("offset 0x") != std::string::npos; }

template <typename T>
void CheckFeature(const perftest::Result<T>& r) {
  FUZZ_CHECK(r.ok() || r.error() == EBADMSG);
}

void ParseFeatures(const PerfData& d) {
  uint32_t nr_cpus = 0;
  for (const auto& [bit, s] : d.features) {
    switch (bit) {
      case HEADER_HOSTNAME: case HEADER_OSRELEASE: case HEADER_VERSION: case HEADER_ARCH:
      case HEADER_CPUDESC: case HEADER_CPUID: CheckFeature(ParseStringFeature(s)); break;
      case HEADER_CMDLINE: CheckFeature(ParseStringListFeature(s)); break;
      case HEADER_TOTAL_MEM: case HEADER_CLOCKID: CheckFeature(ParseU64Feature(s)); break;
      case HEADER_NRCPUS: {
        auto n = ParseNrCpus(s);
        CheckFeature(n);
        if (n.ok()) nr_cpus = n->available;
        break;
      }
      case HEADER_BUILD_ID: CheckFeature(ParseBuildIds(s)); break;
      case HEADER_EVENT_DESC: CheckFeature(ParseEventDesc(s)); break;
      case HEADER_CPU_TOPOLOGY: CheckFeature(ParseCpuTopology(s, nr_cpus)); break;
      case HEADER_CLOCK_DATA: CheckFeature(ParseClockData(s)); break;
      case HEADER_AUXTRACE: CheckFeature(ParseAuxtraceIndex(s)); break;
      case HEADER_SAMPLE_TIME: CheckFeature(ParseSampleTime(s)); break;
      case HEADER_PMU_MAPPINGS: CheckFeature(ParsePmuMappings(s)); break;
      case HEADER_GROUP_DESC: CheckFeature(ParseGroupDesc(s)); break;
      default: break;
    }
  }
}

void ParseRecord(const RecordParser& parser, const DataRecord& r) {
  perftest::Result<ParsedRecord> p = parser.Parse(r);
  if (!p.ok()) {
    FUZZ_CHECK(p.error() == EBADMSG || p.error() == ENOENT);
    FUZZ_CHECK(NamesOffset(p.call()));
    return;
  }
  if (const auto* u = std::get_if<UserRecord>(&*p)) {
    if (const auto* info = std::get_if<AuxtraceInfoRecord>(u)) {
      auto pt = ParseIntelPtInfo(*info);
      FUZZ_CHECK(pt.ok() || pt.error() == EBADMSG || pt.error() == EINVAL);
    }
  }
}

// Every record, and those decompressed from PERF_RECORD_COMPRESSED.
void ParseRecords(const PerfData& d) {
  RecordParser parser(d);
  Decompressor z;
  bool stream_ok = true;
  for (const DataRecord& r : d.records) {
    ParseRecord(parser, r);
    if (r.header.type != PERF_RECORD_COMPRESSED || !stream_ok) continue;
    perftest::Result<std::vector<DataRecord>> inner = z.Feed(r);
    if (!inner.ok()) {
      FUZZ_CHECK(inner.error() == EBADMSG || inner.error() == EFBIG);
      FUZZ_CHECK(NamesOffset(inner.call()));
      stream_ok = false;
      continue;
    }
    for (const DataRecord& i : *inner) {
      FUZZ_CHECK(i.offset == r.offset && i.offset_in_stream.has_value());
      ParseRecord(parser, i);
    }
  }
}

void CheckRoundTrip(const PerfData& d) {
  const std::vector<std::byte> file = WritePerfData(d);
  perftest::Result<PerfData> back = ReadPerfData(file);
  FUZZ_CHECK(back.ok());
  FUZZ_CHECK(back->attrs.size() == d.attrs.size());
  for (size_t i = 0; i < d.attrs.size(); ++i) FUZZ_CHECK(back->attrs[i].ids == d.attrs[i].ids);
  size_t j = 0;
  for (const DataRecord& r : d.records) {
    if (IsPipeOnlyRecord(r.header.type)) continue;
    FUZZ_CHECK(j < back->records.size());
    FUZZ_CHECK(back->records[j].bytes == r.bytes && back->records[j].payload == r.payload);
    ++j;
  }
  FUZZ_CHECK(j == back->records.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  perftest::Result<PerfData> d = ReadPerfData(bytes);
  if (!d.ok()) {
    FUZZ_CHECK(d.error() == EBADMSG || d.error() == ENOTSUP);
    FUZZ_CHECK(NamesOffset(d.call()));
    return 0;
  }
  ParseFeatures(*d);
  ParseRecords(*d);
  perftest::Result<AuxQueues> q = AuxQueuesOf(*d);
  FUZZ_CHECK(q.ok() || (q.error() == EBADMSG && NamesOffset(q.call())));
  CheckRoundTrip(*d);
  return 0;
}
