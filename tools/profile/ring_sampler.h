// RingSampler: profile.py's sampling done with ring buffers (ring mode): one
// cpu-clock event per CPU (pid = -1), or per CPU and thread of a process
// (inherit, so threads it creates later are followed; perf_mmap() refuses an
// inherited event with cpu = -1), PERF_SAMPLE_TID | CPU | CALLCHAIN
// at attr.sample_freq Hz, each with its own RingBuffer; Drain() reads every
// buffer (the harness read protocol: Begin, Next, Consume) and aggregates the
// stacks in user space into StackCounts.
//
//   RingSampler s(backend, options, comm_of, is_kthread);
//   if (Result<void> r = s.Open(); !r) fail(r);     // perf_event_open + mmap per event
//   s.Enable();  while (!done) { s.Wait(100); s.Drain(); }  s.Disable(); s.Drain();
//
// The attr (UAPI struct perf_event_attr): PERF_TYPE_SOFTWARE /
// PERF_COUNT_SW_CPU_CLOCK, freq = 1, exclude_callchain_user with -K,
// exclude_callchain_kernel with -U (kernel/events/callchain.c
// get_perf_callchain() then leaves that part out), comm = 1 (PERF_RECORD_COMM
// keeps thread names current), sample_id_all. With --call-graph=dwarf also
// PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER, sample_regs_user =
// DwarfUnwinder::SampleRegsUser(), exclude_callchain_user (the user part
// comes from the DwarfUnwinder), as perf record --call-graph=dwarf asks.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "harness/backend.h"
#include "harness/event.h"
#include "harness/records.h"
#include "harness/result.h"
#include "harness/ring_buffer.h"
#include "tools/profile/dwarf_unwinder.h"
#include "tools/profile/stack_counts.h"

namespace perftest::profile {

struct SamplerOptions {
  pid_t pid = -1;                    // -p: this process only (its threads); -1: every CPU
  bool user_threads_only = false;    // -u
  bool kernel_threads_only = false;  // -k
  bool user_stacks_only = false;     // -U
  bool kernel_stacks_only = false;   // -K
  uint64_t frequency = 49;           // -F, Hz
  size_t stack_storage_size = 16384; // --stack-storage-size
  size_t data_pages = 64;            // ring buffer data pages per event (power of two)
  uint16_t max_stack = 127;          // attr.sample_max_stack
  // --call-graph=dwarf[,SIZE]: user stacks unwound from PERF_SAMPLE_REGS_USER
  // + PERF_SAMPLE_STACK_USER (SIZE bytes of stack per sample, a multiple of 8
  // below 65535: kernel/events/core.c perf_copy_attr()) instead of the
  // kernel's frame-pointer walk; the kernel part stays PERF_SAMPLE_CALLCHAIN.
  bool dwarf = false;
  uint32_t stack_dump_size = 8192;   // perf record's default
  // --format=perf.data: also PERF_SAMPLE_TIME (perf orders records by it) and
  // the side-band a perf.data reader needs, attr.mmap + mmap2 (PERF_RECORD_MMAP2
  // of new executable mappings) and attr.task (FORK/EXIT).
  bool sideband = false;
};

// The comm of a task: the backend's answer (kernel: /proc; mock: its tasks).
using CommLookup = std::function<std::string(pid_t pid, pid_t tid, uint32_t cpu)>;
// Whether `pid` is a kernel thread (PF_KTHREAD); pid 0 (idle) always is.
using KthreadLookup = std::function<bool(pid_t pid)>;

class RingSampler {
 public:
  RingSampler(Backend& backend, SamplerOptions options, CommLookup comm_of, KthreadLookup is_kthread);

  // Opens the events and maps their buffers. Errors: perf_event_open(2)'s or
  // mmap(2)'s errno, the call named; ESRCH when -p names no live process.
  Result<void> Open();
  Result<void> Enable();
  Result<void> Disable();
  // poll(2) on every event fd, up to `timeout_ms`.
  void Wait(int timeout_ms);
  // Reads every buffer to its data_head and aggregates the samples.
  void Drain();

  const StackCounts& counts() const { return counts_; }
  uint64_t samples() const { return samples_; }
  uint64_t lost() const { return lost_; }          // PERF_RECORD_LOST totals
  uint64_t malformed() const { return malformed_; } // records that did not parse
  const DwarfUnwinder& unwinder() const { return unwinder_; }
  size_t nr_events() const { return events_.size(); }
  static perf_event_attr Attr(const SamplerOptions& o);
  // Called with each process id the first time a sample names it (the
  // symbolizer reads its maps then, while it runs).
  void OnNewProcess(std::function<void(pid_t)> fn) { on_new_process_ = std::move(fn); }
  // Called with the bytes of every record read (header included) that is
  // not a sample, and of every sample counted (-u/-k leave some out), in the
  // order read; after OnNewProcess for a process's first sample.
  void OnRecord(std::function<void(std::span<const std::byte>)> fn) { on_record_ = std::move(fn); }
  // The attr the events were opened with, and their ids (PERF_EVENT_IOC_ID),
  // once Open() succeeded.
  const perf_event_attr& attr() const { return attr_; }
  std::vector<uint64_t> ids();

 private:
  // Counts the sample; false when -u/-k leave it out.
  bool HandleSample(const SampleView& s);
  std::string Comm(pid_t pid, pid_t tid, uint32_t cpu);

  Backend& backend_;
  SamplerOptions opt_;
  CommLookup comm_of_;
  KthreadLookup is_kthread_;
  std::vector<Event> events_;
  std::vector<RingBuffer> rings_;
  SampleLayout layout_;
  StackCounts counts_;
  std::map<pid_t, std::string> comms_;  // tid -> comm (PERF_RECORD_COMM, then the lookup)
  std::map<pid_t, bool> kthreads_;
  std::function<void(pid_t)> on_new_process_;
  std::function<void(std::span<const std::byte>)> on_record_;
  perf_event_attr attr_{};
  DwarfUnwinder unwinder_;
  std::map<pid_t, bool> seen_;
  uint64_t samples_ = 0, lost_ = 0, malformed_ = 0;
};

// The {pid, cpu} pairs to open one event on: every CPU with pid -1, or with
// -p every CPU of every thread of the process (kernel), or of the simulated
// task (mock). Errors: ESRCH when -p names no live process.
Result<std::vector<std::pair<pid_t, int>>> EventTargets(Backend& backend, const SamplerOptions& o);

// Thread ids of process `pid` from /proc/PID/task. Errors: ESRCH when it does not exist.
Result<std::vector<pid_t>> ThreadsOf(pid_t pid);

}  // namespace perftest::profile
