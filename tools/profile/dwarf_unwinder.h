// DwarfUnwinder: user stacks of code built without frame pointers, from a
// sample's PERF_SAMPLE_REGS_USER and PERF_SAMPLE_STACK_USER (perf record
// --call-graph=dwarf), unwound with the DWARF call frame information
// (.eh_frame / .debug_frame) through elfutils libdwfl.
//
//   perf_event_attr a = ...;
//   a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
//   a.sample_regs_user = DwarfUnwinder::SampleRegsUser();   // the arch's registers
//   a.sample_stack_user = 8192;                              // bytes of stack per sample
//   DwarfUnwinder u;
//   std::vector<uint64_t> ips = u.Unwind(pid, tid, view.regs_user, view.stack_user);
//   // ips[0]: the interrupted user ip; then return addresses, outermost last
//
// How: one Dwfl per process, its modules reported from /proc/PID/maps
// (dwfl_linux_proc_report()) on the process's first sample, with thread
// callbacks attached (dwfl_attach_state()) that give libdwfl the sample's
// registers in DWARF numbering (set_initial_registers) and read memory from
// the copied stack (memory_read: [regs[SP], regs[SP] + dyn_size), nothing
// else); dwfl_getthread_frames() then walks the frames. The copy is what the
// kernel took at the sample (kernel/events/core.c perf_output_sample_ustack(),
// dyn_size bytes of `size` filled); a frame whose CFA lies past it ends the
// stack there, as it does in perf.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "harness/records.h"

namespace perftest::profile {

class DwarfUnwinder {
 public:
  DwarfUnwinder();
  ~DwarfUnwinder();
  DwarfUnwinder(const DwarfUnwinder&) = delete;
  DwarfUnwinder& operator=(const DwarfUnwinder&) = delete;

  // attr.sample_regs_user for this build's architecture (the registers the
  // unwinder needs: x86_64 the general-purpose ones, IP and SP; arm64 X0..X30,
  // SP, PC), or 0 where unwinding is not implemented.
  static uint64_t SampleRegsUser();
  // The architecture's name, for messages ("x86_64", "aarch64", or the
  // build's when unsupported).
  static const char* Arch();

  // User frames of one sample, innermost first: the interrupted ip, then
  // return addresses. Empty when the sample has no user registers (abi
  // PERF_SAMPLE_REGS_ABI_NONE: a kernel thread), when `regs` was sampled with
  // another mask than SampleRegsUser(), or when the process's maps cannot be
  // read (it exited); error() then says why. At most `max_depth` frames.
  std::vector<uint64_t> Unwind(pid_t pid, pid_t tid, const SampleView::Regs& regs,
                               const SampleView::StackUser& stack, size_t max_depth = 127);

  const std::string& error() const { return error_; }
  // Samples unwound, and of them those that stopped with an error before the
  // outermost frame (a missing CFI, a CFA past the copied stack).
  uint64_t unwound() const { return unwound_; }
  uint64_t truncated() const { return truncated_; }

  struct Process;  // one Dwfl with the sample being unwound (dwarf_unwinder.cc)

 private:
  Process* ForPid(pid_t pid);

  std::map<pid_t, std::unique_ptr<Process>> processes_;
  std::string error_;
  uint64_t unwound_ = 0, truncated_ = 0;
};

}  // namespace perftest::profile
