// MockBackend: the simulated task's credentials (capabilities, uid, limits),
// the permission rules that use them, and RunInChild, the simulated fork
// of a child that takes other credentials.
//
// Sources: kernel/events/core.c perfmon_capable() (include/linux/capability.h),
// perf_check_permission(), perf_mmap() (CAP_IPC_LOCK, RLIMIT_MEMLOCK),
// perf_cgroup_connect(); fs/file.c get_unused_fd_flags() (RLIMIT_NOFILE);
// kernel/ptrace.c __ptrace_may_access() and security/commoncap.c
// cap_ptrace_access_check(); capabilities(7) for what setresuid() does.
#include <fmt/format.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <algorithm>
#include <cerrno>
#include <set>

#include "mocks/internal/mock_backend_impl.h"

namespace perftest::mock {
namespace {

constexpr uint64_t Cap(int c) { return uint64_t{1} << c; }
// Every capability this build's UAPI names.
constexpr uint64_t kAllCaps = (uint64_t{1} << (CAP_LAST_CAP + 1)) - 1;

}  // namespace

MockBackend::Credentials MockBackend::ProfileCredentials(const MockProfile& p) {
  Credentials c;
  // privileged: root with every capability; otherwise a user without any.
  c.uid = p.privileged ? 0 : 1000;
  c.caps = p.privileged ? kAllCaps : 0;
  c.memlock_rlimit = uint64_t{p.memlock_rlimit_kb} * 1024;
  return c;
}

bool MockBackend::Perfmon() const { return (creds_.caps & (Cap(CAP_PERFMON) | Cap(CAP_SYS_ADMIN))) != 0; }

bool MockBackend::SysAdmin() const { return (creds_.caps & Cap(CAP_SYS_ADMIN)) != 0; }

bool MockBackend::IpcLock() const { return (creds_.caps & Cap(CAP_IPC_LOCK)) != 0; }

bool MockBackend::MlockLimits(uint64_t pages, uint64_t* user_extra, uint64_t* extra) const {
  const size_t page = profile_.page_size;
  const uint64_t user_lock_limit = (uint64_t{profile_.mlock_kb} * 1024 / page) * profile_.ncpus;
  // "sysctl_perf_event_mlock may have changed, so that user->locked_vm > user_lock_limit"
  const uint64_t user_locked = std::min(locked_vm_, user_lock_limit) + pages;
  *user_extra = pages;
  *extra = 0;
  if (user_locked > user_lock_limit) {
    *extra = user_locked - user_lock_limit;  // charge locked_vm up to the limit, the rest pinned_vm
    *user_extra -= *extra;
  }
  const uint64_t lock_limit = creds_.memlock_rlimit / page;
  return pinned_vm_ + *extra <= lock_limit || profile_.perf_event_paranoid <= -1 || IpcLock();
}

int MockBackend::FindTask(pid_t pid, std::string* why) const {
  if (pid == 0 || pid == task_.tid || (parent_pid_ && pid == *parent_pid_) || spawned_.count(pid) != 0) return 0;
  *why = fmt::format("no task {}", pid);
  return ESRCH;
}

int MockBackend::CheckTaskPermission(pid_t pid, std::string* why) const {
  if (!parent_pid_ || pid != *parent_pid_) return 0;  // the task itself: same_thread_group()
  if (Perfmon()) return 0;  // "is_capable || ptrace_may_access(task, PTRACE_MODE_READ_REALCREDS)"
  if (creds_.caps & Cap(CAP_SYS_PTRACE)) return 0;
  const bool same_user = creds_.uid == parent_creds_.uid;
  const bool caps_subset = (parent_creds_.caps & ~creds_.caps) == 0;  // cap_ptrace_access_check()
  if (same_user && caps_subset) return 0;
  *why = same_user ? "the target has capabilities the caller lacks (cap_ptrace_access_check())"
                   : fmt::format("uid {} may not ptrace a task of uid {} (perf_check_permission())", creds_.uid,
                                 parent_creds_.uid);
  return EACCES;
}

int MockBackend::CgroupConnect(int fd, std::string* why) const {
  struct statfs fs;
  struct stat st;
  if (::fstatfs(fd, &fs) != 0 || ::fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) ||
      (fs.f_type != CGROUP2_SUPER_MAGIC && fs.f_type != CGROUP_SUPER_MAGIC)) {
    *why = fmt::format("fd {} is not a cgroup directory (perf_cgroup_connect())", fd);
    return EBADF;
  }
  if (fs.f_type == CGROUP_SUPER_MAGIC) {
    // css_tryget_online_from_dir() finds no perf_event css in a v1
    // hierarchy of other controllers; the model binds perf_event to v2.
    *why = "a cgroup v1 directory has no perf_event controller here (css_tryget_online_from_dir())";
    return ENOENT;
  }
  return 0;
}

