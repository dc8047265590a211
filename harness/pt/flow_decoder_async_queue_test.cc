// FlowDecoder against libipt's queue of events bound to a TIP (issue 7):
// libipt's query decoder queues, in order, an asynchronous branch for every
// FUP (pt_qry_decode_fup) and an exec-mode event for every MODE.Exec
// (pt_qry_decode_mode) on one binding, evb_tip; the TIP (or TIP.PGD) hands
// them out one per event query and is consumed with the last
// (pt_qry_decode_tip, pt_qry_decode_tip_pgd); the queue holds 6
// (pt_evq_enqueue: -pte_nomem for a 7th). The instruction decoder takes each
// when the flow reaches its IP (pt_insn_check_ip_event): an asynchronous
// branch at its FUP's IP, an exec-mode event at the TIP's IP. The expected
// flow and events come from libipt's pt_insn_next and pt_insn_event at test
// time.
#include "harness/pt/flow_decoder.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "harness/pt/flow_decoder_test_support.h"
#include "harness/pt/packet_encoder.h"
#include "harness/pt/testing/libipt_flow.h"

namespace perftest::pt {
namespace {

using flow_test::ExpectSameFlowAsLibipt;
using flow_test::kBase;
using flow_test::kCondRet;
using flow_test::PsbPlus;

// What comes between the PSB+ (starting the flow at kBase) and the TIP: a
// FUP at `ip` ('F'), a MODE.Exec to 32-bit mode ('M'), a PIP ('P'), a VMCS
// ('V'), a TNT-8 with one taken bit ('T').
struct Item {
  char kind;
  uint64_t ip = 0;
};

std::string Name(PacketType ctl, const std::vector<Item>& items) {
  std::string name(PacketName(ctl));
  for (const Item& it : items)
    name += it.kind == 'F'   ? fmt::format(" FUP({:#x})", it.ip)
            : it.kind == 'M' ? " MODE.Exec"
            : it.kind == 'P' ? " PIP"
            : it.kind == 'V' ? " VMCS"
                             : " TNT";
  return name;
}

// The PSB+, `items`, then `ctl` (TIP to `target`, or TIP.PGD without an
// IP), then a TNT-8 with one taken bit if `tnt_after`.
std::vector<uint8_t> Trace(const std::vector<Item>& items, PacketType ctl, uint64_t target, bool tnt_after) {
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  for (const Item& it : items) {
    if (it.kind == 'F') {
      (void)enc.NextIp(PacketType::kFup, it.ip);
    } else if (it.kind == 'M') {
      (void)enc.Next(make::ModeExec(ExecMode::k32Bit));
    } else if (it.kind == 'P') {
      (void)enc.Next(make::Pip(0x1000, false));
    } else if (it.kind == 'V') {
      (void)enc.Next(make::Vmcs(0x5000));
    } else {
      (void)enc.Next(make::Tnt8(1, 1));
    }
  }
  if (ctl == PacketType::kTipPgd) {
    (void)enc.NextIp(ctl, std::nullopt);
  } else {
    (void)enc.NextIp(ctl, target);
  }
  if (tnt_after) (void)enc.Next(make::Tnt8(1, 1));
  return enc.bytes();
}

// kCondRet at kBase (nop; jz +1; nop; ret), and at kTarget "48 90 c3":
// REX.W nop; ret in 64-bit mode, dec eax; nop; ret in 32-bit mode — the
// flow there shows the execution mode.
constexpr uint64_t kTarget = 0x401010;
Image TwoBlocks() {
  Image image;
  EXPECT_TRUE(image.AddBlob(kBase, kCondRet).ok());
  EXPECT_TRUE(image.AddBlob(kTarget, std::vector<uint8_t>{0x48, 0x90, 0xc3}).ok());
  return image;
}

// The flow (instructions, errors) is pt_insn_next's, and the asynchronous
// branch, async-disabled, exec-mode, paging and VMCS events come in
// libipt's order.
// (Both report the PSB+'s MODE.Exec, and one that does not change the mode.)
// (status_events false: not the paging and VMCS events — we report a
// standalone one when we read it, libipt when the flow gets to its
// instruction.)
void ExpectAsLibipt(const std::vector<uint8_t>& trace, const Image& image, bool status_events = true) {
  const testing::FlowLog ours = testing::OurInsnFlow(trace, image);
  const testing::FlowLog ref = testing::LibiptInsnFlow(trace, image);
  EXPECT_EQ(testing::DiffFlowThroughFirstError(ours, ref), "");
  EXPECT_EQ(testing::DiffFlow(ours, ref), "");
  using T = FlowEvent::Type;
  auto names = [status_events](const std::vector<T>& v) {
    std::vector<std::string> out;
    for (T t : v) {
      if (t == T::kAsyncBranch || t == T::kAsyncDisabled || t == T::kExecMode ||
          (status_events && (t == T::kPaging || t == T::kVmcs)))
        out.emplace_back(FlowEventName(t));
    }
    return out;
  };
  EXPECT_EQ(names(flow_test::Decode(trace, image).events), names(flow_test::LibiptEvents(trace, image)));
}

// ExpectAsLibipt() for each of `cases` before a TIP (to kBase and to
// kTarget) and before a TIP.PGD, each with and without a TNT after it.
void ExpectAllAsLibipt(const std::vector<std::vector<Item>>& cases, const Image& image, bool status_events = true) {
  for (PacketType ctl : {PacketType::kTip, PacketType::kTipPgd}) {
    for (bool tnt_after : {true, false}) {
      for (const std::vector<Item>& c : cases) {
        for (uint64_t target : {kBase, kTarget}) {
          if (ctl == PacketType::kTipPgd && target != kBase) continue;
          SCOPED_TRACE(fmt::format("{} to {:#x}{}", Name(ctl, c), target, tnt_after ? ", TNT" : ""));
          ExpectAsLibipt(Trace(c, ctl, target, tnt_after), image, status_events);
        }
      }
    }
  }
}

// Three and four asynchronous FUPs before one TIP: each is an asynchronous
// branch from its IP to the TIP's target, taken in order when the flow gets
// there (pt_qry_decode_tip hands out one event per query, the TIP consumed
// with the last). A FUP whose IP the flow does not reach holds the ones
// behind it, and the branch that needs a packet meanwhile meets the TIP
// still there (-pte_bad_query), or, behind the last one, the packets after
// the TIP. Before a TIP.PGD the first disables tracing, and the next one's
// disable fails (pt_insn_event while disabled: -pte_bad_context at its IP,
// -pte_no_enable elsewhere, or the read-ahead past the TIP.PGD with the
// last event: -pte_eos at the end). We kept two FUPs only: a third one
// where the TIP was due failed at once (EBADMSG, no instruction after the
// first nop); the TIP.PGD cases without a packet after it ended at the end
// of the trace (ENODATA) instead of the second disable event.
TEST(FlowDecoder, ThirdAndFourthAsyncFupsWaitForTheSameTip) {
  const Image image = TwoBlocks();
  const uint64_t kJz = kBase + 1, kAfterJz = kBase + 3;  // reached, and not (the jz is taken)
  const std::vector<std::vector<Item>> cases = {
      {{'F', kJz}, {'F', kJz}, {'F', kJz}},
      {{'F', kJz}, {'F', kJz}, {'F', kJz}, {'F', kJz}},
      {{'F', kJz}, {'F', kJz}, {'F', kAfterJz}},
      {{'F', kJz}, {'F', kAfterJz}, {'F', kJz}},
      {{'F', kAfterJz}, {'F', kJz}, {'F', kJz}},
      {{'F', kJz}, {'F', kJz}, {'F', kJz}, {'F', kAfterJz}},
      {{'F', kJz}, {'F', kJz}, {'F', kJz}, {'F', kJz}, {'F', kJz}, {'F', kJz}},  // 6: libipt's queue full
  };
  ExpectAllAsLibipt(cases, image);
  // All reached, before the TIP to kBase: the nop once, then again after
  // each asynchronous branch, then the jz takes the TNT.
  for (int fups : {3, 4}) {
    const std::vector<Item> c(static_cast<size_t>(fups), Item{'F', kJz});
    const flow_test::Walk w = flow_test::Decode(Trace(c, PacketType::kTip, kBase, true), image);
    std::vector<uint64_t> want(static_cast<size_t>(fups) + 1, kBase);
    want.push_back(kJz);
    EXPECT_EQ(w.ips, want);
    EXPECT_EQ(std::count(w.events.begin(), w.events.end(), FlowEvent::Type::kAsyncBranch), fups);
    EXPECT_EQ(w.err, ENODATA);
  }
}

// A 7th event for one TIP: libipt's pt_evq_enqueue has no room (-pte_nomem,
// in the read-ahead that decodes the FUP): right after the PSB+ the
// synchronization fails. We took it as a 7th asynchronous branch.
TEST(FlowDecoder, SeventhAsyncFupFindsLibiptsTipQueueFull) {
  const Image image = TwoBlocks();
  for (PacketType ctl : {PacketType::kTip, PacketType::kTipPgd}) {
    const std::vector<Item> c(7, Item{'F', kBase + 1});
    SCOPED_TRACE(Name(ctl, c));
    const std::vector<uint8_t> trace = Trace(c, ctl, kBase, true);
    ExpectAsLibipt(trace, image);
    FlowDecoder dec(trace, &image);
    const Result<uint64_t> s = dec.SyncForward();
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error(), EBADMSG);
  }
}

// A MODE.Exec among asynchronous FUPs before their TIP: its exec-mode event
// keeps its place on evb_tip. Before the first FUP it binds to the TIP's
// IP (pt_qry_event_tip): the mode changes when the flow gets there — before
// any asynchronous branch; the flow at the FUP's IP first does not take
// the branch (the exec-mode event ahead of it is held), and the branch that
// needs a packet meets the TIP still there (-pte_bad_query). Behind a FUP
// it goes with that FUP's branch (the flow is at the TIP's IP then), before
// the next one's. Before a TIP.PGD its IP is suppressed (pt_qry_event_tip_pgd):
// it goes at once, and the FUP's disable event, the last, lets the TIP.PGD
// go. And a TNT before the TIP: libipt asks for the MODE.Exec's event as
// soon as its read-ahead stops there (after the PSB+: before the first
// instruction), and the query decodes on through FUPs and MODE.Execs to the
// TNT (pt_qry_event: -pte_bad_query). We changed the mode after all the
// asynchronous branches, and looked at the packet right after the MODE.Exec
// only: the flow to kTarget ran in the wrong mode, a MODE.Exec before the
// first FUP was applied at that FUP, and a TNT after a FUP failed one
// instruction late or not at all.
TEST(FlowDecoder, ModeExecKeepsItsPlaceAmongAsyncFups) {
  const Image image = TwoBlocks();
  const uint64_t kJz = kBase + 1, kAfterJz = kBase + 3, kNoCode = 0x402000;
  const std::vector<std::vector<Item>> cases = {
      {{'M'}, {'F', kJz}},
      {{'F', kJz}, {'M'}},
      {{'M'}, {'F', kJz}, {'F', kJz}},
      {{'F', kJz}, {'M'}, {'F', kJz}},
      {{'F', kJz}, {'F', kJz}, {'M'}},
      {{'M'}, {'F', kJz}, {'F', kAfterJz}},
      {{'F', kJz}, {'M'}, {'F', kAfterJz}},
      {{'F', kJz}, {'F', kAfterJz}, {'M'}},
      {{'M'}, {'F', kJz}, {'F', kJz}, {'F', kJz}},
      {{'F', kJz}, {'M'}, {'F', kJz}, {'F', kJz}},
      {{'F', kJz}, {'F', kJz}, {'M'}, {'F', kJz}},
      {{'M'}, {'F', kNoCode}},
      {{'F', kNoCode}, {'M'}},
      {{'M'}, {'F', kJz}, {'T'}},
      {{'F', kJz}, {'M'}, {'T'}},
      {{'F', kAfterJz}, {'M'}, {'T'}},
      {{'F', kJz}, {'M'}, {'F', kJz}, {'T'}},
      {{'M'}, {'F', kJz}, {'F', kJz}, {'T'}},
      {{'M'}, {'T'}},
  };
  ExpectAllAsLibipt(cases, image);
  // MODE.Exec, FUP at the jz, TIP to kTarget: the exec-mode event waits for
  // kTarget, which the flow does not reach before the jz needs its TNT.
  const flow_test::Walk w = flow_test::Decode(Trace({{'M'}, {'F', kJz}}, PacketType::kTip, kTarget, true), image);
  EXPECT_EQ(w.ips, std::vector<uint64_t>{kBase});
  EXPECT_EQ(w.err, EBADMSG);
}

// A PIP or VMCS read while an asynchronous FUP waits for its TIP: libipt
// queues it on evb_tip behind that FUP (pt_qry_decode_pip, _vmcs: an
// async-paging/-vmcs event when an asynchronous branch is queued), bound to
// the TIP's IP (pt_qry_event_tip; suppressed for a TIP.PGD). So the TIP
// stays while it waits: a branch before an unreached FUP's IP meets the TIP
// (-pte_bad_query), not the packets after it; the event goes right after
// that FUP's asynchronous branch; its event query reads on through FUPs to
// a TNT (-pte_bad_query; after the PSB+ before the first instruction); and
// it counts towards the 6 events the queue holds. We reported it at once,
// and let the branch take the packets after the TIP.
TEST(FlowDecoder, PipAfterAnAsyncFupWaitsForItsTip) {
  const Image image = TwoBlocks();
  const uint64_t kJz = kBase + 1, kAfterJz = kBase + 3, kMidInsn = kTarget + 1;
  ExpectAllAsLibipt(
      {
          {{'F', kJz}, {'P'}},
          {{'F', kJz}, {'V'}},
          {{'F', kMidInsn}, {'P'}},
          {{'F', kMidInsn}, {'V'}},
          {{'F', kJz}, {'F', kJz}, {'P'}},
          {{'F', kJz}, {'P'}, {'F', kJz}},
          {{'F', kJz}, {'P'}, {'M'}},
          {{'F', kJz}, {'M'}, {'P'}},
          {{'F', kJz}, {'F', kAfterJz}, {'P'}},
          {{'F', kJz}, {'P'}, {'T'}},
          {{'F', kMidInsn}, {'P'}, {'T'}, {'F', kJz}},
          {{'F', kJz}, {'F', kJz}, {'F', kJz}, {'F', kJz}, {'F', kJz}, {'P'}},
          {{'F', kJz}, {'F', kJz}, {'F', kJz}, {'F', kJz}, {'F', kJz}, {'F', kJz}, {'P'}},
          {{'F', kJz}, {'P'}, {'P'}, {'P'}, {'P'}, {'P'}},
          {{'F', kJz}, {'V'}, {'F', kJz}, {'V'}, {'F', kJz}, {'V'}},
      },
      image);
}

// An OVF while an asynchronous FUP waits for its TIP, right after a TIP to
// an address without code: libipt's read-ahead after the TIP decodes the
// FUP and stops at the OVF, an event packet; its instruction decoder takes
// that event before it decodes at the TIP's target, and the OVF drops the
// waiting asynchronous branch with the event queue (pt_qry_decode_ovf):
// the flow resumes at the FUP after the OVF. We failed the FUP there
// (EBADMSG, held while the flow went on) and then found no code at the TIP's
// target (ENXIO). (Corpus divergence compiled_o0_overflow seed 5,
// corruption 5, at 0x55d6163a5db0 with PERFTEST_PT_CORPUS_SEEDS=6: a
// dropped byte range left TIP, FUP, CYC, OVF, FUP.)
TEST(FlowDecoder, OverflowDropsTheAsyncFupWaitingForItsTip) {
  const Image image = flow_test::NopJmpRax();
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  (void)enc.NextIp(PacketType::kTip, 0x402000);  // the jump's target: no code there
  (void)enc.NextIp(PacketType::kFup, 0x402010);
  (void)enc.Next(make::Cyc(3));
  (void)enc.Next(make::Ovf());
  (void)enc.Next(make::Fup(IpBytes::kSext48, kBase));
  ExpectSameFlowAsLibipt(enc.bytes(), image, -pte_eos);
  const flow_test::Walk w = flow_test::Decode(enc.bytes(), image);
  EXPECT_EQ(w.ips, (std::vector<uint64_t>{kBase, kBase + 1, kBase}));
  EXPECT_EQ(w.err, ENODATA);
  EXPECT_EQ(std::count(w.events.begin(), w.events.end(), FlowEvent::Type::kOverflow), 1);
}

// A PIP or VMCS before the asynchronous FUP, while tracing is enabled: a
// standalone paging/VMCS event, which libipt's instruction decoder holds
// until an instruction it binds to (pt_insn_check_insn_event: MOV CR3 for a
// PIP, VMPTRLD for a VMCS, VMLAUNCH, VMRESUME and far branches for both) —
// and with it the asynchronous branch behind it, whose TIP stays: the flow
// at the FUP's IP before that instruction does not branch, and the branch
// that needs a packet meets the TIP (-pte_bad_query). We let the event go at
// once and took the asynchronous branch.
TEST(FlowDecoder, PipBeforeAnAsyncFupHoldsItUntilItsInstruction) {
  // kBase: nop; mov %rax,%cr3; vmptrld (%rax); jz +1; nop; ret
  Image image = TwoBlocks();
  const uint64_t kCode = 0x401020;
  ASSERT_TRUE(image.AddBlob(kCode, std::vector<uint8_t>{0x90, 0x0f, 0x22, 0xd8, 0x0f, 0xc7, 0x30, 0x74, 0x01, 0x90,
                                                          0xc3})
                  .ok());
  const uint64_t kJz = kBase + 1;
  ExpectAllAsLibipt({{{'P'}, {'F', kJz}}, {{'V'}, {'F', kJz}}, {{'P'}, {'F', kJz}, {'F', kJz}},
                     {{'M'}, {'P'}, {'F', kJz}}, {{'P'}, {'M'}, {'F', kJz}}, {{'P'}, {'F', kJz}, {'T'}}},
                    image, false);
  // At kCode: the PIP binds to the MOV CR3, the VMCS to the VMPTRLD; the
  // asynchronous branch goes at its FUP after that instruction, and not
  // before.
  for (char status : {'P', 'V'}) {
    for (uint64_t fup : {kCode + 1, kCode + 4, kCode + 7}) {
      for (bool tnt_after : {true, false}) {
        PacketEncoder enc;
        PsbPlus(enc, kCode);
        (void)enc.Next(status == 'P' ? make::Pip(0x1000, false) : make::Vmcs(0x5000));
        (void)enc.NextIp(PacketType::kFup, fup);
        (void)enc.NextIp(PacketType::kTip, kTarget);
        if (tnt_after) (void)enc.Next(make::Tnt8(1, 1));
        SCOPED_TRACE(fmt::format("{} then FUP({:#x}){}", status == 'P' ? "PIP" : "VMCS", fup, tnt_after ? ", TNT" : ""));
        ExpectAsLibipt(enc.bytes(), image, false);
      }
    }
  }
}

// A MODE.Exec at the end of the trace, after a TIP.PGE to an address
// without code: libipt asks for its event before it decodes at the target,
// and the event query reads to the end of the trace (pt_qry_event:
// -pte_eos). We decoded at the target first (ENXIO). (Corpus divergence
// exit_tnt64 seed 12, corruption 5, at 0x555555559923 with
// PERFTEST_PT_CORPUS_SEEDS=16: a dropped byte range left TIP.PGE, CYC,
// MODE.Exec. After a TIP instead we fail one instruction later than libipt,
// the declared pt.libipt.error_point.)
TEST(FlowDecoder, ModeExecAtTheEndFailsBeforeTheNextInstruction) {
  const Image image = flow_test::NopJmpRax();
  PacketEncoder enc;
  PsbPlus(enc, std::nullopt);
  (void)enc.NextIp(PacketType::kTipPge, 0x402000);  // no code there
  (void)enc.Next(make::Cyc(3));
  (void)enc.Next(make::ModeExec(ExecMode::k64Bit));
  ExpectSameFlowAsLibipt(enc.bytes(), image, -pte_eos);
  const flow_test::Walk w = flow_test::Decode(enc.bytes(), image);
  EXPECT_EQ(w.err, ENODATA);
  EXPECT_TRUE(w.ips.empty());
}

// Past a held asynchronous FUP+TIP (its FUP IP never reached), an indirect
// jump's query reads on for its TIP and decodes a single TNT packet met on
// the way into its empty TNT cache (pt_qry_indirect_branch: "we may see a
// single TNT packet if the current tnt is empty"): the jump takes the TIP
// after it, and the TNT's bit goes to the jz there (taken: to the ret,
// which has no packet left, -pte_eos). A second TNT, or a FUP that makes
// the TIP an asynchronous branch's, fails the jump's query (-pte_bad_query). (Corpus divergence at
// PERFTEST_PT_CORPUS=all SEEDS=16 LAYOUTS=4, compiled_o0_cbr_cyc_mtc seed 15,
// corruption 3: an MTC flipped into a FUP; we failed the indirect call.)
TEST(FlowDecoder, IndirectBranchPastAHeldAsyncFupCachesATntOnTheWayToItsTip) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, std::vector<uint8_t>{0x90, 0xff, 0xe0}).ok());  // nop; jmp *%rax
  ASSERT_TRUE(image.AddBlob(kTarget, kCondRet).ok());
  for (int v = 0; v < 3; ++v) {
    const bool second = v != 0;
    SCOPED_TRACE(v == 0 ? "one TNT before the TIP" : v == 1 ? "two TNTs before the TIP" : "a FUP after the TNT");
    PacketEncoder enc;
    PsbPlus(enc, kBase);
    (void)enc.NextIp(PacketType::kFup, 0x402000);  // never reached
    (void)enc.NextIp(PacketType::kTip, 0x500000);
    (void)enc.Next(make::Tnt8(1, 1));
    if (v == 1) (void)enc.Next(make::Tnt8(1, 1));
    if (v == 2) (void)enc.NextIp(PacketType::kFup, 0x402010);  // (an asynchronous branch: the TIP is its)
    (void)enc.NextIp(PacketType::kTip, kTarget);  // the jump's
    if (second) {
      flow_test::ExpectFailsAsLibipt(enc.bytes(), image, -pte_bad_query, EBADMSG, {kBase});
    } else {
      flow_test::ExpectFailsAsLibipt(enc.bytes(), image, -pte_eos, ENODATA,
                                     {kBase, kBase + 1, kTarget, kTarget + 1});
    }
  }
}

