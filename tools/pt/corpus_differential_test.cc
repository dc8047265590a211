// Differential tests on the PT generator's corpus (mocks/pt_sim/corpus.h):
// traces with exact ground truth, written for every intel_pt config the
// capture issue covers, decoded by our decoders and by libipt 2.0.5.
//
// For every trace and for seeded corruptions of it (bit flips, truncation,
// a dropped byte range):
//   - packets: our packet decoder and pt_pkt_next give identical streams
//     (type, offset, size, payload; errors and resync points), by
//     testing/differential.h's protocol;
//   - flow: our flow decoder and pt_insn_next report the same instructions
//     (IP, size, class) and sync points, up to and including the first error,
//     which must be the same error (testing/libipt_flow.h SameFlowError);
//     on clean traces the whole logs are identical;
//   - truth: on clean traces our traced IPs equal the generator's
//     GroundTruth::TracedIps() exactly.
//
// Default (ctest): each of the 22 configs once, on a program that rotates
// with the config (all 6 programs appear), seed 1, 4 corruptions each — a
// couple of seconds. The full corpus (6 programs x 22 configs x 2 seeds =
// 264 traces, the 88 compiled ones again at 3 relocated code bases each,
// the 176 hand-written ones again at one relocated base each: 704 traces,
// 8 corruptions each; ~28 s of CPU on 2 threads), by hand:
//   PERFTEST_PT_CORPUS=all build/bin/pt_tools_test --gtest_filter='CorpusDifferential.*'
// (PERFTEST_PT_CORPUS_SEEDS=N: seeds 1..N; PERFTEST_PT_CORPUS_SAVE=DIR keeps
// each divergent variant and its code, printing the decode command). The totals line at the end gives
// the traces and instructions compared.
//
// Events are compared too (testing::LibiptInsnFlow(..., events)): kind,
// payload, IP and their place among the instructions. With them the full
// run (issue 20) gives 704 clean traces identical (10,574,858 instructions
// and their events), and 298 of the 5632 corrupted variants divergent, all
// in events next to the first error: an event libipt loses with its failing
// query (or reports, where ours does not) when the bad packet follows the
// event's packet after other packets (TIP.PGE, PSB+), or the error is one
// of the packet decoder's that ours meets on another path;
// PERFTEST_PT_CORPUS_KEEP_GOING=1 counts them without stopping at the first
// clean trace that differs.
// The full run finds flow divergences on corrupted traces that the default
// subset does not hit; the test fails while any is left. The compiled
// programs' traces depend on where their code lies (ASLR, the build), so
// the full run also decodes each compiled case at 3 fixed relocated bases,
// and each hand-written case at one of 3 more (Bases() below): 704 clean
// traces (440 relocated), 10,574,858 instructions identical to
// pt_insn_next and to the truth; 5632 corrupted variants, 0 divergent
// through the first error. It was 60 before flow_decoder.cc
// followed libipt's event binding, read-ahead window and length decoder
// (issue 7); then the flow decoder learned that libipt holds an event bound
// to an IP until the flow gets there (NoteEvent: PTW, EXSTOP, MWAIT, a
// mid-flow PSB+'s status events), that an MWAIT's event query fails on a TNT
// or TIP, that a FUP without an IP errs at the FUP, that an MWAIT binds to
// the next FUP even without its EXSTOP, that a PSB+ with a CBR of 0 fails,
// that the read-ahead after a PSB+ at sync can fail the sync (a PSB+ without
// events followed by the end of the trace: no sync point), and that a
// TIP.PGD or FUP+TIP while tracing is disabled ends as the read-ahead after
// it. At other code bases (2 divergences in 2 of 5 runs at ASLR addresses;
// 8 more over 16 relocated bases per case): that a MODE.TSX's event query
// fails on a TNT or TIP before its FUP, that an indirect branch with TNT bits
// cached fails at a TNT before reading past it, that the event packet after
// a TNT is queried (and read past) when the TNT's last bit is used, and that
// libipt's full event queue (-pte_nomem) is a trace that does not fit. The
// hand-written programs at kFixedBases (5 divergences): that a direct
// branch outside 64-bit mode does not wrap its target, that one PTW binds
// to a PTWRITE at a time, that an indirect branch with TNT bits cached
// fails at an event packet, and that a mid-flow PSB+'s MODE.Exec against
// the current mode fails (-pte_bad_status_update). At ASLR code bases whose
// page offset no fixed layout has (0xd43, 0xc30: 1 divergence in ~4 runs):
// that an asynchronous FUP waits for its TIP across a PSB+, and that a
// branch takes its TNT or TIP past a held FUP+TIP. After a change to the
// compiled programs' code (compiled_everything seed 2, at every base): that
// an OVF drops the events waiting for their packet (pt_qry_decode_ovf resets
// libipt's event queue: an MWAIT waiting for a FUP, a MODE.Exec or an
// asynchronous FUP waiting for a TIP). At an ASLR base of another build
// (compiled_o0_everything_noretcomp_tnt64 seed 1 at 0x560c3f02e0f3): that
// an MWAIT right after a TIP, then a TNT or TIP, fails the branch that
// took the TIP (pt_qry_event asks for the MWAIT's event at once). At
// further ASLR bases (3 divergences in 9 runs): that an asynchronous FUP
// waits for its TIP past a TNT (libipt's read-ahead decodes it), a second
// one behind it keeping the TIP for itself, and that the event query after
// a mid-flow TIP.PGE reads past it (a bad packet there fails the branch).
// Then (compiled_pwr_evt seed 1 at bases whose page offset is 0x920, 2 in
// 8 runs): that a packet error read ahead after an MWAIT and an EXSTOP held
// for an unreached FUP comes after the query that fails at that FUP. With
// PERFTEST_PT_CORPUS_SEEDS=3 PERFTEST_PT_CORPUS_LAYOUTS=10 (a branch-less
// config's PSB+ has no MODE.Exec): that libipt decodes no instruction
// before a MODE.Exec gives the mode (-pte_bad_insn; -pte_nomap first),
// that the event query after a TIP.PGD right after a TIP reads past it,
// and that a TIP.PGD while disabled is a waiting MODE.Exec's TIP. Then 2
// such runs (31,695,472 clean and ~155.6M corrupted-variant instructions
// each) and the default full run: 0 divergent. Round 2 at that setting (1
// divergence in 8 runs, compiled_noretcomp seed 2 at 0x563ead058210): that
// a TraceStop while tracing is enabled fails where its event goes
// (pt_insn_process_stop, -pte_bad_context). Also modelled by hand: a second
// asynchronous FUP before the TIP branches from its IP to the same TIP
// (pt_qry_decode_tip keeps the TIP for it). Round 3: by hand, libipt's
// whole queue of events bound to a TIP (any number of asynchronous FUPs, a
// MODE.Exec, PIP or VMCS among them in its place, 6 at most:
// flow_decoder_async_queue_test.cc); at PERFTEST_PT_CORPUS_SEEDS=6 and 10
// (new seeds; 16 divergences, dispatch_* and compiled_o0_overflow): that
// libipt's length decoder sizes two-byte group opcodes with an undefined
// ModRM (a corrupted TIP into a PTWRITE past its F3: 0F AE E0), that an
// OVF drops an asynchronous FUP waiting for its TIP, and (SEEDS=16) that a
// MODE.Exec whose event query reads to the end of the trace ends the flow
// before the next instruction. Also by hand: a standalone PIP/VMCS while
// enabled is held until its instruction (MOV CR3, VMPTRLD, VMLAUNCH,
// VMRESUME, far branch). Round 4 (SEEDS=16 LAYOUTS=4, dispatch_everything
// seed 12, corruption 6): that a PTW or EXSTOP with IP=1 waits for the next
// FUP past events reported at once (PWRE, PWRX, CBR, MNT: libipt's evb_fup
// queue, pt_qry_decode_fup; flow_decoder_fup_queue_test.cc) — and, found
// with it, that a MODE.TSX waits for a FUP only while tracing is enabled.
// Then at SEEDS=16..150 and LAYOUTS=0..16 (up to 19,800 clean traces and
// 158,400 corrupted variants a run): endless loops without packets (both
// walks now stop at kEndlessLoopInsns), and ~25 rules of libipt's query
// decoder, each with its test and libipt function in its commit: the
// read-ahead after a TNT or TIP (past FUPs, PSB headers, PSBENDs, to a
// malformed PSB or a TMA without its TSC), events held for an unreached IP
// (an OVF, a TIP.PGE while enabled and a failing query wait behind them),
// packets cut by the end of the trace, an OVF inside a PSB+, CBR 0, and
// libipt's length decoder on undefined C6/C7 and 8C/8E encodings. Open at
// SEEDS=150 LAYOUTS=0 (6 of 158,400 variants, all corrupted): a bit-flipped
// TIP.PGE in a disabled trace (compiled_branch0 seed 64 c1,
// compiled_o0_exclude_user 79 c7: ours ENXIO, libipt -pte_bad_context),
// compiled_everything 94 c0, compiled_pwr_evt 113 c6, dispatch_exclude_user
// 116 c1 and dispatch_ptw_fup 126 c7 (other error classes or points).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <mutex>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "harness/pt/image.h"
#include "harness/pt/testing/differential.h"
#include "harness/pt/testing/libipt_flow.h"
#include "harness/pt/testing/spec.h"
#include "mocks/pt_sim/corpus.h"

