#include "harness/describe.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#include <cstring>

#include "harness/attr.h"

namespace perftest {

std::string IoctlRequestName(unsigned long request) {
  switch (request) {
    case PERF_EVENT_IOC_ENABLE: return "PERF_EVENT_IOC_ENABLE";
    case PERF_EVENT_IOC_DISABLE: return "PERF_EVENT_IOC_DISABLE";
    case PERF_EVENT_IOC_REFRESH: return "PERF_EVENT_IOC_REFRESH";
    case PERF_EVENT_IOC_RESET: return "PERF_EVENT_IOC_RESET";
    case PERF_EVENT_IOC_PERIOD: return "PERF_EVENT_IOC_PERIOD";
    case PERF_EVENT_IOC_SET_OUTPUT: return "PERF_EVENT_IOC_SET_OUTPUT";
    case PERF_EVENT_IOC_SET_FILTER: return "PERF_EVENT_IOC_SET_FILTER";
    case PERF_EVENT_IOC_ID: return "PERF_EVENT_IOC_ID";
    case PERF_EVENT_IOC_SET_BPF: return "PERF_EVENT_IOC_SET_BPF";
    case PERF_EVENT_IOC_PAUSE_OUTPUT: return "PERF_EVENT_IOC_PAUSE_OUTPUT";
    case PERF_EVENT_IOC_QUERY_BPF: return "PERF_EVENT_IOC_QUERY_BPF";
    case PERF_EVENT_IOC_MODIFY_ATTRIBUTES: return "PERF_EVENT_IOC_MODIFY_ATTRIBUTES";
    default: return fmt::format("{:#x}", request);
  }
}

std::string DescribeOpen(const perf_event_attr& attr, pid_t pid, int cpu, int group_fd, unsigned long flags) {
  return fmt::format("perf_event_open({}, pid={}, cpu={}, group_fd={}, flags={:#x})", DescribeAttr(attr), pid, cpu,
                     group_fd, flags);
}

std::string DescribeOpen(const perf_event_attr* attr, pid_t pid, int cpu, int group_fd, unsigned long flags) {
  if (attr != nullptr) return DescribeOpen(*attr, pid, cpu, group_fd, flags);
  return fmt::format("perf_event_open(attr=NULL, pid={}, cpu={}, group_fd={}, flags={:#x})", pid, cpu, group_fd, flags);
}

std::string DescribeRead(int fd, size_t len) { return fmt::format("read(fd={}, len={})", fd, len); }

std::string DescribeIoctl(int fd, unsigned long request, uintptr_t arg) {
  return fmt::format("ioctl(fd={}, {}, {:#x})", fd, IoctlRequestName(request), arg);
}

std::string DescribeMmap(size_t length, int prot, int flags, int fd, off_t offset) {
  std::string p = (prot & PROT_READ) ? "PROT_READ" : "";
  if (prot & PROT_WRITE) p += p.empty() ? "PROT_WRITE" : "|PROT_WRITE";
  if (prot & PROT_EXEC) p += p.empty() ? "PROT_EXEC" : "|PROT_EXEC";
  if (p.empty()) p = "PROT_NONE";
  const std::string f = (flags & MAP_SHARED) ? "MAP_SHARED" : (flags & MAP_PRIVATE) ? "MAP_PRIVATE" : fmt::format("{:#x}", flags);
  return fmt::format("mmap(NULL, {}, {}, {}, fd={}, offset={})", length, p, f, fd, offset);
}

std::string DescribeMunmap(const void* addr, size_t length) {
  return fmt::format("munmap({}, {})", addr, length);
}

std::string DescribeClose(int fd) { return fmt::format("close(fd={})", fd); }

std::string DescribePrctl(int option) {
  switch (option) {
    case PR_TASK_PERF_EVENTS_ENABLE: return "prctl(PR_TASK_PERF_EVENTS_ENABLE)";
    case PR_TASK_PERF_EVENTS_DISABLE: return "prctl(PR_TASK_PERF_EVENTS_DISABLE)";
    default: return fmt::format("prctl({})", option);
  }
}

std::string DescribePoll(std::span<const pollfd> fds, int timeout_ms) {
  std::string list;
  for (const pollfd& p : fds) {
    if (!list.empty()) list += ", ";
    list += fmt::format("{{fd={}, events={:#x}}}", p.fd, p.events);
  }
  return fmt::format("poll([{}], timeout={}ms)", list, timeout_ms);
}

std::string DescribeFcntl(int fd, int cmd, long arg) { return fmt::format("fcntl(fd={}, cmd={}, {})", fd, cmd, arg); }

std::string FormatOpen(const OpenArgs& a) {
  return DescribeOpen(a.has_attr ? &a.attr : nullptr, a.pid, a.cpu, a.group_fd, a.flags);
}
std::string FormatRead(const ReadArgs& a) { return DescribeRead(a.fd, a.len); }
std::string FormatIoctl(const IoctlArgs& a) { return DescribeIoctl(a.fd, a.request, a.arg); }
std::string FormatMmap(const MmapArgs& a) { return DescribeMmap(a.length, a.prot, a.flags, a.fd, a.offset); }
std::string FormatMunmap(const MunmapArgs& a) { return DescribeMunmap(a.addr, a.length); }
std::string FormatClose(const int& fd) { return DescribeClose(fd); }
std::string FormatFcntl(const FcntlArgs& a) { return DescribeFcntl(a.fd, a.cmd, a.arg); }

CallDescription OpenCall(const perf_event_attr* attr, pid_t pid, int cpu, int group_fd, unsigned long flags) {
  OpenArgs a;
  a.has_attr = attr != nullptr;
  if (a.has_attr) {
    std::memcpy(&a.attr, attr, sizeof a.attr);
  } else {
    std::memset(&a.attr, 0, sizeof a.attr);
  }
  a.pid = pid;
  a.cpu = cpu;
  a.group_fd = group_fd;
  a.flags = flags;
  return CallDescription::Deferred<FormatOpen>(a);
}

}  // namespace perftest
