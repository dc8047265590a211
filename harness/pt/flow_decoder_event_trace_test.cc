// The flow decoder's events for the Event Trace packets CFE and EVD and for
// TRIG (SDM Vol. 3C §33.4.2.29 "CFE Packet", §33.4.2.30 "EVD Packet", "TRIG
// Packet"): libipt 2.0.5 does not know them (the expected values are from
// the SDM's descriptions); the order follows libipt 2.1+'s ptxed on its own
// test traces (test/src/ptet-*.ptt, trig*.ptt).
#include <gtest/gtest.h>

#include <cerrno>
#include <vector>

#include "harness/pt/flow_decoder.h"
#include "harness/pt/flow_decoder_test_support.h"
#include "harness/pt/packet_encoder.h"
#include "harness/pt/testing/spec.h"
#include "harness/syscall_matchers.h"

namespace perftest::pt {
namespace {

using flow_test::kBase;
using flow_test::PsbPlus;
using T = FlowEvent::Type;

struct Item {
  bool insn = false;
  uint64_t ip = 0;
  FlowEvent event;
};

std::vector<Item> Steps(const std::vector<uint8_t>& trace, const Image& image, int* err) {
  std::vector<Item> out;
  FlowDecoder dec(trace, &image);
  EXPECT_TRUE(dec.SyncForward().ok());
  FlowStep step;
  while ((*err = dec.Next(&step)) == 0) {
    if (step.kind == FlowStep::kEvent) {
      out.push_back({.event = step.event});
      continue;
    }
    for (BlockInsns it(step.block); it.ok(); it.Advance()) out.push_back({.insn = true, .ip = it.ip()});
  }
  return out;
}

std::vector<T> Events(const std::vector<Item>& items) {
  std::vector<T> v;
  for (const Item& i : items)
    if (!i.insn) v.push_back(i.event.type);
  return v;
}

const FlowEvent* Find(const std::vector<Item>& items, T type) {
  for (const Item& i : items)
    if (!i.insn && i.event.type == type) return &i.event;
  return nullptr;
}

// kBase: nop; nop; nop; ret — 0x402000: nop; jmp *%rax.
Image TwoPlaces() {
  Image image;
  EXPECT_TRUE(image.AddBlob(kBase, std::vector<uint8_t>{0x90, 0x90, 0x90, 0xc3}).ok());
  EXPECT_TRUE(image.AddBlob(0x402000, std::vector<uint8_t>{0x90, 0xff, 0xe0}).ok());
  return image;
}

TEST(FlowDecoderEventTrace, InterruptWithCfeAndEvd) {
  testing::Spec("pt.flow.cfe",
                "SDM §33.4.2.29 CFE (INTR, IP=1: the FUP that follows has the event's IP), §33.4.2.30 EVD (CR2)");
  const Image image = TwoPlaces();
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  ASSERT_TRUE(enc.Next(make::Evd(0, 0xf00baa)).ok());      // the #PF's linear address
  ASSERT_TRUE(enc.Next(make::Cfe(1, 14, true)).ok());      // INTR, vector 14 (#PF), IP=1
  ASSERT_TRUE(enc.NextIp(PacketType::kFup, kBase + 1).ok());  // where: the second nop
  ASSERT_TRUE(enc.NextIp(PacketType::kTip, 0x402000).ok());   // the handler
  ASSERT_TRUE(enc.NextIp(PacketType::kTipPgd, 0x403000).ok());  // jmp *%rax out of the traced region
  int err = 0;
  const std::vector<Item> items = Steps(enc.bytes(), image, &err);
  EXPECT_EQ(err, ENODATA);
  const FlowEvent* evd = Find(items, T::kEvd);
  ASSERT_NE(evd, nullptr);
  EXPECT_EQ(evd->evd_type, 0);
  EXPECT_EQ(evd->payload, 0xf00baau);
  const FlowEvent* cfe = Find(items, T::kCfe);
  ASSERT_NE(cfe, nullptr);
  EXPECT_EQ(cfe->payload, 1u | (14u << 8));  // Type INTR, Vector 14
  EXPECT_FALSE(cfe->ip_suppressed);
  EXPECT_EQ(cfe->ip, kBase + 1);
  // The FUP is also the interrupt's: an asynchronous branch from the
  // second nop (not executed) to the handler.
  const FlowEvent* async = Find(items, T::kAsyncBranch);
  ASSERT_NE(async, nullptr);
  EXPECT_EQ(async->from, kBase + 1);
  EXPECT_EQ(async->ip, 0x402000u);
  // EVD, then CFE, then the asynchronous branch; instructions: the first
  // nop, then the handler's nop and jmp.
  // (After the PSB+'s MODE.Exec status update.)
  EXPECT_EQ(Events(items), (std::vector<T>{T::kExecMode, T::kEvd, T::kCfe, T::kAsyncBranch, T::kDisabled}));
  std::vector<uint64_t> ips;
  for (const Item& i : items)
    if (i.insn) ips.push_back(i.ip);
  EXPECT_EQ(ips, (std::vector<uint64_t>{kBase, 0x402000, 0x402001}));
}

TEST(FlowDecoderEventTrace, CfeWithoutIp) {
  testing::Spec("pt.flow.cfe", "SDM §33.4.2.29 CFE (IRET, IP=0: no FUP)");
  const Image image = TwoPlaces();
  PacketEncoder enc;
  PsbPlus(enc, 0x402000);
  ASSERT_TRUE(enc.Next(make::Cfe(2, 0, false)).ok());  // IRET
  ASSERT_TRUE(enc.NextIp(PacketType::kTipPgd, 0x403000).ok());
  int err = 0;
  const std::vector<Item> items = Steps(enc.bytes(), image, &err);
  EXPECT_EQ(err, ENODATA);
  const FlowEvent* cfe = Find(items, T::kCfe);
  ASSERT_NE(cfe, nullptr);
  EXPECT_TRUE(cfe->ip_suppressed);
  EXPECT_EQ(cfe->payload, 2u);
}

TEST(FlowDecoderEventTrace, Trig) {
  testing::Spec("pt.flow.trig", "SDM §33.4.2 TRIG (TRBV, ICNT, MULT; IP=1: the FUP that follows has its IP)");
  const Image image = TwoPlaces();
  PacketEncoder enc;
  PsbPlus(enc, 0x402000);
  ASSERT_TRUE(enc.Next(make::Trig(0x1a, 1, true, false)).ok());  // TRBV 1Ah, ICNT 1, MULT
  ASSERT_TRUE(enc.Next(make::Trig(0xa1, 0, false, true)).ok());   // IP: anchored by the FUP
  ASSERT_TRUE(enc.NextIp(PacketType::kFup, 0x402001).ok());
  ASSERT_TRUE(enc.NextIp(PacketType::kTipPgd, 0x403000).ok());
  int err = 0;
  const std::vector<Item> items = Steps(enc.bytes(), image, &err);
  EXPECT_EQ(err, ENODATA);
  std::vector<const FlowEvent*> trigs;
  for (const Item& i : items)
    if (!i.insn && i.event.type == T::kTrig) trigs.push_back(&i.event);
  ASSERT_EQ(trigs.size(), 2u);
  EXPECT_EQ(trigs[0]->payload, 0x1au | (1u << 8) | (1u << 24) | (1u << 25));
  EXPECT_TRUE(trigs[0]->ip_suppressed);
  EXPECT_EQ(trigs[1]->payload, 0xa1u | (1u << 25));
  EXPECT_FALSE(trigs[1]->ip_suppressed);
  EXPECT_EQ(trigs[1]->ip, 0x402001u);
  // The TRIG's FUP is its own: no asynchronous branch.
  EXPECT_EQ(Find(items, T::kAsyncBranch), nullptr);
  EXPECT_NE(Find(items, T::kDisabled), nullptr);
}

TEST(FlowDecoderEventTrace, UnknownToLibiptsPacketSet) {
  testing::Spec("pt.flow.cfe", "libipt 2.0.5 has no CFE/EVD/TRIG: -pte_bad_opc (PacketDecoder::Options::Libipt205)");
  const Image image = TwoPlaces();
  PacketEncoder enc;
  PsbPlus(enc, 0x402000);
  ASSERT_TRUE(enc.Next(make::Cfe(2, 0, false)).ok());
  ASSERT_TRUE(enc.NextIp(PacketType::kTipPgd, 0x403000).ok());
  // libipt 2.0.5: -pte_bad_opc at the CFE, failing its pt_insn_sync_forward;
  // ours with its packet set and sync rule the same.
  flow_test::ExpectSameFlowAsLibipt(enc.bytes(), image, -pte_bad_opc);
  const testing::FlowLog ours = testing::OurInsnFlow(enc.bytes(), image);
  ASSERT_FALSE(ours.entries.empty());
  EXPECT_EQ(ours.entries[0].kind, testing::FlowEntry::kError);
}

TEST(FlowDecoderEventTrace, PacketErrorAfterPsbPlusKeepsTheSync) {
  testing::Spec("pt.flow.sync_unknown_packet",
                "SDM §33.3.5 (a PSB+ is a sync point); libipt 2.1+ reports the packet at the next event");
  const Image image = TwoPlaces();
  PacketEncoder enc;
  PsbPlus(enc, 0x402000);
  std::vector<uint8_t> trace = enc.bytes();
  const uint64_t bad = trace.size();
  trace.push_back(0x02);
  trace.push_back(0x04);  // 02h 04h: no packet
  FlowDecoder dec(trace, &image);
  ASSERT_OK_AND_ASSIGN(uint64_t psb, dec.SyncForward());
  EXPECT_EQ(psb, 0u);
  FlowStep step;
  int err;
  while ((err = dec.Next(&step)) == 0) EXPECT_EQ(step.kind, FlowStep::kEvent);  // (the PSB+'s)
  EXPECT_EQ(err, EILSEQ);
  EXPECT_EQ(dec.error_offset(), bad);
  // libipt 2.0.5's rule instead: the sync fails.
  FlowDecoder compat(trace, &image, FlowDecoder::Options{.libipt_errors = true});
  EXPECT_FALSE(compat.SyncForward().ok());
}

}  // namespace
}  // namespace perftest::pt
