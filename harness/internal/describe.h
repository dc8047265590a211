// Call strings for Result (STYLE.md 3): each syscall of the Backend seam
// described as it was made, shared by KernelBackend and MockBackend so both
// print identically.
#pragma once

#include <linux/perf_event.h>
#include <poll.h>
#include <sys/types.h>

#include <cstdint>
#include <span>
#include <string>

#include "harness/result.h"

namespace perftest::internal {

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

}  // namespace perftest::internal