// An asynchronous FUP read ahead after a TIP, then a TIP.PGE: libipt's
// read-ahead stops at the TIP.PGE (an event packet), and the event query
// hands it the asynchronous branch waiting on evb_tip, which it rejects
// (pt_qry_decode_tip_pge -> pt_qry_event_tip_pge: -pte_bad_context) before
// the flow gets to the TIP's target — here an address without code. We
// failed at the target (ENXIO): the error waited as a packet error read
// ahead. (Corpus divergences at PERFTEST_PT_CORPUS=all SEEDS=20 LAYOUTS=10
// FIXED=3: dispatch_psb_period3 seeds 6 and 13, at 0x7ffff7fe1230.)
TEST(FlowDecoder, AsyncFupThenTipPgeFailsTheEventQuery) {
  const Image image = flow_test::NopJmpRax();
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  (void)enc.NextIp(PacketType::kTip, 0x500000);  // the jmp's: no code there
  (void)enc.NextIp(PacketType::kFup, 0x401234);
  (void)enc.Next(make::Cyc(3));
  (void)enc.NextIp(PacketType::kTipPge, 0x401238);
  const testing::FlowLog ours = testing::OurInsnFlow(enc.bytes(), image);
  const testing::FlowLog ref = testing::LibiptInsnFlow(enc.bytes(), image);
  EXPECT_EQ(testing::DiffFlowThroughFirstError(ours, ref), "");
  ASSERT_GE(ref.entries.size(), 2u);
  const auto error = std::find_if(ref.entries.begin(), ref.entries.end(),
                                  [](const testing::FlowEntry& e) { return e.kind == testing::FlowEntry::kError; });
  ASSERT_NE(error, ref.entries.end());
  EXPECT_EQ(error->code, -pte_bad_context);
  EXPECT_EQ(flow_test::Decode(enc.bytes(), image).err, EBADMSG);
}

