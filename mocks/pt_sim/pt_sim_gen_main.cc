// build/bin/pt_sim_gen: writes the pt_sim corpus (corpus.h) to files, as
// BASE.bin (the trace) and BASE.truth.json (ground truth, image, config) —
// the format perftest's `pt record` side and the decoder tests read
// (generator.h WriteGeneratedTrace).
//
//   pt_sim_gen --out /tmp/corpus [--seeds 2] [--insns 20000] [--filter loops_]
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>

#include "mocks/pt_sim/corpus.h"

int main(int argc, char** argv) {
  using namespace perftest::pt_sim;
  CLI::App app{"Write the pt_sim corpus: simulated Intel PT traces with their ground truth"};
  std::string out;
  uint64_t seeds = 1, insns = 20000;
  std::string filter;
  bool list = false;
  app.add_option("--out", out, "directory to write NAME_SEED.bin and NAME_SEED.truth.json into");
  app.add_option("--seeds", seeds, "seeds 1..N per case")->check(CLI::Range(1, 1000));
  app.add_option("--insns", insns, "instructions per run at most")->check(CLI::Range(1, 100000000));
  app.add_option("--filter", filter, "only cases whose name contains this");
  app.add_flag("--list", list, "print the case names and exit");
  CLI11_PARSE(app, argc, argv);
  if (!list && out.empty()) {
    fmt::print(stderr, "pt_sim_gen: --out DIR is required (or --list)\n");
    return 2;
  }
  std::error_code ec;
  if (!list) std::filesystem::create_directories(out, ec);
  if (ec) {
    fmt::print(stderr, "pt_sim_gen: cannot create {}: {}\n", out, ec.message());
    return 1;
  }
  int written = 0;
  for (size_t p = 0; p < CorpusPrograms().size(); ++p) {
    for (size_t c = 0; c < CorpusConfigs().size(); ++c) {
      const std::string name = CorpusCaseName(p, c);
      if (!filter.empty() && name.find(filter) == std::string::npos) continue;
      if (list) {
        fmt::print("{}\t{}\n", name, CorpusConfigs()[c].config.ToString());
        continue;
      }
      for (uint64_t seed = 1; seed <= seeds; ++seed) {
        perftest::Result<GeneratedTrace> t = GenerateCorpusCase(p, c, seed, insns);
        if (!t.ok()) {
          fmt::print(stderr, "pt_sim_gen: {}: {}\n", name, t.ToString());
          return 1;
        }
        const std::string base = fmt::format("{}/{}_{}", out, name, seed);
        perftest::Result<void> w = WriteGeneratedTrace(*t, base);
        if (!w.ok()) {
          fmt::print(stderr, "pt_sim_gen: {}\n", w.ToString());
          return 1;
        }
        ++written;
      }
    }
  }
  if (!list) fmt::print("pt_sim_gen: wrote {} traces to {}\n", written, out);
  return 0;
}
