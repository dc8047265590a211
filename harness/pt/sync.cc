#include "harness/pt/sync.h"

#include <cstring>

namespace perftest::pt {
namespace {

constexpr uint8_t kPsbHi = 0x02;
constexpr uint8_t kPsbLo = 0x82;
constexpr uint64_t kPsbSize = 16;
// An 8-byte little-endian load of the pattern in either phase.
constexpr uint64_t kWordHiLo = 0x8202820282028202ull;  // bytes 02 82 02 82 ...
constexpr uint64_t kWordLoHi = 0x0282028202820282ull;  // bytes 82 02 82 02 ...

uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

bool IsPatternWord(const uint8_t* p) {
  const uint64_t v = Load64(p);
  return v == kWordHiLo || v == kWordLoHi;
}

// The PSB that ends the run of 02h 82h pairs starting at `pos` (or at pos + 1
// if trace[pos] is not 02h), or -1. libipt 2.0.5 (pt_find_psb) looks from the
// word *after* the pattern word it found, and reads the byte at `pos` even
// when pos is the end of the trace; that byte is taken as not 02h here (the
// differential tests give libipt zeroes past the end).
int64_t PsbEndingRunFrom(std::span<const uint8_t> trace, uint64_t pos) {
  const uint8_t* data = trace.data();
  const uint64_t size = trace.size();
  if (pos >= size || data[pos] != kPsbHi) ++pos;
  while (pos + 1 < size && data[pos] == kPsbHi && data[pos + 1] == kPsbLo) pos += 2;
  if (pos < kPsbSize) return -1;
  const uint64_t psb = pos - kPsbSize;
  return IsPsbAt(trace, psb) ? static_cast<int64_t>(psb) : -1;
}

}  // namespace

bool IsPsbAt(std::span<const uint8_t> trace, uint64_t offset) {
  if (offset > trace.size() || trace.size() - offset < kPsbSize) return false;
  const uint8_t* p = trace.data() + offset;
  return Load64(p) == kWordHiLo && Load64(p + 8) == kWordHiLo;
}

std::optional<uint64_t> FindPsbForward(std::span<const uint8_t> trace, uint64_t from) {
  const uint64_t size = trace.size();
  if (from > size) return std::nullopt;
  for (uint64_t word = (from + 7) & ~uint64_t{7}; word + 8 <= size; word += 8) {
    if (!IsPatternWord(trace.data() + word)) continue;
    const int64_t psb = PsbEndingRunFrom(trace, word + 8);
    // A PSB before `from` (the run began before it): keep looking.
    if (psb < 0 || static_cast<uint64_t>(psb) < from) continue;
    return static_cast<uint64_t>(psb);
  }
  return std::nullopt;
}

std::optional<uint64_t> FindPsbBackward(std::span<const uint8_t> trace, uint64_t from) {
  if (from > trace.size()) from = trace.size();
  for (uint64_t word = from & ~uint64_t{7}; word >= 8;) {
    word -= 8;
    if (!IsPatternWord(trace.data() + word)) continue;
    const int64_t psb = PsbEndingRunFrom(trace, word + 8);
    if (psb >= 0) return static_cast<uint64_t>(psb);
  }
  return std::nullopt;
}

}  // namespace perftest::pt
