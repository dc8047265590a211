// PERF_RECORD_COMPRESSED (`perf record -z`): records compressed with zstd,
// decompressed back into records.
//
//   Decompressor z;
//   for (const DataRecord& r : data.records) {
//     if (r.header.type != PERF_RECORD_COMPRESSED) { use(r); continue; }
//     Result<std::vector<DataRecord>> inner = z.Feed(r);
//     for (const DataRecord& i : *inner) use(i);   // i.offset == r.offset
//   }
//
// perf compresses what it copies out of each ring buffer as one zstd
// stream that continues across COMPRESSED records, and a record may end in
// the next COMPRESSED record (tools/perf/util/session.c
// perf_session__process_compressed_event(): one decompression context per
// session, the partial record kept as decomp_last_rem). So one Decompressor
// is fed every COMPRESSED record of a file in order. AUX data is never
// compressed (perf writes AUXTRACE records uncompressed), but an AUXTRACE
// record inside is framed with its payload like in the data section.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "harness/perf_data/reader.h"
#include "harness/result.h"

namespace perftest::perf_data {

class Decompressor {
 public:
  // At most this many decompressed bytes per COMPRESSED record (perf's own
  // records are at most one mmap flush, a few MiB); more is EFBIG.
  static constexpr size_t kMaxDecompressed = size_t{256} << 20;

  Decompressor();
  ~Decompressor();
  Decompressor(Decompressor&&) noexcept;
  Decompressor& operator=(Decompressor&&) noexcept;

  // Decompresses `compressed` (a PERF_RECORD_COMPRESSED record) and returns
  // the records it completes, in order, each with offset = the COMPRESSED
  // record's offset and offset_in_stream = its position in the decompressed
  // stream. Errors, naming the COMPRESSED record's offset: EINVAL for
  // another record type; EBADMSG for data zstd rejects or a record with
  // header.size below 8; EFBIG past kMaxDecompressed.
  Result<std::vector<DataRecord>> Feed(const DataRecord& compressed);

  // Bytes of a record begun but not completed by what was fed (0 at the
  // end of a well-formed file).
  size_t pending() const { return pending_.size(); }

 private:
  struct Context;
  std::unique_ptr<Context> ctx_;
  std::vector<std::byte> pending_;
  uint64_t stream_offset_ = 0;  // decompressed bytes before pending_
};

}  // namespace perftest::perf_data
