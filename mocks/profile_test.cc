#include "mocks/profile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "harness/syscall_matchers.h"
#include "mocks/attr_validation.h"

namespace perftest {
namespace {

using ::testing::HasSubstr;

// A minimal valid profile; tests break one key at a time.
constexpr char kValid[] = R"({
  "arch": "x86_64", "description": "test machine", "provenance": "written by profile_test",
  "ncpus": 4, "page_size": 4096, "perf_event_paranoid": 1, "max_sample_rate": 5000,
  "max_stack": 64, "mlock_kb": 516,
  "pmus": [{"name": "software", "type": 1}]
})";

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

TEST(Profile, SoftwareOnlyFixtureModelsThisVm) {
  // "software-only" is an alias of sw-only (users' scripts pass it).
  ASSERT_OK_AND_ASSIGN(MockProfile p, LoadProfile("software-only"));
  EXPECT_EQ(p.name, "sw-only");
  EXPECT_EQ(p.cpu_clock_type, 6u) << "perf_cpu_clock's dynamic type on the VM";
  EXPECT_EQ(p.task_clock_type, 7u);
  EXPECT_TRUE(p.attr_aux_action) << "Linux 6.18 has aux_start_paused/aux_pause/aux_resume";
  EXPECT_EQ(p.arch, "x86_64");
  EXPECT_EQ(p.ncpus, 2);
  EXPECT_EQ(p.page_size, 4096u);
  EXPECT_EQ(p.perf_event_paranoid, 2);
  EXPECT_EQ(p.max_sample_rate, 100000u);
  EXPECT_EQ(p.max_stack, 127u);
  EXPECT_EQ(p.mlock_kb, 516u);
  EXPECT_EQ(p.hz, 250u);
  EXPECT_FALSE(p.provenance.empty());
  // Sorted by name, as sysfs lists them.
  ASSERT_EQ(p.pmus.size(), 6u);
  EXPECT_EQ(p.pmus[0].name, "breakpoint");
  EXPECT_EQ(p.pmus[0].type, 5u);
  EXPECT_EQ(p.pmus[1].name, "msr");
  EXPECT_EQ(p.pmus[1].type, 10u);
  EXPECT_EQ(p.pmus[2].name, "power");
  EXPECT_EQ(p.pmus[2].type, 9u);
  EXPECT_EQ(p.pmus[3].name, "software");
  EXPECT_EQ(p.pmus[3].type, 1u);
  EXPECT_TRUE(p.pmus[3].events.empty()) << "sysfs has no events/ for the software PMU";
  EXPECT_EQ(p.pmus[4].name, "tracepoint");
  EXPECT_EQ(p.pmus[4].type, 2u);
  EXPECT_EQ(p.pmus[5].name, "uprobe");
  EXPECT_EQ(p.pmus[5].type, 8u);
  EXPECT_EQ(p.pmus[5].format.at("retprobe"), "config:0");
  EXPECT_EQ(p.tracepoints.at("syscalls:sys_enter_getpid"), 309u) << "tracefs id on the VM";
  EXPECT_EQ(p.hw_breakpoint_slots, 4u);
  const MachineInfo m = p.ToMachineInfo();
  EXPECT_EQ(m.ncpus, 2);
  EXPECT_EQ(m.pmus.size(), 6u);
}

TEST(Profile, TracepointsMustBeModelledAndNeedTheTracepointPmu) {
  const std::string base = R"({"arch": "x86_64", "description": "d", "provenance": "p", "ncpus": 1,
      "page_size": 4096, "perf_event_paranoid": 2, "max_sample_rate": 100000, "max_stack": 127,
      "mlock_kb": 516, "privileged": true, )";
  Result<MockProfile> unknown = ParseProfile(
      base + R"("pmus": [{"name": "tracepoint", "type": 2}], "tracepoints": {"foo:bar": 1}})", "t.json");
  EXPECT_THAT(unknown, FailsWithErrno(EINVAL));
  EXPECT_THAT(unknown.call(), ::testing::HasSubstr("the model cannot fire this tracepoint"));
  Result<MockProfile> no_pmu = ParseProfile(
      base + R"("pmus": [{"name": "software", "type": 1}], "tracepoints": {"sched:sched_switch": 7}})", "t.json");
  EXPECT_THAT(no_pmu, FailsWithErrno(EINVAL));
  EXPECT_THAT(no_pmu.call(), ::testing::HasSubstr("need the \"tracepoint\" PMU"));
}

