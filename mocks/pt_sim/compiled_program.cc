// CompiledProgram(): the functions of compiled_functions.inc at -O2.
#include "mocks/pt_sim/compiled_program.h"

#include <cstdint>
#include <vector>

#define PTSIM_SECTION "ptsim_code_o2"
#define PTSIM_SECTION_START __start_ptsim_code_o2
#define PTSIM_SECTION_STOP __stop_ptsim_code_o2
#define PTSIM_FN(name) ptsim_o2_##name
#define PTSIM_PROGRAM CompiledProgram
#include "mocks/pt_sim/compiled_functions.inc"
