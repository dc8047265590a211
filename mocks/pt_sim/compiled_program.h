// A simulated program made of real compiled code: a few functions of this
// test binary, placed in their own ELF section (one per optimization level) and copied out
// at their own addresses, so the generator runs what the compiler produced
// (prologues, loops, recursion, an indirect call through a function pointer).
#pragma once

#include "mocks/pt_sim/program.h"

namespace perftest::pt_sim {

// The program: entry ptsim_o2_main, the image is the whole ptsim_code_o2
// section (compiled with -O2), indirect branches pick among its functions.
Program CompiledProgram();
// The same functions compiled with -O0 (section ptsim_code_o0).
Program CompiledProgramO0();

}  // namespace perftest::pt_sim