TEST(Profile, DefaultsForOptionalKeys) {
  ASSERT_OK_AND_ASSIGN(MockProfile p, ParseProfile(kValid, "/x/test-machine.json"));
  EXPECT_EQ(p.name, "test-machine") << "the file's stem";
  EXPECT_EQ(p.hz, 250u);
  EXPECT_EQ(p.max_contexts_per_stack, 8u);
  EXPECT_EQ(p.attr_size, sizeof(perf_event_attr));
  EXPECT_TRUE(p.privileged);
  EXPECT_FALSE(p.compat_task) << "64-bit tasks";
  ASSERT_OK_AND_ASSIGN(MockProfile arm, ParseProfile(Replace(Replace(kValid, "x86_64", "aarch64"), "\"mlock_kb\": 516",
                                                             "\"mlock_kb\": 516, \"compat_task\": true"),
                                                     "arm.json"));
  EXPECT_TRUE(arm.compat_task);
  EXPECT_EQ(p.kernel_version, mock::kUapiKernelVersion) << "no kernel_release: the build's UAPI header";
}

TEST(Profile, KernelReleaseSetsTheAttrDefaults) {
  ASSERT_OK_AND_ASSIGN(MockProfile p, ParseProfile(Replace(kValid, "\"ncpus\"", "\"kernel_release\": \"6.18\", \"ncpus\""),
                                                   "t.json"));
  EXPECT_EQ(p.kernel_release, "6.18");
  EXPECT_EQ(p.kernel_version, mock::KernelVersion(6, 18));
  EXPECT_EQ(p.attr_size, 136u) << "config3 (6.3)";
  EXPECT_TRUE(p.attr_aux_action) << "6.13+";
  ASSERT_OK_AND_ASSIGN(MockProfile old, ParseProfile(Replace(kValid, "\"ncpus\"", "\"kernel_release\": \"6.1\", \"ncpus\""),
                                                     "t.json"));
  EXPECT_FALSE(old.attr_aux_action);
  Result<MockProfile> bad = ParseProfile(Replace(kValid, "\"ncpus\"", "\"kernel_release\": \"latest\", \"ncpus\""), "t.json");
  EXPECT_EQ(bad.error(), EINVAL);
  EXPECT_NE(bad.call().find("kernel_release"), std::string::npos) << bad.call();
}

TEST(Profile, UnknownNameIsEnoent) {
  EXPECT_THAT(LoadProfile("no-such-machine"), FailsWithErrno(ENOENT));
  EXPECT_THAT(LoadProfile("/nonexistent/dir/x.json"), FailsWithErrno(ENOENT));
  EXPECT_THAT(LoadProfile(""), FailsWithErrno(ENOENT));
}

TEST(Profile, MalformedJsonIsEinval) {
  Result<MockProfile> r = ParseProfile("{\"arch\": ", "broken.json");
  EXPECT_THAT(r, FailsWithErrno(EINVAL));
  EXPECT_THAT(r.call(), HasSubstr("malformed JSON"));
  EXPECT_THAT(ParseProfile("[1, 2]", "array.json"), FailsWithErrno(EINVAL));
}

TEST(Profile, ErrorsNameTheKey) {
  struct Case {
    std::string from, to, key;
  } cases[] = {
      {"\"ncpus\": 4,", "", "'ncpus': missing"},
      {"\"ncpus\": 4", "\"ncpus\": \"four\"", "'ncpus': expected an integer"},
      {"\"ncpus\": 4", "\"ncpus\": 0", "'ncpus': 0 is outside"},
      {"\"page_size\": 4096", "\"page_size\": 6000", "'page_size': 6000 is not a power of two"},
      {"\"arch\": \"x86_64\"", "\"arch\": 64", "'arch': expected a string"},
      {"\"mlock_kb\": 516", "\"mlock_kb\": 516, \"mlockkb\": 1", "'mlockkb': unknown key"},
      {"\"name\": \"software\"", "\"name\": \"intel_pt\"", "'pmus[0].type': PMU 'intel_pt' (kind intel_pt) has a dynamic type"},
      {"\"name\": \"software\"", "\"name\": \"cs_etm\"", "'pmus[0].name': PMU kind 'cs_etm' is not implemented"},
      {"\"type\": 1}", "\"type\": 1, \"kind\": \"s390_cpum_cf\"}", "'pmus[0].kind': PMU kind 's390_cpum_cf' is not implemented"},
      {"{\"name\": \"software\", \"type\": 1}", "{\"name\": \"armv8_pmuv3_0\", \"kind\": \"armv8_pmuv3\", \"type\": 4}",
       "'pmus[0].type': PMU 'armv8_pmuv3_0' (kind armv8_pmuv3) has a dynamic type"},
      {"\"mlock_kb\": 516", "\"mlock_kb\": 516, \"clock_pmu_types\": {\"cpu_clock\": 1, \"task_clock\": 7}",
       "'clock_pmu_types.cpu_clock': 1 is outside"},
      {"\"type\": 1", "\"type\": 4", "'pmus[0].type'"},
      {"\"type\": 1}", "\"type\": 1, \"events\": {\"x\": 1}}", "'pmus[0].events.x': expected a string"},
      {"[{\"name\": \"software\", \"type\": 1}]", "3", "'pmus': expected an array"},
      {"\"mlock_kb\": 516", "\"mlock_kb\": 516, \"compat_task\": true",
       "'compat_task': AArch32 (compat) tasks are modelled for arch aarch64 only"},
  };
  for (const Case& c : cases) {
    Result<MockProfile> r = ParseProfile(Replace(kValid, c.from, c.to), "t.json");
    EXPECT_THAT(r, FailsWithErrno(EINVAL)) << c.key;
    EXPECT_THAT(r.call(), HasSubstr(c.key));
  }
}

