// FlowDecoder against libipt's event query (issue 7, corpus divergences):
// libipt's instruction decoder asks for an event as soon as its query
// decoder's read-ahead stops at an event packet (pt_insn_check_ip_event ->
// pt_qry_event), and the event query reads on past it — what it meets there
// fails the branch before; an asynchronous FUP waits for its TIP on a queue
// (evb_tip) that TNTs and further FUPs do not disturb; an MWAIT's event waits
// for its FUP, and an OVF drops it. The expected flow and events come from
// libipt's pt_insn_next and pt_insn_event at test time.
#include "harness/pt/flow_decoder.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "harness/pt/flow_decoder_test_support.h"
#include "harness/pt/packet_encoder.h"
#include "harness/pt/testing/libipt_flow.h"

namespace perftest::pt {
namespace {

using flow_test::Decode;
using flow_test::ExpectFailsAsLibipt;
using flow_test::ExpectSameEventsAsLibipt;
using flow_test::ExpectSameFlowAsLibipt;
using flow_test::kBase;
using flow_test::kCondRet;
using flow_test::NopJmpRax;
using flow_test::PsbPlus;
using flow_test::Walk;
using flow_test::WithBadOpcode;

// An MWAIT right after a TIP: the indirect branch that took it is followed
// by the MWAIT (and timing) and then a TNT or a TIP; libipt's event query for the MWAIT
// meets the TNT (pt_qry_event: a TNT or TIP with no event bound to it,
// -pte_bad_query) and fails that branch. A corpus divergence (a corrupted
// MWAIT after a TIP), issue 7.
TEST(FlowDecoder, MwaitWithoutItsFupFailsTheIndirectBranchBeforeIt) {
  const Image image = NopJmpRax();
  for (bool tip : {false, true}) {
    SCOPED_TRACE(tip ? "a TIP after the MWAIT" : "a TNT after the MWAIT");
    PacketEncoder enc;
    PsbPlus(enc, kBase);
    (void)enc.NextIp(PacketType::kTip, kBase);
    (void)enc.Next(make::Cyc(3));
    (void)enc.Next(make::Mwait(0x20, 1));
    (void)enc.Next(make::Mtc(1));
    if (tip) {
      (void)enc.NextIp(PacketType::kTip, kBase);
    } else {
      (void)enc.Next(make::Tnt8(1, 1));
    }
    ExpectFailsAsLibipt(enc.bytes(), image, -pte_bad_query, EBADMSG, {kBase});
  }
}

// An asynchronous FUP, then a TNT before its TIP: libipt's read-ahead
// decodes the FUP (nothing waits for a FUP: it queues the asynchronous
// branch, bound to the next TIP) and the TNT's bits go to the branches on
// the way to the FUP's IP; the TIP after them is the asynchronous branch's
// (the event shows once the bits are used: a FUP IP passed before that —
// the jz's — is never reached, and the return's query fails behind it, at
// the end of the trace). A
// corpus divergence (bytes dropped between a FUP and its TIP.PGD), issue 7.
TEST(FlowDecoder, AsyncFupWaitsForItsTipPastATnt) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  for (uint64_t fup : {kBase + 4, kBase + 1}) {
    SCOPED_TRACE(fmt::format("FUP at {:#x}", fup));
    PacketEncoder enc;
    PsbPlus(enc, kBase);
    (void)enc.NextIp(PacketType::kFup, fup);
    (void)enc.Next(make::Cyc(3));
    (void)enc.Next(make::Tnt8(1, 1));
    (void)enc.NextIp(PacketType::kTip, kBase + 3);
    const std::vector<uint64_t> want =
        fup == kBase + 4 ? std::vector<uint64_t>{kBase, kBase + 1, kBase + 3} : std::vector<uint64_t>{kBase, kBase + 1};
    ExpectFailsAsLibipt(enc.bytes(), image, -pte_eos, ENODATA, want);
  }
}

// Two asynchronous FUPs waiting for one TIP.PGD: libipt queues both on
// evb_tip; the TIP.PGD gives the first its disable event and stays for the
// second (pt_qry_decode_tip_pgd consumes it only with the last). The first
// FUP's IP is never reached, so the return after the jz queries on and
// meets the TIP.PGD again (-pte_bad_query); with one FUP only the TIP.PGD
// is gone and the return finds the end of the trace (-pte_eos). A corpus
// divergence (a corrupted FUP early in the trace), issue 7.
TEST(FlowDecoder, SecondAsyncFupKeepsTheTipForItself) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  for (bool second : {true, false}) {
    SCOPED_TRACE(second ? "two FUPs" : "one FUP");
    PacketEncoder enc;
    PsbPlus(enc, kBase);
    (void)enc.NextIp(PacketType::kFup, 0x402000);
    (void)enc.Next(make::Tnt8(1, 1));
    if (second) (void)enc.NextIp(PacketType::kFup, kBase + 3);
    (void)enc.NextIp(PacketType::kTipPgd, std::nullopt);
    ExpectFailsAsLibipt(enc.bytes(), image, second ? -pte_bad_query : -pte_eos, second ? EBADMSG : ENODATA,
                        {kBase, kBase + 1});
  }
}

// A trace for kCondRet (at kBase: nop; jz +1; nop; ret): two asynchronous FUPs, at
// kBase + 1 and `second`, then their `ctl` (TIP or TIP.PGD) to kBase and a
// TNT-8 with one taken bit.
std::vector<uint8_t> TwoAsyncFups(uint64_t second, PacketType ctl) {
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  (void)enc.NextIp(PacketType::kFup, kBase + 1);
  (void)enc.NextIp(PacketType::kFup, second);
  (void)enc.NextIp(ctl, kBase);
  (void)enc.Next(make::Tnt8(1, 1));
  return enc.bytes();
}

