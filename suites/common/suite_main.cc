// main() of every suite binary: GoogleTest flags first, then ours (CLI11).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "mocks/mock_backend.h"
#include "suites/common/suite.h"

namespace perftest {

// The suite's name, defined per binary in suite_name.cc (compiled with
// PERFTEST_SUITE_NAME), so that this file is compiled once for every suite.
extern const char kSuiteName[];
// The mock's models beside its core (mocks/mock_backend.h), per binary too:
// suite_models.cc, or suite_models_pt.cc for a suite added with MOCK_PT
// (suites/CMakeLists.txt perftest_add_suite()).
MockModels SuiteMockModels();

namespace {

std::unique_ptr<Backend>& BackendSlot() {
  static std::unique_ptr<Backend> backend;
  return backend;
}

std::vector<CaseInfo>& Registry() {
  static std::vector<CaseInfo> cases;
  return cases;
}

int g_kernel_probe_errno = 0;

// "Seccomp:\t2" in /proc/self/status means a filter is installed.
int SeccompMode() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Seccomp:", 0) == 0) return std::atoi(line.c_str() + 8);
  }
  return -1;
}

// Why perf_event_open is unavailable, as a skip class and a reason a person can act on.
std::pair<SkipClass, std::string> ExplainProbeFailure(int err) {
  const std::string name = ErrnoName(err);
  if (err == ENOSYS) {
    return {SkipClass::kUnsupported, "perf_event_open returns ENOSYS: kernel built without CONFIG_PERF_EVENTS"};
  }
  if (err == EPERM && SeccompMode() == 2) {
    return {SkipClass::kSandbox,
            "perf_event_open returns EPERM under a seccomp filter (container default profile?); "
            "run with --backend=mock or allow the syscall"};
  }
  if (err == EACCES || err == EPERM) {
    return {SkipClass::kPermission,
            fmt::format("perf_event_open returns {}: needs CAP_PERFMON or a lower "
                        "/proc/sys/kernel/perf_event_paranoid",
                        name)};
  }
  return {SkipClass::kUnsupported, fmt::format("perf_event_open of a software dummy event returns {}", name)};
}

// Every GoogleTest case must have metadata: the report's feature ids depend on it.
bool CheckRegistry() {
  std::map<std::string, int> known;
  for (const CaseInfo& c : Registry()) known[c.test_suite + "." + c.test_name]++;
  bool ok = true;
  const ::testing::UnitTest& ut = *::testing::UnitTest::GetInstance();
  for (int i = 0; i < ut.total_test_suite_count(); ++i) {
    const ::testing::TestSuite& ts = *ut.GetTestSuite(i);
    for (int j = 0; j < ts.total_test_count(); ++j) {
      const std::string full = std::string(ts.name()) + "." + ts.GetTestInfo(j)->name();
      if (known[full] != 1) {
        std::fprintf(stderr, "perftest: %s has %s PERFTEST_CASE metadata\n", full.c_str(),
                     known[full] == 0 ? "no" : "duplicate");
        ok = false;
      }
    }
  }
  return ok;
}

void PrintList(const std::string& suite) {
  nlohmann::json cases = nlohmann::json::array();
  for (const CaseInfo& c : Registry()) {
    cases.push_back({{"test", c.test_suite + "." + c.test_name}, {"feature", c.feature}, {"spec", c.spec}});
  }
  std::printf("%s\n", nlohmann::json{{"suite", suite}, {"cases", cases}}.dump(2).c_str());
}

void PrintProbe() {
  const int err = ProbeKernelPerfEventOpen();
  nlohmann::json j{{"perf_event_open", err == 0},
                   {"errno", err},
                   {"errno_name", err == 0 ? "" : ErrnoName(err)},
                   {"reason", err == 0 ? "perf_event_open of a software dummy event succeeded"
                                       : ExplainProbeFailure(err).second},
                   {"seccomp_mode", SeccompMode()},
                   // UAPI size this binary was built with vs the kernel's (0: unknown).
                   {"attr_size_uapi", sizeof(perf_event_attr)},
                   {"attr_size_kernel", ProbeKernelAttrSize()}};
  std::printf("%s\n", j.dump().c_str());
}

}  // namespace

std::string_view SkipClassName(SkipClass c) {
  switch (c) {
    case SkipClass::kUnsupported: return "unsupported";
    case SkipClass::kPermission: return "permission";
    case SkipClass::kSandbox: return "sandbox";
    case SkipClass::kKernelVersion: return "kernel_version";
  }
  return "unsupported";
}

