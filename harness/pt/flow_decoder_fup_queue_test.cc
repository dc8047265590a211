// FlowDecoder against libipt's queue of events bound to a FUP (evb_fup):
// libipt's query decoder queues a PTW or EXSTOP with IP=1, a MODE.TSX and an
// MWAIT for the next FUP (pt_qry_decode_ptw, _exstop, _mode_tsx, _mwait),
// whatever comes before that FUP — standalone events (PWRE, PWRX, CBR,
// MNT) are reported meanwhile — and the next FUP gives each its IP in turn,
// consumed with the last (pt_qry_decode_fup); only a FUP with nothing
// waiting for it is an asynchronous branch. The expected flow and events
// come from libipt's pt_insn_next and pt_insn_event at test time.
#include "harness/pt/flow_decoder.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/pt/flow_decoder_test_support.h"
#include "harness/pt/packet_encoder.h"
#include "harness/pt/testing/libipt_flow.h"

namespace perftest::pt {
namespace {

using flow_test::ExpectHeldEventFlow;
using flow_test::ExpectSameEventsAsLibipt;
using flow_test::kBase;
using flow_test::kCondRet;
using flow_test::PsbPlus;

// A PTW or EXSTOP with IP=1 whose FUP comes after a standalone event
// (PWRE, PWRX, CBR, MNT): the FUP is still theirs (pt_qry_decode_fup takes
// the events queued on evb_fup first), not an asynchronous branch. The PTW
// then binds to the FUP's IP, and held there while the flow has not reached
// it, it holds the PWRX behind it, which the jz's TNT query meets
// (-pte_bad_query); at the jz, both go and the jz takes its bit.
// (Corpus divergence PERFTEST_PT_CORPUS_SEEDS=16 LAYOUTS=4,
// dispatch_everything seed 12, corruption 6: a dropped FUP left a PTW
// waiting across a PWRE for the EXSTOP's FUP; we took it as an
// asynchronous FUP.)
TEST(FlowDecoder, FupEventsWaitForTheirFupPastStandaloneEvents) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  const std::vector<std::pair<std::string, Packet>> between = {
      {"PWRE", make::Pwre(2, 0, false)}, {"PWRX", make::Pwrx(2, 2, 1)}, {"CBR", make::Cbr(0x20)},
      {"MNT", make::Mnt(0x1234)}};
  for (const bool exstop : {false, true}) {
    for (const auto& [name, packet] : between) {
      for (const uint64_t fup : {uint64_t{0x402000}, kBase + 1}) {
        const bool reached = fup == kBase + 1;
        SCOPED_TRACE(fmt::format("{}, {}, FUP {}", exstop ? "EXSTOP" : "PTW", name,
                                 reached ? "at the jz" : "unreached"));
        PacketEncoder enc;
        PsbPlus(enc, kBase);
        (void)enc.Next(exstop ? make::ExStop(true) : make::Ptw(0x1234, 8, true));
        (void)enc.Next(make::Cyc(3));
        (void)enc.Next(packet);
        (void)enc.NextIp(PacketType::kFup, fup);
        (void)enc.Next(make::Pwrx(2, 2, 1));
        (void)enc.Next(make::Tnt8(1, 1));
        ExpectHeldEventFlow(enc.bytes(), image, reached);
        // (Unreached, libipt never reports the held event; we report
        // events when we read them.)
        if (reached) {
          ExpectSameEventsAsLibipt(enc.bytes(), image,
                                   {FlowEvent::Type::kPtwrite, FlowEvent::Type::kExStop, FlowEvent::Type::kPwre});
        }
      }
    }
  }
}

// A MODE.TSX with TXAbort takes its FUP's IP but leaves the FUP (libipt
// pt_qry_event_fup consumes it for any other event): decoded again, it is
// the asynchronous branch of the abort, from the jz to the TIP's target
// (then the ret has no packet: -pte_eos). Without TXAbort the FUP is the
// MODE.TSX's alone, and the jz's TNT query meets the TIP (-pte_bad_query).
TEST(FlowDecoder, AbortedModeTsxLeavesItsFupForTheAsyncBranch) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  for (const bool abort : {false, true}) {
    SCOPED_TRACE(abort ? "TXAbort" : "no TXAbort");
    PacketEncoder enc;
    PsbPlus(enc, kBase);
    (void)enc.Next(make::ModeTsx(!abort, abort));
    (void)enc.NextIp(PacketType::kFup, kBase + 1);
    (void)enc.NextIp(PacketType::kTip, kBase + 3);
    const flow_test::Walk w =
        abort ? flow_test::ExpectFailsAsLibipt(enc.bytes(), image, -pte_eos, ENODATA, {kBase, kBase + 3})
              : flow_test::ExpectFailsAsLibipt(enc.bytes(), image, -pte_bad_query, EBADMSG, {kBase});
    EXPECT_EQ(std::count(w.events.begin(), w.events.end(), FlowEvent::Type::kAsyncBranch), abort ? 1 : 0);
  }
}

// While tracing is disabled a MODE.TSX is an event of its own, with no IP
// (pt_qry_decode_mode_tsx queues it for a FUP only while enabled): the FUP
// after the TIP.PGE is an asynchronous one, and with the TIP.PGD tracing
// stops at the jz (then the end of the trace, -pte_eos). Had the MODE.TSX
// waited for it, the TIP.PGD would stop tracing at the jz's branch, which
// has no TNT bit. (Corpus divergence compiled_o0_interrupts seed 1,
// corruption 6: a MODE.Exec flipped into a MODE.TSX after a TIP.PGD.)
TEST(FlowDecoder, ModeTsxWhileDisabledIsAnEventOfItsOwn) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  PacketEncoder enc;
  PsbPlus(enc, std::nullopt);
  (void)enc.Next(make::ModeTsx(true, false));
  (void)enc.NextIp(PacketType::kTipPge, kBase);
  (void)enc.NextIp(PacketType::kFup, kBase + 1);
  (void)enc.NextIp(PacketType::kTipPgd, std::nullopt);
  const flow_test::Walk w = flow_test::ExpectFailsAsLibipt(enc.bytes(), image, -pte_eos, ENODATA, {kBase});
  EXPECT_EQ(std::count(w.events.begin(), w.events.end(), FlowEvent::Type::kAsyncDisabled), 1);
}