// Two asynchronous FUPs, then their TIP, with the first FUP's IP reached:
// libipt's TIP gives the first its branch and stays (pt_qry_decode_tip
// consumes it only with the last event on evb_tip), so the second is an
// asynchronous branch from its own IP to the same TIP target. At the jz
// (second FUP there): the flow goes back to the nop once more, then the jz
// takes the TNT and the return meets the end of the trace; at the nop after
// the jz (never reached: the jz is taken), the same without the second
// branch. We dropped the second FUP (and failed at a FUP right after a
// FUP).
TEST(FlowDecoder, SecondAsyncFupBranchesToTheSameTip) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  for (uint64_t second : {kBase + 1, kBase + 3}) {
    SCOPED_TRACE(fmt::format("second FUP at {:#x}", second));
    const std::vector<uint8_t> trace = TwoAsyncFups(second, PacketType::kTip);
    const bool reached = second == kBase + 1;
    const std::vector<uint64_t> want = reached ? std::vector<uint64_t>{kBase, kBase, kBase, kBase + 1}
                                               : std::vector<uint64_t>{kBase, kBase, kBase + 1};
    const flow_test::Walk w = ExpectFailsAsLibipt(trace, image, -pte_eos, ENODATA, want);
    EXPECT_EQ(std::count(w.events.begin(), w.events.end(), FlowEvent::Type::kAsyncBranch), reached ? 2 : 1);
  }
}

// The same before a TIP.PGD: the first FUP's disable keeps the TIP.PGD for
// the second (pt_qry_decode_tip_pgd), whose event comes while tracing is
// disabled — libipt rejects it (-pte_bad_context); with the second FUP's IP
// never reached, the flow waits for an enable that does not come
// (-pte_no_enable). A guard for the FUP-after-FUP path (before it, ours
// failed at the second FUP: the same instructions and error class).
TEST(FlowDecoder, SecondAsyncFupBeforeATipPgd) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  for (uint64_t second : {kBase + 1, kBase + 3}) {
    SCOPED_TRACE(fmt::format("second FUP at {:#x}", second));
    ExpectFailsAsLibipt(TwoAsyncFups(second, PacketType::kTipPgd), image, second == kBase + 1 ? -pte_bad_context : -pte_no_enable, EBADMSG,
                        {kBase});
  }
}

// A TraceStop while tracing is enabled (a corrupted trace: TraceStop comes
// after the TIP.PGD that disables tracing): libipt's instruction decoder
// rejects its event (pt_insn_process_stop: -pte_bad_context), here right
// after the indirect branch that took the TIP before it, whatever follows
// (a TNT, the end of the trace). After a TIP.PGD it is an ordinary event. A
// corpus divergence (bytes dropped before a TraceStop), issue 7.
TEST(FlowDecoder, TraceStopWhileTracingIsEnabledFails) {
  const Image image = NopJmpRax();
  for (bool disabled : {false, true}) {
    for (bool tnt : {false, true}) {
      SCOPED_TRACE(fmt::format("{}, {}", disabled ? "after a TIP.PGD" : "after a TIP", tnt ? "then a TNT" : "the end"));
      PacketEncoder enc;
      PsbPlus(enc, kBase);
      (void)enc.NextIp(disabled ? PacketType::kTipPgd : PacketType::kTip, kBase);
      (void)enc.Next(make::Cyc(3));
      (void)enc.Next(make::TraceStop());
      if (tnt) (void)enc.Next(make::Tnt8(1, 1));
      if (disabled) {
        ExpectSameEventsAsLibipt(enc.bytes(), image, {FlowEvent::Type::kDisabled, FlowEvent::Type::kStop});
      } else {
        ExpectFailsAsLibipt(enc.bytes(), image, -pte_bad_context, EBADMSG, {kBase, kBase + 1});
      }
    }
  }
}

// The same after a TNT: the TraceStop's event goes once the TNT's bits are
// used (libipt's read-ahead stops at it), before the return after the jz.
TEST(FlowDecoder, TraceStopAfterATntFailsBeforeTheNextBranch) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  (void)enc.Next(make::Tnt8(1, 1));
  (void)enc.Next(make::TraceStop());
  (void)enc.NextIp(PacketType::kTip, kBase);
  ExpectFailsAsLibipt(enc.bytes(), image, -pte_bad_context, EBADMSG, {kBase, kBase + 1});
}

// A TIP.PGE right after a TIP while tracing is enabled (a corrupted
// trace), or a TIP.PGD: libipt asks for its event at once, and the event
// query reads ahead past it (pt_qry_event -> pt_qry_read_ahead): an unknown
// opcode after its timing packets fails the indirect branch that took the
// TIP (-pte_bad_opc). Corpus divergences, issue 7.
TEST(FlowDecoder, BadPacketAfterAMidFlowTipPgeFailsTheBranchBefore) {
  const Image image = NopJmpRax();
  for (PacketType type : {PacketType::kTipPge, PacketType::kTipPgd}) {
    SCOPED_TRACE(PacketName(type));
    PacketEncoder enc;
    PsbPlus(enc, kBase);
    (void)enc.NextIp(PacketType::kTip, kBase);
    (void)enc.NextIp(type, 0x402000);
    (void)enc.Next(make::Cyc(20));
    ExpectFailsAsLibipt(WithBadOpcode(enc), image, -pte_bad_opc, EILSEQ, {kBase});
  }
}

