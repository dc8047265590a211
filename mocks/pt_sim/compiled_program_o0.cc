// CompiledProgramO0(): the functions of compiled_functions.inc at -O0.
#include <cstdint>
#include <vector>

#include "mocks/pt_sim/compiled_program.h"

#define PTSIM_SECTION "ptsim_code_o0"
#define PTSIM_SECTION_START __start_ptsim_code_o0
#define PTSIM_SECTION_STOP __stop_ptsim_code_o0
#define PTSIM_FN(name) ptsim_o0_##name
#define PTSIM_PROGRAM CompiledProgramO0
#include "mocks/pt_sim/compiled_functions.inc"
