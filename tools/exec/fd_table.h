// The perf fds of the served program: which of its fds (per fd table, i.e.
// per process) stand for which event of which served backend, and which fd
// numbers of the reserved range (syscall_filter.h PerfFdRange) are free.
//
//   FdTable t(range);
//   int fd = t.Allocate(tgid);                 // lowest free number of the range
//   t.Insert(tgid, fd, {.backend = 7, .tracer_fd = 12, .cloexec = true});
//   const PerfFd* e = t.Find(tgid, fd);
//   t.Fork(parent_tgid, child_tgid);           // fork(2): the child has the same fds
//   t.Exec(tgid);                              // execve(2): FD_CLOEXEC ones close
//   std::vector<PerfFd> gone = t.ReleaseProcess(tgid);   // the process exited
//
// An event (backend, tracer_fd) may sit behind several program fds (dup(2),
// fork(2)); References() says how many, so the tracer closes the event when
// the last one goes, as the kernel releases the file on its last fput().
#pragma once

#include <sys/types.h>

#include <map>
#include <utility>
#include <vector>

#include "tools/exec/syscall_filter.h"

namespace perftest::exec {

struct PerfFd {
  int backend = -1;     // ServedBackends' id of the backend that owns the event
  int tracer_fd = -1;   // the event's fd in that backend (the tracer's process)
  bool cloexec = false; // the program fd's FD_CLOEXEC
  // The program fd is the event's own memfd (installed again after the
  // mock's first mmap, which gives the event a memfd of its own).
  bool backed = false;
  bool inherit = false;  // the event has attr.inherit (ServedBackends::Inherit)
};

class FdTable {
 public:
  explicit FdTable(PerfFdRange range) : range_(range) {}

  const PerfFdRange& range() const { return range_; }
  // nullptr unless `fd` of process `tgid` is a perf fd.
  const PerfFd* Find(pid_t tgid, int fd) const;
  PerfFd* Find(pid_t tgid, int fd);
  // The lowest number of the range `tgid` does not use; -1 when all are taken
  // (the caller answers EMFILE, as get_unused_fd_flags() does).
  int Allocate(pid_t tgid) const;
  void Insert(pid_t tgid, int fd, PerfFd e);
  // Removes `fd`; returns its entry (nullopt-like: backend -1 when it was none).
  PerfFd Erase(pid_t tgid, int fd);
  // How many program fds, over all processes, stand for (backend, tracer_fd).
  int References(int backend, int tracer_fd) const;
  // fork(2) without CLONE_FILES: `child` gets a copy of `parent`'s perf fds.
  void Fork(pid_t parent, pid_t child);
  // execve(2) in `tgid`: its FD_CLOEXEC perf fds close. Returns them.
  std::vector<PerfFd> Exec(pid_t tgid);
  // `tgid` exited: all its perf fds close. Returns them.
  std::vector<PerfFd> ReleaseProcess(pid_t tgid);
  // close_range(2) of [first, last] in `tgid`. Returns the closed ones.
  std::vector<PerfFd> CloseRange(pid_t tgid, unsigned first, unsigned last);
  // The perf fds of `tgid`, by fd number.
  const std::map<int, PerfFd>* Process(pid_t tgid) const;

 private:
  PerfFdRange range_;
  std::map<pid_t, std::map<int, PerfFd>> procs_;
};

}  // namespace perftest::exec
