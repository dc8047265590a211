// itrace parsing (perf-intel-pt.txt "New --itrace option") and synthesis
// against the simulator's ground truth (testing/flow_trace.h).
#include "harness/pt/itrace.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <set>
#include <utility>

#include "harness/pt/testing/flow_trace.h"
#include "harness/pt/testing/spec.h"

namespace perftest::pt {
namespace {

using Unit = ItraceOptions::Unit;

TEST(ItraceParse, DefaultIsCepwx) {
  Result<ItraceOptions> o = ParseItrace("");
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->calls && o->errors && o->power && o->ptwrite && o->transactions);
  EXPECT_FALSE(o->instructions || o->branches || o->returns);
}

TEST(ItraceParse, PeriodsAndUnits) {
  struct {
    const char* spec;
    Unit unit;
    uint64_t period;
  } cases[] = {
      {"i", Unit::kNanoseconds, 100000},  // default 100us
      {"i10us", Unit::kNanoseconds, 10000},
      {"i2ms", Unit::kNanoseconds, 2000000},
      {"i500ns", Unit::kNanoseconds, 500},
      {"i500", Unit::kNanoseconds, 500},  // a bare number is ns
      {"i1000t", Unit::kTicks, 1000},
      {"i7i", Unit::kInstructions, 7},
      {"i0ns", Unit::kInstructions, 1},  // "as often as possible" = i1i
  };
  for (const auto& c : cases) {
    Result<ItraceOptions> o = ParseItrace(c.spec);
    ASSERT_TRUE(o.ok()) << c.spec << ": " << o.ToString();
    EXPECT_TRUE(o->instructions) << c.spec;
    EXPECT_EQ(o->period_unit, c.unit) << c.spec;
    EXPECT_EQ(o->period, c.period) << c.spec;
  }
}

TEST(ItraceParse, Letters) {
  Result<ItraceOptions> o = ParseItrace("i0nss1000000bcrxwpe-o-lg32l10qq");
  ASSERT_TRUE(o.ok()) << o.ToString();
  EXPECT_EQ(o->skip, 1000000u);
  EXPECT_TRUE(o->branches && o->calls && o->returns && o->transactions && o->ptwrite && o->power && o->errors);
  EXPECT_TRUE(o->suppress_overflow && o->suppress_lost);
  EXPECT_EQ(o->callchain_size, 32u);
  EXPECT_EQ(o->last_branch_size, 10u);
  EXPECT_EQ(o->quick, 2);
}

TEST(ItraceParse, ErrorsNameTheLetter) {
  for (const char* bad : {"z", "g2000", "l0", "G0", "L2000", "e+z", "d+z", "d-q", "qqq", "s"}) {
    Result<ItraceOptions> o = ParseItrace(bad);
    EXPECT_EQ(o.error(), EINVAL) << bad;
  }
  EXPECT_NE(ParseItrace("iz").call().find("'z'"), std::string::npos) << ParseItrace("iz").call();
}

TEST(ItraceParse, DebugLogAndExistingEventLetters) {
  testing::Spec("pt.itrace.parse_dGL", "perf-intel-pt.txt \"New --itrace option\" d, G, L; auxtrace.h AUXTRACE_LOG_FLG_*");
  Result<ItraceOptions> o = ParseItrace("d");
  ASSERT_TRUE(o.ok()) << o.ToString();
  EXPECT_TRUE(o->debug_log && o->log_perf_events);
  EXPECT_FALSE(o->log_on_error || o->log_stdout);
  o = ParseItrace("ed-a+e+o");
  ASSERT_TRUE(o.ok()) << o.ToString();
  EXPECT_TRUE(o->errors && o->debug_log && o->log_on_error && o->log_stdout);
  EXPECT_FALSE(o->log_perf_events);
  EXPECT_EQ(o->log_on_error_size, 16384u);
  o = ParseItrace("G8L4");
  ASSERT_TRUE(o.ok()) << o.ToString();
  EXPECT_TRUE(o->add_callchain && o->add_last_branch);
  EXPECT_FALSE(o->callchain || o->last_branch);
  EXPECT_EQ(o->callchain_size, 8u);
  EXPECT_EQ(o->last_branch_size, 4u);
}

TEST(ItraceParse, FlagString) {
  EXPECT_EQ(FlagString(kFlagBranch | kFlagCall | kFlagSyscall), "bcs");
  EXPECT_EQ(FlagString(kFlagBranch | kFlagTraceEnd), "bE");
  EXPECT_EQ(FlagString(kFlagBranch | kFlagConditional | kFlagInTx), "box");
}

struct SynthRun {
  testing::FlowTrace t;
  Image image;
  std::vector<ItraceSample> samples;
  ItraceStats stats;
};

SynthRun Synth(const char* spec, uint64_t seed = 5) {
  SynthRun r;
  r.t = testing::MakeFlowTrace({.seed = seed, .insns = 30000});
  (void)r.image.AddBlob(r.t.code_base, r.t.code);
  Result<ItraceOptions> o = ParseItrace(spec);
  EXPECT_TRUE(o.ok()) << spec;
  ItraceSynth synth(*o);
  r.stats = SynthesizeItrace(r.t.trace, r.image, *o, {}, &synth);
  r.samples = synth.samples();
  return r;
}

TEST(ItraceSynth, EveryInstructionIsTheGroundTruth) {
  SynthRun r = Synth("i1i");
  std::vector<uint64_t> ips;
  for (const ItraceSample& s : r.samples) {
    ASSERT_EQ(s.event, "instructions");
    EXPECT_EQ(s.period, 1u);
    ips.push_back(s.ip);
  }
  EXPECT_EQ(ips, r.t.executed);
  EXPECT_EQ(r.stats.errors, 0u);
}

TEST(ItraceSynth, InstructionPeriodCountsInstructions) {
  SynthRun r = Synth("i1000i");
  ASSERT_FALSE(r.samples.empty());
  EXPECT_EQ(r.samples.size(), r.t.executed.size() / 1000);
  for (size_t k = 0; k < r.samples.size(); ++k) {
    EXPECT_EQ(r.samples[k].period, 1000u);
    EXPECT_EQ(r.samples[k].ip, r.t.executed[(k + 1) * 1000 - 1]);
  }
}

TEST(ItraceSynth, BranchesAreTakenTransitionsOfTheGroundTruth) {
  SynthRun r = Synth("b");
  std::set<std::pair<uint64_t, uint64_t>> pairs;
  for (size_t i = 0; i + 1 < r.t.executed.size(); ++i) pairs.emplace(r.t.executed[i], r.t.executed[i + 1]);
  // A branch into an instruction that an interrupt then preempts is not a
  // pair of executed instructions: the target never ran.
  std::set<uint64_t> preempted;
  for (const ItraceSample& s : r.samples)
    if (s.flags & kFlagAsync) preempted.insert(s.ip);
  size_t checked = 0, begins = 0, ends = 0;
  for (const ItraceSample& s : r.samples) {
    ASSERT_EQ(s.event, "branches");
    if (s.flags & kFlagTraceBegin) ++begins;
    if (s.flags & kFlagTraceEnd) ++ends;
    if (s.ip == 0 || s.addr == 0 || (s.flags & (kFlagAsync | kFlagTraceBegin | kFlagTraceEnd))) continue;
    if (preempted.count(s.addr)) continue;
    EXPECT_TRUE(pairs.count({s.ip, s.addr})) << std::hex << s.ip << " => " << s.addr;
    ++checked;
  }
  EXPECT_GT(checked, 1000u);
  EXPECT_GT(begins, 0u);  // TIP.PGE after each syscall
  EXPECT_GT(ends, 0u);    // TIP.PGD at each syscall
}

// c and r select from the b samples as perf's branches_filter does: c calls,
// asynchronous branches and trace ends, r returns and trace begins; a
// sample both select (a return that ends the trace) is in cr once.
TEST(ItraceSynth, CallsAndReturnsOnly) {
  SynthRun b = Synth("b");
  size_t want_c = 0, want_r = 0, both = 0;
  for (const ItraceSample& s : b.samples) {
    const bool c = s.flags & (kFlagCall | kFlagAsync | kFlagTraceEnd);
    const bool r = s.flags & (kFlagReturn | kFlagTraceBegin);
    want_c += c;
    want_r += r;
    both += c && r;
  }
  SynthRun c = Synth("c");
  SynthRun r = Synth("r");
  ASSERT_FALSE(c.samples.empty());
  ASSERT_FALSE(r.samples.empty());
  for (const ItraceSample& s : c.samples) {
    EXPECT_TRUE(s.flags & (kFlagCall | kFlagAsync | kFlagTraceEnd)) << FlagString(s.flags);
  }
  for (const ItraceSample& s : r.samples) EXPECT_TRUE(s.flags & (kFlagReturn | kFlagTraceBegin)) << FlagString(s.flags);
  EXPECT_EQ(c.samples.size(), want_c);
  EXPECT_EQ(r.samples.size(), want_r);
  SynthRun cr = Synth("cr");
  EXPECT_EQ(cr.samples.size(), want_c + want_r - both);
}

// The flags of the far transfers and asynchronous branches as perf's
// intel_pt_insn_type() and intel_pt_sample_flags() give them: the trace's
// SYSCALLs end it (b c s E: "tr end  syscall"), its interrupts are "hw int"
// (b c y i) or, disabling tracing, b y E.
TEST(ItraceSynth, FarAndAsyncBranchFlagsArePerfsOwn) {
  SynthRun b = Synth("b");
  std::set<std::string> names;
  for (const ItraceSample& s : b.samples) {
    if (s.flags & (kFlagSyscall | kFlagAsync)) names.insert(FlagName(s.flags));
    EXPECT_FALSE((s.flags & kFlagAsync) && (s.flags & kFlagTraceEnd) && (s.flags & (kFlagCall | kFlagInterrupt)))
        << FlagString(s.flags) << ": an asynchronous trace end is b y E";
    if ((s.flags & kFlagAsync) && !(s.flags & kFlagTraceEnd)) {
      EXPECT_EQ(s.flags & ~kFlagInTx, kFlagBranch | kFlagCall | kFlagAsync | kFlagInterrupt) << FlagString(s.flags);
    }
  }
  EXPECT_TRUE(names.count("tr end  syscall      ")) << ::testing::PrintToString(names);
  EXPECT_TRUE(names.count("hw int               ")) << ::testing::PrintToString(names);
}

TEST(ItraceParse, FlagNamesArePerfScripts) {
  EXPECT_EQ(FlagName(kFlagBranch | kFlagCall), "call                 ");
  EXPECT_EQ(FlagName(kFlagBranch | kFlagConditional | kFlagInTx), "jcc               (x)");
  EXPECT_EQ(FlagName(kFlagBranch | kFlagCall | kFlagSyscall | kFlagTraceEnd), "tr end  syscall      ");
  EXPECT_EQ(FlagName(kFlagBranch | kFlagTraceBegin), "tr strt              ");
  EXPECT_EQ(FlagName(kFlagBranch | kFlagAsync | kFlagTraceEnd), "tr end  async        ");
  EXPECT_EQ(FlagName(kFlagBranch | kFlagCall | kFlagReturn), "bcr                  ") << "no name: the letters";
}

TEST(ItraceSynth, CallChainAndLastBranch) {
  SynthRun r = Synth("i100ig4l8");
  ASSERT_FALSE(r.samples.empty());
  bool deep = false;
  for (const ItraceSample& s : r.samples) {
    ASSERT_FALSE(s.callchain.empty());
    EXPECT_EQ(s.callchain[0], s.ip);
    EXPECT_LE(s.callchain.size(), 4u);
    EXPECT_LE(s.branch_stack.size(), 8u);
    deep |= s.callchain.size() > 1;
  }
  EXPECT_TRUE(deep);
}

TEST(ItraceSynth, SkipDropsTheFirstSamples) {
  SynthRun all = Synth("i50i");
  SynthRun skipped = Synth("i50is10");
  ASSERT_EQ(skipped.samples.size() + 10, all.samples.size());
  EXPECT_EQ(skipped.samples[0].ip, all.samples[10].ip);
}

TEST(ItraceSynth, ErrorsAndOverflows) {
  SynthRun r = Synth("e", 11);
  size_t overflows = 0;
  for (const ItraceSample& s : r.samples) overflows += s.error == EOVERFLOW;
  SynthRun quiet = Synth("e-o", 11);
  size_t quiet_overflows = 0;
  for (const ItraceSample& s : quiet.samples) quiet_overflows += s.error == EOVERFLOW;
  EXPECT_EQ(quiet_overflows, 0u);
  // Seed 11 has an OVF (the simulator's default rate); if not, nothing to hide.
  EXPECT_EQ(r.samples.size() - overflows, quiet.samples.size());
}

// Data lost at an offset (SynthesizeItrace's data_lost): the trace is
// decoded as two stretches, the second from its first PSB on, with one
// error ENOSPC "Lost trace data" at the offset between them unless e-l; in
// quick mode too.
TEST(ItraceSynth, LostDataSplitsTheTrace) {
  for (const char* letters : {"e", "eq"}) {
    SCOPED_TRACE(letters);
    const testing::FlowTrace t = testing::MakeFlowTrace({.seed = 5, .insns = 30000, .async = false, .overflow = false});
    Image image;
    ASSERT_TRUE(image.AddBlob(t.code_base, t.code).ok());
    const uint64_t cut = t.trace.size() / 2 + 3;  // mid-packet, most likely
    auto run = [&](const char* spec, std::vector<uint64_t> lost) {
      Result<ItraceOptions> o = ParseItrace(spec);
      EXPECT_TRUE(o.ok());
      ItraceSynth synth(*o);
      SynthesizeItrace(t.trace, image, *o, {}, &synth, nullptr, lost);
      return synth.samples();
    };
    EXPECT_TRUE(run(letters, {}).empty()) << "a clean trace: no errors";
    const std::vector<ItraceSample> with = run(letters, {cut});
    ASSERT_FALSE(with.empty());
    size_t lost = 0;
    for (const ItraceSample& s : with) {
      if (s.error != ENOSPC) continue;
      ++lost;
      EXPECT_EQ(s.offset, cut);
      EXPECT_EQ(s.message, "Lost trace data");
    }
    EXPECT_EQ(lost, 1u);
    const std::string quiet = std::string(letters).insert(1, "-l");
    EXPECT_EQ(run(quiet.c_str(), {cut}).size(), with.size() - 1);
  }
}

TEST(ItraceSynth, QuickUsesIpPacketsOnly) {
  SynthRun q = Synth("bq");
  SynthRun full = Synth("b");
  ASSERT_FALSE(q.samples.empty());
  EXPECT_LT(q.samples.size(), full.samples.size());
  EXPECT_EQ(q.stats.instructions, 0u);  // no object code walked
  SynthRun qq = Synth("iqq");
  ASSERT_FALSE(qq.samples.empty());  // one per PSB+ FUP
  for (const ItraceSample& s : qq.samples) EXPECT_EQ(s.event, "instructions");
}

TEST(ItraceSynth, TextAndJson) {
  ItraceSample s;
  s.event = "branches";
  s.ip = 0x401000;
  s.addr = 0x402000;
  s.flags = kFlagBranch | kFlagCall;
  EXPECT_NE(ToText(s).find("bc"), std::string::npos) << ToText(s);
  EXPECT_NE(ToText(s).find("401000 =>"), std::string::npos) << ToText(s);
  s.depth = 2;
  EXPECT_EQ(ToJson(s), R"({"event":"branches","time":0,"ip":4198400,"addr":4202496,"flags":"bc","depth":2})");
  // perf script --call-trace / --call-ret-trace: the target, 4 spaces per depth.
  const std::string indent(8, ' ');  // depth 2
  EXPECT_EQ(ToCallTrace(s, false), "           0: " + indent + "          402000");
  EXPECT_EQ(ToCallTrace(s, true), "           0: call                  " + indent + "          402000");
  s.flags = kFlagBranch | kFlagReturn;
  EXPECT_EQ(ToCallTrace(s, true), "           0: return                " + indent + "          401000")
      << "a return: its source";
}

}  // namespace
}  // namespace perftest::pt
