// FlowDecoder against libipt's timing state where it decides the flow: a
// TMA is taken only right after a TSC (since the sync), one per TSC
// (pt_time_update_tma: -pte_bad_context), and that error fails the query
// that decodes the TMA — the PSB+ at the sync, or a read-ahead, through a
// mid-flow PSB+ or not. The expected flow comes from libipt's pt_insn_next
// at test time.
#include "harness/pt/flow_decoder.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <vector>

#include "harness/pt/flow_decoder_test_support.h"
#include "harness/pt/packet_encoder.h"
#include "harness/pt/testing/libipt_flow.h"

namespace perftest::pt {
namespace {

using flow_test::Decode;
using flow_test::kBase;
using flow_test::kCondRet;
using flow_test::Walk;

// The first error libipt's instruction flow reports (LibiptInsnFlow).
int LibiptFirstError(const std::vector<uint8_t>& trace, const Image& image) {
  const testing::FlowLog ref = testing::LibiptInsnFlow(trace, image);
  const auto e = std::find_if(ref.entries.begin(), ref.entries.end(),
                              [](const testing::FlowEntry& x) { return x.kind == testing::FlowEntry::kError; });
  return e == ref.entries.end() ? 0 : e->code;
}

// Our flow and pt_insn_next's agree through the first error, which is
// libipt's `want`.
void ExpectAsLibiptThroughFirstError(const std::vector<uint8_t>& trace, const Image& image, int want) {
  EXPECT_EQ(testing::DiffFlowThroughFirstError(testing::OurInsnFlow(trace, image), testing::LibiptInsnFlow(trace, image)),
            "");
  EXPECT_EQ(LibiptFirstError(trace, image), want);
}

// The PSB+ at the sync with a TSC and its TMA, a TMA alone (no TSC since the
// sync: the corpus's dropped byte range took the TSC), or a TSC and two
// TMAs: libipt fails the sync on the TMA (-pte_bad_context), and decodes
// nothing; else the jz takes the TNT's bit to the ret, which has no packet
// (-pte_eos). (Corpus divergence at PERFTEST_PT_CORPUS=all SEEDS=16
// LAYOUTS=4, exit_mtc seed 15, corruption 7: we synchronized there.)
TEST(FlowDecoder, TmaWithoutItsTscFailsThePsbPlusAtTheSync) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  for (int v = 0; v < 3; ++v) {
    SCOPED_TRACE(v == 0 ? "TSC, TMA" : v == 1 ? "TMA" : "TSC, TMA, TMA");
    PacketEncoder enc;
    (void)enc.Next(make::Psb());
    if (v != 1) (void)enc.Next(make::Tsc(0x10000000));
    (void)enc.Next(make::Tma(0x10, 1));
    if (v == 2) (void)enc.Next(make::Tma(0x10, 1));
    (void)enc.Next(make::ModeExec(ExecMode::k64Bit));
    (void)enc.NextIp(PacketType::kFup, kBase);
    (void)enc.Next(make::PsbEnd());
    (void)enc.Next(make::Tnt8(1, 1));
    ExpectAsLibiptThroughFirstError(enc.bytes(), image, v == 0 ? -pte_eos : -pte_bad_context);
    const Walk w = Decode(enc.bytes(), image);
    EXPECT_EQ(w.err, v == 0 ? ENODATA : EBADMSG);
  }
}

// A mid-flow PSB+ whose TSC is lost: its TMA is a second one for the sync's
// TSC, which libipt's read-ahead into the PSB+ rejects (-pte_bad_context,
// failing the branch whose TNT it read past); a TMA in the stream the same.
// With the PSB+'s TSC, the flow goes on through it. (Corpus divergence at
// PERFTEST_PT_CORPUS=all SEEDS=16 LAYOUTS=4, compiled_o0_cyc_thresh5_mtc
// seed 14, corruption 0: a dropped TSC; we ran on to the end.)
TEST(FlowDecoder, SecondTmaForATscFailsTheReadAhead) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, std::vector<uint8_t>{0x90, 0x74, 0xfd, 0xc3}).ok());  // nop; jz kBase; ret
  for (int v = 0; v < 3; ++v) {
    SCOPED_TRACE(v == 0 ? "mid-flow PSB+ with its TSC" : v == 1 ? "mid-flow PSB+ without its TSC" : "TMA alone");
    PacketEncoder enc;
    (void)enc.Next(make::Psb());
    (void)enc.Next(make::Tsc(0x10000000));
    (void)enc.Next(make::Tma(0x10, 1));
    (void)enc.Next(make::ModeExec(ExecMode::k64Bit));
    (void)enc.NextIp(PacketType::kFup, kBase);
    (void)enc.Next(make::PsbEnd());
    (void)enc.Next(make::Tnt8(1, 1));  // the jz: taken, back to kBase
    if (v == 2) {
      (void)enc.Next(make::Tma(0x20, 1));
    } else {
      (void)enc.Next(make::Psb());
      if (v == 0) (void)enc.Next(make::Tsc(0x10001000));
      (void)enc.Next(make::Tma(0x20, 1));
      (void)enc.Next(make::ModeExec(ExecMode::k64Bit));
      (void)enc.Next(make::Fup(IpBytes::kSext48, kBase));
      (void)enc.Next(make::PsbEnd());
    }
    (void)enc.Next(make::Tnt8(0, 1));  // the jz: not taken, to the ret (no packet: -pte_eos)
    ExpectAsLibiptThroughFirstError(enc.bytes(), image, v == 0 ? -pte_eos : -pte_bad_context);
    const Walk w = Decode(enc.bytes(), image);
    EXPECT_EQ(w.err, v == 0 ? ENODATA : EBADMSG);
  }
}

// A CBR of 0 in the stream (not only in a PSB+): libipt's time update
// rejects it (pt_qry_decode_cbr -> pt_time_update_cbr: -pte_bad_packet) in
// the query for its event, asked for once the TNT's bits are used: the jz
// that took the last one fails. We reported a CBR event and ran on.
// (Corpus divergence at PERFTEST_PT_CORPUS=all SEEDS=40 LAYOUTS=2:
// deep_everything_noretcomp_tnt64 seed 36, corruption 6.)
TEST(FlowDecoder, CbrZeroInTheStreamFailsItsEventQuery) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  for (const uint8_t ratio : {uint8_t{0x20}, uint8_t{0}}) {
    SCOPED_TRACE(fmt::format("CBR {:#x}", ratio));
    PacketEncoder enc;
    (void)enc.Next(make::Psb());
    (void)enc.Next(make::ModeExec(ExecMode::k64Bit));
    (void)enc.NextIp(PacketType::kFup, kBase);
    (void)enc.Next(make::PsbEnd());
    (void)enc.Next(make::Tnt8(1, 1));  // the jz: taken, to the ret
    (void)enc.Next(make::Cbr(ratio));
    (void)enc.NextIp(PacketType::kTip, kBase + 3);  // the ret's
    if (ratio == 0) {
      flow_test::ExpectFailsAsLibipt(enc.bytes(), image, -pte_bad_packet, EBADMSG, {kBase});
    } else {
      flow_test::ExpectFailsAsLibipt(enc.bytes(), image, -pte_eos, ENODATA, {kBase, kBase + 1, kBase + 4, kBase + 3});
    }
  }
}

}  // namespace
}  // namespace perftest::pt
