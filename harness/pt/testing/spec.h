// Test-case metadata for the pt unit tests (STYLE.md 8): a stable feature id
// and the spec reference, recorded as GoogleTest properties `feature` and
// `spec` like the suites' PERFTEST_CASE does.
//
//   TEST(PacketDecoder, Tip) {
//     pt::testing::Spec("pt.packet.tip", "SDM Vol. 3C §33.4.2.2, table 'TIP Packet Definition'");
//     ...
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace perftest::pt::testing {

inline void Spec(const char* feature, const char* spec) {
  ::testing::Test::RecordProperty("feature", feature);
  ::testing::Test::RecordProperty("spec", spec);
}

// Byte vectors from initializer lists of ints: Bytes({0x02, 0x82}).
inline std::vector<uint8_t> Bytes(std::initializer_list<int> bytes) {
  std::vector<uint8_t> v;
  for (int b : bytes) v.push_back(static_cast<uint8_t>(b));
  return v;
}

inline std::vector<uint8_t> Concat(std::initializer_list<std::vector<uint8_t>> parts) {
  std::vector<uint8_t> v;
  for (const auto& p : parts) v.insert(v.end(), p.begin(), p.end());
  return v;
}

inline std::vector<uint8_t> PsbBytes() {
  std::vector<uint8_t> v;
  for (int i = 0; i < 8; ++i) {
    v.push_back(0x02);
    v.push_back(0x82);
  }
  return v;
}

}  // namespace perftest::pt::testing
