#include "mocks/pt_sim/compiled_program.h"

#include <cstdint>
#include <vector>

// Everything here stays inside the section: no library calls, no switch
// (no jump tables: their targets are data), no arrays (no stack protector).
#define PTSIM_CODE extern "C" __attribute__((noinline, used, section("ptsim_code")))

PTSIM_CODE int ptsim_fib(int n) { return n < 2 ? n : ptsim_fib(n - 1) + ptsim_fib(n - 2); }

PTSIM_CODE int ptsim_collatz(uint64_t x) {
  int steps = 0;
  while (x > 1) {
    x = (x & 1) ? 3 * x + 1 : x / 2;
    ++steps;
  }
  return steps;
}

PTSIM_CODE int ptsim_apply(int (*volatile f)(int), int v) { return f(v) + 1; }

PTSIM_CODE int ptsim_main(int n) {
  int s = 0;
  for (int i = 0; i < n; ++i) {
    s += ptsim_fib(i & 7);
    s += ptsim_collatz(static_cast<uint64_t>(i) + 3);
    s += ptsim_apply(ptsim_fib, i & 3);
  }
  return s;
}

extern "C" const uint8_t __start_ptsim_code[];
extern "C" const uint8_t __stop_ptsim_code[];

namespace perftest::pt_sim {

Program CompiledProgram() {
  Program p;
  p.name = "compiled";
  const auto begin = reinterpret_cast<uint64_t>(__start_ptsim_code);
  std::vector<uint8_t> bytes(__start_ptsim_code, __stop_ptsim_code);
  (void)p.image.Add(begin, std::move(bytes), "ptsim_code");
  p.entry = reinterpret_cast<uint64_t>(&ptsim_main);
  p.any_indirect_targets = {reinterpret_cast<uint64_t>(&ptsim_fib), reinterpret_cast<uint64_t>(&ptsim_collatz)};
  return p;
}

}  // namespace perftest::pt_sim