Result<int> MockBackend::RunInChild(const ChildCredentials& c, const std::function<int(Backend&)>& fn) {
  const std::string call = "run_in_child(" + c.Describe() + ")";
  if (parent_pid_) return Result<int>::Failure(ENOSYS, call + " [mock: a grandchild is not modelled]");
  // The child's side of taking the credentials, as the kernel judges it.
  Credentials child = creds_;
  auto refuse = [&](const char* what) { return Result<int>::Failure(EPERM, fmt::format("{} [mock: {}]", call, what)); };
  if (c.rlimit_memlock) {
    if (*c.rlimit_memlock > child.memlock_rlimit && !(child.caps & Cap(CAP_SYS_RESOURCE))) {
      return refuse("raising RLIMIT_MEMLOCK needs CAP_SYS_RESOURCE");
    }
    child.memlock_rlimit = *c.rlimit_memlock;
  }
  if (c.rlimit_nofile) child.nofile = *c.rlimit_nofile;
  if (c.uid) {
    if (*c.uid != child.uid && !(child.caps & Cap(CAP_SETUID))) return refuse("setresuid() needs CAP_SETUID");
    // Leaving uid 0 clears every capability unless PR_SET_KEEPCAPS (taken when `caps` is given).
    if (*c.uid != 0 && !c.caps) child.caps = 0;
    child.uid = *c.uid;
  }
  if (c.caps) {
    uint64_t mask = 0;
    for (int cap : *c.caps) mask |= Cap(cap);
    if (mask & ~child.caps) return refuse("capset() cannot add capabilities outside the permitted set");
    child.caps = mask;
  }

  // fork(): a new task; the parent's events, fds and mappings stay as they are.
  std::set<int> parent_fds;
  for (const auto& [fd, ev] : fds_) parent_fds.insert(fd);
  std::set<uintptr_t> parent_maps;
  for (const auto& [addr, m] : mappings_) parent_maps.insert(addr);
  const Task parent_task = task_;
  const Credentials saved_creds = creds_;
  const uint64_t saved_locked = locked_vm_, saved_pinned = pinned_vm_;
  parent_pid_ = task_.pid;
  parent_creds_ = creds_;
  task_.pid = task_.tid = next_pid_++;
  creds_ = child;
  if (child.uid != saved_creds.uid) locked_vm_ = 0;  // user->locked_vm of another user
  pinned_vm_ = 0;                                    // mm->pinned_vm of the child's new mm

  const int answer = fn(*this);

  // exit(): the child's mappings and fds go (exit_mmap(), exit_files()).
  std::vector<std::pair<uintptr_t, size_t>> maps;
  for (const auto& [addr, m] : mappings_) {
    if (!parent_maps.count(addr)) maps.emplace_back(addr, m.length);
  }
  for (const auto& [addr, len] : maps) (void)Munmap(reinterpret_cast<void*>(addr), len);
  std::vector<int> fds;
  for (const auto& [fd, ev] : fds_) {
    if (!parent_fds.count(fd)) fds.push_back(fd);
  }
  for (int fd : fds) (void)Close(fd);
  task_ = parent_task;
  creds_ = saved_creds;
  locked_vm_ = saved_locked;
  pinned_vm_ = saved_pinned;
  parent_pid_.reset();
  return Result<int>::Ok(answer, call);
}

}  // namespace perftest::mock