// An MWAIT's event is libipt's when its FUP comes (pt_qry_decode_mwait
// queues it for a FUP; pt_qry_decode_fup publishes it, before the EXSTOP
// queued after it and after the PWRE between them, which is reported at
// once), and an OVF before its FUP drops it unreported (pt_qry_decode_ovf
// resets the event queue). We reported it when we read the MWAIT.
TEST(FlowDecoder, MwaitEventComesWithItsFupAndNotAfterAnOverflow) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  const std::vector<FlowEvent::Type> power = {FlowEvent::Type::kMwait, FlowEvent::Type::kPwre,
                                              FlowEvent::Type::kExStop, FlowEvent::Type::kPwrx,
                                              FlowEvent::Type::kOverflow};
  for (bool overflow : {false, true}) {
    SCOPED_TRACE(overflow ? "an OVF before the MWAIT's FUP" : "MWAIT, PWRE, EXSTOP, FUP");
    PacketEncoder enc;
    PsbPlus(enc, kBase);
    (void)enc.Next(make::Mwait(0x20, 1));
    (void)enc.Next(make::Pwre(2, 0, false));
    if (overflow) {
      (void)enc.Next(make::Ovf());
      (void)enc.Next(make::Fup(IpBytes::kSext48, kBase));
    } else {
      (void)enc.Next(make::ExStop(true));
      (void)enc.NextIp(PacketType::kFup, kBase);
      (void)enc.Next(make::Pwrx(2, 2, 1));
    }
    (void)enc.Next(make::Tnt8(1, 1));
    const std::vector<FlowEvent::Type> ours = ExpectSameEventsAsLibipt(enc.bytes(), image, power);
    EXPECT_EQ(std::count(ours.begin(), ours.end(), FlowEvent::Type::kMwait), overflow ? 0 : 1);
  }
}

// An MWAIT and an EXSTOP waiting for one FUP whose IP the flow does not
// reach, read ahead after a TIP, then a TNT and a bad packet: libipt
// publishes the MWAIT at the FUP and holds it, the EXSTOP still waits for
// that FUP (pt_qry_decode_fup consumes it with the last event), so the jz's
// query meets the FUP first (pt_qry_cache_tnt: an event ahead,
// -pte_bad_query), not the bad packet after the TNT. A corpus divergence
// (a corrupted FUP), issue 7.
TEST(FlowDecoder, HeldEventsBeforeAReadAheadErrorFailTheBranchFirst) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, std::vector<uint8_t>{0x90, 0xff, 0xe0}).ok());  // nop; jmp *%rax
  ASSERT_TRUE(image.AddBlob(0x401010, kCondRet).ok());
  for (bool tip : {true, false}) {
    SCOPED_TRACE(tip ? "after a TIP" : "after the PSB+");
    PacketEncoder enc;
    PsbPlus(enc, tip ? kBase : 0x401010);
    if (tip) (void)enc.NextIp(PacketType::kTip, 0x401010);
    (void)enc.Next(make::Mwait(0x20, 1));
    (void)enc.Next(make::Pwre(2, 0, false));
    (void)enc.Next(make::ExStop(true));
    (void)enc.NextIp(PacketType::kFup, 0x402000);
    (void)enc.Next(make::Tnt8(1, 1));
    const std::vector<uint64_t> ips =
        tip ? std::vector<uint64_t>{kBase, kBase + 1, 0x401010} : std::vector<uint64_t>{0x401010};
    ExpectFailsAsLibipt(WithBadOpcode(enc), image, -pte_bad_query, EBADMSG, ips);
  }
}

// While tracing is disabled, a TIP.PGD after a MODE.Exec is the TIP the
// MODE.Exec waits for: libipt gives the exec-mode event bound to it and no
// disable event (pt_qry_decode_tip_pgd), no error; a TIP.PGE then enables
// tracing. A corpus divergence (bytes dropped between a MODE.Exec and its
// TIP.PGE), issue 7.
TEST(FlowDecoder, TipPgdWhileDisabledIsTheTipOfAModeExec) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  (void)enc.NextIp(PacketType::kFup, kBase + 1);
  (void)enc.NextIp(PacketType::kTipPgd, std::nullopt);  // disabled at the jz
  (void)enc.Next(make::ModeExec(ExecMode::k64Bit));
  (void)enc.NextIp(PacketType::kTipPgd, std::nullopt);
  (void)enc.Next(make::ModeExec(ExecMode::k64Bit));
  (void)enc.NextIp(PacketType::kTipPge, kBase + 1);
  (void)enc.Next(make::Tnt8(1, 1));
  ExpectFailsAsLibipt(enc.bytes(), image, -pte_eos, ENODATA, {kBase, kBase + 1});
}

// The read-ahead after a TNT (CheckAhead(), EventQueryAfterTnt()) is mostly
// answered from the clean stretch (CleanAhead(): regions of the packets
// ahead, one from the decoder's position and one after each of the next
// PSB+s, checked together): a packet error just past a TNT fails the same
// branch as libipt's wherever that TNT falls against the regions — after
// runs of taken TNT bits split by mid-flow PSB+s (more of them than the
// stretch holds at once), a few packets on from the last PSB+, with the
// error right after the TNT, after a CYC, after a TIP.PGD and a TSC (the
// event query past it), or after the next TNT.
// (Not past a PSB+ right after the TNT: libipt's read-ahead goes on through
// it and fails the branch, ours does not — as before the stretch.)
TEST(FlowDecoder, ReadAheadErrorAfterATntWhereverTheCleanStretchEnds) {
  Image image;  // kBase: jz kBase (taken: the loop again); ret
  ASSERT_TRUE(image.AddBlob(kBase, std::vector<uint8_t>{0x74, 0xfe, 0xc3}).ok());
  for (int psbs : {0, 1, 6}) {
    for (int tail = 0; tail < 4; ++tail) {
      for (int shift = 0; shift < 12; ++shift) {
        SCOPED_TRACE(fmt::format("{} mid-flow PSB+s, tail {}, shift {}", psbs, tail, shift));
        PacketEncoder enc;
        PsbPlus(enc, kBase);
        auto run = [&](size_t bytes) {
          const size_t end = enc.bytes().size() + bytes;
          for (int i = 0; enc.bytes().size() < end; ++i) {
            (void)(i % 4 == 3 ? enc.Next(make::Cyc(9)) : enc.Next(make::Tnt8(0x3f, 6)));
          }
        };
        for (int i = 0; i < psbs; ++i) {
          run(700);
          PsbPlus(enc, kBase);  // (mid-flow: the flow is at kBase, the FUP's IP)
        }
        run(static_cast<size_t>(shift));
        (void)enc.Next(make::Tnt8(1, 1));
        if (tail == 1) (void)enc.Next(make::Cyc(5));
        if (tail == 2) {
          (void)enc.NextIp(PacketType::kTipPgd, std::nullopt);
          (void)enc.Next(make::Tsc(0x1234));
        }
        if (tail == 3) {
          (void)enc.Next(make::Mtc(1));
          (void)enc.Next(make::Tnt8(1, 1));
        }
        std::vector<uint8_t> trace = WithBadOpcode(enc);
        trace.resize(trace.size() + 32, 0x00);  // (PADs: the stretch stops at the bad opcode, not at the end)
        flow_test::ExpectSameFlowAsLibipt(trace, image, -pte_bad_opc);
      }
    }
  }
}

