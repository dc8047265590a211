#include "harness/internal/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace perftest::internal {

// Whole-buffer pipe I/O (EINTR retried). False on EOF or error.
bool WriteAll(int fd, const void* buf, size_t len) {
  const char* p = static_cast<const char*>(buf);
  while (len > 0) {
    const ssize_t n = ::write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

bool ReadAll(int fd, void* buf, size_t len) {
  char* p = static_cast<char*>(buf);
  while (len > 0) {
    const ssize_t n = ::read(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

namespace {


// The wire form of a command: fixed fields, then comm and path bytes.
struct WireCommand {
  int32_t op;  // 1 run, 2 exit
  int32_t kind;
  uint64_t count;
  int64_t duration_ns;
  uint64_t addr;
  uint32_t width;
  uint32_t comm_len;
  uint64_t pages_each;
  uint32_t path_len;
  uint32_t pad;
};

struct WireReply {
  int32_t err;  // 0 or the workload's errno
  uint32_t nchildren;
  uint64_t region_begin;
  uint64_t region_end;
};

bool SendString(int fd, const std::string& s) { return WriteAll(fd, s.data(), s.size()); }

bool ReceiveString(int fd, uint32_t len, std::string* s) {
  s->resize(len);
  return len == 0 || ReadAll(fd, s->data(), len);
}

[[noreturn]] void ChildLoop(int command_fd, int reply_fd, const ChildProcesses::Runner& run) {
  for (;;) {
    WireCommand c;
    if (!ReadAll(command_fd, &c, sizeof c) || c.op != 1) ::_exit(0);
    Workload w;
    w.kind = static_cast<Workload::Kind>(c.kind);
    w.count = c.count;
    w.duration = std::chrono::nanoseconds(c.duration_ns);
    w.addr = c.addr;
    w.width = c.width;
    w.pages_each = c.pages_each;
    if (!ReceiveString(command_fd, c.comm_len, &w.comm) || !ReceiveString(command_fd, c.path_len, &w.path)) ::_exit(0);
    Result<WorkloadResult> r = run(w);
    WireReply reply{};
    std::vector<pid_t> children;
    if (r.ok()) {
      reply.region_begin = r->region_begin;
      reply.region_end = r->region_end;
      children = r->children;
    } else {
      reply.err = r.error();
    }
    reply.nchildren = static_cast<uint32_t>(children.size());
    if (!WriteAll(reply_fd, &reply, sizeof reply) ||
        !WriteAll(reply_fd, children.data(), children.size() * sizeof(pid_t))) {
      ::_exit(0);
    }
  }
}

}  // namespace

pid_t ForkChild() {
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (::getppid() != parent) ::_exit(1);  // the parent died before PDEATHSIG was armed
    return 0;
  }
  if (pid > 0) ::setpgid(pid, pid);  // EACCES once the child exec'd: it did it itself
  return pid;
}

int ReapChild(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return status;
}

ChildProcesses::~ChildProcesses() {
  for (auto& [pid, c] : children_) {
    ::close(c.command_fd);
    ::close(c.reply_fd);
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
    ReapChild(pid);
  }
}

Result<pid_t> ChildProcesses::Spawn(Runner run) {
  const std::string call = "spawn_task()";
  int command[2], reply[2];
  if (::pipe2(command, O_CLOEXEC) != 0) return Result<pid_t>::Failure(errno, call);
  if (::pipe2(reply, O_CLOEXEC) != 0) {
    const int err = errno;
    ::close(command[0]);
    ::close(command[1]);
    return Result<pid_t>::Failure(err, call);
  }
  const pid_t pid = ForkChild();
  if (pid == 0) {
    ::close(command[1]);
    ::close(reply[0]);
    ChildLoop(command[0], reply[1], run);
  }
  const int err = errno;
  ::close(command[0]);
  ::close(reply[1]);
  if (pid < 0) {
    ::close(command[1]);
    ::close(reply[0]);
    return Result<pid_t>::Failure(err, call);
  }
  children_[pid] = Child{command[1], reply[0]};
  return Result<pid_t>::Ok(pid, fmt::format("spawn_task() = {}", pid));
}

Result<WorkloadResult> ChildProcesses::Run(pid_t pid, const Workload& w) {
  const std::string call = fmt::format("run_in_task({}, {})", pid, w.Describe());
  auto it = children_.find(pid);
  if (it == children_.end()) return Result<WorkloadResult>::Failure(ESRCH, call);
  WireCommand c{};
  c.op = 1;
  c.kind = static_cast<int32_t>(w.kind);
  c.count = w.count;
  c.duration_ns = w.duration.count();
  c.addr = w.addr;
  c.width = w.width;
  c.comm_len = static_cast<uint32_t>(w.comm.size());
  c.pages_each = w.pages_each;
  c.path_len = static_cast<uint32_t>(w.path.size());
  WireReply reply{};
  if (!WriteAll(it->second.command_fd, &c, sizeof c) || !SendString(it->second.command_fd, w.comm) ||
      !SendString(it->second.command_fd, w.path) || !ReadAll(it->second.reply_fd, &reply, sizeof reply)) {
    return Result<WorkloadResult>::Failure(EPIPE, call + ": the task died");
  }
  WorkloadResult out;
  out.region_begin = reply.region_begin;
  out.region_end = reply.region_end;
  out.children.resize(reply.nchildren);
  if (!ReadAll(it->second.reply_fd, out.children.data(), out.children.size() * sizeof(pid_t))) {
    return Result<WorkloadResult>::Failure(EPIPE, call + ": the task died");
  }
  if (reply.err != 0) return Result<WorkloadResult>::Failure(reply.err, call);
  return Result<WorkloadResult>::Ok(std::move(out), call);
}

Result<void> ChildProcesses::Exit(pid_t pid) {
  const std::string call = fmt::format("exit_task({})", pid);
  auto it = children_.find(pid);
  if (it == children_.end()) return Result<void>::Failure(ESRCH, call);
  WireCommand c{};
  c.op = 2;
  (void)WriteAll(it->second.command_fd, &c, sizeof c);
  ::close(it->second.command_fd);
  ::close(it->second.reply_fd);
  children_.erase(it);
  const int status = ReapChild(pid);
  if (status < 0) return Result<void>::Failure(errno, call);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Result<void>::Failure(ECHILD, fmt::format("{}: wait status {:#x}", call, status));
  }
  return Result<void>::Ok({}, call);
}

}  // namespace perftest::internal
