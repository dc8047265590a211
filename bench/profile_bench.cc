// `perftest bench profile`: the CPU time `perftest profile` costs while it
// samples every CPU at 999 Hz for 2 s, in ring mode and in bpf mode, next to
// `perf record -F 999 -a -g` over the same interval (the baseline), in one
// run. Each iteration runs the tool as a child and takes its user + system
// CPU time from wait4(2)'s rusage (one iteration each: a run
// outlasts Google Benchmark's minimum time) (symbolization and output included, as a
// user pays them).
//
// BM_PerfRecordThenScript adds `perf script` over perf record's file: what
// perf spends for the same result (symbolized stacks), since perf record
// alone symbolizes nothing.
//
// Reported per benchmark: cpu_ms (the child's CPU time) and items_per_second
// = 1 / CPU seconds, so the runner's ratio against BM_Baseline_PerfRecord is
// perf's CPU time / the profiler's (> 1: the profiler is cheaper than perf).
// Needs root or perf_event_paranoid <= 0 (CPU-wide sampling); perf from
// Debian's linux-perf for the baseline (else that benchmark reports an error).
#include <benchmark/benchmark.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/external_command.h"

namespace {

using perftest::bench::BinDir;
using perftest::bench::Which;

constexpr char kSeconds[] = "2";

// Runs argv with stdout and stderr to /dev/null; CPU seconds of the child,
// or < 0 when it could not run or exited non-zero.
double ChildCpuSeconds(const std::vector<std::string>& argv) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  rusage ru{};
  if (wait4(pid, &status, 0, &ru) != pid) return -1;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

void Measure(benchmark::State& state, const std::vector<std::string>& argv) {
  double total = 0;
  for (auto _ : state) {
    double cpu = ChildCpuSeconds(argv);
    if (cpu < 0) {
      state.SkipWithError(("failed: " + argv[0] + " (not built, no permission, or exit != 0)").c_str());
      return;
    }
    total += cpu;
  }
  const double per_run = total / static_cast<double>(state.iterations());
  state.counters["cpu_ms"] = per_run * 1e3;
  state.counters["items_per_second"] = per_run > 0 ? 1.0 / per_run : 0;
}

void BM_Baseline_PerfRecord(benchmark::State& state) {
  const std::string perf = Which("perf");
  if (perf.empty()) {
    state.SkipWithError("perf not installed (Debian: linux-perf)");
    return;
  }
  char tmpl[] = "/tmp/perftest-bench-profile-XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd >= 0) close(fd);
  Measure(state, {perf, "record", "-q", "-F", "999", "-a", "-g", "-o", tmpl, "--", "sleep", kSeconds});
  unlink(tmpl);
  std::filesystem::remove(std::string(tmpl) + ".old");
}

// perf record as above, then `perf script` over its file: perf's cost of the
// same result (symbolized stacks), next to the profiler's, which symbolizes
// and prints within its own run.
void BM_PerfRecordThenScript(benchmark::State& state) {
  const std::string perf = Which("perf");
  if (perf.empty()) {
    state.SkipWithError("perf not installed (Debian: linux-perf)");
    return;
  }
  char tmpl[] = "/tmp/perftest-bench-profile-XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd >= 0) close(fd);
  double total = 0;
  for (auto _ : state) {
    const double record = ChildCpuSeconds({perf, "record", "-q", "-F", "999", "-a", "-g", "-o", tmpl, "--", "sleep",
                                           kSeconds});
    const double script = record < 0 ? -1 : ChildCpuSeconds({perf, "script", "-i", tmpl, "-F", "comm,ip,sym"});
    if (script < 0) {
      state.SkipWithError("perf record or perf script failed");
      break;
    }
    total += record + script;
  }
  unlink(tmpl);
  std::filesystem::remove(std::string(tmpl) + ".old");
  const double per_run = total / static_cast<double>(std::max<benchmark::IterationCount>(state.iterations(), 1));
  state.counters["cpu_ms"] = per_run * 1e3;
  state.counters["items_per_second"] = per_run > 0 ? 1.0 / per_run : 0;
}

void BM_Profile(benchmark::State& state, const std::string& mode) {
  Measure(state, {BinDir() + "/perftest_profile", "--mode=" + mode, "-F", "999", "-f", kSeconds});
}

}  // namespace

BENCHMARK(BM_Baseline_PerfRecord)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PerfRecordThenScript)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Profile, ring, std::string("ring"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Profile, bpf, std::string("bpf"))->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
