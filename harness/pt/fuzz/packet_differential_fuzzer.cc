// libFuzzer target: our packet decoder against libipt 2.0.5 on arbitrary
// bytes (testing/differential.h: the same protocol as the differential
// tests). Traps on the first difference, after printing it.
//
//   build-fuzz/bin/pt_packet_differential_fuzzer -max_total_time=60 CORPUS_DIR fixtures/pt
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>

#include "harness/pt/testing/differential.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string diff = perftest::pt::testing::DiffAgainstLibipt(std::span<const uint8_t>(data, size));
  if (!diff.empty()) {
    std::fprintf(stderr, "libipt differs: %s\n", diff.c_str());
    __builtin_trap();
  }
  return 0;
}
