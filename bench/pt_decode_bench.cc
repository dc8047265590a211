// `perftest bench pt_decode`: `perftest pt decode FILE --itrace=SPEC` against
// `perf script -i FILE --itrace=SPEC` (the baseline, Debian's linux-perf) on
// the same perf.data, one run each, stdout to /dev/null. The capture is made
// at bench time in a temporary directory (removed at exit) by
// `perftest_pt record --backend=mock --no-truth`: the mock's simulated task
// traced by pt_sim with intel_pt//u (perf record's default config: tsc, mtc,
// mtc_period=3), at least PERFTEST_BENCH_PT_MB megabytes (10^6 bytes) of
// Intel PT (default 50).
//
// Per benchmark: cpu_s, the child's user + system CPU time (wait4(2)
// rusage: symbolization and output formatting included, as a user pays
// them), items_per_second = 1 / cpu_s (so the runner's ratio against
// BM_Baseline_PerfScript/SPEC is perf's CPU time / perftest's: > 1, perftest
// is faster), samples (counted from a second, untimed run whose stdout is
// read: perf's sample and error lines, perftest's lines but its "#" summary),
// trace_MB; on BM_PtDecode also perf_samples (the baseline's count: the
// baselines run first, by registration order) and the label "SAMPLE COUNTS
// DIFFER" when the two are not equal (the ratio is then not like for like).
// Specs: i100ibe (an instruction sample every 100, every branch, errors)
// and bi (every branch, and perf's default instruction period, 100 us).
#include <benchmark/benchmark.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "bench/external_command.h"

namespace {

using perftest::bench::BinDir;
using perftest::bench::Which;

// Runs argv (stderr to /dev/null). With `lines` null, stdout goes to
// /dev/null and the result is the child's CPU seconds; else stdout is read
// and each line handed to `lines`. < 0 when it could not run or exited non-zero.
template <typename F>
double Run(const std::vector<std::string>& argv, F* lines) {
  int fds[2] = {-1, -1};
  if (lines != nullptr && pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(lines != nullptr ? fds[1] : null, 1);
    dup2(null, 2);
    if (lines != nullptr) close(fds[0]);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  if (lines != nullptr) {
    close(fds[1]);
    FILE* in = fdopen(fds[0], "r");
    char* line = nullptr;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, in)) >= 0) (*lines)(std::string_view(line, static_cast<size_t>(n)));
    free(line);
    fclose(in);
  }
  int status = 0;
  rusage ru{};
  if (wait4(pid, &status, 0, &ru) != pid) return -1;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

struct Capture {
  std::string dir, file, error;
  double mb = 0;
};

// The capture's directory, removed at exit (a plain array: it outlives the
// function-local statics, which are destroyed before atexit handlers
// registered earlier run).
char g_dir[64];

const Capture& TheCapture() {
  static const Capture c = [] {
    Capture c;
    const char* env = std::getenv("PERFTEST_BENCH_PT_MB");
    const double want_mb = env != nullptr && std::atof(env) > 0 ? std::atof(env) : 50;
    char tmpl[] = "/tmp/perftest-bench-pt-decode-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      c.error = "mkdtemp failed";
      return c;
    }
    c.dir = tmpl;
    std::snprintf(g_dir, sizeof g_dir, "%s", tmpl);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(g_dir, ec);
    });
    c.file = c.dir + "/bench.data";
    // The mock's default recording writes ~0.2575 bytes of PT per
    // instruction (intel_pt//u on pt_sim's loop program): 4% more for margin.
    const auto instructions = static_cast<uint64_t>(want_mb * 1e6 / 0.2575 * 1.04);
    int null_lines = 0;
    auto ignore = [&null_lines](std::string_view) { ++null_lines; };
    // A 64 MiB AUX area: up to ~64 MB the mock never fills it (no lost data).
    if (Run({BinDir() + "/perftest_pt", "record", "--backend=mock", "--no-truth", "--aux-pages=16384",
             "--instructions=" + std::to_string(instructions), "-o", c.file},
            &ignore) < 0) {
      c.error = "perftest_pt record failed (not built?)";
      return c;
    }
    struct stat st{};
    stat(c.file.c_str(), &st);
    c.mb = static_cast<double>(st.st_size) / 1e6;
    if (c.mb < want_mb) c.error = "the capture is " + std::to_string(c.mb) + " MB, below " + std::to_string(want_mb);
    return c;
  }();
  return c;
}

std::map<std::string, uint64_t>& BaselineSamples() {
  static std::map<std::string, uint64_t> m;
  return m;
}

void Measure(benchmark::State& state, const std::vector<std::string>& argv, bool perf, const std::string& spec) {
  const Capture& c = TheCapture();
  if (!c.error.empty()) {
    state.SkipWithError(c.error.c_str());
    return;
  }
  double total = 0;
  for (auto _ : state) {
    const double cpu = Run<void(std::string_view)>(argv, nullptr);
    if (cpu < 0) {
      state.SkipWithError(("failed: " + argv[0] + " " + argv[1]).c_str());
      return;
    }
    total += cpu;
  }
  uint64_t samples = 0;
  auto count = [&](std::string_view line) {
    if (perf) {
      samples += line.find("instructions:") != std::string_view::npos ||
                 line.find("branches:") != std::string_view::npos ||
                 line.find("instruction trace error") != std::string_view::npos;
    } else {
      samples += !line.empty() && line[0] != '#';
    }
  };
  const bool counted = Run(argv, &count) >= 0;
  const double per_run = total / static_cast<double>(state.iterations());
  state.counters["cpu_s"] = per_run;
  state.counters["items_per_second"] = per_run > 0 ? 1.0 / per_run : 0;
  state.counters["samples"] = static_cast<double>(samples);
  state.counters["trace_MB"] = c.mb;
  if (!counted) {
    state.SkipWithError("the counting run failed");
  } else if (perf) {
    BaselineSamples()[spec] = samples;
  } else if (auto it = BaselineSamples().find(spec); it != BaselineSamples().end()) {
    state.counters["perf_samples"] = static_cast<double>(it->second);
    if (it->second != samples) state.SetLabel("SAMPLE COUNTS DIFFER");
  }
}

void BM_Baseline_PerfScript(benchmark::State& state, const std::string& spec) {
  const std::string perf = Which("perf");
  if (perf.empty()) {
    state.SkipWithError("perf not installed (Debian: linux-perf)");
    return;
  }
  Measure(state, {perf, "script", "-i", TheCapture().file, "--itrace=" + spec}, true, spec);
}

// `perftest pt decode` streams its samples (formatted into one buffer as
// they are made, none kept): its memory does not grow with the sample count.
void BM_PtDecode(benchmark::State& state, const std::string& spec) {
  Measure(state, {BinDir() + "/perftest_pt", "decode", TheCapture().file, "--itrace=" + spec}, false, spec);
}

}  // namespace

BENCHMARK_CAPTURE(BM_Baseline_PerfScript, i100ibe, std::string("i100ibe"))->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_PtDecode, i100ibe, std::string("i100ibe"))->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_Baseline_PerfScript, bi, std::string("bi"))->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_PtDecode, bi, std::string("bi"))->Unit(benchmark::kSecond)->Iterations(1);

BENCHMARK_MAIN();
