// The mock's models for a suite that checks Intel PT traces (perftest_add_suite()
// with MOCK_PT: suite_pt, suite_aux): intel_pt events trace the simulated
// task's real program (mocks/pt_sim_source.h, library perftest_mock_pt).
#include "mocks/mock_backend.h"
#include "mocks/pt_sim_source.h"

namespace perftest {

MockModels SuiteMockModels();
MockModels SuiteMockModels() { return {.pt_trace = mock::PtSimTraceModel()}; }

}  // namespace perftest
