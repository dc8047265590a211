// FlowDecoder against libipt's rules, one minimal trace each: where libipt's
// query decoder binds an event, how far it reads ahead, which error it gives
// (issue 7; most found as corpus divergences). The expected flow comes from
// libipt's pt_insn_next at test time.
#include "harness/pt/flow_decoder.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "harness/pt/flow_decoder_test_support.h"
#include "harness/pt/packet_encoder.h"
#include "harness/pt/testing/libipt_flow.h"

namespace perftest::pt {
namespace {

using flow_test::Decode;
using flow_test::ExpectFailsAsLibipt;
using flow_test::ExpectHeldEventFlow;
using flow_test::ExpectSameFlowAsLibipt;
using flow_test::kBase;
using flow_test::kCondRet;
using flow_test::NopJmpRax;
using flow_test::PsbPlus;
using flow_test::Walk;
using flow_test::WithBadOpcode;

// A TIP.PGD without an IP binds to far transfers only (libipt
// pt_insn_at_disabled_event, no address filter): the conditional branch
// before it reads the packet after it — a TIP.PGE (-pte_bad_query), or the
// end of the trace (-pte_eos).
TEST(FlowDecoder, SuppressedTipPgdDoesNotBindToANearBranch) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  for (bool pge : {true, false}) {
    SCOPED_TRACE(pge ? "TIP.PGE after the TIP.PGD" : "the trace ends after the TIP.PGD");
    PacketEncoder enc;
    PsbPlus(enc, kBase);
    (void)enc.NextIp(PacketType::kTipPgd, std::nullopt);
    if (pge) (void)enc.NextIp(PacketType::kTipPge, kBase);
    ExpectSameFlowAsLibipt(enc.bytes(), image, pge ? -pte_bad_query : -pte_eos);
    Walk w = Decode(enc.bytes(), image);
    EXPECT_EQ(w.err, pge ? EBADMSG : ENODATA);
    EXPECT_EQ(w.ips, (std::vector<uint64_t>{kBase}));  // the jz is not reported
  }
}

// An asynchronous FUP+TIP whose FUP IP the flow never reaches: the return
// before it needs the packets after the TIP; at the end of the trace that is
// libipt's -pte_eos.
TEST(FlowDecoder, UnreachedAsyncFupAtTheEndIsTheEndOfTheTrace) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, std::vector<uint8_t>{0x90, 0x90, 0xc3}).ok());
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  (void)enc.NextIp(PacketType::kFup, 0x402000);
  (void)enc.NextIp(PacketType::kTip, 0x401000);
  ExpectFailsAsLibipt(enc.bytes(), image, -pte_eos, ENODATA, {0x401000, 0x401001});
}

// libipt's query decoder reads ahead after a TIP only through PAD and
// timing packets; a TIP-class packet with a bad payload (IPBytes 111b) is
// decoded only when a query needs it. So the return that took the first TIP
// completes, and the flow fails at its target, which is not mapped
// (-pte_nomap) — not at the bad packet.
TEST(FlowDecoder, BadTipAfterTheReadAheadWindowWaitsForItsQuery) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, std::vector<uint8_t>{0x90, 0xc3}).ok());
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  (void)enc.NextIp(PacketType::kTip, 0x500000);
  (void)enc.Next(make::Cyc(5));
  std::vector<uint8_t> trace = enc.Release();
  for (uint8_t b : {0xed, 0x00, 0x00}) trace.push_back(b);  // TIP, IPBytes 111b (reserved)
  ExpectFailsAsLibipt(trace, image, -pte_nomap, ENXIO, {0x401000, 0x401001});
}

// Undefined encodings that libipt's length decoder sizes and walks over
// (pop ds in 64-bit mode, FF /7, a VEX with an undefined prefix, EA
// ptr16:32 as a far jump): the flow walks them as pt_insn_next does.
TEST(FlowDecoder, UndefinedEncodingsAreWalkedAsLibiptDoes) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, std::vector<uint8_t>{0x1f, 0xff, 0xff, 0xc5, 0x83, 0xfb, 0x01, 0x84, 0x00,
                                                          0xea, 0xff, 0xff, 0xff, 0x66, 0x0f, 0x1f, 0x90, 0xc3})
                  .ok());
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  (void)enc.NextIp(PacketType::kTip, 0x401011);  // the far jump to the ret
  ExpectFailsAsLibipt(enc.bytes(), image, -pte_eos, ENODATA, {0x401000, 0x401001, 0x401003, 0x401007, 0x401009});
}

// Two-byte opcodes of a group whose ModRM leaves them undefined: libipt's
// length decoder sizes them by ModRM (and imm8 where the opcode has one),
// as pt_insn_next walks them. (Corpus case dispatch_overflow seed 5,
// corruption 1, at 0x7f0000100000 and at 0x7ffff7fe1230: a corrupted TIP
// into the middle of a PTWRITE, at REX.W 0F AE E0 without its F3; we
// failed there, EILSEQ.)
TEST(FlowDecoder, UndefinedTwoByteGroupEncodingsAreWalkedAsLibiptDoes) {
  const std::vector<std::vector<uint8_t>> insns = {
      {0x48, 0x0f, 0xae, 0xe0}, {0x0f, 0xae, 0xc8}, {0x0f, 0xc7, 0xc8}, {0x0f, 0x00, 0xf8},
      {0x0f, 0xba, 0xc0, 0x01}, {0x0f, 0x71, 0xc0, 0x01}, {0x0f, 0x73, 0xc8, 0x01}, {0x0f, 0x01, 0xff}};
  flow_test::ExpectInsnsWalkedAsLibipt(insns);
}

// A TIP that suppresses the IP for an indirect jump: libipt reads ahead
// after the TIP before it looks at the IP, so an unknown opcode right after
// it is the error (-pte_bad_opc), not the missing IP.
TEST(FlowDecoder, ReadAheadErrorComesBeforeTheSuppressedTipIp) {
  const Image image = NopJmpRax();
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  (void)enc.NextIp(PacketType::kTip, std::nullopt);
  std::vector<uint8_t> trace = enc.Release();
  trace.push_back(0xc9);  // not an opcode
  ExpectSameFlowAsLibipt(trace, image, -pte_bad_opc);
  EXPECT_EQ(Decode(trace, image).err, EILSEQ);
}

// A FUP followed by an event packet (PWRX) instead of its TIP: libipt keeps
// the FUP's event waiting for a TIP and goes on; here the trace then ends
// (-pte_eos), tracing disabled throughout.
TEST(FlowDecoder, FupWaitsForItsTipAcrossEventPackets) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  PacketEncoder enc;
  PsbPlus(enc, std::nullopt);
  (void)enc.NextIp(PacketType::kFup, kBase);
  (void)enc.Next(make::Pwrx(2, 2, 1));
  ExpectSameFlowAsLibipt(enc.bytes(), image, -pte_eos);
  Walk w = Decode(enc.bytes(), image);
  EXPECT_EQ(w.err, ENODATA);
}