// After the last of many TNTs — a trace long enough (PADs after it) for the
// clean stretch to cover that TNT — a FUP without or with an IP, a TIP.PGE,
// a TIP.PGD with or without an IP, or a MODE.Exec, then a packet error or
// the end: the flow is libipt's, instruction for instruction, through its
// first error. libipt's read-ahead goes on past a FUP no event waits for,
// so the error after it fails the branch that took the TNT; the stretch
// splits its regions at a MODE (CleanRare()), so that the careful look
// decides there. Open (compared through the first error only: the same
// error, one instruction later): after a MODE.Exec libipt fails the branch
// that took the TNT — reading on past the MODE.Exec to the bad opcode, or
// its exec-mode event query reading to the end — where ours fails the next
// branch. (CheckAhead() reading on past every MODE.Exec fixed both here but
// broke a corpus case — compiled_buffer_overflow seed 12 at base
// 0x564fbb9d9940, SEEDS=20: libipt does not always read on; its rule is
// narrower.)
TEST(FlowDecoder, ReadAheadPastSplittingPacketsInsideTheCleanStretch) {
  Image image;  // kBase: jz kBase (taken: the loop again); ret
  ASSERT_TRUE(image.AddBlob(kBase, std::vector<uint8_t>{0x74, 0xfe, 0xc3}).ok());
  for (int after = 0; after < 6; ++after) {
    for (const bool bad : {false, true}) {
      SCOPED_TRACE(fmt::format("packet {} after the TNT, {}", after, bad ? "then a bad opcode" : "then PADs"));
      PacketEncoder enc;
      PsbPlus(enc, kBase);
      for (int i = 0; i < 200; ++i) (void)(i % 4 == 3 ? enc.Next(make::Cyc(9)) : enc.Next(make::Tnt8(0x3f, 6)));
      (void)enc.Next(make::Tnt8(1, 1));
      switch (after) {
        case 0: (void)enc.NextIp(PacketType::kFup, std::nullopt); break;
        case 1: (void)enc.NextIp(PacketType::kFup, kBase); break;
        case 2: (void)enc.NextIp(PacketType::kTipPge, kBase); break;
        case 3: (void)enc.NextIp(PacketType::kTipPgd, kBase); break;
        case 4: (void)enc.NextIp(PacketType::kTipPgd, std::nullopt); break;
        case 5: (void)enc.Next(make::ModeExec(ExecMode::k64Bit)); break;
      }
      (void)enc.Next(make::Cyc(5));
      std::vector<uint8_t> trace = bad ? WithBadOpcode(enc) : enc.bytes();
      trace.resize(trace.size() + 64, 0x00);  // (PADs: 9 bytes readable well past the packets above)
      const testing::FlowLog ours = testing::OurInsnFlow(trace, image);
      const testing::FlowLog ref = testing::LibiptInsnFlow(trace, image);
      EXPECT_EQ(testing::DiffFlowThroughFirstError(ours, ref), "");
      if (after != 5) {
        EXPECT_EQ(testing::DiffFlow(ours, ref), "") << "the same instructions, and the error at the same one";
      }
    }
  }
}

// An OVF inside a PSB+ ends it as a PSBEND would (libipt's header read
// stops at it: pdff_psbend, pt_qry_read_psb_header), and is then an
// overflow: without a FUP after it tracing is off until the TIP.PGE (here
// to the code: the jz takes the TNT's bit; or to an address without code,
// -pte_nomap). (Corpus divergence at PERFTEST_PT_CORPUS=all SEEDS=16
// LAYOUTS=4, compiled_o0_mtc_period3 seed 15, corruption 6: a dropped byte
// range left PSB, TSC, TMA, CBR, OVF, TIP.PGE; we failed the sync at the
// TIP.PGE inside the PSB+.)
TEST(FlowDecoder, OverflowInsideAPsbPlusEndsIt) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  for (const bool code : {false, true}) {
    SCOPED_TRACE(code ? "TIP.PGE to the code" : "TIP.PGE to no code");
    PacketEncoder enc;
    (void)enc.Next(make::Psb());
    (void)enc.Next(make::Tsc(0x10000000));
    (void)enc.Next(make::Tma(0, 0));
    (void)enc.Next(make::Cbr(0x20));
    (void)enc.Next(make::ModeExec(ExecMode::k64Bit));
    (void)enc.Next(make::Ovf());
    (void)enc.Next(make::Cyc(3));
    (void)enc.Next(make::TipPge(IpBytes::kSext48, code ? kBase : 0x500000));  // (a full IP after an OVF)
    (void)enc.Next(make::Tnt8(1, 1));
    if (code) {
      ExpectFailsAsLibipt(enc.bytes(), image, -pte_eos, ENODATA, {kBase, kBase + 1});
    } else {
      ExpectFailsAsLibipt(enc.bytes(), image, -pte_nomap, ENXIO, {});
    }
  }
}

