// How MockBackend's syscalls fail: Result::Failure with the call as made and
// the model's reason, "perf_event_open(...) = -EINVAL [mock: why]". Internal
// to mocks/ (mock_backend.cc, mock_open.cc, mock_ioctl.cc).
#pragma once

#include <fmt/format.h>

#include <string>

#include "harness/result.h"
#include "mocks/internal/mock_event.h"

namespace perftest::mock {

// The call as made, plus the model's reason when it fails: "perf_event_open(...) [mock: why]".
inline std::string WithWhy(const std::string& call, const std::string& why) {
  return why.empty() ? call : fmt::format("{} [mock: {}]", call, why);
}

template <typename T>
Result<T> Fail(int err, const CallDescription& call, const std::string& why) {
  return Result<T>::Failure(err, WithWhy(call.str(), why));
}

// perf_event_set_clock(): events compare by clock; no clockid means local_clock().
inline int ClockOf(const MockEvent& ev) { return ev.attr.use_clockid ? ev.attr.clockid : -1; }

}  // namespace perftest::mock