// A TNT while tracing is disabled: libipt reports it (-pte_no_enable) without
// reading on, so a bad packet after it does not matter.
TEST(FlowDecoder, TntWhileDisabledIsReportedBeforeLaterPackets) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  PacketEncoder enc;
  PsbPlus(enc, std::nullopt);
  (void)enc.Next(make::Tnt8(1, 1));
  (void)enc.Next(make::Mtc(1));
  std::vector<uint8_t> trace = enc.Release();
  trace.push_back(0xc9);  // not an opcode
  ExpectSameFlowAsLibipt(trace, image, -pte_no_enable);
  EXPECT_EQ(Decode(trace, image).err, EBADMSG);
}

// An indirect jump while a TNT bit is still cached: libipt's query takes the
// TIP that follows (the bit waits), and the flow goes on at its target —
// here not mapped (-pte_nomap).
TEST(FlowDecoder, IndirectBranchTakesTheTipPastCachedTntBits) {
  const Image image = NopJmpRax();
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  (void)enc.Next(make::Tnt8(1, 1));
  (void)enc.NextIp(PacketType::kTip, 0x500000);
  ExpectFailsAsLibipt(enc.bytes(), image, -pte_nomap, ENXIO, {0x401000, 0x401001});
}

// The same with a TNT where the TIP should be: libipt's indirect-branch
// query meets a TNT packet while TNT bits are cached and fails at once
// (pt_qry_indirect_branch: -pte_bad_query), before it decodes that packet
// or reads past it — a bad byte after that TNT is no error of the jump.
// (Corpus divergence compiled_o0_psb_period5 seed 2, corruption 7, at code
// base 0x562ba9cee983: we read past the TNT and reported the bad opcode
// behind it, EILSEQ.)
TEST(FlowDecoder, IndirectBranchFailsAtATntBeforeReadingPastIt) {
  const Image image = NopJmpRax();
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  (void)enc.Next(make::Tnt8(1, 1));
  (void)enc.Next(make::Tnt8(1, 1));
  const std::vector<uint8_t> trace = WithBadOpcode(enc);
  ExpectFailsAsLibipt(trace, image, -pte_bad_query, EBADMSG, {kBase});
}

// An indirect jump while a TNT bit is cached, and an event packet before its
// TIP: libipt signals no event while TNT bits are cached
// (pt_qry_status_flags), so its instruction decoder has not asked for it,
// and the jump's query meets the event packet first ("an event ahead",
// pt_qry_indirect_branch: -pte_bad_query): the jump is not reported.
// (Relocated corpus case dispatch_everything_noretcomp_tnt64 seed 2,
// corruption 3, at code bases 0x7ffff7fe1230 and 0xffff0ff0: a TSC of
// flipped bits swallowed a TIP, leaving a TNT cached at an indirect call
// with two PTWs before the next TIP; we took the TIP past them.)
TEST(FlowDecoder, IndirectBranchWithCachedTntBitsFailsAtAnEventPacket) {
  const Image image = NopJmpRax();
  for (const Packet& event : {make::Ptw(0x1234, 4, false), make::Pip(0x12345000, false), make::Cbr(0x20),
                              make::ModeExec(ExecMode::k64Bit), make::ModeTsx(true, false), make::Mnt(7)}) {
    SCOPED_TRACE(PacketName(event.type));
    PacketEncoder enc;
    PsbPlus(enc, kBase);
    (void)enc.Next(make::Tnt8(1, 1));
    (void)enc.Next(make::Cyc(3));
    (void)enc.Next(event);
    (void)enc.NextIp(PacketType::kTip, kBase);
    ExpectFailsAsLibipt(enc.bytes(), image, -pte_bad_query, EBADMSG, {kBase});
  }
}

// Outside 64-bit mode a direct branch goes to next IP + displacement on the
// whole 64-bit IP, as libipt's (pt_insn_proceed; insn.cc RelativeTarget):
// at an IP above 4 GiB in 32- or 16-bit mode (a corrupted MODE.Exec) the
// target keeps the IP's upper bits. (Relocated corpus cases deep_notsc
// seed 1, corruption 3, and deep_interrupts seed 2, corruption 7, at code
// base 0x555555559923: a MODE.Exec to 32-bit made of corrupted bytes; we
// wrapped a jno's target to 32 bits, ENXIO, where libipt went on.)
TEST(FlowDecoder, DirectBranchTargetsOutside64BitModeDoNotWrap) {
  constexpr uint64_t kHigh = 0x555555559000;
  Image image;
  // kHigh: jmp +1; nop; kHigh+3: jz +1; nop; kHigh+6: nop; ret
  ASSERT_TRUE(image.AddBlob(kHigh, std::vector<uint8_t>{0xeb, 0x01, 0x90, 0x74, 0x01, 0x90, 0x90, 0xc3}).ok());
  for (const ExecMode mode : {ExecMode::k32Bit, ExecMode::k16Bit}) {
    SCOPED_TRACE(ExecModeName(mode));
    PacketEncoder enc;
    (void)enc.Next(make::Psb());
    (void)enc.Next(make::ModeExec(mode));
    (void)enc.NextIp(PacketType::kFup, kHigh);
    (void)enc.Next(make::PsbEnd());
    (void)enc.Next(make::Tnt8(1, 1));
    ExpectFailsAsLibipt(enc.bytes(), image, -pte_eos, ENODATA, {kHigh, kHigh + 3, kHigh + 6});
  }
}

// An event packet right after a TNT: libipt signals it once the TNT's bits
// are used up (pt_qry_status_flags), and pt_insn_next asks for the event at
// once (pt_insn_check_ip_event -> pt_qry_event): it decodes the TIP.PGE or
// TIP.PGD and reads ahead past it, where an unknown opcode is -pte_bad_opc.
// That fails the branch that took the TNT's last bit (not reported), not
// one after it. (Corpus divergence compiled_buffer_overflow seed 2,
// corruption 1, at code base 0x55cb28675160: a compressed return took the
// last bit; we reported it, then failed at the TIP.PGE while enabled.)
TEST(FlowDecoder, EventAfterTheLastTntBitIsReadAtThatBit) {
  Image image;
  // 0x401000 nop; 0x401001 jz +0; 0x401003 jz +0; 0x401005 ret
  ASSERT_TRUE(image.AddBlob(kBase, std::vector<uint8_t>{0x90, 0x74, 0x00, 0x74, 0x00, 0xc3}).ok());
  for (const PacketType event : {PacketType::kTipPge, PacketType::kTipPgd}) {
    for (const unsigned bits : {1u, 2u}) {
      SCOPED_TRACE(fmt::format("{} after a TNT of {} bits", PacketName(event), bits));
      PacketEncoder enc;
      PsbPlus(enc, kBase);
      (void)enc.Next(make::Tnt8(0, bits));
      (void)enc.Next(make::Cyc(3));
      (void)enc.NextIp(event, kBase);
      (void)enc.Next(make::Mtc(1));
      const std::vector<uint8_t> trace = WithBadOpcode(enc);
      ExpectSameFlowAsLibipt(trace, image, -pte_bad_opc);
      Walk w = Decode(trace, image);
      EXPECT_EQ(w.err, EILSEQ);
      const std::vector<uint64_t> want = bits == 1 ? std::vector<uint64_t>{kBase} : std::vector<uint64_t>{kBase, kBase + 1};
      EXPECT_EQ(w.ips, want);
    }
  }
  // The last bit taken by a compressed return, a TIP.PGD without an IP
  // next (the shape of corpus case compiled_o0_ptw_fup seed 2, corruption 4).
  Image calls;
  // 0x401000 call 0x401006; 0x401005 nop; 0x401006 ret
  ASSERT_TRUE(calls.AddBlob(kBase, std::vector<uint8_t>{0xe8, 0x01, 0x00, 0x00, 0x00, 0x90, 0xc3}).ok());
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  (void)enc.Next(make::Tnt8(1, 1));
  (void)enc.NextIp(PacketType::kTipPgd, std::nullopt);
  const std::vector<uint8_t> trace = WithBadOpcode(enc);
  ExpectFailsAsLibipt(trace, calls, -pte_bad_opc, EILSEQ, {kBase});
}

