// perftest_fidelity: the differential fidelity check (DESIGN.md "Fidelity
// rule"; `perftest fidelity`). The same seeded call sequences on the real
// kernel and on MockBackend with a profile of this host; the agreement figure
// and every disagreement, grouped, with examples and a minimal reproducer.
//
//   perftest_fidelity [--count=N] [--seed=S] [--profile=NAME|PATH] [--json=FILE]
//                     [--max-report=K] [--min-agreement=PCT] [--no-minimize]
//   perftest_fidelity --replay=SEQUENCE_SEED [--profile=...]   # one sequence, call by call
//
// The mock side is deterministic: a function of the seed, the profile and the
// host's PMU list (which PMUs the generator may use). The kernel side reflects
// this host: its kernel version, PMUs, sysctls and privileges.
//
// Exit status: 0 the check ran (whatever it found); 1 --min-agreement given
// and the agreement is below it; 2 bad arguments or the tool failed (profile
// not found, JSON not writable); 3 perf_event_open does not work here at all
// (seccomp, paranoid, ENOSYS): nothing to compare against.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <linux/perf_event.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <set>
#include <string>

#include "fidelity/call.h"
#include "fidelity/compare.h"
#include "fidelity/executor.h"
#include "fidelity/generator.h"
#include "fidelity/host.h"
#include "fidelity/minimize.h"
#include "fidelity/report.h"
#include "fidelity/rng.h"
#include "harness/backend.h"
#include "mocks/mock_backend.h"
#include "mocks/profile.h"

namespace perftest::fidelity {
namespace {

constexpr int kExitBelowMinimum = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNoKernel = 3;

// Classes whose first example gets a minimal reproducer (each costs up to a few hundred tries).
constexpr size_t kMaxMinimizedClasses = 128;

bool ParseU64(const std::string& s, uint64_t* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 0);  // decimal, 0x hex
  if (errno != 0 || end == nullptr || *end != '\0') return false;
  *out = v;
  return true;
}

std::string KernelDescription(Backend& kernel) {
  const MachineInfo& m = kernel.Machine();
  return fmt::format("{}, {} CPUs, perf_event_paranoid={}, {}", m.description, m.ncpus, m.perf_event_paranoid,
                     ::geteuid() == 0 ? "root" : fmt::format("uid {}", ::geteuid()));
}

int Replay(uint64_t seed, Backend& kernel, const MockProfile& profile, const GeneratorParams& params) {
  const Sequence seq = GenerateSequence(seed, params);
  std::unique_ptr<Backend> mock = MakeMockBackend(profile);
  const SequenceOutcome out = RunSequence(seq, kernel, *mock, params);
  fmt::print("sequence {:#x}: {} calls\n", seed, out.calls.size());
  for (const CallRecord& r : out.calls) {
    const char* verdict = r.status == CallStatus::kNoTarget    ? "skipped"
                          : r.status == CallStatus::kDependent ? "mock only"
                          : Agree(r)                           ? "agree"
                                                               : "DISAGREE";
    fmt::print("\n[{}] {} — {}\n", r.index, r.description, verdict);
    if (r.kernel.ran) fmt::print("  kernel: {} = {}\n", r.kernel.call, OutcomeText(r.kernel));
    if (r.mock.ran) fmt::print("  mock:   {} = {}\n", r.mock.call, OutcomeText(r.mock));
  }
  return 0;
}

int Main(int argc, char** argv) {
  CLI::App app{"perftest_fidelity: the same call sequences on the kernel and on the mock; agreement and disagreements"};
  uint64_t count = 1000;
  std::string seed_text = "1";
  std::string profile_name = "software-only";
  std::string json_path;
  size_t max_report = 3;
  double min_agreement = -1;
  std::string replay_text;
  bool no_minimize = false;
  app.add_option("--count", count, "number of call sequences")->check(CLI::PositiveNumber);
  app.add_option("--seed", seed_text, "run seed (decimal or 0x hex)");
  app.add_option("--profile", profile_name, "mock profile: a name in fixtures/profiles or a .json path");
  app.add_option("--json", json_path, "also write the report as JSON to FILE");
  app.add_option("--max-report", max_report, "examples kept per disagreement class");
  app.add_option("--min-agreement", min_agreement, "exit 1 when agreement (percent of compared calls) is below this")
      ->check(CLI::Range(0.0, 100.0));
  app.add_option("--replay", replay_text, "run only the sequence with this sequence seed, printing every call");
  app.add_flag("--no-minimize", no_minimize, "do not shrink the first example of each class");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }
  uint64_t seed = 0;
  if (!ParseU64(seed_text, &seed)) {
    std::fprintf(stderr, "perftest_fidelity: --seed=%s is not a number\n", seed_text.c_str());
    return kExitUsage;
  }
  uint64_t replay = 0;
  if (!replay_text.empty() && !ParseU64(replay_text, &replay)) {
    std::fprintf(stderr, "perftest_fidelity: --replay=%s is not a number\n", replay_text.c_str());
    return kExitUsage;
  }

