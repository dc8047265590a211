// perf.data writer (writer.h): perf's layout, byte-identical rewrite of its
// own output, pipe <-> file conversion with the documented rewrites.
#include "harness/perf_data/writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "harness/perf_data/test_util.h"

namespace perftest::perf_data {
namespace {

using testing::ModelPerfData;

TEST(PerfDataWriter, LaysOutIdsAttrsDataFeaturesAsPerfRecordDoes) {
  const PerfData model = ModelPerfData();
  const std::vector<std::byte> file = WritePerfData(model);
  Result<FileHeader> h = ParseFileHeader(file);
  ASSERT_TRUE(h.ok());
  // Ids of both events (4 u64) right after the header, then the attrs.
  EXPECT_EQ(h->attrs.offset, kFileHeaderSize + 4 * 8);
  EXPECT_EQ(h->attrs.size, 2 * (sizeof(perf_event_attr) + 16));
  EXPECT_EQ(h->data.offset, h->attrs.offset + h->attrs.size);
  uint64_t ids_of_second[2];
  std::memcpy(ids_of_second, file.data() + kFileHeaderSize + 16, 16);
  EXPECT_EQ(ids_of_second[0], 10u);
  // Features: HOSTNAME, NRCPUS, AUXTRACE (added: there is an AUXTRACE record), bit 100.
  EXPECT_EQ(h->features.count(), 4u);
  EXPECT_TRUE(h->features.test(HEADER_AUXTRACE));
}

TEST(PerfDataWriter, RewritingWhatItReadIsByteIdentical) {
  const std::vector<std::byte> file = WritePerfData(ModelPerfData());
  Result<PerfData> d = ReadPerfData(file);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(WritePerfData(*d), file);
  const std::vector<std::byte> pipe = WritePerfDataPipe(*d);
  Result<PerfData> p = ReadPerfData(pipe);
  ASSERT_TRUE(p.ok()) << p.ToString();
  EXPECT_EQ(WritePerfDataPipe(*p), pipe);
}

TEST(PerfDataWriter, PipeToFileMovesHeaderRecordsIntoTheHeader) {
  Result<PerfData> p = ReadPerfData(WritePerfDataPipe(ModelPerfData()));
  ASSERT_TRUE(p.ok());
  const std::vector<std::byte> file = WritePerfData(*p);
  Result<PerfData> f = ReadPerfData(file);
  ASSERT_TRUE(f.ok()) << f.ToString();
  EXPECT_FALSE(f->header.pipe);
  EXPECT_EQ(f->attrs.size(), 2u);
  const PerfData model = ModelPerfData();
  ASSERT_EQ(f->records.size(), model.records.size());  // no HEADER_ATTR / HEADER_FEATURE left
  for (size_t i = 0; i < model.records.size(); ++i) EXPECT_EQ(f->records[i].bytes, model.records[i].bytes) << i;
  // The AUXTRACE index points at the record's new offset.
  Result<std::vector<AuxtraceIndexEntry>> idx = ParseAuxtraceIndex(f->features.at(HEADER_AUXTRACE));
  ASSERT_TRUE(idx.ok());
  ASSERT_EQ(idx->size(), 1u);
  EXPECT_EQ((*idx)[0].file_offset, f->records[5].offset);
  uint32_t type;
  std::memcpy(&type, file.data() + (*idx)[0].file_offset, 4);
  EXPECT_EQ(type, PERF_RECORD_AUXTRACE);
}

TEST(PerfDataWriter, TracingDataMovesBetweenFeatureAndRecord) {
  PerfData model = ModelPerfData();
  std::vector<std::byte> tracing(13, std::byte{0x11});
  model.features[HEADER_TRACING_DATA] = tracing;
  Result<PerfData> pipe = ReadPerfData(WritePerfDataPipe(model));
  ASSERT_TRUE(pipe.ok()) << pipe.ToString();
  const DataRecord* rec = nullptr;
  for (const DataRecord& r : pipe->records) {
    if (r.header.type == PERF_RECORD_HEADER_TRACING_DATA) rec = &r;
  }
  ASSERT_NE(rec, nullptr);
  ASSERT_EQ(rec->payload.size(), 16u);  // 13 bytes, 8-aligned
  EXPECT_TRUE(std::equal(tracing.begin(), tracing.end(), rec->payload.begin()));
  Result<PerfData> file = ReadPerfData(WritePerfData(*pipe));
  ASSERT_TRUE(file.ok()) << file.ToString();
  EXPECT_EQ(file->features.at(HEADER_TRACING_DATA), rec->payload);
}

TEST(PerfDataWriter, WritesAFileAndReportsErrno) {
  const std::string path = ::testing::TempDir() + "/perf_data_writer_test.data";
  Result<void> w = WritePerfDataFile(ModelPerfData(), path);
  ASSERT_TRUE(w.ok()) << w.ToString();
  Result<PerfData> d = ReadPerfDataFile(path);
  ASSERT_TRUE(d.ok()) << d.ToString();
  EXPECT_EQ(d->records.size(), ModelPerfData().records.size());
  std::filesystem::remove(path);
  EXPECT_EQ(WritePerfDataFile(ModelPerfData(), "/nonexistent/dir/x.data").error(), ENOENT);
}

}  // namespace
}  // namespace perftest::perf_data