// FUP after FUP with no TIP: libipt's read-ahead after the jump's TIP takes
// each FUP as an asynchronous branch waiting for a TIP (pt_qry_decode_fup),
// and the 7th finds its event queue full (pt_evq_enqueue: 6 per binding):
// -pte_nomem, the jump not reported. Ours: the 7th FUP, EBADMSG, failing
// the same jump (FailTipQueueFull; testing/libipt_flow.h SameFlowError
// takes -pte_nomem as EBADMSG). (Corpus divergences compiled_noretcomp seed 1,
// corruptions 3 and 6, at code base 0x555f69273da0, and seed 2 at
// 0x555961cb3d10: a dropped byte left "CYC, FUP" repeating.)
TEST(FlowDecoder, FupAfterFupFailsLikeLibiptsFullEventQueue) {
  const Image image = NopJmpRax();
  for (const int fups : {7, 9}) {
    SCOPED_TRACE(fmt::format("{} FUPs", fups));
    PacketEncoder enc;
    PsbPlus(enc, kBase);
    (void)enc.NextIp(PacketType::kTip, kBase);
    for (int i = 0; i < fups; ++i) {
      (void)enc.Next(make::Cyc(3));
      (void)enc.NextIp(PacketType::kFup, kBase + 1);
    }
    (void)enc.NextIp(PacketType::kTip, kBase);
    ExpectFailsAsLibipt(enc.bytes(), image, -pte_nomem, EBADMSG, {kBase});
  }
}

// libipt holds an event bound to an IP (here a PTW with its FUP) until the
// flow reaches that IP, and takes no further event meanwhile: with a second
// PTW behind it, the jz's query meets an event ahead of its TNT
// (-pte_bad_query), and the jz is not reported. With the one PTW only, the
// jz takes its TNT bit and the flow goes on.
TEST(FlowDecoder, EventBoundToAnUnreachedIpBlocksTheNextQuery) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  for (bool second : {true, false}) {
    SCOPED_TRACE(second ? "a second PTW behind the first" : "one PTW");
    PacketEncoder enc;
    PsbPlus(enc, kBase);
    (void)enc.Next(make::Ptw(0x1234, 4, true));
    (void)enc.NextIp(PacketType::kFup, 0x402000);  // no code there: never reached
    if (second) {
      (void)enc.Next(make::Ptw(0x5678, 4, true));
      (void)enc.NextIp(PacketType::kFup, 0x402010);
    }
    (void)enc.Next(make::Tnt8(1, 1));
    ExpectHeldEventFlow(enc.bytes(), image, !second);
  }
}

// An MWAIT waits for the EXSTOP after it; with an IP both bind to the
// EXSTOP's FUP, one after the other: while the flow has not reached that
// IP the second is an event ahead of the jz's TNT (-pte_bad_query). Reached
// (the FUP at the jz), both go and the jz takes its bit.
TEST(FlowDecoder, MwaitAndExstopShareTheirFup) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  for (uint64_t fup : {uint64_t{0x402000}, kBase + 1}) {
    SCOPED_TRACE(fup == kBase + 1 ? "the FUP at the jz" : "an unreached FUP");
    PacketEncoder enc;
    PsbPlus(enc, kBase);
    (void)enc.Next(make::Mwait(1, 0));
    (void)enc.Next(make::ExStop(true));
    (void)enc.NextIp(PacketType::kFup, fup);
    (void)enc.Next(make::Tnt8(1, 1));
    const bool reached = fup == kBase + 1;
    ExpectHeldEventFlow(enc.bytes(), image, reached);
  }
}

// An MWAIT right after the TNT a branch takes, then a TNT: libipt asks for
// the MWAIT's event at once, and the event query finds no FUP for it
// (-pte_bad_query), failing the jz that took the first TNT.
TEST(FlowDecoder, MwaitWithoutItsFupFailsTheBranchBeforeIt) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  (void)enc.Next(make::Tnt8(1, 1));
  (void)enc.Next(make::Mwait(1, 0));
  (void)enc.Next(make::Pad());
  (void)enc.Next(make::Tnt8(1, 1));
  ExpectFailsAsLibipt(enc.bytes(), image, -pte_bad_query, EBADMSG, {kBase});
}

// A trace that starts at kBase, then a PSB+ in the middle of the flow (a CBR
// if `cbr`, a PIP if `pip`, MODE.Exec `mode`, a FUP at `fup`), then a TNT-8
// with one taken bit.
std::vector<uint8_t> MidFlowPsbPlus(ExecMode mode, uint64_t fup, bool cbr, bool pip) {
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  (void)enc.Next(make::Psb());
  if (cbr) (void)enc.Next(make::Cbr(0x20));
  if (pip) (void)enc.Next(make::Pip(0x12345000, false));
  (void)enc.Next(make::ModeExec(mode));
  (void)enc.NextIp(PacketType::kFup, fup);
  (void)enc.Next(make::PsbEnd());
  (void)enc.Next(make::Tnt8(1, 1));
  return enc.bytes();
}

// A PSB+ in the middle of the flow: libipt's status events at its PSBEND
// (PIP, MODE.Exec, ... bound to the FUP's IP; CBR not) wait until the flow
// reaches that IP. A FUP the flow never reaches (a corrupted one) holds the
// PIP's, with MODE.Exec's behind it: the jz's query fails (-pte_bad_query).
// At the current IP the flow goes on.
TEST(FlowDecoder, MidFlowPsbPlusEventsWaitForTheFupIp) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  for (uint64_t fup : {kBase, uint64_t{0x402000}}) {
    SCOPED_TRACE(fup == kBase ? "the FUP at the current IP" : "an unreached FUP");
    const bool reached = fup == kBase;
    ExpectHeldEventFlow(MidFlowPsbPlus(ExecMode::k64Bit, fup, true, true), image, reached);
  }
}

