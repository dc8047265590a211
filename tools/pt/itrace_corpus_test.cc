// itrace letters p (PSB events), G, L (existing events) and d (debug log)
// on traces of the PT generator (mocks/pt_sim/corpus.h), each expectation
// derived from the generator's ground truth: its PSB events, its executed
// instructions, calls, returns and branches.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "harness/pt/dump.h"
#include "harness/pt/itrace.h"
#include "harness/pt/itrace_log.h"
#include "harness/pt/testing/spec.h"
#include "mocks/pt_sim/corpus.h"
#include "tools/pt/decode_command.h"

namespace perftest::pt {
namespace {

using pt_sim::GroundTruth;

size_t ConfigIndex(const std::string& name) {
  const auto& configs = pt_sim::CorpusConfigs();
  for (size_t i = 0; i < configs.size(); ++i)
    if (configs[i].name == name) return i;
  ADD_FAILURE() << "no corpus config " << name;
  return 0;
}
size_t ProgramIndex(const std::string& name) {
  const auto& programs = pt_sim::CorpusPrograms();
  for (size_t i = 0; i < programs.size(); ++i)
    if (programs[i].name == name) return i;
  ADD_FAILURE() << "no corpus program " << name;
  return 0;
}

struct SimRun {
  pt_sim::GeneratedTrace t;
  Image image;
};

SimRun Generate(const std::string& program, const std::string& config, uint64_t max_insns = 20000) {
  SimRun r;
  Result<pt_sim::GeneratedTrace> t = pt_sim::GenerateCorpusCase(ProgramIndex(program), ConfigIndex(config), 1, max_insns);
  EXPECT_TRUE(t.ok()) << t.ToString();
  if (!t.ok()) return r;
  r.t = std::move(*t);
  for (const pt_sim::CodeSection& s : r.t.truth.image.sections()) EXPECT_TRUE(r.image.AddBlob(s.address, s.bytes).ok());
  return r;
}

std::vector<ItraceSample> Synthesize(const SimRun& r, const char* spec, std::vector<ExistingEvent> existing = {},
                                     ItraceLog* log = nullptr) {
  Result<ItraceOptions> o = ParseItrace(spec);
  EXPECT_TRUE(o.ok()) << o.ToString();
  ItraceSynth synth(*o);
  synth.SetExistingEvents(std::move(existing));
  SynthesizeItrace(r.t.bytes, r.image, *o, {}, &synth, log);
  return synth.samples();
}

// The PSB+s the generator wrote: offset, and the IP of the PSB+ FUP — the
// instruction it happened before, when branch tracing was on in user code
// then (the generator writes the FUP only then: not at the PSB+ before the
// first TIP.PGE, not while in the kernel between an interrupt, syscall or
// disable and the next enable); perf: state->from_ip = psb_ip, 0 without a
// FUP.
std::vector<std::pair<uint64_t, uint64_t>> TruthPsbs(const GroundTruth& truth) {
  std::vector<std::pair<uint64_t, uint64_t>> v;
  bool on = false;
  for (const pt_sim::EventRecord& e : truth.events) {
    switch (e.kind) {
      case pt_sim::EventKind::kEnable: on = true; break;
      case pt_sim::EventKind::kDisable:
      case pt_sim::EventKind::kInterrupt:
      case pt_sim::EventKind::kSyscall: on = false; break;
      case pt_sim::EventKind::kPsb: v.emplace_back(e.trace_offset, truth.config.branch && on ? e.ip : 0); break;
      default: break;
    }
  }
  return v;
}

std::vector<std::pair<uint64_t, uint64_t>> PsbSamples(const std::vector<ItraceSample>& samples) {
  std::vector<std::pair<uint64_t, uint64_t>> v;
  for (const ItraceSample& s : samples) {
    if (s.event != "psb") continue;
    EXPECT_EQ(s.payload, s.offset);
    v.emplace_back(s.offset, s.ip);
  }
  return v;
}

TEST(ItraceCorpus, PowerEventsIncludeEveryPsb) {
  testing::Spec("pt.itrace.psb",
                "perf-intel-pt.txt \"p synthesize power events (incl. PSB events)\"; perf intel_pt_synth_psb_sample");
  for (const char* config : {"tsc", "interrupts", "branch0", "pwr_evt"}) {
    SCOPED_TRACE(config);
    SimRun r = Generate("compiled", config, 200000);
    const auto expected = TruthPsbs(r.t.truth);
    ASSERT_GT(expected.size(), 1u);
    EXPECT_EQ(PsbSamples(Synthesize(r, "p")), expected);
    EXPECT_EQ(PsbSamples(Synthesize(r, "pq")), expected) << "quick mode";
    EXPECT_TRUE(PsbSamples(Synthesize(r, "b")).empty()) << "only with p";
  }
}

// The call stack before each traced instruction (return addresses, oldest
// first), and the taken branches before it (from, to), from the truth.
struct TruthFlow {
  std::vector<uint64_t> ips;
  std::vector<std::vector<uint64_t>> stacks;
  std::vector<size_t> branches_before;               // index into branches
  std::vector<std::pair<uint64_t, uint64_t>> branches;
};

std::string Hex(const std::vector<uint64_t>& v) {
  std::string s;
  for (uint64_t x : v) s += fmt::format("{:#x} ", x);
  return s;
}

TruthFlow Walk(const GroundTruth& truth) {
  TruthFlow f;
  std::vector<uint64_t> stack;
  bool first = true;
  for (size_t i = 0; i < truth.insns.size(); ++i) {
    const pt_sim::InsnRecord& x = truth.insns[i];
    if (!x.traced) continue;
    if (first) f.branches.emplace_back(0, x.ip);  // trace begin (TIP.PGE)
    first = false;
    f.ips.push_back(x.ip);
    f.stacks.push_back(stack);
    f.branches_before.push_back(f.branches.size());
    const uint64_t next = i + 1 < truth.insns.size() ? truth.insns[i + 1].ip : 0;
    switch (x.branch) {
      case BranchClass::kDirectCall:
      case BranchClass::kIndirectCall:
        if (next != x.ip + x.length) stack.push_back(x.ip + x.length);  // not a call to the next instruction
        break;
      case BranchClass::kReturn:
        if (!stack.empty()) stack.pop_back();
        break;
      default: break;
    }
    const bool branch = x.branch != BranchClass::kNone && x.branch != BranchClass::kPtwrite;
    const bool taken = x.branch != BranchClass::kCondJump || next != x.ip + x.length;
    if (branch && taken && i + 1 < truth.insns.size() && truth.insns[i + 1].traced) f.branches.emplace_back(x.ip, next);
  }
  return f;
}

// The call depth of each call and return sample (perf script's callindent,
// --call-ret-trace) is the generator's: its call stack after a call, before
// a return, counted from the start of the trace.
TEST(ItraceCorpus, CallAndReturnDepthsAreTheTruths) {
  testing::Spec("pt.itrace.callindent",
                "perf script --call-ret-trace: itrace crewp, callindent (thread_stack__depth; a return at its call's)");
  for (const char* program : {"compiled", "compiled_o0", "deep", "dispatch"}) {
    SCOPED_TRACE(program);
    SimRun r = Generate(program, "tsc", 100000);
    const GroundTruth& truth = r.t.truth;
    // (from, to, depth) of every call and return the truth traced, in order.
    std::vector<std::tuple<uint64_t, uint64_t, uint32_t>> want;
    std::vector<uint64_t> stack;
    for (size_t i = 0; i + 1 < truth.insns.size(); ++i) {
      const pt_sim::InsnRecord& x = truth.insns[i];
      const pt_sim::InsnRecord& next = truth.insns[i + 1];
      if (!x.traced || !next.traced) continue;
      if (x.branch == BranchClass::kDirectCall || x.branch == BranchClass::kIndirectCall) {
        if (next.ip != x.ip + x.length) stack.push_back(x.ip + x.length);  // (a call to the next instruction: none)
        want.emplace_back(x.ip, next.ip, static_cast<uint32_t>(stack.size()));
      } else if (x.branch == BranchClass::kReturn) {
        want.emplace_back(x.ip, next.ip, static_cast<uint32_t>(std::max<size_t>(stack.size(), 1)));
        if (!stack.empty()) stack.pop_back();
      }
    }
    ASSERT_GT(want.size(), 100u);
    std::vector<std::tuple<uint64_t, uint64_t, uint32_t>> got;
    uint32_t deepest = 0;
    for (const ItraceSample& s : Synthesize(r, "cr")) {
      if (s.flags & (kFlagAsync | kFlagTraceBegin | kFlagTraceEnd | kFlagSyscall | kFlagInterrupt)) continue;
      got.emplace_back(s.ip, s.addr, s.depth);
      deepest = std::max(deepest, s.depth);
    }
    EXPECT_EQ(got, want);
    EXPECT_GE(deepest, 3u) << "calls nest";
  }
}

// IPC on "instructions" samples against the truth's core cycles: from CYC
// packets, and, in a trace without them, from MTC time (perf-intel-pt.txt
// "IPC ... using the cycle count from CYC packets, otherwise MTC packets";
// perf's intel_pt_mtc_cyc_cnt_upd(): TSC ticks * CBR / max non-turbo ratio,
// which is exact in pt_sim up to an MTC period). Summed over the samples
// that carry IPC, the instruction counts are exactly the instructions
// decoded, and the cycle counts the truth's cycles since tracing began,
// give or take: at least `behind` fewer, at most `ahead` more.
void ExpectIpcFollowsTheTruth(const char* config, int64_t behind, int64_t ahead) {
  SCOPED_TRACE(config);
  SimRun r = Generate("compiled", config, 200000);
  const GroundTruth& truth = r.t.truth;
  std::vector<size_t> traced;  // truth.insns indices of the traced instructions
  for (size_t i = 0; i < truth.insns.size(); ++i)
    if (truth.insns[i].traced) traced.push_back(i);
  ASSERT_GT(traced.size(), 100000u);
  ASSERT_EQ(traced.back() + 1 - traced.front(), traced.size()) << "one stretch of tracing";
  Result<ItraceOptions> o = ParseItrace("i1000i");
  ASSERT_TRUE(o.ok());
  o->max_nonturbo_ratio = truth.clock.cbr;  // pt_sim's TSC ticks once per cycle at the nominal ratio
  FlowDecoder::Options d;
  d.mtc_period = truth.config.mtc_period;
  d.tsc_ctc_ratio_n = truth.clock.ctc_ebx;  // CPUID.15H: TSC/CTC = EBX/EAX
  d.tsc_ctc_ratio_d = truth.clock.ctc_eax;
  ItraceSynth synth(*o);
  const ItraceStats stats = SynthesizeItrace(r.t.bytes, r.image, *o, d, &synth);
  ASSERT_EQ(stats.errors, 0u);
  const uint64_t start_cycles = truth.insns[traced.front()].cycles;
  uint64_t insns = 0, cycles = 0, with_ipc = 0;
  for (size_t j = 0; j < synth.samples().size(); ++j) {
    const ItraceSample& s = synth.samples()[j];
    ASSERT_EQ(s.event, "instructions");
    if (s.cyc_count == 0) continue;
    ++with_ipc;
    insns += s.insn_count;
    cycles += s.cyc_count;
    const size_t k = (j + 1) * 1000 - 1;  // the sample's instruction, among the traced
    ASSERT_EQ(insns, k + 1) << "sample " << j;
    // The cycles before the next instruction: the sample's instruction retired.
    if (traced[k] + 1 >= truth.insns.size()) continue;  // (the last instruction: no next)
    const uint64_t truth_cycles = truth.insns[traced[k] + 1].cycles - start_cycles;
    const int64_t error = static_cast<int64_t>(cycles) - static_cast<int64_t>(truth_cycles);
    EXPECT_GE(error, -behind) << "sample " << j << ": " << cycles << " cycles decoded, " << truth_cycles << " in the truth";
    EXPECT_LE(error, ahead) << "sample " << j << ": " << cycles << " cycles decoded, " << truth_cycles << " in the truth";
  }
  EXPECT_GT(with_ipc, synth.samples().size() / 2) << "most samples see a cycle update";
}

TEST(ItraceCorpus, IpcFromCycPackets) {
  testing::Spec("pt.itrace.ipc_cyc", "perf-intel-pt.txt \"IPC is calculated using the cycle count from CYC packets\"");
  // A block's time is after the packet that resolves its branch, and a TNT
  // packet carries up to 6 branches: the count runs ahead by up to their
  // cycles (118 seen), never behind.
  ExpectIpcFollowsTheTruth("cyc", 0, 160);
}

TEST(ItraceCorpus, IpcFromMtcWithoutCyc) {
  testing::Spec("pt.itrace.ipc_mtc", "perf-intel-pt.txt \"otherwise MTC packets are used\"; perf intel_pt_mtc_cyc_cnt_upd");
  // mtc_period 3: an MTC every 8 CTC ticks, 256 TSC ticks (CPUID.15H 32/1):
  // about one period either way (262 seen).
  ExpectIpcFollowsTheTruth("mtc_period3", 320, 320);
}

TEST(ItraceCorpus, CallChainsAndBranchStacksOnExistingEvents) {
  testing::Spec("pt.itrace.G_L", "perf-intel-pt.txt \"The G and L options\"; perf intel_pt_add_callchain/add_lbrs");
  for (const char* program : {"compiled", "compiled_o0", "deep", "dispatch"}) {
    SCOPED_TRACE(program);
    SimRun r = Generate(program, "tsc", 100000);
    const GroundTruth& truth = r.t.truth;
    const TruthFlow flow = Walk(truth);
    ASSERT_EQ(flow.ips, truth.TracedIps());
    // Walk() leaves out the trace end/begin pairs of far transfers (dispatch's
    // syscalls): the branch stack is checked where there are none.
    const bool far = std::any_of(truth.insns.begin(), truth.insns.end(),
                                 [](const pt_sim::InsnRecord& x) { return x.branch == BranchClass::kFarTransfer; });
    // Events at and a little after the TSC of each PSB+ (the decoder's time
    // is the last TSC plus 1 tick per instruction: it reaches these).
    std::vector<ExistingEvent> events;
    for (const pt_sim::EventRecord& e : truth.events) {
      if (e.kind != pt_sim::EventKind::kPsb || e.insn >= truth.insns.size()) continue;
      for (uint64_t d : {0, 5, 40, 300}) events.push_back({"branch-misses", truth.insns[e.insn].tsc + d});
    }
    ASSERT_GE(events.size(), 8u);
    const std::vector<ItraceSample> samples = Synthesize(r, "G6L5", events);
    size_t seen = 0, deep = 0, full_stack = 0;
    uint64_t last_index = 0;
    for (const ItraceSample& s : samples) {
      ASSERT_EQ(s.event, "branch-misses") << "G and L alone synthesize nothing else";
      const size_t k = s.insn_index;
      ASSERT_LT(k, flow.ips.size());
      EXPECT_GE(k, last_index) << "in time order";
      last_index = k;
      EXPECT_EQ(s.ip, flow.ips[k]);
      // G: the IP, then the return addresses, innermost first, 6 entries at most.
      std::vector<uint64_t> chain = {flow.ips[k]};
      for (auto it = flow.stacks[k].rbegin(); it != flow.stacks[k].rend() && chain.size() < 6; ++it) chain.push_back(*it);
      EXPECT_EQ(s.callchain, chain) << "instruction " << k << ": " << Hex(s.callchain) << " vs " << Hex(chain);
      // L: the last 5 taken branches, newest first.
      std::vector<std::pair<uint64_t, uint64_t>> stack;
      for (size_t b = flow.branches_before[k]; b > 0 && stack.size() < 5; --b) stack.push_back(flow.branches[b - 1]);
      if (!far) {
        EXPECT_EQ(s.branch_stack, stack) << "instruction " << k;
      }
      deep += chain.size() > 2;
      full_stack += stack.size() == 5;
      ++seen;
    }
    EXPECT_GE(seen, events.size() / 2) << "events inside the trace's time range";
    EXPECT_GT(deep, 0u);
    EXPECT_GT(full_stack, 0u);
    // Without G/L the events come out bare; with g/l (i and x samples) they are not touched.
    for (const ItraceSample& s : Synthesize(r, "gl", events)) EXPECT_TRUE(s.callchain.empty() && s.branch_stack.empty());
  }
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> v;
  size_t a = 0;
  for (size_t b; (b = text.find('\n', a)) != std::string::npos; a = b + 1) v.push_back(text.substr(a, b - a));
  return v;
}

TEST(ItraceCorpus, DebugLogHoldsEveryPacketAndInstruction) {
  testing::Spec("pt.itrace.d", "perf-intel-pt.txt \"The d option\" (intel_pt.log: all decoded packets and instructions)");
  SimRun r = Generate("dispatch", "everything");
  Result<ItraceOptions> o = ParseItrace("d");
  ASSERT_TRUE(o.ok());
  std::string text;
  ItraceLog log(r.t.bytes, *o, [&](std::string_view s) { text += s; });
  Synthesize(r, "d", {{"cycles", r.t.truth.insns[100].tsc}}, &log);
  log.Finish();
  std::vector<uint64_t> insns;
  size_t packets = 0, perf_events = 0;
  for (const std::string& l : Lines(text)) {
    if (l.starts_with("insn ")) insns.push_back(std::stoull(l.substr(5), nullptr, 16));
    if (l.starts_with(".  ")) ++packets;
    if (l.starts_with("perf event cycles")) ++perf_events;
  }
  EXPECT_EQ(insns, r.t.truth.TracedIps());
  // Every packet, as the dump writes them.
  std::string dump;
  Result<DumpStats> d = Dump(r.t.bytes, {}, [&](std::string_view s) { dump += s; });
  ASSERT_TRUE(d.ok());
  size_t dump_packets = 0;
  for (const std::string& l : Lines(dump)) dump_packets += l.starts_with(".  ");
  EXPECT_EQ(packets, dump_packets);
  EXPECT_EQ(perf_events, 1u);

  // -a: no perf events.
  o = ParseItrace("d-a");
  std::string quiet;
  ItraceLog log2(r.t.bytes, *o, [&](std::string_view s) { quiet += s; });
  Synthesize(r, "d-a", {{"cycles", r.t.truth.insns[100].tsc}}, &log2);
  EXPECT_EQ(quiet.find("perf event"), std::string::npos);
}

TEST(ItraceCorpus, DebugLogOnErrorKeepsTheLastBytes) {
  testing::Spec("pt.itrace.d_e", "perf auxtrace.h AUXTRACE_LOG_FLG_ON_ERROR, itrace.debug-log-buffer-size 16384");
  SimRun r = Generate("dispatch", "tsc");
  Result<ItraceOptions> o = ParseItrace("d+e");
  ASSERT_TRUE(o.ok());
  // A clean trace: nothing written.
  std::string clean;
  ItraceLog log(r.t.bytes, *o, [&](std::string_view s) { clean += s; });
  Synthesize(r, "d+e", {}, &log);
  log.Finish();
  EXPECT_EQ(clean, "");
  EXPECT_GT(log.lines(), 1000u);
  // A packet made bad in the middle: the log up to it, at most 16384 bytes.
  std::vector<uint8_t> bad = r.t.bytes;
  bad[bad.size() / 2] = 0xc9;  // not an opcode (SDM "unknown opcode" -> EILSEQ)
  SimRun rb = std::move(r);
  rb.t.bytes = bad;
  std::string out;
  ItraceLog log2(rb.t.bytes, *o, [&](std::string_view s) { out += s; });
  const std::vector<ItraceSample> samples = Synthesize(rb, "ed+e", {}, &log2);
  size_t errors = 0;
  for (const ItraceSample& s : samples) errors += s.event == "error";
  ASSERT_GT(errors, 0u);
  const size_t marker = out.find("--- debug log before error ---\n");
  ASSERT_NE(marker, std::string::npos);
  const std::string dumped = out.substr(marker + 31, out.find("--- debug log", marker + 1) - marker - 31);
  EXPECT_LE(dumped.size(), 16384u);
  EXPECT_GT(dumped.size(), 8000u);
  EXPECT_TRUE(dumped.find("error E") != std::string::npos) << "ends with the error";
}

// `perftest pt decode --format=json --itrace=pG4L3 --existing-event ...`
// end to end: the PSB samples and the existing events' call chains and
// branch stacks are the truth's.
TEST(ItraceCorpus, DecodeCommandJson) {
  testing::Spec("pt.itrace.cli_json", "perftest pt decode --format=json (decode_command.h); perf-intel-pt.txt p, G, L");
  SimRun r = Generate("compiled", "tsc", 100000);
  const GroundTruth& truth = r.t.truth;
  char dir[] = "/tmp/perftest-itrace-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  auto write = [](const std::string& path, std::span<const uint8_t> bytes) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr) << path;
    ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
    std::fclose(f);
  };
  DecodeCommand cmd;
  cmd.file = std::string(dir) + "/trace.bin";
  write(cmd.file, r.t.bytes);
  for (const pt_sim::CodeSection& s : truth.image.sections()) {
    const std::string path = fmt::format("{}/{:x}.code", dir, s.address);
    write(path, s.bytes);
    cmd.images.push_back(fmt::format("{:#x}:{}", s.address, path));
  }
  cmd.itrace = "pG4L3";
  cmd.format = "json";
  std::vector<uint64_t> times;
  for (const pt_sim::EventRecord& e : truth.events)
    if (e.kind == pt_sim::EventKind::kPsb && e.insn < truth.insns.size()) times.push_back(truth.insns[e.insn].tsc + 10);
  for (uint64_t t : times) cmd.existing_events.push_back(fmt::format("{}:cache-misses", t));
  ::testing::internal::CaptureStdout();
  const int rc = RunDecode(cmd);
  const std::string out = ::testing::internal::GetCapturedStdout();
  for (const pt_sim::CodeSection& s : truth.image.sections()) std::remove(fmt::format("{}/{:x}.code", dir, s.address).c_str());
  std::remove(cmd.file.c_str());
  rmdir(dir);
  ASSERT_EQ(rc, 0) << out;

