#include "tools/exec/tracee.h"

#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace perftest::exec {

void SetSyscallArg(Regs* r, int i, uint64_t v) {
  switch (i) {
    case 0: r->rdi = v; break;
    case 1: r->rsi = v; break;
    case 2: r->rdx = v; break;
    case 3: r->r10 = v; break;
    case 4: r->r8 = v; break;
    default: r->r9 = v; break;
  }
}

bool GetRegs(pid_t tid, Regs* r) { return ptrace(PTRACE_GETREGS, tid, nullptr, r) == 0; }
bool SetRegs(pid_t tid, const Regs& r) { return ptrace(PTRACE_SETREGS, tid, nullptr, &r) == 0; }

bool ReadMemory(pid_t tid, uint64_t addr, void* out, size_t len) {
  if (len == 0) return true;
  iovec local{out, len};
  iovec remote{reinterpret_cast<void*>(addr), len};
  return process_vm_readv(tid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(len);
}

bool WriteMemory(pid_t tid, uint64_t addr, const void* data, size_t len) {
  if (len == 0) return true;
  iovec local{const_cast<void*>(data), len};
  iovec remote{reinterpret_cast<void*>(addr), len};
  return process_vm_writev(tid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(len);
}

bool ReadString(pid_t tid, uint64_t addr, size_t max, std::string* out) {
  out->clear();
  char chunk[256];
  while (out->size() <= max) {
    // Stay within the page: a string may end just before an unmapped one.
    const size_t to_page = 4096 - (addr % 4096);
    const size_t n = std::min(sizeof chunk, to_page);
    if (!ReadMemory(tid, addr, chunk, n)) return false;
    for (size_t i = 0; i < n; ++i) {
      if (chunk[i] == '\0') return out->size() <= max;
      out->push_back(chunk[i]);
    }
    addr += n;
  }
  return false;
}

Injector::~Injector() {
  for (int sig : held_signals_) syscall(SYS_tgkill, -1, tid_, sig) == 0 || kill(tid_, sig);
}

bool Injector::RunToExit() {
  if (ptrace(PTRACE_SYSCALL, tid_, nullptr, nullptr) != 0) return !(dead_ = true);
  for (;;) {
    int status = 0;
    if (waitpid(tid_, &status, __WALL) != tid_) {
      if (errno == EINTR) continue;
      return !(dead_ = true);
    }
    if (WIFEXITED(status) || WIFSIGNALED(status)) return !(dead_ = true);
    if (!WIFSTOPPED(status)) continue;
    ++stops_;
    const int sig = WSTOPSIG(status);
    const int event = status >> 16;
    if (getenv("PERFTEST_EXEC_DEBUG") != nullptr && sig != (SIGTRAP | 0x80)) {
      fprintf(stderr, "perftest exec: injector [%d] stop sig=%d event=%d\n", tid_, sig, event);
    }
    if (sig == (SIGTRAP | 0x80)) {
      __ptrace_syscall_info info{};
      if (ptrace(PTRACE_GET_SYSCALL_INFO, tid_, sizeof info, &info) > 0 && info.op == PTRACE_SYSCALL_INFO_EXIT) {
        return true;
      }
    } else if (event == PTRACE_EVENT_EXIT) {
      // Killed meanwhile (SIGKILL): let it go.
      ptrace(PTRACE_CONT, tid_, nullptr, nullptr);
      return !(dead_ = true);
    } else if (event == 0 && sig != SIGTRAP) {
      held_signals_.push_back(sig);  // a signal-delivery-stop: deliver it later
    }
    if (ptrace(PTRACE_SYSCALL, tid_, nullptr, nullptr) != 0) return !(dead_ = true);
  }
}

std::optional<long> Injector::Call(long nr, std::initializer_list<uint64_t> args) {
  if (dead_) return std::nullopt;
  Regs r = entry_;
  int i = 0;
  for (uint64_t a : args) SetSyscallArg(&r, i++, a);
  if (at_entry_) {
    r.orig_rax = static_cast<uint64_t>(nr);
    if (!SetRegs(tid_, r)) return std::nullopt;
    at_entry_ = false;
    if (!RunToExit()) return std::nullopt;
  } else {
    r.rip = entry_.rip - 2;
    r.rax = static_cast<uint64_t>(nr);
    r.orig_rax = static_cast<uint64_t>(nr);
    if (!SetRegs(tid_, r)) return std::nullopt;
    // The syscall-entry-stop of the re-executed instruction, then its exit.
    if (!RunToExit()) return std::nullopt;
  }
  Regs out;
  if (!GetRegs(tid_, &out)) return std::nullopt;
  return static_cast<long>(out.rax);
}

bool Injector::Finish(long result) {
  if (dead_) return false;
  Regs r = entry_;
  r.rax = static_cast<uint64_t>(result);
  if (at_entry_) r.orig_rax = static_cast<uint64_t>(-1);  // skip the call (syscall_enter_from_user_mode() -> -1)
  return SetRegs(tid_, r);
}

bool Injector::Reissue() {
  if (dead_) return false;
  if (at_entry_) return true;  // nothing changed: the call goes on when resumed
  Regs r = entry_;
  r.rip = entry_.rip - 2;
  r.rax = entry_.orig_rax;
  return SetRegs(tid_, r);
}

}  // namespace perftest::exec
