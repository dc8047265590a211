// Test-only: small random x86-64 programs, run by a simulator that writes
// the Intel PT trace the hardware would (packet_encoder.h) and records the
// instructions executed — ground truth for the flow decoder and input for
// the libipt differential tests. Minimal on purpose: the PT generator under
// mocks/pt_sim/ (ptgen) replaces it once merged.
//
//   pt::testing::FlowTrace t = pt::testing::MakeFlowTrace({.seed = 7, .insns = 100000});
//   pt::Image image;
//   image.AddBlob(t.code_base, t.code);
//   // t.trace: PSB+ ... ; t.executed: the IP of every instruction executed while tracing
//
// What the simulated hardware does (Intel SDM Vol. 3C §33.4.1-2): one TNT
// bit per conditional branch (TNT-8 or TNT-64, flushed before any other
// control packet), TIP for indirect branches and uncompressed returns; a
// return whose target is the top of a 64-entry call stack is compressed
// (a taken TNT bit), the stack being reset at each PSB and OVF; SYSCALL
// leaves the traced (user) range: TIP.PGD with the IP suppressed, and the
// return is a TIP.PGE at the next instruction; interrupts are FUP+TIP.PGD
// (and a TIP.PGE back at the same IP) or FUP+TIP to a handler; OVF is
// followed by a FUP at the IP where tracing resumed; PSB+ (PSB, TSC, TMA,
// CBR, MODE.Exec, FUP, PSBEND) every psb_period bytes; MTC and CYC packets
// sprinkled between the others.
#pragma once

#include <cstdint>
#include <vector>

namespace perftest::pt::testing {

struct FlowTraceOptions {
  uint64_t seed = 1;
  uint64_t insns = 100000;        // instructions to execute (about)
  uint64_t code_base = 0x400000;
  uint32_t functions = 40;
  uint32_t function_insns = 40;   // instructions per function (about)
  uint32_t psb_period = 4096;     // bytes
  bool timing = true;             // MTC and CYC packets
  bool async = true;              // interrupts (FUP+TIP, FUP+TIP.PGD) and syscalls
  bool overflow = true;           // now and then an OVF
  bool indirect = true;           // indirect jumps/calls
};

struct FlowTrace {
  uint64_t code_base = 0;
  std::vector<uint8_t> code;
  std::vector<uint8_t> trace;
  std::vector<uint64_t> executed;  // IPs of the instructions executed while tracing was on
};

FlowTrace MakeFlowTrace(const FlowTraceOptions& options);

}  // namespace perftest::pt::testing
