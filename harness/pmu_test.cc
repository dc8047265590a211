// Unit tests of harness/pmu.h: PMU discovery over a fake sysfs tree built in a
// temporary directory (layout of Documentation/ABI/testing/
// sysfs-bus-event_source-devices-{format,events,caps}), and one check of the
// real /sys/bus/event_source/devices.
#include "harness/pmu.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "harness/syscall_matchers.h"

namespace perftest {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::Pair;

void WriteFile(const fs::path& p, const std::string& contents) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p);
  out << contents;
  ASSERT_TRUE(out.good()) << p;
}

// A fresh directory under the test temp dir, removed on destruction.
class TempTree {
 public:
  TempTree() {
    std::string tmpl = ::testing::TempDir() + "perftest_pmu_XXXXXX";
    char* dir = ::mkdtemp(tmpl.data());
    EXPECT_NE(dir, nullptr) << tmpl;
    root_ = tmpl;
  }
  ~TempTree() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  const fs::path& root() const { return root_; }

 private:
  fs::path root_;
};

class PmuDiscovery : public ::testing::Test {
 protected:
  void SetUp() override {
    // sysfs: devices/<pmu> are symlinks into the device tree.
    const fs::path real = tree_.root() / "devices_real";
    const fs::path cpu = real / "cpu";
    WriteFile(cpu / "type", "4\n");
    WriteFile(cpu / "format" / "event", "config:0-7\n");
    WriteFile(cpu / "format" / "umask", "config:8-15\n");
    WriteFile(cpu / "format" / "cmask", "config:24-31\n");
    WriteFile(cpu / "caps" / "max_precise", "3\n");
    WriteFile(cpu / "caps" / "branches", "32\n");
    WriteFile(cpu / "events" / "cpu-cycles", "event=0x3c\n");
    WriteFile(cpu / "events" / "instructions", "event=0xc0\n");
    fs::create_directories(cpu / "events" / "not_a_file");  // directories are not events
    WriteFile(cpu / "uevent", "");

    fs::create_directories(root());
    fs::create_directory_symlink(cpu, root() / "cpu");

    WriteFile(root() / "software" / "type", "1\n");       // no format, caps, events
    WriteFile(root() / "intel_pt" / "type", "8");          // no trailing newline
    WriteFile(root() / "intel_pt" / "format" / "tsc", "config:10\n");
    WriteFile(root() / "intel_pt" / "caps" / "psb_cyc", "1\n");
    WriteFile(root() / "breakpoint" / "type", "5\n");

    // PMUs that cannot be opened: skipped.
    WriteFile(root() / "no_type" / "format" / "event", "config:0-7\n");
    WriteFile(root() / "text_type" / "type", "abc\n");
    WriteFile(root() / "negative_type" / "type", "-1\n");
    WriteFile(root() / "trailing_junk" / "type", "12abc\n");
    WriteFile(root() / "empty_type" / "type", "");
    WriteFile(root() / "too_big" / "type", "4294967296\n");
    WriteFile(root() / "stray_file", "7\n");  // not a directory
  }

  fs::path root() const { return tree_.root() / "devices"; }

  TempTree tree_;
};

std::vector<std::string> Names(const std::vector<Pmu>& pmus) {
  std::vector<std::string> names;
  for (const Pmu& p : pmus) names.push_back(p.name);
  return names;
}

TEST_F(PmuDiscovery, FindsPmusWithNumericTypeSortedByName) {
  Result<std::vector<Pmu>> pmus = DiscoverPmus(root().string());
  ASSERT_OK(pmus);
  EXPECT_THAT(Names(*pmus), ElementsAre("breakpoint", "cpu", "intel_pt", "software"));
}

