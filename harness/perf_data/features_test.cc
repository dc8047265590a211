// perf.data feature sections (features.h): encode/parse round trips with
// perf's padding (tools/perf/util/header.c do_write_string(): NAME_ALIGN 64)
// and the errors of truncated sections.
#include "harness/perf_data/features.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

namespace perftest::perf_data {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(PerfDataFeatures, StringIsLenThenPaddedTo64) {
  std::vector<std::byte> b = EncodeStringFeature("vm");
  ASSERT_EQ(b.size(), 4u + 64);
  uint32_t len;
  std::memcpy(&len, b.data(), 4);
  EXPECT_EQ(len, 64u);
  Result<std::string> s = ParseStringFeature(b);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(*s, "vm");
  EXPECT_EQ(ParseStringFeature(std::span(b).first(40)).error(), EBADMSG);
}

TEST(PerfDataFeatures, StringListRoundTripsAndRejectsAHugeCount) {
  const std::string cmd[] = {"/usr/bin/perf", "record", "-e", "cpu-clock"};
  std::vector<std::byte> b = EncodeStringListFeature(cmd);
  Result<std::vector<std::string>> l = ParseStringListFeature(b);
  ASSERT_TRUE(l.ok()) << l.ToString();
  EXPECT_THAT(*l, ElementsAre("/usr/bin/perf", "record", "-e", "cpu-clock"));
  b[0] = std::byte{0xff};
  b[1] = std::byte{0xff};
  Result<std::vector<std::string>> bad = ParseStringListFeature(b);
  EXPECT_EQ(bad.error(), EBADMSG);
  EXPECT_THAT(bad.call(), HasSubstr("nr=65535"));
}

TEST(PerfDataFeatures, NrCpusTotalMemClockid) {
  Result<NrCpus> n = ParseNrCpus(EncodeNrCpus({2, 4}));
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, (NrCpus{2, 4}));
  EXPECT_EQ(ParseNrCpus(EncodeU64Feature(1)).value(), (NrCpus{1, 0}));
  EXPECT_EQ(ParseU64Feature(EncodeU64Feature(24683652)).value(), 24683652u);
  EXPECT_EQ(ParseU64Feature({}).error(), EBADMSG);
}

TEST(PerfDataFeatures, EventDescRoundTrips) {
  EventDesc e;
  e.attr.type = PERF_TYPE_SOFTWARE;
  e.attr.config = PERF_COUNT_SW_CPU_CLOCK;
  e.attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN;
  e.name = "cpu-clock";
  e.ids = {8, 9};
  std::vector<EventDesc> in = {e, e};
  in[1].name = "dummy:u";
  in[1].ids = {10};
  Result<std::vector<EventDesc>> out = ParseEventDesc(EncodeEventDesc(in));
  ASSERT_TRUE(out.ok()) << out.ToString();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ((*out)[0].name, "cpu-clock");
  EXPECT_EQ((*out)[0].attr.sample_type, e.attr.sample_type);
  EXPECT_THAT((*out)[0].ids, ElementsAre(8, 9));
  EXPECT_EQ((*out)[1].name, "dummy:u");
  EXPECT_THAT((*out)[1].ids, ElementsAre(10));
}

TEST(PerfDataFeatures, EventDescTruncatedAtEveryLengthIsAnError) {
  EventDesc e;
  e.name = "cycles";
  e.ids = {1, 2, 3};
  std::vector<EventDesc> in = {e};
  std::vector<std::byte> b = EncodeEventDesc(in);
  for (size_t n = 0; n < b.size(); ++n) {
    EXPECT_EQ(ParseEventDesc(std::span(b).first(n)).error(), EBADMSG) << n;
  }
}

