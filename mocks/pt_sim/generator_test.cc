// The generator's packet rules, one at a time, checked on the packets
// (harness/pt/packet_decoder.h) against the ground truth. Each case names
// the SDM section or perf-intel-pt.txt term it checks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <intel-pt.h>

#include <vector>

#include "harness/pt/packet_decoder.h"
#include "harness/syscall_matchers.h"
#include "mocks/pt_sim/generator.h"
#include "mocks/pt_sim/libipt_flow.h"
#include "mocks/pt_sim/test_programs.h"

namespace perftest::pt_sim {
namespace {

using pt::Packet;
using pt::PacketType;
using ::testing::IsEmpty;

std::vector<Packet> Packets(const std::vector<uint8_t>& bytes) {
  std::vector<Packet> out;
  pt::PacketDecoder dec(bytes);
  if (!dec.SyncForward().ok()) return out;
  Packet p;
  while (dec.Next(p) == 0) out.push_back(p);
  EXPECT_EQ(dec.offset(), bytes.size()) << "undecodable packet";
  return out;
}

size_t Count(const std::vector<Packet>& ps, PacketType type) {
  size_t n = 0;
  for (const Packet& p : ps) n += p.type == type;
  return n;
}

GeneratedTrace Gen(const Program& program, const PtConfig& config, RunOptions options = {}) {
  if (options.max_insns == RunOptions{}.max_insns) options.max_insns = 5000;
  Result<GeneratedTrace> t = Generate(program, config, options);
  EXPECT_TRUE(t.ok()) << t.ToString();
  return t.ok() ? std::move(*t) : GeneratedTrace{};
}

// SDM §33.4.2.1: TNT bits in order, oldest in the most significant bit.
TEST(Generator, TntBitsAreTheBranchOutcomesOldestFirst) {
  for (bool tnt64 : {false, true}) {
    PtConfig config;
    config.noretcomp = true;  // returns give TIPs: every TNT bit is a conditional branch
    RunOptions options;
    options.tnt64 = tnt64;
    const GeneratedTrace t = Gen(testing::LoopsProgram(), config, options);
    std::vector<bool> bits;
    for (const Packet& p : Packets(t.bytes)) {
      if (p.type != PacketType::kTnt8 && p.type != PacketType::kTnt64) continue;
      EXPECT_EQ(p.type, tnt64 ? PacketType::kTnt64 : PacketType::kTnt8);
      for (int i = static_cast<int>(p.tnt_size()) - 1; i >= 0; --i) bits.push_back((p.tnt_bits() >> i) & 1);
    }
    std::vector<bool> expected;
    for (const BranchRecord& b : t.truth.branches) {
      if (t.truth.insns[b.insn].branch == pt::BranchClass::kCondJump) expected.push_back(b.taken);
    }
    EXPECT_EQ(bits, expected) << "tnt64=" << tnt64;
    EXPECT_GT(bits.size(), 100u);
  }
}

// perf-intel-pt.txt "noretcomp": without it a RET to the address its CALL
// pushed is a taken TNT bit; with it every RET is a TIP.
TEST(Generator, ReturnCompressionUnlessNoretcomp) {
  for (bool noretcomp : {false, true}) {
    PtConfig config;
    config.noretcomp = noretcomp;
    const GeneratedTrace t = Gen(testing::LoopsProgram(), config);
    size_t tnt_bits = 0, tips = 0, conds = 0, rets = 0;
    for (const Packet& p : Packets(t.bytes)) {
      if (p.type == PacketType::kTnt8) tnt_bits += p.tnt_size();
      if (p.type == PacketType::kTip) ++tips;
    }
    for (const InsnRecord& r : t.truth.insns) {
      conds += r.branch == pt::BranchClass::kCondJump;
      rets += r.branch == pt::BranchClass::kReturn;
    }
    ASSERT_GT(rets, 100u);
    if (noretcomp) {
      EXPECT_EQ(tnt_bits, conds);
      EXPECT_EQ(tips, rets);
    } else {
      EXPECT_EQ(tnt_bits + tips, conds + rets);
      EXPECT_LT(tips, rets / 4) << "most returns are compressed";
    }
  }
}

// Returns deeper than the 64 a decoder's return stack holds get a TIP.
TEST(Generator, ReturnsBeyondDepth64AreTips) {
  RunOptions options;
  options.oracle.taken_percent = 99;
  options.max_insns = 20000;
  const GeneratedTrace t = Gen(testing::DeepProgram(), PtConfig{}, options);
  EXPECT_GT(Count(Packets(t.bytes), PacketType::kTip), 0u);
  const LibiptFlow flow = DecodeFlowWithLibipt(t.bytes, t.truth);
  EXPECT_THAT(flow.errors, IsEmpty());
  EXPECT_EQ(flow.ips, t.truth.TracedIps());
}

// SDM §33.4.2.17, perf-intel-pt.txt "psb_period": a PSB+ once 2^(psb_period+11)
// bytes followed the last one, at the next instruction boundary.
TEST(Generator, PsbEveryPsbPeriodBytes) {
  for (uint8_t period : {0, 1, 3}) {
    PtConfig config;
    config.psb_period = period;
    config.mtc = true;
    config.cyc = true;
    RunOptions options;
    options.max_insns = 60000;
    const GeneratedTrace t = Gen(testing::DispatchProgram(), config, options);
    std::vector<uint64_t> psbs;
    for (const Packet& p : Packets(t.bytes)) {
      if (p.type == PacketType::kPsb) psbs.push_back(p.offset);
    }
    ASSERT_GE(psbs.size(), 3u) << "psb_period=" << int{period};
    const uint64_t bytes = config.psb_period_bytes();
    for (size_t i = 1; i < psbs.size(); ++i) {
      EXPECT_GE(psbs[i] - psbs[i - 1], bytes);
      EXPECT_LT(psbs[i] - psbs[i - 1], bytes + 64) << "psb_period=" << int{period} << " PSB " << i;
    }
    EXPECT_EQ(t.truth.CountEvents(EventKind::kPsb), psbs.size());
  }
}

// PSB+ contents (SDM §33.3.7 "Packet Stream Boundary+"): PSB, TSC, TMA, CBR,
// PIP, MODE.Exec, FUP, PSBEND — TSC only with tsc, TMA with tsc and mtc,
// MODE.Exec and FUP only while branch tracing is on in user code.
TEST(Generator, PsbPlusContents) {
  PtConfig config;
  config.mtc = true;
  RunOptions options;
  options.max_insns = 20000;
  const GeneratedTrace t = Gen(testing::LoopsProgram(), config, options);
  const std::vector<Packet> ps = Packets(t.bytes);
  // The first PSB+ is written at enable, in the kernel: no MODE.Exec, no FUP.
  ASSERT_GE(ps.size(), 6u);
  EXPECT_EQ(ps[0].type, PacketType::kPsb);
  EXPECT_EQ(ps[1].type, PacketType::kTsc);
  EXPECT_EQ(ps[2].type, PacketType::kTma);
  EXPECT_EQ(ps[3].type, PacketType::kCbr);
  EXPECT_EQ(ps[4].type, PacketType::kPip);
  EXPECT_EQ(ps[4].cr3(), 0x12345000u);
  EXPECT_EQ(ps[5].type, PacketType::kPsbEnd);
  EXPECT_EQ(ps[6].type, PacketType::kModeExec);
  EXPECT_EQ(ps[7].type, PacketType::kTipPge);
  // A later one, in user code: ... MODE.Exec, FUP, PSBEND.
  size_t later = 0;
  for (size_t i = 1; i < ps.size(); ++i) {
    if (ps[i].type == PacketType::kPsb) {
      later = i;
      break;
    }
  }
  ASSERT_GT(later, 0u);
  const PacketType want[] = {PacketType::kPsb, PacketType::kTsc,      PacketType::kTma, PacketType::kCbr,
                             PacketType::kPip, PacketType::kModeExec, PacketType::kFup, PacketType::kPsbEnd};
  for (size_t k = 0; k < std::size(want); ++k) EXPECT_EQ(ps.at(later + k).type, want[k]) << k;
}

// perf-intel-pt.txt "branch": branch=0 gives no control-flow packets.
TEST(Generator, Branch0HasNoControlFlowPackets) {
  PtConfig config;
  config.branch = false;
  config.mtc = true;
  config.ptw = true;
  RunOptions options;
  options.interrupt_every = 200;
  const GeneratedTrace t = Gen(testing::DispatchProgram(), config, options);
  const std::vector<Packet> ps = Packets(t.bytes);
  for (PacketType type : {PacketType::kTnt8, PacketType::kTnt64, PacketType::kTip, PacketType::kTipPge,
                          PacketType::kTipPgd, PacketType::kFup, PacketType::kModeExec}) {
    EXPECT_EQ(Count(ps, type), 0u) << pt::PacketName(type);
  }
  EXPECT_GT(Count(ps, PacketType::kMtc), 0u);
  EXPECT_GT(Count(ps, PacketType::kPtw), 0u);
  EXPECT_EQ(t.truth.CountTraced(), 0u);
}

// exclude_user: the user program is never traced (no TIP.PGE).
TEST(Generator, ExcludeUserTracesNothingOfTheProgram) {
  RunOptions options;
  options.exclude_user = true;
  const GeneratedTrace t = Gen(testing::LoopsProgram(), PtConfig{}, options);
  const std::vector<Packet> ps = Packets(t.bytes);
  EXPECT_EQ(Count(ps, PacketType::kTipPge), 0u);
  EXPECT_EQ(Count(ps, PacketType::kTnt8), 0u);
  EXPECT_GE(Count(ps, PacketType::kPsb), 1u);
  EXPECT_EQ(t.truth.CountTraced(), 0u);
}

// MTC (SDM §33.4.2.12): CTC[mtc_period+7:mtc_period], one per change.
TEST(Generator, MtcCarriesTheCtcBitsOfMtcPeriod) {
  for (uint8_t period : {0, 3}) {
    PtConfig config;
    config.mtc = true;
    config.mtc_period = period;
    const GeneratedTrace t = Gen(testing::LoopsProgram(), config);
    std::vector<uint8_t> ctc;
    for (const Packet& p : Packets(t.bytes)) {
      if (p.type == PacketType::kMtc) ctc.push_back(p.mtc_ctc());
    }
    ASSERT_GT(ctc.size(), 10u);
    for (size_t i = 1; i < ctc.size(); ++i) EXPECT_NE(ctc[i], ctc[i - 1]) << "an MTC per change";
    const uint64_t ctc_ticks = (t.truth.clock.tsc_end - t.truth.clock.tsc_start) / t.truth.clock.ctc_ebx;
    EXPECT_LE(ctc.size(), (ctc_ticks >> period) + 1);
  }
  PtConfig off;
  EXPECT_EQ(Count(Packets(Gen(testing::LoopsProgram(), off).bytes), PacketType::kMtc), 0u);
}

// CYC (SDM §33.4.2.14, perf-intel-pt.txt "cyc_thresh"): cycles since the
// last CYC, never fewer than 2^(cyc_thresh-1).
TEST(Generator, CycRespectsCycThresh) {
  for (uint8_t thresh : {0, 4}) {
    PtConfig config;
    config.cyc = true;
    config.cyc_thresh = thresh;
    const GeneratedTrace t = Gen(testing::LoopsProgram(), config);
    size_t n = 0;
    for (const Packet& p : Packets(t.bytes)) {
      if (p.type != PacketType::kCyc) continue;
      ++n;
      EXPECT_GE(p.cyc(), std::max<uint64_t>(1, config.cyc_threshold_cycles()));
    }
    EXPECT_GT(n, 50u);
  }
}

// OVF (SDM §33.4.2.16): after it a FUP with the IP tracing resumes at, then a PSB+.
TEST(Generator, OverflowIsOvfFupPsb) {
  RunOptions options;
  options.overflow_every = 300;
  const GeneratedTrace t = Gen(testing::LoopsProgram(), PtConfig{}, options);
  const std::vector<Packet> ps = Packets(t.bytes);
  size_t ovfs = 0;
  for (size_t i = 0; i + 2 < ps.size(); ++i) {
    if (ps[i].type != PacketType::kOvf) continue;
    ++ovfs;
    EXPECT_EQ(ps[i + 1].type, PacketType::kFup);
    EXPECT_EQ(ps[i + 1].ipbytes(), static_cast<uint8_t>(pt::IpBytes::kFull));
    EXPECT_EQ(ps[i + 2].type, PacketType::kPsb);
  }
  EXPECT_GT(ovfs, 3u);
  EXPECT_EQ(ovfs, t.truth.CountEvents(EventKind::kOverflow));
  EXPECT_LT(t.truth.CountTraced(), t.truth.insns.size()) << "instructions lost in overflows are not traced";
}

// A small internal buffer that drains slower than packets come overflows by itself.
TEST(Generator, OutputBufferOverflowsWhenItFills) {
  PtConfig config;
  config.cyc = true;
  config.mtc = true;
  RunOptions options;
  options.output_buffer_bytes = 48;
  options.drain_cycles_per_byte = 8;
  options.max_insns = 20000;
  const GeneratedTrace t = Gen(testing::DispatchProgram(), config, options);
  EXPECT_GT(t.truth.CountEvents(EventKind::kOverflow), 0u);
  const LibiptFlow flow = DecodeFlowWithLibipt(t.bytes, t.truth);
  EXPECT_THAT(flow.errors, IsEmpty());
  EXPECT_EQ(flow.ips, t.truth.TracedIps());
}

// PTW (SDM §33.4.2.21, perf-intel-pt.txt "ptw", "fup_on_ptw").
TEST(Generator, PtwriteGivesPtwAndFupOnPtw) {
  for (bool fup : {false, true}) {
    PtConfig config;
    config.ptw = true;
    config.fup_on_ptw = fup;
    const GeneratedTrace t = Gen(testing::DispatchProgram(), config);
    const std::vector<Packet> ps = Packets(t.bytes);
    std::vector<uint64_t> payloads;
    for (size_t i = 0; i < ps.size(); ++i) {
      if (ps[i].type != PacketType::kPtw) continue;
      payloads.push_back(ps[i].ptw_payload());
      EXPECT_EQ(ps[i].ptw_ip(), fup);
      if (fup) {
        EXPECT_EQ(ps.at(i + 1).type, PacketType::kFup);
      }
    }
    std::vector<uint64_t> expected;
    for (const PtwriteRecord& r : t.truth.ptwrites) {
      EXPECT_TRUE(r.traced);
      expected.push_back(r.payload);
      if (r.bytes == 4) {
        EXPECT_LE(r.payload, 0xffffffffu);
      }
    }
    EXPECT_EQ(payloads, expected);
    EXPECT_GT(payloads.size(), 10u);
  }
  EXPECT_EQ(Count(Packets(Gen(testing::DispatchProgram(), PtConfig{}).bytes), PacketType::kPtw), 0u);
}

// Power events (SDM §33.4.2.22-25, perf-intel-pt.txt "pwr_evt").
TEST(Generator, PowerEventsOnlyWithPwrEvt) {
  for (bool pwr : {false, true}) {
    PtConfig config;
    config.pwr_evt = pwr;
    RunOptions options;
    options.power_every = 200;
    const GeneratedTrace t = Gen(testing::LoopsProgram(), config, options);
    const std::vector<Packet> ps = Packets(t.bytes);
    size_t seqs = 0;
    for (size_t i = 0; i + 4 < ps.size(); ++i) {
      if (ps[i].type != PacketType::kMwait) continue;
      ++seqs;
      EXPECT_EQ(ps[i + 1].type, PacketType::kPwre);
      EXPECT_EQ(ps[i + 2].type, PacketType::kExStop);
      EXPECT_TRUE(ps[i + 2].exstop_ip());
      EXPECT_EQ(ps[i + 3].type, PacketType::kFup);
      EXPECT_EQ(ps[i + 4].type, PacketType::kPwrx);
    }
    if (pwr) {
      EXPECT_GT(seqs, 5u);
    } else {
      EXPECT_EQ(seqs, 0u);
      EXPECT_EQ(Count(ps, PacketType::kPwre), 0u);
    }
  }
}

// Interrupts (SDM §33.4.2.6 FUP, §33.4.2.5 TIP.PGD, §33.4.2.4 TIP.PGE) and
// SYSCALL (a far transfer: TIP.PGD), user-only tracing.
TEST(Generator, InterruptsAndSyscallsLeaveAndReenterUserCode) {
  RunOptions options;
  options.interrupt_every = 100;
  const GeneratedTrace t = Gen(testing::DispatchProgram(), PtConfig{}, options);
  const std::vector<Packet> ps = Packets(t.bytes);
  EXPECT_EQ(Count(ps, PacketType::kTipPgd), t.truth.CountTracedEvents(EventKind::kInterrupt) +
                                                t.truth.CountTracedEvents(EventKind::kSyscall) +
                                                t.truth.CountTracedEvents(EventKind::kDisable));
  EXPECT_EQ(Count(ps, PacketType::kTipPge), t.truth.CountTracedEvents(EventKind::kEnable));
  EXPECT_GT(t.truth.CountEvents(EventKind::kInterrupt), 10u);
  EXPECT_GT(t.truth.CountEvents(EventKind::kSyscall), 10u);
  for (size_t i = 0; i < ps.size(); ++i) {
    if (ps[i].type == PacketType::kTipPgd) {
      EXPECT_EQ(ps[i].ipbytes(), 0) << "the kernel IP is suppressed";
    }
  }
}

// Program::gates: a gate jump is taken unless a request is pending; each
// request falls through once (here into a SYSCALL), and libipt follows.
TEST(Generator, GatesFallThroughOncePerRequest) {
  Assembler a(0x401000, "gated");
  auto loop = a.NewLabel(), skip = a.NewLabel(), stub = a.NewLabel();
  a.Bind(loop);
  a.AluOp();
  a.JccGate(0x5, skip, /*short_form=*/true);
  a.Call(stub);
  a.Bind(skip);
  a.Jmp(loop);
  a.Bind(stub);
  a.Syscall();
  a.Ret();
  ASSERT_OK_AND_ASSIGN(Program p, a.Finish());
  ASSERT_EQ(p.gates.size(), 1u);
  PtGenerator gen(p, PtConfig{}, RunOptions{});
  ASSERT_OK(gen.Run(1000));
  EXPECT_EQ(gen.far_transfers(), 0u);
  gen.RequestGate(3);
  ASSERT_OK(gen.Run(1000));
  EXPECT_EQ(gen.far_transfers(), 3u);
  EXPECT_EQ(gen.gate_requests(), 0u);
  ASSERT_OK(gen.Finish());
  const GroundTruth& truth = gen.truth();
  EXPECT_EQ(truth.CountTracedEvents(EventKind::kSyscall), 3u);
  const LibiptFlow flow = DecodeFlowWithLibipt(gen.trace(), truth);
  EXPECT_THAT(flow.errors, IsEmpty());
  EXPECT_EQ(flow.ips, truth.TracedIps());
  EXPECT_EQ(flow.CountEvents(ptev_disabled), 3u);
}

// Incremental runs give the same bytes and truth as one run (the AUX area
// takes the trace in chunks).
TEST(Generator, ChunkedRunEqualsOneRun) {
  PtConfig config;
  config.mtc = true;
  config.cyc = true;
  RunOptions options;
  options.max_insns = 3000;
  options.interrupt_every = 150;
  const GeneratedTrace whole = Gen(testing::DispatchProgram(), config, options);
  PtGenerator gen(testing::DispatchProgram(), config, options);
  std::vector<uint8_t> bytes;
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE(gen.Run(100).ok());
    const std::vector<uint8_t> chunk = gen.TakeTrace();
    bytes.insert(bytes.end(), chunk.begin(), chunk.end());
  }
  ASSERT_TRUE(gen.Finish().ok());
  const std::vector<uint8_t> last = gen.TakeTrace();
  bytes.insert(bytes.end(), last.begin(), last.end());
  EXPECT_EQ(bytes, whole.bytes);
  EXPECT_EQ(gen.truth(), whole.truth);
}

// TakeBytes: exactly the bytes asked for, in order, the same stream as one run.
TEST(Generator, TakeBytesCutsTheSameStream) {
  PtConfig config;
  config.mtc = true;
  RunOptions options;
  options.oracle.taken_percent = 80;
  PtGenerator gen(testing::ExitProgram(), config, options);
  std::vector<uint8_t> bytes;
  for (;;) {
    Result<std::vector<uint8_t>> chunk = gen.TakeBytes(37);
    ASSERT_TRUE(chunk.ok()) << chunk.ToString();
    bytes.insert(bytes.end(), chunk->begin(), chunk->end());
    if (chunk->size() < 37) break;
  }
  EXPECT_TRUE(gen.finished());
  EXPECT_EQ(bytes, gen.trace());
  options.max_insns = 1u << 20;
  const GeneratedTrace whole = Gen(testing::ExitProgram(), config, options);
  EXPECT_EQ(bytes, whole.bytes);
  // A config that writes nothing more: returns what there is.
  PtConfig quiet;
  quiet.pt = true;
  quiet.branch = false;
  quiet.tsc = false;
  PtGenerator idle(testing::LoopsProgram(), quiet, RunOptions{});
  Result<std::vector<uint8_t>> few = idle.TakeBytes(1 << 20, 10000);
  ASSERT_TRUE(few.ok());
  EXPECT_LT(few->size(), 100u);
  EXPECT_FALSE(idle.finished());
}

// The ground truth's clock: TSC and core cycles per instruction, CBR
// changes scaling TSC ticks per core cycle (cbr / current ratio).
TEST(Generator, ClockTruthFollowsCbr) {
  PtConfig config;
  RunOptions options;
  options.cbr_change_every = 300;
  const GeneratedTrace t = Gen(testing::LoopsProgram(), config, options);
  const std::vector<Packet> ps = Packets(t.bytes);
  size_t cbr_changes = 0;
  bool in_psb = false;
  std::vector<uint8_t> ratios;
  for (const Packet& p : ps) {
    if (p.type == PacketType::kPsb) in_psb = true;
    if (p.type == PacketType::kPsbEnd) in_psb = false;
    if (p.type == PacketType::kCbr && !in_psb) ++cbr_changes;
    if (p.type == PacketType::kCbr) ratios.push_back(p.cbr());
  }
  EXPECT_EQ(cbr_changes, t.truth.CountEvents(EventKind::kCbr));
  EXPECT_GT(cbr_changes, 5u);
  for (uint8_t r : ratios) {
    EXPECT_GE(r, options.cbr / 2);
    EXPECT_LE(r, options.cbr * 3 / 2);
  }
  const std::vector<InsnRecord>& insns = t.truth.insns;
  for (size_t i = 1; i < insns.size(); ++i) {
    ASSERT_GT(insns[i].cycles, insns[i - 1].cycles);
    ASSERT_GE(insns[i].tsc, insns[i - 1].tsc);
  }
  // Over the run, TSC ticks per core cycle differ from 1 once the ratio moves.
  const double per_cycle = static_cast<double>(insns.back().tsc - insns.front().tsc) /
                           static_cast<double>(insns.back().cycles - insns.front().cycles);
  EXPECT_NE(per_cycle, 1.0);
  const GeneratedTrace steady = Gen(testing::LoopsProgram(), config);
  EXPECT_EQ(steady.truth.insns.back().tsc - steady.truth.insns.front().tsc,
            steady.truth.insns.back().cycles - steady.truth.insns.front().cycles)
      << "at the nominal ratio one TSC tick per cycle (no kernel time in LoopsProgram)";
}

// PERF_EVENT_IOC_DISABLE/ENABLE: untraced while disabled, PSB+ and TIP.PGE on enable.
TEST(Generator, DisableAndEnable) {
  PtGenerator gen(testing::LoopsProgram(), PtConfig{}, RunOptions{});
  ASSERT_TRUE(gen.Run(500).ok());
  gen.Disable();
  EXPECT_FALSE(gen.enabled());
  ASSERT_TRUE(gen.Run(500).ok());
  gen.Enable();
  ASSERT_TRUE(gen.Run(500).ok());
  ASSERT_TRUE(gen.Finish().ok());
  const GroundTruth& truth = gen.truth();
  ASSERT_EQ(truth.insns.size(), 1500u);
  for (size_t i = 0; i < truth.insns.size(); ++i) EXPECT_EQ(truth.insns[i].traced, i < 500 || i >= 1000) << i;
  const LibiptFlow flow = DecodeFlowWithLibipt(gen.trace(), truth);
  EXPECT_THAT(flow.errors, IsEmpty());
  EXPECT_EQ(flow.ips, truth.TracedIps());
  EXPECT_EQ(Count(Packets(gen.trace()), PacketType::kPsb), truth.CountEvents(EventKind::kPsb));
}

TEST(Generator, ExitPointsEndTheRun) {
  RunOptions options;
  options.oracle.taken_percent = 80;
  options.max_insns = 1000000;
  const GeneratedTrace t = Gen(testing::ExitProgram(), PtConfig{}, options);
  ASSERT_FALSE(t.truth.insns.empty());
  EXPECT_LT(t.truth.insns.size(), 10000u);
  const InsnRecord& last = t.truth.insns.back();
  EXPECT_EQ(last.branch, pt::BranchClass::kCondJump) << "the loop's branch falls through to the exit";
  EXPECT_EQ(t.truth.events.back().kind, EventKind::kDisable);
}

TEST(Generator, ErrorsNameTheProblem) {
  Assembler a(0x1000, "bad");
  auto out = a.NewLabel();
  a.Jmp(out);
  a.Bind(out);
  Result<Program> p = a.Finish();
  ASSERT_TRUE(p.ok());
  // Falls off the end of the image.
  Result<GeneratedTrace> t = Generate(*p, PtConfig{}, RunOptions{});
  EXPECT_EQ(t.error(), EFAULT);
  EXPECT_THAT(t.call(), ::testing::HasSubstr("outside the code image"));

  Assembler b(0x1000, "noind");
  b.Raw({0xff, 0xe0});  // jmp *%rax with no targets
  Result<Program> q = b.Finish();
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(Generate(*q, PtConfig{}, RunOptions{}).error(), EINVAL);

  Assembler c(0x1000, "ud");
  c.Raw({0x06});  // PUSH ES: invalid in 64-bit mode
  Result<Program> r = c.Finish();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Generate(*r, PtConfig{}, RunOptions{}).error(), EILSEQ);
}

}  // namespace
}  // namespace perftest::pt_sim
