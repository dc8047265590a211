// build/bin/perftest_profile (`perftest profile`): the timer-sampling CPU
// profiler of bcc's profile RFC (reference/bcc-profile-rfc.txt) with
// tools/profile.py's interface, on the harness (Event, RingBuffer, records).
//
//   perftest_profile [-p PID | -u | -k] [-U | -K] [-F HZ] [-d] [-f]
//                    [--stack-storage-size N] [--backend=kernel|mock [--profile=P]]
//                    [--mode=ring|bpf] [--format=bcc|folded|svg]
//                    [--call-graph=fp|dwarf[,SIZE]] [-o FILE] [duration]
//
// --format=perf.data writes a perf.data file (-o FILE, default perf.data)
// and prints no stacks; -o FILE with another format writes the same samples
// to FILE besides printing them.
//
// Exit 0 on success; 2 on bad arguments (the message names the argument); 1
// when the kernel refuses (the failing call and errno are printed).
#include <csignal>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "harness/backend.h"
#include "harness/workload.h"
#include "mocks/mock_backend.h"
#include "mocks/profile.h"
#include "mocks/simulated_symbols.h"
#include "tools/profile/bpf_sampler.h"
#include "tools/profile/dwarf_unwinder.h"
#include "tools/profile/flamegraph.h"
#include "tools/profile/output.h"
#include "tools/profile/perf_data_output.h"
#include "tools/profile/ring_sampler.h"
#include "tools/profile/symbolizer.h"