// A packet cut by the end of the trace that libipt's query decoder meets
// before it decodes it, known by its opcode alone (pt_df_fetch), fails that
// query (-pte_bad_query) where we read a cut packet (EMSGSIZE, -pte_eos):
//   - an event waits for its FUP (a PTW with IP=1, an MWAIT): its event
//     query meets a TIP or TNT-64 (pt_qry_event: no event binds to it),
//     and fails the branch before; a TIP.PGE or TIP.PGD it decodes (-pte_eos);
//   - an event is held for an instruction the flow has not reached (a PTW
//     without an IP, held until the next PTWRITE): the branch's query meets
//     a TIP.PGE or TIP.PGD as an event ahead (pt_qry_cache_tnt,
//     pt_qry_indirect_branch: pt_qry_will_event), and the jz's TNT query a
//     TIP; the ret (after a TNT bit) decodes its TIP (-pte_eos), and the
//     jz its TNT-64.
// (Found by hand: a PTW without an IP before a cut TIP.PGE or TIP.PGD was
// EMSGSIZE; so was a cut TIP or TNT-64 after an event waiting for its FUP.)
TEST(FlowDecoder, QueryFailsAtAPacketCutByTheEndKnownByItsOpcode) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  const std::vector<PacketType> cuts = {PacketType::kTipPge, PacketType::kTipPgd, PacketType::kTip,
                                        PacketType::kTnt64};
  for (const bool tnt : {false, true}) {
    for (const Packet& event : {make::Ptw(0x1234, 4, false), make::Ptw(0x1234, 4, true), make::Mwait(1, 0)}) {
      const bool held = event.type == PacketType::kPtw && !event.ptw_ip();
      for (const PacketType cut : cuts) {
        SCOPED_TRACE(fmt::format("{}{}{}, then a cut {}", tnt ? "TNT, " : "", PacketName(event.type),
                                 event.type != PacketType::kPtw ? "" : held ? " IP=0" : " IP=1", PacketName(cut)));
        PacketEncoder enc;
        PsbPlus(enc, kBase);
        if (tnt) (void)enc.Next(make::Tnt8(1, 1));
        (void)enc.Next(event);
        if (cut == PacketType::kTnt64) {
          (void)enc.Next(make::Tnt64(1, 1));
        } else {
          (void)enc.NextIp(cut, 0x12345678);
        }
        std::vector<uint8_t> trace = enc.bytes();
        trace.pop_back();  // the last byte
        const bool pg = cut == PacketType::kTipPge || cut == PacketType::kTipPgd;
        const bool bad = held ? pg || (cut == PacketType::kTip && !tnt) : !pg;
        // (Through the first error: libipt, which asks for the event
        // before the first instruction, may fail one instruction earlier —
        // pt.libipt.error_point.)
        const testing::FlowLog ours = testing::OurInsnFlow(trace, image);
        const testing::FlowLog ref = testing::LibiptInsnFlow(trace, image);
        EXPECT_EQ(testing::DiffFlowThroughFirstError(ours, ref), "");
        const auto first = std::find_if(ref.entries.begin(), ref.entries.end(),
                                        [](const testing::FlowEntry& e) { return e.kind == testing::FlowEntry::kError; });
        ASSERT_NE(first, ref.entries.end());
        EXPECT_EQ(first->code, bad ? -pte_bad_query : -pte_eos);
      }
    }
  }
}

// An event query that fails (a PTW with IP=1, then a TIP: pt_qry_event,
// -pte_bad_query) behind a PTW held for an IP the flow has not reached:
// libipt's instruction decoder asks for the next event only once the flow
// gets to the held one's IP (pt_insn_check_ip_event), so the flow goes on
// until then — to an IP with no code (-pte_nomap), or to the jz, whose TNT
// query meets the event packet (-pte_bad_query). We failed at once, when
// the read-ahead after the TIP.PGE met the failing query. (Corpus
// divergence at PERFTEST_PT_CORPUS_SEEDS=16: dispatch_branch0_ptw_fup_pwr_evt
// seed 11, corruption 1, at 0x7ffff7fe1230: a FUP flipped into a TIP.PGE.)
TEST(FlowDecoder, FailingEventQueryWaitsBehindAHeldEvent) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  for (const bool code : {false, true}) {
    SCOPED_TRACE(code ? "TIP.PGE to the code" : "TIP.PGE to no code");
    PacketEncoder enc;
    PsbPlus(enc, std::nullopt);
    (void)enc.NextIp(PacketType::kTipPge, code ? kBase : 0x500000);
    (void)enc.Next(make::Ptw(0x1234, 8, true));
    (void)enc.NextIp(PacketType::kFup, 0x402000);  // never reached
    (void)enc.Next(make::Ptw(0x5678, 8, true));
    (void)enc.NextIp(PacketType::kTip, kBase);
    if (code) {
      flow_test::ExpectFailsAsLibipt(enc.bytes(), image, -pte_bad_query, EBADMSG, {kBase});
    } else {
      flow_test::ExpectFailsAsLibipt(enc.bytes(), image, -pte_nomap, ENXIO, {});
    }
  }
}

}  // namespace
}  // namespace perftest::pt
