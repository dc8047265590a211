#include "tools/profile/stack_counts.h"

#include <linux/perf_event.h>

#include <algorithm>

namespace perftest::profile {

bool IsContextMarker(uint64_t ip) { return ip >= static_cast<uint64_t>(PERF_CONTEXT_MAX); }

namespace {

template <typename Ips>
SplitStack Split(const Ips& callchain) {
  SplitStack s;
  enum { kNone, kKernel, kUser, kOther } part = kNone;
  for (uint64_t ip : callchain) {
    if (IsContextMarker(ip)) {
      if (ip == static_cast<uint64_t>(PERF_CONTEXT_KERNEL)) {
        part = kKernel;
        s.has_kernel = true;
      } else if (ip == static_cast<uint64_t>(PERF_CONTEXT_USER)) {
        part = kUser;
        s.has_user = true;
      } else {
        part = kOther;
        ++s.other_contexts;
      }
      continue;
    }
    switch (part) {
      case kKernel: s.kernel.push_back(ip); break;
      case kUser: s.user.push_back(ip); break;
      case kOther: break;
      case kNone: (ip >> 63 ? s.kernel : s.user).push_back(ip); break;
    }
  }
  return s;
}

}  // namespace

SplitStack SplitCallchain(std::span<const uint64_t> callchain) { return Split(callchain); }
SplitStack SplitCallchain(const U64Array& callchain) { return Split(callchain); }

bool StackCounts::Store(const std::vector<uint64_t>& stack) {
  if (stored_.count(stack)) return true;
  if (stored_.size() >= capacity_) {
    storage_full_ = true;
    return false;
  }
  stored_.emplace(stack, static_cast<int>(stored_.size()));
  return true;
}

void StackCounts::Add(pid_t pid, const std::string& comm, const std::vector<uint64_t>& user,
                      const std::vector<uint64_t>& kernel, bool want_user, bool want_kernel, uint64_t n) {
  StackKey k;
  k.pid = pid;
  k.comm = comm;
  // An empty stack is "no stack" (profile.py's -EFAULT), not a missing one.
  if (want_user && !user.empty()) {
    if (Store(user)) k.user = user; else k.user_missing = true;
  }
  if (want_kernel && !kernel.empty()) {
    if (Store(kernel)) k.kernel = kernel; else k.kernel_missing = true;
  }
  counts_[std::move(k)] += n;
  total_ += n;
}

void StackCounts::AddKey(StackKey key, uint64_t n) {
  if (key.user_missing || key.kernel_missing) storage_full_ = true;
  counts_[std::move(key)] += n;
  total_ += n;
}

uint64_t StackCounts::missing() const {
  uint64_t m = 0;
  for (const auto& [k, n] : counts_) m += (k.user_missing ? 1 : 0) + (k.kernel_missing ? 1 : 0);
  return m;
}

std::vector<std::pair<StackKey, uint64_t>> StackCounts::SortedAscending() const {
  std::vector<std::pair<StackKey, uint64_t>> v(counts_.begin(), counts_.end());
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  return v;
}

}  // namespace perftest::profile