// An event packet cut by the end of the trace right after the TIP a ret
// takes (past timing packets): libipt's read-ahead knows it by its opcode
// (pt_df_fetch), its instruction decoder asks for the event at once
// (pt_insn_check_ip_event), and the event query's decode meets the end
// (-pte_eos), failing the ret before the flow gets to the TIP's target —
// here an address without code. We report the ret, then the end of the
// trace (EMSGSIZE) where the flow finds no code (pt.libipt.error_point:
// ours later). A cut TNT-64 is no event: the read-ahead stops at it, and
// the flow goes to the target (-pte_nomap). (Corpus divergence at
// PERFTEST_PT_CORPUS=all SEEDS=20 LAYOUTS=6, deep_cbr_cyc_mtc seed 17,
// corruption 3: a TIP to corrupted bytes, then a cut TIP.PGD; ours was
// ENXIO at the target.)
TEST(FlowDecoder, CutEventPacketAfterATipFailsTheBranchThatTookIt) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  const std::vector<std::pair<std::string, Packet>> cuts = {
      {"TIP.PGE", make::TipPge(IpBytes::kUpdate32, 0x12345678)}, {"TIP.PGD", make::TipPgd(IpBytes::kUpdate32, 0x12345678)},
      {"PIP", make::Pip(0x12345000, false)}, {"MODE.Exec", make::ModeExec(ExecMode::k64Bit)},
      {"TNT-64", make::Tnt64(1, 1)}};
  for (const auto& [name, cut] : cuts) {
    SCOPED_TRACE("a cut " + name);
    PacketEncoder enc;
    PsbPlus(enc, kBase);
    (void)enc.Next(make::Tnt8(1, 1));              // the jz: taken, to the ret
    (void)enc.NextIp(PacketType::kTip, 0x500000);  // the ret's: no code there
    (void)enc.Next(make::Mtc(1));
    (void)enc.Next(cut);
    std::vector<uint8_t> trace = enc.bytes();
    trace.pop_back();  // its last byte
    if (name == "TNT-64") {
      ExpectFailsAsLibipt(trace, image, -pte_nomap, ENXIO, {kBase, kBase + 1, kBase + 4});
      continue;
    }
    const testing::FlowLog ours = testing::OurInsnFlow(trace, image);
    const testing::FlowLog ref = testing::LibiptInsnFlow(trace, image);
    int64_t lead = 0;
    EXPECT_EQ(testing::DiffFlowThroughFirstError(ours, ref, &lead), "");
    EXPECT_EQ(lead, 1);  // (the ret)
    ASSERT_EQ(ref.entries.size(), 4u);
    EXPECT_EQ(ref.entries.back().code, -pte_eos);
    const Walk w = Decode(trace, image);
    EXPECT_EQ(w.err, EMSGSIZE);
    EXPECT_EQ(w.ips, (std::vector<uint64_t>{kBase, kBase + 1, kBase + 4}));
  }
  // The same after the TNT whose last bit the jz takes (the event query
  // comes once the TNT's bits are used): the jz fails.
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  (void)enc.Next(make::Tnt8(1, 1));
  (void)enc.Next(make::Pip(0x12345000, false));
  std::vector<uint8_t> trace = enc.bytes();
  trace.pop_back();
  ExpectFailsAsLibipt(trace, image, -pte_eos, EMSGSIZE, {kBase});
}

// A TIP.PGD with the IP of a TIP.PGE right before it: libipt binds a
// disable with an IP to an instruction (pt_insn_at_disabled_event) and
// decodes the one at the enable's IP first — no code there (-pte_nomap), or
// a nop and a ret that the disable binds to. Our rule for a direct branch
// leaving the traced region (a TIP.PGD at its target) must not see the jmp
// before the asynchronous disable that preceded the TIP.PGE. (Corpus
// divergence at PERFTEST_PT_CORPUS=all SEEDS=20 LAYOUTS=6,
// compiled_o0_interrupts seed 14, corruption 7, at 0x55f448add6f3: a
// dropped byte range left TIP.PGE, TIP.PGD, TIP.PGD; we disabled at once.)
TEST(FlowDecoder, TipPgdAtTheEnableIpBindsToAnInstructionThere) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, std::vector<uint8_t>{0xeb, 0x00, 0x90, 0xc3}).ok());  // jmp .+2; nop; ret
  for (const bool code : {false, true}) {
    SCOPED_TRACE(code ? "TIP.PGE to the nop" : "TIP.PGE to no code");
    const uint64_t at = code ? kBase + 2 : 0x500000;
    PacketEncoder enc;
    PsbPlus(enc, kBase);
    (void)enc.NextIp(PacketType::kFup, kBase + 2);  // after the jmp: disabled before the nop
    (void)enc.NextIp(PacketType::kTipPgd, std::nullopt);
    (void)enc.NextIp(PacketType::kTipPge, at);
    (void)enc.NextIp(PacketType::kTipPgd, at);
    if (code) {
      ExpectFailsAsLibipt(enc.bytes(), image, -pte_eos, ENODATA, {kBase, kBase + 2, kBase + 3});
    } else {
      ExpectFailsAsLibipt(enc.bytes(), image, -pte_nomap, ENXIO, {kBase});
    }
  }
}

