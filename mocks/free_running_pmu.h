// The x86 PMUs over free-running MSRs that this project's VM lists besides the
// software ones: "msr" (arch/x86/events/msr.c) and "power" (RAPL,
// arch/x86/events/rapl.c). Both register with perf_pmu_register(..., -1) (a
// dynamic type, as sysfs shows it), count only (no sampling, no mode
// exclusion: PERF_PMU_CAP_NO_INTERRUPT | PERF_PMU_CAP_NO_EXCLUDE), and accept
// the configs their probe found: exactly the events/ the profile lists
// ("event=0x04"; msr_mask, rapl cntr_mask). The model opens them with the
// kernel's errno; their counts stay 0 (nothing in the model reads an MSR).
//
//   if (int err = MsrEventInit(attr, pmu, &why)) return fail(err, why);
#pragma once

#include <linux/perf_event.h>

#include <cstdint>
#include <set>
#include <string>

#include "harness/pmu.h"

namespace perftest::mock {

// The `event=` values of `pmu`'s events/ entries (the .scale/.unit files skipped).
std::set<uint64_t> ListedEventConfigs(const Pmu& pmu);

// msr_event_init(): EINVAL for a sampling event (sample_period/sample_freq),
// for config >= PERF_MSR_EVENT_MAX (8) and for a config the probe did not find.
int MsrEventInit(const perf_event_attr& attr, const Pmu& pmu, std::string* why);

// rapl_pmu_event_init(): EINVAL for config bits outside RAPL_EVENT_MASK (0xff),
// for a per-task event (cpu -1), for config 0 or past the RAPL domains, for a
// domain the probe did not find, and for a sampling event.
int RaplEventInit(const perf_event_attr& attr, int cpu, const Pmu& pmu, std::string* why);

}  // namespace perftest::mock