TEST(PerfDataFeatures, CpuTopologyWithAndWithoutDies) {
  const std::string cores[] = {"0-1"};
  const std::string threads[] = {"0", "1"};
  std::vector<std::byte> b = EncodeStringListFeature(cores);
  std::vector<std::byte> t = EncodeStringListFeature(threads);
  b.insert(b.end(), t.begin(), t.end());
  for (uint32_t v : {0u, 0u, 1u, 0u}) {  // cpu0 core 0 socket 0; cpu1 core 1 socket 0
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    b.insert(b.end(), p, p + 4);
  }
  Result<CpuTopology> plain = ParseCpuTopology(b, 2);
  ASSERT_TRUE(plain.ok()) << plain.ToString();
  EXPECT_THAT(plain->core_siblings, ElementsAre("0-1"));
  EXPECT_THAT(plain->thread_siblings, ElementsAre("0", "1"));
  ASSERT_EQ(plain->cpus.size(), 2u);
  EXPECT_EQ(plain->cpus[1].core_id, 1u);
  EXPECT_FALSE(plain->cpus[1].die_id.has_value());

  const std::string dies[] = {"0-1"};
  std::vector<std::byte> d = EncodeStringListFeature(dies);
  b.insert(b.end(), d.begin(), d.end());
  for (uint32_t v : {0u, 0u}) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    b.insert(b.end(), p, p + 4);
  }
  Result<CpuTopology> with_dies = ParseCpuTopology(b, 2);
  ASSERT_TRUE(with_dies.ok()) << with_dies.ToString();
  EXPECT_THAT(with_dies->die_siblings, ElementsAre("0-1"));
  EXPECT_EQ(with_dies->cpus[1].die_id, 0u);
  Result<CpuTopology> too_many = ParseCpuTopology(b, 64);
  EXPECT_EQ(too_many.error(), EBADMSG);
  EXPECT_THAT(too_many.call(), HasSubstr("64 CPUs"));
}

TEST(PerfDataFeatures, ClockDataAuxtraceIndexSampleTime) {
  ClockData c{1, 1, 1700000000000000000ull, 279359837274ull};
  EXPECT_EQ(ParseClockData(EncodeClockData(c)).value(), c);
  std::vector<AuxtraceIndexEntry> idx = {{0x1000, 48}, {0x9000, 48}};
  Result<std::vector<AuxtraceIndexEntry>> back = ParseAuxtraceIndex(EncodeAuxtraceIndex(idx));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, idx);
  std::vector<std::byte> b = EncodeAuxtraceIndex(idx);
  b.resize(b.size() - 1);
  EXPECT_EQ(ParseAuxtraceIndex(b).error(), EBADMSG);
  std::vector<std::byte> st = EncodeU64Feature(10);
  std::vector<std::byte> last = EncodeU64Feature(20);
  st.insert(st.end(), last.begin(), last.end());
  EXPECT_EQ(ParseSampleTime(st).value().last, 20u);
}

TEST(PerfDataFeatures, BuildIdsRoundTripWithTheirSize) {
  BuildIdRecord k;
  k.misc = PERF_RECORD_MISC_KERNEL;
  k.pid = -1;
  k.build_id = std::vector<std::byte>(20, std::byte{0xab});
  k.filename = "[kernel.kallsyms]";
  BuildIdRecord u;
  u.misc = PERF_RECORD_MISC_USER;
  u.pid = -1;
  u.build_id = std::vector<std::byte>(8, std::byte{0x11});
  u.filename = "/usr/bin/ls";
  std::vector<BuildIdRecord> in = {k, u};
  Result<std::vector<BuildIdRecord>> out = ParseBuildIds(EncodeBuildIds(in));
  ASSERT_TRUE(out.ok()) << out.ToString();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ((*out)[0].build_id, k.build_id);
  EXPECT_EQ((*out)[0].filename, k.filename);
  EXPECT_EQ((*out)[1].build_id.size(), 8u);
  EXPECT_EQ((*out)[1].filename, "/usr/bin/ls");
  std::vector<std::byte> b = EncodeBuildIds(in);
  b.resize(b.size() - 8);
  EXPECT_EQ(ParseBuildIds(b).error(), EBADMSG);
}

TEST(PerfDataFeatures, PmuMappingsAndGroupDesc) {
  std::vector<std::byte> b;
  auto put32 = [&](uint32_t v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    b.insert(b.end(), p, p + 4);
  };
  put32(2);
  put32(1);
  std::vector<std::byte> s = EncodeStringFeature("software");
  b.insert(b.end(), s.begin(), s.end());
  put32(10);
  s = EncodeStringFeature("intel_pt");
  b.insert(b.end(), s.begin(), s.end());
  Result<std::vector<PmuMapping>> pmus = ParsePmuMappings(b);
  ASSERT_TRUE(pmus.ok()) << pmus.ToString();
  EXPECT_EQ((*pmus)[1].type, 10u);
  EXPECT_EQ((*pmus)[1].name, "intel_pt");

  b.clear();
  put32(1);
  s = EncodeStringFeature("{cycles,instructions}");
  b.insert(b.end(), s.begin(), s.end());
  put32(0);
  put32(2);
  Result<std::vector<GroupDesc>> groups = ParseGroupDesc(b);
  ASSERT_TRUE(groups.ok()) << groups.ToString();
  EXPECT_EQ((*groups)[0].nr_members, 2u);
  b.resize(b.size() - 2);
  EXPECT_EQ(ParseGroupDesc(b).error(), EBADMSG);
}

}  // namespace
}  // namespace perftest::perf_data
