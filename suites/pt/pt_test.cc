// Conformance suite: the intel_pt PMU, capture side — its sysfs (type,
// format/, caps/), the config the kernel accepts (pt_event_valid() against
// the caps), perf's event strings and defaults, the exclusivity of the PMU and
// the trace it writes into the AUX area (PSB cadence).
//
// Every case needs the intel_pt PMU and skips as unsupported where sysfs has
// none (proved by the lookup in Machine().pmus, which is sysfs on the kernel).
// References: shared/reference/perf-intel-pt.txt ("new event", "config
// terms"); arch/x86/events/intel/pt.c (PMU_FORMAT_ATTR, pt_caps[],
// pt_event_valid(), pt_event_init()); kernel/events/core.c
// exclusive_event_installable(); tools/perf/arch/x86/util/intel-pt.c.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <string>

#include "harness/attr.h"
#include "harness/aux_buffer.h"
#include "harness/event.h"
#include "harness/event_string.h"
#include "harness/pt/packet_decoder.h"
#include "harness/syscall_matchers.h"
#include "suites/aux/pt_util.h"
#include "suites/common/suite.h"

namespace perftest {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::IsEmpty;

class Pt : public SuiteTest {
 protected:
  uint64_t Caps(const Pmu& pt, const std::string& name) {
    auto it = pt.caps.find(name);
    return it == pt.caps.end() ? 0 : std::strtoull(it->second.c_str(), nullptr, 16);
  }
  // Opens intel_pt with `config`, user space only; returns the errno (0 = opened).
  int OpenErrno(const Pmu& pt, uint64_t config) {
    perf_event_attr a = MakeAttr(pt.type, config);
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    Result<Event> ev = Event::Open(backend(), a);
    return ev.ok() ? 0 : ev.error();
  }
  // The field of `name` set to `value` in `config` (through format/).
  uint64_t With(const Pmu& pt, uint64_t config, const std::string& name, uint64_t value) {
    perf_event_attr a{};
    a.config = config;
    auto it = pt.format.find(name);
    EXPECT_NE(it, pt.format.end()) << "format/" << name;
    if (it != pt.format.end()) EXPECT_OK(ApplyFormat(name, it->second, value, &a));
    return a.config;
  }
};

PERFTEST_CASE(Pt, PmuHasDynamicType, "pt.pmu_type",
              "perf-intel-pt.txt 'new event' (the driver creates a new PMU); pt.c pt_init(): "
              "perf_pmu_register(&pt_pmu.pmu, \"intel_pt\", -1)") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  EXPECT_GE(pt->type, static_cast<uint32_t>(PERF_TYPE_MAX));
  EXPECT_EQ(OpenErrno(*pt, IntelPtDefaultConfig(*pt)), 0);
}

PERFTEST_CASE(Pt, FormatFilesAreTheDriversBitFields, "pt.format",
              "perf-intel-pt.txt 'new event' (format/ list); pt.c PMU_FORMAT_ATTR (IA32_RTIT_CTL bits)") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  const std::map<std::string, std::string> expected = {
      {"pt", "config:0"},          {"cyc", "config:1"},          {"pwr_evt", "config:4"},
      {"fup_on_ptw", "config:5"},  {"mtc", "config:9"},          {"tsc", "config:10"},
      {"noretcomp", "config:11"},  {"ptw", "config:12"},         {"branch", "config:13"},
      {"mtc_period", "config:14-17"}, {"cyc_thresh", "config:19-22"}, {"psb_period", "config:24-27"}};
  for (const auto& [name, format] : expected) {
    auto it = pt->format.find(name);
    ASSERT_NE(it, pt->format.end()) << "format/" << name << " missing";
    EXPECT_EQ(it->second, format) << "format/" << name;
  }
}

