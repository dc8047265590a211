// Hand-assembled programs for the pt_sim tests (assembler in program.h).
#pragma once

#include "mocks/pt_sim/program.h"

namespace perftest::pt_sim::testing {

// Nested loops and direct calls; conditional branches of both widths. Never exits.
Program LoopsProgram();
// Indirect CALL/JMP dispatch, PTWRITE (4 and 8 bytes) and SYSCALL. Never exits.
Program DispatchProgram();
// A recursive chain (CALL rec while a branch is taken): deeper than the
// 64 returns a decoder can match when the oracle takes branches often.
Program DeepProgram();
// Straight code and a loop that reaches an exit point.
Program ExitProgram();

}  // namespace perftest::pt_sim::testing
