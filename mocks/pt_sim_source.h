// The mock's PT model (library perftest_mock_pt, MockModels::pt_trace): the
// intel_pt trace of the mock's simulated task from mocks/pt_sim: the user
// code the Spin and Instructions workloads run is a real x86-64 loop program
// (MockTaskProgram()), executed by pt_sim's seeded branch oracle, and the PT
// event writes the packets pt_sim's generator produces for its config — real
// Intel PT that libipt decodes, with the ground truth of the run.
// Config: every attr.config bit pt_sim's PtConfig knows (pt, tsc, mtc,
// mtc_period, cyc, cyc_thresh, noretcomp, psb_period, branch, ptw,
// fup_on_ptw, pwr_evt); exclude_user: MockBackend::PtInstructions() never runs
// the program (nothing traced); the kernel is never traced (with
// exclude_kernel=0 too: the model has no kernel code; a transfer to the
// kernel is a TIP.PGD with the IP suppressed either way).
// What interrupts the program (RunOptions of the generator):
//  - interrupts (timer, IPIs): about one per kMockPtInterruptEvery
//    instructions, FUP(IP) + TIP.PGD, then MODE.Exec + TIP.PGE on the return;
//  - with pwr_evt, a C-state entry about every kMockPtPowerEvery
//    instructions: MWAIT, PWRE, EXSTOP(IP) + FUP, PWRX;
//  - system calls (Workload::Syscalls, MockBackend::PtSyscalls()): the
//    program's gate falls through into `call sys_stub`, whose SYSCALL gives
//    TIP.PGD, and the return TIP.PGE (Syscalls()).
// Every one is in the ground truth (events: interrupt, power, syscall).
// The truth is the simulated hardware's: in full-trace mode a TRUNCATED AUX
// area holds only a prefix of the trace_size bytes it describes (the event
// stops within 1024 instructions of the fill point; mocks/mock_aux.cc).
//
//   std::unique_ptr<Backend> b = MakeMockBackend(*profile, {.pt_trace = mock::PtSimTraceModel()});
//   // or MakeMockBackendWithControl(...): MockControl::PtGroundTruth(pt_fd) is
//   // then this source's truth (PtSimSource::ground_truth()).
//
// Linked only by the binaries that want it (suite_pt, suite_aux, fidelity,
// tools/pt and the mock's PT tests): it brings mocks/pt_sim, the flow layer
// of harness/pt and libzydis.
#pragma once

#include <linux/perf_event.h>

#include <memory>

#include "harness/backend.h"
#include "harness/result.h"
#include "mocks/intel_pt_pmu.h"
#include "mocks/pt_sim/generator.h"
#include "mocks/pt_sim/program.h"

namespace perftest::mock {

// The simulated task's user code (at kUserSpinIp's page): nested loops, a
// call, conditional branches of both widths, a PTWRITE, an indirect jump and
// a gate (Program::gates) before `call sys_stub` (mov; syscall; ret); never
// exits.
Result<pt_sim::Program> MockTaskProgram();

// A PtSimSource over MockTaskProgram() for an intel_pt event (nullptr if the
// program cannot be assembled, which is a bug: the mock then falls back to
// PtTraceFiller).
// record_insns: pt_sim::RunOptions::record_insns (false: a long run whose
// per-instruction truth is not kept; `perftest pt record --no-truth`).
std::shared_ptr<PtTraceSource> MakePtSimSource(const perf_event_attr& attr, bool record_insns = true);

// MakePtSimSource as the backend's PT model (MockModels::pt_trace).
PtTraceModel PtSimTraceModel(bool record_insns = true);

inline constexpr uint64_t kMockPtInterruptEvery = 20000;  // instructions, mean
inline constexpr uint64_t kMockPtPowerEvery = 25000;      // instructions, mean (pwr_evt)

class PtSimSource : public PtTraceSource {
 public:
  PtSimSource(pt_sim::Program program, const perf_event_attr& attr, bool record_insns = true);
  std::vector<uint8_t> Instructions(uint64_t n) override;
  std::vector<uint8_t> Syscalls(uint64_t n) override;
  void Enable() override;
  std::vector<uint8_t> Disable() override;
  const pt_sim::GroundTruth& truth() { return gen_.truth(); }
  const pt_sim::GroundTruth* ground_truth() override { return &gen_.truth(); }

 private:
  pt_sim::PtGenerator gen_;
};

}  // namespace perftest::mock