CaseRegistration::CaseRegistration(const char* test_suite, const char* test_name, const char* feature,
                                   const char* spec) {
  Registry().push_back({test_suite, test_name, feature, spec});
}

const std::vector<CaseInfo>& RegisteredCases() { return Registry(); }

Backend& TestBackend() { return *BackendSlot(); }

std::optional<SkipClass> UnavailableClass(int err) {
  switch (err) {
    case ENOENT:
    case ENODEV:
    case EOPNOTSUPP:
    case ENXIO:
    case ENOSYS:
      return SkipClass::kUnsupported;
    case EACCES:
    case EPERM:
      return SkipClass::kPermission;
    default:
      return std::nullopt;
  }
}

std::string UnavailableReason(std::string_view what, const std::string& error) {
  std::string reason(what);
  reason += ": ";
  reason += error;
  return reason;
}

void RecordDivergence(const std::string& id, const std::string& documented, const std::string& actual) {
  ::testing::Test::RecordProperty("divergence_id", id);
  ::testing::Test::RecordProperty("divergence_documented", documented);
  ::testing::Test::RecordProperty("divergence_actual", actual);
}

void RecordSkip(SkipClass c, const std::string& reason) {
  ::testing::Test::RecordProperty("skip_class", std::string(SkipClassName(c)));
  ::testing::Test::RecordProperty("skip_reason", reason);
}

void SuiteTest::ExpectFaults(uint64_t count, uint64_t pages, const std::string& what) {
  if (exact()) {
    EXPECT_EQ(count, pages) << what;
  } else {
    EXPECT_GE(count, pages) << what;
    EXPECT_LE(count, pages + kFaultSlack) << what;
  }
}

uint64_t SuiteTest::Value(Event& ev) {
  Result<uint64_t> v = ev.ReadValue();
  EXPECT_TRUE(v.ok()) << v.ToString();
  return v.ok() ? *v : ~uint64_t{0};
}

void SuiteTest::Touch(uint64_t pages) {
  Result<WorkloadResult> r = backend().RunWorkload(Workload::TouchPages(pages));
  ASSERT_TRUE(r.ok()) << r.ToString();
}

void SuiteTest::SetUp() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  for (const CaseInfo& c : Registry()) {
    if (c.test_suite == info->test_suite_name() && c.test_name == info->name()) {
      RecordProperty("feature", c.feature);
      RecordProperty("spec", c.spec);
    }
  }
  RecordProperty("backend", std::string(backend().kind()));
  if (backend().kind() == "kernel" && g_kernel_probe_errno != 0) {
    auto [klass, reason] = ExplainProbeFailure(g_kernel_probe_errno);
    PERFTEST_SKIP(klass, reason);
  }
}

}  // namespace perftest

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);  // removes --gtest_* flags

  CLI::App app{fmt::format("perftest conformance suite {} (GoogleTest flags such as --gtest_filter are accepted too)",
                           perftest::kSuiteName)};
  std::string backend_name = "kernel";
  if (const char* env = std::getenv("PERFTEST_BACKEND")) backend_name = env;
  std::string profile = "software-only";
  if (const char* env = std::getenv("PERFTEST_PROFILE")) profile = env;
  bool list = false, probe = false;
  app.add_option("--backend", backend_name, "kernel (real syscalls) or mock (MockBackend); env PERFTEST_BACKEND")
      ->check(CLI::IsMember({"kernel", "mock"}));
  app.add_option("--profile", profile, "mock arch profile: a name in fixtures/profiles or a .json path; env PERFTEST_PROFILE");
  app.add_flag("--perftest_list", list, "print the cases with feature ids and spec references as JSON, and exit");
  app.add_flag("--perftest_probe", probe, "print whether the real perf_event_open works here as JSON, and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  if (!perftest::CheckRegistry()) return 3;
  if (list) {
    perftest::PrintList(perftest::kSuiteName);
    return 0;
  }
  if (probe) {
    perftest::PrintProbe();
    return 0;
  }

  if (backend_name == "kernel") {
    perftest::BackendSlot() = perftest::MakeKernelBackend();
    perftest::g_kernel_probe_errno = perftest::ProbeKernelPerfEventOpen();
  } else {
    perftest::Result<perftest::MockProfile> p = perftest::LoadProfile(profile);
    if (!p.ok()) {
      std::fprintf(stderr, "perftest: cannot load mock profile '%s': %s\n", profile.c_str(), p.ToString().c_str());
      return 2;
    }
    perftest::BackendSlot() = perftest::MakeMockBackend(std::move(*p), perftest::SuiteMockModels());
  }
  return RUN_ALL_TESTS();
}
