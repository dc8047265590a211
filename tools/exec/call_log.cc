#include "tools/exec/call_log.h"

#include <cerrno>

#include "tools/exec/fault_injection.h"

namespace perftest::exec {

std::string FormatLogLine(pid_t tid, const std::string& call, long result, const std::string& note) {
  std::string line = "[" + std::to_string(tid) + "] " + call + " = ";
  line += result < 0 ? "-" + ErrnoName(static_cast<int>(-result)) : std::to_string(result);
  if (!note.empty()) line += " (" + note + ")";
  return line;
}

CallLog::~CallLog() {
  if (owned_ && out_ != nullptr) std::fclose(out_);
}

int CallLog::Open(const std::string& path) {
  if (path == "-") {
    out_ = stderr;
    return 0;
  }
  out_ = std::fopen(path.c_str(), "we");
  if (out_ == nullptr) return errno;
  owned_ = true;
  return 0;
}

void CallLog::Write(pid_t tid, const std::string& call, long result, const std::string& note) {
  if (out_ == nullptr) return;
  const std::string line = FormatLogLine(tid, call, result, note) + "\n";
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fflush(out_);
}

}  // namespace perftest::exec