PERFTEST_CASE(Pt, CapsFilesAreHexCpuidFields, "pt.caps",
              "pt.c pt_caps[] and pt_cap_show() (\"%x\"); pt_init(): ToPA output is required") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  for (const char* name : {"max_subleaf", "cr3_filtering", "psb_cyc", "ip_filtering", "mtc", "ptwrite",
                           "power_event_trace", "topa_output", "topa_multiple_entries", "single_range_output",
                           "output_subsys", "payloads_lip", "num_address_ranges", "mtc_periods",
                           "cycle_thresholds", "psb_periods"}) {
    auto it = pt->caps.find(name);
    ASSERT_NE(it, pt->caps.end()) << "caps/" << name << " missing";
    EXPECT_FALSE(it->second.empty());
    EXPECT_EQ(it->second.find_first_not_of("0123456789abcdef"), std::string::npos)
        << "caps/" << name << " = '" << it->second << "' is not lower-case hex";
  }
  EXPECT_EQ(Caps(*pt, "topa_output"), 1u) << "the driver does not load without ToPA output";
  for (const char* flag : {"psb_cyc", "mtc", "ptwrite", "power_event_trace", "ip_filtering"}) {
    EXPECT_LE(Caps(*pt, flag), 1u) << "caps/" << flag << " is a single CPUID bit";
  }
  EXPECT_LE(Caps(*pt, "num_address_ranges"), 7u);
}

PERFTEST_CASE(Pt, DefaultConfigFollowsTheDocument, "pt.default_config",
              "perf-intel-pt.txt 'new event' (intel_pt// = tsc,noretcomp=0) and 'config terms' (tsc, noretcomp, "
              "psb_period 3 or nearest lower with MTC, mtc_period 3 or nearest lower, pt, branch)") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  ASSERT_OK_AND_ASSIGN(perf_event_attr a, ParseEventString("intel_pt//u", backend().Machine().pmus));
  auto field = [&](const char* name) {
    const uint64_t bits = FormatBits(pt->format.at(name));
    return (a.config & bits) >> __builtin_ctzll(bits);
  };
  EXPECT_EQ(field("tsc"), 1u);
  EXPECT_EQ(field("noretcomp"), 0u);
  EXPECT_EQ(field("pt"), 1u);
  EXPECT_EQ(field("branch"), 1u);
  EXPECT_EQ(field("cyc"), 0u) << "CYC packets are not requested by default";
  auto nearest_below_3 = [](uint64_t valid) {
    uint64_t v = 0;
    for (uint64_t i = 0; i <= 3; ++i) {
      if (valid & (1ull << i)) v = i;
    }
    return v;
  };
  if (Caps(*pt, "mtc") && Caps(*pt, "mtc_periods")) {
    EXPECT_EQ(field("mtc"), 1u);
    EXPECT_EQ(field("mtc_period"), nearest_below_3(Caps(*pt, "mtc_periods")));
    if (Caps(*pt, "psb_cyc")) {
      EXPECT_EQ(field("psb_period"), nearest_below_3(Caps(*pt, "psb_periods") | 1));
    }
  } else {
    EXPECT_EQ(field("mtc"), 0u);
    EXPECT_EQ(field("psb_period"), 0u) << "without MTC the default psb_period is 0";
  }
  EXPECT_EQ(a.exclude_kernel, 1u);
  EXPECT_EQ(a.exclude_hv, 1u);
  EXPECT_EQ(a.exclude_user, 0u);
  // "-e intel_pt/noretcomp=0/ is the same as -e intel_pt/tsc=1,noretcomp=0/".
  ASSERT_OK_AND_ASSIGN(perf_event_attr b, ParseEventString("intel_pt/noretcomp=0/u", backend().Machine().pmus));
  ASSERT_OK_AND_ASSIGN(perf_event_attr c, ParseEventString("intel_pt/tsc=1,noretcomp=0/u", backend().Machine().pmus));
  EXPECT_EQ(b.config, a.config);
  EXPECT_EQ(c.config, a.config);
  // "to disable TSC packets use intel_pt/tsc=0/".
  ASSERT_OK_AND_ASSIGN(perf_event_attr d, ParseEventString("intel_pt/tsc=0/u", backend().Machine().pmus));
  EXPECT_EQ(d.config, a.config & ~FormatBits(pt->format.at("tsc")));
}

PERFTEST_CASE(Pt, EventStringsOpen, "pt.event_strings",
              "perf-intel-pt.txt 'new event' and 'config terms': intel_pt//u, intel_pt/tsc=1,noretcomp=0/, "
              "intel_pt/config=0x400/, intel_pt/cyc,cyc_thresh=N/, modifiers u and k") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  std::vector<std::string> specs = {"intel_pt//u", "intel_pt/tsc=1,noretcomp=0/u", "intel_pt/config=0x400/u",
                                    "intel_pt/tsc=0/u", "intel_pt/noretcomp/u", "intel_pt//k", "intel_pt//"};
  if (Caps(*pt, "psb_cyc")) {
    const uint64_t thresholds = Caps(*pt, "cycle_thresholds");
    const int highest = thresholds == 0 ? 0 : 63 - __builtin_clzll(thresholds);
    specs.push_back(fmt::format("intel_pt/cyc,cyc_thresh={}/u", highest));
  }
  for (const std::string& spec : specs) {
    Result<perf_event_attr> a = ParseEventString(spec, backend().Machine().pmus);
    ASSERT_TRUE(a.ok()) << a.ToString();
    Result<Event> ev = Event::Open(backend(), *a);
    EXPECT_THAT(ev, Succeeds()) << spec;
  }
}

