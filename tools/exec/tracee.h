// A stopped tracee thread under ptrace(2): its registers as a system call
// sees them, its memory, and system calls run in it on the tracer's behalf.
// x86_64 only (user_regs_struct; `syscall` is two bytes, 0f 05).
//
//   SyscallStop s;                                  // at a seccomp or syscall-entry stop
//   if (!ReadSyscallStop(tid, &s)) ...              // the tracee is gone
//   Injector inj(tid, s.regs);
//   std::optional<long> fd = inj.Call(SYS_pidfd_open, {getpid(), 0});   // runs in the tracee
//   inj.Finish(result);                             // its own call returns `result`
//   // ... then resume the tracee (PTRACE_CONT / PTRACE_SYSCALL)
//
// Injection: at the entry the current call is replaced (orig_rax and the
// argument registers, which the kernel re-reads after the stop: seccomp(2)
// "SECCOMP_RET_TRACE", ptrace(2) "Syscall-stops"); the tracee is run to its
// syscall-exit-stop and rax read. Each further call rewinds rip by the two
// bytes of the `syscall` instruction with rax = nr, so the tracee executes
// it again. Finish() restores the registers of the entry with rax = result,
// so the program sees its own call return that. Signals that arrive meanwhile
// are held and re-sent with tgkill(2) once the tracee is resumed.
#pragma once

#include <sys/types.h>
#include <sys/user.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace perftest::exec {

#if !defined(__x86_64__)
#error "tools/exec: the tracee layer knows x86_64's registers only"
#endif

using Regs = user_regs_struct;

inline uint64_t SyscallNr(const Regs& r) { return r.orig_rax; }
inline uint64_t SyscallArg(const Regs& r, int i) {
  switch (i) {
    case 0: return r.rdi;
    case 1: return r.rsi;
    case 2: return r.rdx;
    case 3: return r.r10;
    case 4: return r.r8;
    default: return r.r9;
  }
}
void SetSyscallArg(Regs* r, int i, uint64_t v);

bool GetRegs(pid_t tid, Regs* r);
bool SetRegs(pid_t tid, const Regs& r);

// process_vm_readv(2)/process_vm_writev(2) of the tracee's memory. Return
// false on any fault (the caller answers EFAULT, as copy_from_user() does).
bool ReadMemory(pid_t tid, uint64_t addr, void* out, size_t len);
bool WriteMemory(pid_t tid, uint64_t addr, const void* data, size_t len);
// A NUL-terminated string of at most `max` bytes (without the NUL); false on
// a fault or no NUL within `max`.
bool ReadString(pid_t tid, uint64_t addr, size_t max, std::string* out);

class Injector {
 public:
  // `entry`: the registers at a seccomp stop or syscall-entry stop of `tid`.
  Injector(pid_t tid, const Regs& entry) : tid_(tid), entry_(entry) {}
  ~Injector();
  Injector(const Injector&) = delete;
  Injector& operator=(const Injector&) = delete;

  // Runs system call `nr` with `args` in the tracee; its return value
  // (-errno on failure), or nullopt when the tracee died meanwhile.
  std::optional<long> Call(long nr, std::initializer_list<uint64_t> args);
  // The tracee's own call returns `result` (skipped when no call was
  // injected). False when the tracee is gone.
  bool Finish(long result);
  // The tracee's own call runs natively after all (the caller lets its next
  // stop for it pass). False when the tracee is gone.
  bool Reissue();
  bool dead() const { return dead_; }
  // Whether Call() ran anything: the tracee is then at a syscall-exit-stop.
  bool injected() const { return !at_entry_; }
  // The ptrace stops the injected calls took (each a context switch of the tracee).
  uint64_t stops() const { return stops_; }

 private:
  // Resumes with PTRACE_SYSCALL until the syscall-exit-stop; false if the tracee died.
  bool RunToExit();

  pid_t tid_;
  Regs entry_;
  bool at_entry_ = true;
  bool dead_ = false;
  uint64_t stops_ = 0;
  std::vector<int> held_signals_;
};

}  // namespace perftest::exec
