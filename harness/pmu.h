// PMU discovery from sysfs: /sys/bus/event_source/devices/<pmu>/{type,format/*,caps/*,events/*}.
//
//   Result<std::vector<Pmu>> pmus = DiscoverPmus();           // the real sysfs
//   Result<std::vector<Pmu>> fake = DiscoverPmus("/tmp/sysfs"); // a tree a test made
//   const Pmu* sw = FindPmu(*pmus, "software");  // sw->type == PERF_TYPE_SOFTWARE
//
// Source: Documentation/ABI/testing/sysfs-bus-event_source-devices-{format,events,caps}.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "harness/result.h"

namespace perftest {

struct Pmu {
  std::string name;   // directory name, e.g. "software", "cpu", "intel_pt"
  uint32_t type = 0;  // contents of `type`: the value for perf_event_attr.type
  // File name -> contents (trailing newline stripped).
  std::map<std::string, std::string> format;  // e.g. "event" -> "config:0-7"
  std::map<std::string, std::string> caps;    // e.g. "max_precise" -> "0"
  std::map<std::string, std::string> events;  // e.g. "cpu-cycles" -> "event=0x3c"
};

inline constexpr std::string_view kSysfsPmuRoot = "/sys/bus/event_source/devices";

// Reads every PMU directory under `root`, sorted by name. A PMU without a
// readable numeric `type` is skipped (it cannot be opened). Errors: the errno
// of opening `root` (ENOENT when sysfs is not mounted, EACCES).
Result<std::vector<Pmu>> DiscoverPmus(std::string_view root = kSysfsPmuRoot);

// nullptr when absent.
const Pmu* FindPmu(const std::vector<Pmu>& pmus, std::string_view name);

// One format/<term> file: the perf_event_attr field the term goes to and its
// bits, e.g. "config:0-7" -> {"config", {{0, 7}}}, "config1:0,8-15" ->
// {"config1", {{0, 0}, {8, 15}}} (sysfs-bus-event_source-devices-format:
// "<field>:<bit>[-<bit>][,<bit>[-<bit>]]...", fields config, config1,
// config2, config3).
struct PmuFormat {
  std::string field;
  std::vector<std::pair<int, int>> ranges;  // [lo, hi] inclusive, 0 <= lo <= hi <= 63
  // The bits as a mask of the field.
  uint64_t Mask() const;
};
// Errors: EINVAL for any other syntax, an unknown field or a bit outside 0..63.
Result<PmuFormat> ParseFormat(std::string_view text);

// The config words an events/<alias> string sets through `pmu`'s formats,
// e.g. "event=0x3c,umask=0x01" -> config = 0x13c (sysfs-bus-event_source-
// devices-events: comma-separated "term=value" with hexadecimal or decimal
// values; a bare "term" means term=1). A term's value is spread over its
// format's bits from the lowest up, as perf(1) does (pmu_format_value()).
struct EventConfig {
  uint64_t config = 0, config1 = 0, config2 = 0, config3 = 0;
};
// Errors: EINVAL bad syntax or a format that does not parse; ENOENT a term
// the PMU has no format for; ERANGE a value wider than the term's bits.
Result<EventConfig> ResolveEventAlias(const Pmu& pmu, std::string_view alias);
// Whether events/<name> is an alias rather than one of its attributes
// (<alias>.scale, .unit, .per-pkg, .snapshot).
bool IsEventAliasName(std::string_view name);

}  // namespace perftest
