// PERF_RECORD_COMPRESSED (compressed.h): records compressed as perf record -z
// compresses them (one zstd stream across COMPRESSED records, a record may
// end in the next one), decompressed back; bad data as errors naming the
// record's offset.
#include "harness/perf_data/compressed.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zstd.h>

#include <cstring>

#include "harness/perf_data/test_util.h"

namespace perftest::perf_data {
namespace {

using ::testing::HasSubstr;

// The model's records, all but the unknown one, one after the other.
std::vector<std::byte> Stream(const PerfData& d) {
  std::vector<std::byte> s;
  for (const DataRecord& r : d.records) {
    if (r.header.type == 200) continue;
    s.insert(s.end(), r.bytes.begin(), r.bytes.end());
    s.insert(s.end(), r.payload.begin(), r.payload.end());
  }
  return s;
}

// `stream` compressed as one zstd stream, cut into COMPRESSED records after
// each of `cuts` input bytes (flushing there).
std::vector<DataRecord> Compress(const std::vector<std::byte>& stream, std::vector<size_t> cuts) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  std::vector<DataRecord> out;
  cuts.push_back(stream.size());
  size_t from = 0;
  for (size_t cut : cuts) {
    std::vector<std::byte> data(ZSTD_compressBound(cut - from) + 64);
    ZSTD_inBuffer in{stream.data() + from, cut - from, 0};
    ZSTD_outBuffer o{data.data(), data.size(), 0};
    const ZSTD_EndDirective mode = cut == stream.size() ? ZSTD_e_end : ZSTD_e_flush;
    size_t left;
    do {
      left = ZSTD_compressStream2(cctx, &o, &in, mode);
      EXPECT_FALSE(ZSTD_isError(left));
    } while (left != 0 && !ZSTD_isError(left));
    data.resize(o.pos);
    std::vector<std::byte> rec(sizeof(perf_event_header));
    perf_event_header h{PERF_RECORD_COMPRESSED, 0, static_cast<uint16_t>(sizeof h + data.size())};
    std::memcpy(rec.data(), &h, sizeof h);
    rec.insert(rec.end(), data.begin(), data.end());
    DataRecord r = testing::MakeRecord(rec);
    r.offset = 0x1000 + out.size() * 0x100;
    out.push_back(std::move(r));
    from = cut;
  }
  ZSTD_freeCCtx(cctx);
  return out;
}

TEST(PerfDataCompressed, RecordsSplitAcrossCompressedRecordsComeBackWhole) {
  const PerfData model = testing::ModelPerfData();
  const std::vector<std::byte> stream = Stream(model);
  // Cut inside the first SAMPLE (after the COMM) and inside the AUXTRACE's data.
  const size_t comm = model.records[0].bytes.size();
  std::vector<DataRecord> compressed = Compress(stream, {comm + 5, stream.size() - 20});
  ASSERT_EQ(compressed.size(), 3u);
  Decompressor z;
  std::vector<DataRecord> got;
  std::vector<size_t> per_feed;
  for (const DataRecord& c : compressed) {
    Result<std::vector<DataRecord>> r = z.Feed(c);
    ASSERT_TRUE(r.ok()) << r.ToString();
    per_feed.push_back(r->size());
    for (DataRecord& d : *r) {
      EXPECT_EQ(d.offset, c.offset);
      got.push_back(std::move(d));
    }
  }
  EXPECT_EQ(per_feed[0], 1u);  // the COMM; the SAMPLE is completed by the next record
  EXPECT_EQ(z.pending(), 0u);
  ASSERT_EQ(got.size(), model.records.size() - 1);
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].bytes, model.records[i].bytes) << i;
    EXPECT_EQ(got[i].payload, model.records[i].payload) << i;
    EXPECT_EQ(got[i].offset_in_stream, at) << i;
    at += got[i].size_in_file();
  }
}

TEST(PerfDataCompressed, BadDataAndWrongTypeAreErrorsNamingTheOffset) {
  const std::vector<std::byte> stream = Stream(testing::ModelPerfData());
  std::vector<DataRecord> compressed = Compress(stream, {});
  DataRecord bad = compressed[0];
  for (size_t i = sizeof(perf_event_header); i < bad.bytes.size(); ++i) bad.bytes[i] = std::byte{0xff};
  Decompressor z;
  Result<std::vector<DataRecord>> r = z.Feed(bad);
  EXPECT_EQ(r.error(), EBADMSG);
  EXPECT_THAT(r.call(), HasSubstr("offset 0x1000: PERF_RECORD_COMPRESSED: zstd"));
  Decompressor z2;
  EXPECT_EQ(z2.Feed(testing::ModelPerfData().records[0]).error(), EINVAL);
}

TEST(PerfDataCompressed, AZeroSizedRecordInsideIsAnError) {
  std::vector<std::byte> stream(16, std::byte{0});  // header.size 0
  Decompressor z;
  Result<std::vector<DataRecord>> r = z.Feed(Compress(stream, {})[0]);
  EXPECT_EQ(r.error(), EBADMSG);
  EXPECT_THAT(r.call(), HasSubstr("header.size=0"));
}

}  // namespace
}  // namespace perftest::perf_data