  const TruthFlow flow = Walk(truth);
  std::vector<std::pair<uint64_t, uint64_t>> psbs;
  size_t existing = 0;
  bool summary = false;
  for (const std::string& line : Lines(out)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.contains("summary")) {
      EXPECT_EQ(j["summary"]["instructions"].get<uint64_t>(), flow.ips.size());
      EXPECT_EQ(j["summary"]["errors"].get<uint64_t>(), 0u);
      summary = true;
      continue;
    }
    const std::string event = j["event"];
    if (event == "psb") psbs.emplace_back(j["offset"].get<uint64_t>(), j["ip"].get<uint64_t>());
    if (event != "cache-misses") continue;
    ++existing;
    // The sample's IP is a traced instruction; its call chain and branch
    // stack are the truth's there (the first instruction with that IP whose
    // stack matches: IPs repeat in loops, so match on the chain).
    const uint64_t ip = j["ip"];
    const std::vector<uint64_t> chain = j["callchain"];
    std::vector<std::pair<uint64_t, uint64_t>> stack;
    for (const auto& e : j["branch_stack"]) stack.emplace_back(e[0].get<uint64_t>(), e[1].get<uint64_t>());
    bool found = false;
    for (size_t k = 0; k < flow.ips.size() && !found; ++k) {
      if (flow.ips[k] != ip) continue;
      std::vector<uint64_t> c = {ip};
      for (auto it = flow.stacks[k].rbegin(); it != flow.stacks[k].rend() && c.size() < 4; ++it) c.push_back(*it);
      std::vector<std::pair<uint64_t, uint64_t>> b;
      for (size_t n = flow.branches_before[k]; n > 0 && b.size() < 3; --n) b.push_back(flow.branches[n - 1]);
      found = c == chain && b == stack;
    }
    EXPECT_TRUE(found) << line;
  }
  EXPECT_TRUE(summary);
  EXPECT_EQ(psbs, TruthPsbs(truth));
  EXPECT_EQ(existing, times.size());
}

}  // namespace
}  // namespace perftest::pt
