#include "tools/profile/bpf_sampler.h"

#include <linux/perf_event.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <string>

#ifdef PERFTEST_PROFILE_BPF
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "profile.skel.h"  // generated: bpftool gen skeleton (tools/profile/CMakeLists.txt)
#endif

namespace perftest::profile {

#ifdef PERFTEST_PROFILE_BPF
bool BpfModeBuilt() { return true; }

namespace {
// bpf/profile.bpf.c struct key_t.
struct BpfKey {
  uint32_t pid;
  uint32_t tid;
  int64_t user_stack_id;
  int64_t kernel_stack_id;
  char comm[16];
};
constexpr size_t kMaxDepth = 127;  // PERF_MAX_STACK_DEPTH in profile.bpf.c
}  // namespace

struct BpfSampler::Skeleton {
  profile_bpf* obj = nullptr;
  ~Skeleton() {
    if (obj) profile_bpf::destroy(obj);
  }
};

int BpfSampler::prog_fd() const { return skel_ && skel_->obj ? bpf_program__fd(skel_->obj->progs.do_perf_event) : -1; }

Result<void> BpfSampler::Open() {
  skel_ = std::make_unique<Skeleton>();
  skel_->obj = profile_bpf::open();
  if (!skel_->obj) return Result<void>::Failure(errno ? errno : EINVAL, "profile_bpf__open()");
  skel_->obj->rodata->skip_user_stacks = opt_.kernel_stacks_only ? 1 : 0;
  skel_->obj->rodata->skip_kernel_stacks = opt_.user_stacks_only ? 1 : 0;
  if (int e = bpf_map__set_max_entries(skel_->obj->maps.stack_traces, static_cast<uint32_t>(opt_.stack_storage_size)))
    return Result<void>::Failure(-e, "bpf_map__set_max_entries(stack_traces)");
  if (int e = profile_bpf::load(skel_->obj))
    return Result<void>::Failure(-e, "profile_bpf__load() (bpf(BPF_PROG_LOAD, BPF_PROG_TYPE_PERF_EVENT))");
  perf_event_attr attr = RingSampler::Attr(opt_);
  attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID;  // no ring buffer: nothing is written
  attr.comm = 0;
  attr.sample_id_all = 0;
  attr.watermark = 0;
  attr.wakeup_watermark = 0;
  Result<std::vector<std::pair<pid_t, int>>> targets = EventTargets(backend_, opt_);
  if (!targets.ok()) return Result<void>::Failure(targets.error(), targets.call());
  for (auto [pid, cpu] : *targets) {
    Result<Event> ev = Event::Open(backend_, attr, pid, cpu);
    if (!ev.ok()) {
      if (opt_.pid > 0 && ev.error() == ESRCH) continue;
      return Result<void>::Failure(ev.error(), ev.call());
    }
    Result<int> r = backend_.Ioctl(ev->fd(), PERF_EVENT_IOC_SET_BPF, static_cast<uintptr_t>(prog_fd()));
    if (!r.ok()) return Result<void>::Failure(r.error(), r.call());
    events_.push_back(std::move(*ev));
  }
  if (events_.empty()) return Result<void>::Failure(ESRCH, "no thread of pid " + std::to_string(opt_.pid));
  return Result<void>::Ok();
}

Result<void> BpfSampler::Collect() {
  const int counts_fd = bpf_map__fd(skel_->obj->maps.counts);
  const int stacks_fd = bpf_map__fd(skel_->obj->maps.stack_traces);
  std::map<int64_t, std::vector<uint64_t>> stacks;
  auto stack = [&](int64_t id) -> const std::vector<uint64_t>& {
    auto it = stacks.find(id);
    if (it != stacks.end()) return it->second;
    std::vector<uint64_t> ips(kMaxDepth, 0);
    uint32_t key = static_cast<uint32_t>(id);
    std::vector<uint64_t> out;
    if (bpf_map_lookup_elem(stacks_fd, &key, ips.data()) == 0) {
      for (uint64_t ip : ips) {
        if (!ip) break;
        out.push_back(ip);
      }
    }
    return stacks.emplace(id, std::move(out)).first->second;
  };
  BpfKey key{}, next{};
  bool first = true;
  std::map<pid_t, bool> kthreads;
  while (bpf_map_get_next_key(counts_fd, first ? nullptr : &key, &next) == 0) {
    first = false;
    key = next;
    uint64_t n = 0;
    if (bpf_map_lookup_elem(counts_fd, &key, &n) != 0) continue;
    const pid_t pid = static_cast<pid_t>(key.pid);
    if (opt_.pid > 0 && pid != opt_.pid) continue;
    if (opt_.user_threads_only || opt_.kernel_threads_only) {
      auto it = kthreads.find(pid);
      if (it == kthreads.end()) it = kthreads.emplace(pid, pid == 0 || is_kthread_(pid)).first;
      if (opt_.user_threads_only && it->second) continue;
      if (opt_.kernel_threads_only && !it->second) continue;
    }
    StackKey k;
    k.pid = pid;
    k.comm = std::string(key.comm, strnlen(key.comm, sizeof key.comm));
    if (!opt_.kernel_stacks_only) {
      if (key.user_stack_id >= 0) k.user = stack(key.user_stack_id);
      else if (key.user_stack_id != -EFAULT) k.user_missing = true;
    }
    if (!opt_.user_stacks_only) {
      if (key.kernel_stack_id >= 0) k.kernel = stack(key.kernel_stack_id);
      else if (key.kernel_stack_id != -EFAULT) k.kernel_missing = true;
    }
    counts_.AddKey(std::move(k), n);
  }
  return Result<void>::Ok();
}

#else
bool BpfModeBuilt() { return false; }
struct BpfSampler::Skeleton {};
int BpfSampler::prog_fd() const { return -1; }
Result<void> BpfSampler::Open() {
  return Result<void>::Failure(ENOSYS, "--mode=bpf: not built (needs clang, bpftool and libbpf-dev at build time)");
}
Result<void> BpfSampler::Collect() { return Result<void>::Failure(ENOSYS, "--mode=bpf: not built"); }
#endif

BpfSampler::BpfSampler(Backend& backend, SamplerOptions options, KthreadLookup is_kthread)
    : backend_(backend), opt_(options), is_kthread_(std::move(is_kthread)), counts_(options.stack_storage_size) {}
BpfSampler::~BpfSampler() { events_.clear(); }

Result<void> BpfSampler::Enable() {
  for (Event& e : events_) {
    if (Result<void> r = e.Enable(); !r.ok()) return r;
  }
  return Result<void>::Ok();
}

Result<void> BpfSampler::Disable() {
  for (Event& e : events_) {
    if (Result<void> r = e.Disable(); !r.ok()) return r;
  }
  return Result<void>::Ok();
}

}  // namespace perftest::profile