TEST_F(PmuDiscovery, ReadsTypeFormatCapsEvents) {
  Result<std::vector<Pmu>> pmus = DiscoverPmus(root().string());
  ASSERT_OK(pmus);
  const Pmu* cpu = FindPmu(*pmus, "cpu");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->name, "cpu");
  EXPECT_EQ(cpu->type, 4u);
  EXPECT_THAT(cpu->format, ElementsAre(Pair("cmask", "config:24-31"), Pair("event", "config:0-7"),
                                       Pair("umask", "config:8-15")));
  EXPECT_THAT(cpu->caps, ElementsAre(Pair("branches", "32"), Pair("max_precise", "3")));
  EXPECT_THAT(cpu->events, ElementsAre(Pair("cpu-cycles", "event=0x3c"), Pair("instructions", "event=0xc0")));

  const Pmu* pt = FindPmu(*pmus, "intel_pt");
  ASSERT_NE(pt, nullptr);
  EXPECT_EQ(pt->type, 8u);
  EXPECT_THAT(pt->format, ElementsAre(Pair("tsc", "config:10")));
  EXPECT_THAT(pt->caps, ElementsAre(Pair("psb_cyc", "1")));
  EXPECT_TRUE(pt->events.empty());
}

TEST_F(PmuDiscovery, MissingSubdirectoriesGiveEmptyMaps) {
  Result<std::vector<Pmu>> pmus = DiscoverPmus(root().string());
  ASSERT_OK(pmus);
  const Pmu* sw = FindPmu(*pmus, "software");
  ASSERT_NE(sw, nullptr);
  EXPECT_EQ(sw->type, static_cast<uint32_t>(PERF_TYPE_SOFTWARE));
  EXPECT_TRUE(sw->format.empty());
  EXPECT_TRUE(sw->caps.empty());
  EXPECT_TRUE(sw->events.empty());
}

TEST_F(PmuDiscovery, SkipsPmusWithoutUsableType) {
  Result<std::vector<Pmu>> pmus = DiscoverPmus(root().string());
  ASSERT_OK(pmus);
  for (const char* name :
       {"no_type", "text_type", "negative_type", "trailing_junk", "empty_type", "too_big", "stray_file"}) {
    EXPECT_EQ(FindPmu(*pmus, name), nullptr) << name;
  }
}

TEST_F(PmuDiscovery, EmptyRootGivesNoPmus) {
  const fs::path empty = tree_.root() / "empty";
  fs::create_directories(empty);
  Result<std::vector<Pmu>> pmus = DiscoverPmus(empty.string());
  ASSERT_OK(pmus);
  EXPECT_TRUE(pmus->empty());
}

TEST_F(PmuDiscovery, MissingRootIsEnoent) {
  const std::string missing = (tree_.root() / "does_not_exist").string();
  Result<std::vector<Pmu>> pmus = DiscoverPmus(missing);
  EXPECT_THAT(pmus, FailsWithErrno(ENOENT));
  EXPECT_THAT(pmus.call(), ::testing::HasSubstr(missing));
}

TEST_F(PmuDiscovery, RootThatIsAFileIsEnotdir) {
  EXPECT_THAT(DiscoverPmus((root() / "stray_file").string()), FailsWithErrno(ENOTDIR));
}

TEST(Pmu, FindPmu) {
  std::vector<Pmu> pmus(2);
  pmus[0].name = "cpu";
  pmus[0].type = 4;
  pmus[1].name = "software";
  pmus[1].type = 1;
  ASSERT_NE(FindPmu(pmus, "software"), nullptr);
  EXPECT_EQ(FindPmu(pmus, "software"), &pmus[1]);
  EXPECT_EQ(FindPmu(pmus, "cpu")->type, 4u);
  EXPECT_EQ(FindPmu(pmus, "cp"), nullptr);
  EXPECT_EQ(FindPmu(pmus, ""), nullptr);
  EXPECT_EQ(FindPmu({}, "cpu"), nullptr);
}

