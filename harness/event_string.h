// Event strings as perf writes them: "PMU/term,term=value/modifiers", each term
// encoded through the PMU's sysfs format/ files, with perf's defaults and
// perf's messages — so a suite can say `intel_pt/cyc,cyc_thresh=15/u` and get
// the perf_event_attr perf would open (or perf's error).
//
//   Result<std::vector<Pmu>> pmus = DiscoverPmus();                    // or backend.Machine().pmus
//   Result<perf_event_attr> a = ParseEventString("intel_pt//u", *pmus);
//   // a->type = intel_pt's type, a->config = perf's default config, exclude_kernel = exclude_hv = 1
//   ParseEventString("intel_pt/psb_period=15/u", *pmus).call();
//   // "... Invalid psb_period for intel_pt. Valid values are: 0-5"
//
// Sources: shared/reference/perf-intel-pt.txt "new event", "config terms";
// Documentation/ABI/testing/sysfs-bus-event_source-devices-format (format
// files "config:0-7", "config1:3", "config:0-3,32-35"); perf's PMU term
// encoding (tools/perf/util/pmu.c: a term with a format clears its bits and
// ORs the value in, low bits first across the ranges; "config=", "config1=",
// "config2=" set the word); perf's Intel PT defaults and checks
// (tools/perf/arch/x86/util/intel-pt.c intel_pt_default_config(),
// intel_pt_validate_config(), intel_pt_val_config_term(), intel_pt_valid_str()).
#pragma once

#include <linux/perf_event.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "harness/pmu.h"
#include "harness/result.h"

namespace perftest {

// Parses `spec` and builds the attr: MakeAttr(type, config) (disabled, size
// set), the PMU's default config first (intel_pt: IntelPtDefaultConfig()),
// then each term; modifiers u/k/h (the first one excludes the other two
// privilege levels, each names one it keeps; perf-intel-pt.txt "new event");
// for intel_pt, ValidateIntelPtConfig(). Terms: `name` (= 1), `name=value`
// (decimal or 0x hex), `config=`, `config1=`, `config2=`.
// Errors (the call string carries perf's message):
//   ENOENT "Cannot find PMU `NAME'. Missing kernel support?";
//   EINVAL a malformed string, "unknown term 'T' for pmu 'P'", "value too big
//   for format (T), maximum is M", "bad modifier 'x'", or an Intel PT value
//   the caps reject: "Invalid psb_period for intel_pt. Valid values are: 0-5".
Result<perf_event_attr> ParseEventString(std::string_view spec, const std::vector<Pmu>& pmus);

// ORs `value` into the config word(s) a sysfs format names, after clearing
// those bits. Errors: EINVAL for a malformed format, or a value wider than the
// field ("value too big for format (NAME), maximum is M").
Result<void> ApplyFormat(std::string_view name, std::string_view format, uint64_t value, perf_event_attr* attr);

// The bits a format covers in its config word (0 for a malformed format);
// `word` is set to 0, 1 or 2 (config, config1, config2).
uint64_t FormatBits(std::string_view format, int* word = nullptr);

// perf's default config for intel_pt: "tsc", ",mtc,mtc_period=P" when caps/mtc
// (P = the value nearest 3 from below in caps/mtc_periods), ",psb_period=Q"
// when caps/psb_cyc and mtc periods exist (Q likewise from caps/psb_periods),
// ",pt,branch" when format/pt and format/branch exist.
uint64_t IntelPtDefaultConfig(const Pmu& pt);

// perf's intel_pt_validate_config(): forces pt=1 when format/pt exists; checks
// cyc_thresh against caps/cycle_thresholds (valid only with caps/psb_cyc),
// mtc_period against caps/mtc_periods (with caps/mtc), psb_period against
// caps/psb_periods (with caps/psb_cyc); 0 is always valid.
// Errors: EINVAL "Invalid NAME for intel_pt. Valid values are: LIST".
Result<void> ValidateIntelPtConfig(const Pmu& pt, perf_event_attr* attr);

// intel_pt_valid_str(): the set bits of `valid` as perf lists them: runs of
// three or more as "a-b", shorter runs one by one: 0x3f -> "0-5",
// 0x249 -> "0,3,6,9", 0x3 -> "0,1".
std::string ValidValuesString(uint64_t valid);

}  // namespace perftest
