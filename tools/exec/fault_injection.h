// --inject=SPEC: faults `perftest exec` answers a served call with instead of
// serving it, for testing a program's error paths.
//
//   Result<InjectRule> r = ParseInjectRule("perf_event_open:EMFILE@3");
//   FaultInjector inj({*r});
//   int err = inj.Next(ServedCall::kPerfEventOpen);   // 0, 0, EMFILE, 0, ...
//
// SPEC is CALL:ERRNO[@N]: CALL one of perf_event_open, read, ioctl, mmap,
// close, fcntl, prctl, poll; ERRNO a name (EACCES, EMFILE, EINTR, ENOMEM, ...)
// or a number 1..4095; @N the Nth served call of CALL only (1-based), without
// it every one. The first rule that matches a call wins. A faulted call never
// reaches the mock (the kernel would fail it before it did anything).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "harness/result.h"

namespace perftest::exec {

enum class ServedCall { kPerfEventOpen, kRead, kIoctl, kMmap, kClose, kFcntl, kPrctl, kPoll, kCount };

// "perf_event_open", "read", ...
std::string_view ServedCallName(ServedCall c);

struct InjectRule {
  ServedCall call = ServedCall::kPerfEventOpen;
  int err = 0;         // positive errno
  uint64_t nth = 0;    // 0: every call
};

// Errors: EINVAL for a SPEC that is not CALL:ERRNO[@N], an unknown CALL or
// errno name, an N of 0; the call text says which part was wrong.
Result<InjectRule> ParseInjectRule(std::string_view spec);

// An errno's name: "EMFILE"; the number in decimal when it has none.
std::string ErrnoName(int err);

class FaultInjector {
 public:
  explicit FaultInjector(std::vector<InjectRule> rules = {}) : rules_(std::move(rules)) {}
  // Counts one served call of `c`; returns the errno to fail it with, 0 for none.
  int Next(ServedCall c);

 private:
  std::vector<InjectRule> rules_;
  uint64_t counts_[static_cast<int>(ServedCall::kCount)] = {};
};

}  // namespace perftest::exec