namespace perftest::pt {
namespace {

struct Totals {
  std::atomic<uint64_t> traces{0}, insns{0}, corrupted{0}, corrupted_insns{0};
  std::atomic<uint64_t> corrupted_with_error{0}, corrupted_identical{0};
  // Where the first error came (pt.libipt.error_point): at the same
  // instruction, or after more instructions in ours / in libipt's log.
  std::atomic<uint64_t> same_error_point{0}, ours_later{0}, libipt_later{0};
  std::atomic<int64_t> max_lead{0};
  std::atomic<uint64_t> relocated{0};  // traces run at a base of their own (Bases())
  std::atomic<uint64_t> divergent{0};  // variants whose flows differ through the first error (failures)
  std::atomic<uint64_t> clean_divergent{0};  // clean traces whose flows differ (PERFTEST_PT_CORPUS_KEEP_GOING)
};
Totals& Global() {
  static Totals t;
  return t;
}

class CorpusTotalsPrinter : public ::testing::Environment {
 public:
  void TearDown() override {
    const Totals& t = Global();
    if (t.traces == 0) return;
    auto u = [](const std::atomic<uint64_t>& v) { return static_cast<unsigned long long>(v.load()); };
    std::printf(
        "[corpus differential] %llu clean traces (%llu at a relocated code base): %llu instructions identical to pt_insn_next and to the ground "
        "truth; %llu corrupted variants (%llu instructions from pt_insn_next), %llu with a decode error before the "
        "end; through the first error (the same error; at the same instruction %llu, ours later "
        "%llu, libipt later %llu, by at most %lld instructions), %llu identical to the end; %llu DIVERGE; %llu clean traces DIVERGE\n",
        u(t.traces), u(t.relocated), u(t.insns), u(t.corrupted), u(t.corrupted_insns), u(t.corrupted_with_error),
        u(t.same_error_point), u(t.ours_later), u(t.libipt_later), static_cast<long long>(t.max_lead.load()),
        u(t.corrupted_identical), u(t.divergent), u(t.clean_divergent));
  }
};
[[maybe_unused]] ::testing::Environment* const kCorpusTotals =
    ::testing::AddGlobalTestEnvironment(new CorpusTotalsPrinter);

bool FullCorpus() {
  const char* s = std::getenv("PERFTEST_PT_CORPUS");
  return s != nullptr && std::string(s) == "all";
}

// PERFTEST_PT_CORPUS_ONLY: the named cases, run as the full corpus runs them.
bool Chosen() { return std::getenv("PERFTEST_PT_CORPUS_ONLY") != nullptr; }

uint64_t Seeds() {
  if (const char* s = std::getenv("PERFTEST_PT_CORPUS_SEEDS")) return std::max<uint64_t>(1, std::strtoull(s, nullptr, 10));
  return FullCorpus() ? 2 : 1;
}

// The generator's code image as the decoder's.
Image ToImage(const pt_sim::CodeImage& code) {
  Image image;
  for (const pt_sim::CodeSection& s : code.sections()) {
    Result<void> r = image.AddBlob(s.address, s.bytes);
    EXPECT_TRUE(r.ok()) << r.ToString();
  }
  return image;
}

// The instruction IPs of a flow log.
std::vector<uint64_t> Ips(const testing::FlowLog& log) {
  std::vector<uint64_t> v;
  v.reserve(log.insns);
  for (const testing::FlowEntry& e : log.entries)
    if (e.kind == testing::FlowEntry::kInsn) v.push_back(e.ip);
  return v;
}

// Seeded corruptions: a few bit flips; a truncation; a dropped byte range.
std::vector<uint8_t> Corrupt(const std::vector<uint8_t>& in, uint64_t seed, int kind) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v = in;
  if (v.empty()) return v;
  auto pos = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  switch (kind % 3) {
    case 0:  // 1..4 bits flipped
      for (int i = 0, n = 1 + static_cast<int>(rng() % 4); i < n; ++i) v[pos(v.size())] ^= static_cast<uint8_t>(1u << (rng() % 8));
      break;
    case 1:  // truncated
      v.resize(pos(v.size()));
      break;
    default: {  // 1..16 bytes dropped
      const size_t a = pos(v.size());
      const size_t n = std::min(v.size() - a, 1 + pos(16));
      v.erase(v.begin() + static_cast<long>(a), v.begin() + static_cast<long>(a + n));
      break;
    }
  }
  return v;
}

void WriteFile(const std::string& path, std::span<const uint8_t> bytes) {
  if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
}

// PERFTEST_PT_CORPUS_SAVE=DIR keeps a divergent trace as DIR/BASE.bin and
// its code as DIR/BASE.ADDR.code, and prints the command that decodes it.
void Save(const std::string& base, const std::vector<uint8_t>& trace, const pt_sim::CodeImage& code) {
  const char* dir = std::getenv("PERFTEST_PT_CORPUS_SAVE");
  if (dir == nullptr) return;
  const std::string bin = fmt::format("{}/{}.bin", dir, base);
  WriteFile(bin, trace);
  std::string cmd = "perftest pt decode " + bin + " --itrace=ed";
  for (const pt_sim::CodeSection& s : code.sections()) {
    const std::string path = fmt::format("{}/{}.{:x}.code", dir, base, s.address);
    WriteFile(path, s.bytes);
    cmd += fmt::format(" --image {:#x}:{}", s.address, path);
  }
  std::printf("saved: %s\n", cmd.c_str());
}

struct Case {
  size_t program, config;
  uint64_t seed;
  uint64_t base = 0;  // where the program's code goes (GenerateCorpusCase); 0: where it is
};

// The layouts (code bases) a case runs at. The compiled programs' code is
// this binary's, at the address ASLR gave it (and at the offset in its page
// the build gave it): their traces, and which IP bytes a corruption hits,
// change with it, and a divergence may show only where the code's IP bits
// 15:0 have some value. So the full corpus runs each compiled case where
// its code is and at kLayouts more bases, drawn the way ASLR draws a PIE
// base (x86-64 Linux: ELF_ET_DYN_BASE 0x555555554000 plus up to 2^28 pages,
// mmap_rnd_bits) with a 16-byte aligned offset in the page — different for
// every case, the same in every run and build: a layout-dependent
// divergence is found every time, and reproduced by its base.
// The hand-written programs' code lies at fixed addresses (below 4 GiB):
// the full corpus runs each of their cases there and at one of kFixedBases
// — a PIE-like base above 4 GiB at an odd offset, one near the top of the
// user address space, one whose code straddles 4 GiB (IP compression across
// bit 32) — taken in turn by program, config and seed: each program runs
// at each base, each (program, config) at two over the two seeds. (These
// three bases found 5 divergences that no compiled case hit: issue 7.)
//   PERFTEST_PT_CORPUS_LAYOUTS=N  N such bases for the compiled programs
//                                 instead (0: every program where its code is only)
//   PERFTEST_PT_CORPUS_FIXED=N    N of kFixedBases for each hand-written case (3: all)
//   PERFTEST_PT_CORPUS_BASE=HEX[,HEX...]  exactly these bases, for every program
//   PERFTEST_PT_CORPUS_ONLY=NAME  only the cases named NAME (e.g. compiled_o0_noretcomp), as the full corpus
//   PERFTEST_PT_CORPUS_TAIL=1     print the last entries of both flows before a divergence
//   PERFTEST_PT_CORPUS_JOBS=N     cases checked on N threads (full corpus: 2, else 1)
constexpr uint64_t kLayouts = 3;
constexpr uint64_t kFixedBases[] = {0x555555559923, 0x7ffff7fe1230, 0xffff0ff0};

std::vector<uint64_t> Bases(size_t program, size_t config, uint64_t seed) {
  if (const char* s = std::getenv("PERFTEST_PT_CORPUS_BASE")) {
    std::vector<uint64_t> v;
    for (const char* p = s; *p != 0;) {
      char* end = nullptr;
      v.push_back(std::strtoull(p, &end, 16));
      if (end == p) break;
      p = *end == ',' ? end + 1 : end;
    }
    return v;
  }
  std::vector<uint64_t> v = {0};
  if (!(FullCorpus() || Chosen())) return v;
  uint64_t n = kLayouts;
  if (const char* s = std::getenv("PERFTEST_PT_CORPUS_LAYOUTS")) n = std::strtoull(s, nullptr, 10);
  if (!pt_sim::CorpusPrograms()[program].loaded_code) {
    uint64_t fixed = n == 0 ? 0 : 1;
    if (const char* s = std::getenv("PERFTEST_PT_CORPUS_FIXED")) fixed = std::strtoull(s, nullptr, 10);
    constexpr size_t kFixed = std::size(kFixedBases);
    for (uint64_t i = 0; i < std::min<uint64_t>(fixed, kFixed); ++i)
      v.push_back(kFixedBases[(program + config + seed + i) % kFixed]);
    return v;
  }
  std::mt19937_64 rng(0x9e3779b97f4a7c15 ^ (seed * 1000003 + program * 1009 + config * 101));
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t r = rng();
    v.push_back(0x555555554000 + ((r & 0xfffffff) << 12) + ((r >> 32) & 0xff0));
  }
  return v;
}