PERFTEST_CASE(Pt, ConfigTermForcesPassThrough, "pt.config_term",
              "perf-intel-pt.txt 'new event' (intel_pt/config=0x400/, -vv shows config 0x400); "
              "tools/perf/arch/x86/util/intel-pt.c intel_pt_validate_config() forces pt=1") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  ASSERT_OK_AND_ASSIGN(perf_event_attr a, ParseEventString("intel_pt/config=0x400/u", backend().Machine().pmus));
  EXPECT_EQ(a.config, 0x401u);
  RecordDivergence("pt.config_term_forces_pt",
                   "perf-intel-pt.txt: 'intel_pt/config=0x400/' gives perf_event_attr config 0x400 (-vv dump)",
                   "perf since 5.x forces the pass-through term ('pt=0 doesn't make sense, forcing pt=1'): "
                   "config 0x401, so BRANCH_EN passes through as 0 and no branches are traced");
  // The kernel takes both: without pt, BRANCH_EN is implied (pt_config()).
  EXPECT_EQ(OpenErrno(*pt, 0x400), 0);
  EXPECT_EQ(OpenErrno(*pt, 0x401), 0);
}

PERFTEST_CASE(Pt, InvalidValuesGetPerfsMessage, "pt.invalid_value_message",
              "perf-intel-pt.txt 'config terms': 'Invalid psb_period for intel_pt. Valid values are: 0-5' "
              "(psb_period, mtc_period, cyc_thresh), the list from caps/") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  struct Term {
    const char* name;
    const char* caps;
    const char* supported;
  };
  int checked = 0;
  for (const Term& t : {Term{"psb_period", "psb_periods", "psb_cyc"}, Term{"mtc_period", "mtc_periods", "mtc"},
                        Term{"cyc_thresh", "cycle_thresholds", "psb_cyc"}}) {
    const uint64_t valid = (Caps(*pt, t.supported) ? Caps(*pt, t.caps) : 0) | 1;
    if (valid == 0xffff) continue;  // every value valid: nothing to reject
    uint64_t bad = 0;
    while (valid & (1ull << bad)) ++bad;
    const std::string spec = fmt::format("intel_pt/{}={}/u", t.name, bad);
    Result<perf_event_attr> a = ParseEventString(spec, backend().Machine().pmus);
    EXPECT_THAT(a, FailsWithErrno(EINVAL)) << spec;
    const std::string message =
        fmt::format("Invalid {} for intel_pt. Valid values are: {}", t.name, ValidValuesString(valid));
    EXPECT_THAT(a.call(), HasSubstr(message));
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

PERFTEST_CASE(Pt, KernelRejectsConfigBitsOutsideTheMask, "pt.config_mask",
              "pt.c pt_event_valid(): '(config & PT_CONFIG_MASK) != config' -> pt_event_init() -EINVAL") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  for (unsigned bit : {2u, 3u, 6u, 7u, 8u, 18u, 23u, 28u, 30u, 40u, 63u}) {
    EXPECT_EQ(OpenErrno(*pt, (1ull << bit) | 1), EINVAL) << "config bit " << bit;
  }
}

PERFTEST_CASE(Pt, BranchNeedsPassThrough, "pt.branch_needs_pt",
              "pt.c pt_event_valid(): BRANCH_EN without the pass-through bit (pt, config:0) -> -EINVAL; "
              "perf-intel-pt.txt 'pt', 'branch'") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  const uint64_t branch = FormatBits(pt->format.at("branch"));
  const uint64_t pass = FormatBits(pt->format.at("pt"));
  EXPECT_EQ(OpenErrno(*pt, branch), EINVAL);
  EXPECT_EQ(OpenErrno(*pt, branch | pass), 0);
  EXPECT_EQ(OpenErrno(*pt, pass), 0) << "branch=0 with pt: branch tracing off";
}

