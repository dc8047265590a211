#include "tools/exec/syscall_filter.h"

#include <linux/prctl.h>
#include <sys/mman.h>
#include <seccomp.h>

#include <cerrno>
#include <memory>
#include <string>

namespace perftest::exec {
namespace {

struct CtxDeleter {
  void operator()(scmp_filter_ctx c) const { seccomp_release(c); }
};
using Ctx = std::unique_ptr<void, CtxDeleter>;

// SCMP_ACT_TRACE's data: PTRACE_GETEVENTMSG of the stop returns it.
constexpr uint32_t kTraceMsg = 0x7065;  // "pe"

}  // namespace

Result<PerfFdRange> ChoosePerfFdRange(uint64_t rlimit_nofile) {
  const std::string call = "choose_perf_fd_range(RLIMIT_NOFILE=" + std::to_string(rlimit_nofile) + ")";
  if (rlimit_nofile < 16) return Result<PerfFdRange>::Failure(EMFILE, call);
  const uint64_t limit = rlimit_nofile > (1u << 30) ? (1u << 30) : rlimit_nofile;
  PerfFdRange r;
  if (limit >= 512) {
    r.size = 256;
    r.base = static_cast<int>((limit / 256 - 1) * 256);
  } else {
    uint64_t block = 1;
    while (block * 2 <= limit) block *= 2;
    r.size = static_cast<int>(block / 2);
    r.base = static_cast<int>(block / 2);
  }
  return Result<PerfFdRange>::Ok(r, call);
}

int InstallServeFilter(const PerfFdRange& range) {
  Ctx ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return ENOMEM;
  const uint32_t trace = SCMP_ACT_TRACE(kTraceMsg);
  const uint64_t mask = ~static_cast<uint64_t>(range.size - 1);
  const auto base = static_cast<uint64_t>(range.base);
  int rc = seccomp_rule_add(ctx.get(), trace, SCMP_SYS(perf_event_open), 0);
  for (int option : {PR_TASK_PERF_EVENTS_DISABLE, PR_TASK_PERF_EVENTS_ENABLE, PR_SET_NAME}) {
    if (rc == 0) rc = seccomp_rule_add(ctx.get(), trace, SCMP_SYS(prctl), 1, SCMP_A0(SCMP_CMP_EQ, static_cast<scmp_datum_t>(option)));
  }
  for (int nr : {SCMP_SYS(read), SCMP_SYS(readv), SCMP_SYS(pread64), SCMP_SYS(ioctl), SCMP_SYS(close),
                 SCMP_SYS(fcntl), SCMP_SYS(dup), SCMP_SYS(dup2), SCMP_SYS(dup3)}) {
    if (rc == 0) rc = seccomp_rule_add(ctx.get(), trace, nr, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, mask, base));
  }
  if (rc == 0) rc = seccomp_rule_add(ctx.get(), trace, SCMP_SYS(mmap), 1, SCMP_A4(SCMP_CMP_MASKED_EQ, mask, base));
  if (rc == 0) rc = seccomp_rule_add(ctx.get(), trace, SCMP_SYS(mmap), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC));
  if (rc == 0) rc = seccomp_rule_add(ctx.get(), trace, SCMP_SYS(epoll_ctl), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, mask, base));
  for (int nr : {SCMP_SYS(poll), SCMP_SYS(ppoll), SCMP_SYS(close_range)}) {
    if (rc == 0) rc = seccomp_rule_add(ctx.get(), trace, nr, 0);
  }
  if (rc == 0) rc = seccomp_load(ctx.get());
  return -rc;
}

}  // namespace perftest::exec