// A mid-flow PSB+ whose MODE.Exec contradicts the execution mode while
// tracing is enabled: libipt holds the status update until the flow gets to
// the FUP's IP, and then rejects it (pt_insn_process_exec_mode:
// -pte_bad_status_update); the mode does not change before. Here the FUP is
// at the jz: the nop runs in 64-bit mode, the jz is not reported. The same
// mode goes on as MidFlowPsbPlusEventsWaitForTheFupIp. (Relocated corpus
// case deep_notsc seed 1, corruption 3, at code base 0x555555559923: a
// corrupted MODE.Exec to 32-bit, then a PSB+ saying 64-bit; we switched
// back and ran on.)
TEST(FlowDecoder, MidFlowPsbPlusModeThatContradictsTheModeFails) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  for (const ExecMode mode : {ExecMode::k32Bit, ExecMode::k16Bit}) {
    for (const bool pip : {true, false}) {  // (without: no status event but the held MODE.Exec)
      SCOPED_TRACE(fmt::format("{}, {}", ExecModeName(mode), pip ? "a PIP" : "no PIP"));
      ExpectFailsAsLibipt(MidFlowPsbPlus(mode, kBase + 1, false, pip), image, -pte_bad_status_update, EBADMSG,
                          {kBase});
    }
  }
}

// An asynchronous FUP, then a PSB+ before its TIP: libipt's read-ahead
// queues the FUP's asynchronous branch and decodes the PSB+ without
// touching it (pt_qry_decode_fup, pt_qry_decode_psb); the TIP after the
// PSB+ completes it. Here the interrupt at the jz goes to the second nop,
// and the ret then has no packet (-pte_eos). (Corpus divergence
// compiled_everything_noretcomp_tnt64 seed 2, corruption 6, at the ASLR code
// base 0x563d385c5c30: OVF, FUP, a FUP of corrupted bytes, PSB+; we failed
// at the PSB, EBADMSG, where libipt went on to the overflow's IP.)
TEST(FlowDecoder, AsyncFupWaitsForItsTipAcrossAPsbPlus) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  (void)enc.NextIp(PacketType::kFup, kBase + 1);
  PsbPlus(enc, kBase);
  (void)enc.NextIp(PacketType::kTip, kBase + 3);
  ExpectFailsAsLibipt(enc.bytes(), image, -pte_eos, ENODATA, {kBase, kBase + 3});
}

// A branch that needs a packet while an asynchronous FUP+TIP for an IP the
// flow has not reached is held: libipt's query decoder took the pair as an
// event, which its instruction decoder holds, and the branch's query reads
// the packets after it — a TIP for an indirect jump, a TNT for a
// conditional branch — while the event stays held (pt_qry_indirect_branch,
// pt_qry_cond_branch). Then the trace ends (-pte_eos). (Corpus divergence
// compiled_o0_noretcomp seed 2, corruption 1, at the ASLR code base
// 0x563d385c5d43: a FUP of corrupted bytes and its TIP before the TIP of a
// return; we failed the return, EBADMSG.)
TEST(FlowDecoder, BranchTakesItsPacketPastAHeldAsyncFup) {
  {
    const Image image = NopJmpRax();
    PacketEncoder enc;
    PsbPlus(enc, kBase);
    (void)enc.NextIp(PacketType::kFup, 0x402000);  // never reached
    (void)enc.NextIp(PacketType::kTip, 0x500000);
    (void)enc.NextIp(PacketType::kTip, kBase);     // the jump's
    ExpectFailsAsLibipt(enc.bytes(), image, -pte_eos, ENODATA, {kBase, kBase + 1, kBase});
  }
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  (void)enc.NextIp(PacketType::kFup, 0x402000);
  (void)enc.NextIp(PacketType::kTip, 0x500000);
  (void)enc.Next(make::Tnt8(1, 1));  // the jz's: taken, to the ret
  ExpectFailsAsLibipt(enc.bytes(), image, -pte_eos, ENODATA, {kBase, kBase + 1});
}

// A FUP without an IP right after the TIP of an indirect jump: libipt's
// read-ahead after the TIP fails on it (-pte_ip_suppressed), so the jump
// that took the TIP fails and is not reported — the flow never gets to the
// TIP's target.
// SyscallDisablesAndTipPgeEnables with a bad packet (09h: no such opcode)
// right after the TIP.PGE, and with or without a PIP (a status event)
// between the TIP.PGD and the TIP.PGE: libipt reads ahead after the
// TIP.PGE, so the error comes after the Disabled event (and the PIP's) and
// before the Enabled one (the fast way through TIP.PGD/TIP.PGE keeps that
// order).
TEST(FlowDecoder, BadPacketAfterTipPgeComesBeforeTheEnabledEvent) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, std::vector<uint8_t>{0x0f, 0x05, 0x90, 0xc3}).ok());
  // A PIP after the TIP.PGE (the flow-speed helper's case): libipt still
  // fails right after the TIP.PGE, before any instruction at its target.
  for (int pip : {0, 1, 2}) {
    SCOPED_TRACE(pip == 1 ? "PIP before the TIP.PGE" : pip == 2 ? "PIP after the TIP.PGE" : "no PIP");
    PacketEncoder enc;
    PsbPlus(enc, kBase);
    (void)enc.NextIp(PacketType::kTipPgd, std::nullopt);
    if (pip == 1) (void)enc.Next(make::Pip(0x12345000, false));
    (void)enc.NextIp(PacketType::kTipPge, 0x401002);
    if (pip == 2) (void)enc.Next(make::Pip(0x12345000, false));
    std::vector<uint8_t> trace = enc.bytes();
    trace.insert(trace.end(), {0x09, 0x00, 0x00, 0x00});
    const Walk w = ExpectFailsAsLibipt(trace, image, -pte_bad_opc, EILSEQ, {0x401000});
    // (The PSB+'s MODE.Exec is an event too: libipt's status update.)
    std::vector<FlowEvent::Type> want = {FlowEvent::Type::kExecMode, FlowEvent::Type::kDisabled};
    if (pip == 1) want.push_back(FlowEvent::Type::kPaging);
    EXPECT_EQ(w.events, want);
    // (libipt loses the disabled event too — its query for the TIP.PGD
    // reads on past the TIP.PGE to the bad packet — which ours still
    // reports: an event divergence left on corrupted traces, where the bad
    // packet is an event packet further on, pt.libipt.event_before_bad_packet.)
  }
}

TEST(FlowDecoder, FupWithoutIpAfterATipFailsTheBranch) {
  const Image image = NopJmpRax();
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  (void)enc.NextIp(PacketType::kTip, 0x500000);
  (void)enc.NextIp(PacketType::kFup, std::nullopt);
  (void)enc.NextIp(PacketType::kTip, 0x401000);
  ExpectFailsAsLibipt(enc.bytes(), image, -pte_ip_suppressed, EBADMSG, {kBase});
}