  Result<MockProfile> profile = LoadProfile(profile_name);
  if (!profile.ok()) {
    std::fprintf(stderr, "perftest_fidelity: %s\n", profile.ToString().c_str());
    return kExitUsage;
  }
  if (const int err = ProbeKernelPerfEventOpen(); err != 0) {
    std::fprintf(stderr,
                 "perftest_fidelity: perf_event_open does not work here (%s): there is no kernel to compare the "
                 "mock with (seccomp profile, perf_event_paranoid, or a kernel without CONFIG_PERF_EVENTS)\n",
                 ErrnoName(err).c_str());
    return kExitNoKernel;
  }
  if (const int err = InstallSigtrapHandler(); err != 0) {
    std::fprintf(stderr, "perftest_fidelity: sigaction(SIGTRAP): %s\n", ErrnoName(err).c_str());
    return kExitUsage;
  }
  std::unique_ptr<Backend> kernel = MakeKernelBackend();
  GeneratorParams params = HostGeneratorParams(*kernel);
  // Where the profile and the host disagree on what a PMU type is, neither
  // answer says anything about the mock: a type the profile gives a PMU the
  // host does not have (a power PMU on a host without RAPL) would open on the
  // mock and be ENOENT on the kernel, so it is not generated; a host PMU whose
  // type the profile lists under another name (host msr where the profile has
  // power) is unmodelled, tallied apart like one the profile does not list.
  for (const Pmu& p : profile->pmus) {
    bool on_host = false;
    for (const GeneratorParams::PmuType& pmu : params.pmus) on_host |= pmu.type == p.type;
    const bool fixed_type = p.type <= PERF_TYPE_BREAKPOINT;  // software, tracepoint, ...: always there
    if (!on_host && !fixed_type) params.avoid_types.push_back(p.type);
  }
  if (!replay_text.empty()) return Replay(replay, *kernel, *profile, params);

  const auto start = std::chrono::steady_clock::now();
  FidelityReport report(max_report);
  // The host's PMUs the profile does not list (by type and name): tallied apart (report.h).
  std::set<std::string> unmodelled;
  for (const GeneratorParams::PmuType& pmu : params.pmus) {
    bool listed = false;
    for (const Pmu& p : profile->pmus) listed |= p.type == pmu.type && p.name == pmu.name;
    if (!listed) unmodelled.insert(pmu.name);
  }
  report.SetUnmodelledPmus(std::move(unmodelled));
  for (uint64_t i = 0; i < count; ++i) {
    const Sequence seq = GenerateSequence(SequenceSeed(seed, i), params);
    std::unique_ptr<Backend> mock = MakeMockBackend(*profile);
    report.Add(i, seq, RunSequence(seq, *kernel, *mock, params));
  }
  const double run_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (!no_minimize) {
    size_t done = 0;
    for (const DisagreementClass& c : report.Classes()) {
      if (done++ >= kMaxMinimizedClasses) break;
      DisagreementClass* cls = report.FindClass(c.kind);
      if (cls == nullptr || cls->examples.empty()) continue;
      Example& e = cls->examples.front();
      const Minimized m = Minimize(GenerateSequence(e.sequence_seed, params), e.call_index, c.kind, *kernel,
                                   [&] { return MakeMockBackend(*profile); }, params);
      if (!m.reproduced) {
        e.minimal = {"(did not reproduce on a fresh run: depends on timing or on state outside the sequence)"};
        continue;
      }
      for (const Call& call : m.calls) e.minimal.push_back(DescribeCall(call));
    }
  }

  RunInfo info;
  info.seed = seed;
  info.count = count;
  info.profile = profile->name;
  info.kernel = KernelDescription(*kernel);
  fmt::print("{}", report.RenderText(info));
  fmt::print("\n{} sequences in {:.1f} s\n", count, run_s);
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << report.ToJson(info).dump(2) << "\n";
    if (!out) {
      std::fprintf(stderr, "perftest_fidelity: cannot write %s\n", json_path.c_str());
      return kExitUsage;
    }
  }
  if (min_agreement >= 0 && 100.0 * report.Agreement() < min_agreement) {
    std::fprintf(stderr, "perftest_fidelity: agreement %.3f%% is below --min-agreement=%g\n", 100.0 * report.Agreement(),
                 min_agreement);
    return kExitBelowMinimum;
  }
  return 0;
}

}  // namespace
}  // namespace perftest::fidelity

int main(int argc, char** argv) { return perftest::fidelity::Main(argc, argv); }
