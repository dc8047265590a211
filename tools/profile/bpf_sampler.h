// BpfSampler: profile.py's sampling with the counting in the kernel (bpf
// mode, the RFC's design). The same cpu-clock events as RingSampler, without
// ring buffers; each gets the BPF_PROG_TYPE_PERF_EVENT program of
// bpf/profile.bpf.c with PERF_EVENT_IOC_SET_BPF (through the Backend), which
// counts {pid, tid, comm, user stack id, kernel stack id} in a hash map and
// stores stacks with bpf_get_stackid() in a BPF_MAP_TYPE_STACK_TRACE map of
// --stack-storage-size entries. Collect() reads both maps once, at the end.
//
//   BpfSampler s(backend, options, is_kthread);
//   if (Result<void> r = s.Open(); !r.ok()) fail(r);   // load, open, attach
//   s.Enable();  sleep(duration);  s.Disable();  s.Collect();
//
// Stack ids < 0 are bpf_get_stackid()'s -errno (kernel/bpf/stackmap.c):
// -EFAULT no stack of that kind (a kernel thread's user stack): shown as none;
// -EEXIST (hash collision, BPF_F_REUSE_STACKID not set) and -ENOMEM: counted
// as missing, as profile.py's stack_id_err() does.
#pragma once

#include <memory>
#include <vector>

#include "harness/backend.h"
#include "harness/event.h"
#include "harness/result.h"
#include "tools/profile/ring_sampler.h"
#include "tools/profile/stack_counts.h"

namespace perftest::profile {

// Whether this build has bpf mode (clang, bpftool and libbpf were found).
bool BpfModeBuilt();

class BpfSampler {
 public:
  BpfSampler(Backend& backend, SamplerOptions options, KthreadLookup is_kthread);
  ~BpfSampler();
  BpfSampler(const BpfSampler&) = delete;
  BpfSampler& operator=(const BpfSampler&) = delete;

  // Loads the program (bpf(2) BPF_PROG_LOAD through libbpf), opens the events
  // and attaches it to each. Errors: ENOSYS when bpf mode is not built;
  // libbpf's -errno when loading fails (EPERM without CAP_BPF/CAP_PERFMON);
  // perf_event_open(2)'s errno; PERF_EVENT_IOC_SET_BPF's (EINVAL for a
  // program of another type, EEXIST when one is attached already).
  Result<void> Open();
  Result<void> Enable();
  Result<void> Disable();
  // Reads the counts and stack maps into counts(). Errors: bpf(2)'s errno.
  Result<void> Collect();

  const StackCounts& counts() const { return counts_; }
  size_t nr_events() const { return events_.size(); }
  int prog_fd() const;

 private:
  struct Skeleton;
  Backend& backend_;
  SamplerOptions opt_;
  KthreadLookup is_kthread_;
  std::unique_ptr<Skeleton> skel_;
  std::vector<Event> events_;
  StackCounts counts_;
};

}  // namespace perftest::profile
