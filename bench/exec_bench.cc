// perftest exec against the kernel: the cost of a served call (issue 24
// "Done when": a served read and ioctl within 10x of the kernel's own).
//
//   build/bin/bench_exec --benchmark_min_time=0.5
//   ./perftest bench exec    # BM_Exec*/OP against BM_Baseline_Kernel/OP: kernel time / served time
//
// Each benchmark drives a helper process (this binary with --helper) over a
// pipe: the helper opens a task-clock event (perf_event_open(2), pid 0,
// cpu -1) and makes batches of kBatch calls on it; an iteration is one
// batch, items are calls, timed in real time. The kernel baseline's helper
// runs natively; BM_Exec's under build/bin/perftest_exec (seccomp-filter
// stops, the default where nothing denies perf_event_open) and
// BM_ExecSyscallStops's under perftest_exec --intercept=syscall (the mode
// used where a container's filter denies it). Same helper, same pipe, same
// run: the ratio is the served call's cost against the kernel's.
//   read   read(2) of the u64 count (read_format 0)
//   ioctl  PERF_EVENT_IOC_RESET
// Where the kernel refuses perf_event_open (seccomp, paranoid) the baseline
// reports an error and has no ratio. Benchmarks only: nothing asserts a time.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int kBatch = 1000;

// --helper: serves "read\n" / "ioctl\n" batches from stdin, answers "ok\n"
// (or "err ERRNO\n") on stdout.
int Helper() {
  perf_event_attr a{};
  a.size = sizeof a;
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_TASK_CLOCK;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  const int fd = static_cast<int>(syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
  const int open_errno = fd < 0 ? errno : 0;
  char line[64];
  while (std::fgets(line, sizeof line, stdin) != nullptr) {
    int err = open_errno;
    for (int i = 0; i < kBatch && err == 0; ++i) {
      if (std::strncmp(line, "read", 4) == 0) {
        uint64_t v = 0;
        if (read(fd, &v, sizeof v) != sizeof v) err = errno;
      } else if (ioctl(fd, PERF_EVENT_IOC_RESET, 0) != 0) {
        err = errno;
      }
    }
    if (err != 0) {
      std::printf("err %d\n", err);
    } else {
      std::printf("ok\n");
    }
    std::fflush(stdout);
  }
  return 0;
}

std::string SelfDir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

struct HelperProcess {
  pid_t pid = -1;
  FILE* to = nullptr;
  FILE* from = nullptr;

  bool Start(const std::vector<std::string>& prefix) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return false;
    pid = fork();
    if (pid == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      std::vector<std::string> args = prefix;
      args.push_back(SelfDir() + "/bench_exec");
      args.push_back("--helper");
      std::vector<char*> argv;
      for (std::string& s : args) argv.push_back(s.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    to = fdopen(in[1], "w");
    from = fdopen(out[0], "r");
    return pid > 0 && to != nullptr && from != nullptr;
  }
  // One batch; "" on success, else why not.
  std::string Batch(const char* op) {
    std::fprintf(to, "%s\n", op);
    std::fflush(to);
    char line[64];
    if (std::fgets(line, sizeof line, from) == nullptr) return "the helper died";
    if (std::strncmp(line, "ok", 2) == 0) return "";
    return std::string("the helper's call failed: ") + std::strerror(std::atoi(line + 4));
  }
  ~HelperProcess() {
    if (to != nullptr) std::fclose(to);
    if (from != nullptr) std::fclose(from);
    if (pid > 0) {
      kill(pid, SIGTERM);
      waitpid(pid, nullptr, 0);
    }
  }
};

void Run(benchmark::State& state, std::vector<std::string> prefix, const char* op) {
  HelperProcess h;
  if (!h.Start(prefix)) {
    state.SkipWithError("cannot start the helper");
    return;
  }
  if (std::string why = h.Batch(op); !why.empty()) {  // warm-up; and a refused open shows here
    state.SkipWithError(why.c_str());
    return;
  }
  for (auto _ : state) {
    if (std::string why = h.Batch(op); !why.empty()) {
      state.SkipWithError(why.c_str());
      return;
    }
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

void Register() {
  const std::string exec = SelfDir() + "/perftest_exec";
  for (const char* op : {"read", "ioctl"}) {
    benchmark::RegisterBenchmark((std::string("BM_Baseline_Kernel/") + op).c_str(),
                                 [op](benchmark::State& s) { Run(s, {}, op); })
        ->UseRealTime();
    benchmark::RegisterBenchmark((std::string("BM_Exec/") + op).c_str(),
                                 [op, exec](benchmark::State& s) { Run(s, {exec, "--no-sysfs-view", "--"}, op); })
        ->UseRealTime();
    benchmark::RegisterBenchmark((std::string("BM_ExecSyscallStops/") + op).c_str(), [op, exec](benchmark::State& s) {
      Run(s, {exec, "--no-sysfs-view", "--intercept=syscall", "--"}, op);
    })->UseRealTime();
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--helper") == 0) return Helper();
  Register();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