// A MODE.TSX while tracing is enabled binds to the next FUP (libipt
// pt_query_decoder.c pt_qry_decode_mode_tsx). libipt's read-ahead after the
// TIP of a return stops at it (an event packet), and pt_insn_next asks for
// the event at once (pt_insn_check_ip_event): pt_qry_event decodes the
// MODE.TSX, reads on, and meets a TNT (or a TIP no event binds to) before any
// FUP: -pte_bad_query. The return that took the TIP fails and is not
// reported; the TIP's target (here without code) is never reached. (Corpus
// divergence compiled_o0_noretcomp seed 2, corruptions 4 and 7, at a code
// base whose bits 15:0 are 0x9923: a dropped byte range left TIP, MODE.TSX,
// TNT, and the TIP's IP without code; we reported the return, then ENXIO.)
// libipt binds a PTW's event to the PTWRITE instruction at its IP, at most
// one to an instruction (pt_insn_check_insn_event: bound_ptwrite), and
// moves past the instruction before it looks at the next event's IP: a
// second PTW for the same IP waits for the flow to come back there. Held,
// it blocks the next query when a third event is behind it: the jz after
// the PTWRITE meets that PTW (pt_qry_cache_tnt: -pte_bad_query) and is not
// reported. With two PTWs the jz takes its bit. (Relocated corpus case
// dispatch_ptw_fup seed 2, corruption 2, at code base 0xffff0ff0: a
// dropped FUP left a PTW on the PTWRITE's next FUP; we let both go at the
// PTWRITE and ran on.)
TEST(FlowDecoder, OnePtwPerPtwriteInstruction) {
  Image image;
  // kBase: ptwrite eax; kBase+4: jz +0; kBase+6: ret
  ASSERT_TRUE(image.AddBlob(kBase, std::vector<uint8_t>{0xf3, 0x0f, 0xae, 0xe0, 0x74, 0x00, 0xc3}).ok());
  for (const int ptws : {2, 3}) {
    SCOPED_TRACE(fmt::format("{} PTWs with a FUP at the PTWRITE", ptws));
    PacketEncoder enc;
    PsbPlus(enc, kBase);
    for (int i = 0; i < ptws; ++i) {
      (void)enc.Next(make::Ptw(0x1000 + i, 4, true));
      (void)enc.NextIp(PacketType::kFup, kBase);
    }
    (void)enc.Next(make::Tnt8(1, 1));
    if (ptws == 3) {
      ExpectFailsAsLibipt(enc.bytes(), image, -pte_bad_query, EBADMSG, {kBase});
    } else {
      ExpectFailsAsLibipt(enc.bytes(), image, -pte_eos, ENODATA, {kBase, kBase + 4});  // (the ret has no TIP)
    }
  }
}

// A PTW without an IP binds to the next PTWRITE instruction
// (pt_insn_check_insn_event: an ip_suppressed ptwrite event waits for
// pt_insn_is_ptwrite), and libipt holds it until the flow gets there: an
// event packet behind it (here a PIP) blocks the jz's query before the
// PTWRITE (-pte_bad_query). Without the PIP the jz takes its bit and the
// PTWRITE takes the PTW.
TEST(FlowDecoder, PtwWithoutIpWaitsForThePtwrite) {
  Image image;
  // kBase: nop; kBase+1: jz +0; kBase+3: ptwrite eax; kBase+7: ret
  ASSERT_TRUE(
      image.AddBlob(kBase, std::vector<uint8_t>{0x90, 0x74, 0x00, 0xf3, 0x0f, 0xae, 0xe0, 0xc3}).ok());
  for (const bool pip : {false, true}) {
    SCOPED_TRACE(pip ? "a PIP behind the PTW" : "the PTW alone");
    PacketEncoder enc;
    PsbPlus(enc, kBase);
    (void)enc.Next(make::Ptw(0x1234, 4, false));
    if (pip) (void)enc.Next(make::Pip(0x12345000, false));
    (void)enc.Next(make::Tnt8(1, 1));
    if (pip) {
      ExpectFailsAsLibipt(enc.bytes(), image, -pte_bad_query, EBADMSG, {kBase});
    } else {
      ExpectFailsAsLibipt(enc.bytes(), image, -pte_eos, ENODATA, {kBase, kBase + 1, kBase + 3});
    }
  }
}

// Two PTWs with IP=1 before one FUP both bind to it (pt_qry_decode_ptw:
// evb_fup; pt_qry_decode_fup leaves the FUP unconsumed while another event
// waits on it): libipt holds the first until the flow reaches the FUP's IP,
// and the jz before it meets the FUP still pending, -pte_bad_query.
// (Relocated corpus case dispatch_ptw_fup seed 2 at 0xffff0ff0, a dropped
// FUP: we gave the first PTW no IP and ran to the end.)
TEST(FlowDecoder, TwoPtwsBindToOneFup) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, std::vector<uint8_t>{0x74, 0x00, 0x90, 0xc3}).ok());  // jz .+2; nop; ret
  for (const bool two : {false, true}) {
    SCOPED_TRACE(two ? "two PTWs" : "one PTW");
    PacketEncoder enc;
    PsbPlus(enc, kBase);
    (void)enc.Next(make::Ptw(0x1234, 8, true));
    if (two) {
      (void)enc.Next(make::Pad());
      (void)enc.Next(make::Ptw(0x5678, 4, true));
    }
    (void)enc.NextIp(PacketType::kFup, kBase + 2);
    (void)enc.Next(make::Tnt8(1, 1));
    ExpectFailsAsLibipt(enc.bytes(), image, two ? -pte_bad_query : -pte_eos, two ? EBADMSG : ENODATA,
                        two ? std::vector<uint64_t>{} : (std::vector<uint64_t>{kBase, kBase + 2}));
  }
}