namespace {

using namespace perftest;
using namespace perftest::profile;

volatile std::sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

constexpr double kForever = 99999999;  // profile.py's default duration: until Ctrl-C

std::string ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

std::string HostComm(pid_t pid, pid_t tid, uint32_t cpu) {
  if (tid == 0) return fmt::format("swapper/{}", cpu);
  std::string c = ReadFirstLine(fmt::format("/proc/{}/task/{}/comm", pid, tid));
  return c.empty() ? "[unknown]" : c;
}

// /proc/PID/stat field 9 (flags) has PF_KTHREAD (include/linux/sched.h 0x00200000).
bool HostIsKthread(pid_t pid) {
  std::string stat = ReadFirstLine(fmt::format("/proc/{}/stat", pid));
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream in(stat.substr(close + 2));
  std::string field;
  unsigned long flags = 0;
  for (int i = 3; i <= 9 && in >> field; ++i) {
    if (i == 9) flags = std::stoul(field);
  }
  return flags & 0x00200000;
}

struct Args {
  pid_t pid = -1;
  bool user_threads = false, kernel_threads = false, user_stacks = false, kernel_stacks = false;
  uint64_t frequency = 49;
  bool delimited = false, folded = false;
  size_t stack_storage_size = 16384;
  double duration = kForever;
  std::string backend = "kernel", profile = "software-only", mode = "ring", format = "bcc";
  std::string call_graph = "fp";
  std::string output;                // -o: where --format=perf.data goes (default perf.data)
  std::vector<std::string> argv;     // for perf.data's HEADER_CMDLINE
  bool dwarf = false;
  uint32_t stack_dump_size = 8192;
};

// perf record's --call-graph spelling: "fp", "dwarf" or "dwarf,SIZE" (SIZE
// bytes of user stack per sample: a multiple of 8, at most 65528, as
// kernel/events/core.c perf_copy_attr() takes sample_stack_user).
// "" when `value` is fine, else what is wrong with it.
std::string ParseCallGraph(const std::string& value, Args* a) {
  if (value == "fp") return "";
  if (value.rfind("dwarf", 0) != 0 || (value.size() > 5 && value[5] != ',')) {
    return "--call-graph=" + value + ": expected fp, dwarf or dwarf,SIZE";
  }
  a->dwarf = true;
  if (value.size() > 5) {
    const std::string size = value.substr(6);
    char* end = nullptr;
    const unsigned long n = std::strtoul(size.c_str(), &end, 0);
    if (size.empty() || *end != '\0' || n == 0 || n % 8 != 0 || n > 65528) {
      return "--call-graph=" + value + ": SIZE must be a multiple of 8 from 8 to 65528 (bytes of user stack)";
    }
    a->stack_dump_size = static_cast<uint32_t>(n);
  }
  return "";
}

void Header(const Args& a) {
  std::string threads = a.pid > 0 ? fmt::format("PID {}", a.pid)
                        : a.user_threads ? "user threads"
                        : a.kernel_threads ? "kernel threads"
                                           : "all threads";
  std::string stacks = a.user_stacks ? "user" : a.kernel_stacks ? "kernel" : "user + kernel";
  std::cout << fmt::format("Sampling at {} Hertz of {} by {} stack", a.frequency, threads, stacks);
  if (a.duration < kForever) {
    std::cout << fmt::format(" for {} secs.\n", static_cast<long>(a.duration));
  } else {
    std::cout << "... Hit Ctrl-C to end.\n";
  }
  std::cout.flush();
}

void Print(const Args& a, const StackCounts& counts, Symbolizer& sym) {
  OutputOptions oo{a.delimited, a.user_stacks, a.kernel_stacks};
  if (a.format == "folded") {
    std::cout << FormatFolded(Fold(counts, sym, oo));
  } else if (a.format == "svg") {
    std::cout << FlameGraphSvg(Fold(counts, sym, oo),
                               fmt::format("perftest profile: {} samples at {} Hz", counts.total(),
                                           a.frequency));
  } else {
    std::cout << FormatText(counts, sym, oo);
  }
  std::cout.flush();
  std::cerr << MissingStacksWarning(counts);
  if (!a.user_stacks && !sym.kernel_note().empty()) std::cerr << "NOTE: " << sym.kernel_note() << "\n";
}

// bpf mode: the program counts in the kernel; the maps are read at the end.
int RunBpf(const Args& a, Backend& backend, const SamplerOptions& so, Symbolizer& sym) {
  BpfSampler sampler(backend, so, HostIsKthread);
  if (Result<void> r = sampler.Open(); !r.ok()) {
    std::cerr << "perftest profile: " << r.ToString() << "\n";
    return 1;
  }
  if (a.format == "bcc") Header(a);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  if (Result<void> r = sampler.Enable(); !r.ok()) {
    std::cerr << "perftest profile: " << r.ToString() << "\n";
    return 1;
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(a.duration);
  while (!g_stop && std::chrono::steady_clock::now() < end) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    std::this_thread::sleep_for(std::chrono::milliseconds(std::clamp<int64_t>(left.count(), 1, 100)));
  }
  (void)sampler.Disable();
  if (Result<void> r = sampler.Collect(); !r.ok()) {
    std::cerr << "perftest profile: " << r.ToString() << "\n";
    return 1;
  }
  if (a.format == "bcc") std::cout << "\n";
  Print(a, sampler.counts(), sym);
  return 0;
}

int Run(const Args& a) {
  std::unique_ptr<Backend> backend;
  const bool mock = a.backend == "mock";
  if (mock) {
    Result<MockProfile> p = LoadProfile(a.profile);
    if (!p.ok()) {
      std::cerr << "perftest profile: --profile=" << a.profile << ": " << p.ToString() << "\n";
      return 2;
    }
    backend = MakeMockBackend(std::move(*p));
  } else {
    backend = MakeKernelBackend();
  }
  Symbolizer sym = mock ? Symbolizer([](uint64_t ip) -> std::optional<Frame> {
    const mock::SimulatedSymbol* s = mock::FindSimulatedSymbol(ip);
    if (!s) return std::nullopt;
    return Frame{std::string(s->name), ip - s->start, std::string(s->module), "", false};
  }) : Symbolizer();
  SamplerOptions so;
  so.pid = a.pid;
  so.user_threads_only = a.user_threads;
  so.kernel_threads_only = a.kernel_threads;
  so.user_stacks_only = a.user_stacks;
  so.kernel_stacks_only = a.kernel_stacks;
  so.frequency = a.frequency;
  so.stack_storage_size = a.stack_storage_size;
  so.max_stack = static_cast<uint16_t>(std::min<uint32_t>(backend->Machine().max_stack, 127));
  so.dwarf = a.dwarf;
  so.sideband = !a.output.empty();  // set for --format=perf.data, or -o with another format
  so.stack_dump_size = a.stack_dump_size;
  if (a.dwarf) so.data_pages = 128;  // each sample carries up to SIZE bytes of stack
  CommLookup comm = mock ? CommLookup([](pid_t pid, pid_t tid, uint32_t cpu) -> std::string {
    if (tid == 0) return fmt::format("swapper/{}", cpu);
    return pid == kMockPid ? kMockComm : "[unknown]";
  }) : CommLookup(HostComm);
  KthreadLookup kthread = mock ? KthreadLookup([](pid_t pid) { return pid == 0; }) : KthreadLookup(HostIsKthread);
  if (a.mode == "bpf") return RunBpf(a, *backend, so, sym);
  RingSampler sampler(*backend, so, comm, kthread);
  const bool perf_data = !a.output.empty();
  std::optional<PerfDataOutput> out;
  sampler.OnNewProcess([&](pid_t pid) {
    if (!mock && !a.kernel_stacks) sym.NotePid(pid);
    if (out) out->SynthesizeProcess(pid);
  });
  if (Result<void> r = sampler.Open(); !r.ok()) {
    std::cerr << "perftest profile: " << r.ToString() << "\n";
    return 1;
  }
  if (perf_data) {
    out.emplace(sampler.attr(), "cpu-clock");
    if (!out->SynthesizeKernel()) std::cerr << "NOTE: no kernel map in the perf.data: /proc/kallsyms hides _text\n";
    sampler.OnRecord([&out](std::span<const std::byte> r) { out->Add(r); });
  }
  if (a.format == "bcc") Header(a);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  if (Result<void> r = sampler.Enable(); !r.ok()) {
    std::cerr << "perftest profile: " << r.ToString() << "\n";
    return 1;
  }
  if (mock) {
    // The mock's clock advances only with workloads: the simulated task
    // (kMockPid) spins for `duration` simulated seconds, in 100 ms slices.
    const auto total = std::chrono::nanoseconds(static_cast<int64_t>(a.duration * 1e9));
    for (std::chrono::nanoseconds done{0}; done < total && !g_stop;) {
      auto slice = std::min<std::chrono::nanoseconds>(total - done, std::chrono::milliseconds(100));
      (void)backend->RunWorkload(Workload::Spin(slice));
      done += slice;
      sampler.Drain();
    }
  } else {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(a.duration);
    while (!g_stop && std::chrono::steady_clock::now() < end) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      sampler.Wait(static_cast<int>(std::clamp<int64_t>(left.count(), 1, 100)));
      sampler.Drain();
    }
  }
  (void)sampler.Disable();
  sampler.Drain();
  if (a.format == "bcc") std::cout << "\n";

