// Conformance suite: PMU discovery through sysfs — /sys/bus/event_source/
// devices/<pmu>/{type, format/*, events/*, caps/*} — and opening events by
// the types and terms found there.
//
// References: Documentation/ABI/testing/sysfs-bus-event_source-devices
// (type), -devices-format (format terms "config:0-7"), -devices-events
// (aliases "event=0x3c,umask=0x01"), -devices-caps; kernel/events/core.c
// perf_pmu_register() (type: PERF_TYPE_SOFTWARE, TRACEPOINT, BREAKPOINT
// are fixed, others idr-allocated from PERF_TYPE_MAX), perf_init_event()
// (idr_find(type), then every PMU for HARDWARE/HW_CACHE; ENOENT if none).
// The machine's PMUs come from Backend::Machine().pmus: the real sysfs on
// the kernel (harness/pmu.h DiscoverPmus), the profile's simulated sysfs on
// the mock.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <linux/hw_breakpoint.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "harness/attr.h"
#include "harness/event.h"
#include "harness/file_mapping.h"
#include "harness/pmu.h"
#include "harness/records.h"
#include "harness/ring_buffer.h"
#include "harness/syscall_matchers.h"
#include "harness/task.h"
#include "harness/workload.h"
#include "suites/common/measure.h"
#include "suites/common/records_util.h"
#include "suites/common/suite.h"

// A function of this binary no workload calls: a uprobe on it never fires.
// noinline and used, so it exists and has its own address.
extern "C" __attribute__((noinline, used, aligned(16))) void perftest_pmu_never_called() { asm volatile("" ::: "memory"); }