std::vector<Case> Cases() {
  std::vector<Case> v;
  const size_t np = pt_sim::CorpusPrograms().size(), nc = pt_sim::CorpusConfigs().size();
  const char* only = std::getenv("PERFTEST_PT_CORPUS_ONLY");
  auto add = [&](size_t p, size_t c, uint64_t seed) {
    if (only != nullptr && pt_sim::CorpusCaseName(p, c) != only) return;
    for (uint64_t base : Bases(p, c, seed)) v.push_back({p, c, seed, base});
  };
  for (uint64_t seed = 1; seed <= Seeds(); ++seed) {
    for (size_t c = 0; c < nc; ++c) {
      if (FullCorpus() || only != nullptr) {
        for (size_t p = 0; p < np; ++p) add(p, c, seed);
      } else {
        add(c % np, c, seed);
      }
    }
  }
  return v;
}

void CheckCase(const Case& k) {
  const std::string name = pt_sim::CorpusCaseName(k.program, k.config);
  Result<pt_sim::GeneratedTrace> t = pt_sim::GenerateCorpusCase(k.program, k.config, k.seed, 20000, k.base);
  ASSERT_TRUE(t.ok()) << t.ToString();
  const uint64_t base = t->truth.image.sections().front().address;
  SCOPED_TRACE(fmt::format("{} seed {} at base {:#x} ({})", name, k.seed, base,
                           pt_sim::CorpusConfigs()[k.config].config.ToString()));
  const Image image = ToImage(t->truth.image);

  // Clean: packets, flow against libipt, flow against the truth.
  EXPECT_EQ(testing::DiffAgainstLibipt(t->bytes), "");
  const testing::FlowLog ours = testing::OurInsnFlow(t->bytes, image, /*events=*/true);
  const testing::FlowLog ref = testing::LibiptInsnFlow(t->bytes, image, /*events=*/true);
  // PERFTEST_PT_CORPUS_KEEP_GOING=1: a clean trace that differs is counted
  // (and fails the test) without stopping the run, for the totals.
  if (std::getenv("PERFTEST_PT_CORPUS_KEEP_GOING") != nullptr) {
    const std::string d = testing::DiffFlow(ours, ref);
    EXPECT_EQ(d, "");
    if (!d.empty()) {
      Global().clean_divergent += 1;
      return;
    }
  }
  ASSERT_EQ(testing::DiffFlow(ours, ref), "");
  ASSERT_EQ(ours.errors, 1u) << "a clean trace ends at the end of the trace only";
  const std::vector<uint64_t> truth = t->truth.TracedIps();
  const std::vector<uint64_t> ips = Ips(ours);
  ASSERT_EQ(ips.size(), truth.size());
  ASSERT_TRUE(ips == truth) << "our flow differs from the ground truth";
  Global().traces += 1;
  Global().insns += ips.size();
  if (k.base != 0) Global().relocated += 1;  // (counted with the trace: a test stopped early counts what ran)

  // Corrupted variants.
  const int variants = FullCorpus() || Chosen() ? 8 : 4;
  for (int i = 0; i < variants; ++i) {
    const uint64_t seed = k.seed * 1000003 + k.program * 1009 + k.config * 101 + static_cast<uint64_t>(i);
    const int kind = static_cast<int>(seed % 3);
    const std::vector<uint8_t> bad = Corrupt(t->bytes, seed, kind);
    SCOPED_TRACE(fmt::format("corruption {} (seed {}, kind {})", i, seed, kind));
    EXPECT_EQ(testing::DiffAgainstLibipt(bad), "");
    const testing::FlowLog o = testing::OurInsnFlow(bad, image, /*events=*/true);
    const testing::FlowLog r = testing::LibiptInsnFlow(bad, image, /*events=*/true);
    int64_t lead = 0;
    const std::string diff = testing::DiffFlowThroughFirstError(o, r, &lead);
    EXPECT_EQ(diff, "");
    if (!diff.empty()) {
      Global().divergent += 1;
      static std::mutex print;
      const std::lock_guard<std::mutex> lock(print);
      if (std::getenv("PERFTEST_PT_CORPUS_TAIL") != nullptr) {
        for (const testing::FlowLog* l : {&o, &r}) {
          size_t first = 0;
          while (first < l->entries.size() && l->entries[first].kind != testing::FlowEntry::kError) ++first;
          std::printf("%s:\n", l == &o ? "ours" : "libipt");
          for (size_t j = first > 12 ? first - 12 : 0; j <= first && j < l->entries.size(); ++j)
            std::printf("  [%zu] %s\n", j, testing::ToString(l->entries[j]).c_str());
        }
      }
      Save(fmt::format("{}_{}_c{}_{:x}", name, k.seed, i, base), bad, t->truth.image);
    }
    // A truncated trace holds the truth up to the cut: every instruction
    // before our first error is the truth's.
    // (Up to the first overflow only: a cut between the overflow and its
    // OVF packet leaves the decoders walking on where the truth lost packets.)
    size_t checkable = truth.size();
    for (const pt_sim::EventRecord& ev : t->truth.events) {
      if (ev.kind != pt_sim::EventKind::kOverflowBegin) continue;
      checkable = 0;
      for (size_t j = 0; j < ev.insn && j < t->truth.insns.size(); ++j) checkable += t->truth.insns[j].traced ? 1 : 0;
      break;
    }
    size_t before_error = 0;
    bool error_before_end = false;
    for (const testing::FlowEntry& e : o.entries) {
      if (e.kind == testing::FlowEntry::kError) {
        error_before_end = e.code != ENODATA;
        break;
      }
      if (e.kind == testing::FlowEntry::kInsn) {
        // (Past the truth's end: with the final TIP.PGD cut off, the walk
        // goes on in code the program never ran; the decoder cannot know.)
        if (kind == 1 && before_error < checkable) {
          ASSERT_EQ(e.ip, truth[before_error]) << "instruction " << before_error << " of the truncated trace";
        }
        ++before_error;
      }
    }
    Totals& g = Global();
    g.corrupted += 1;
    g.corrupted_insns += r.insns;
    if (error_before_end) g.corrupted_with_error += 1;
    if (lead == 0) g.same_error_point += 1;
    if (lead > 0) g.ours_later += 1;
    if (lead < 0) g.libipt_later += 1;
    for (int64_t m = g.max_lead.load(); std::abs(lead) > m && !g.max_lead.compare_exchange_weak(m, std::abs(lead));) {
    }
    if (testing::DiffFlow(o, r).empty()) g.corrupted_identical += 1;
  }
}

TEST(CorpusDifferential, TracesMatchLibiptAndTruth) {
  testing::Spec("pt.libipt.corpus",
                "libipt 2.0.5 pt_pkt_next and pt_insn_next; mocks/pt_sim ground truth (issue 7 \"Verified against the "
                "reference\")");
  const std::vector<Case> cases = Cases();
  // (GoogleTest's assertions are thread-safe with pthreads; the totals are atomic.)
  unsigned jobs = FullCorpus() || Chosen() ? 2 : 1;
  if (const char* s = std::getenv("PERFTEST_PT_CORPUS_JOBS")) jobs = std::max(1, std::atoi(s));
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  auto work = [&] {
    for (size_t i; !stop && (i = next++) < cases.size();) {
      CheckCase(cases[i]);
      if (HasFatalFailure()) stop = true;
    }
  };
  std::vector<std::thread> threads;
  for (unsigned j = 1; j < jobs; ++j) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  if (stop) return;
  RecordProperty("traces", static_cast<int>(cases.size()));
}

}  // namespace
}  // namespace perftest::pt
