// libipt's instruction-flow decoder (pt_insn_decoder, Debian libipt-dev
// 2.0.5) over a trace and its code image: the reference the generator's
// ground truth is checked against. Tests only (DESIGN.md "Dependencies").
//
//   pt_sim::LibiptFlow flow = pt_sim::DecodeFlowWithLibipt(trace, truth);
//   EXPECT_THAT(flow.errors, IsEmpty());
//   EXPECT_EQ(flow.ips, truth.TracedIps());
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mocks/pt_sim/ground_truth.h"

namespace perftest::pt_sim {

struct LibiptEvent {
  int type = 0;              // enum pt_event_type
  uint64_t insns_before = 0; // instructions reported before the event
  uint64_t ip = 0;           // the event's IP where it has one (0 if suppressed)
  uint64_t payload = 0;      // ptev_ptwrite: the payload
  std::string ToString() const;
};

struct LibiptFlow {
  std::vector<uint64_t> ips;           // every instruction pt_insn_next reported, in order
  std::vector<uint64_t> times;         // pt_insn_time after each of them (0 where libipt has none)
  std::vector<uint32_t> cbrs;          // pt_insn_core_bus_ratio after each of them (0 where none)
  std::vector<LibiptEvent> events;     // every event pt_insn_event reported
  std::vector<std::string> errors;     // each libipt error other than the end of the trace, with its offset
  uint64_t syncs = 0;                  // successful pt_insn_sync_forward calls

  size_t CountEvents(int type) const;
  std::vector<uint64_t> PtwritePayloads() const;
};

// Decodes `trace` with libipt's instruction flow decoder, reading code from
// truth.image through pt_image_set_callback, with the clock parameters of
// truth.clock/config in pt_config (mtc_freq, nom_freq, cpuid_0x15_eax/ebx).
// Decoding restarts with pt_insn_sync_forward after an error.
LibiptFlow DecodeFlowWithLibipt(std::span<const uint8_t> trace, const GroundTruth& truth);

}  // namespace perftest::pt_sim
