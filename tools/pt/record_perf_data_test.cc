// `perftest pt record --format=perf.data` from the mock's simulated task:
// the file perf would write (attrs with ids, TIME_CONV, AUXTRACE_INFO,
// AUXTRACE with every AUX byte, the synthesized COMM/MMAP2 of the
// simulated program's ELF file, HEADER_BUILD_ID with that file's id), read
// back with harness/perf_data.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "harness/perf_data/aux_queues.h"
#include "harness/perf_data/features.h"
#include "harness/perf_data/reader.h"
#include "harness/syscall_matchers.h"
#include "tools/pt/elf_image.h"
#include "tools/pt/record.h"

namespace perftest::pt {
namespace {

using ::testing::ElementsAre;
using ::testing::SizeIs;

struct TempDir {
  std::string path;
  TempDir() {
    char d[] = "/tmp/pt_record_perf_data_XXXXXX";
    path = ::mkdtemp(d) != nullptr ? d : "";
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

TEST(PtRecordPerfData, MockRecordingIsAPerfDataFilePerfCanDecode) {
  TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  RecordOptions o;
  o.backend = "mock";
  o.output = dir.path + "/t.data";
  o.instructions = 200000;
  ASSERT_OK_AND_ASSIGN(CaptureSummary sum, Record(o));
  ASSERT_OK_AND_ASSIGN(perf_data::PerfData d, perf_data::ReadPerfDataFile(o.output));
  EXPECT_EQ(d.unknown_records, 0u);
  ASSERT_THAT(d.attrs, SizeIs(2));
  EXPECT_THAT(d.attrs[0].ids, SizeIs(1));
  EXPECT_THAT(d.attrs[1].ids, SizeIs(1));
  EXPECT_NE(d.attrs[0].ids[0], d.attrs[1].ids[0]);
  EXPECT_TRUE(d.attrs[0].attr.sample_id_all);
  EXPECT_TRUE(d.attrs[1].attr.mmap2);

  // Every AUX byte is in the AUXTRACE records, in order (each padded to 8
  // bytes at a packet boundary with PT PAD bytes).
  ASSERT_OK_AND_ASSIGN(perf_data::AuxQueues q, perf_data::AuxQueuesOf(d));
  ASSERT_TRUE(q.intel_pt.has_value());
  EXPECT_EQ(q.intel_pt->pmu_type, d.attrs[0].attr.type);
  EXPECT_EQ(q.intel_pt->cap_user_time_zero, 1u);
  ASSERT_THAT(q.queues, SizeIs(1));
  std::vector<uint8_t> trace;
  for (const perf_data::AuxBuffer& b : q.queues[0].buffers) {
    EXPECT_TRUE(b.reference != 0);
    const auto* p = reinterpret_cast<const uint8_t*>(b.data.data());
    trace.insert(trace.end(), p, p + b.data.size());
  }
  std::ifstream bin(sum.trace_file, std::ios::binary);
  const std::vector<uint8_t> expected((std::istreambuf_iterator<char>(bin)), std::istreambuf_iterator<char>());
  ASSERT_EQ(sum.aux_bytes, expected.size());
  std::vector<uint8_t> without_padding;
  size_t at = 0;
  for (const perf_data::AuxBuffer& b : q.queues[0].buffers) {
    const uint64_t real = std::min<uint64_t>(b.data.size(), expected.size() - at);
    const auto* p = reinterpret_cast<const uint8_t*>(b.data.data());
    without_padding.insert(without_padding.end(), p, p + real);
    for (size_t i = real; i < b.data.size(); ++i) EXPECT_EQ(p[i], 0) << "padding";
    // The next buffer's offset says where the real bytes ended.
    at += real;
    if (&b != &q.queues[0].buffers.back()) {
      const perf_data::AuxBuffer& next = *(&b + 1);
      EXPECT_TRUE(next.contiguous);
      without_padding.resize(next.offset);
      at = next.offset;
    }
  }
  EXPECT_EQ(without_padding, expected);

  // The simulated program: COMM and MMAP2 of its ELF file before any
  // recorded record, the file's build id in HEADER_BUILD_ID.
  ASSERT_FALSE(sum.elf_file.empty());
  perf_data::RecordParser parser(d);
  std::vector<std::string> mmap2_files;
  for (const perf_data::DataRecord& r : d.records) {
    if (r.header.type != PERF_RECORD_MMAP2) continue;
    ASSERT_OK_AND_ASSIGN(perf_data::ParsedRecord p, parser.Parse(r));
    mmap2_files.push_back(std::get<Mmap2Record>(std::get<perftest::Record>(p).body).filename);
  }
  EXPECT_EQ(mmap2_files.front(), sum.elf_file);
  ASSERT_OK_AND_ASSIGN(std::vector<perf_data::BuildIdRecord> ids,
                       perf_data::ParseBuildIds(d.features.at(perf_data::HEADER_BUILD_ID)));
  ASSERT_THAT(ids, SizeIs(1));
  EXPECT_EQ(ids[0].filename, sum.elf_file);
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> file_id, ReadBuildId(sum.elf_file));
  ASSERT_EQ(ids[0].build_id.size(), file_id.size());
  EXPECT_EQ(std::memcmp(ids[0].build_id.data(), file_id.data(), file_id.size()), 0);
  ASSERT_OK_AND_ASSIGN(std::vector<perf_data::EventDesc> ev,
                       perf_data::ParseEventDesc(d.features.at(perf_data::HEADER_EVENT_DESC)));
  ASSERT_THAT(ev, SizeIs(2));
  EXPECT_EQ(ev[0].name, "intel_pt//u");
  EXPECT_EQ(ev[1].name, "dummy:u");
}

}  // namespace
}  // namespace perftest::pt