namespace perftest {
namespace {

namespace fs = std::filesystem;

alignas(8) volatile uint64_t g_watched = 0;

// Format strings from Documentation/ABI/testing/sysfs-bus-event_source-devices-format
// and from x86 PMUs, with their masks: the parser is checked on these before
// the machine's own files, so no case depends on what this machine lists.
struct FormatVector {
  const char* text;
  const char* field;
  uint64_t mask;
};
constexpr FormatVector kFormatVectors[] = {
    {"config:0-7", "config", 0xff},
    {"config:8-15", "config", 0xff00},
    {"config:18", "config", 1u << 18},
    {"config1:0-15", "config1", 0xffff},
    {"config2:0-31", "config2", 0xffffffffu},
    {"config:0-7,32-35", "config", 0xfull << 32 | 0xff},
    {"config:0-63", "config", ~uint64_t{0}},
};

class PmuSuite : public SuiteTest {
 protected:
  const std::vector<Pmu>& pmus() { return backend().Machine().pmus; }
  const Pmu* Find(std::string_view name) { return FindPmu(pmus(), name); }
  // The CPU's own PMU, by the name its driver registers: "cpu" (arch/x86/events/
  // core.c init_hw_perf_events(); drivers/perf/riscv_pmu_sbi.c
  // pmu_sbi_device_probe()), "cpu_core" (x86 hybrid), "armv8_*"/"armv9_*"
  // (drivers/perf/arm_pmuv3.c armv8_pmu_init() names, e.g. armv8_pmuv3_0 or
  // armv8_neoverse_n1). nullptr when sysfs lists none.
  const Pmu* CorePmu() {
    for (const char* name : {"cpu", "cpu_core"}) {
      if (const Pmu* p = Find(name)) return p;
    }
    for (const Pmu& p : pmus()) {
      if (p.name.starts_with("armv8_") || p.name.starts_with("armv9_")) return &p;
    }
    return nullptr;
  }
  // perf_event_open of `a` as a task event, else (PMUs without a task
  // context, perf_invalid_context: uncore-like) as a CPU-wide event on CPU 0.
  Result<int> OpenSomewhere(perf_event_attr a) {
    Result<int> r = backend().PerfEventOpen(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (!r.ok() && r.error() == EINVAL) r = backend().PerfEventOpen(&a, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
    if (r.ok()) (void)backend().Close(*r);
    return r;
  }
};

PERFTEST_CASE(PmuSuite, SoftwarePmuHasTypeSoftware, "pmu.software_type",
              "sysfs-bus-event_source-devices 'type'; core.c perf_event_init(): perf_pmu_register(&perf_swevent, "
              "\"software\", PERF_TYPE_SOFTWARE)") {
  const Pmu* sw = Find("software");
  ASSERT_NE(sw, nullptr) << "no software PMU in sysfs";
  EXPECT_EQ(sw->type, uint32_t{PERF_TYPE_SOFTWARE});
}

PERFTEST_CASE(PmuSuite, TracepointPmuHasTypeTracepoint, "pmu.tracepoint_type",
              "core.c perf_tp_register(): perf_pmu_register(&perf_tracepoint, \"tracepoint\", PERF_TYPE_TRACEPOINT)") {
  const Pmu* tp = Find("tracepoint");
  ASSERT_NE(tp, nullptr) << "no tracepoint PMU in sysfs";
  EXPECT_EQ(tp->type, uint32_t{PERF_TYPE_TRACEPOINT});
}

PERFTEST_CASE(PmuSuite, BreakpointPmuHasTypeBreakpoint, "pmu.breakpoint_type",
              "kernel/events/hw_breakpoint.c init_hw_breakpoint(): perf_pmu_register(&perf_breakpoint, "
              "\"breakpoint\", PERF_TYPE_BREAKPOINT)") {
  const Pmu* bp = Find("breakpoint");
  ASSERT_NE(bp, nullptr) << "no breakpoint PMU in sysfs";
  EXPECT_EQ(bp->type, uint32_t{PERF_TYPE_BREAKPOINT});
}

PERFTEST_CASE(PmuSuite, TypesAreUniqueAndDynamicOnesAboveTheFixed, "pmu.types_unique",
              "core.c perf_pmu_register(): a type < 0 gets idr_alloc(&pmu_idr, pmu, PERF_TYPE_MAX, 0): unique, "
              ">= PERF_TYPE_MAX; only the fixed PMUs (and the core PMU as PERF_TYPE_RAW) are below") {
  ASSERT_FALSE(pmus().empty());
  std::set<uint32_t> seen;
  for (const Pmu& p : pmus()) {
    EXPECT_TRUE(seen.insert(p.type).second) << p.name << " repeats type " << p.type;
    const bool fixed = p.name == "software" || p.name == "tracepoint" || p.name == "breakpoint";
    if (p.type < PERF_TYPE_MAX && !fixed) {
      EXPECT_EQ(p.type, uint32_t{PERF_TYPE_RAW}) << p.name << ": below PERF_TYPE_MAX only the core PMU (RAW)";
    }
  }
}

PERFTEST_CASE(PmuSuite, DiscoveryReadsTheSysfsLayout, "pmu.sysfs_layout",
              "sysfs-bus-event_source-devices-{format,events,caps}: <pmu>/type, <pmu>/format/<term>, "
              "<pmu>/events/<alias>, <pmu>/caps/<cap>; harness/pmu.h DiscoverPmus()") {
  // The machine's PMUs written out as a sysfs tree read back identically,
  // and on the kernel the tree the machine was read from is the real one.
  std::string tmpl = ::testing::TempDir() + "perftest_pmu_suite_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const fs::path root = tmpl;
  for (const Pmu& p : pmus()) {
    fs::create_directories(root / p.name);
    std::ofstream(root / p.name / "type") << p.type << "\n";
    for (auto [dir, files] : {std::pair{"format", &p.format}, {"events", &p.events}, {"caps", &p.caps}}) {
      fs::create_directories(root / p.name / dir);
      for (const auto& [file, value] : *files) std::ofstream(root / p.name / dir / file) << value << "\n";
    }
  }
  Result<std::vector<Pmu>> again = DiscoverPmus(root.string());
  std::error_code ec;
  fs::remove_all(root, ec);
  ASSERT_OK(again);
  ASSERT_EQ(again->size(), pmus().size());
  for (size_t i = 0; i < pmus().size(); ++i) {
    EXPECT_EQ((*again)[i].name, pmus()[i].name);
    EXPECT_EQ((*again)[i].type, pmus()[i].type);
    EXPECT_EQ((*again)[i].format, pmus()[i].format);
    EXPECT_EQ((*again)[i].events, pmus()[i].events);
    EXPECT_EQ((*again)[i].caps, pmus()[i].caps);
  }
  if (backend().kind() == "kernel") {
    ASSERT_OK_AND_ASSIGN(std::vector<Pmu> real, DiscoverPmus());
    ASSERT_EQ(real.size(), pmus().size());
    for (size_t i = 0; i < real.size(); ++i) EXPECT_EQ(real[i].name, pmus()[i].name);
  }
}

PERFTEST_CASE(PmuSuite, OpenByTheSysfsType, "pmu.open_by_sysfs_type",
              "sysfs-bus-event_source-devices 'type': \"the value to use in perf_event_attr.type\"; "
              "core.c perf_init_event() idr_find(&pmu_idr, type)") {
  const Pmu* sw = Find("software");
  const Pmu* tp = Find("tracepoint");
  const Pmu* bp = Find("breakpoint");
  ASSERT_TRUE(sw != nullptr && tp != nullptr && bp != nullptr);
  perf_event_attr a = MakeAttr(sw->type, PERF_COUNT_SW_DUMMY);
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  EXPECT_THAT(OpenSomewhere(a), Succeeds()) << "software dummy by sysfs type " << sw->type;
  PERFTEST_ASSIGN_OR_SKIP(uint64_t id, backend().TracepointId("syscalls", "sys_enter_getpid"),
                          "tracepoint syscalls:sys_enter_getpid");
  a = MakeAttr(tp->type, id);
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  EXPECT_THAT(OpenSomewhere(a), Succeeds()) << "tracepoint by sysfs type " << tp->type;
  a = MakeAttr(bp->type, 0);
  a.bp_type = HW_BREAKPOINT_W;
  a.bp_addr = reinterpret_cast<uint64_t>(&g_watched);
  a.bp_len = HW_BREAKPOINT_LEN_8;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  EXPECT_THAT(OpenSomewhere(a), Succeeds()) << "breakpoint by sysfs type " << bp->type;
}

PERFTEST_CASE(PmuSuite, TypeNoPmuHasIsENOENT, "pmu.unknown_type",
              "core.c perf_init_event(): no PMU in pmu_idr and none of the list accepts -> ENOENT") {
  uint32_t max_type = PERF_TYPE_MAX;
  for (const Pmu& p : pmus()) max_type = std::max(max_type, p.type);
  for (uint32_t type : {max_type + 1, max_type + 100, uint32_t{0x7fffffff}}) {
    perf_event_attr a = MakeAttr(type, 0);
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    EXPECT_THAT(OpenSomewhere(a), FailsWithErrno(ENOENT)) << "type " << type;
  }
}

PERFTEST_CASE(PmuSuite, FormatTermsParse, "pmu.format_terms",
              "sysfs-bus-event_source-devices-format: \"<field>:<bit>[-<bit>][,...]\" naming config, config1, "
              "config2 or config3 bits 0..63") {
  for (const FormatVector& v : kFormatVectors) {
    ASSERT_OK_AND_ASSIGN(PmuFormat f, ParseFormat(v.text));
    EXPECT_EQ(f.field, v.field) << v.text;
    EXPECT_EQ(f.Mask(), v.mask) << v.text;
  }
  int checked = 0;
  for (const Pmu& p : pmus()) {
    for (const auto& [term, text] : p.format) {
      Result<PmuFormat> f = ParseFormat(text);
      EXPECT_THAT(f, Succeeds()) << p.name << "/format/" << term;
      ++checked;
    }
  }
  RecordProperty("machine_format_files", checked);
}

PERFTEST_CASE(PmuSuite, EventAliasesResolveAndOpen, "pmu.event_aliases",
              "sysfs-bus-event_source-devices-events: comma-separated term=value over the PMU's format/ terms; "
              "the alias opens with perf_event_attr.type = the PMU's type") {
  // The alias grammar first, on a PMU shaped like x86's core PMU.
  Pmu shaped;
  shaped.name = "shaped";
  shaped.format = {{"event", "config:0-7"}, {"umask", "config:8-15"}, {"cmask", "config:24-31"}};
  ASSERT_OK_AND_ASSIGN(EventConfig c, ResolveEventAlias(shaped, "event=0x3c,umask=0x01"));
  EXPECT_EQ(c.config, 0x13cu);
  ASSERT_OK_AND_ASSIGN(EventConfig d, ResolveEventAlias(shaped, "event=0xa3,umask=0x14,cmask=20"));
  EXPECT_EQ(d.config, 0x140014a3u);
  int opened = 0;
  std::vector<std::string> denied;
  for (const Pmu& p : pmus()) {
    for (const auto& [name, text] : p.events) {
      if (!IsEventAliasName(name)) continue;
      Result<EventConfig> cfg = ResolveEventAlias(p, text);
      ASSERT_THAT(cfg, Succeeds()) << p.name << "/events/" << name;
      perf_event_attr a = MakeAttr(p.type, cfg->config);
      a.config1 = cfg->config1;
      a.config2 = cfg->config2;
      // Uncore-like PMUs refuse exclude_* bits: open counting everything,
      // which an unprivileged run may not do (perf_allow_kernel()).
      Result<int> r = OpenSomewhere(a);
      if (!r.ok() && (r.error() == EACCES || r.error() == EPERM)) {
        denied.push_back(r.ToString());
        continue;
      }
      EXPECT_THAT(r, Succeeds()) << p.name << "/" << name << " = " << text;
      ++opened;
    }
  }
  RecordProperty("machine_aliases_opened", opened);
  if (!denied.empty()) {
    PERFTEST_SKIP(SkipClass::kPermission, fmt::format("{} aliases resolved but may not be opened here, e.g. {}",
                                                      denied.size(), denied.front()));
  }
}

PERFTEST_CASE(PmuSuite, HardwareEventsNeedACorePmu, "pmu.hardware_needs_core_pmu",
              "core.c perf_init_event(): PERF_TYPE_HARDWARE goes to PERF_TYPE_RAW's PMU, else every PMU; none "
              "accepts it without a core PMU -> ENOENT; a PMU with PERF_PMU_CAP_NO_EXCLUDE refuses exclude_* "
              "with EINVAL in perf_try_init_event()") {
  const Pmu* core = CorePmu();
  perf_event_attr a = MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  if (core == nullptr) {
    EXPECT_THAT(OpenSomewhere(a), FailsWithErrno(ENOENT)) << "no core PMU in sysfs";
    return;
  }
  Result<int> r = OpenSomewhere(a);
  if (!r.ok() && r.error() == EINVAL) {
    // The event reached a PMU that cannot filter privilege levels (e.g. the
    // RISC-V SBI PMU without Sscofpmf): without exclude_* bits it must open.
    perf_event_attr plain = MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
    r = OpenSomewhere(plain);
    if (!r.ok() && (r.error() == EACCES || r.error() == EPERM)) {
      PERFTEST_SKIP(SkipClass::kPermission, core->name + " refuses exclude_* (PERF_PMU_CAP_NO_EXCLUDE) and counting "
                                            "the kernel needs CAP_PERFMON or perf_event_paranoid <= 1: " +
                                                r.ToString());
    }
  }
  EXPECT_THAT(r, Succeeds()) << "core PMU " << core->name << " type " << core->type;
}

PERFTEST_CASE(PmuSuite, CoreAliasMatchesGenericEvent, "pmu.core_alias_generic",
              "arch/x86/events/intel/core.c intel_perfmon_event_map: cpu-cycles = event 0x3c; "
              "sysfs cpu/events/cpu-cycles; PERF_COUNT_HW_CPU_CYCLES and the raw alias count the same") {
  const Pmu* core = CorePmu();
  if (core == nullptr) {
    perf_event_attr hw = MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
    hw.exclude_kernel = 1;
    Result<int> r = OpenSomewhere(hw);
    ASSERT_FALSE(r.ok()) << "hardware events open but sysfs lists no core PMU";
    PERFTEST_SKIP(SkipClass::kUnsupported, "no hardware PMU: no core PMU in sysfs, " + r.ToString());
  }
  if (core->events.empty()) {
    // drivers/perf/riscv_pmu_sbi.c registers only format/ attributes.
    PERFTEST_SKIP(SkipClass::kUnsupported, "the core PMU " + core->name + " exports no events/ aliases");
  }
  // The cycles alias: "cpu-cycles" on x86 (intel/core.c EVENT_ATTR_STR), "cpu_cycles" on
  // arm64 (arm_pmuv3.c ARMV8_EVENT_ATTR(cpu_cycles, ARMV8_PMUV3_PERFCTR_CPU_CYCLES), which
  // armv8_pmuv3_perf_map gives PERF_COUNT_HW_CPU_CYCLES).
  auto it = core->events.find("cpu-cycles");
  if (it == core->events.end()) it = core->events.find("cpu_cycles");
  ASSERT_NE(it, core->events.end()) << core->name << "/events/ has aliases but no cpu-cycles or cpu_cycles";
  ASSERT_OK_AND_ASSIGN(EventConfig cfg, ResolveEventAlias(*core, it->second));
  perf_event_attr raw = MakeAttr(core->type, cfg.config);
  raw.exclude_kernel = 1;
  raw.exclude_hv = 1;
  perf_event_attr generic = MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
  generic.exclude_kernel = 1;
  generic.exclude_hv = 1;
  ASSERT_OK_AND_ASSIGN(Group g, Group::Open(backend(), generic, {raw}));
  ASSERT_OK(g.leader().Enable(/*whole_group=*/true));
  ASSERT_OK(backend().RunWorkload(Workload::Instructions(1000000)));
  ASSERT_OK(g.leader().Disable(/*whole_group=*/true));
  const uint64_t a = Value(g.leader()), b = Value(g.member(0));
  EXPECT_GT(a, 0u);
  if (exact()) {
    EXPECT_EQ(a, b);
  } else {
    EXPECT_NEAR(static_cast<double>(b), static_cast<double>(a), 0.05 * static_cast<double>(a));
  }
}

PERFTEST_CASE(PmuSuite, CapsMaxPreciseBoundsPreciseIp, "pmu.caps_max_precise",
              "sysfs-bus-event_source-devices-caps max_precise; arch/x86/events/core.c x86_pmu_hw_config(): "
              "precise_ip > x86_pmu_max_precise() -> EOPNOTSUPP; arm64 (no max_precise): drivers/perf/arm_pmu.c "
              "armpmu_event_init() ignores precise_ip") {
  const Pmu* core = CorePmu();
  if (core != nullptr && !core->caps.count("max_precise") && backend().Machine().arch == "aarch64") {
    // Only arch/x86/events/core.c exports caps/max_precise. drivers/perf/arm_pmu.c
    // armpmu_event_init() and __hw_perf_event_init() never look at precise_ip,
    // and core.c bounds it nowhere: every value of its 2 bits opens.
    for (uint32_t p = 0; p <= 3; ++p) {
      perf_event_attr a = MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
      a.exclude_kernel = 1;
      a.exclude_hv = 1;
      a.sample_period = 100000;
      a.precise_ip = p;
      EXPECT_THAT(OpenSomewhere(a), Succeeds()) << "arm64: precise_ip " << p << " is not bounded";
    }
    return;
  }
  if (core != nullptr && !core->caps.count("max_precise") && backend().Machine().arch != "x86_64") {
    // riscv_pmu_sbi.c exports no caps/ either.
    PERFTEST_SKIP(SkipClass::kUnsupported, "caps/max_precise is x86's; the core PMU " + core->name + " of this " +
                                               backend().Machine().arch + " machine has none");
  }
  if (core == nullptr || !core->caps.count("max_precise")) {
    perf_event_attr hw = MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
    hw.exclude_kernel = 1;
    Result<int> r = OpenSomewhere(hw);
    ASSERT_FALSE(r.ok()) << "hardware events open but sysfs lists no cpu/caps/max_precise";
    PERFTEST_SKIP(SkipClass::kUnsupported, "no hardware PMU with caps/max_precise: " + r.ToString());
  }
  char* end = nullptr;
  const std::string& text = core->caps.at("max_precise");
  const long max_precise = std::strtol(text.c_str(), &end, 10);
  ASSERT_TRUE(end != text.c_str() && *end == '\0' && max_precise >= 0 && max_precise <= 3) << text;
  perf_event_attr a = MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  a.sample_period = 100000;
  a.precise_ip = static_cast<uint32_t>(max_precise);
  EXPECT_THAT(OpenSomewhere(a), Succeeds()) << "precise_ip " << max_precise;
  if (max_precise < 3) {
    a.precise_ip = static_cast<uint32_t>(max_precise + 1);
    EXPECT_THAT(OpenSomewhere(a), FailsWithErrno(EOPNOTSUPP)) << "precise_ip " << max_precise + 1;
  }
}

PERFTEST_CASE(PmuSuite, CapsFilesAreNonEmpty, "pmu.caps",
              "sysfs-bus-event_source-devices-caps: each file holds one value (e.g. max_precise, branches, "
              "pmu_name)") {
  int checked = 0;
  for (const Pmu& p : pmus()) {
    for (const auto& [cap, value] : p.caps) {
      EXPECT_FALSE(value.empty()) << p.name << "/caps/" << cap;
      EXPECT_EQ(value.find('\n'), std::string::npos) << p.name << "/caps/" << cap << " holds one line";
      ++checked;
    }
  }
  RecordProperty("machine_caps_files", checked);
  if (checked == 0) {
    PERFTEST_SKIP(SkipClass::kUnsupported, "no PMU here has caps/ files (software, tracepoint and breakpoint "
                                           "PMUs have none; hardware PMUs do)");
  }
}

// The uprobe PMU (kernel/events/core.c perf_uprobe, CONFIG_UPROBE_EVENTS):
// one perf_event_open() makes a local uprobe on a file. The rule cases probe a
// file they create and no process maps, so no breakpoint is ever planted; the
// counting cases probe the function Workload::Execute calls, at its offset in
// the file this process maps it from (harness/file_mapping.h).
class UprobePmu : public PmuSuite {
 protected:
  void SetUp() override {
    PmuSuite::SetUp();
    uprobe_ = Find("uprobe");
    if (uprobe_ == nullptr) {
      PERFTEST_SKIP(SkipClass::kUnsupported, "sysfs lists no uprobe PMU (a kernel without CONFIG_UPROBE_EVENTS)");
    }
    char name[] = "/tmp/perftest-uprobe-XXXXXX";
    const int fd = ::mkstemp(name);
    ASSERT_GE(fd, 0) << "mkstemp: " << std::strerror(errno);
    ASSERT_EQ(::write(fd, "0123456789abcdef", kFileSize), static_cast<ssize_t>(kFileSize));
    ::close(fd);
    file_ = name;
  }
  void TearDown() override {
    if (!file_.empty()) ::unlink(file_.c_str());
    PmuSuite::TearDown();
  }
  // A uprobe on `path` at `offset`; config carries retprobe and ref_ctr_offset.
  perf_event_attr Probe(const char* path, uint64_t offset = 0, uint64_t config = 0) {
    perf_event_attr a = MakeAttr(uprobe_->type, config);
    a.config1 = reinterpret_cast<uintptr_t>(path);  // attr.uprobe_path
    a.config2 = offset;                             // attr.probe_offset
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    return a;
  }
  // A uprobe (config: retprobe) on the function at `addr` of this process:
  // its file, and its offset there (uprobe_register() takes an inode and an
  // offset; the kernel maps them to addresses per mm, vaddr_to_offset()).
  perf_event_attr ProbeFunction(uint64_t addr, uint64_t config = 0) {
    Result<FileLocation> at = FileLocationOf(addr);
    EXPECT_OK(at);
    target_ = at.ok() ? at->path : std::string("/nonexistent");
    return Probe(target_.c_str(), at.ok() ? at->offset : 0, config);
  }
  uint64_t Count(Event& ev, const Workload& w) {
    Result<uint64_t> n = MeasureCount(backend(), ev, w);
    EXPECT_OK(n);
    return n.ok() ? *n : ~uint64_t{0};
  }
  // The samples of a probe `a` (sample_period 1, IP|TID|RAW) over Workload::Execute(times).
  std::vector<SampleRecord> ProbeSamples(perf_event_attr a, uint64_t times) {
    a.sample_period = 1;
    a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_RAW;
    std::vector<SampleRecord> out;
    Result<Event> ev = Event::Open(backend(), a);
    EXPECT_OK(ev);
    if (!ev.ok()) return out;
    Result<RingBuffer> rb = RingBuffer::Map(backend(), ev->fd(), 8);
    EXPECT_OK(rb);
    if (!rb.ok()) return out;
    EXPECT_EQ(Count(*ev, Workload::Execute(times)), times);
    Result<std::vector<ParsedRecord>> recs = DrainRecords(*rb, SampleLayout::FromAttr(ev->attr()), true);
    EXPECT_OK(recs);
    if (recs.ok()) {
      for (const SampleRecord* s : SamplesOf(*recs)) out.push_back(*s);
    }
    return out;
  }
  // The little-endian u64 at `offset` of a raw trace entry (0 past its end).
  static uint64_t RawWord(const std::vector<std::byte>& raw, size_t offset) {
    uint64_t v = 0;
    for (size_t i = 0; i < 8 && offset + i < raw.size(); ++i) v |= std::to_integer<uint64_t>(raw[offset + i]) << (8 * i);
    return v;
  }
  Result<int> OpenProbe(perf_event_attr a) {
    Result<int> r = backend().PerfEventOpen(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (r.ok()) (void)backend().Close(*r);
    return r;
  }
  static constexpr size_t kFileSize = 16;
  const Pmu* uprobe_ = nullptr;
  std::string file_;
  std::string target_;  // ProbeFunction()'s path: alive as long as the attr naming it
};

PERFTEST_CASE(UprobePmu, FormatNamesRetprobeAndRefCtrOffset, "pmu.uprobe_format",
              "core.c: PMU_FORMAT_ATTR(retprobe, \"config:0\") (PERF_PROBE_CONFIG_IS_RETPROBE) and "
              "ref_ctr_offset \"config:32-63\" (PERF_UPROBE_REF_CTR_OFFSET_SHIFT) in uprobe_attr_groups") {
  ASSERT_EQ(uprobe_->format.count("retprobe"), 1u);
  EXPECT_EQ(uprobe_->format.at("retprobe"), "config:0");
  ASSERT_EQ(uprobe_->format.count("ref_ctr_offset"), 1u);
  EXPECT_EQ(uprobe_->format.at("ref_ctr_offset"), "config:32-63");
  EXPECT_GE(uprobe_->type, uint32_t{PERF_TYPE_MAX}) << "perf_pmu_register(&perf_uprobe, \"uprobe\", -1): dynamic";
}

PERFTEST_CASE(UprobePmu, PathRules, "pmu.uprobe_path",
              "trace_event_perf.c perf_uprobe_init(): no uprobe_path (config1) EINVAL, strndup_user(PATH_MAX) "
              "EFAULT, or EINVAL returned as E2BIG, empty path EINVAL; trace_uprobe.c create_local_trace_uprobe(): "
              "kern_path(LOOKUP_FOLLOW) errno, not d_is_reg() EINVAL; uprobes.c uprobe_register(): no read_folio EIO") {
  EXPECT_THAT(OpenProbe(Probe(file_.c_str())), Succeeds()) << "a regular file, offset 0";
  EXPECT_THAT(OpenProbe(Probe(nullptr)), FailsWithErrno(EINVAL)) << "config1 = 0";
  perf_event_attr a = Probe(nullptr);
  a.config1 = 1;
  EXPECT_THAT(OpenProbe(a), FailsWithErrno(EFAULT)) << "config1 in the NULL page";
  EXPECT_THAT(OpenProbe(Probe("")), FailsWithErrno(EINVAL)) << "the empty path";
  const std::string no_nul(4096, 'a');  // PATH_MAX bytes, then the NUL
  EXPECT_THAT(OpenProbe(Probe(no_nul.c_str())), FailsWithErrno(E2BIG)) << "no NUL within PATH_MAX";
  EXPECT_THAT(OpenProbe(Probe("/nonexistent/perftest")), FailsWithErrno(ENOENT));
  const std::string under_file = file_ + "/x";
  EXPECT_THAT(OpenProbe(Probe(under_file.c_str())), FailsWithErrno(ENOTDIR));
  const std::string long_name = "/tmp/" + std::string(300, 'a');
  EXPECT_THAT(OpenProbe(Probe(long_name.c_str())), FailsWithErrno(ENAMETOOLONG)) << "a component past NAME_MAX";
  EXPECT_THAT(OpenProbe(Probe("/tmp")), FailsWithErrno(EINVAL)) << "a directory";
  EXPECT_THAT(OpenProbe(Probe("/dev/null")), FailsWithErrno(EINVAL)) << "a character device";
  EXPECT_THAT(OpenProbe(Probe("/proc/self/status")), FailsWithErrno(EIO)) << "procfs: no read_folio";
}

PERFTEST_CASE(UprobePmu, OffsetRetprobeAndRefCtrRules, "pmu.uprobe_offset",
              "uprobes.c uprobe_register(): offset > i_size_read() EINVAL (loff_t, signed), "
              "!IS_ALIGNED(ref_ctr_offset, sizeof(short)) EINVAL; core.c perf_uprobe_event_init(): "
              "config bit 0 retprobe, config >> 32 ref_ctr_offset, has_branch_stack() EOPNOTSUPP") {
  const char* f = file_.c_str();
  EXPECT_THAT(OpenProbe(Probe(f, kFileSize)), Succeeds()) << "offset == i_size";
  EXPECT_THAT(OpenProbe(Probe(f, kFileSize + 1)), FailsWithErrno(EINVAL)) << "past the end";
  EXPECT_THAT(OpenProbe(Probe(f, uint64_t{1} << 63)), Succeeds()) << "a negative loff_t is not past the end";
  // IS_ALIGNED(offset, UPROBE_SWBP_INSN_SIZE): x86's int3 is one byte; arm64's brk 4, riscv64's c.ebreak 2.
  if (backend().Machine().arch == "x86_64") {
    EXPECT_THAT(OpenProbe(Probe(f, 3)), Succeeds()) << "any offset on x86";
  } else {
    EXPECT_THAT(OpenProbe(Probe(f, 3)), FailsWithErrno(EINVAL)) << "an offset inside an instruction slot";
    EXPECT_THAT(OpenProbe(Probe(f, 4)), Succeeds());
  }
  EXPECT_THAT(OpenProbe(Probe(f, 0, 1)), Succeeds()) << "retprobe";
  EXPECT_THAT(OpenProbe(Probe(f, 0, 0xfffffffe)), Succeeds()) << "config bits 1-31 are not looked at";
  EXPECT_THAT(OpenProbe(Probe(f, 0, uint64_t{2} << 32)), Succeeds()) << "ref_ctr_offset 2";
  EXPECT_THAT(OpenProbe(Probe(f, 0, uint64_t{1} << 32)), FailsWithErrno(EINVAL)) << "ref_ctr_offset 1: odd";
  perf_event_attr b = Probe(nullptr);
  b.sample_period = 1;
  b.sample_type = PERF_SAMPLE_BRANCH_STACK;
  b.branch_sample_type = PERF_SAMPLE_BRANCH_ANY | PERF_SAMPLE_BRANCH_USER;
  EXPECT_THAT(OpenProbe(b), FailsWithErrno(EOPNOTSUPP)) << "branch sampling, checked before the path";
}

PERFTEST_CASE(UprobePmu, NeedsSysAdmin, "pmu.uprobe_sys_admin",
              "core.c perf_uprobe_event_init(): !capable(CAP_SYS_ADMIN) -> EACCES, whatever perf_event_paranoid "
              "(\"perf: Require CAP_SYS_ADMIN for uprobes\", 2025: CAP_PERFMON no longer suffices)") {
  perf_event_attr a = Probe(file_.c_str());
  ChildCredentials nobody;
  nobody.uid = 65534;
  auto open = [&](Backend& c) {
    perf_event_attr copy = a;
    Result<int> r = c.PerfEventOpen(&copy, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (!r.ok()) return r.error();
    (void)c.Close(*r);
    return 0;
  };
  PERFTEST_ASSIGN_OR_SKIP(int err, backend().RunInChild(nobody, open), "a child task without capabilities");
  EXPECT_EQ(err, EACCES) << "an unprivileged user probing its own task";
  ChildCredentials perfmon = nobody;
  perfmon.caps = std::vector<int>{CAP_PERFMON};
  PERFTEST_ASSIGN_OR_SKIP(err, backend().RunInChild(perfmon, open), "a child task keeping CAP_PERFMON");
  EXPECT_EQ(err, EACCES) << "CAP_PERFMON is not enough (it was before the 2025 change)";
  ChildCredentials admin = nobody;
  admin.caps = std::vector<int>{CAP_SYS_ADMIN};
  PERFTEST_ASSIGN_OR_SKIP(err, backend().RunInChild(admin, open), "a child task keeping CAP_SYS_ADMIN");
  EXPECT_EQ(err, 0) << "CAP_SYS_ADMIN suffices";
}

PERFTEST_CASE(UprobePmu, FilterSeesCommonFields, "pmu.uprobe_filter",
              "core.c perf_event_set_filter(): perf_event_is_tracing() includes the uprobe PMU, "
              "ftrace_profile_set_filter() on the local trace event: the common_* fields, one filter per event") {
  perf_event_attr a = Probe(file_.c_str());
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), a));
  const char* probe_ip = "__probe_ip == 0";
  EXPECT_THAT(backend().Ioctl(ev.fd(), PERF_EVENT_IOC_SET_FILTER, reinterpret_cast<uintptr_t>(probe_ip)),
              FailsWithErrno(EINVAL)) << "the probe's own field is not filterable on a local uprobe";
  const char* pid = "common_pid != 0";
  EXPECT_THAT(backend().Ioctl(ev.fd(), PERF_EVENT_IOC_SET_FILTER, reinterpret_cast<uintptr_t>(pid)), Succeeds());
  EXPECT_THAT(backend().Ioctl(ev.fd(), PERF_EVENT_IOC_SET_FILTER, reinterpret_cast<uintptr_t>(pid)),
              FailsWithErrno(EEXIST));
  EXPECT_THAT(ev.ReadValue(), SucceedsWith(0u)) << "nothing executes the unmapped file";
}

PERFTEST_CASE(UprobePmu, CountsEachCall, "pmu.uprobe_counts_calls",
              "kernel/events/uprobes.c handle_swbp() -> handler_chain(); kernel/trace/trace_uprobe.c "
              "uprobe_dispatcher() -> uprobe_perf_func() -> perf_trace_buf_submit(count 1) -> core.c perf_tp_event()") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), ProbeFunction(ExecuteTargetAddress())));
  EXPECT_EQ(Count(ev, Workload::Execute(37)), 37u) << "one count per execution of the probed instruction";
  EXPECT_EQ(Count(ev, Workload::Syscalls(5)), 37u) << "code that does not run the probed offset adds nothing";
  // The probe is on the inode (create_local_trace_uprobe(): kern_path(LOOKUP_FOLLOW), d_real_inode()),
  // not the name: a symlink to the file probes the same code.
  const std::string link = file_ + ".link";
  std::error_code ec;
  fs::create_symlink(target_, link, ec);
  ASSERT_FALSE(ec) << "symlink " << link << ": " << ec.message();
  perf_event_attr via_link = ev.attr();
  via_link.config1 = reinterpret_cast<uintptr_t>(link.c_str());
  Result<Event> linked = Event::Open(backend(), via_link);
  fs::remove(link, ec);
  ASSERT_OK(linked);
  EXPECT_EQ(Count(*linked, Workload::Execute(9)), 9u) << "a probe through a symlink to the file";
}

