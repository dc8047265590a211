// For the benchmarks that time other programs (perftest's own tools against
// perf): where those programs are. Header-only, bench/ only.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace perftest::bench {

// The directory of this benchmark binary (<build>/bin), where the tools it
// runs beside it are.
inline std::string BinDir() { return std::filesystem::read_symlink("/proc/self/exe").parent_path().string(); }

// The executable `name` on $PATH (default /usr/bin:/bin), or "" when none.
inline std::string Which(const std::string& name) {
  const char* path = std::getenv("PATH");
  const std::string p = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= p.size()) {
    const size_t end = p.find(':', start);
    const std::string dir = p.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const std::string full = dir + "/" + name;
    if (!dir.empty() && ::access(full.c_str(), X_OK) == 0) return full;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return "";
}

}  // namespace perftest::bench
