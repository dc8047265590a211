// perftest_exec: `perftest exec` — an unmodified program with its perf calls
// served by the mock (tracer.h).
//
//   perftest_exec [--profile=NAME|PATH] [--log=FILE] [--inject=SPEC]...
//                 [--intercept=auto|seccomp|syscall] [--no-sysfs-view] -- PROG [ARGS...]
//
// Exit status: PROG's (128 + signal when a signal killed it); 2 for bad
// usage (the message names what was wrong); 125 when PROG could not be
// started under the tracer; 127 when PROG cannot be executed.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "tools/exec/fault_injection.h"
#include "tools/exec/tracer.h"

namespace {

// The profile for this machine's architecture when none is given.
std::string DefaultProfile() {
#if defined(__x86_64__)
  return "x86_64-intel";
#elif defined(__aarch64__)
  return "arm64-pmuv3";
#else
  return "sw-only";
#endif
}

}  // namespace

int main(int argc, char** argv) {
  using perftest::exec::Intercept;
  // Everything after "--" is the program; before it, perftest_exec's options.
  int split = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--") {
      split = i;
      break;
    }
  }
  CLI::App app{"Run PROG with its perf_event_open(2) and the calls on its perf fds served by the mock"};
  app.set_version_flag("--version", "perftest_exec 1");
  perftest::exec::ExecOptions o;
  o.profile = DefaultProfile();
  std::vector<std::string> inject;
  std::string intercept = "auto";
  bool no_sysfs = false;
  app.add_option("--profile", o.profile, "arch profile, a name in fixtures/profiles or a path (default: this arch's)");
  app.add_option("--log", o.log_path, "write every served call to FILE ('-': stderr)");
  app.add_option("--inject", inject, "fail served calls: CALL:ERRNO[@N], e.g. perf_event_open:EMFILE@2");
  app.add_option("--intercept", intercept, "auto, seccomp (filter stops) or syscall (every syscall-entry stop)")
      ->check(CLI::IsMember({"auto", "seccomp", "syscall"}));
  app.add_flag("--no-sysfs-view", no_sysfs, "show the host's /sys/bus/event_source, not the profile's PMUs");
  try {
    app.parse(split, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (split >= argc - 1) {
    std::fprintf(stderr, "perftest exec: no program given: perftest exec [OPTIONS] -- PROG [ARGS...]\n");
    return 2;
  }
  for (const std::string& spec : inject) {
    perftest::Result<perftest::exec::InjectRule> rule = perftest::exec::ParseInjectRule(spec);
    if (!rule.ok()) {
      std::fprintf(stderr, "perftest exec: %s\n", rule.call().c_str());
      return 2;
    }
    o.inject.push_back(*rule);
  }
  o.intercept = intercept == "seccomp" ? Intercept::kSeccomp
              : intercept == "syscall" ? Intercept::kSyscallStops
                                       : Intercept::kAuto;
  o.sysfs_view = !no_sysfs;
  for (int i = split + 1; i < argc; ++i) o.argv.emplace_back(argv[i]);
  return perftest::exec::RunServed(o);
}