// A PSB+ followed by an event packet with a bad payload (a MODE with a
// reserved leaf): libipt's read-ahead after the PSB+ stops at it, and the
// event query for it (after the PSB+'s events; in pt_insn_start when there
// are none) fails (-pte_bad_packet): the sync itself fails, or the first
// step after the PSB+'s events. We synchronized and failed at the first
// step. (Corpus divergence at PERFTEST_PT_CORPUS=all SEEDS=20 LAYOUTS=10
// FIXED=3: exit_psb_period3 seed 4, corruption 2.)
TEST(FlowDecoder, BadEventPacketAfterThePsbPlusFailsTheSync) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  for (const bool pip : {false, true}) {
    SCOPED_TRACE(pip ? "a PIP in the PSB+" : "no event in the PSB+");
    PacketEncoder enc;
    (void)enc.Next(make::Psb());
    (void)enc.Next(make::Tsc(0x10000000));
    if (pip) (void)enc.Next(make::Pip(0x12345000, false));
    (void)enc.Next(make::PsbEnd());
    std::vector<uint8_t> trace = enc.bytes();
    trace.insert(trace.end(), {0x99, 0x40, 0x00, 0x00});  // MODE, leaf 010b (reserved)
    ExpectSameFlowAsLibipt(trace, image, -pte_bad_packet);
    FlowDecoder dec(trace, &image, FlowDecoder::Options{.libipt_errors = true});
    const Result<uint64_t> s = dec.SyncForward();
    EXPECT_EQ(s.ok(), pip);
    if (!pip) {
      EXPECT_EQ(s.error(), EBADMSG);
    }
  }
}

// After a TNT, libipt's read-ahead decodes a FUP that no event waits for
// (an asynchronous branch queued for the next TIP, pt_qry_decode_fup) and
// reads on: an unknown opcode after it (-pte_bad_opc), or the FUP's own
// missing IP (-pte_ip_suppressed), fails the jz whose TNT query read that
// far. We stopped looking at the FUP and took the TNT's bit first.
// (Corpus divergence at PERFTEST_PT_CORPUS=all SEEDS=20 LAYOUTS=10 FIXED=3:
// deep_tnt64 seed 6, corruption 7.)
TEST(FlowDecoder, ReadAheadAfterATntDecodesAFupAndGoesOn) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  for (const bool ip : {true, false}) {
    SCOPED_TRACE(ip ? "FUP, then a bad opcode" : "FUP without an IP");
    PacketEncoder enc;
    PsbPlus(enc, kBase);
    (void)enc.Next(make::Tnt8(1, 1));
    if (ip) {
      (void)enc.NextIp(PacketType::kFup, 0x402000);
    } else {
      (void)enc.NextIp(PacketType::kFup, std::nullopt);
    }
    (void)enc.Next(make::Cyc(3));
    const std::vector<uint8_t> trace = ip ? WithBadOpcode(enc) : enc.bytes();
    ExpectFailsAsLibipt(trace, image, ip ? -pte_bad_opc : -pte_ip_suppressed, ip ? EILSEQ : EBADMSG, {kBase});
  }
}

// A TIP.PGE while tracing is enabled, behind a PTW without an IP (held
// until the next PTWRITE): libipt asks for the TIP.PGE's event only once
// the PTW binds to the PTWRITE at kBase, which it reports; the event query
// then reads ahead past the TIP.PGE — an unknown opcode there is the error
// (-pte_bad_opc); else the enabled event while enabled (-pte_bad_context).
// We failed at once, before the PTWRITE, on the TIP.PGE. (Corpus
// divergence at PERFTEST_PT_CORPUS=all SEEDS=20 LAYOUTS=10 FIXED=3:
// dispatch_everything_noretcomp_tnt64 seed 5, corruption 5.)
TEST(FlowDecoder, TipPgeWhileEnabledWaitsBehindAHeldPtw) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, std::vector<uint8_t>{0xf3, 0x0f, 0xae, 0xe0, 0x90, 0xc3}).ok());  // ptwrite %eax; nop; ret
  for (const bool bad : {false, true}) {
    SCOPED_TRACE(bad ? "an unknown opcode after the TIP.PGE" : "the end after the TIP.PGE");
    PacketEncoder enc;
    PsbPlus(enc, kBase);
    (void)enc.Next(make::Ptw(0x1234, 4, false));
    (void)enc.NextIp(PacketType::kTipPge, kBase + 4);
    const std::vector<uint8_t> trace = bad ? WithBadOpcode(enc) : enc.bytes();
    ExpectFailsAsLibipt(trace, image, bad ? -pte_bad_opc : -pte_bad_context, bad ? EILSEQ : EBADMSG, {kBase});
  }
}

// A malformed PSB right after a TIP.PGD that follows the TIP a jmp takes:
// libipt's event query for the TIP.PGD reads ahead past it and decodes the
// PSB as a status packet (pt_decode_psb has no flags: pt_qry_read_ahead
// decodes it), which fails (-pte_bad_packet) — the jmp fails before the flow
// gets to its target (no code there). We took only timing packets' errors
// there and failed at the target (ENXIO). (Corpus divergence at
// PERFTEST_PT_CORPUS=all SEEDS=20 LAYOUTS=10 FIXED=3: compiled_o0_overflow
// seed 15, corruption 4 — a dropped byte range left a TIP.PGD overlapping
// the next PSB.)
TEST(FlowDecoder, BadPsbInTheReadAheadAfterAnEventFailsTheBranch) {
  const Image image = NopJmpRax();
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  (void)enc.NextIp(PacketType::kTip, 0x500000);  // the jmp's: no code there
  (void)enc.NextIp(PacketType::kTipPgd, 0x500000);
  std::vector<uint8_t> trace = enc.bytes();
  trace.insert(trace.end(), {0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x00, 0x00, 0x00, 0x00,
                             0x00, 0x00, 0x00, 0x00});  // a PSB cut short by PADs
  ExpectFailsAsLibipt(trace, image, -pte_bad_packet, EBADMSG, {kBase});
}

