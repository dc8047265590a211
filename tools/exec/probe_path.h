// The path a uprobe or kprobe event names (attr.config1: uprobe_path,
// kprobe_func) is an address in the program, but MockBackend reads it in
// perftest exec's own memory (mocks/uprobe_pmu.h UprobeFiles::CopyString,
// strndup_user()'s rules). ProbePathRelay copies the program's bytes into a
// buffer of the tracer that ends where they ended: at the NUL, after PATH_MAX
// bytes, or at the first unreadable byte, which is put right before a
// PROT_NONE page, so the mock's strndup_user() faults (EFAULT) where the
// kernel's would.
//
//   ProbePathRelay relay;
//   attr->config1 = relay.Relay(tid, attr->config1);   // 0 stays 0 (EINVAL)
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace perftest::exec {

class ProbePathRelay {
 public:
  // PATH_MAX: strndup_user(uprobe_path, PATH_MAX) in perf_uprobe_init().
  static constexpr size_t kPathMax = 4096;

  ProbePathRelay();
  ~ProbePathRelay();
  ProbePathRelay(const ProbePathRelay&) = delete;
  ProbePathRelay& operator=(const ProbePathRelay&) = delete;

  // The tracer address holding what strndup_user() would read at `addr` in
  // `tid` (0 for 0; `addr` itself when the buffer could not be mapped).
  // Valid until the next call.
  uint64_t Relay(pid_t tid, uint64_t addr);

 private:
  char* region_ = nullptr;  // 2 * kPathMax readable bytes, then a PROT_NONE page
  size_t size_ = 0;
};

}  // namespace perftest::exec
