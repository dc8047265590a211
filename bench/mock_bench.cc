// MockBackend versus the kernel: the cost of the syscall surface both serve
// (issue 3, "Fidelity, measured": the mock must be much cheaper than the
// kernel, so that suites and the fidelity check run fast in containers).
//
//   build/bin/bench_mock --benchmark_min_time=0.2
//   ./perftest bench mock     # each BM_Mock/OP against BM_Baseline_Kernel/OP: kernel time / mock time
//
// One software event, the same calls on both backends, in the same run:
//   open_close     perf_event_open(PERF_COUNT_SW_TASK_CLOCK, disabled, exclude_kernel|hv, pid 0, cpu -1) + close
//   read           read(2) of that event's u64 count (read_format 0)
//   ioctl_reset    PERF_EVENT_IOC_RESET
//   ioctl_enable_disable  PERF_EVENT_IOC_ENABLE then PERF_EVENT_IOC_DISABLE
// The mock uses the sw-only profile (this VM). Where perf_event_open does not
// work (seccomp, paranoid), the kernel benchmarks report an error and have no
// ratio. Benchmarks only: nothing here asserts a time.
#include <benchmark/benchmark.h>
#include <linux/perf_event.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>

#include "harness/attr.h"
#include "harness/backend.h"
#include "mocks/mock_backend.h"
#include "mocks/profile.h"

namespace perftest {
namespace {

perf_event_attr TaskClock() {
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_TASK_CLOCK);
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  return a;
}

std::unique_ptr<Backend> MakeBackend(bool mock, std::string* error) {
  if (!mock) return MakeKernelBackend();
  Result<MockProfile> p = LoadProfile("sw-only");
  if (!p.ok()) {
    *error = p.ToString();
    return nullptr;
  }
  return MakeMockBackend(std::move(*p));
}

// Opens the benchmark's event, or reports why not.
bool OpenEvent(benchmark::State& state, Backend& b, int* fd) {
  perf_event_attr a = TaskClock();
  Result<int> r = b.PerfEventOpen(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (!r.ok()) {
    state.SkipWithError(r.ToString().c_str());
    return false;
  }
  *fd = *r;
  return true;
}

enum class Op { kOpenClose, kRead, kIoctlReset, kIoctlEnableDisable };

void Run(benchmark::State& state, bool mock, Op op) {
  std::string error;
  std::unique_ptr<Backend> b = MakeBackend(mock, &error);
  if (b == nullptr) {
    state.SkipWithError(error.c_str());
    return;
  }
  int fd = -1;
  if (op == Op::kOpenClose) {
    perf_event_attr a = TaskClock();
    for (auto _ : state) {
      Result<int> r = b->PerfEventOpen(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
      if (!r.ok()) {
        state.SkipWithError(r.ToString().c_str());
        break;
      }
      (void)b->Close(*r);
    }
    state.SetItemsProcessed(state.iterations());
    return;
  }
  if (!OpenEvent(state, *b, &fd)) return;
  uint64_t value = 0;
  switch (op) {
    case Op::kRead:
      for (auto _ : state) {
        Result<size_t> n = b->Read(fd, &value, sizeof value);
        benchmark::DoNotOptimize(n);
      }
      break;
    case Op::kIoctlReset:
      for (auto _ : state) benchmark::DoNotOptimize(b->Ioctl(fd, PERF_EVENT_IOC_RESET, 0));
      break;
    case Op::kIoctlEnableDisable:
      for (auto _ : state) {
        benchmark::DoNotOptimize(b->Ioctl(fd, PERF_EVENT_IOC_ENABLE, 0));
        benchmark::DoNotOptimize(b->Ioctl(fd, PERF_EVENT_IOC_DISABLE, 0));
      }
      break;
    case Op::kOpenClose:
      break;
  }
  state.SetItemsProcessed(state.iterations());
  (void)b->Close(fd);
}

// Registered by name so that each mock benchmark and its kernel baseline share
// the suffix the runner pairs them by (runner/perftest/bench.py).
const int kRegistered = [] {
  const std::pair<const char*, Op> ops[] = {{"open_close", Op::kOpenClose},
                                            {"read", Op::kRead},
                                            {"ioctl_reset", Op::kIoctlReset},
                                            {"ioctl_enable_disable", Op::kIoctlEnableDisable}};
  for (const auto& [name, op] : ops) {
    benchmark::RegisterBenchmark((std::string("BM_Baseline_Kernel/") + name).c_str(),
                                 [op = op](benchmark::State& s) { Run(s, /*mock=*/false, op); });
    benchmark::RegisterBenchmark((std::string("BM_Mock/") + name).c_str(),
                                 [op = op](benchmark::State& s) { Run(s, /*mock=*/true, op); });
  }
  return 0;
}();

}  // namespace
}  // namespace perftest

BENCHMARK_MAIN();
