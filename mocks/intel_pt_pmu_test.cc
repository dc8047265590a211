#include "mocks/intel_pt_pmu.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace perftest::mock {
namespace {

Pmu PtPmu() {
  Pmu p;
  p.name = "intel_pt";
  p.type = 8;
  p.caps = {{"psb_cyc", "1"}, {"mtc", "1"}, {"ptwrite", "0"}, {"power_event_trace", "0"},
            {"mtc_periods", "249"}, {"cycle_thresholds", "3fff"}, {"psb_periods", "3f"}};
  return p;
}

int Valid(uint64_t config) {
  std::string why;
  return PtEventValid(config, PtPmu(), &why);
}

TEST(PtEventValid, AcceptsPerfDefaultConfig) {
  EXPECT_EQ(Valid(kRtitPassthrough | kRtitBranch | kRtitTsc), 0);
  EXPECT_EQ(Valid(0x400), 0);  // intel_pt/config=0x400/: tsc only
}

TEST(PtEventValid, RejectsBitsOutsideTheMask) { EXPECT_EQ(Valid(1ull << 2), EINVAL); }

TEST(PtEventValid, ChecksPeriodsAgainstCaps) {
  EXPECT_EQ(Valid(5ull << 24), 0);
  EXPECT_EQ(Valid(6ull << 24), EINVAL);  // psb_periods 0x3f: 0-5
  EXPECT_EQ(Valid(kRtitMtc | (3ull << 14)), 0);
  EXPECT_EQ(Valid(kRtitMtc | (2ull << 14)), EINVAL);  // mtc_periods 0x249: 0,3,6,9
  EXPECT_EQ(Valid(kRtitCyc | (13ull << 19)), 0);
  EXPECT_EQ(Valid(kRtitCyc | (14ull << 19)), EINVAL);
}

TEST(PtEventValid, NeedsCapsForPtwAndPwrEvt) {
  EXPECT_EQ(Valid(kRtitPtw), EINVAL);
  EXPECT_EQ(Valid(kRtitPwrEvt), EINVAL);
}

TEST(PtEventValid, BranchNeedsPassthrough) {
  EXPECT_EQ(Valid(kRtitBranch), EINVAL);
  EXPECT_EQ(Valid(kRtitBranch | kRtitPassthrough), 0);
}

TEST(PtTraceFiller, StartsWithPsbAndRepeatsAtThePeriod) {
  PtTraceFiller f(kRtitTsc);  // psb_period 0: 2 KiB
  const std::vector<uint8_t> b = f.Generate(4096);
  EXPECT_EQ(b[0], 0x02);
  EXPECT_EQ(b[1], 0x82);
  EXPECT_EQ(b[2048], 0x02);
  EXPECT_EQ(b[2049], 0x82);
  EXPECT_EQ(b[2047], 0x00);
}

// The trace follows TraceEn: nothing before Enable() or after Disable()
// (pt_event_start()/pt_event_stop(); an event enabled in VMX operation is
// never started: mock_aux_test.cc VmxOperationFlagsPartial).
TEST(PtTraceFiller, WritesOnlyWhileEnabled) {
  PtTraceFiller f(kRtitTsc);
  EXPECT_TRUE(f.Instructions(800).empty());
  f.Enable();
  const std::vector<uint8_t> b = f.Instructions(800);
  ASSERT_EQ(b.size(), 100u);  // one byte per 8 instructions
  EXPECT_EQ(b[0], 0x02);
  EXPECT_EQ(b[1], 0x82);
  EXPECT_TRUE(f.Disable().empty());
  EXPECT_TRUE(f.Instructions(800).empty());
}

}  // namespace
}  // namespace perftest::mock
