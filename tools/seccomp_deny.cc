// seccomp_deny: run a command with syscalls denied by a seccomp filter, as a
// container's seccomp profile does (Docker's default profile answers
// perf_event_open with EPERM for a process without CAP_PERFMON/CAP_SYS_ADMIN).
//
//   seccomp_deny [--syscall=NAME]... [--errno=NAME|NUMBER] -- CMD [ARGS...]
//
// Defaults: --syscall=perf_event_open --errno=EPERM. Every other syscall is
// allowed. The filter covers the native architecture and, on x86_64, the
// i386 and x32 ABIs too (a 32-bit binary must not slip past it, as Docker's
// profile also lists them). PR_SET_NO_NEW_PRIVS is set (libseccomp's
// default), so an unprivileged user can run it; the filter is inherited by
// every child and kept across execve, so /proc/<pid>/status of CMD shows
// "Seccomp: 2".
//
// Exit status: CMD's (seccomp_deny execs it); 2 on bad usage (unknown option,
// syscall or errno name, no command); 125 when the filter cannot be
// installed; 127 when CMD cannot be executed (as env(1) does).
//
// Used by runner/tests/test_container_fallback.py to prove that
// `perftest run --backend=auto` falls back to the mock under such a filter.
#include <seccomp.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace {

struct ErrnoName {
  const char* name;
  int value;
};

constexpr ErrnoName kErrnos[] = {
    {"EPERM", EPERM},   {"EACCES", EACCES}, {"ENOSYS", ENOSYS}, {"EINVAL", EINVAL},
    {"ENOENT", ENOENT}, {"EOPNOTSUPP", EOPNOTSUPP}, {"ENODEV", ENODEV}, {"EBUSY", EBUSY},
};

void Usage(FILE* out) {
  std::fprintf(out,
               "usage: seccomp_deny [--syscall=NAME]... [--errno=NAME|NUMBER] -- CMD [ARGS...]\n"
               "Run CMD with the named syscalls (default perf_event_open) failing with errno\n"
               "(default EPERM), as a container's seccomp profile does.\n");
}

bool ParseErrno(std::string_view text, int* out) {
  for (const ErrnoName& e : kErrnos) {
    if (text == e.name) {
      *out = e.value;
      return true;
    }
  }
  char* end = nullptr;
  const std::string s(text);
  const long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v <= 0 || v > 4095) return false;
  *out = static_cast<int>(v);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> syscalls;
  int err = EPERM;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "-h" || arg == "--help") {
      Usage(stdout);
      return 0;
    }
    if (arg.rfind("--syscall=", 0) == 0) {
      syscalls.emplace_back(arg.substr(10));
    } else if (arg.rfind("--errno=", 0) == 0) {
      if (!ParseErrno(arg.substr(8), &err)) {
        std::fprintf(stderr, "seccomp_deny: unknown errno '%s' (a name such as EPERM or a number 1-4095)\n",
                     argv[i] + 8);
        return 2;
      }
    } else {
      std::fprintf(stderr, "seccomp_deny: unknown option '%s' (the command goes after --)\n", argv[i]);
      Usage(stderr);
      return 2;
    }
  }
  if (i >= argc) {
    std::fprintf(stderr, "seccomp_deny: no command given after --\n");
    Usage(stderr);
    return 2;
  }
  if (syscalls.empty()) syscalls.emplace_back("perf_event_open");

  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) {
    std::fprintf(stderr, "seccomp_deny: seccomp_init failed\n");
    return 125;
  }
  if (seccomp_arch_native() == SCMP_ARCH_X86_64) {
    // Failure here only means the kernel or libseccomp lacks that ABI.
    (void)seccomp_arch_add(ctx, SCMP_ARCH_X86);
    (void)seccomp_arch_add(ctx, SCMP_ARCH_X32);
  }
  for (const std::string& name : syscalls) {
    const int nr = seccomp_syscall_resolve_name(name.c_str());
    if (nr == __NR_SCMP_ERROR) {
      std::fprintf(stderr, "seccomp_deny: unknown syscall '%s'\n", name.c_str());
      seccomp_release(ctx);
      return 2;
    }
    const int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(static_cast<uint32_t>(err)), nr, 0);
    if (rc < 0) {
      std::fprintf(stderr, "seccomp_deny: seccomp_rule_add(%s): %s\n", name.c_str(), std::strerror(-rc));
      seccomp_release(ctx);
      return 125;
    }
  }
  const int rc = seccomp_load(ctx);
  seccomp_release(ctx);
  if (rc < 0) {
    std::fprintf(stderr, "seccomp_deny: seccomp_load: %s\n", std::strerror(-rc));
    return 125;
  }
  execvp(argv[i], argv + i);
  std::fprintf(stderr, "seccomp_deny: cannot execute %s: %s\n", argv[i], std::strerror(errno));
  return 127;
}
