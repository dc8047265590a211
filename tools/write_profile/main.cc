// perftest_write_profile FILE: probe this machine's kernel and write a mock
// arch profile (mocks/profile.h) to FILE, for `perftest doctor
// --write-profile=FILE` (runner/perftest/profile_probe.py) and
// `perftest run --backend=mock --profile=FILE`.
//
// Exit status: 0 written; 2 bad arguments or FILE cannot be written; 3
// perf_event_open does not work here (a seccomp profile, perf_event_paranoid,
// no CONFIG_PERF_EVENTS): nothing to probe; 1 the probe made a profile the
// loader refuses (a bug). Messages go to stderr, naming what was wrong.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "harness/backend.h"
#include "mocks/profile.h"
#include "tools/write_profile/profile_probe.h"

int main(int argc, char** argv) {
  CLI::App app{"Probe this machine's kernel and write a mock arch profile (fixtures/profiles format) to FILE"};
  std::string path, name;
  app.add_option("FILE", path, "where to write the profile JSON")->required();
  app.add_option("--name", name, "the profile's name (default: FILE's stem)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (name.empty()) name = std::filesystem::path(path).stem().string();

  std::unique_ptr<perftest::Backend> kernel = perftest::MakeKernelBackend();
  perftest::Result<perftest::MockProfile> p =
      perftest::tools::ProbeProfile(*kernel, perftest::tools::ReadHostFacts(), name);
  if (!p.ok()) {
    std::fprintf(stderr, "perftest doctor --write-profile: %s\n", p.ToString().c_str());
    return 3;
  }
  const std::string text = perftest::WriteProfile(*p);
  if (perftest::Result<perftest::MockProfile> back = perftest::ParseProfile(text, path); !back.ok()) {
    std::fprintf(stderr, "perftest doctor --write-profile: the probed profile does not load: %s\n",
                 back.ToString().c_str());
    return 1;
  }
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    std::fprintf(stderr, "perftest doctor --write-profile: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
    return 2;
  }
  return 0;
}
