#include "suites/common/hardware.h"

#include <fmt/format.h>

#include <cerrno>

namespace perftest {
namespace {

Result<int> OpenAndClose(Backend& backend, perf_event_attr attr) {
  Result<int> fd = backend.PerfEventOpen(&attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd.ok()) (void)backend.Close(*fd);
  return fd;
}

}  // namespace

std::optional<std::pair<SkipClass, std::string>> NoHardwareFor(Backend& backend, perf_event_attr attr) {
  Result<int> fd = OpenAndClose(backend, attr);
  if (fd.ok()) return std::nullopt;
  const bool excludes = attr.exclude_user || attr.exclude_kernel || attr.exclude_hv || attr.exclude_idle ||
                        attr.exclude_host || attr.exclude_guest;
  if (fd.error() == EINVAL && excludes) {
    perf_event_attr plain = attr;
    plain.exclude_user = plain.exclude_kernel = plain.exclude_hv = plain.exclude_idle = 0;
    plain.exclude_host = plain.exclude_guest = 0;
    Result<int> again = OpenAndClose(backend, plain);
    if (again.ok() || again.error() == EACCES || again.error() == EPERM) {
      return std::make_pair(SkipClass::kUnsupported,
                            fmt::format("the core PMU cannot filter privilege levels: exclude_kernel/exclude_hv "
                                        "is EINVAL and the same event without them {} (PERF_PMU_CAP_NO_EXCLUDE, "
                                        "e.g. the RISC-V SBI PMU without Sscofpmf)",
                                        again.ok() ? "opens" : "is refused only for permission"));
    }
    return std::nullopt;
  }
  std::optional<SkipClass> c = UnavailableClass(fd.error());
  if (!c) return std::nullopt;
  if (*c == SkipClass::kUnsupported) {
    return std::make_pair(*c, fmt::format("no hardware PMU: PERF_TYPE_HARDWARE returns {}", ErrnoName(fd.error())));
  }
  return std::make_pair(*c, fmt::format("PERF_TYPE_HARDWARE returns {}: needs CAP_PERFMON or a lower "
                                        "perf_event_paranoid", ErrnoName(fd.error())));
}

}  // namespace perftest