PERFTEST_CASE(UprobePmu, RetprobeCountsEachReturn, "pmu.uprobe_retprobe_counts_returns",
              "core.c perf_uprobe_event_init(): config bit 0 (PERF_PROBE_CONFIG_IS_RETPROBE); uprobes.c "
              "prepare_uretprobe(), handle_trampoline(); trace_uprobe.c uretprobe_dispatcher() -> "
              "uretprobe_perf_func()") {
  ASSERT_OK_AND_ASSIGN(Event ret, Event::Open(backend(), ProbeFunction(ExecuteTargetAddress(), 1)));
  EXPECT_EQ(Count(ret, Workload::Execute(19)), 19u) << "one count per return of the probed function";
}

PERFTEST_CASE(UprobePmu, UncalledFunctionCountsNothing, "pmu.uprobe_uncalled_zero",
              "uprobes.c uprobe_register(): the breakpoint sits at (inode, offset); only executing that "
              "instruction traps (handle_swbp())") {
  ASSERT_OK_AND_ASSIGN(Event never,
                       Event::Open(backend(), ProbeFunction(reinterpret_cast<uint64_t>(&perftest_pmu_never_called))));
  ASSERT_NE(reinterpret_cast<uint64_t>(&perftest_pmu_never_called), ExecuteTargetAddress());
  EXPECT_EQ(Count(never, Workload::Execute(12)), 0u) << "another function of the same file runs, not this one";
  ASSERT_OK_AND_ASSIGN(Event ret, Event::Open(backend(), ProbeFunction(reinterpret_cast<uint64_t>(
                                                             &perftest_pmu_never_called), 1)));
  EXPECT_EQ(Count(ret, Workload::Execute(12)), 0u) << "no entry, so no return either";
}