// The real sysfs: the software PMU is always type PERF_TYPE_SOFTWARE (kernel/events/core.c
// perf_swevent registers with PERF_TYPE_SOFTWARE).
TEST(PmuRealSysfs, SoftwarePmuIsType1) {
  const fs::path sw = fs::path(kSysfsPmuRoot) / "software";
  std::error_code ec;
  if (!fs::exists(sw, ec)) {
    GTEST_SKIP() << sw.string() << " does not exist (sysfs not mounted in this sandbox, or no perf_event support)";
  }
  Result<std::vector<Pmu>> pmus = DiscoverPmus();
  ASSERT_OK(pmus);
  const Pmu* p = FindPmu(*pmus, "software");
  ASSERT_NE(p, nullptr) << "software PMU exists in sysfs but was not discovered";
  EXPECT_EQ(p->type, static_cast<uint32_t>(PERF_TYPE_SOFTWARE));
}

TEST(ParseFormat, RangesAndSingleBits) {
  ASSERT_OK_AND_ASSIGN(PmuFormat f, ParseFormat("config:0-7"));
  EXPECT_EQ(f.field, "config");
  EXPECT_EQ(f.Mask(), 0xffu);
  ASSERT_OK_AND_ASSIGN(PmuFormat g, ParseFormat("config1:0,8-11"));
  EXPECT_EQ(g.field, "config1");
  EXPECT_EQ(g.Mask(), 0xf01u);
  ASSERT_OK_AND_ASSIGN(PmuFormat h, ParseFormat("config:0-63"));
  EXPECT_EQ(h.Mask(), ~uint64_t{0});
}

TEST(ParseFormat, RefusesBadSyntax) {
  for (const char* bad : {"config", "config:", "config:8-7", "config:64", "config4:0", "event:0-7", "config:a-b",
                          "config:0-7,", "config:-1"}) {
    EXPECT_THAT(ParseFormat(bad), FailsWithErrno(EINVAL)) << bad;
  }
}

TEST(ResolveEventAlias, SpreadsValuesOverFormatBits) {
  Pmu cpu;
  cpu.name = "cpu";
  cpu.format = {{"event", "config:0-7"}, {"umask", "config:8-15"}, {"edge", "config:18"}, {"ldlat", "config1:0-15"},
                {"split", "config:0-3,32-35"}};
  ASSERT_OK_AND_ASSIGN(EventConfig c, ResolveEventAlias(cpu, "event=0x3c,umask=0x01"));
  EXPECT_EQ(c.config, 0x13cu);
  ASSERT_OK_AND_ASSIGN(EventConfig d, ResolveEventAlias(cpu, "event=12,edge,ldlat=3"));
  EXPECT_EQ(d.config, 12u | (1u << 18));
  EXPECT_EQ(d.config1, 3u);
  ASSERT_OK_AND_ASSIGN(EventConfig e, ResolveEventAlias(cpu, "split=0xab"));
  EXPECT_EQ(e.config, 0xbu | (uint64_t{0xa} << 32));
  ASSERT_OK_AND_ASSIGN(EventConfig f, ResolveEventAlias(cpu, "config=0x1234"));
  EXPECT_EQ(f.config, 0x1234u);
  EXPECT_THAT(ResolveEventAlias(cpu, "event=0x100"), FailsWithErrno(ERANGE));
  EXPECT_THAT(ResolveEventAlias(cpu, "period=3"), FailsWithErrno(ENOENT));
  EXPECT_THAT(ResolveEventAlias(cpu, "event=zz"), FailsWithErrno(EINVAL));
  EXPECT_THAT(ResolveEventAlias(cpu, "event=1,,umask=2"), FailsWithErrno(EINVAL));
}

TEST(ResolveEventAlias, AttributeFilesAreNotAliases) {
  EXPECT_TRUE(IsEventAliasName("energy-psys"));
  EXPECT_FALSE(IsEventAliasName("energy-psys.scale"));
  EXPECT_FALSE(IsEventAliasName("energy-psys.unit"));
  EXPECT_FALSE(IsEventAliasName("x.per-pkg"));
}

}  // namespace
}  // namespace perftest
