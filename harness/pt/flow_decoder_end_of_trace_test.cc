// FlowDecoder::Options::stop_at_end: a trace that ends while tracing is
// enabled ends where libipt's query decoder says pts_eos (TNT bits and
// control packets used up, only PAD and timing packets left) — and ptxed
// stops — rather than walking on to instructions the trace does not prove.
#include <gtest/gtest.h>

#include <cerrno>
#include <vector>

#include "harness/pt/flow_decoder.h"
#include "harness/pt/flow_decoder_test_support.h"
#include "harness/pt/packet_encoder.h"
#include "harness/pt/testing/spec.h"

namespace perftest::pt {
namespace {

using flow_test::kBase;
using flow_test::PsbPlus;

struct Stop {
  std::vector<uint64_t> ips;
  int err = 0;
  bool end_of_trace = false;
};

Stop DecodeToEnd(const std::vector<uint8_t>& trace, const Image& image, bool stop_at_end) {
  Stop out;
  FlowDecoder::Options o;
  o.stop_at_end = stop_at_end;
  FlowDecoder dec(trace, &image, o);
  Result<uint64_t> s = dec.SyncForward();
  if (!s.ok()) {
    out.err = s.error();
    return out;
  }
  FlowStep step;
  while ((out.err = dec.Next(&step)) == 0) {
    if (step.kind != FlowStep::kBlock) continue;
    for (BlockInsns it(step.block); it.ok(); it.Advance()) out.ips.push_back(it.ip());
  }
  out.end_of_trace = dec.end_of_trace();
  return out;
}

// kBase: nop; jz +1; nop; nop; jmp +0x10 (to kBase + 0x17, outside the image).
Image JzThenJmpOut() {
  Image image;
  EXPECT_TRUE(image.AddBlob(kBase, std::vector<uint8_t>{0x90, 0x74, 0x01, 0x90, 0x90, 0xeb, 0x10}).ok());
  return image;
}

TEST(FlowDecoderEndOfTrace, StopsAfterTheLastTntBit) {
  testing::Spec("pt.flow.end_of_trace", "libipt pt_qry_status_flags (pts_eos), ptxed '[end of trace]'");
  const Image image = JzThenJmpOut();
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  ASSERT_TRUE(enc.Next(make::Tnt8(0b0, 1)).ok());  // the jz not taken
  ASSERT_TRUE(enc.Next(make::Tsc(0x1000)).ok());   // timing and PAD after it prove nothing
  ASSERT_TRUE(enc.Next(make::Pad()).ok());
  // Walked on (libipt's pt_insn_next without pts_eos): nop, nop, jmp, and
  // the jump leaves the image: ENXIO (libipt -pte_nomap).
  const Stop walk = DecodeToEnd(enc.bytes(), image, false);
  EXPECT_EQ(walk.err, ENXIO);
  EXPECT_EQ(walk.ips, (std::vector<uint64_t>{kBase, kBase + 1, kBase + 3, kBase + 4, kBase + 5}));
  flow_test::ExpectSameFlowAsLibipt(enc.bytes(), image, -pte_nomap);
  // Stopped at the end: the jz was the last instruction the trace proves.
  const Stop stop = DecodeToEnd(enc.bytes(), image, true);
  EXPECT_EQ(stop.err, ENODATA);
  EXPECT_TRUE(stop.end_of_trace);
  EXPECT_EQ(stop.ips, (std::vector<uint64_t>{kBase, kBase + 1}));
}

TEST(FlowDecoderEndOfTrace, AfterAPsbPlusAlone) {
  testing::Spec("pt.flow.end_of_trace", "libipt pt_qry_status_flags (pts_eos)");
  const Image image = JzThenJmpOut();
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  const Stop stop = DecodeToEnd(enc.bytes(), image, true);
  EXPECT_EQ(stop.err, ENODATA);
  EXPECT_TRUE(stop.end_of_trace);
  EXPECT_TRUE(stop.ips.empty());
}

TEST(FlowDecoderEndOfTrace, NotWhileAPacketIsLeft) {
  testing::Spec("pt.flow.end_of_trace", "SDM §33.4.2.1 TNT; libipt pts_eos only with the TNT cache empty");
  const Image image = JzThenJmpOut();
  // A TNT left (the jz's bit is in a second TNT): the flow goes on to it.
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  ASSERT_TRUE(enc.Next(make::Tsc(0x1000)).ok());
  ASSERT_TRUE(enc.Next(make::Tnt8(0b1, 1)).ok());  // taken: to kBase + 4
  const Stop stop = DecodeToEnd(enc.bytes(), image, true);
  EXPECT_EQ(stop.err, ENODATA);
  EXPECT_TRUE(stop.end_of_trace);
  EXPECT_EQ(stop.ips, (std::vector<uint64_t>{kBase, kBase + 1}));
  // A TIP.PGD at the end: tracing ends there, as without the option.
  PacketEncoder pgd;
  PsbPlus(pgd, kBase);
  ASSERT_TRUE(pgd.Next(make::Tnt8(0b0, 1)).ok());
  ASSERT_TRUE(pgd.NextIp(PacketType::kTipPgd, kBase + 0x17).ok());  // the jmp leaves the traced region
  const Stop a = DecodeToEnd(pgd.bytes(), image, true);
  const Stop b = DecodeToEnd(pgd.bytes(), image, false);
  EXPECT_EQ(a.ips, b.ips);
  EXPECT_EQ(a.ips, (std::vector<uint64_t>{kBase, kBase + 1, kBase + 3, kBase + 4, kBase + 5}));
  EXPECT_EQ(a.err, ENODATA);
  EXPECT_FALSE(a.end_of_trace);  // (disabled by the TIP.PGD, then the trace ran out)
}

}  // namespace
}  // namespace perftest::pt
