#include "mocks/pt_sim/test_programs.h"

#include <cstdlib>

namespace perftest::pt_sim::testing {
namespace {

Program Done(Assembler& a) {
  Result<Program> p = a.Finish();
  if (!p.ok()) std::abort();  // a bug in the test program itself
  return std::move(*p);
}

}  // namespace

Program LoopsProgram() {
  Assembler a(0x401000, "loops");
  auto outer = a.NewLabel(), skip = a.NewLabel(), f1 = a.NewLabel(), f1_end = a.NewLabel();
  auto f2 = a.NewLabel(), f2b = a.NewLabel(), inner = a.NewLabel();
  a.Bind(outer);
  a.AluOp();
  a.Nop(3);
  a.Jcc(0x5, skip, /*short_form=*/true);
  a.Call(f1);
  a.Bind(skip);
  a.MovOp();
  a.Call(f2);
  a.Bind(inner);
  a.Nop(1);
  a.Jcc(0x2, inner, true);
  a.Jcc(0x4, outer);
  a.Jmp(outer);
  a.Nop(7);
  a.Bind(f1);
  a.AluOp();
  a.Jcc(0x2, f1_end, true);
  a.AluOp();
  a.Bind(f1_end);
  a.Ret();
  a.Bind(f2);
  a.Nop(5);
  a.Call(f1);
  a.Jcc(0x7, f2b);
  a.Call(f1);
  a.Bind(f2b);
  a.Ret();
  return Done(a);
}

Program DispatchProgram() {
  Assembler a(0x7f0000100000, "dispatch");
  auto top = a.NewLabel(), s = a.NewLabel(), ja = a.NewLabel(), jb = a.NewLabel();
  auto h1 = a.NewLabel(), h2 = a.NewLabel(), h3 = a.NewLabel();
  a.Bind(top);
  a.Ptwrite(true);
  a.CallIndirect({h1, h2, h3});
  a.Jcc(0x3, s, true);
  a.Syscall();
  a.Bind(s);
  a.JmpIndirect({ja, jb});
  a.Bind(ja);
  a.Ptwrite(false);
  a.Jmp(top);
  // Far away, so that TIPs need more than 16 bits.
  for (int i = 0; i < 20000; ++i) a.Nop(9);
  a.Bind(jb);
  a.AluOp();
  a.Jcc(0x8, top);
  a.Jmp(top);
  a.Bind(h1);
  a.Ret();
  a.Bind(h2);
  a.Call(h1);
  a.Ret();
  a.Bind(h3);
  a.Ptwrite(true);
  a.CallIndirect({h1, h2});
  a.Ret();
  return Done(a);
}

Program DeepProgram() {
  Assembler a(0x500000, "deep");
  auto entry = a.NewLabel(), rec = a.NewLabel(), down = a.NewLabel(), r2 = a.NewLabel();
  a.Bind(entry);
  a.Call(rec);
  a.Jmp(entry);
  a.Bind(rec);
  a.AluOp();
  a.Jcc(0x5, down);
  a.Ret();
  a.Bind(down);
  a.Call(rec);
  a.Jcc(0x1, r2, true);
  a.Nop(2);
  a.Bind(r2);
  a.Ret();
  return Done(a);
}

Program ExitProgram() {
  Assembler a(0x600000, "exit");
  auto loop = a.NewLabel(), f = a.NewLabel();
  a.Nop(4);
  a.Bind(loop);
  a.Call(f);
  a.Jcc(0x5, loop);
  a.Exit();
  a.Nop(1);
  a.Bind(f);
  a.AluOp();
  a.Ret();
  return Done(a);
}

}  // namespace perftest::pt_sim::testing
