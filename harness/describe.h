// Call strings (STYLE.md 3): each call of the Backend seam described as it
// was made, the text a Result carries (Result::call(), CallDescription), e.g.
//   perf_event_open(type=1, config=0x0, pid=0, cpu=-1, group_fd=-1, flags=0x8)
//   ioctl(fd=5, PERF_EVENT_IOC_ENABLE, 0x0)
// Every Backend uses them — KernelBackend, MockBackend (mocks/) — so that a
// call prints identically whichever backend answered it, and programs that
// print calls of their own use them too (fidelity/: `perftest fidelity`'s
// call sequences).
//
//   return Result<int>::Failure(EINVAL, OpenCall(&attr, pid, cpu, group_fd, flags));
//   std::string what = IoctlRequestName(PERF_EVENT_IOC_REFRESH);   // "PERF_EVENT_IOC_REFRESH"
//
// The Describe*() functions give the text at once; the *Call() functions
// give a CallDescription that copies the arguments and formats them only
// when read (a backend's hot path, where most results are never printed),
// to the same text. Flag and request values the UAPI header
// <linux/perf_event.h> names are printed by name; others in hex.
#pragma once

#include <linux/perf_event.h>
#include <poll.h>
#include <sys/types.h>

#include <cstdint>
#include <span>
#include <string>

#include "harness/result.h"

namespace perftest {

std::string IoctlRequestName(unsigned long request);  // "PERF_EVENT_IOC_ENABLE", or hex

std::string DescribeOpen(const perf_event_attr& attr, pid_t pid, int cpu, int group_fd, unsigned long flags);
// The same for an attr pointer that may be NULL ("attr=NULL").
std::string DescribeOpen(const perf_event_attr* attr, pid_t pid, int cpu, int group_fd, unsigned long flags);
std::string DescribeRead(int fd, size_t len);
std::string DescribeIoctl(int fd, unsigned long request, uintptr_t arg);
std::string DescribeMmap(size_t length, int prot, int flags, int fd, off_t offset);
std::string DescribeMunmap(const void* addr, size_t length);
std::string DescribeClose(int fd);
std::string DescribePrctl(int option);
std::string DescribePoll(std::span<const pollfd> fds, int timeout_ms);
std::string DescribeFcntl(int fd, int cmd, long arg);

// The same calls as CallDescription::Deferred(): the arguments are copied (the
// attr too, as it was before the call), the text is made only when read, and
// is then exactly the Describe*() text above. Inline: a backend's hot path
// (read, ioctl) builds its Result without a call or a formatted string.
struct OpenArgs {
  perf_event_attr attr;
  bool has_attr;  // false: attr was NULL
  pid_t pid;
  int cpu;
  int group_fd;
  unsigned long flags;
};
struct ReadArgs {
  int fd;
  size_t len;
};
struct IoctlArgs {
  int fd;
  unsigned long request;
  uintptr_t arg;
};
struct MmapArgs {
  size_t length;
  int prot;
  int flags;
  int fd;
  off_t offset;
};
struct MunmapArgs {
  const void* addr;
  size_t length;
};
struct FcntlArgs {
  int fd;
  int cmd;
  long arg;
};
std::string FormatOpen(const OpenArgs& a);
std::string FormatRead(const ReadArgs& a);
std::string FormatIoctl(const IoctlArgs& a);
std::string FormatMmap(const MmapArgs& a);
std::string FormatMunmap(const MunmapArgs& a);
std::string FormatClose(const int& fd);
std::string FormatFcntl(const FcntlArgs& a);

CallDescription OpenCall(const perf_event_attr* attr, pid_t pid, int cpu, int group_fd, unsigned long flags);
inline CallDescription ReadCall(int fd, size_t len) {
  return CallDescription::Deferred<FormatRead>(ReadArgs{fd, len});
}
inline CallDescription IoctlCall(int fd, unsigned long request, uintptr_t arg) {
  return CallDescription::Deferred<FormatIoctl>(IoctlArgs{fd, request, arg});
}
inline CallDescription MmapCall(size_t length, int prot, int flags, int fd, off_t offset) {
  return CallDescription::Deferred<FormatMmap>(MmapArgs{length, prot, flags, fd, offset});
}
inline CallDescription MunmapCall(const void* addr, size_t length) {
  return CallDescription::Deferred<FormatMunmap>(MunmapArgs{addr, length});
}
inline CallDescription CloseCall(int fd) { return CallDescription::Deferred<FormatClose>(fd); }
inline CallDescription FcntlCall(int fd, int cmd, long arg) {
  return CallDescription::Deferred<FormatFcntl>(FcntlArgs{fd, cmd, arg});
}

}  // namespace perftest
