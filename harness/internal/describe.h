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

}  // namespace perftest::internal
