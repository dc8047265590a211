// pt_trace.h: a perf.data file's Intel PT queue as a pt::CaptureTrace:
// buffers concatenated with the gaps as data_lost, timing from AUXTRACE_INFO
// and the intel_pt attr's config, code from MMAP2 records of files that exist.
#include "tools/data/pt_trace.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include "harness/perf_data/test_util.h"
#include "harness/perf_data/writer.h"

namespace perftest::data {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace perftest::perf_data;

DataRecord Auxtrace(uint64_t offset, size_t size, uint8_t fill) {
  std::vector<std::byte> b;
  EncodeAuxtrace(AuxtraceRecord{size, offset, 0, 0, 42, 1}, &b);
  return testing::MakeRecord(b, std::vector<std::byte>(size, std::byte{fill}));
}

DataRecord Mmap2(uint64_t addr, const std::string& file, const perf_event_attr& attr) {
  Record r;
  r.header.type = PERF_RECORD_MMAP2;
  r.body = Mmap2Record{42, 42, addr, 0x1000, 0, 8, 1, 77, 0, {}, PROT_READ | PROT_EXEC, MAP_PRIVATE, file};
  r.sample_id = SampleId{.pid = 42, .tid = 42, .time = 5, .identifier = 8};
  std::vector<std::byte> b;
  EncodeRecord(SampleLayout::FromAttr(attr), r, &b);
  return testing::MakeRecord(b);
}

TEST(DataPtTrace, OneQueueAsACaptureTrace) {
  PerfData d = testing::ModelPerfData();
  // The model's AUXTRACE_INFO says pmu_type 10, TSC:CTC 200:2; make attr 0 the intel_pt event.
  d.attrs[0].attr.type = 10;
  d.attrs[0].attr.config = uint64_t{3} << 14;  // mtc_period = 3
  d.attrs[0].bytes.clear();                    // the writer writes `attr`, not the bytes read
  IntelPtInfo pt;
  pt.pmu_type = 10;
  pt.tsc_ctc_ratio_n = 200;
  pt.tsc_ctc_ratio_d = 2;
  pt.max_non_turbo_ratio = 24;
  pt.mtc_freq_bits = uint64_t{0xf} << 14;
  std::vector<std::byte> info;
  EncodeAuxtraceInfo(EncodeIntelPtInfo(pt), &info);
  d.records[3] = testing::MakeRecord(info);
  d.records.push_back(Auxtrace(16, 4, 0xaa));    // continues the model's 16 bytes
  d.records.push_back(Auxtrace(1000, 4, 0xbb));  // after a gap
  d.records.push_back(Mmap2(0x400000, "/bin/sh", d.attrs[0].attr));
  d.records.push_back(Mmap2(0x500000, "/nonexistent/prog", d.attrs[0].attr));
  Result<PerfData> read = ReadPerfData(WritePerfData(d));
  ASSERT_TRUE(read.ok()) << read.ToString();
  Result<AuxQueues> q = AuxQueuesOf(*read);
  ASSERT_TRUE(q.ok()) << q.ToString();
  Result<pt::CaptureTrace> t = PtTraceOf(*read, *q, 0);
  ASSERT_TRUE(t.ok()) << t.ToString();
  ASSERT_EQ(t->trace.size(), 24u);
  EXPECT_EQ(t->trace[0], 0x80);
  EXPECT_EQ(t->trace[16], 0xaa);
  EXPECT_EQ(t->trace[20], 0xbb);
  EXPECT_THAT(t->data_lost, ElementsAre(20));
  EXPECT_EQ(t->aux_records, 3u);
  EXPECT_EQ(t->timing, (pt::CaptureTiming{3, 200, 2, 24}));
  EXPECT_THAT(t->image_specs, ElementsAre("0x400000:/bin/sh:0x0:0x1000"));
  ASSERT_EQ(t->notes.size(), 1u);
  EXPECT_THAT(t->notes[0], HasSubstr("/nonexistent/prog"));
  EXPECT_EQ(PtTraceOf(*read, *q, 1).error(), EINVAL);
}

TEST(DataPtTrace, NoIntelPtInfoIsEinval) {
  PerfData d = testing::ModelPerfData();
  d.records.erase(d.records.begin() + 3);  // the AUXTRACE_INFO
  Result<PerfData> read = ReadPerfData(WritePerfData(d));
  ASSERT_TRUE(read.ok());
  Result<AuxQueues> q = AuxQueuesOf(*read);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(PtTraceOf(*read, *q, 0).error(), EINVAL);
}

}  // namespace
}  // namespace perftest::data
