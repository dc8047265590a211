#include "mocks/pt_sim/corpus.h"

#include "mocks/pt_sim/compiled_program.h"
#include "mocks/pt_sim/test_programs.h"

namespace perftest::pt_sim {
namespace {

// clang-format off
PtConfig Base() { return PtConfig{}; }  // pt, tsc, branch; psb_period 0

std::vector<CorpusProgram> MakePrograms() {
  return {
      {"loops", testing::LoopsProgram, 50},
      {"dispatch", testing::DispatchProgram, 50},
      {"deep", testing::DeepProgram, 97},
      {"exit", testing::ExitProgram, 99},
      {"compiled", CompiledProgram, 50, true},
      {"compiled_o0", CompiledProgramO0, 50, true},
  };
}

std::vector<CorpusConfig> MakeConfigs() {
  std::vector<CorpusConfig> v;
  auto add = [&](std::string name, std::function<void(PtConfig&, RunOptions&)> f) {
    CorpusConfig c{std::move(name), Base(), RunOptions{}};
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
  add("cbr_cyc_mtc", [](PtConfig& c, RunOptions& o) { c.cyc = true; c.mtc = true; o.cbr_change_every = 400; });
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

// clang-format on

}  // namespace

const std::vector<CorpusProgram>& CorpusPrograms() {
  static const std::vector<CorpusProgram> programs = MakePrograms();
  return programs;
}

const std::vector<CorpusConfig>& CorpusConfigs() {
  static const std::vector<CorpusConfig> configs = MakeConfigs();
  return configs;
}

std::string CorpusCaseName(size_t program, size_t config) {
  return CorpusPrograms().at(program).name + "_" + CorpusConfigs().at(config).name;
}

RunOptions CorpusRunOptions(size_t program, size_t config, uint64_t seed, uint64_t max_insns) {
  RunOptions options = CorpusConfigs().at(config).options;
  options.oracle.seed = seed * 1000 + program * 31 + config;
  options.oracle.taken_percent = CorpusPrograms().at(program).taken_percent;
  options.max_insns = max_insns;
  return options;
}

Result<GeneratedTrace> GenerateCorpusCase(size_t program, size_t config, uint64_t seed, uint64_t max_insns) {
  return Generate(CorpusPrograms().at(program).make(), CorpusConfigs().at(config).config,
                  CorpusRunOptions(program, config, seed, max_insns));
}

Result<GeneratedTrace> GenerateCorpusCase(size_t program, size_t config, uint64_t seed, uint64_t max_insns,
                                          uint64_t base) {
  if (base == 0) return GenerateCorpusCase(program, config, seed, max_insns);
  Result<Program> moved = Relocate(CorpusPrograms().at(program).make(), base);
  if (!moved.ok()) return Result<GeneratedTrace>::FailureFrom(moved);
  return Generate(*moved, CorpusConfigs().at(config).config, CorpusRunOptions(program, config, seed, max_insns));
}

}  // namespace perftest::pt_sim