TEST(FlowDecoder, ModeTsxWithoutItsFupFailsTheBranchBeforeIt) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, std::vector<uint8_t>{0x90, 0xc3}).ok());  // nop; ret
  // A PTW or EXSTOP with IP=1 binds to the next FUP the same way
  // (pt_qry_decode_ptw, pt_qry_decode_exstop: evb_fup). (Relocated corpus
  // case dispatch_ptw_fup seeds 1 and 2 at 0xffff0ff0, a dropped byte
  // range: PTW IP:1, CYC, PAD, TIP; we reported the return and ran on.)
  for (const Packet& waiting : {make::ModeTsx(true, false), make::Ptw(0x1234, 8, true), make::ExStop(true)}) {
    for (const bool tip : {false, true}) {
      SCOPED_TRACE(fmt::format("{}, then a {}", PacketName(waiting.type), tip ? "TIP" : "TNT"));
      PacketEncoder enc;
      PsbPlus(enc, kBase);
      (void)enc.NextIp(PacketType::kTip, 0x500000);  // the ret's target: no code there
      (void)enc.Next(waiting);
      (void)enc.Next(make::Cyc(3));
      (void)enc.Next(make::Pad());
      if (tip) {
        (void)enc.NextIp(PacketType::kTip, kBase);
      } else {
        (void)enc.Next(make::Tnt8(1, 1));
      }
      ExpectFailsAsLibipt(enc.bytes(), image, -pte_bad_query, EBADMSG, {kBase});
    }
  }
  // The event query reads on past the MODE.TSX at once: an unknown opcode
  // there (-pte_bad_opc) fails the return too. (Corpus divergence
  // compiled_everything seed 2, corruption 4, at code base 0x555555559923:
  // after a TIP.PGE to an IP without code; we failed there, ENXIO.)
  {
    PacketEncoder bad;
    PsbPlus(bad, kBase);
    (void)bad.NextIp(PacketType::kTip, 0x500000);
    (void)bad.Next(make::ModeTsx(true, true));
    ExpectFailsAsLibipt(WithBadOpcode(bad), image, -pte_bad_opc, EILSEQ, {kBase});
  }
  // A MODE.Exec binds to the next TIP (pt_qry_decode_mode_exec): a TNT
  // before it fails its event query the same way. (Relocated corpus case
  // deep_cyc seed 1, corruption 6, at code base 0x555555559923.)
  {
    PacketEncoder bad;
    PsbPlus(bad, kBase);
    (void)bad.NextIp(PacketType::kTip, 0x500000);
    (void)bad.Next(make::ModeExec(ExecMode::k64Bit));
    (void)bad.Next(make::Cyc(3));
    (void)bad.Next(make::Tnt8(1, 1));
    ExpectFailsAsLibipt(bad.bytes(), image, -pte_bad_query, EBADMSG, {kBase});
  }
  // With its FUP, the MODE.TSX is an event at the FUP's IP, and the flow
  // goes on to the TIP's target.
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  (void)enc.NextIp(PacketType::kTip, kBase);
  (void)enc.Next(make::ModeTsx(true, false));
  (void)enc.NextIp(PacketType::kFup, kBase);
  (void)enc.NextIp(PacketType::kTip, kBase);
  ExpectFailsAsLibipt(enc.bytes(), image, -pte_eos, ENODATA, {kBase, kBase + 1, kBase, kBase + 1, kBase});
}

// A TIP.PGD or FUP+TIP while tracing is disabled (after a PSB+ without a
// FUP): an event libipt's instruction decoder cannot bind, and pt_insn_next
// answers from the read-ahead after it — the end of the trace when only
// timing packets follow (-pte_eos; a corpus divergence, issue 7), the packet
// error it met (-pte_bad_opc), or -pte_no_enable when another packet (here a
// TIP.PGE) follows.
TEST(FlowDecoder, IpEventWhileDisabledEndsAsLibiptsReadAheadDoes) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  struct Case {
    const char* name;
    bool fup;          // FUP+TIP rather than TIP.PGD
    int after;         // 0: timing to the end, 1: an unknown opcode, 2: a TIP.PGE
    int libipt, ours;  // the first error
  };
  for (const Case& c : {Case{"TIP.PGD, timing, end", false, 0, -pte_eos, ENODATA},
                        Case{"TIP.PGD, timing, unknown opcode", false, 1, -pte_bad_opc, EILSEQ},
                        Case{"TIP.PGD, TIP.PGE", false, 2, -pte_no_enable, EBADMSG},
                        Case{"FUP+TIP, timing, end", true, 0, -pte_eos, ENODATA},
                        Case{"FUP+TIP, TIP.PGE", true, 2, -pte_no_enable, EBADMSG}}) {
    SCOPED_TRACE(c.name);
    PacketEncoder enc;
    PsbPlus(enc, std::nullopt);
    (void)enc.Next(make::Cyc(0xb));
    if (c.fup) {
      (void)enc.NextIp(PacketType::kFup, kBase + 1);
      (void)enc.NextIp(PacketType::kTip, kBase);
    } else {
      (void)enc.NextIp(PacketType::kTipPgd, std::nullopt);
    }
    (void)enc.Next(make::Cyc(0x23));
    (void)enc.Next(make::Mtc(2));
    if (c.after == 2) (void)enc.NextIp(PacketType::kTipPge, kBase);
    std::vector<uint8_t> trace = enc.Release();
    if (c.after == 1) trace.push_back(0xc9);  // not an opcode
    ExpectSameFlowAsLibipt(trace, image, c.libipt);
    Walk w = Decode(trace, image);
    EXPECT_EQ(w.err, c.ours);
    EXPECT_TRUE(w.ips.empty());
  }
}

// After a PSB+ libipt reads ahead through PAD and timing packets, and its
// events for the PSBEND (MODE.Exec, MODE.TSX, PIP, VMCS, CBR, MNT) are
// fetched one by one before the first instruction, each fetch reading on.
// What the read-ahead meets:
//   - the end of the trace: with no PSB+ event libipt's synchronization
//     fails (-pte_eos: no sync point at all; a corpus divergence, issue 7);
//     with one, the flow runs to the branch that needs a packet;
//   - an unknown opcode (-pte_bad_opc): with at most one PSB+ event the
//     synchronization fails; with two, it succeeds and the error comes
//     before the first instruction.
TEST(FlowDecoder, PsbPlusReadAheadAsLibipt) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  for (bool bad_opcode : {false, true}) {
    for (int events : {0, 1, 2}) {
      SCOPED_TRACE(fmt::format("{} PSB+ event(s), then PAD and timing and {}", events,
                               bad_opcode ? "an unknown opcode" : "the end"));
      PacketEncoder enc;
      (void)enc.Next(make::Psb());
      (void)enc.Next(make::Tsc(0x10000000));
      (void)enc.Next(make::Tma(0, 0x123));
      if (events >= 2) (void)enc.Next(make::Cbr(0x20));
      if (events >= 1) (void)enc.Next(make::ModeExec(ExecMode::k64Bit));
      (void)enc.NextIp(PacketType::kFup, kBase);
      (void)enc.Next(make::PsbEnd());
      (void)enc.Next(make::Pad());
      (void)enc.Next(make::Mtc(1));
      std::vector<uint8_t> trace = enc.Release();
      if (bad_opcode) trace.push_back(0xc9);  // not an opcode
      testing::FlowLog ours = testing::OurInsnFlow(trace, image);
      testing::FlowLog ref = testing::LibiptInsnFlow(trace, image);
      EXPECT_EQ(testing::DiffFlow(ours, ref), "");
      // libipt's log: whether it synchronized, and its first error.
      const bool libipt_synced = !ref.entries.empty() && ref.entries[0].kind == testing::FlowEntry::kSync;
      EXPECT_EQ(libipt_synced, bad_opcode ? events >= 2 : events >= 1);
      if (!bad_opcode && events == 0) {
        EXPECT_TRUE(ref.entries.empty()) << "libipt: -pte_eos at the sync";
      }
      if (bad_opcode) {
        ASSERT_FALSE(ref.entries.empty());
        EXPECT_EQ(ref.entries[libipt_synced ? 1 : 0].kind, testing::FlowEntry::kError);
        EXPECT_EQ(ref.entries[libipt_synced ? 1 : 0].code, -pte_bad_opc);
      }
      FlowDecoder dec(trace, &image, FlowDecoder::Options{.libipt_errors = true});
      Result<uint64_t> s = dec.SyncForward();
      EXPECT_EQ(s.ok(), libipt_synced) << s.ToString();
      if (!s.ok()) {
        EXPECT_EQ(s.error(), bad_opcode ? EILSEQ : ENODATA) << s.ToString();
        continue;
      }
      Walk w = Decode(trace, image);
      EXPECT_EQ(w.err, bad_opcode ? EILSEQ : ENODATA);
      EXPECT_EQ(w.ips, bad_opcode ? std::vector<uint64_t>{} : std::vector<uint64_t>{kBase});
    }
  }
}

