// perf's own records (user_records.h): encode/parse round trips and bytes
// as perf 6.1 wrote them (taken from `perf report -D` raw dumps of a
// `perf record -e cpu-clock -g` file on x86_64).
#include "harness/perf_data/user_records.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

namespace perftest::perf_data {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::byte> Hex(std::initializer_list<int> v) {
  std::vector<std::byte> b;
  for (int x : v) b.push_back(static_cast<std::byte>(x));
  return b;
}

template <typename T>
T ParseAs(const std::vector<std::byte>& bytes) {
  Result<UserRecord> r = ParseUserRecord(bytes);
  EXPECT_TRUE(r.ok()) << r.ToString();
  if (!r.ok()) return T{};
  EXPECT_TRUE(std::holds_alternative<T>(*r));
  return std::holds_alternative<T>(*r) ? std::get<T>(*r) : T{};
}

TEST(PerfDataUserRecords, CpuMapRangeAsPerf61WritesIt) {
  // "PERF_RECORD_CPU_MAP: 0-1": type 2 (RANGE_CPUS), any_cpu 0, pad, start 0, end 1.
  auto r = ParseAs<CpuMapRecord>(Hex({0x4a, 0, 0, 0, 0, 0, 0x10, 0, 0x02, 0, 0, 0, 0, 0, 0x01, 0}));
  EXPECT_EQ(r.data.type, 2);
  EXPECT_THAT(r.data.cpus, ElementsAre(0, 1));
  // With the "any CPU" (-1) entry: cpus -1, 2..3.
  auto any = ParseCpuMapData(Hex({0x02, 0, 1, 0, 2, 0, 3, 0}));
  ASSERT_TRUE(any.ok()) << any.ToString();
  EXPECT_THAT(any->cpus, ElementsAre(-1, 2, 3));
}

TEST(PerfDataUserRecords, CpuMapMaskForms) {
  // MASK, long_size 8: u16 type, nr, long_size, 4 pad bytes, u64 mask.
  auto m64 = ParseCpuMapData(Hex({1, 0, 1, 0, 8, 0, 0, 0, 0, 0, 0x05, 0, 0, 0, 0, 0, 0, 0}));
  ASSERT_TRUE(m64.ok()) << m64.ToString();
  EXPECT_THAT(m64->cpus, ElementsAre(0, 2));
  auto m32 = ParseCpuMapData(Hex({1, 0, 2, 0, 4, 0, 0x01, 0, 0, 0, 0x02, 0, 0, 0}));
  ASSERT_TRUE(m32.ok()) << m32.ToString();
  EXPECT_THAT(m32->cpus, ElementsAre(0, 33));
  EXPECT_EQ(ParseCpuMapData(Hex({1, 0, 1, 0, 6, 0})).error(), EBADMSG);  // long_size 6
  EXPECT_EQ(ParseCpuMapData(Hex({9, 0})).error(), EBADMSG);              // no such type
}

TEST(PerfDataUserRecords, CpuMapCpusRoundTrips) {
  std::vector<std::byte> b;
  const int32_t cpus[] = {0, 3, 7};
  EncodeCpuMap(cpus, &b);
  EXPECT_EQ(b.size() % 8, 0u);
  EXPECT_THAT(ParseAs<CpuMapRecord>(b).data.cpus, ElementsAre(0, 3, 7));
}

TEST(PerfDataUserRecords, EventUpdateUnitAsPerf61WritesIt) {
  std::vector<std::byte> b = Hex({0x4e, 0, 0, 0, 0, 0, 0x30, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0,
                                  'm', 's', 'e', 'c', 0, 0, 0, 0});
  b.resize(48, std::byte{0});
  auto u = ParseAs<EventUpdateRecord>(b);
  EXPECT_EQ(u.type, 0u);
  EXPECT_EQ(u.id, 8u);
  EXPECT_EQ(u.text, "msec");
}

TEST(PerfDataUserRecords, IdIndexRoundTripsAndRejectsAnOversizedCount) {
  IdIndexRecord r;
  r.entries = {{8, 0, 0, 8950}, {9, 1, 1, 8950}};
  std::vector<std::byte> b;
  EncodeIdIndex(r, &b);
  EXPECT_EQ(b.size(), 0x50u);  // as perf wrote it for two ids
  EXPECT_EQ(ParseAs<IdIndexRecord>(b).entries, r.entries);
  b[8] = std::byte{3};  // nr = 3 with room for 2
  Result<UserRecord> bad = ParseUserRecord(b);
  EXPECT_EQ(bad.error(), EBADMSG);
  EXPECT_THAT(bad.call(), HasSubstr("PERF_RECORD_ID_INDEX"));
  EXPECT_THAT(bad.call(), HasSubstr("nr=3"));
}

TEST(PerfDataUserRecords, IntelPtInfoAsIntelPtInfoFillLaysItOut) {
  IntelPtInfo pt;
  pt.pmu_type = 10;
  pt.time_shift = 31;
  pt.time_mult = 1234;
  pt.time_zero = 99;
  pt.cap_user_time_zero = 1;
  pt.tsc_bit = 10;
  pt.noretcomp_bit = 11;
  pt.have_sched_switch = 2;
  pt.per_cpu_mmaps = 1;
  pt.mtc_bit = 9;
  pt.mtc_freq_bits = 0xf << 14;
  pt.tsc_ctc_ratio_n = 200;
  pt.tsc_ctc_ratio_d = 2;
  pt.cyc_bit = 1;
  pt.max_non_turbo_ratio = 24;
  pt.filter = "filter 0x1000/0x100@/bin/true";  // 29 chars: 4 words with the NUL
  pt.event_trace = 0;
  AuxtraceInfoRecord info = EncodeIntelPtInfo(pt);
  ASSERT_EQ(info.priv.size(), kIntelPtPrivFixed + 4 + 1);
  EXPECT_EQ(info.priv[0], 10u);                   // INTEL_PT_PMU_TYPE
  EXPECT_EQ(info.priv[12], 200u);                 // INTEL_PT_TSC_CTC_N
  EXPECT_EQ(info.priv[16], pt.filter.size());     // INTEL_PT_FILTER_STR_LEN
  std::vector<std::byte> b;
  EncodeAuxtraceInfo(info, &b);
  auto back = ParseAs<AuxtraceInfoRecord>(b);
  EXPECT_EQ(back.type, PERF_AUXTRACE_INTEL_PT);
  Result<IntelPtInfo> parsed = ParseIntelPtInfo(back);
  ASSERT_TRUE(parsed.ok()) << parsed.ToString();
  EXPECT_EQ(*parsed, pt);

  // Before perf 6.0: no event_trace word.
  pt.event_trace.reset();
  pt.filter.clear();
  Result<IntelPtInfo> old = ParseIntelPtInfo(EncodeIntelPtInfo(pt));
  ASSERT_TRUE(old.ok());
  EXPECT_FALSE(old->event_trace.has_value());
}

TEST(PerfDataUserRecords, IntelPtInfoErrors) {
  AuxtraceInfoRecord info;
  info.type = 3;
  EXPECT_EQ(ParseIntelPtInfo(info).error(), EINVAL);
  info.type = PERF_AUXTRACE_INTEL_PT;
  info.priv.assign(16, 0);
  EXPECT_EQ(ParseIntelPtInfo(info).error(), EBADMSG);
  info.priv.assign(17, 0);
  info.priv[16] = 100;  // a filter string the words do not hold
  Result<IntelPtInfo> r = ParseIntelPtInfo(info);
  EXPECT_EQ(r.error(), EBADMSG);
  EXPECT_THAT(r.call(), HasSubstr("filter_str_len=100"));
}

TEST(PerfDataUserRecords, AuxtraceRoundTrips) {
  AuxtraceRecord a{4096, 8192, 0xabc, 2, 77, 3};
  std::vector<std::byte> b;
  EncodeAuxtrace(a, &b);
  EXPECT_EQ(b.size(), 48u);
  EXPECT_EQ(ParseAs<AuxtraceRecord>(b), a);
}

TEST(PerfDataUserRecords, TimeConvShortAndLongForms) {
  TimeConvRecord t{31, 555, 1000};
  std::vector<std::byte> b;
  EncodeTimeConv(t, &b);
  EXPECT_EQ(b.size(), 32u);
  EXPECT_EQ(ParseAs<TimeConvRecord>(b), t);
  t.time_cycles = 5;
  t.time_mask = 0xffff;
  t.cap_user_time_zero = 1;
  t.cap_user_time_short = 0;
  b.clear();
  EncodeTimeConv(t, &b);
  EXPECT_EQ(b.size(), 56u);
  EXPECT_EQ(ParseAs<TimeConvRecord>(b), t);
}

TEST(PerfDataUserRecords, ThreadMapRoundTrips) {
  ThreadMapRecord m;
  m.entries = {{8950, "ls"}, {1, "a-very-long-comm-name"}};
  std::vector<std::byte> b;
  EncodeThreadMap(m, &b);
  EXPECT_EQ(b.size(), 0x10u + 2 * 24);
  auto back = ParseAs<ThreadMapRecord>(b);
  ASSERT_EQ(back.entries.size(), 2u);
  EXPECT_EQ(back.entries[0], m.entries[0]);
  EXPECT_EQ(back.entries[1].comm, "a-very-long-com");  // comm[16] keeps 15 and the NUL
}

TEST(PerfDataUserRecords, HeaderAttrCarriesAttrAndIds) {
  perf_event_attr attr{};
  attr.type = PERF_TYPE_SOFTWARE;
  attr.size = sizeof attr;
  attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID;
  const uint64_t ids[] = {8, 9};
  std::vector<std::byte> b;
  EncodeHeaderAttr(attr, ids, &b);
  EXPECT_EQ(b.size(), 8 + sizeof attr + 16);
  auto back = ParseAs<HeaderAttrRecord>(b);
  EXPECT_EQ(back.attr.sample_type, attr.sample_type);
  EXPECT_THAT(back.ids, ElementsAre(8, 9));
}

TEST(PerfDataUserRecords, HeaderFeatureAndFinishedRound) {
  std::vector<std::byte> b;
  EncodeHeaderFeature(3, Hex({1, 2, 3, 4, 5}), &b);
  EXPECT_EQ(b.size(), 21u);  // not padded: perf's pipe streams are not 8-byte aligned
  auto f = ParseAs<HeaderFeatureRecord>(b);
  EXPECT_EQ(f.feat_id, 3u);
  EXPECT_EQ(f.data.size(), 5u);
  b.clear();
  EncodeFinishedRound(&b);
  ParseAs<FinishedRoundRecord>(b);
}

TEST(PerfDataUserRecords, KernelTypesAndTruncationAreErrors) {
  std::vector<std::byte> sample = Hex({9, 0, 0, 0, 0, 0, 8, 0});
  EXPECT_EQ(ParseUserRecord(sample).error(), ENOENT);
  std::vector<std::byte> aux;
  EncodeAuxtrace(AuxtraceRecord{}, &aux);
  aux.resize(24);
  aux[6] = std::byte{24};
  Result<UserRecord> r = ParseUserRecord(aux);
  EXPECT_EQ(r.error(), EBADMSG);
  EXPECT_THAT(r.call(), HasSubstr("PERF_RECORD_AUXTRACE"));
  EXPECT_EQ(ParseUserRecord(Hex({71, 0, 0})).error(), EBADMSG);
}

}  // namespace
}  // namespace perftest::perf_data