  if (perf_data) {
    if (Result<void> w = out->Write(a.output, sampler.ids(), a.argv); !w.ok()) {
      std::cerr << "perftest profile: -o " << a.output << ": " << w.ToString() << "\n";
      return 1;
    }
    // perf record's closing line, in its words.
    std::cerr << fmt::format("[ perftest profile: wrote {} ({} samples, {} records) ]\n", a.output, out->samples(),
                             out->records());
  }
  if (a.format != "perf.data") Print(a, sampler.counts(), sym);
  if (sampler.lost()) std::cerr << fmt::format("WARNING: {} samples lost (ring buffer full)\n", sampler.lost());
  if (sampler.malformed()) std::cerr << fmt::format("WARNING: {} malformed records skipped\n", sampler.malformed());
  if (const DwarfUnwinder& u = sampler.unwinder(); u.truncated() != 0 && a.format == "bcc") {
    std::cerr << fmt::format("NOTE: {} of {} user stacks unwound with DWARF stopped early (last: {})\n", u.truncated(),
                             u.unwound(), u.error());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"Profile CPU stack traces at a timed interval (bcc profile.py's interface, on perftest's harness)",
               "perftest profile"};
  app.get_formatter()->column_width(36);
  auto* pid = app.add_option("-p,--pid", a.pid, "profile this PID only")->check(CLI::PositiveNumber);
  auto* u = app.add_flag("-u,--user-threads-only", a.user_threads, "user threads only (no kernel threads)");
  auto* k = app.add_flag("-k,--kernel-threads-only", a.kernel_threads, "kernel threads only (no user threads)");
  pid->excludes(u, k);
  u->excludes(k);
  auto* U = app.add_flag("-U,--user-stacks-only", a.user_stacks, "show stacks from user space only (no kernel space stacks)");
  auto* K = app.add_flag("-K,--kernel-stacks-only", a.kernel_stacks, "show stacks from kernel space only (no user space stacks)");
  U->excludes(K);
  app.add_option("-F,--frequency", a.frequency, "sample frequency, Hertz (default 49)")->check(CLI::Range(1, 1000000));
  app.add_flag("-d,--delimited", a.delimited, "insert delimiter between kernel/user stacks");
  app.add_flag("-f,--folded", a.folded, "output folded format (same as --format=folded)");
  app.add_option("--stack-storage-size", a.stack_storage_size,
                 "the number of unique stack traces that can be stored and displayed (default 16384)")
      ->check(CLI::PositiveNumber);
  app.add_option("duration", a.duration, "duration of trace, in seconds (default: until Ctrl-C)")
      ->check(CLI::PositiveNumber);
  app.add_option("--backend", a.backend, "kernel (default) or mock")->check(CLI::IsMember({"kernel", "mock"}));
  app.add_option("--profile", a.profile, "mock arch profile (name in fixtures/profiles or a .json path; default software-only)");
  app.add_option("--mode", a.mode, "ring (default): read the ring buffers; bpf: count stacks in the kernel")
      ->check(CLI::IsMember({"ring", "bpf"}));
  app.add_option("--call-graph", a.call_graph,
                 "fp (default): the kernel's frame-pointer callchains; dwarf[,SIZE]: user stacks unwound with "
                 "DWARF CFI from SIZE bytes of stack per sample (default 8192), for code without frame pointers");
  app.add_option("--format", a.format,
                 "bcc (default), folded, svg (a flame graph) or perf.data (a file perf report reads; -o)")
      ->check(CLI::IsMember({"bcc", "folded", "svg", "perf.data"}));
  app.add_option("-o,--output", a.output,
                 "write the samples to this perf.data file (with --format=perf.data: only there, default "
                 "perf.data; with another format: besides it, the same samples)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "perftest profile: " << e.what() << "\n";
    return 2;
  }
  if (a.folded) {
    if (app.count("--format") && a.format != "folded") {
      std::cerr << "perftest profile: -f conflicts with --format=" << a.format << "\n";
      return 2;
    }
    a.format = "folded";
  }
  a.argv.assign(argv, argv + argc);
  if ((a.format == "perf.data" || !a.output.empty()) && (a.backend == "mock" || a.mode == "bpf")) {
    std::cerr << "perftest profile: --format=perf.data and -o need --backend=kernel and --mode=ring (they write the "
                 "records read from the ring buffers)\n";
    return 2;
  }
  if (a.format == "perf.data" && a.output.empty()) a.output = "perf.data";
  if (std::string why = ParseCallGraph(a.call_graph, &a); !why.empty()) {
    std::cerr << "perftest profile: " << why << "\n";
    return 2;
  }
  if (a.dwarf && (a.backend == "mock" || a.mode == "bpf")) {
    std::cerr << "perftest profile: --call-graph=dwarf needs --backend=kernel and --mode=ring (the stack copies are "
                 "read from the ring buffers and unwound here)\n";
    return 2;
  }
  if (a.dwarf && DwarfUnwinder::SampleRegsUser() == 0) {
    std::cerr << "perftest profile: --call-graph=dwarf is not implemented for " << DwarfUnwinder::Arch() << "\n";
    return 2;
  }
  if (a.backend == "mock" && a.duration >= kForever) {
    std::cerr << "perftest profile: --backend=mock needs a duration (simulated seconds), e.g. 5\n";
    return 2;
  }
  if (a.backend != "mock" && app.count("--profile")) {
    std::cerr << "perftest profile: --profile applies to --backend=mock only\n";
    return 2;
  }
  if (a.mode == "bpf" && a.backend == "mock") {
    std::cerr << "perftest profile: --mode=bpf needs --backend=kernel (the BPF program runs in the kernel)\n";
    return 2;
  }
  if (a.mode == "bpf" && !BpfModeBuilt()) {
    std::cerr << "perftest profile: --mode=bpf is not built (needs clang, bpftool and libbpf-dev at build time)\n";
    return 2;
  }
  return Run(a);
}
