// `perftest data dump` listing (dump.h) over harness/perf_data/test_util.h's
// model: one line per record with its offset and size, the Intel PT
// AUXTRACE_INFO fields, the unknown counts, and the error of a record whose
// contents do not parse.
#include "tools/data/dump.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "harness/perf_data/test_util.h"
#include "harness/perf_data/writer.h"

namespace perftest::data {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Dumped {
  std::string text;
  Result<DumpStats> stats = Result<DumpStats>::Failure(EINVAL);
};

Dumped DumpToString(const perf_data::PerfData& d) {
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  Dumped out;
  out.stats = DumpPerfData(d, f);
  std::fclose(f);
  out.text.assign(buf, len);
  std::free(buf);
  return out;
}

TEST(DataDump, ListsEveryRecordWithOffsetAndSize) {
  Result<perf_data::PerfData> d = perf_data::ReadPerfData(perf_data::WritePerfData(perf_data::testing::ModelPerfData()));
  ASSERT_TRUE(d.ok());
  Dumped out = DumpToString(*d);
  ASSERT_TRUE(out.stats.ok()) << out.stats.ToString();
  EXPECT_EQ(out.stats->records, 8u);
  EXPECT_EQ(out.stats->unknown_records, 1u);
  EXPECT_EQ(out.stats->unknown_features, 1u);
  const auto& r = d->records;
  EXPECT_THAT(out.text, HasSubstr(fmt::format("1000 {:#x} [{:#x}]: PERF_RECORD_COMM: workload:42/42", r[0].offset,
                                              r[0].header.size)));
  EXPECT_THAT(out.text, HasSubstr(fmt::format("2010 {:#x} [{:#x}]: PERF_RECORD_SAMPLE(IP, 0x2): 42/42: 0x40100a",
                                              r[2].offset, r[2].header.size)));
  EXPECT_THAT(out.text, HasSubstr("PERF_RECORD_AUXTRACE_INFO type: 1\n  PMU Type            10\n"));
  EXPECT_THAT(out.text, HasSubstr("  TSC:CTC numerator   200\n  TSC:CTC denominator 2\n"));
  EXPECT_THAT(out.text, HasSubstr(fmt::format("0 {:#x} [0x30]: PERF_RECORD_AUXTRACE size: 0x10  offset: 0x0  ref: 0x7  "
                                              "idx: 0  tid: 42  cpu: 1", r[5].offset)));
  EXPECT_THAT(out.text, HasSubstr("PERF_RECORD_200 unknown record type, 16 bytes skipped"));
  EXPECT_THAT(out.text, HasSubstr("# hostname : model-host\n"));
  EXPECT_THAT(out.text, HasSubstr("# unknown feature bit 100 : 8 bytes (skipped)\n"));
  EXPECT_THAT(out.text, HasSubstr("AUX queue 0: cpu 1 tid 42: 1 buffers, 16 bytes\n"));
  EXPECT_THAT(out.text, HasSubstr("stats: records: 8  unknown records: 1  unknown features: 1\n"));
}

TEST(DataDump, StopsAtARecordThatDoesNotParseNamingItsOffset) {
  perf_data::PerfData model = perf_data::testing::ModelPerfData();
  std::vector<std::byte> cut(model.records[1].bytes.begin(), model.records[1].bytes.begin() + 16);
  const uint16_t sixteen = 16;
  std::memcpy(cut.data() + 6, &sixteen, 2);
  model.records[1] = perf_data::testing::MakeRecord(cut);
  Result<perf_data::PerfData> d = perf_data::ReadPerfData(perf_data::WritePerfData(model));
  ASSERT_TRUE(d.ok());
  Dumped out = DumpToString(*d);
  ASSERT_FALSE(out.stats.ok());
  EXPECT_EQ(out.stats.error(), EBADMSG);
  EXPECT_THAT(out.stats.call(), HasSubstr(fmt::format("offset {:#x}: parse PERF_RECORD_SAMPLE", d->records[1].offset)));
  EXPECT_THAT(out.text, HasSubstr("PERF_RECORD_COMM"));  // the record before it was listed
  EXPECT_THAT(out.text, Not(HasSubstr("stats:")));
}

}  // namespace
}  // namespace perftest::data
