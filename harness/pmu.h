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

}  // namespace perftest
