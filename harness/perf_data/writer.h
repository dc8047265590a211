// perf.data writer: a PerfData (reader.h) back into perf's file format.
//
//   Result<PerfData> d = ReadPerfDataFile("in.data");
//   std::vector<std::byte> out = WritePerfData(*d);          // file mode
//   Result<void> w = WritePerfDataFile(*d, "out.data");
//
// File mode lays the file out as perf record does (tools/perf/util/header.c
// perf_session__do_write_header()): the 104-byte header; each attr's ids;
// the attrs ({attr; perf_file_section ids}); the data section; the feature
// table at data.offset + data.size and the feature sections after it, in
// bit order (after PerfData::feature_table_padding zero bytes). For a file
// perf wrote, the result is byte for byte the input.
//
// Rewritten (documented): header.data/attrs/feature offsets are recomputed;
// the HEADER_AUXTRACE index is rebuilt from the PERF_RECORD_AUXTRACE records
// at their new offsets (written whenever there is one); from a pipe-mode
// input, the pipe-only records (PERF_RECORD_HEADER_ATTR, HEADER_FEATURE,
// HEADER_EVENT_TYPE, HEADER_TRACING_DATA) move into the file header: attrs
// and their ids, feature sections (tracing data into HEADER_TRACING_DATA),
// so every other record sits at a new offset. attr_size is the input's
// (sizeof(perf_event_attr) + 16 for a pipe-mode input; attrs padded or cut
// to it).
//
// Pipe mode (WritePerfDataPipe) writes the 16-byte header, a HEADER_ATTR per
// attr, a HEADER_FEATURE per feature section and the HEADER_LAST_FEATURE end
// mark (perf record -o - writes them first too), a HEADER_TRACING_DATA
// record for a file's HEADER_TRACING_DATA feature, then every record of the
// input but its HEADER_ATTR and HEADER_FEATURE ones.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "harness/perf_data/reader.h"
#include "harness/result.h"

namespace perftest::perf_data {

std::vector<std::byte> WritePerfData(const PerfData& data);
std::vector<std::byte> WritePerfDataPipe(const PerfData& data);

// Writes WritePerfData(data) (or the pipe form) to `path` (created with mode
// 0600, as perf does, or truncated). Errors: the errno of open/write.
Result<void> WritePerfDataFile(const PerfData& data, const std::string& path, bool pipe = false);

// Whether `type` exists only in pipe mode (its contents go to the file
// header in file mode).
bool IsPipeOnlyRecord(uint32_t type);

}  // namespace perftest::perf_data
