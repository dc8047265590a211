// perf.data reader (reader.h): file and pipe mode, records by event id,
// unknown records and features counted, truncated and corrupt input as
// errors naming the byte offset and the record. Files are made by the
// writer from test_util.h's model; the real-perf round trip is
// tools/data's test (perf_data_perf_roundtrip).
#include "harness/perf_data/reader.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "harness/perf_data/test_util.h"
#include "harness/perf_data/writer.h"

namespace perftest::perf_data {
namespace {

using ::testing::HasSubstr;
using testing::ModelPerfData;

TEST(PerfDataReader, FileModeReadsAttrsRecordsAndFeatures) {
  const PerfData model = ModelPerfData();
  const std::vector<std::byte> file = WritePerfData(model);
  Result<PerfData> d = ReadPerfData(file);
  ASSERT_TRUE(d.ok()) << d.ToString();
  EXPECT_FALSE(d->header.pipe);
  ASSERT_EQ(d->attrs.size(), 2u);
  EXPECT_EQ(d->attrs[1].ids, model.attrs[1].ids);
  EXPECT_EQ(d->attrs[1].attr.config, static_cast<uint64_t>(PERF_COUNT_SW_DUMMY));
  ASSERT_EQ(d->records.size(), model.records.size());
  for (size_t i = 0; i < model.records.size(); ++i) {
    EXPECT_EQ(d->records[i].bytes, model.records[i].bytes) << i;
    EXPECT_EQ(d->records[i].payload, model.records[i].payload) << i;
  }
  EXPECT_EQ(d->records[0].offset, d->header.data.offset);
  EXPECT_EQ(d->unknown_records, 1u);
  EXPECT_EQ(d->unknown_features, 1u);
  EXPECT_EQ(ParseStringFeature(d->features.at(HEADER_HOSTNAME)).value(), "model-host");
  // The writer indexed the one AUXTRACE record.
  Result<std::vector<AuxtraceIndexEntry>> idx = ParseAuxtraceIndex(d->features.at(HEADER_AUXTRACE));
  ASSERT_TRUE(idx.ok());
  ASSERT_EQ(idx->size(), 1u);
  EXPECT_EQ((*idx)[0].file_offset, d->records[5].offset);
  EXPECT_EQ((*idx)[0].sz, 48u);
}

TEST(PerfDataReader, ParsesEachRecordWithItsEventsLayout) {
  const std::vector<std::byte> file = WritePerfData(ModelPerfData());
  Result<PerfData> d = ReadPerfData(file);
  ASSERT_TRUE(d.ok()) << d.ToString();
  RecordParser parser(*d);
  // The COMM's trailer names id 10, the dummy event.
  EXPECT_EQ(parser.AttrOf(d->records[0]), &d->attrs[1]);
  EXPECT_EQ(parser.AttrOf(d->records[1]), &d->attrs[0]);
  EXPECT_EQ(parser.AttrOf(d->records[2]), &d->attrs[1]);
  Result<ParsedRecord> comm = parser.Parse(d->records[0]);
  ASSERT_TRUE(comm.ok()) << comm.ToString();
  const auto& k = std::get<perftest::Record>(*comm);
  EXPECT_EQ(std::get<CommRecord>(k.body).comm, "workload");
  EXPECT_EQ(k.sample_id->identifier, 10u);
  Result<ParsedRecord> s = parser.Parse(d->records[2]);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(std::get<SampleRecord>(std::get<perftest::Record>(*s).body).ip, 0x40100au);
  Result<ParsedRecord> aux = parser.Parse(d->records[5]);
  ASSERT_TRUE(aux.ok());
  EXPECT_EQ(std::get<AuxtraceRecord>(std::get<UserRecord>(*aux)).tid, 42u);
  Result<ParsedRecord> unknown = parser.Parse(d->records[7]);
  EXPECT_EQ(unknown.error(), ENOENT);
  EXPECT_THAT(unknown.call(), HasSubstr("PERF_RECORD_200"));
}

TEST(PerfDataReader, PipeModeTakesAttrsAndFeaturesFromTheirRecords) {
  const PerfData model = ModelPerfData();
  Result<PerfData> d = ReadPerfData(WritePerfDataPipe(model));
  ASSERT_TRUE(d.ok()) << d.ToString();
  EXPECT_TRUE(d->header.pipe);
  ASSERT_EQ(d->attrs.size(), 2u);
  EXPECT_EQ(d->attrs[0].ids, model.attrs[0].ids);
  EXPECT_EQ(d->attrs[0].attr.sample_type, model.attrs[0].attr.sample_type);
  EXPECT_EQ(ParseStringFeature(d->features.at(HEADER_HOSTNAME)).value(), "model-host");
  EXPECT_TRUE(d->header.features.test(HEADER_NRCPUS));
  // 2 HEADER_ATTR + 3 HEADER_FEATURE (HOSTNAME, NRCPUS, 100) + the end mark
  // + the model's 8 (no AUXTRACE index in pipe mode: it holds file offsets).
  EXPECT_EQ(d->records.size(), 2u + 3 + 1 + 8);
  EXPECT_FALSE(d->features.contains(HEADER_LAST_FEATURE));
  EXPECT_FALSE(d->features.contains(HEADER_AUXTRACE));
  EXPECT_EQ(d->records[0].offset, kPipeHeaderSize);
  EXPECT_EQ(d->unknown_records, 1u);
  EXPECT_EQ(d->unknown_features, 1u);
}

TEST(PerfDataReader, EveryTruncationIsAnErrorWithAnOffset) {
  for (bool pipe : {false, true}) {
    const std::vector<std::byte> file = pipe ? WritePerfDataPipe(ModelPerfData()) : WritePerfData(ModelPerfData());
    for (size_t n = 0; n < file.size(); ++n) {
      Result<PerfData> d = ReadPerfData(std::span(file).first(n));
      // A pipe stream cut exactly between records is a shorter valid stream.
      if (pipe && d.ok()) continue;
      ASSERT_FALSE(d.ok()) << "pipe=" << pipe << " n=" << n;
      EXPECT_EQ(d.error(), EBADMSG) << n;
      EXPECT_THAT(d.call(), HasSubstr("offset 0x")) << n;
    }
  }
}

TEST(PerfDataReader, CorruptRecordSizesNameTheRecordAndOffset) {
  std::vector<std::byte> file = WritePerfData(ModelPerfData());
  Result<PerfData> d = ReadPerfData(file);
  ASSERT_TRUE(d.ok());
  const uint64_t comm_at = d->records[0].offset, aux_at = d->records[5].offset;

  std::vector<std::byte> small = file;
  const uint16_t four = 4;
  std::memcpy(small.data() + comm_at + 6, &four, 2);
  Result<PerfData> r = ReadPerfData(small);
  EXPECT_EQ(r.error(), EBADMSG);
  EXPECT_THAT(r.call(), HasSubstr(fmt::format("offset {:#x}: PERF_RECORD_COMM: header.size=4", comm_at)));

  std::vector<std::byte> huge_aux = file;
  const uint64_t huge = uint64_t{1} << 40;
  std::memcpy(huge_aux.data() + aux_at + 8, &huge, 8);
  r = ReadPerfData(huge_aux);
  EXPECT_EQ(r.error(), EBADMSG);
  EXPECT_THAT(r.call(), HasSubstr(fmt::format("offset {:#x}: PERF_RECORD_AUXTRACE: truncated", aux_at)));

  std::vector<std::byte> bad_data = file;
  const uint64_t past = file.size() + 1;
  std::memcpy(bad_data.data() + 40, &past, 8);  // data.offset
  r = ReadPerfData(bad_data);
  EXPECT_EQ(r.error(), EBADMSG);
  EXPECT_THAT(r.call(), HasSubstr("data section"));
}

TEST(PerfDataReader, CorruptContentsIsAParseErrorNamingOffsetAndRecord) {
  PerfData model = ModelPerfData();
  // A SAMPLE cut to its header and identifier: the layout wants ip, tid, time.
  std::vector<std::byte> cut(model.records[1].bytes.begin(), model.records[1].bytes.begin() + 16);
  const uint16_t sixteen = 16;
  std::memcpy(cut.data() + 6, &sixteen, 2);
  model.records[1] = testing::MakeRecord(cut);
  Result<PerfData> d = ReadPerfData(WritePerfData(model));
  ASSERT_TRUE(d.ok()) << d.ToString();
  Result<ParsedRecord> p = RecordParser(*d).Parse(d->records[1]);
  EXPECT_EQ(p.error(), EBADMSG);
  EXPECT_THAT(p.call(), HasSubstr(fmt::format("offset {:#x}: parse PERF_RECORD_SAMPLE", d->records[1].offset)));
}

TEST(PerfDataReader, MissingFileIsItsErrno) {
  Result<PerfData> d = ReadPerfDataFile("/nonexistent/perf.data");
  EXPECT_EQ(d.error(), ENOENT);
  EXPECT_THAT(d.call(), HasSubstr("/nonexistent/perf.data"));
}

}  // namespace
}  // namespace perftest::perf_data
