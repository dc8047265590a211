// Sampling a served task where it really is: its user-mode ip and the
// return addresses of its frame-pointer chain (what perf_callchain_user()
// walks on x86_64: arch/x86/events/core.c, struct stack_frame {next_frame,
// return_address} at rbp), and the executable mappings it has (what
// perf_event_mmap() reports as MMAP2), read from /proc/<pid>/maps.
//
//   std::vector<uint64_t> callers;
//   WalkFramePointers(tid, regs.rbp, 127, &callers);   // innermost caller first
//   MappingScanner scan;
//   for (const Mapping& m : scan.NewExecutable(tgid)) control.ServedMmap(...);
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace perftest::exec {

// The return addresses of the frame chain starting at `rbp` in task `tid`
// (process_vm_readv(2)), at most `max`, innermost first. The walk stops at a
// NULL or unreadable frame, a frame not above the previous one (the stack
// grows down), or a return address of 0. Returns how many it found.
size_t WalkFramePointers(pid_t tid, uint64_t rbp, size_t max, std::vector<uint64_t>* callers);

// One line of /proc/<pid>/maps (proc(5)): "start-end perms offset maj:min inode [path]".
struct Mapping {
  uint64_t start = 0, end = 0, pgoff = 0;
  bool exec = false;
  uint32_t maj = 0, min = 0;
  uint64_t ino = 0;
  std::string path;  // "//anon" when the line names none
};
std::optional<Mapping> ParseMapsLine(const std::string& line);

// The executable mappings of a process not reported before by this scanner.
class MappingScanner {
 public:
  std::vector<Mapping> NewExecutable(pid_t pid);
  // Whether `ip` lies in an executable mapping of `pid` seen so far: when it
  // does not, the process mapped something new since (a rescan is due).
  bool Known(pid_t pid, uint64_t ip) const;

 private:
  std::set<std::tuple<pid_t, uint64_t, uint64_t, uint64_t>> seen_;  // pid, start, ino, pgoff
  std::vector<std::tuple<pid_t, uint64_t, uint64_t>> ranges_;       // pid, start, end
};

}  // namespace perftest::exec
