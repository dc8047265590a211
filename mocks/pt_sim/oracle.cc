#include "mocks/pt_sim/oracle.h"

namespace perftest::pt_sim {

BranchOracle::BranchOracle(const OracleOptions& options) : options_(options), rng_(options.seed) {}

bool BranchOracle::CondTaken(uint64_t /*ip*/) { return Between(0, 99) < options_.taken_percent; }

uint64_t BranchOracle::PickTarget(uint64_t /*ip*/, std::span<const uint64_t> candidates) {
  return candidates[Between(0, candidates.size() - 1)];
}

uint64_t BranchOracle::Cycles() { return Between(options_.min_cycles, options_.max_cycles); }

uint64_t BranchOracle::Draw() { return rng_(); }

bool BranchOracle::OneIn(uint64_t mean) { return mean != 0 && Between(0, mean - 1) == 0; }

uint64_t BranchOracle::Between(uint64_t lo, uint64_t hi) {
  if (hi <= lo) return lo;
  return lo + rng_() % (hi - lo + 1);
}

}  // namespace perftest::pt_sim
