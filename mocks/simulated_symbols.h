// The symbol table of the mock's simulated machine: names for the code
// addresses MockBackend puts in samples (event_output.h's k*Ip constants and
// the callers event_output.cc's Callchain() adds), so a profiler on the mock
// prints functions, not bare addresses.
//
//   if (const SimulatedSymbol* s = FindSimulatedSymbol(kUserSpinIp)) use(s->name, kUserSpinIp - s->start);
//
// The simulated task's user code (a program "perftest-mock-task" with libc)
// and kernel text, laid out as on x86_64 Linux (user text near
// 0x555555554000, libc near 0x7ffff7dc0000, kernel text from
// 0xffffffff81000000). The names are what these addresses stand for in the
// model: the spin loop, the page-touching loop, nanosleep through
// __schedule, the idle loop.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace perftest::mock {

struct SimulatedSymbol {
  uint64_t start = 0;     // first byte
  uint64_t size = 0;      // bytes
  std::string_view name;  // function
  std::string_view module;  // "perftest-mock-task", "libc.so.6" or "[kernel.kallsyms]"
};

// Every symbol, sorted by start, none overlapping.
std::span<const SimulatedSymbol> SimulatedSymbols();

// The symbol whose [start, start + size) holds `ip`, or nullptr.
const SimulatedSymbol* FindSimulatedSymbol(uint64_t ip);

}  // namespace perftest::mock
