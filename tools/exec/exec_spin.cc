// perftest_exec_spin: a CPU-bound program of ours for `perftest exec -- perf
// record` (tools/exec tests): main() -> Caller() -> HotLoop(), compiled with
// frame pointers in every function (leaf ones too), so a frame-pointer
// callchain from HotLoop names its callers.
//
//   perftest_exec_spin [MS]   spins MS milliseconds of its own CPU time (default 300),
//                             then prints the process's CPU time on stderr: "cpu_ns=N"
//
// HotLoop does the work; Caller reads the CPU clock between calls (tens of
// milliseconds apart), so nearly every sample falls in HotLoop, called from
// Caller, called from main.
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

uint64_t CpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

extern "C" __attribute__((noinline)) uint64_t Finish(uint64_t x) { return x ^ (x >> 17); }

// Not a leaf (it calls Finish once): GCC gives it a frame even where it
// would omit a leaf function's.
extern "C" __attribute__((noinline)) uint64_t HotLoop(uint64_t n) {
  uint64_t x = 0;
  for (uint64_t i = 0; i < n; ++i) x = x * 31 + i;
  return Finish(x);
}

extern "C" __attribute__((noinline)) uint64_t Caller(uint64_t ms) {
  uint64_t sum = 0;
  const uint64_t start = CpuNs();
  while (CpuNs() - start < ms * 1000000u) sum += HotLoop(40000000);  // ~20-60 ms between clock reads
  return sum;
}

int main(int argc, char** argv) {
  const uint64_t ms = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 300;
  std::printf("%llu\n", static_cast<unsigned long long>(Caller(ms)));
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  std::fprintf(stderr, "cpu_ns=%lld\n", static_cast<long long>(ts.tv_sec) * 1000000000ll + ts.tv_nsec);
  return 0;
}