PERFTEST_CASE(Pt, PtwriteNeedsCapability, "pt.ptw",
              "pt.c pt_event_valid(): ptw/fup_on_ptw need caps/ptwrite; fup_on_ptw without ptw -> -EINVAL; "
              "perf-intel-pt.txt 'ptw', 'fup_on_ptw'") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  const uint64_t ptw = FormatBits(pt->format.at("ptw"));
  const uint64_t fup = FormatBits(pt->format.at("fup_on_ptw"));
  const uint64_t base = FormatBits(pt->format.at("pt")) | FormatBits(pt->format.at("branch"));
  if (Caps(*pt, "ptwrite")) {
    EXPECT_EQ(OpenErrno(*pt, base | ptw), 0);
    EXPECT_EQ(OpenErrno(*pt, base | ptw | fup), 0);
    EXPECT_EQ(OpenErrno(*pt, base | fup), EINVAL) << "fup_on_ptw without ptw";
  } else {
    EXPECT_EQ(OpenErrno(*pt, base | ptw), EINVAL);
    EXPECT_EQ(OpenErrno(*pt, base | fup), EINVAL);
  }
}

PERFTEST_CASE(Pt, PowerEventsNeedCapability, "pt.pwr_evt",
              "pt.c pt_event_valid(): pwr_evt needs caps/power_event_trace; perf-intel-pt.txt 'pwr_evt'") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  const uint64_t base = FormatBits(pt->format.at("pt")) | FormatBits(pt->format.at("branch"));
  EXPECT_EQ(OpenErrno(*pt, base | FormatBits(pt->format.at("pwr_evt"))),
            Caps(*pt, "power_event_trace") ? 0 : EINVAL);
}

PERFTEST_CASE(Pt, PeriodsAreCheckedAgainstCaps, "pt.period_caps",
              "pt.c pt_event_valid(): psb_period and cyc_thresh (0 always allowed) against caps/psb_periods and "
              "caps/cycle_thresholds with caps/psb_cyc; mtc_period (0 included) against caps/mtc_periods with caps/mtc") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  const uint64_t base = FormatBits(pt->format.at("pt")) | FormatBits(pt->format.at("branch"));
  const bool psb_cyc = Caps(*pt, "psb_cyc") != 0;
  for (uint64_t v = 0; v < 16; ++v) {
    const bool psb_ok = v == 0 ? true : psb_cyc && (Caps(*pt, "psb_periods") & (1ull << v));
    // Any psb_period bits, even 0, go through the psb_cyc check only when set: 0 sets none.
    EXPECT_EQ(OpenErrno(*pt, With(*pt, base, "psb_period", v)), psb_ok ? 0 : EINVAL) << "psb_period=" << v;
    const bool cyc_ok = psb_cyc && (v == 0 || (Caps(*pt, "cycle_thresholds") & (1ull << v)));
    EXPECT_EQ(OpenErrno(*pt, With(*pt, base | FormatBits(pt->format.at("cyc")), "cyc_thresh", v)), cyc_ok ? 0 : EINVAL)
        << "cyc,cyc_thresh=" << v;
    const bool mtc_ok = Caps(*pt, "mtc") && (Caps(*pt, "mtc_periods") & (1ull << v));
    EXPECT_EQ(OpenErrno(*pt, With(*pt, base | FormatBits(pt->format.at("mtc")), "mtc_period", v)), mtc_ok ? 0 : EINVAL)
        << "mtc,mtc_period=" << v;
  }
}

PERFTEST_CASE(Pt, OneEventPerContext, "pt.exclusive",
              "kernel/events/core.c exclusive_event_installable(): PERF_PMU_CAP_EXCLUSIVE (pt.c pt_init()) -> -EBUSY") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  const uint64_t config = IntelPtDefaultConfig(*pt);
  perf_event_attr a = MakeAttr(pt->type, config);
  a.exclude_kernel = 1;
  ASSERT_OK_AND_ASSIGN(Event first, Event::Open(backend(), a));
  EXPECT_THAT(Event::Open(backend(), a), FailsWithErrno(EBUSY));
  ASSERT_OK(first.Close());
  EXPECT_THAT(Event::Open(backend(), a), Succeeds()) << "closing the first frees the context";
}