// An unknown opcode after a mid-flow PSB+ that follows the TIP a jmp
// takes: libipt's read-ahead decodes the PSB+ and goes on past its PSBEND —
// at once without PSB+ events, else in the query for its last event, asked
// for at once — so the error comes before the flow gets to the jmp's target
// (no code there: ours was ENXIO). (With the PIP libipt reports the jmp
// first: pt.libipt.error_point.) (Corpus divergence at
// PERFTEST_PT_CORPUS=all SEEDS=30 LAYOUTS=4: dispatch_exclude_user seed
// 25, corruption 2.)
TEST(FlowDecoder, ReadAheadGoesOnPastAMidFlowPsbEnd) {
  const Image image = NopJmpRax();
  for (const bool pip : {false, true}) {
    SCOPED_TRACE(pip ? "a PIP in the PSB+" : "no event in the PSB+");
    PacketEncoder enc;
    PsbPlus(enc, kBase);
    (void)enc.NextIp(PacketType::kTip, 0x500000);  // the jmp's: no code there
    (void)enc.Next(make::Psb());
    if (pip) (void)enc.Next(make::Pip(0x12345000, false));
    (void)enc.Next(make::PsbEnd());
    (void)enc.Next(make::Mtc(1));
    const std::vector<uint8_t> trace = WithBadOpcode(enc);
    const testing::FlowLog ours = testing::OurInsnFlow(trace, image);
    const testing::FlowLog ref = testing::LibiptInsnFlow(trace, image);
    EXPECT_EQ(testing::DiffFlowThroughFirstError(ours, ref), "");
    ASSERT_EQ(ref.errors, 1u);
    EXPECT_EQ(ref.entries.back().code, -pte_bad_opc);
    EXPECT_EQ(Decode(trace, image).err, EILSEQ);
  }
}

// A TIP.PGD without an IP binds to a far transfer only
// (pt_insn_at_disabled_event): libipt takes its disabled event and holds
// it, so the jz's query reads the TNT after it (taken: to the ret, which
// then has no packet, -pte_eos; or the read-ahead past the TNT meets an
// unknown opcode, -pte_bad_opc). We failed the jz at the TIP.PGD
// (EBADMSG). (Corpus divergence at PERFTEST_PT_CORPUS=all SEEDS=40
// LAYOUTS=2: exit_cyc_thresh5_mtc seed 31, corruption 1.)
TEST(FlowDecoder, NearBranchReadsPastAHeldTipPgdWithoutIp) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  for (const bool bad : {false, true}) {
    SCOPED_TRACE(bad ? "an unknown opcode after the TNT" : "the end after the TNT");
    PacketEncoder enc;
    PsbPlus(enc, kBase);
    (void)enc.NextIp(PacketType::kTipPgd, std::nullopt);
    (void)enc.Next(make::Tnt8(1, 1));
    if (bad) {
      ExpectFailsAsLibipt(WithBadOpcode(enc), image, -pte_bad_opc, EILSEQ, {kBase});
    } else {
      ExpectFailsAsLibipt(enc.bytes(), image, -pte_eos, ENODATA, {kBase, kBase + 1});
    }
  }
}

// libipt's read-ahead after a TNT decodes a PSB with its header: an
// unknown opcode in the header (here past a FUP that the read-ahead decodes
// too) fails the jz whose TNT query read that far (-pte_bad_opc, at the
// PSB). We stopped looking at the PSB and took the TNT's bit first.
// (Corpus divergence at PERFTEST_PT_CORPUS=all SEEDS=40 LAYOUTS=2:
// exit_overflow seed 37, corruption 6.)
TEST(FlowDecoder, ReadAheadAfterATntDecodesAPsbHeader) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  for (const bool fup : {false, true}) {
    SCOPED_TRACE(fup ? "a FUP before the PSB" : "the PSB right after the TNT");
    PacketEncoder enc;
    PsbPlus(enc, kBase);
    (void)enc.Next(make::Tnt8(1, 1));
    if (fup) (void)enc.NextIp(PacketType::kFup, 0x402000);
    (void)enc.Next(make::Psb());
    (void)enc.Next(make::Tsc(0x10001000));
    ExpectFailsAsLibipt(WithBadOpcode(enc), image, -pte_bad_opc, EILSEQ, {kBase});
  }
}

// An OVF that ends the PSB+ (no PSB+ events): libipt decodes it in the
// sync's read-ahead and looks for the FUP that resolves it
// (pt_qry_find_ovf_fup): an unknown opcode on the way (-pte_bad_opc), or a
// TIP there (-pte_bad_context), fails the sync. With a FUP the sync holds
// and the flow resumes at its IP. (Corpus divergence at
// PERFTEST_PT_CORPUS=all SEEDS=40 LAYOUTS=2: exit_mtc seed 35, corruption 3
// — PSB, TSC, OVF, PADs, CBR, an unknown opcode.)
TEST(FlowDecoder, OverflowEndingThePsbPlusLooksForItsFupInTheSync) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  for (int v = 0; v < 3; ++v) {
    SCOPED_TRACE(v == 0 ? "a FUP" : v == 1 ? "an unknown opcode" : "a TIP");
    PacketEncoder enc;
    (void)enc.Next(make::Psb());
    (void)enc.Next(make::Tsc(0x10000000));
    (void)enc.Next(make::Ovf());
    (void)enc.Next(make::Pad());
    (void)enc.Next(make::Cbr(0x20));
    if (v == 0) (void)enc.Next(make::Fup(IpBytes::kSext48, kBase));
    if (v == 2) (void)enc.Next(make::Tip(IpBytes::kSext48, kBase));
    const std::vector<uint8_t> trace = v == 1 ? WithBadOpcode(enc) : enc.bytes();
    if (v == 0) {
      ExpectFailsAsLibipt(trace, image, -pte_bad_insn, EILSEQ, {});  // (no MODE.Exec: no execution mode)
    } else {
      ExpectSameFlowAsLibipt(trace, image, v == 1 ? -pte_bad_opc : -pte_bad_context);
      FlowDecoder dec(trace, &image, FlowDecoder::Options{.libipt_errors = true});
      const Result<uint64_t> sync = dec.SyncForward();
      ASSERT_FALSE(sync.ok());
      EXPECT_EQ(sync.error(), v == 1 ? EILSEQ : EBADMSG);
    }
  }
}

