#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "harness/backend.h"
#include "harness/internal/child.h"
#include "harness/internal/child_process.h"

namespace perftest {

namespace internal {
namespace {

// capset(2) without libcap: version 3, two 32-bit words per set.
int SetCapabilities(const std::vector<int>& keep) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  for (int cap : keep) {
    if (cap < 0 || cap >= 64) return EINVAL;
    data[cap / 32].permitted |= 1u << (cap % 32);
    data[cap / 32].effective |= 1u << (cap % 32);
  }
  if (::syscall(SYS_capset, &header, data) != 0) return errno;
  return 0;
}

int SetLimit(int resource, uint64_t value) {
  rlimit r{static_cast<rlim_t>(value), static_cast<rlim_t>(value)};
  return ::setrlimit(resource, &r) == 0 ? 0 : errno;
}

// The child's side: the credentials, in an order that keeps them possible
// (limits while still privileged, uid before capset).
int ApplyCredentials(const ChildCredentials& c) {
  if (c.rlimit_memlock) {
    if (int err = SetLimit(RLIMIT_MEMLOCK, *c.rlimit_memlock)) return err;
  }
  if (c.rlimit_nofile) {
    if (int err = SetLimit(RLIMIT_NOFILE, *c.rlimit_nofile)) return err;
  }
  if (c.uid) {
    if (c.caps && ::prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0) return errno;
    if (::setgroups(0, nullptr) != 0) return errno;
    if (::setresgid(*c.uid, *c.uid, *c.uid) != 0) return errno;
    if (::setresuid(*c.uid, *c.uid, *c.uid) != 0) return errno;
  }
  if (c.caps) {
    if (int err = SetCapabilities(*c.caps)) return err;
  }
  return 0;
}

}  // namespace

std::string CapabilityName(int cap) {
  switch (cap) {
    case CAP_SYS_ADMIN: return "CAP_SYS_ADMIN";
    case CAP_PERFMON: return "CAP_PERFMON";
    case CAP_IPC_LOCK: return "CAP_IPC_LOCK";
    case CAP_SYS_PTRACE: return "CAP_SYS_PTRACE";
    case CAP_KILL: return "CAP_KILL";
    case CAP_SYSLOG: return "CAP_SYSLOG";
    case CAP_SYS_RESOURCE: return "CAP_SYS_RESOURCE";
    default: return fmt::format("CAP_<{}>", cap);
  }
}

Result<int> RunInForkedChild(Backend& backend, const ChildCredentials& creds,
                             const std::function<int(Backend&)>& fn) {
  const std::string call = "run_in_child(" + creds.Describe() + ")";
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return Result<int>::Failure(errno, call + ": pipe2");
  const pid_t pid = ForkChild();  // own process group, SIGKILL if we die
  if (pid < 0) {
    const int err = errno;
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    return Result<int>::Failure(err, call + ": fork");
  }
  if (pid == 0) {
    ::close(pipefd[0]);
    int32_t answer[2] = {0, 0};
    if (int err = ApplyCredentials(creds)) {
      answer[0] = 1;
      answer[1] = err;
    } else {
      answer[1] = fn(backend);
    }
    (void)!::write(pipefd[1], answer, sizeof answer);
    ::_exit(0);
  }
  ::close(pipefd[1]);
  int32_t answer[2];
  const bool got = ReadAll(pipefd[0], answer, sizeof answer);
  ::close(pipefd[0]);
  const int status = ReapChild(pid);
  if (!got) return Result<int>::Failure(ECHILD, fmt::format("{}: the child died (wait status {:#x})", call, status));
  if (answer[0] != 0) return Result<int>::Failure(answer[1], call + ": taking the credentials");
  return Result<int>::Ok(answer[1], call);
}

}  // namespace internal

std::string ChildCredentials::Describe() const {
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  if (uid) add(fmt::format("uid={}", *uid));
  if (caps) {
    std::string names;
    for (int c : *caps) names += (names.empty() ? "" : ",") + internal::CapabilityName(c);
    add("caps={" + names + "}");
  }
  if (rlimit_memlock) add(fmt::format("RLIMIT_MEMLOCK={}", *rlimit_memlock));
  if (rlimit_nofile) add(fmt::format("RLIMIT_NOFILE={}", *rlimit_nofile));
  return out.empty() ? "as the parent" : out;
}

}  // namespace perftest
