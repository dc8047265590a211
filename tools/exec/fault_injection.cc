#include "tools/exec/fault_injection.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace perftest::exec {
namespace {

constexpr std::string_view kNames[] = {"perf_event_open", "read", "ioctl", "mmap", "close", "fcntl", "prctl", "poll"};

}  // namespace

std::string_view ServedCallName(ServedCall c) { return kNames[static_cast<int>(c)]; }

std::string ErrnoName(int err) {
  const char* name = strerrorname_np(err);
  return name != nullptr ? name : std::to_string(err);
}

Result<InjectRule> ParseInjectRule(std::string_view spec) {
  const std::string call = "--inject=" + std::string(spec);
  auto fail = [&](const std::string& why) { return Result<InjectRule>::Failure(EINVAL, call + ": " + why); };
  const size_t colon = spec.find(':');
  if (colon == std::string_view::npos) return fail("expected CALL:ERRNO[@N]");
  InjectRule rule;
  const std::string_view name = spec.substr(0, colon);
  bool known = false;
  for (int i = 0; i < static_cast<int>(ServedCall::kCount); ++i) {
    if (name == kNames[i]) {
      rule.call = static_cast<ServedCall>(i);
      known = true;
    }
  }
  if (!known) {
    std::string names;
    for (std::string_view n : kNames) names += (names.empty() ? "" : ", ") + std::string(n);
    return fail("unknown call '" + std::string(name) + "' (one of " + names + ")");
  }
  std::string_view rest = spec.substr(colon + 1);
  const size_t at = rest.find('@');
  const std::string err(rest.substr(0, at));
  if (at != std::string_view::npos) {
    const std::string n(rest.substr(at + 1));
    char* end = nullptr;
    rule.nth = std::strtoull(n.c_str(), &end, 10);
    if (n.empty() || *end != '\0' || rule.nth == 0) return fail("@N must be a call number from 1, not '" + n + "'");
  }
  for (int e = 1; e < 4096 && rule.err == 0; ++e) {
    const char* en = strerrorname_np(e);
    if (en != nullptr && err == en) rule.err = e;
  }
  if (rule.err == 0) {
    char* end = nullptr;
    const long v = std::strtol(err.c_str(), &end, 10);
    if (err.empty() || *end != '\0' || v <= 0 || v > 4095) return fail("unknown errno '" + err + "'");
    rule.err = static_cast<int>(v);
  }
  return Result<InjectRule>::Ok(rule, call);
}

int FaultInjector::Next(ServedCall c) {
  const uint64_t n = ++counts_[static_cast<int>(c)];
  for (const InjectRule& r : rules_) {
    if (r.call == c && (r.nth == 0 || r.nth == n)) return r.err;
  }
  return 0;
}

}  // namespace perftest::exec
