#include "mocks/mock_control.h"

#include <memory>
#include <utility>

#include "mocks/internal/mock_backend_impl.h"

namespace perftest {

MockWithControl MakeMockBackendWithControl(MockProfile profile, MockModels models) {
  auto mock = std::make_unique<mock::MockBackend>(std::move(profile), std::move(models));
  MockControl* control = mock.get();
  return {std::move(mock), control};
}

}  // namespace perftest