PERFTEST_CASE(UprobePmu, DisabledPeriodsAreNotCounted, "pmu.uprobe_disabled",
              "core.c perf_tp_event(): only events on the CPU's ACTIVE list (perf_trace_add() at sched-in of an "
              "enabled event) see the hit; PERF_EVENT_IOC_ENABLE/DISABLE") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), ProbeFunction(ExecuteTargetAddress())));
  ASSERT_OK(backend().RunWorkload(Workload::Execute(4)));
  EXPECT_THAT(ev.ReadValue(), SucceedsWith(0u)) << "opened disabled";
  ASSERT_OK(ev.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::Execute(6)));
  ASSERT_OK(ev.Disable());
  ASSERT_OK(backend().RunWorkload(Workload::Execute(5)));
  EXPECT_THAT(ev.ReadValue(), SucceedsWith(6u)) << "only the enabled window counts";
}

PERFTEST_CASE(UprobePmu, InheritCountsChildren, "pmu.uprobe_inherit",
              "core.c inherit_event(): an attr.inherit uprobe event is copied into children forked after it; "
              "the child maps the same file (the breakpoint is in its copy of the page: uprobes.c "
              "uprobe_dup_mmap()); perf_event_read_value() sums child counts") {
  perf_event_attr a = ProbeFunction(ExecuteTargetAddress());
  a.inherit = 1;
  a.disabled = 0;
  ASSERT_OK_AND_ASSIGN(Event inherited, Event::Open(backend(), a));
  a.inherit = 0;
  ASSERT_OK_AND_ASSIGN(Event own, Event::Open(backend(), a));
  Result<ChildTask> child = ChildTask::Spawn(backend());
  if (!child.ok() && child.error() == ENOSYS) {
    PERFTEST_SKIP(SkipClass::kUnsupported, "the backend drives no child tasks: " + child.ToString());
  }
  ASSERT_OK(child);
  ASSERT_OK(child->Run(Workload::Execute(8)));
  ASSERT_OK(backend().RunWorkload(Workload::Execute(3)));
  ASSERT_OK(child->Exit());
  EXPECT_THAT(inherited.ReadValue(), SucceedsWith(11u)) << "the parent's 3 and the child's 8";
  EXPECT_THAT(own.ReadValue(), SucceedsWith(3u)) << "without inherit, the child's calls are not seen";
}