// While tracing is disabled (a PSB+ without a FUP), a TIP or TNT-64 cut by
// the end of the trace: libipt's read-ahead stops at it by its opcode (no
// event), so pt_insn_next finds no enable (-pte_no_enable), not the end of
// the trace; a cut TIP.PGE is an event whose decode meets the end
// (-pte_eos). (Corpus divergence at PERFTEST_PT_CORPUS=all SEEDS=40
// LAYOUTS=2: exit_branch0 seed 40, corruption 7.)
TEST(FlowDecoder, CutTipWhileDisabledIsNoEnable) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  for (const PacketType t : {PacketType::kTip, PacketType::kTnt64, PacketType::kTipPge}) {
    SCOPED_TRACE(PacketName(t));
    PacketEncoder enc;
    PsbPlus(enc, std::nullopt);
    (void)enc.Next(make::Mtc(1));
    if (t == PacketType::kTnt64) {
      (void)enc.Next(make::Tnt64(1, 1));
    } else {
      (void)enc.NextIp(t, 0x12345678);
    }
    std::vector<uint8_t> trace = enc.bytes();
    trace.pop_back();
    if (t == PacketType::kTipPge) {
      ExpectFailsAsLibipt(trace, image, -pte_eos, EMSGSIZE, {});
    } else {
      ExpectFailsAsLibipt(trace, image, -pte_no_enable, EBADMSG, {});
    }
  }
}

// After the TIP a jmp takes, a MODE.Exec (after an asynchronous FUP or
// not), then timing and an unknown opcode: libipt's read-ahead stops at the
// MODE.Exec, its instruction decoder asks for the event at once, and the
// event query decodes on (the exec-mode event waits for its TIP) and meets
// the unknown opcode (-pte_bad_opc), failing the jmp before the flow gets
// to its target (no code there: ours was ENXIO). (Corpus divergence at
// PERFTEST_PT_CORPUS=all SEEDS=40 LAYOUTS=2: compiled_o0_tnt64 seed 30,
// corruption 6, at 0x55d9ab609953.)
TEST(FlowDecoder, ModeExecQueryAfterATipReadsOnToAnError) {
  const Image image = NopJmpRax();
  for (const bool fup : {false, true}) {
    SCOPED_TRACE(fup ? "an asynchronous FUP before the MODE.Exec" : "the MODE.Exec after the TIP");
    PacketEncoder enc;
    PsbPlus(enc, kBase);
    (void)enc.NextIp(PacketType::kTip, 0x500000);  // the jmp's: no code there
    if (fup) (void)enc.NextIp(PacketType::kFup, 0x402000);
    (void)enc.Next(make::Cyc(3));
    (void)enc.Next(make::ModeExec(ExecMode::k32Bit));
    (void)enc.Next(make::Cyc(3));
    ExpectFailsAsLibipt(WithBadOpcode(enc), image, -pte_bad_opc, EILSEQ, {kBase});
  }
}

// An OVF behind a PTW held for an IP the flow never reaches: libipt asks
// for the overflow's event only once the held one goes, so the flow goes on
// from where it is, and the jz's query meets the OVF (-pte_bad_query). We
// took the overflow at once and resumed at its FUP. (Corpus divergence at
// PERFTEST_PT_CORPUS=all SEEDS=40 LAYOUTS=2: compiled_o0_overflow seed 34,
// corruption 0 — a mid-flow PSB+'s events held for a flipped FUP IP, then
// an OVF.)
TEST(FlowDecoder, OverflowWaitsBehindAHeldEvent) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  (void)enc.Next(make::Ptw(0x1234, 8, true));
  (void)enc.NextIp(PacketType::kFup, 0x402000);  // never reached
  (void)enc.Next(make::Ovf());
  (void)enc.Next(make::Fup(IpBytes::kSext48, kBase + 3));
  (void)enc.Next(make::Tnt8(1, 1));
  ExpectFailsAsLibipt(enc.bytes(), image, -pte_bad_query, EBADMSG, {kBase});
}

// A TIP.PGE without an IP while tracing is enabled: libipt's decode of it
// fails first (pt_qry_decode_tip_pge: -pte_bad_packet), before any
// read-ahead past it — an unknown opcode after it is not the error. (We
// report the jz that took the TNT's bit before it: pt.libipt.error_point.)
// (Corpus divergences at PERFTEST_PT_CORPUS=all SEEDS=150 LAYOUTS=0:
// dispatch_ptw seed 113, corruption 4; exit_exclude_user seed 116,
// corruption 5.)
TEST(FlowDecoder, TipPgeWithoutIpWhileEnabledFailsBeforeItsReadAhead) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  (void)enc.Next(make::Tnt8(1, 1));
  (void)enc.NextIp(PacketType::kTipPge, std::nullopt);
  const std::vector<uint8_t> trace = WithBadOpcode(enc);
  const testing::FlowLog ours = testing::OurInsnFlow(trace, image);
  const testing::FlowLog ref = testing::LibiptInsnFlow(trace, image);
  EXPECT_EQ(testing::DiffFlowThroughFirstError(ours, ref), "");
  ASSERT_EQ(ref.errors, 1u);
  EXPECT_EQ(ref.entries.back().code, -pte_bad_packet);
  EXPECT_EQ(Decode(trace, image).err, EBADMSG);
}

}  // namespace
}  // namespace perftest::pt
