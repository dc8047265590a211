#include "harness/result.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace perftest {

std::string ErrnoName(int err) {
  const char* name = strerrorname_np(err);
  if (name != nullptr) return name;
  return fmt::format("E<unknown {}>", err);
}

namespace internal {

void DieOnBadAccess(const std::string& call, int err) {
  std::fprintf(stderr, "perftest: value() of a failed result: %s\n", DescribeFailure(call, err).c_str());
  std::abort();
}

std::string DescribeFailure(const std::string& call, int err) {
  return fmt::format("{} = -{} ({})", call.empty() ? "call" : call, ErrnoName(err), std::strerror(err));
}

std::string DescribeSuccess(const std::string& call, const std::string& value) {
  return fmt::format("{} = {}", call.empty() ? "call" : call, value);
}

std::string ValueToString(long long v) { return fmt::format("{}", v); }
std::string ValueToString(unsigned long long v) { return fmt::format("{}", v); }
std::string ValueToString(const void* p) { return fmt::format("{}", p); }

}  // namespace internal
}  // namespace perftest
