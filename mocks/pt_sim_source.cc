#include "mocks/pt_sim_source.h"

#include "mocks/event_output.h"
#include "mocks/pt_sim/config.h"

namespace perftest::mock {

Result<pt_sim::Program> MockTaskProgram() {
  pt_sim::Assembler a(kUserSpinIp & ~uint64_t{0xfff}, "mock-task");
  auto outer = a.NewLabel(), inner = a.NewLabel(), skip = a.NewLabel(), func = a.NewLabel(), ret = a.NewLabel();
  auto tail_a = a.NewLabel(), tail_b = a.NewLabel(), no_syscall = a.NewLabel(), sys_stub = a.NewLabel();
  a.Bind(outer);
  a.MovOp();
  a.Bind(inner);
  a.AluOp();
  a.AluOp();
  a.Jcc(0x5, inner, /*short_form=*/true);  // jne inner
  a.Call(func);
  a.Jcc(0x4, skip);                        // je skip
  a.Ptwrite();
  a.Bind(skip);
  a.Nop(3);
  a.JccGate(0x5, no_syscall, /*short_form=*/true);  // jne no_syscall: falls through when a syscall is due
  a.Call(sys_stub);
  a.Bind(no_syscall);
  a.JmpIndirect({tail_a, tail_b});         // jmp *%rax: a TIP
  a.Bind(tail_a);
  a.AluOp();
  a.Jmp(outer);
  a.Bind(tail_b);
  a.MovOp();
  a.Jmp(outer, /*short_form=*/true);
  a.Bind(func);
  a.MovOp();
  a.Jcc(0x5, ret, /*short_form=*/true);
  a.AluOp();
  a.Bind(ret);
  a.Ret();
  a.Bind(sys_stub);
  a.MovOp();
  a.Syscall();
  a.Ret();
  return a.Finish();
}

PtSimSource::PtSimSource(pt_sim::Program program, const perf_event_attr& attr, bool record_insns)
    : gen_(std::move(program), pt_sim::PtConfig::FromAttrConfig(attr.config), [&] {
        pt_sim::RunOptions o;
        o.exclude_user = attr.exclude_user;
        o.interrupt_every = kMockPtInterruptEvery;
        o.power_every = kMockPtPowerEvery;  // used with pwr_evt only
        o.record_insns = record_insns;
        return o;
      }()) {}

std::vector<uint8_t> PtSimSource::Instructions(uint64_t n) {
  if (!gen_.finished()) (void)gen_.Run(n);
  return gen_.TakeTrace();
}

std::vector<uint8_t> PtSimSource::Syscalls(uint64_t n) {
  const uint64_t want = gen_.far_transfers() + n;
  gen_.RequestGate(n);
  // One loop iteration passes the gate; the syscall follows within a few
  // instructions. Bounded in case the program stops.
  for (uint64_t ran = 0; gen_.far_transfers() < want && !gen_.finished() && ran < (n + 1) * 4096; ran += 16) {
    (void)gen_.Run(16);
  }
  return gen_.TakeTrace();
}

void PtSimSource::Enable() { gen_.Enable(); }

std::vector<uint8_t> PtSimSource::Disable() {
  gen_.Disable();
  return gen_.TakeTrace();
}

std::shared_ptr<PtTraceSource> MakePtSimSource(const perf_event_attr& attr, bool record_insns) {
  static const Result<pt_sim::Program> program = MockTaskProgram();
  if (!program.ok()) return nullptr;
  return std::make_shared<PtSimSource>(*program, attr, record_insns);
}

PtTraceModel PtSimTraceModel(bool record_insns) {
  return [record_insns](const perf_event_attr& attr) { return MakePtSimSource(attr, record_insns); };
}

}  // namespace perftest::mock
