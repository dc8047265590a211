// --log=FILE: every served call in the harness's call notation
// (harness/describe.h), with the task that made it and what it returned:
//   [4711] perf_event_open(type=1, config=0x0, pid=4712, cpu=-1, group_fd=-1, flags=0x8) = 19712
//   [4711] read(fd=19712, len=24) = 24
//   [4711] ioctl(fd=19712, PERF_EVENT_IOC_ENABLE, 0x0) = -EMFILE (injected)
// A call that goes on natively after the mock answered (mmap of the ring
// buffer, close) says so: "= 0 (then native)".
#pragma once

#include <sys/types.h>

#include <cstdio>
#include <string>

namespace perftest::exec {

// One line: "[tid] call = result[ (note)]"; result >= 0 printed as is,
// negative as -ERRNO.
std::string FormatLogLine(pid_t tid, const std::string& call, long result, const std::string& note = "");

class CallLog {
 public:
  CallLog() = default;
  ~CallLog();
  CallLog(const CallLog&) = delete;
  CallLog& operator=(const CallLog&) = delete;
  // Opens (truncates) `path`; "-" is stderr. Returns 0 or the errno of fopen(3).
  int Open(const std::string& path);
  bool enabled() const { return out_ != nullptr; }
  void Write(pid_t tid, const std::string& call, long result, const std::string& note = "");

 private:
  FILE* out_ = nullptr;
  bool owned_ = false;
};

}  // namespace perftest::exec