TEST(Profile, LoadErrorsCarryTheFileAndKey) {
  const std::string dir = ::testing::TempDir() + "/profiles-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/bad.json") << Replace(kValid, "\"ncpus\": 4,", "");
  Result<MockProfile> r = LoadProfile(dir + "/bad.json");
  EXPECT_THAT(r, FailsWithErrno(EINVAL));
  EXPECT_THAT(r.call(), HasSubstr("bad.json"));
  EXPECT_THAT(r.call(), HasSubstr("'ncpus'"));
  std::filesystem::remove_all(dir);
}

TEST(Profile, NamesResolveInPerftestProfilesDir) {
  const std::string dir = ::testing::TempDir() + "/profiles-env-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/tiny.json") << kValid;
  ::setenv("PERFTEST_PROFILES_DIR", dir.c_str(), 1);
  Result<MockProfile> r = LoadProfile("tiny");
  Result<MockProfile> gone = LoadProfile("software-only");  // not in this directory
  ::unsetenv("PERFTEST_PROFILES_DIR");
  ASSERT_OK(r);
  EXPECT_EQ(r->name, "tiny");
  EXPECT_EQ(r->ncpus, 4);
  EXPECT_THAT(gone, FailsWithErrno(ENOENT));
  EXPECT_THAT(gone.call(), HasSubstr("tiny")) << "the message lists the known profiles";
  std::filesystem::remove_all(dir);
}

TEST(Profile, WriteProfileRoundTripsEveryFixture) {
  for (const char* name : {"sw-only", "x86_64-intel", "x86_64-intel-pt-basic", "arm64-pmuv3", "riscv64-sbi"}) {
    SCOPED_TRACE(name);
    ASSERT_OK_AND_ASSIGN(MockProfile p, LoadProfile(name));
    const std::string text = WriteProfile(p);
    ASSERT_OK_AND_ASSIGN(MockProfile back, ParseProfile(text, std::string(name) + ".json"));
    EXPECT_EQ(WriteProfile(back), text);
    EXPECT_EQ(back.name, p.name);
    EXPECT_EQ(back.pmus.size(), p.pmus.size());
    EXPECT_EQ(back.has_hardware, p.has_hardware);
    EXPECT_EQ(back.core_pmu_type, p.core_pmu_type);
    EXPECT_EQ(back.hardware.kind, p.hardware.kind);
    EXPECT_EQ(back.tracepoints, p.tracepoints);
    EXPECT_EQ(back.sched_clock_counter.khz, p.sched_clock_counter.khz);
    EXPECT_EQ(back.hw_watchpoint_slots, p.hw_watchpoint_slots);
  }
}

TEST(Profile, KernelReleaseIsReadAndWritten) {
  ASSERT_OK_AND_ASSIGN(MockProfile p, ParseProfile(Replace(kValid, "\"ncpus\"", "\"kernel_release\": \"6.1.0-test\", \"ncpus\""),
                                                   "k.json"));
  EXPECT_EQ(p.kernel_release, "6.1.0-test");
  EXPECT_THAT(WriteProfile(p), HasSubstr("\"kernel_release\": \"6.1.0-test\""));
}

}  // namespace
}  // namespace perftest
