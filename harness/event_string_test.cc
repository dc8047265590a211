#include "harness/event_string.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness/syscall_matchers.h"

namespace perftest {
namespace {

using ::testing::HasSubstr;

// intel_pt as sysfs shows it (arch/x86/events/intel/pt.c formats; caps of a
// part with psb_periods 0x3f, mtc_periods 0x249, cycle_thresholds 0x1fff).
Pmu IntelPt() {
  Pmu p;
  p.name = "intel_pt";
  p.type = 8;
  p.format = {{"pt", "config:0"},           {"cyc", "config:1"},         {"pwr_evt", "config:4"},
              {"fup_on_ptw", "config:5"},   {"mtc", "config:9"},         {"tsc", "config:10"},
              {"noretcomp", "config:11"},   {"ptw", "config:12"},        {"branch", "config:13"},
              {"mtc_period", "config:14-17"}, {"cyc_thresh", "config:19-22"}, {"psb_period", "config:24-27"}};
  p.caps = {{"psb_cyc", "1"}, {"mtc", "1"}, {"mtc_periods", "249"}, {"cycle_thresholds", "1fff"},
            {"psb_periods", "3f"}};
  return p;
}

std::vector<Pmu> Pmus() {
  Pmu cpu;
  cpu.name = "cpu";
  cpu.type = 4;
  cpu.format = {{"event", "config:0-7"}, {"umask", "config:8-15"}, {"split", "config:0-3,32-35"}};
  return {cpu, IntelPt()};
}

constexpr uint64_t kPt = 1, kTsc = 1 << 10, kBranch = 1 << 13, kMtc = 1 << 9, kCyc = 1 << 1, kNoRetComp = 1 << 11;

TEST(ValidValuesString, RunsAndSingles) {
  EXPECT_EQ(ValidValuesString(0x3f), "0-5");
  EXPECT_EQ(ValidValuesString(0x249), "0,3,6,9");
  EXPECT_EQ(ValidValuesString(0x1fff), "0-12");
  EXPECT_EQ(ValidValuesString(0x3), "0,1");
  EXPECT_EQ(ValidValuesString(0x1), "0");
  EXPECT_EQ(ValidValuesString(0x1d), "0,2-4");
}

TEST(IntelPtDefaultConfig, PerfsDefault) {
  // tsc, mtc, mtc_period=3, psb_period=3, pt, branch.
  EXPECT_EQ(IntelPtDefaultConfig(IntelPt()), kTsc | kMtc | (3ull << 14) | (3ull << 24) | kPt | kBranch);
  Pmu no_mtc = IntelPt();
  no_mtc.caps["mtc"] = "0";
  EXPECT_EQ(IntelPtDefaultConfig(no_mtc), kTsc | kPt | kBranch);  // no mtc periods: no psb_period either
  Pmu low = IntelPt();
  low.caps["mtc_periods"] = "5";  // 0 and 2: the nearest below 3 is 2
  EXPECT_EQ(IntelPtDefaultConfig(low), kTsc | kMtc | (2ull << 14) | (3ull << 24) | kPt | kBranch);
}

TEST(ParseEventString, DefaultConfigAndModifiers) {
  ASSERT_OK_AND_ASSIGN(perf_event_attr u, ParseEventString("intel_pt//u", Pmus()));
  EXPECT_EQ(u.type, 8u);
  EXPECT_EQ(u.config, IntelPtDefaultConfig(IntelPt()));
  EXPECT_EQ(u.exclude_kernel, 1u);
  EXPECT_EQ(u.exclude_hv, 1u);
  EXPECT_EQ(u.exclude_user, 0u);
  ASSERT_OK_AND_ASSIGN(perf_event_attr k, ParseEventString("intel_pt//k", Pmus()));
  EXPECT_EQ(k.exclude_user, 1u);
  EXPECT_EQ(k.exclude_kernel, 0u);
  ASSERT_OK_AND_ASSIGN(perf_event_attr none, ParseEventString("intel_pt//", Pmus()));
  EXPECT_EQ(none.exclude_user | none.exclude_kernel | none.exclude_hv, 0u);
}

TEST(ParseEventString, TermsOverrideTheDefaultFieldByField) {
  ASSERT_OK_AND_ASSIGN(perf_event_attr a, ParseEventString("intel_pt/tsc=0/", Pmus()));
  EXPECT_EQ(a.config, IntelPtDefaultConfig(IntelPt()) & ~kTsc);
  ASSERT_OK_AND_ASSIGN(perf_event_attr b, ParseEventString("intel_pt/noretcomp=0/", Pmus()));
  EXPECT_EQ(b.config, IntelPtDefaultConfig(IntelPt()));
  ASSERT_OK_AND_ASSIGN(perf_event_attr c, ParseEventString("intel_pt/cyc,cyc_thresh=12,noretcomp/u", Pmus()));
  EXPECT_EQ(c.config, IntelPtDefaultConfig(IntelPt()) | kCyc | (12ull << 19) | kNoRetComp);
  ASSERT_OK_AND_ASSIGN(perf_event_attr d, ParseEventString("intel_pt/psb_period=0x5/", Pmus()));
  EXPECT_EQ((d.config >> 24) & 0xf, 5u);
}

TEST(ParseEventString, ConfigTermSetsTheWordAndPtIsForced) {
  ASSERT_OK_AND_ASSIGN(perf_event_attr a, ParseEventString("intel_pt/config=0x400/", Pmus()));
  EXPECT_EQ(a.config, 0x401u);
}

TEST(ParseEventString, PerfsMessagesForBadValues) {
  auto r = ParseEventString("intel_pt/psb_period=15/u", Pmus());
  EXPECT_THAT(r, FailsWithErrno(EINVAL));
  EXPECT_THAT(r.call(), HasSubstr("Invalid psb_period for intel_pt. Valid values are: 0-5"));
  r = ParseEventString("intel_pt/mtc_period=15/u", Pmus());
  EXPECT_THAT(r.call(), HasSubstr("Invalid mtc_period for intel_pt. Valid values are: 0,3,6,9"));
  r = ParseEventString("intel_pt/cyc,cyc_thresh=15/u", Pmus());
  EXPECT_THAT(r.call(), HasSubstr("Invalid cyc_thresh for intel_pt. Valid values are: 0-12"));
  r = ParseEventString("intel_pt/psb_period=16/", Pmus());
  EXPECT_THAT(r.call(), HasSubstr("value too big for format (psb_period), maximum is 15"));
  r = ParseEventString("intel_pt/bogus=1/", Pmus());
  EXPECT_THAT(r.call(), HasSubstr("unknown term 'bogus' for pmu 'intel_pt'"));
  r = ParseEventString("intel_pt//x", Pmus());
  EXPECT_THAT(r.call(), HasSubstr("bad modifier 'x'"));
  r = ParseEventString("nope//", Pmus());
  EXPECT_THAT(r, FailsWithErrno(ENOENT));
  EXPECT_THAT(r.call(), HasSubstr("Cannot find PMU `nope'. Missing kernel support?"));
  EXPECT_THAT(ParseEventString("intel_pt", Pmus()), FailsWithErrno(EINVAL));
}

TEST(ParseEventString, SplitFormatsAndOtherPmus) {
  ASSERT_OK_AND_ASSIGN(perf_event_attr a, ParseEventString("cpu/event=0x3c,umask=1/", Pmus()));
  EXPECT_EQ(a.config, 0x13cu);
  ASSERT_OK_AND_ASSIGN(perf_event_attr b, ParseEventString("cpu/split=0xab/", Pmus()));
  EXPECT_EQ(b.config, 0xbull | (0xaull << 32));
  EXPECT_EQ(FormatBits("config1:3-4"), 0x18u);
  EXPECT_EQ(FormatBits("bogus"), 0u);
}

TEST(ParseEventString, UnsupportedCapsLeaveOnlyZero) {
  std::vector<Pmu> pmus = Pmus();
  pmus[1].caps["psb_cyc"] = "0";
  auto r = ParseEventString("intel_pt/psb_period=1/", pmus);
  EXPECT_THAT(r.call(), HasSubstr("Invalid psb_period for intel_pt. Valid values are: 0"));
}

}  // namespace
}  // namespace perftest