PERFTEST_CASE(UprobePmu, SampleIpAndRawOfEntry, "pmu.uprobe_sample_ip",
              "uprobes.c handle_swbp(): instruction_pointer_set(regs, bp_vaddr) before handler_chain(); "
              "trace_uprobe.c __uprobe_perf_func(): those user regs, raw struct uprobe_trace_entry_head "
              "{trace_entry, vaddr[0] = the probe address}, SIZEOF_TRACE_ENTRY(false) = 16") {
  const std::vector<SampleRecord> samples = ProbeSamples(ProbeFunction(ExecuteTargetAddress()), 5);
  ASSERT_EQ(samples.size(), 5u) << "one sample per hit at sample_period 1";
  const TaskId self = backend().CurrentTask();
  for (const SampleRecord& s : samples) {
    EXPECT_EQ(s.ip.value_or(0), ExecuteTargetAddress());
    EXPECT_EQ(s.pid.value_or(0), static_cast<uint32_t>(self.pid));
    EXPECT_EQ(s.tid.value_or(0), static_cast<uint32_t>(self.tid));
    ASSERT_TRUE(s.raw.has_value());
    EXPECT_EQ(s.raw->size(), 20u) << "16 bytes, padded so that the u32 size word and the data fill u64s";
    EXPECT_EQ(RawWord(*s.raw, 0) & 0xffff, 0u) << "common_type: the local uprobe's trace event has no type id";
    EXPECT_EQ(RawWord(*s.raw, 4) & 0xffffffff, static_cast<uint32_t>(self.pid)) << "common_pid";
    EXPECT_EQ(RawWord(*s.raw, 8), ExecuteTargetAddress()) << "vaddr[0]: the probe address";
  }
}

