// The seeded generator of call sequences for the differential fidelity check.
//
//   GeneratorParams p = HostGeneratorParams(*kernel);     // host.h; or by hand in tests
//   Sequence s = GenerateSequence(SequenceSeed(1, 0), p);  // same seed + params -> same calls
//
// A sequence opens an event first, then mixes more opens with operations on
// the events (read, ioctl, mmap, munmap, close, fcntl, poll, prctl). The attrs
// cover every field of perf_event_attr up to this build's
// sizeof(struct perf_event_attr) — valid values, edge values and fully random
// bits — and every attr.size from 0 through the VERn sizes to past the page
// with zero and non-zero tails (the kernel's own, larger struct included).
//
// Safety on a real kernel (the contract the executor relies on):
//  - pid is only this task, -1 (CPU-wide), or a task that cannot exist;
//  - attr.type is never one of GeneratorParams::avoid_types (the hardware
//    PMUs of the host: sampling them at random periods could flood the machine
//    with NMIs); PERF_TYPE_HARDWARE/HW_CACHE/RAW are generated only when the
//    host has no hardware PMU (they fail with ENOENT there);
//  - breakpoint addresses are user-space addresses;
//  - mmap lengths are at most 18 pages (1 + 16 data pages, plus a partial page);
//  - exclude_kernel is left random: where perf_event_paranoid forbids kernel
//    counting the kernel refuses the open (EACCES), which is safe too.
// sigtrap events can fire: the executor's caller must catch SIGTRAP
// (InstallSigtrapHandler(), executor.h).
#pragma once

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fidelity/call.h"
#include "fidelity/rng.h"

namespace perftest::fidelity {

// What the generator may ask for: the host's PMUs and limits. The mock side of
// a run is a function of (seed, params, profile); params come from the host.
struct GeneratorParams {
  struct PmuType {
    std::string name;  // sysfs name, e.g. "tracepoint"
    uint32_t type = 0;
  };
  // PMUs to open events on, besides "software" (always used, type 1): safe
  // ones the host has (tracepoint, breakpoint, uprobe, msr, power: host.h).
  std::vector<PmuType> pmus;
  // Types never to generate (the host's hardware PMUs).
  std::vector<uint32_t> avoid_types;
  // PERF_TYPE_HARDWARE, HW_CACHE and RAW may be generated: the host has no
  // hardware PMU, so they fail with ENOENT.
  bool generate_hardware_types = false;
  // Valid PERF_TYPE_TRACEPOINT configs (tracefs event ids).
  std::vector<uint64_t> tracepoint_ids;
  // A regular file of kUprobeTargetSize bytes that no process maps (host.cc
  // makes it), NUL-terminated and alive for the whole program: uprobe opens
  // name it in attr.config1 now and then, so that some succeed and the
  // operations that follow run on real uprobe events. A uprobe on a file
  // nobody maps plants no breakpoint. nullptr: uprobe paths stay random.
  const char* uprobe_path = nullptr;
  uint32_t max_sample_rate = 100000;  // perf_event_max_sample_rate, Hz
  uint32_t max_stack = 127;           // perf_event_max_stack
  size_t page_size = 4096;
};

// Size of the file GeneratorParams::uprobe_path names.
inline constexpr uint64_t kUprobeTargetSize = 64;

// The sequence `seed` names under `params`.
Sequence GenerateSequence(uint64_t seed, const GeneratorParams& params);

// One perf_event_open call (attr, pid, cpu, group_fd, flags). `prior_events`
// is the number of opens earlier in the sequence (group_fd may name one).
// About a third of the calls (two thirds of first opens) are made plausible —
// a software event with benign fields — so that later operations have an
// event; the rest keep every field random.
OpenCall GenerateOpen(Rng& rng, const GeneratorParams& params, size_t prior_events);

// The name of the PMU `type` is, per `params`: "software", "tracepoint",
// "breakpoint", "hardware", "hw_cache", "raw", a host PMU's sysfs name, or
// "unlisted" for a type no sysfs PMU has. (Unlisted is not always absent: the
// kernel's cpu_clock and task_clock PMUs register a type without a sysfs entry,
// 6 and 7 on the development VM.)
std::string PmuNameForType(uint32_t type, const GeneratorParams& params);

// Coverage of generated attrs (the generator's own test): for each field of
// perf_event_attr, the OR of its values and of its complements, so that a bit
// set in both means the field had that bit both set and clear at least once.
struct FieldCoverage {
  std::string field;  // UAPI name, e.g. "sample_type", "flags" (the bitfield word)
  unsigned bits = 0;  // width of the field
  uint64_t seen_set = 0;
  uint64_t seen_clear = 0;
  // Bits of the field never set (or never clear), as a mask.
  uint64_t never_set() const;
  uint64_t never_clear() const;
};
// One entry per field of this build's perf_event_attr, in declaration order.
std::vector<FieldCoverage> NewCoverage();
// Adds `attr` to `coverage` (from NewCoverage()).
void AddCoverage(const perf_event_attr& attr, std::vector<FieldCoverage>* coverage);

}  // namespace perftest::fidelity
