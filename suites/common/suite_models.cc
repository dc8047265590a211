// The mock's models for a suite whose cases need none beyond the core
// (mocks/mock_backend.h MockModels): perftest_add_suite() without MOCK_PT.
// Such a binary links no Intel PT flow decoder, PT generator or libzydis.
#include "mocks/mock_backend.h"

namespace perftest {

MockModels SuiteMockModels();
MockModels SuiteMockModels() { return {}; }

}  // namespace perftest
