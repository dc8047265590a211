// Unit tests of the pt_sim pieces: config bits, the code image, the
// assembler, the oracle and the ground-truth file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "harness/pt/insn.h"
#include "mocks/pt_sim/config.h"
#include "mocks/pt_sim/generator.h"
#include "mocks/pt_sim/ground_truth.h"
#include "mocks/pt_sim/image.h"
#include "mocks/pt_sim/oracle.h"
#include "mocks/pt_sim/program.h"
#include "mocks/pt_sim/test_programs.h"

namespace perftest::pt_sim {
namespace {

// arch/x86/events/intel/pt.c PMU_FORMAT_ATTR bit positions.
TEST(PtConfig, BitsAreTheSysfsFormatPositions) {
  PtConfig c;
  c = PtConfig::FromAttrConfig(0);
  EXPECT_FALSE(c.pt || c.cyc || c.pwr_evt || c.fup_on_ptw || c.mtc || c.tsc || c.noretcomp || c.ptw || c.branch);
  EXPECT_TRUE(PtConfig::FromAttrConfig(1ull << 0).pt);
  EXPECT_TRUE(PtConfig::FromAttrConfig(1ull << 1).cyc);
  EXPECT_TRUE(PtConfig::FromAttrConfig(1ull << 4).pwr_evt);
  EXPECT_TRUE(PtConfig::FromAttrConfig(1ull << 5).fup_on_ptw);
  EXPECT_TRUE(PtConfig::FromAttrConfig(1ull << 9).mtc);
  EXPECT_TRUE(PtConfig::FromAttrConfig(1ull << 10).tsc);
  EXPECT_TRUE(PtConfig::FromAttrConfig(1ull << 11).noretcomp);
  EXPECT_TRUE(PtConfig::FromAttrConfig(1ull << 12).ptw);
  EXPECT_TRUE(PtConfig::FromAttrConfig(1ull << 13).branch);
  EXPECT_EQ(PtConfig::FromAttrConfig(0xfull << 14).mtc_period, 15);
  EXPECT_EQ(PtConfig::FromAttrConfig(0xfull << 19).cyc_thresh, 15);
  EXPECT_EQ(PtConfig::FromAttrConfig(0xfull << 24).psb_period, 15);
  // perf's `intel_pt/config=0x400/`: tsc only.
  EXPECT_EQ(PtConfig::FromAttrConfig(0x400).ToAttrConfig(), 0x400u);
}

// pt_config() in arch/x86/events/intel/pt.c: BranchEn follows `branch` only
// with the pass-through bit `pt`; without it branch tracing is always on.
TEST(PtConfig, BranchEnNeedsPassThroughToBeCleared) {
  EXPECT_TRUE(PtConfig::FromAttrConfig(0x400).branch_en());                        // tsc only
  EXPECT_TRUE(PtConfig::FromAttrConfig(1ull << 0 | 1ull << 13).branch_en());       // pt, branch
  EXPECT_FALSE(PtConfig::FromAttrConfig(1ull << 0).branch_en());                   // pt, branch=0
}

TEST(PtConfig, RoundTrips) {
  PtConfig c;
  c.cyc = c.mtc = c.ptw = c.fup_on_ptw = c.pwr_evt = c.noretcomp = true;
  c.mtc_period = 3;
  c.cyc_thresh = 12;
  c.psb_period = 5;
  EXPECT_EQ(PtConfig::FromAttrConfig(c.ToAttrConfig()), c);
  EXPECT_EQ(c.psb_period_bytes(), 1u << 16);
  EXPECT_EQ(c.cyc_threshold_cycles(), 1u << 11);
  EXPECT_EQ(PtConfig{}.psb_period_bytes(), 2048u);
  EXPECT_EQ(PtConfig{}.cyc_threshold_cycles(), 0u);
}

TEST(CodeImage, ReadsWithinSections) {
  CodeImage image;
  ASSERT_TRUE(image.Add(0x1000, {1, 2, 3}, "a").ok());
  ASSERT_TRUE(image.Add(0x2000, {4, 5}, "b").ok());
  EXPECT_EQ(image.Read(0x1001).size(), 2u);
  EXPECT_EQ(image.Read(0x1001)[0], 2);
  EXPECT_TRUE(image.Read(0x1003).empty());
  EXPECT_TRUE(image.Read(0xfff).empty());
  EXPECT_EQ(image.Read(0x2001)[0], 5);
  EXPECT_EQ(image.Add(0x1002, {9}).error(), EEXIST);
  EXPECT_EQ(image.Add(0x3000, {}).error(), EINVAL);
}

// The assembler's encodings, checked with the project's classifier (libzydis).
TEST(Assembler, EncodesWhatTheClassifierReads) {
  Assembler a(0x400000);
  auto l = a.NewLabel();
  a.Bind(l);
  a.Nop(9);
  a.Jcc(0x4, l, true);
  a.Jcc(0x5, l);
  a.Jmp(l);
  a.Call(l);
  a.CallIndirect({l});
  a.JmpIndirect({l});
  a.Ptwrite(true);
  a.Syscall();
  a.Ret();
  Result<Program> p = a.Finish();
  ASSERT_TRUE(p.ok()) << p.ToString();
  const pt::BranchClass expected[] = {pt::BranchClass::kNone,         pt::BranchClass::kCondJump,
                                      pt::BranchClass::kCondJump,     pt::BranchClass::kDirectJump,
                                      pt::BranchClass::kDirectCall,   pt::BranchClass::kIndirectCall,
                                      pt::BranchClass::kIndirectJump, pt::BranchClass::kPtwrite,
                                      pt::BranchClass::kFarTransfer,  pt::BranchClass::kReturn};
  uint64_t ip = 0x400000;
  for (pt::BranchClass want : expected) {
    pt::Insn insn;
    ASSERT_EQ(pt::ClassifyInsn(p->image.Read(ip), ip, pt::ExecMode::k64Bit, &insn), 0) << std::hex << ip;
    EXPECT_EQ(insn.branch, want) << std::hex << ip;
    if (insn.has_target()) {
      EXPECT_EQ(insn.target, 0x400000u) << std::hex << ip;
    }
    ip = insn.next_ip();
  }
  EXPECT_EQ(p->indirect_targets.size(), 2u);
}

TEST(Assembler, RejectsUnboundLabelsAndFarShortJumps) {
  Assembler a(0x400000);
  auto l = a.NewLabel();
  a.Jmp(l);
  EXPECT_EQ(a.Finish().error(), EINVAL);
  Assembler b(0x400000);
  auto far = b.NewLabel();
  b.Jmp(far, true);
  b.Nop(9);
  for (int i = 0; i < 20; ++i) b.Nop(9);
  b.Bind(far);
  b.Ret();
  EXPECT_EQ(b.Finish().error(), EINVAL);
}

// Relocate(): the same run at another load address — every traced IP moved
// by the same distance, the code bytes the same.
TEST(Relocate, MovesTheRunWithItsCode) {
  const Program p = testing::DispatchProgram();
  const uint64_t from = p.image.sections().front().address;
  const uint64_t to = 0x555555559920;
  Result<Program> q = Relocate(p, to);
  ASSERT_TRUE(q.ok()) << q.ToString();
  ASSERT_EQ(q->image.sections().size(), p.image.sections().size());
  for (size_t i = 0; i < p.image.sections().size(); ++i) {
    EXPECT_EQ(q->image.sections()[i].address, p.image.sections()[i].address - from + to);
    EXPECT_EQ(q->image.sections()[i].bytes, p.image.sections()[i].bytes);
  }
  EXPECT_EQ(q->entry, p.entry - from + to);
  const PtConfig config;
  const RunOptions options{.max_insns = 2000};
  Result<GeneratedTrace> a = Generate(p, config, options);
  Result<GeneratedTrace> b = Generate(*q, config, options);
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<uint64_t> moved = a->truth.TracedIps();
  for (uint64_t& ip : moved) ip = ip - from + to;
  EXPECT_EQ(b->truth.TracedIps(), moved);
  EXPECT_EQ(Relocate(Program{}, to).error(), EINVAL);
}

TEST(BranchOracle, SameSeedSameDecisions) {
  BranchOracle a({.seed = 5}), b({.seed = 5}), c({.seed = 6});
  std::vector<bool> va, vb, vc;
  for (int i = 0; i < 64; ++i) {
    va.push_back(a.CondTaken(0));
    vb.push_back(b.CondTaken(0));
    vc.push_back(c.CondTaken(0));
  }
  EXPECT_EQ(va, vb);
  EXPECT_NE(va, vc);
  BranchOracle never({.seed = 1, .taken_percent = 0}), always({.seed = 1, .taken_percent = 100});
  for (int i = 0; i < 64; ++i) {
    EXPECT_FALSE(never.CondTaken(0));
    EXPECT_TRUE(always.CondTaken(0));
  }
}

TEST(GroundTruth, FileRoundTrips) {
  PtConfig config;
  config.ptw = true;
  config.mtc = true;
  RunOptions options;
  options.max_insns = 2000;
  options.interrupt_every = 100;
  Result<GeneratedTrace> t = Generate(testing::DispatchProgram(), config, options);
  ASSERT_TRUE(t.ok()) << t.ToString();
  const std::string path = ::testing::TempDir() + "/pt_sim_truth_" + std::to_string(getpid()) + ".json";
  ASSERT_TRUE(WriteGroundTruthFile(t->truth, path).ok());
  Result<GroundTruth> back = ReadGroundTruthFile(path);
  std::remove(path.c_str());
  ASSERT_TRUE(back.ok()) << back.ToString();
  EXPECT_EQ(*back, t->truth);
}

TEST(GroundTruth, GeneratedTraceFilesRoundTrip) {
  PtConfig config;
  config.cyc = true;
  RunOptions options;
  options.max_insns = 1000;
  Result<GeneratedTrace> t = Generate(testing::LoopsProgram(), config, options);
  ASSERT_TRUE(t.ok()) << t.ToString();
  const std::string base = ::testing::TempDir() + "/pt_sim_run_" + std::to_string(getpid());
  ASSERT_TRUE(WriteGeneratedTrace(*t, base).ok());
  Result<GeneratedTrace> back = ReadGeneratedTrace(base);
  ASSERT_TRUE(back.ok()) << back.ToString();
  EXPECT_EQ(back->bytes, t->bytes);
  EXPECT_EQ(back->truth, t->truth);
  // A .bin that is not the one the truth describes.
  if (FILE* f = std::fopen((base + ".bin").c_str(), "ab")) {
    std::fputc(0, f);
    std::fclose(f);
  }
  EXPECT_EQ(ReadGeneratedTrace(base).error(), EINVAL);
  std::remove((base + ".bin").c_str());
  std::remove((base + ".truth.json").c_str());
  EXPECT_EQ(ReadGeneratedTrace(base).error(), EIO);
}

TEST(GroundTruth, RejectsOtherDocuments) {
  EXPECT_EQ(GroundTruthFromJson(nlohmann::json{{"format", "x"}}).error(), EINVAL);
  EXPECT_EQ(ReadGroundTruthFile("/nonexistent/truth.json").error(), EIO);
}

}  // namespace
}  // namespace perftest::pt_sim
