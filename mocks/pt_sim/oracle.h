// The branch oracle: the deterministic stand-in for the data a simulated
// program would compute. Seeded; the same seed gives the same decisions.
//
//   pt_sim::BranchOracle oracle({.seed = 7, .taken_percent = 60});
//   bool taken = oracle.CondTaken(ip);
//   uint64_t to = oracle.PickTarget(ip, candidates);
//
// Returns need no oracle: they pop the generator's simulated call stack.
#pragma once

#include <cstdint>
#include <random>
#include <span>

namespace perftest::pt_sim {

struct OracleOptions {
  uint64_t seed = 1;
  unsigned taken_percent = 50;   // chance that a conditional branch is taken, 0..100
  unsigned min_cycles = 1;       // core cycles per instruction, drawn from [min, max]
  unsigned max_cycles = 4;
};

class BranchOracle {
 public:
  explicit BranchOracle(const OracleOptions& options);

  // The outcome of the conditional branch at `ip`.
  bool CondTaken(uint64_t ip);
  // One of `candidates` (not empty) for the indirect branch at `ip`.
  uint64_t PickTarget(uint64_t ip, std::span<const uint64_t> candidates);
  // Core cycles the next instruction takes.
  uint64_t Cycles();
  // A uniformly drawn value (PTWRITE operands, event spacing).
  uint64_t Draw();
  // True with probability 1/mean (mean 0: never).
  bool OneIn(uint64_t mean);
  // A value in [lo, hi].
  uint64_t Between(uint64_t lo, uint64_t hi);

 private:
  OracleOptions options_;
  std::mt19937_64 rng_;
};

}  // namespace perftest::pt_sim