// An MWAIT waits for the next FUP even without its EXSTOP (libipt queues it
// for a FUP, pt_qry_decode_mwait): a later FUP gives its IP and is no
// asynchronous event. Unreached, the MWAIT holds the PWRX behind it, and
// the return's query meets that event (-pte_bad_query); at the current IP
// both go and the jz takes its bit (the return then ends the flow, -pte_eos). A corpus
// divergence (a corrupted EXSTOP), issue 7.
TEST(FlowDecoder, MwaitBindsToTheNextFupWithoutItsExstop) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  for (uint64_t fup : {uint64_t{0x402000}, kBase + 1}) {
    const bool reached = fup == kBase + 1;
    SCOPED_TRACE(reached ? "the FUP at the jz" : "an unreached FUP");
    PacketEncoder enc;
    PsbPlus(enc, kBase);
    (void)enc.Next(make::Mwait(0x20, 1));
    (void)enc.Next(make::Pwre(2, 0, false));
    (void)enc.NextIp(PacketType::kFup, fup);
    (void)enc.Next(make::Pwrx(2, 2, 1));
    (void)enc.Next(make::Tnt8(1, 1));
    ExpectHeldEventFlow(enc.bytes(), image, reached);
  }
}

// An OVF drops what libipt's query decoder holds for a packet still to come
// (pt_qry_decode_ovf resets it, its event queue included): an MWAIT whose
// FUP never came (its EXSTOP lost) waits no more, so a FUP after the
// overflow's own is an asynchronous FUP again — here with a TIP.PGD without
// an IP, tracing stops at the jz (FUP IP) before it runs, a TIP.PGE resumes
// there and the jz takes its bit. Were the MWAIT still waiting, the FUP
// would give it its IP, the TIP.PGD would bind to far transfers only, and
// the jz's query would fail behind it. A corpus divergence (a corrupted
// EXSTOP, then an overflow), issue 7.
TEST(FlowDecoder, OverflowDropsAnMwaitWaitingForItsFup) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  (void)enc.Next(make::Mwait(0x20, 1));
  (void)enc.Next(make::Ovf());
  // The overflow resolved: tracing goes on at kBase (a full IP: no IP
  // compression across an OVF).
  (void)enc.Next(make::Fup(IpBytes::kSext48, kBase));
  (void)enc.NextIp(PacketType::kFup, kBase + 1);
  (void)enc.NextIp(PacketType::kTipPgd, std::nullopt);
  (void)enc.NextIp(PacketType::kTipPge, kBase + 1);
  (void)enc.Next(make::Tnt8(1, 1));
  const Walk w = ExpectFailsAsLibipt(enc.bytes(), image, -pte_eos, ENODATA, {kBase, kBase + 1});
  EXPECT_EQ(std::count(w.events.begin(), w.events.end(), FlowEvent::Type::kAsyncDisabled), 1);
}

// The same for a MODE.Exec waiting for its TIP (the TIP after the overflow
// is the return's, in the mode before: 48 90 is one instruction in 64-bit
// mode, two in 32-bit mode) and for an asynchronous FUP waiting for its TIP
// across an event packet (the TIP after the overflow is the return's, no
// asynchronous branch from the FUP's IP).
TEST(FlowDecoder, OverflowDropsEventsWaitingForTheirTip) {
  // kBase: nop; ret. 0x401010: rex.w nop (64-bit; 32-bit: dec eax; nop); ret.
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, std::vector<uint8_t>{0x90, 0xc3}).ok());
  ASSERT_TRUE(image.AddBlob(0x401010, std::vector<uint8_t>{0x48, 0x90, 0xc3}).ok());
  for (bool mode : {true, false}) {
    SCOPED_TRACE(mode ? "MODE.Exec before the OVF" : "FUP and PWRE before the OVF");
    PacketEncoder enc;
    PsbPlus(enc, kBase);
    if (mode) {
      (void)enc.Next(make::ModeExec(ExecMode::k32Bit));
    } else {
      (void)enc.NextIp(PacketType::kFup, 0x402000);
      (void)enc.Next(make::Pwre(2, 0, false));
    }
    (void)enc.Next(make::Ovf());
    (void)enc.Next(make::Fup(IpBytes::kSext48, kBase));
    (void)enc.NextIp(PacketType::kTip, 0x401010);
    ExpectFailsAsLibipt(enc.bytes(), image, -pte_eos, ENODATA, {kBase, kBase + 1, 0x401010});
  }
}

// A mid-flow PSB+ right after a TIP.PGE, its FUP at the IP where tracing
// began (nothing ran there yet): libipt's instruction decoder takes the
// PSB+'s status updates bound to that IP (MODE.Exec) at once, the flow being
// there (pt_insn_check_ip_event), and the CBR behind them; an overflow, an
// asynchronous branch or an asynchronous disable there then leaves that IP
// with nothing held. We held them for the flow to reach the IP again, and
// the jz's query failed behind them (-pte_bad_query). Found by the flow
// benchmark's trace with 200 functions (bench/pt_bench.cc): a SYSCALL's
// TIP.PGE, a PSB+, then an OVF.
TEST(FlowDecoder, PsbPlusAtTheEnableIpIsTakenBeforeAnEventLeavesIt) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  for (int v : {0, 1, 2}) {
    SCOPED_TRACE(v == 0 ? "OVF" : v == 1 ? "FUP+TIP" : "FUP+TIP.PGD, TIP.PGE");
    PacketEncoder enc;
    PsbPlus(enc, std::nullopt);
    (void)enc.NextIp(PacketType::kTipPge, kBase);
    (void)enc.Next(make::Psb());
    (void)enc.Next(make::ModeExec(ExecMode::k64Bit));
    (void)enc.Next(make::Cbr(0x1d));
    (void)enc.NextIp(PacketType::kFup, kBase);
    (void)enc.Next(make::PsbEnd());
    if (v == 0) {
      (void)enc.Next(make::Ovf());
      (void)enc.Next(make::Fup(IpBytes::kSext48, kBase + 1));
    } else if (v == 1) {
      (void)enc.NextIp(PacketType::kFup, kBase);
      (void)enc.NextIp(PacketType::kTip, kBase + 1);
    } else {
      (void)enc.NextIp(PacketType::kFup, kBase);
      (void)enc.NextIp(PacketType::kTipPgd, std::nullopt);
      (void)enc.NextIp(PacketType::kTipPge, kBase + 1);
    }
    (void)enc.Next(make::Tnt8(1, 1));
    ExpectFailsAsLibipt(enc.bytes(), image, -pte_eos, ENODATA, {kBase + 1});
  }
  // A status update that contradicts the mode fails there, before the
  // overflow (pt_insn_process_exec_mode: -pte_bad_status_update).
  PacketEncoder enc;
  PsbPlus(enc, std::nullopt);
  (void)enc.NextIp(PacketType::kTipPge, kBase);
  (void)enc.Next(make::Psb());
  (void)enc.Next(make::ModeExec(ExecMode::k32Bit));
  (void)enc.NextIp(PacketType::kFup, kBase);
  (void)enc.Next(make::PsbEnd());
  (void)enc.Next(make::Ovf());
  (void)enc.Next(make::Fup(IpBytes::kSext48, kBase + 1));
  (void)enc.Next(make::Tnt8(1, 1));
  ExpectFailsAsLibipt(enc.bytes(), image, -pte_bad_status_update, EBADMSG, {});
}

