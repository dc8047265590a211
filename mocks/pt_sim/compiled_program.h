// A simulated program made of real compiled code: a few functions of this
// test binary, placed in their own ELF section ("ptsim_code") and copied out
// at their own addresses, so the generator runs what the compiler produced
// (prologues, loops, recursion, an indirect call through a function pointer).
#pragma once

#include "mocks/pt_sim/program.h"

namespace perftest::pt_sim {

// The program: entry ptsim_main, the image is the whole ptsim_code section,
// indirect branches pick among the section's functions.
Program CompiledProgram();

}  // namespace perftest::pt_sim