PERFTEST_CASE(Pt, PsbCadenceFollowsPsbPeriod, "pt.psb_period_cadence",
              "perf-intel-pt.txt 'psb_period': about 2^(value+11) trace bytes between PSB packets") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  const uint64_t base = FormatBits(pt->format.at("pt")) | FormatBits(pt->format.at("branch")) |
                        FormatBits(pt->format.at("tsc"));
  const uint64_t psb_period = (Caps(*pt, "psb_cyc") && (Caps(*pt, "psb_periods") & 2)) ? 1 : 0;
  perf_event_attr a = PtUserAttr(*pt, With(*pt, base, "psb_period", psb_period));
  ASSERT_OK_AND_ASSIGN(PtSession s, PtSession::Open(backend(), a, 8, 128, AuxMode::kFullTrace));
  const uint64_t period = uint64_t{1} << (psb_period + 11);
  ASSERT_OK(s.event.Enable());
  // At least 32 instructions per trace byte (see suites/aux InstructionsFor()).
  ASSERT_OK(backend().RunWorkload(Workload::Instructions(32 * 6 * period + 65536)));
  ASSERT_OK(s.event.Disable());
  ASSERT_OK_AND_ASSIGN(std::vector<AuxRecord> aux, s.AuxRecords());
  ASSERT_THAT(aux, Not(IsEmpty()));
  const uint64_t head = s.aux.ReadHead();
  ASSERT_GE(head, 4 * period);
  const std::vector<std::byte> data = s.aux.CopyOut(0, std::min<uint64_t>(head, s.aux.size()));
  std::array<std::byte, 16> psb;
  for (size_t i = 0; i < psb.size(); ++i) psb[i] = std::byte{static_cast<unsigned char>(i % 2 == 0 ? 0x02 : 0x82)};
  std::vector<size_t> at;
  for (auto it = data.begin(); (it = std::search(it, data.end(), psb.begin(), psb.end())) != data.end(); ++it) {
    at.push_back(static_cast<size_t>(it - data.begin()));
  }
  ASSERT_GE(at.size(), 3u) << "fewer than 3 PSBs in " << data.size() << " bytes";
  for (size_t i = 1; i < at.size(); ++i) {
    const size_t gap = at[i] - at[i - 1];
    EXPECT_GE(gap, period) << "PSB " << i;
    EXPECT_LE(gap, period + 256) << "PSB " << i;  // the next packet boundary after the byte counter
  }
}

PERFTEST_CASE(Pt, SyscallsLeaveAndReenterUserTracing, "pt.syscall_pgd_pge",
              "perf-intel-pt.txt 'exclude_kernel' (u modifier) and Intel SDM Vol. 3C 33.4.2.4-5: leaving traced "
              "user mode (SYSCALL) gives TIP.PGD, the return TIP.PGE; the kernel is not traced") {
  PERFTEST_REQUIRE_INTEL_PT(pt);
  ASSERT_OK_AND_ASSIGN(PtSession s, PtSession::Open(backend(), PtUserAttr(*pt), 8, 128, AuxMode::kFullTrace));
  constexpr uint64_t kCalls = 20;
  ASSERT_OK(s.event.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::Instructions(20000)));
  ASSERT_OK(backend().RunWorkload(Workload::Syscalls(kCalls)));
  ASSERT_OK(backend().RunWorkload(Workload::Instructions(20000)));
  ASSERT_OK(s.event.Disable());
  ASSERT_OK_AND_ASSIGN(std::vector<AuxRecord> aux, s.AuxRecords());
  ASSERT_THAT(aux, Not(IsEmpty()));
  for (const AuxRecord& r : aux) EXPECT_EQ(r.flags & PERF_AUX_FLAG_TRUNCATED, 0u) << DescribeAuxFlags(r.flags);
  const std::vector<std::byte> raw = s.aux.CopyOut(0, s.aux.ReadHead());
  const std::span<const uint8_t> trace(reinterpret_cast<const uint8_t*>(raw.data()), raw.size());
  pt::PacketDecoder dec(trace);
  ASSERT_OK(dec.SyncForward());
  size_t pgd = 0, pge = 0;
  pt::Packet p;
  int err = 0;
  while ((err = dec.Next(p)) == 0) {
    if (p.type == pt::PacketType::kTipPgd) ++pgd;
    if (p.type == pt::PacketType::kTipPge) ++pge;
  }
  EXPECT_EQ(err, ENODATA) << "decode error at offset " << dec.offset();
  // Each system call leaves user mode and comes back; interrupts add pairs.
  EXPECT_GE(pgd, kCalls);
  EXPECT_GE(pge, kCalls);
}

}  // namespace
}  // namespace perftest
