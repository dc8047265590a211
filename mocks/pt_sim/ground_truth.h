// What really happened in a simulated run (generator.h): every executed
// instruction and whether the trace covers it, every branch outcome, every
// PTWRITE, the asynchronous events, the clock, the code image and the config.
// A decoder under test must reproduce TracedIps() from the trace bytes and
// the image alone.
//
//   const pt_sim::GroundTruth& truth = generator.truth();
//   std::vector<uint64_t> expected = truth.TracedIps();
//   RETURN_IF_ERROR(pt_sim::WriteGroundTruthFile(truth, "run.truth.json"));
//
// File format (WriteGroundTruthFile / ReadGroundTruthFile): one JSON object,
// integers as JSON numbers, addresses as JSON numbers (uint64), byte strings
// as lowercase hex:
//   {
//     "format": "perftest-pt-sim-ground-truth", "version": 1,
//     "program": "NAME",
//     "config": {"attr_config": N, "pt": B, "cyc": B, ..., "psb_period": N},  // PtConfig fields
//     "clock": {"cbr": N, "ctc_eax": N, "ctc_ebx": N, "tsc_start": N, "tsc_end": N},
//     "cr3": N,
//     "image": [{"address": N, "name": S, "bytes": HEX}, ...],
//     "trace_size": N,                        // bytes of trace written
//     "insns": [[ip, length, traced, branch_class, tsc, cycles], ...],  // in execution
//              // order; traced 0/1; branch_class as pt::BranchClassName(); tsc: the
//              // TSC when it started; cycles: core cycles executed before it
//     "branches": [[insn_index, taken, target], ...],       // every cond-jump, indirect
//              // jump/call, return and far transfer; taken 0/1; target = next IP
//     "ptwrites": [[insn_index, payload, bytes, traced], ...],
//     "events": [[kind, insn_index, ip, trace_offset, traced], ...] // kind as EventKindName()
//   }
// insn_index in branches/ptwrites/events indexes "insns"; an event's
// insn_index is the instruction it happened before (== insns.size() at the end).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "harness/pt/insn.h"
#include "harness/result.h"
#include "mocks/pt_sim/config.h"
#include "mocks/pt_sim/image.h"

namespace perftest::pt_sim {

struct InsnRecord {
  uint64_t ip = 0;
  uint8_t length = 0;
  pt::BranchClass branch = pt::BranchClass::kNone;
  bool traced = false;  // a decoder of the trace sees it (tracing on, not lost to an overflow)
  uint64_t tsc = 0;     // the TSC when it started
  uint64_t cycles = 0;  // core cycles executed before it (since the run started)
  bool operator==(const InsnRecord&) const = default;
};

struct BranchRecord {
  uint64_t insn = 0;     // index into GroundTruth::insns
  bool taken = false;    // cond-jump: the outcome; other classes: always true
  uint64_t target = 0;   // the next IP (the fall-through for a not-taken cond-jump)
  bool operator==(const BranchRecord&) const = default;
};

struct PtwriteRecord {
  uint64_t insn = 0;     // the PTWRITE's index into insns
  uint64_t payload = 0;  // the operand
  uint8_t bytes = 8;     // 4 or 8
  bool traced = false;   // a PTW packet carries it (ptw, tracing on, not lost to an overflow)
  bool operator==(const PtwriteRecord&) const = default;
};

enum class EventKind : uint8_t {
  kEnable,     // TIP.PGE: tracing starts or resumes in user code
  kDisable,    // tracing stops (TIP.PGD)
  kInterrupt,  // an asynchronous exit to the kernel (FUP + TIP.PGD), resumed later
  kSyscall,    // a far transfer to the kernel (TIP.PGD), resumed after it
  kOverflowBegin,  // the internal buffer overflows: packets are lost from here
  kOverflow,   // the overflow ends: OVF (+ FUP) at this instruction
  kPower,      // a C-state entry and exit (MWAIT, PWRE, EXSTOP + FUP, PWRX)
  kPsb,        // a PSB+ starts at trace_offset
  kCbr,        // the core:bus ratio changes (a CBR packet)
  // Event Trace (config `event`) and Trigger Tracing:
  kCfe,        // a CFE packet: payload = Type | Vector << 8 | IP bit << 16 (at an interrupt, before its FUP)
  kEvd,        // an EVD packet: payload = the data (CR2 of a #PF), before its CFE
  kTrig,       // a TRIG packet: payload = TRBV | ICNT << 8 (ICNT 0: before this instruction)
};
std::string_view EventKindName(EventKind kind);  // "enable", "disable", "interrupt", ...

struct EventRecord {
  EventKind kind = EventKind::kEnable;
  uint64_t insn = 0;          // happened before insns[insn]
  uint64_t ip = 0;            // the IP of that instruction
  uint64_t trace_offset = 0;  // byte offset in the trace of the event's first packet
  bool traced = false;        // the event wrote packets a decoder sees (e.g. not a disable
                              // while already in the kernel, not an interrupt with branch=0)
  uint64_t payload = 0;       // kCfe, kEvd, kTrig: what the packet says (above)
  bool operator==(const EventRecord&) const = default;
};

// The simulated clocks, as a decoder needs them to turn timing packets into
// time: the TSC ticks once per core cycle at the nominal ratio `cbr` (at a
// current ratio R: cbr/R ticks per cycle; CBR packets give R), and while the
// core is stopped (C-states); the crystal clock (CTC: MTC, TMA) runs at
// TSC * ctc_eax / ctc_ebx (CPUID.15H: TSC/CTC = EBX/EAX).
struct ClockInfo {
  uint8_t cbr = 0;
  uint32_t ctc_eax = 1;
  uint32_t ctc_ebx = 1;
  uint64_t tsc_start = 0;
  uint64_t tsc_end = 0;
  bool operator==(const ClockInfo&) const = default;
};

struct GroundTruth {
  std::string program;
  PtConfig config;
  ClockInfo clock;
  uint64_t cr3 = 0;
  CodeImage image;
  uint64_t trace_size = 0;
  std::vector<InsnRecord> insns;
  std::vector<BranchRecord> branches;
  std::vector<PtwriteRecord> ptwrites;
  std::vector<EventRecord> events;

  bool operator==(const GroundTruth&) const = default;

  // The IPs of the traced instructions, in order: what an instruction-flow decoder must report.
  std::vector<uint64_t> TracedIps() const;
  size_t CountTraced() const;
  size_t CountEvents(EventKind kind) const;
  size_t CountTracedEvents(EventKind kind) const;  // only those with EventRecord::traced
};

nlohmann::json ToJson(const GroundTruth& truth);
// Errors: EINVAL, not a ground-truth document of this version (the message names the field).
Result<GroundTruth> GroundTruthFromJson(const nlohmann::json& json);

// Errors: EIO (with the path) when the file cannot be written or read;
// EINVAL as GroundTruthFromJson, or malformed JSON.
Result<void> WriteGroundTruthFile(const GroundTruth& truth, const std::string& path);
Result<GroundTruth> ReadGroundTruthFile(const std::string& path);

}  // namespace perftest::pt_sim