// A CBR of 0 (no core:bus ratio) in a PSB+: libipt's time update rejects it
// (-pte_bad_packet) and the synchronization at that PSB fails; decoding
// goes on at the next PSB. A corpus divergence, issue 7.
TEST(FlowDecoder, CbrZeroInThePsbPlusFailsTheSync) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  PacketEncoder enc;
  (void)enc.Next(make::Psb());
  (void)enc.Next(make::Cbr(0));
  (void)enc.Next(make::ModeExec(ExecMode::k64Bit));
  (void)enc.NextIp(PacketType::kFup, kBase);
  (void)enc.Next(make::PsbEnd());
  (void)enc.Next(make::Tnt8(1, 1));
  PsbPlus(enc, kBase);
  (void)enc.Next(make::Tnt8(0, 1));
  ExpectSameFlowAsLibipt(enc.bytes(), image, -pte_bad_packet);
  FlowDecoder dec(enc.bytes(), &image);
  Result<uint64_t> s = dec.SyncForward();
  EXPECT_EQ(s.error(), EBADMSG) << s.ToString();
  EXPECT_EQ(dec.error_offset(), 0u);
  s = dec.SyncForward();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_GT(*s, 0u);
}

// No execution mode: libipt's instruction decoder starts each sync with
// the mode unknown (pt_insn_reset: ptem_unknown) until a MODE.Exec gives
// one, and a MODE.Exec with the reserved CS.L=1 CS.D=1 gives none either;
// it decodes no instruction then (-pte_bad_insn), but where no code is
// mapped it says so first (-pte_nomap). We walked on in the mode of the
// previous sync (64-bit at first). A corpus divergence (a corrupted trace
// of a config without MODE.Exec in its PSB+), issue 7.
TEST(FlowDecoder, NoExecutionModeDecodesNoInstruction) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  for (int v : {0, 1, 2}) {
    SCOPED_TRACE(v == 0 ? "no MODE.Exec" : v == 1 ? "the reserved mode" : "no MODE.Exec, no code at the FUP");
    PacketEncoder enc;
    (void)enc.Next(make::Psb());
    if (v == 1) (void)enc.Next(make::ModeExec(ExecMode::kInvalid));
    (void)enc.NextIp(PacketType::kFup, v == 2 ? 0x402000 : kBase);
    (void)enc.Next(make::PsbEnd());
    (void)enc.Next(make::Tnt8(1, 1));
    ExpectFailsAsLibipt(enc.bytes(), image, v == 2 ? -pte_nomap : -pte_bad_insn, v == 2 ? ENXIO : EILSEQ, {});
  }
}


// A conditional branch with no TNT bit cached, and the next packet a TIP
// cut by the end of the trace (a truncated or corrupted trace): libipt's TNT
// query (pt_qry_cond_branch -> pt_qry_cache_tnt) knows the next packet by
// its opcode alone (pt_df_fetch) and fails at a TIP no event binds to
// before it decodes the TIP's IP bytes: -pte_bad_query, not the -pte_eos of
// a packet cut by the end (pt_pkt_read_ip). Behind a TNT bit the jz takes,
// the TIP is the ret's, and its query decodes it (-pte_eos). (Corpus
// divergence at random code bases: ours was EMSGSIZE.)
TEST(FlowDecoder, CondBranchFailsAtATipCutByTheEndOfTheTrace) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  for (int v = 0; v < 4; ++v) {
    SCOPED_TRACE(fmt::format("variant {}", v));
    PacketEncoder enc;
    PsbPlus(enc, kBase);
    if (v == 1) (void)enc.Next(make::Cyc(3));
    if (v == 2) (void)enc.Next(make::Ptw(0x1234, 4, false));
    if (v == 3) (void)enc.Next(make::Tnt8(1, 1));
    (void)enc.NextIp(PacketType::kTip, 0x12345678);
    std::vector<uint8_t> trace = enc.bytes();
    trace.pop_back();  // the TIP's last IP byte
    if (v == 3) {
      ExpectFailsAsLibipt(trace, image, -pte_eos, EMSGSIZE, {kBase, kBase + 1});
    } else {
      ExpectFailsAsLibipt(trace, image, -pte_bad_query, EBADMSG, {kBase});
    }
  }
}

// The same behind an asynchronous FUP+TIP whose FUP IP the flow never
// reaches (held: the branch's query reads the packets after the TIP): a
// TIP, TIP.PGE or TIP.PGD cut by the end of the trace is met by the jz's
// TNT query before its IP bytes are read (pt_qry_cache_tnt, pt_qry_will_event:
// -pte_bad_query); ours was the end of the trace (ENODATA). Behind a TNT bit
// the ret's query decodes a cut TIP (pt_qry_indirect_branch: -pte_eos).
TEST(FlowDecoder, CondBranchPastHeldAsyncFailsAtACutTip) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  for (bool tnt : {false, true}) {
    for (PacketType t : {PacketType::kTip, PacketType::kTipPge, PacketType::kTipPgd}) {
      SCOPED_TRACE(fmt::format("{}{}", tnt ? "TNT, " : "", PacketName(t)));
      PacketEncoder enc;
      PsbPlus(enc, kBase);
      if (tnt) (void)enc.Next(make::Tnt8(1, 1));
      (void)enc.NextIp(PacketType::kFup, kBase + 0x100);
      (void)enc.NextIp(PacketType::kTip, kBase + 0x200);
      (void)enc.NextIp(t, 0x12345678);
      std::vector<uint8_t> trace = enc.bytes();
      trace.pop_back();  // the last IP byte
      testing::FlowLog ours = testing::OurInsnFlow(trace, image);
      testing::FlowLog ref = testing::LibiptInsnFlow(trace, image);
      EXPECT_EQ(testing::DiffFlowThroughFirstError(ours, ref), "");
      const bool eos = tnt && t == PacketType::kTip;
      const Walk w = Decode(trace, image);
      EXPECT_EQ(w.err, eos ? ENODATA : EBADMSG);
    }
  }
}

}  // namespace
}  // namespace perftest::pt
