#include "mocks/free_running_pmu.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>

namespace perftest::mock {
namespace {

// arch/x86/events/msr.c enum perf_msr_id: TSC .. THERM, PERF_MSR_EVENT_MAX.
constexpr uint64_t kPerfMsrEventMax = 8;
// arch/x86/events/rapl.c: RAPL_EVENT_MASK, NR_RAPL_DOMAINS (pp0, pkg, dram, pp1, psys).
constexpr uint64_t kRaplEventMask = 0xff;
constexpr uint64_t kNrRaplDomains = 5;

}  // namespace

std::set<uint64_t> ListedEventConfigs(const Pmu& pmu) {
  std::set<uint64_t> out;
  for (const auto& [name, value] : pmu.events) {
    const size_t at = value.find("event=");
    if (at == std::string::npos) continue;
    out.insert(std::strtoull(value.c_str() + at + 6, nullptr, 0));
  }
  return out;
}

int MsrEventInit(const perf_event_attr& attr, const Pmu& pmu, std::string* why) {
  if (attr.sample_period != 0) {  // also sample_freq (the union)
    *why = "msr events count only (msr_event_init(): 'no sampling')";
    return EINVAL;
  }
  if (attr.config >= kPerfMsrEventMax || ListedEventConfigs(pmu).count(attr.config) == 0) {
    *why = fmt::format("msr config {:#x} is no MSR the probe found (msr_event_init(): msr_mask)", attr.config);
    return EINVAL;
  }
  return 0;
}

int RaplEventInit(const perf_event_attr& attr, int cpu, const Pmu& pmu, std::string* why) {
  if (attr.config & ~kRaplEventMask) {
    *why = fmt::format("config {:#x} has bits outside RAPL_EVENT_MASK", attr.config);
    return EINVAL;
  }
  if (cpu < 0) {
    *why = "RAPL events are per CPU (rapl_pmu_event_init(): event->cpu < 0)";
    return EINVAL;
  }
  if (attr.config == 0 || attr.config > kNrRaplDomains || ListedEventConfigs(pmu).count(attr.config) == 0) {
    *why = fmt::format("config {:#x} is no RAPL domain this machine has (rapl_pmu_event_init(): cntr_mask)", attr.config);
    return EINVAL;
  }
  if (attr.sample_period != 0) {
    *why = "RAPL events count only (rapl_pmu_event_init(): 'no sampling')";
    return EINVAL;
  }
  return 0;
}

}  // namespace perftest::mock
