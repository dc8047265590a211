// The corpus of simulated runs the libipt check uses (libipt_flow_test.cc),
// for every consumer that wants the same traces: the flow decoder's
// round-trip and differential tests, benchmarks, the pt_sim_gen tool.
//
//   for (size_t p = 0; p < CorpusPrograms().size(); ++p)
//     for (size_t c = 0; c < CorpusConfigs().size(); ++c) {
//       Result<GeneratedTrace> t = GenerateCorpusCase(p, c, /*seed=*/1);
//       ...  // CorpusCaseName(p, c) is "loops_tsc", "compiled_o0_ptw_fup", ...
//     }
//
// Programs: hand-assembled (test_programs.h) and compiled C++ at -O0 and -O2
// (compiled_program.h). Configs: one per intel_pt config term the issue
// names (tsc, mtc, cyc, noretcomp, psb_period, branch=0, ptw, overflow) and
// the generator's other events, alone and together.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mocks/pt_sim/generator.h"

namespace perftest::pt_sim {

struct CorpusProgram {
  std::string name;
  std::function<Program()> make;
  unsigned taken_percent = 50;  // the oracle's, suited to the program's loops
  // Code of this binary (compiled_program.h): its addresses are where ASLR
  // loaded the binary, different from run to run.
  bool loaded_code = false;
};

struct CorpusConfig {
  std::string name;
  PtConfig config;
  RunOptions options;  // oracle seed, taken_percent and max_insns are set per case
};

const std::vector<CorpusProgram>& CorpusPrograms();
const std::vector<CorpusConfig>& CorpusConfigs();

// "<program>_<config>".
std::string CorpusCaseName(size_t program, size_t config);
// The run options of a case: the config's, with a seed derived from
// (seed, program, config), the program's taken_percent and `max_insns`.
RunOptions CorpusRunOptions(size_t program, size_t config, uint64_t seed, uint64_t max_insns = 20000);
// Generate() for a case. Errors: as Generate().
Result<GeneratedTrace> GenerateCorpusCase(size_t program, size_t config, uint64_t seed, uint64_t max_insns = 20000);
// The same case with the program's code placed at `base` (Relocate(), program.h):
// the compiled programs' code lies where ASLR loaded this binary, and the
// trace's IP packets (and so which bytes a corruption hits) depend on it;
// a fixed base makes the case reproducible. base 0: where the code is.
Result<GeneratedTrace> GenerateCorpusCase(size_t program, size_t config, uint64_t seed, uint64_t max_insns,
                                          uint64_t base);

}  // namespace perftest::pt_sim
