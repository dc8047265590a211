// AUXTRACE data sorted into perf's queues (aux_queues.h): by idx, in file
// order, gaps in the AUX stream marked, Intel PT's info parsed, and bad
// records as errors naming their offset.
#include "harness/perf_data/aux_queues.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness/perf_data/test_util.h"
#include "harness/perf_data/writer.h"

namespace perftest::perf_data {
namespace {

using ::testing::HasSubstr;

DataRecord Auxtrace(uint32_t idx, uint32_t cpu, uint64_t offset, size_t size, uint8_t fill) {
  std::vector<std::byte> b;
  EncodeAuxtrace(AuxtraceRecord{size, offset, 0, idx, 1234, cpu}, &b);
  return testing::MakeRecord(b, std::vector<std::byte>(size, std::byte{fill}));
}

TEST(PerfDataAuxQueues, SortsBuffersIntoQueuesByIdxAndMarksGaps) {
  PerfData d = testing::ModelPerfData();  // one AUXTRACE: idx 0, cpu 1, 16 bytes at offset 0
  d.records.push_back(Auxtrace(1, 0, 0, 8, 0xa1));
  d.records.push_back(Auxtrace(0, 1, 16, 8, 0xb0));   // continues queue 0
  d.records.push_back(Auxtrace(0, 1, 4096, 8, 0xb1)); // a gap: data lost
  Result<PerfData> read = ReadPerfData(WritePerfData(d));
  ASSERT_TRUE(read.ok());
  Result<AuxQueues> q = AuxQueuesOf(*read);
  ASSERT_TRUE(q.ok()) << q.ToString();
  EXPECT_EQ(q->auxtrace_type, PERF_AUXTRACE_INTEL_PT);
  ASSERT_TRUE(q->intel_pt.has_value());
  EXPECT_EQ(q->intel_pt->tsc_ctc_ratio_n, 200u);
  ASSERT_EQ(q->queues.size(), 2u);
  const AuxQueue& q0 = q->queues[0];
  EXPECT_EQ(q0.idx, 0u);
  EXPECT_EQ(q0.cpu, 1);
  ASSERT_EQ(q0.buffers.size(), 3u);
  EXPECT_EQ(q0.bytes(), 32u);
  EXPECT_FALSE(q0.buffers[0].contiguous);
  EXPECT_TRUE(q0.buffers[1].contiguous);
  EXPECT_FALSE(q0.buffers[2].contiguous);
  EXPECT_EQ(q0.buffers[0].data[0], std::byte{0x80});
  EXPECT_EQ(q0.buffers[2].data[0], std::byte{0xb1});
  EXPECT_EQ(q0.buffers[1].file_offset, read->records[read->records.size() - 2].offset);
  EXPECT_EQ(q->queues[1].idx, 1u);
  EXPECT_EQ(q->queues[1].bytes(), 8u);
}

TEST(PerfDataAuxQueues, BadIntelPtInfoNamesTheRecord) {
  PerfData d = testing::ModelPerfData();
  std::vector<std::byte> b;
  AuxtraceInfoRecord info;
  info.type = PERF_AUXTRACE_INTEL_PT;
  info.priv.assign(5, 0);  // fewer than the 17 fixed words
  EncodeAuxtraceInfo(info, &b);
  d.records[3] = testing::MakeRecord(b);
  Result<PerfData> read = ReadPerfData(WritePerfData(d));
  ASSERT_TRUE(read.ok());
  Result<AuxQueues> q = AuxQueuesOf(*read);
  EXPECT_EQ(q.error(), EBADMSG);
  EXPECT_THAT(q.call(), HasSubstr(fmt::format("offset {:#x}: PERF_RECORD_AUXTRACE_INFO", read->records[3].offset)));
}

}  // namespace
}  // namespace perftest::perf_data
