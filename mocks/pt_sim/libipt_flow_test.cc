// The decisive check of issue 6 ("Done when"): every trace the generator
// writes decodes with libipt without errors, and libipt's instruction-flow
// decoder reproduces the ground truth exactly — over several programs and
// the intel_pt configs tsc, mtc, cyc, noretcomp, psb_period, branch=0, ptw,
// overflow (and interrupts, power events, TNT-64, exclude_user).
// Feature ids: pt_sim.libipt_flow.<program>.<config>.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <intel-pt.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "harness/pt/packet_decoder.h"
#include "harness/pt/testing/differential.h"
#include "mocks/pt_sim/compiled_program.h"
#include "mocks/pt_sim/generator.h"
#include "mocks/pt_sim/libipt_flow.h"
#include "mocks/pt_sim/test_programs.h"

namespace perftest::pt_sim {
namespace {

using ::testing::IsEmpty;

struct ProgramCase {
  std::string name;
  std::function<Program()> make;
  unsigned taken_percent = 50;
};

struct ConfigCase {
  std::string name;
  PtConfig config;
  RunOptions options;
};

PtConfig Base() { return PtConfig{}; }  // pt, tsc, branch; psb_period 0

std::vector<ProgramCase> Programs() {
  return {
      {"loops", testing::LoopsProgram, 50},
      {"dispatch", testing::DispatchProgram, 50},
      {"deep", testing::DeepProgram, 97},
      {"exit", testing::ExitProgram, 99},
      {"compiled", CompiledProgram, 50},
      {"compiled_o0", CompiledProgramO0, 50},
  };
}

std::vector<ConfigCase> Configs() {
  std::vector<ConfigCase> v;
  auto add = [&](std::string name, std::function<void(PtConfig&, RunOptions&)> f) {
    ConfigCase c{std::move(name), Base(), RunOptions{}};
    f(c.config, c.options);
    v.push_back(std::move(c));
  };
  add("tsc", [](PtConfig&, RunOptions&) {});
  add("notsc", [](PtConfig& c, RunOptions&) { c.tsc = false; });
  add("mtc", [](PtConfig& c, RunOptions&) { c.mtc = true; c.mtc_period = 0; });
  add("mtc_period3", [](PtConfig& c, RunOptions&) { c.mtc = true; c.mtc_period = 3; });
  add("cyc", [](PtConfig& c, RunOptions&) { c.cyc = true; });
  add("cyc_thresh5_mtc", [](PtConfig& c, RunOptions&) { c.cyc = true; c.cyc_thresh = 5; c.mtc = true; c.mtc_period = 2; });
  add("noretcomp", [](PtConfig& c, RunOptions&) { c.noretcomp = true; });
  add("psb_period3", [](PtConfig& c, RunOptions&) { c.psb_period = 3; });
  add("psb_period5", [](PtConfig& c, RunOptions&) { c.psb_period = 5; });
  add("branch0", [](PtConfig& c, RunOptions& o) {
    c.branch = false; c.mtc = true; c.cyc = true; c.ptw = true; o.interrupt_every = 300;
  });
  add("branch0_ptw_fup_pwr_evt", [](PtConfig& c, RunOptions& o) {
    c.branch = false; c.ptw = true; c.fup_on_ptw = true; c.pwr_evt = true; c.tsc = false;
    o.power_every = 300; o.interrupt_every = 500;
  });
  add("ptw", [](PtConfig& c, RunOptions&) { c.ptw = true; });
  add("ptw_fup", [](PtConfig& c, RunOptions&) { c.ptw = true; c.fup_on_ptw = true; });
  add("overflow", [](PtConfig&, RunOptions& o) { o.overflow_every = 700; });
  add("buffer_overflow", [](PtConfig& c, RunOptions& o) {
    c.cyc = true; c.mtc = true; o.output_buffer_bytes = 256; o.drain_cycles_per_byte = 7;
  });
  add("interrupts", [](PtConfig&, RunOptions& o) { o.interrupt_every = 300; });
  add("pwr_evt", [](PtConfig& c, RunOptions& o) { c.pwr_evt = true; o.power_every = 400; });
  add("tnt64", [](PtConfig&, RunOptions& o) { o.tnt64 = true; });
  add("exclude_user", [](PtConfig& c, RunOptions& o) { c.mtc = true; o.exclude_user = true; });
  add("everything", [](PtConfig& c, RunOptions& o) {
    c.cyc = true; c.cyc_thresh = 2; c.mtc = true; c.mtc_period = 1; c.ptw = true; c.fup_on_ptw = true;
    c.pwr_evt = true; c.psb_period = 1;
    o.interrupt_every = 500; o.overflow_every = 900; o.power_every = 700;
  });
  add("everything_noretcomp_tnt64", [](PtConfig& c, RunOptions& o) {
    c.cyc = true; c.mtc = true; c.mtc_period = 4; c.ptw = true; c.noretcomp = true; c.pwr_evt = true;
    o.tnt64 = true; o.interrupt_every = 400; o.overflow_every = 600; o.power_every = 500;
  });
  return v;
}

// Totals over the whole matrix, printed at the end (the closing note's numbers).
std::atomic<uint64_t> g_traces{0}, g_insns{0}, g_traced{0}, g_bytes{0};

class LibiptFlowTest : public ::testing::TestWithParam<std::tuple<size_t, size_t>> {};

TEST_P(LibiptFlowTest, LibiptReproducesGroundTruth) {
  const ProgramCase pc = Programs()[std::get<0>(GetParam())];
  const ConfigCase cc = Configs()[std::get<1>(GetParam())];
  SCOPED_TRACE("feature pt_sim.libipt_flow." + pc.name + "." + cc.name + " (issue 6 \"Done when\"; " +
               cc.config.ToString() + ")");
  // Two seeds per case; PT_SIM_SEEDS=N runs seeds 1..N (a longer sweep, by hand).
  std::vector<uint64_t> seeds = {1, 2};
  if (const char* n = std::getenv("PT_SIM_SEEDS")) {
    seeds.clear();
    for (uint64_t i = 1; i <= std::strtoull(n, nullptr, 10); ++i) seeds.push_back(i);
  }
  for (uint64_t seed : seeds) {
    RunOptions options = cc.options;
    options.oracle.seed = seed * 1000 + std::get<0>(GetParam()) * 31 + std::get<1>(GetParam());
    options.oracle.taken_percent = pc.taken_percent;
    options.max_insns = 20000;
    Result<GeneratedTrace> t = Generate(pc.make(), cc.config, options);
    ASSERT_TRUE(t.ok()) << t.ToString();
    const GroundTruth& truth = t->truth;
    ASSERT_FALSE(truth.insns.empty());

    // Our packet decoder and libipt's packet decoder read every byte.
    pt::PacketDecoder dec(t->bytes);
    Result<uint64_t> sync = dec.SyncForward();
    ASSERT_TRUE(sync.ok()) << sync.ToString();
    ASSERT_EQ(*sync, 0u) << "the trace starts with a PSB";
    pt::Packet p;
    int err;
    while ((err = dec.Next(p)) == 0) {
    }
    EXPECT_EQ(err, ENODATA) << "at offset " << dec.offset();
    // Packet by packet, ours and libipt's packet decoder agree (harness/pt/testing/differential.h).
    EXPECT_EQ(pt::testing::DiffAgainstLibipt(t->bytes), "") << "seed " << seed;

    if (const char* dir = std::getenv("PT_SIM_DUMP_DIR")) {  // for debugging: the trace and its ground truth
      const std::string base = std::string(dir) + "/" + pc.name + "_" + cc.name + "_" + std::to_string(seed);
      if (FILE* f = std::fopen((base + ".bin").c_str(), "wb")) {
        std::fwrite(t->bytes.data(), 1, t->bytes.size(), f);
        std::fclose(f);
      }
      (void)WriteGroundTruthFile(truth, base + ".json");
    }
    const LibiptFlow flow = DecodeFlowWithLibipt(t->bytes, truth);
    EXPECT_THAT(flow.errors, IsEmpty()) << "seed " << seed;
    const std::vector<uint64_t> expected = truth.TracedIps();
    EXPECT_EQ(flow.ips.size(), expected.size()) << "seed " << seed;
    if (flow.ips != expected) {
      size_t i = 0;
      while (i < flow.ips.size() && i < expected.size() && flow.ips[i] == expected[i]) ++i;
      ADD_FAILURE() << "seed " << seed << ": first difference at traced insn " << i << ": libipt "
                    << (i < flow.ips.size() ? flow.ips[i] : 0) << ", ground truth "
                    << (i < expected.size() ? expected[i] : 0);
    }
    std::vector<uint64_t> ptw;
    for (const PtwriteRecord& r : truth.ptwrites) {
      if (r.traced) ptw.push_back(r.payload);
    }
    EXPECT_EQ(flow.PtwritePayloads(), ptw) << "seed " << seed;
    EXPECT_EQ(flow.CountEvents(ptev_overflow), truth.CountEvents(EventKind::kOverflow)) << "seed " << seed;
    // The events libipt reports are the ground truth's (where no overflow may swallow them).
    const bool overflows = cc.options.overflow_every != 0 || cc.options.output_buffer_bytes != 0;
    if (cc.config.branch_en() && !cc.options.exclude_user && !overflows) {
      EXPECT_EQ(flow.CountEvents(ptev_enabled), truth.CountTracedEvents(EventKind::kEnable)) << "seed " << seed;
      EXPECT_EQ(flow.CountEvents(ptev_disabled), truth.CountTracedEvents(EventKind::kSyscall)) << "seed " << seed;
      EXPECT_EQ(flow.CountEvents(ptev_async_disabled),
                truth.CountTracedEvents(EventKind::kInterrupt) + truth.CountTracedEvents(EventKind::kDisable))
          << "seed " << seed;
    }
    if (cc.config.pwr_evt && !cc.options.exclude_user && !overflows) {
      const size_t power = truth.CountEvents(EventKind::kPower);
      EXPECT_EQ(flow.CountEvents(ptev_mwait), power) << "seed " << seed;
      EXPECT_EQ(flow.CountEvents(ptev_pwre), power) << "seed " << seed;
      EXPECT_EQ(flow.CountEvents(ptev_exstop), power) << "seed " << seed;
      EXPECT_EQ(flow.CountEvents(ptev_pwrx), power) << "seed " << seed;
    }
    if (cc.config.ptw && cc.config.fup_on_ptw) {
      std::vector<uint64_t> want, got;
      for (const PtwriteRecord& r : truth.ptwrites) {
        if (r.traced) want.push_back(truth.insns[r.insn].ip);
      }
      for (const LibiptEvent& e : flow.events) {
        if (e.type == ptev_ptwrite) got.push_back(e.ip);
      }
      EXPECT_EQ(got, want) << "PTWRITE IPs from fup_on_ptw, seed " << seed;
    }
    if (cc.config.branch_en() && !cc.options.exclude_user) {
      EXPECT_GT(expected.size(), 0u);
      if (!overflows) EXPECT_EQ(expected.size(), truth.insns.size()) << "all of the run is traced";
      if (cc.options.overflow_every != 0 && truth.insns.size() > 5000) {
        EXPECT_GT(truth.CountEvents(EventKind::kOverflow), 0u);
      }
    } else {
      EXPECT_THAT(expected, IsEmpty());
    }
    g_traces += 1;
    g_insns += truth.insns.size();
    g_traced += expected.size();
    g_bytes += t->bytes.size();
  }
}

std::string CaseName(const ::testing::TestParamInfo<std::tuple<size_t, size_t>>& info) {
  return Programs()[std::get<0>(info.param)].name + "_" + Configs()[std::get<1>(info.param)].name;
}

INSTANTIATE_TEST_SUITE_P(Matrix, LibiptFlowTest,
                         ::testing::Combine(::testing::Range<size_t>(0, Programs().size()),
                                            ::testing::Range<size_t>(0, Configs().size())),
                         CaseName);

class Totals : public ::testing::Environment {
 public:
  void TearDown() override {
    if (g_traces == 0) return;
    std::printf("[pt_sim] libipt flow: %llu traces, %llu instructions executed, %llu traced and matched, %llu bytes\n",
                static_cast<unsigned long long>(g_traces), static_cast<unsigned long long>(g_insns),
                static_cast<unsigned long long>(g_traced), static_cast<unsigned long long>(g_bytes));
  }
};
const auto* const kTotals = ::testing::AddGlobalTestEnvironment(new Totals);

}  // namespace
}  // namespace perftest::pt_sim
