// Unit tests of harness/pt/sync.h: where a PSB is recognised (SDM Vol. 3C
// §33.4.2.17 "PSB Packet Definition"; the end-of-run rule of libipt's
// pt_sync.c, checked against libipt itself in libipt_differential_test.cc).
#include "harness/pt/sync.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "harness/pt/testing/spec.h"

namespace perftest::pt {
namespace {

using ::testing::Eq;
using ::testing::Optional;
using testing::Bytes;
using testing::Concat;
using testing::PsbBytes;
using testing::Spec;

TEST(Sync, IsPsbAt) {
  Spec("pt.sync.psb", "SDM §33.4.2.17, table 'PSB Packet Definition'");
  const std::vector<uint8_t> t = Concat({Bytes({0}), PsbBytes()});
  EXPECT_TRUE(IsPsbAt(t, 1));
  EXPECT_FALSE(IsPsbAt(t, 0));
  EXPECT_FALSE(IsPsbAt(t, 3)) << "only 14 bytes of pattern left";
  EXPECT_FALSE(IsPsbAt(t, 100));
}

TEST(Sync, ForwardAtAnyAlignment) {
  Spec("pt.sync.forward", "SDM §33.4.2.17; libipt pt_sync_forward");
  for (size_t lead = 0; lead < 24; ++lead) {
    const std::vector<uint8_t> t = Concat({std::vector<uint8_t>(lead, 0x00), PsbBytes(), Bytes({0x02, 0x23})});
    EXPECT_THAT(FindPsbForward(t, 0), Optional(Eq(lead))) << lead;
    EXPECT_THAT(FindPsbForward(t, lead), Optional(Eq(lead))) << lead;
    EXPECT_EQ(FindPsbForward(t, lead + 1), std::nullopt) << lead;
    EXPECT_THAT(FindPsbBackward(t, t.size()), Optional(Eq(lead))) << lead;
  }
}

TEST(Sync, PsbIsTheEndOfARun) {
  Spec("pt.sync.run_end", "libipt pt_find_psb (a PSB ends its run of 02h 82h)");
  // A TSC whose last payload bytes are 02 82, then a PSB: the run is 18
  // bytes, the PSB its last 16.
  const std::vector<uint8_t> t =
      Concat({Bytes({0x19, 0x11, 0x22, 0x33, 0x44, 0x55, 0x02, 0x82}), PsbBytes(), Bytes({0x02, 0x23})});
  EXPECT_THAT(FindPsbForward(t, 0), Optional(Eq(8u)));
  // Two PSBs back to back are one run: the search lands on the second.
  const std::vector<uint8_t> two = Concat({PsbBytes(), PsbBytes(), Bytes({0x02, 0x23})});
  EXPECT_THAT(FindPsbForward(two, 0), Optional(Eq(16u)));
  EXPECT_THAT(FindPsbBackward(two, two.size()), Optional(Eq(16u)));
}

TEST(Sync, ShortRunsAreNotPsbs) {
  Spec("pt.sync.short_run", "SDM §33.4.2.17 (16 bytes)");
  const std::vector<uint8_t> t = Concat({Bytes({0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02,
                                                0x82, 0x02, 0x82, 0x00, 0x00})});
  EXPECT_EQ(FindPsbForward(t, 0), std::nullopt);
  EXPECT_EQ(FindPsbBackward(t, t.size()), std::nullopt);
}

TEST(Sync, BackwardWalksPsbs) {
  Spec("pt.sync.backward", "libipt pt_sync_backward");
  std::vector<uint8_t> t;
  std::vector<uint64_t> psbs;
  for (int i = 0; i < 4; ++i) {
    t = Concat({t, std::vector<uint8_t>(static_cast<size_t>(5 + 9 * i), 0x00)});
    psbs.push_back(t.size());
    t = Concat({t, PsbBytes(), Bytes({0x02, 0x23})});
  }
  uint64_t from = t.size();
  for (int i = 3; i >= 0; --i) {
    const std::optional<uint64_t> psb = FindPsbBackward(t, from);
    ASSERT_THAT(psb, Optional(Eq(psbs[static_cast<size_t>(i)])));
    from = *psb;
  }
  EXPECT_EQ(FindPsbBackward(t, from), std::nullopt);
}

TEST(Sync, FromPastTheEnd) {
  Spec("pt.sync.bounds", "sync.h");
  const std::vector<uint8_t> t = PsbBytes();
  EXPECT_EQ(FindPsbForward(t, 17), std::nullopt);
  EXPECT_THAT(FindPsbBackward(t, 1000), Optional(Eq(0u)));
  EXPECT_EQ(FindPsbForward({}, 0), std::nullopt);
  EXPECT_EQ(FindPsbBackward({}, 0), std::nullopt);
}

}  // namespace
}  // namespace perftest::pt
