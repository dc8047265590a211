// GeneratorParams for the machine the kernel backend runs on: which of its
// PMUs are safe to open random events on, whether it has a hardware PMU, a
// few tracepoint ids, its sysctls.
//
//   std::unique_ptr<Backend> kernel = MakeKernelBackend();
//   GeneratorParams params = HostGeneratorParams(*kernel);
//
// Safe PMUs (fuzzed): software, tracepoint, breakpoint, uprobe, msr, power —
// counting or sampling on them cannot raise NMIs, a random uprobe path
// pointer only makes the kernel fail to copy it, and the uprobe path the
// generator names (GeneratorParams::uprobe_path, a file this creates in /tmp)
// is a file no process maps, so a uprobe on it plants no breakpoint. Every other PMU the host
// lists (cpu, cpu_core, intel_pt, armv8_pmuv3_0, uncore_*, kprobe — a random
// kprobe_addr would plant a probe — ...) goes to avoid_types and is never
// opened. PERF_TYPE_HARDWARE/HW_CACHE/RAW are
// generated only when opening a counting cycles event for this task fails with
// ENOENT (no hardware PMU: a VM like the development one).
#pragma once

#include <string>
#include <vector>

#include "fidelity/generator.h"
#include "harness/backend.h"

namespace perftest::fidelity {

GeneratorParams HostGeneratorParams(Backend& kernel);

// Tracepoint ids from tracefs for a few well-known events, sorted; empty when
// tracefs is not mounted or not readable.
std::vector<uint64_t> ReadTracepointIds();

// Whether a PMU with sysfs name `name` is safe to fuzz (see above).
bool IsSafePmu(const std::string& name);

}  // namespace perftest::fidelity