PERFTEST_CASE(UprobePmu, SampleOfReturnNamesFunctionAndReturnAddress, "pmu.uprobe_sample_retprobe",
              "uprobes.c handle_trampoline(): regs' ip is the original return address; trace_uprobe.c "
              "__uprobe_perf_func() for is_ret_probe(): vaddr[0] = the function, vaddr[1] = the return address, "
              "SIZEOF_TRACE_ENTRY(true) = 24") {
  const std::vector<SampleRecord> samples = ProbeSamples(ProbeFunction(ExecuteTargetAddress(), 1), 4);
  ASSERT_EQ(samples.size(), 4u) << "one sample per return at sample_period 1";
  for (const SampleRecord& s : samples) {
    ASSERT_TRUE(s.raw.has_value());
    EXPECT_EQ(s.raw->size(), 28u);
    EXPECT_EQ(RawWord(*s.raw, 8), ExecuteTargetAddress()) << "vaddr[0]: the probed function";
    EXPECT_EQ(RawWord(*s.raw, 16), s.ip.value_or(0)) << "vaddr[1] is the sample's ip: the return address";
    EXPECT_NE(s.ip.value_or(0), ExecuteTargetAddress()) << "the sample is taken in the caller, not the function";
    // The caller is the workload runner, linked into this binary with the function.
    ASSERT_OK_AND_ASSIGN(FileLocation caller, FileLocationOf(s.ip.value_or(0)));
    ASSERT_OK_AND_ASSIGN(FileLocation callee, FileLocationOf(ExecuteTargetAddress()));
    EXPECT_EQ(caller.inode, callee.inode) << "return address " << std::hex << s.ip.value_or(0) << " is in "
                                          << caller.path << ", not in " << callee.path;
  }
}

}  // namespace
}  // namespace perftest
