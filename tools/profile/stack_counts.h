// StackCounts: the profile as profile.py keeps it — a count per
// {pid, comm, user stack, kernel stack} — built from PERF_SAMPLE_CALLCHAIN.
//
//   SplitStack s = SplitCallchain(sample.callchain);     // PERF_CONTEXT_* markers removed
//   counts.Add(pid, comm, s.user, s.kernel);              // both innermost first
//   for (const auto& [key, n] : counts.SortedAscending()) print(key, n);
//
// A callchain (<linux/perf_event.h> PERF_SAMPLE_CALLCHAIN, written by
// kernel/events/callchain.c get_perf_callchain()) is `nr` u64s: a
// PERF_CONTEXT_KERNEL marker followed by kernel ips (the first one the
// interrupted ip), then a PERF_CONTEXT_USER marker and user ips (the first one
// the user ip, the rest return addresses). Markers are the values >=
// PERF_CONTEXT_MAX (-4095 as u64).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "harness/records.h"

namespace perftest::profile {

struct SplitStack {
  std::vector<uint64_t> kernel;  // innermost first; empty when the chain has no kernel part
  std::vector<uint64_t> user;    // innermost first; empty when the chain has no user part
  bool has_kernel = false;       // a PERF_CONTEXT_KERNEL marker was present
  bool has_user = false;         // a PERF_CONTEXT_USER marker was present
  size_t other_contexts = 0;     // PERF_CONTEXT_HV/GUEST* markers (their ips are dropped)
};

// Splits a callchain at its PERF_CONTEXT_* markers. Ips before any marker are
// taken as kernel ips when they are kernel addresses (top bit set), else user.
SplitStack SplitCallchain(std::span<const uint64_t> callchain);
// The same over a sample view's callchain, in place in the ring buffer.
SplitStack SplitCallchain(const U64Array& callchain);

// True for the PERF_CONTEXT_* marker values (>= PERF_CONTEXT_MAX as u64).
bool IsContextMarker(uint64_t ip);

struct StackKey {
  pid_t pid = 0;                  // PERF_SAMPLE_TID's pid (the tgid)
  std::string comm;               // the thread's comm at the sample
  std::vector<uint64_t> user;     // innermost first
  std::vector<uint64_t> kernel;   // innermost first
  bool user_missing = false;      // profile.py's "[Missed User Stack]" (stack storage full)
  bool kernel_missing = false;    // profile.py's "[Missed Kernel Stack]"
  auto operator<=>(const StackKey&) const = default;
};

// Counts per StackKey with profile.py's stack storage: at most
// `stack_storage_size` distinct stacks (user and kernel stacks stored apart,
// as BPF_STACK_TRACE does); a stack that does not fit is counted as missing.
class StackCounts {
 public:
  explicit StackCounts(size_t stack_storage_size = 16384) : capacity_(stack_storage_size) {}

  void Add(pid_t pid, const std::string& comm, const std::vector<uint64_t>& user,
           const std::vector<uint64_t>& kernel, bool want_user, bool want_kernel, uint64_t n = 1);

  // Counts an already-built key (bpf mode: the stacks come from the kernel's
  // stack map; user_missing/kernel_missing set when bpf_get_stackid() failed
  // with -ENOMEM or -EEXIST).
  void AddKey(StackKey key, uint64_t n);

  // Entries by increasing count (ties by key), as profile.py prints them.
  std::vector<std::pair<StackKey, uint64_t>> SortedAscending() const;
  uint64_t total() const { return total_; }
  // Stacks that could not be stored, counted per entry and per missing side as
  // profile.py counts them ("WARNING: N stack traces could not be displayed.").
  uint64_t missing() const;
  bool storage_full() const { return storage_full_; }

 private:
  bool Store(const std::vector<uint64_t>& stack);

  size_t capacity_;
  std::map<std::vector<uint64_t>, int> stored_;
  std::map<StackKey, uint64_t> counts_;
  uint64_t total_ = 0;
  bool storage_full_ = false;
};

}  // namespace perftest::profile
