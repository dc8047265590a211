// Rng: the seeded random source of the fidelity generator. Its output is a
// function of the seed alone, on every platform and standard library (no
// std::*_distribution, whose results are implementation-defined), so a seed
// names the same call sequence everywhere.
//
//   Rng rng(SequenceSeed(/*master=*/1, /*index=*/42));
//   uint64_t config = rng.Below(PERF_COUNT_SW_MAX);
//   if (rng.Percent(20)) attr.freq = 1;
//
// Source: SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number
// generators", OOPSLA 2014), the generator Java's SplittableRandom uses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>

namespace perftest::fidelity {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  // 64 uniformly random bits.
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n); 0 when n == 0. Lemire's multiply-shift (its bias, below
  // 2^-32 for the n used here, does not matter for fuzzing).
  uint64_t Below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }
  // Uniform in [lo, hi] (inclusive).
  uint64_t Range(uint64_t lo, uint64_t hi) { return lo + Below(hi - lo + 1); }
  // True with probability pct/100.
  bool Percent(unsigned pct) { return Below(100) < pct; }
  // One uniformly chosen element. Precondition: non-empty.
  template <typename T>
  T Pick(std::initializer_list<T> items) { return items.begin()[Below(items.size())]; }
  // A value with exactly one random bit set among bits [lo, hi].
  uint64_t OneBit(unsigned lo, unsigned hi) { return uint64_t{1} << Range(lo, hi); }

 private:
  uint64_t state_;
};

// The seed of sequence `index` of a run with seed `master`: a SplitMix64 step
// of both, so neighbouring sequences are unrelated and each can be replayed
// alone (perftest_fidelity --replay=SEED).
inline uint64_t SequenceSeed(uint64_t master, uint64_t index) {
  Rng r(master ^ (index * 0xd1b54a32d192ed03ull));
  r.Next();
  return r.Next();
}

}  // namespace perftest::fidelity
