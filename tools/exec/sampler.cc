#include "tools/exec/sampler.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "tools/exec/tracee.h"

namespace perftest::exec {

size_t WalkFramePointers(pid_t tid, uint64_t rbp, size_t max, std::vector<uint64_t>* callers) {
  callers->clear();
  uint64_t frame = rbp;
  while (callers->size() < max && frame != 0 && frame % 8 == 0) {
    uint64_t pair[2];  // struct stack_frame: next_frame, return_address
    if (!ReadMemory(tid, frame, pair, sizeof pair) || pair[1] == 0) break;
    callers->push_back(pair[1]);
    if (pair[0] <= frame) break;
    frame = pair[0];
  }
  return callers->size();
}

std::optional<Mapping> ParseMapsLine(const std::string& line) {
  Mapping m;
  char perms[8] = {};
  unsigned long long start = 0, end = 0, off = 0, ino = 0;
  unsigned maj = 0, min = 0;
  int path_at = 0;
  if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj, &min, &ino,
                  &path_at) < 7) {
    return std::nullopt;
  }
  m.start = start;
  m.end = end;
  m.pgoff = off;
  m.exec = perms[2] == 'x';
  m.maj = maj;
  m.min = min;
  m.ino = ino;
  m.path = path_at > 0 && static_cast<size_t>(path_at) < line.size() ? line.substr(static_cast<size_t>(path_at)) : "";
  if (m.path.empty()) m.path = "//anon";
  return m;
}

std::vector<Mapping> MappingScanner::NewExecutable(pid_t pid) {
  std::vector<Mapping> out;
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(in, line)) {
    std::optional<Mapping> m = ParseMapsLine(line);
    if (!m || !m->exec) continue;
    if (seen_.emplace(pid, m->start, m->ino, m->pgoff).second) {
      out.push_back(*m);
      ranges_.emplace_back(pid, m->start, m->end);
    }
  }
  return out;
}

bool MappingScanner::Known(pid_t pid, uint64_t ip) const {
  for (const auto& [p, start, end] : ranges_) {
    if (p == pid && ip >= start && ip < end) return true;
  }
  return false;
}

}  // namespace perftest::exec
