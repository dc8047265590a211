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

bool Sampling(const perf_event_attr& attr) { return attr.freq ? attr.sample_freq != 0 : attr.sample_period != 0; }

// `attr` failed with EOPNOTSUPP: when the same event without sampling opens (or
// is refused only for permission), the PMU counts but has no overflow
// interrupt -- PERF_PMU_CAP_NO_INTERRUPT, refused for sampling events in
// kernel/events/core.c perf_event_open().
std::optional<std::pair<SkipClass, std::string>> NoInterrupt(Backend& backend, perf_event_attr attr) {
  attr.freq = 0;
  attr.sample_period = 0;
  attr.sample_type = 0;
  Result<int> counting = OpenAndClose(backend, attr);
  if (!counting.ok() && counting.error() != EACCES && counting.error() != EPERM) return std::nullopt;
  return std::make_pair(SkipClass::kUnsupported,
                        fmt::format("the core PMU cannot sample: a sampling event is EOPNOTSUPP and the same event "
                                    "without a period {} (PERF_PMU_CAP_NO_INTERRUPT, e.g. the RISC-V SBI PMU "
                                    "without Sscofpmf)",
                                    counting.ok() ? "counts" : "is refused only for permission"));
}

}  // namespace

std::optional<std::pair<SkipClass, std::string>> NoHardwareFor(Backend& backend, perf_event_attr attr) {
  Result<int> fd = OpenAndClose(backend, attr);
  if (fd.ok()) return std::nullopt;
  if (fd.error() == EOPNOTSUPP && Sampling(attr)) {
    if (auto why = NoInterrupt(backend, attr)) return why;
  }
  const bool excludes = attr.exclude_user || attr.exclude_kernel || attr.exclude_hv || attr.exclude_idle ||
                        attr.exclude_host || attr.exclude_guest;
  if (fd.error() == EINVAL && excludes) {
    perf_event_attr plain = attr;
    plain.exclude_user = plain.exclude_kernel = plain.exclude_hv = plain.exclude_idle = 0;
    plain.exclude_host = plain.exclude_guest = 0;
    Result<int> again = OpenAndClose(backend, plain);
    if (!again.ok() && again.error() == EOPNOTSUPP && Sampling(plain)) {
      if (auto why = NoInterrupt(backend, plain)) {
        why->second = "exclude_kernel/exclude_hv is EINVAL (PERF_PMU_CAP_NO_EXCLUDE) and " + why->second;
        return why;
      }
    }
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
