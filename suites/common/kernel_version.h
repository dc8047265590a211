// The kernel version a case's rule depends on, for the few behaviours that
// changed between kernels and cannot be probed: the case then checks the rule
// of the kernel it runs on (each branch cites the commit that changed it).
//
//   if (KernelBefore(backend(), 6, 2)) { ... the old rule ... } else { ... the new one ... }
//
// On the kernel backend the version is the running kernel's (uname release, as
// KernelBackend::Machine().description gives it: "Linux 6.1.0-57-arm64 aarch64").
// The mock models the newest kernel its profiles describe (Linux 6.18), so
// KernelBefore() is false there for every version a case asks about.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "harness/backend.h"

namespace perftest {

// {major, minor} of the running kernel; nullopt on the mock or when the
// description has no "Linux X.Y".
inline std::optional<std::pair<int, int>> RunningKernelVersion(Backend& backend) {
  if (backend.kind() != "kernel") return std::nullopt;
  int major = 0, minor = 0;
  if (std::sscanf(backend.Machine().description.c_str(), "Linux %d.%d", &major, &minor) != 2) return std::nullopt;
  return std::make_pair(major, minor);
}

// Whether the running kernel is older than major.minor (false on the mock and
// when the version is unknown: the newest rule applies).
inline bool KernelBefore(Backend& backend, int major, int minor) {
  const std::optional<std::pair<int, int>> v = RunningKernelVersion(backend);
  return v && *v < std::make_pair(major, minor);
}

// "6.1" for messages; "unknown" when there is none.
inline std::string RunningKernelVersionString(Backend& backend) {
  const std::optional<std::pair<int, int>> v = RunningKernelVersion(backend);
  return v ? std::to_string(v->first) + "." + std::to_string(v->second) : std::string("unknown");
}

}  // namespace perftest