// A MODE.Exec and its TIP read when the flow is already at that TIP's IP
// (here: right after the jmp took the TIP before, to the same IP): libipt's
// exec-mode event carries the TIP's IP and goes at once
// (pt_qry_event_tip; pt_insn_check_ip_event), so the code there runs in the
// new mode before the jmp takes the TIP, which stays for it. 48 90 is one
// instruction in 64-bit mode (REX.W nop), two in 32-bit mode (dec eax; nop).
// We changed the mode only where the jmp took the TIP. (Corpus divergence at
// PERFTEST_PT_CORPUS=all SEEDS=40 LAYOUTS=2: compiled_o0_interrupts seeds
// 16 and 40, compiled_o0_noretcomp seed 4, compiled_o0_tnt64 seed 30, at
// 0x55d9ab609953 — a compressed return to the TIP's target.)
TEST(FlowDecoder, ModeExecGoesAtItsTipIpBeforeTheTipIsTaken) {
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, std::vector<uint8_t>{0x48, 0x90, 0xff, 0xe0}).ok());  // (see above); jmp *%rax
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  (void)enc.NextIp(PacketType::kTip, kBase);
  (void)enc.Next(make::ModeExec(ExecMode::k32Bit));
  (void)enc.NextIp(PacketType::kTip, kBase);
  flow_test::ExpectFailsAsLibipt(enc.bytes(), image, -pte_eos, ENODATA,
                                 {kBase, kBase + 2, kBase, kBase + 1, kBase + 2, kBase, kBase + 1});
}

}  // namespace
}  // namespace perftest::pt
