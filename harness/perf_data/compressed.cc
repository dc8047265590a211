#include "harness/perf_data/compressed.h"

#include <fmt/format.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>

namespace perftest::perf_data {

struct Decompressor::Context {
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  ~Context() { ZSTD_freeDCtx(dctx); }
};

Decompressor::Decompressor() : ctx_(std::make_unique<Context>()) {}
Decompressor::~Decompressor() = default;
Decompressor::Decompressor(Decompressor&&) noexcept = default;
Decompressor& Decompressor::operator=(Decompressor&&) noexcept = default;

Result<std::vector<DataRecord>> Decompressor::Feed(const DataRecord& compressed) {
  using R = Result<std::vector<DataRecord>>;
  auto fail = [&](int err, const std::string& detail) {
    return R::Failure(err, fmt::format("offset {:#x}: PERF_RECORD_COMPRESSED: {}", compressed.offset, detail));
  };
  if (compressed.header.type != PERF_RECORD_COMPRESSED) {
    return fail(EINVAL, fmt::format("not a COMPRESSED record but {}", RecordTypeName(compressed.header.type)));
  }
  if (ctx_->dctx == nullptr) return fail(ENOMEM, "ZSTD_createDCtx() failed");
  ZSTD_inBuffer in{compressed.bytes.data() + sizeof(perf_event_header),
                   compressed.bytes.size() - sizeof(perf_event_header), 0};
  const size_t start = pending_.size();
  while (in.pos < in.size) {
    const size_t chunk = ZSTD_DStreamOutSize();
    if (pending_.size() - start + chunk > kMaxDecompressed) {
      return fail(EFBIG, fmt::format("decompresses to more than {} bytes", kMaxDecompressed));
    }
    const size_t at = pending_.size();
    pending_.resize(at + chunk);
    ZSTD_outBuffer out{pending_.data() + at, chunk, 0};
    const size_t rc = ZSTD_decompressStream(ctx_->dctx, &out, &in);
    pending_.resize(at + out.pos);
    if (ZSTD_isError(rc)) {
      return fail(EBADMSG, fmt::format("zstd at +{:#x} of its data: {}", in.pos, ZSTD_getErrorName(rc)));
    }
    if (out.pos == 0 && rc != 0 && in.pos == in.size) break;
  }
  // Split off every record completed so far.
  std::vector<DataRecord> records;
  size_t off = 0;
  while (pending_.size() - off >= sizeof(perf_event_header)) {
    DataRecord r;
    std::memcpy(&r.header, pending_.data() + off, sizeof r.header);
    if (r.header.size < sizeof(perf_event_header)) {
      return fail(EBADMSG, fmt::format("the record at +{:#x} of the decompressed stream has header.size={}",
                                       stream_offset_ + off, r.header.size));
    }
    uint64_t payload = 0;
    const size_t left = pending_.size() - off;
    if (r.header.type == PERF_RECORD_AUXTRACE && r.header.size >= 16 && left >= 16) {
      std::memcpy(&payload, pending_.data() + off + 8, 8);
    }
    if (r.header.size > left || payload > left - r.header.size) break;  // completed by a later record
    r.offset = compressed.offset;
    r.offset_in_stream = stream_offset_ + off;
    r.bytes.assign(pending_.begin() + off, pending_.begin() + off + r.header.size);
    r.payload.assign(pending_.begin() + off + r.header.size, pending_.begin() + off + r.header.size + payload);
    off += r.header.size + payload;
    records.push_back(std::move(r));
  }
  pending_.erase(pending_.begin(), pending_.begin() + off);
  stream_offset_ += off;
  return R::Ok(std::move(records));
}

}  // namespace perftest::perf_data
