// perf.data reader: a whole file (file mode or pipe mode) into its header,
// attrs with their ids, feature sections and records, each record with its
// byte offset. Framing is checked here; the contents of a record are parsed
// on demand by RecordParser, with the sample layout of its event.
//
//   Result<PerfData> d = ReadPerfDataFile("perf.data");
//   if (!d.ok()) die(d.call());    // "perf.data: offset 0x3f0: PERF_RECORD_AUXTRACE: ..."
//   RecordParser parser(*d);
//   for (const DataRecord& r : d->records) {
//     Result<ParsedRecord> p = parser.Parse(r);       // harness Record or perf's UserRecord
//   }
//
// File mode (tools/perf/Documentation/perf.data-file-format.txt): the
// 104-byte perf_file_header; attrs.size / attr_size entries of
// {perf_event_attr; perf_file_section ids}; the data section; at
// data.offset + data.size one perf_file_section per set feature bit, in bit
// order. Pipe mode (`perf record -o -`): a 16-byte header, then records
// only; PERF_RECORD_HEADER_ATTR gives the attrs and
// PERF_RECORD_HEADER_FEATURE the features (both stay in `records` too).
// PERF_RECORD_AUXTRACE is followed by `size` bytes of AUX data and
// PERF_RECORD_HEADER_TRACING_DATA by `size` bytes of tracing data, neither
// counted in header.size: they are the record's `payload`
// (tools/perf/util/session.c perf_session__process_user_event()).
//
// Unknown record types and feature bits are kept (bytes as read) and
// counted, never fatal. Errors: EBADMSG for a truncated or inconsistent file,
// naming the byte offset and the record or section; ENOTSUP for a file of
// the other byte order; errno of open/read for ReadPerfDataFile.
#pragma once

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "harness/perf_data/format.h"
#include "harness/perf_data/user_records.h"
#include "harness/records.h"
#include "harness/result.h"

namespace perftest::perf_data {

// One event of the file: its perf_event_attr and the ids of its fds.
struct Attr {
  perf_event_attr attr{};          // zero-filled past what the file holds
  std::vector<std::byte> bytes;    // as in the file (attr_size - 16 bytes, or attr.size in pipe mode);
                                   // the writer writes these when they have its attr size, so
                                   // clear them after changing `attr`
  std::vector<uint64_t> ids;
};

// One record of the data section (pipe mode: of the stream).
struct DataRecord {
  uint64_t offset = 0;             // file offset of its perf_event_header
  perf_event_header header{};
  std::vector<std::byte> bytes;    // header.size bytes, header included
  std::vector<std::byte> payload;  // AUXTRACE / HEADER_TRACING_DATA data after it, else empty
  // For a record decompressed from PERF_RECORD_COMPRESSED (compressed.h):
  // its position in the decompressed stream (`offset` is the COMPRESSED
  // record's). Unset for the records of the file itself.
  std::optional<uint64_t> offset_in_stream;
  uint64_t size_in_file() const { return bytes.size() + payload.size(); }
};

struct PerfData {
  FileHeader header;
  std::vector<Attr> attrs;
  // Feature sections by bit (HEADER_*), bytes as in the file; unknown bits too.
  std::map<int, std::vector<std::byte>> features;
  std::vector<DataRecord> records;
  // Zero bytes between the feature table and the first feature section: perf
  // sizes the table for every feature it meant to write and leaves the slots
  // of those whose write failed (header.c perf_header__adds_write()). Kept so
  // that a rewrite is byte-identical.
  uint64_t feature_table_padding = 0;
  size_t unknown_records = 0;   // records of a type neither the kernel's nor perf's
  size_t unknown_features = 0;  // feature bits at or past HEADER_LAST_FEATURE
};

Result<PerfData> ReadPerfData(std::span<const std::byte> file);
Result<PerfData> ReadPerfDataFile(const std::string& path);

// A record's contents: a kernel record (harness/records.h) or one of perf's.
using ParsedRecord = std::variant<perftest::Record, UserRecord>;

// Parses records with the layout of the event each belongs to, found by its
// id as perf finds it (tools/perf/util/evlist.c evlist__event2evsel()):
// PERF_SAMPLE_IDENTIFIER first in a sample / last in a sample_id_all
// trailer, else PERF_SAMPLE_ID at the position sample_type gives; with one
// attr (or none with an id) the first attr's layout.
class RecordParser {
 public:
  explicit RecordParser(const PerfData& data);
  // Errors (EBADMSG, ENOENT for an unknown type): "offset 0x3f0:
  // PERF_RECORD_SAMPLE: <what did not fit>".
  Result<ParsedRecord> Parse(const DataRecord& r) const;
  // The attr of a kernel record (nullptr when there are no attrs).
  const Attr* AttrOf(const DataRecord& r) const;

 private:
  const PerfData& data_;
  std::vector<SampleLayout> layouts_;
  std::unordered_map<uint64_t, size_t> attr_of_id_;
  int sample_id_pos_ = -1;  // u64 index after the header; -1: no id
  int trailer_id_pos_ = -1; // u64 index from the end of a trailer (1 = last); -1: no id
};

}  // namespace perftest::perf_data
