#include "fidelity/executor.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>

#include "harness/read_format.h"

namespace perftest::fidelity {
namespace {

// One event the sequence opened (on either backend), in open order.
struct Slot {
  size_t call_index = 0;      // the OpenCall that made it
  const OpenCall* open = nullptr;
  std::string pmu;
  int kfd = -1;
  int mfd = -1;
  bool kernel_open = false;   // kfd is ours and not closed
  bool mock_open = false;     // mfd is ours and not closed
  // The group as the mock built it (for read(2)'s exact size): the leader's
  // slot (its own index for a leader) and, for a leader, its members.
  size_t leader = 0;
  std::vector<size_t> members;
  // For a leader: an open naming it as group_fd succeeded on one backend
  // only, so its group differs between them (reads, group ioctls).
  bool group_diverged = false;
};

// One mmap(2) the sequence made (on either backend).
struct MapSlot {
  size_t slot = 0;  // the event mapped
  void* kaddr = nullptr;
  size_t klen = 0;
  void* maddr = nullptr;
  size_t mlen = 0;
  bool kernel_live() const { return kaddr != nullptr && klen != 0; }
  bool mock_live() const { return maddr != nullptr && mlen != 0; }
};

// An attr buffer: the attr, its tail, zeros to past the page (the kernel
// reads at most attr.size <= PAGE_SIZE bytes).
class AttrBuffer {
 public:
  AttrBuffer(const perf_event_attr& attr, const std::vector<uint8_t>& tail, size_t page_size)
      : words_((std::max(page_size, sizeof attr + tail.size()) + 64) / 8, 0) {
    auto* bytes = reinterpret_cast<unsigned char*>(words_.data());
    std::memcpy(bytes, &attr, sizeof attr);
    if (!tail.empty()) std::memcpy(bytes + sizeof attr, tail.data(), tail.size());
  }
  perf_event_attr* attr() { return reinterpret_cast<perf_event_attr*>(words_.data()); }

 private:
  std::vector<uint64_t> words_;
};

template <typename T>
void Fill(const Result<T>& r, Outcome* out) {
  out->ran = true;
  out->ok = r.ok();
  out->err = r.error();
  out->call = r.call();
}

// The layout fields of perf_event_mmap_page that do not depend on timing.
std::string PageShape(const void* p) {
  perf_event_mmap_page pg;
  std::memcpy(&pg, p, sizeof pg);
  return fmt::format(
      "version={}, compat_version={}, index={}, capabilities={:#x}, pmc_width={}, data_offset={}, data_size={}, "
      "aux_offset={}, aux_size={}",
      pg.version, pg.compat_version, pg.index, pg.capabilities & 0x3f, pg.pmc_width, pg.data_offset, pg.data_size,
      pg.aux_offset, pg.aux_size);
}

class Player {
 public:
  Player(Backend& kernel, Backend& mock, const GeneratorParams& params)
      : kernel_(kernel), mock_(mock), params_(params), devnull_(::open("/dev/null", O_RDONLY | O_CLOEXEC)) {}

  ~Player() {
    for (MapSlot& m : maps_) {
      if (m.kernel_live()) (void)kernel_.Munmap(m.kaddr, m.klen);
      if (m.mock_live() && !mock_.Munmap(m.maddr, m.mlen).ok()) ::munmap(m.maddr, m.mlen);
    }
    for (Slot& s : slots_) {
      if (s.kernel_open) (void)kernel_.Close(s.kfd);
      if (s.mock_open) (void)mock_.Close(s.mfd);
    }
    if (devnull_ >= 0) ::close(devnull_);
  }

  CallRecord Play(size_t index, const Call& call) {
    CallRecord rec;
    rec.index = index;
    rec.op = OpName(call);
    rec.description = DescribeCall(call);
    std::visit([&](const auto& c) { PlayOne(c, &rec); }, call);
    return rec;
  }

 private:
  // --- resolution -----------------------------------------------------------

  // event[ref]: the (ref % n)-th of the n events the mock has open.
  std::optional<size_t> ResolveEvent(EventRef ref) const {
    std::vector<size_t> live;
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].mock_open) live.push_back(i);
    }
    if (live.empty()) return std::nullopt;
    return live[ref % live.size()];
  }

  // Resolves the target of an operation; false (and rec->status kNoTarget) when the mock has no event open.
  bool Target(EventRef ref, CallRecord* rec, size_t* slot) {
    std::optional<size_t> s = ResolveEvent(ref);
    if (!s) {
      rec->status = CallStatus::kNoTarget;
      rec->description += " [no event open]";
      return false;
    }
    *slot = *s;
    rec->pmu = slots_[*s].pmu;
    rec->description += fmt::format(" [event[{}] = call {}]", ref, slots_[*s].call_index);
    rec->status = slots_[*s].kernel_open ? CallStatus::kCompared : CallStatus::kDependent;
    if (rec->status == CallStatus::kCompared && slots_[slots_[*s].leader].group_diverged) {
      rec->status = CallStatus::kDependent;
      rec->description += " [its group differs: a member opened on one backend only]";
    }
    return true;
  }

  static pid_t Pid(PidArg p, Backend& b) {
    switch (p) {
      case PidArg::kSelf: return 0;
      case PidArg::kAny: return -1;
      case PidArg::kSelfTid: return b.CurrentTask().tid;
      case PidArg::kNonexistent: return kNonexistentPid;
      case PidArg::kNegative: return -2;
    }
    return 0;
  }

  static int Cpu(CpuArg c, Backend& b) {
    const int n = b.Machine().ncpus;
    switch (c) {
      case CpuArg::kAny: return -1;
      case CpuArg::kFirst: return 0;
      case CpuArg::kLast: return n - 1;
      case CpuArg::kPastLast: return n;
      case CpuArg::kHuge: return INT_MAX;
      case CpuArg::kNegative: return -2;
    }
    return -1;
  }

  // A fd argument on each backend; *dependent when it names an event the kernel lacks.
  struct FdPair {
    int kernel = -1;
    int mock = -1;
    std::optional<size_t> slot;
  };
  FdPair ResolveFd(const FdChoice& f, CallRecord* rec, bool* dependent) {
    switch (f.kind) {
      case FdArg::kNone: return {};
      case FdArg::kBadFd: return {kBadFdNumber, kBadFdNumber, std::nullopt};
      case FdArg::kNonPerf: return {devnull_, devnull_, std::nullopt};
      case FdArg::kEvent: {
        std::optional<size_t> s = ResolveEvent(f.event);
        if (!s) {
          rec->description += fmt::format(" [event[{}]: none open, -1 used]", f.event);
          return {};
        }
        rec->description += fmt::format(" [event[{}] = call {}]", f.event, slots_[*s].call_index);
        if (!slots_[*s].kernel_open) *dependent = true;
        return {slots_[*s].kfd, slots_[*s].mfd, s};
      }
    }
    return {};
  }

  // The read_format size for the slot's group as the mock built it.
  size_t ExactReadSize(size_t slot) const {
    const uint64_t rf = slots_[slot].open->attr.read_format;
    size_t nr = 1;
    if (rf & PERF_FORMAT_GROUP) {
      const Slot& leader = slots_[slots_[slot].leader];
      for (size_t m : leader.members) nr += slots_[m].mock_open ? 1 : 0;
    }
    return ReadFormatSize(rf, nr);
  }

  void ForgetFromGroup(size_t slot) {
    Slot& s = slots_[slot];
    if (s.leader == slot) {
      // perf_group_detach(): the members become singletons.
      for (size_t m : s.members) slots_[m].leader = m;
      s.members.clear();
    } else {
      auto& mem = slots_[s.leader].members;
      mem.erase(std::remove(mem.begin(), mem.end(), slot), mem.end());
      s.leader = slot;
    }
  }

  // --- the calls ------------------------------------------------------------

  void PlayOne(const OpenCall& c, CallRecord* rec) {
    rec->pmu = PmuNameForType(c.attr.type, params_);
    bool dependent = false;
    const FdPair group = ResolveFd(c.group, rec, &dependent);
    auto run = [&](Backend& b, int group_fd, Outcome* out) {
      AttrBuffer buf(c.attr, c.tail, params_.page_size);
      Result<int> r = b.PerfEventOpen(buf.attr(), Pid(c.pid, b), Cpu(c.cpu, b), group_fd,
                                      static_cast<unsigned long>(c.flags));
      Fill(r, out);
      // perf_copy_attr(): on E2BIG the kernel writes its sizeof(attr) into attr.size.
      if (!r.ok() && r.error() == E2BIG) out->value = fmt::format("attr.size={}", buf.attr()->size);
      return r.ok() ? *r : -1;
    };
    const int kfd = dependent ? -1 : run(kernel_, group.kernel, &rec->kernel);
    const int mfd = run(mock_, group.mock, &rec->mock);
    rec->status = dependent ? CallStatus::kDependent : CallStatus::kCompared;
    if (kfd < 0 && mfd < 0) return;
    Slot s;
    s.call_index = rec->index;
    s.open = &c;
    s.pmu = rec->pmu;
    s.kfd = kfd;
    s.mfd = mfd;
    s.kernel_open = kfd >= 0;
    s.mock_open = mfd >= 0;
    s.leader = slots_.size();
    const bool joins = group.slot && !(c.flags & PERF_FLAG_FD_NO_GROUP);
    if (joins && (kfd >= 0) != (mfd >= 0)) slots_[slots_[*group.slot].leader].group_diverged = true;
    if (mfd >= 0 && joins && slots_[*group.slot].leader == *group.slot) {
      s.leader = *group.slot;
      slots_[*group.slot].members.push_back(slots_.size());
    }
    slots_.push_back(std::move(s));
  }

  void PlayOne(const ReadCall& c, CallRecord* rec) {
    size_t slot;
    if (!Target(c.target, rec, &slot)) return;
    const size_t exact = ExactReadSize(slot);
    size_t len = 0;
    switch (c.len) {
      case ReadLen::kExact: len = exact; break;
      case ReadLen::kExactMinus1: len = exact - 1; break;
      case ReadLen::kExactMinus8: len = exact >= 8 ? exact - 8 : 0; break;
      case ReadLen::kZero: len = 0; break;
      case ReadLen::kLarge: len = 4096; break;
    }
    rec->description += fmt::format(" [len={}]", len);
    const uint64_t rf = slots_[slot].open->attr.read_format;
    auto run = [&](Backend& b, int fd, Outcome* out) {
      std::vector<uint64_t> buf(4096 / 8, 0);
      Result<size_t> r = b.Read(fd, buf.data(), len);
      Fill(r, out);
      if (r.ok()) {
        out->value = fmt::format("{} bytes", *r);
        if ((rf & PERF_FORMAT_GROUP) && *r >= 8) out->value += fmt::format(", nr={}", buf[0]);
      }
    };
    if (rec->status == CallStatus::kCompared) run(kernel_, slots_[slot].kfd, &rec->kernel);
    run(mock_, slots_[slot].mfd, &rec->mock);
  }

  void PlayOne(const IoctlCall& c, CallRecord* rec) {
    size_t slot;
    if (!Target(c.target, rec, &slot)) return;
    bool dependent = false;
    const FdPair fd = c.arg == IoctlArg::kFd ? ResolveFd(c.fd, rec, &dependent) : FdPair{};
    if (dependent) rec->status = CallStatus::kDependent;
    auto run = [&](Backend& b, int target_fd, int fd_arg, Outcome* out) {
      uint64_t u64 = c.value;
      uint32_t query[16] = {};  // struct perf_event_query_bpf: ids_len = 0, prog_cnt, ids[]
      std::optional<AttrBuffer> attr;
      uintptr_t arg = 0;
      switch (c.arg) {
        case IoctlArg::kValue: arg = static_cast<uintptr_t>(c.value); break;
        case IoctlArg::kNull: arg = 0; break;
        case IoctlArg::kPtrU64: arg = reinterpret_cast<uintptr_t>(&u64); break;
        case IoctlArg::kFd: arg = static_cast<uintptr_t>(static_cast<unsigned int>(fd_arg)); break;
        case IoctlArg::kMinusOne: arg = ~uintptr_t{0}; break;
        case IoctlArg::kString: arg = reinterpret_cast<uintptr_t>(c.filter.c_str()); break;
        case IoctlArg::kQueryBpf: arg = reinterpret_cast<uintptr_t>(query); break;
        case IoctlArg::kAttrSame:
        case IoctlArg::kAttrRetype: {
          const OpenCall& o = *slots_[slot].open;
          attr.emplace(o.attr, o.tail, params_.page_size);
          if (c.arg == IoctlArg::kAttrRetype) {
            attr->attr()->type = o.attr.type == PERF_TYPE_BREAKPOINT ? PERF_TYPE_SOFTWARE : PERF_TYPE_BREAKPOINT;
          }
          arg = reinterpret_cast<uintptr_t>(attr->attr());
          break;
        }
      }
      Result<int> r = b.Ioctl(target_fd, c.request, arg);
      Fill(r, out);
      if (r.ok()) out->value = fmt::format("{}", *r);
    };
    if (rec->status == CallStatus::kCompared) run(kernel_, slots_[slot].kfd, fd.kernel, &rec->kernel);
    run(mock_, slots_[slot].mfd, fd.mock, &rec->mock);
  }

  void PlayOne(const MmapCall& c, CallRecord* rec) {
    size_t slot;
    if (!Target(c.target, rec, &slot)) return;
    auto run = [&](Backend& b, int fd, Outcome* out) -> void* {
      Result<void*> r = b.Mmap(c.length, c.prot, c.flags, fd, static_cast<off_t>(c.offset));
      Fill(r, out);
      if (!r.ok()) return nullptr;
      if ((c.prot & PROT_READ) && c.offset == 0) out->value = PageShape(*r);
      return *r;
    };
    MapSlot m;
    m.slot = slot;
    if (rec->status == CallStatus::kCompared) {
      m.kaddr = run(kernel_, slots_[slot].kfd, &rec->kernel);
      if (m.kaddr != nullptr) m.klen = c.length;
    }
    m.maddr = run(mock_, slots_[slot].mfd, &rec->mock);
    if (m.maddr != nullptr) m.mlen = c.length;
    if (m.kaddr != nullptr || m.maddr != nullptr) maps_.push_back(m);
  }

  void PlayOne(const MunmapCall& c, CallRecord* rec) {
    std::vector<size_t> live;
    for (size_t i = 0; i < maps_.size(); ++i) {
      if (maps_[i].mock_live()) live.push_back(i);
    }
    if (live.empty()) {
      rec->status = CallStatus::kNoTarget;
      rec->description += " [no mapping]";
      return;
    }
    MapSlot& m = maps_[live[c.mapping % live.size()]];
    rec->pmu = slots_[m.slot].pmu;
    rec->status = m.kernel_live() ? CallStatus::kCompared : CallStatus::kDependent;
    auto run = [&](Backend& b, void** addr, size_t* len, Outcome* out) {
      const size_t n = c.whole ? *len : std::min(*len, params_.page_size);
      Result<void> r = b.Munmap(*addr, n);
      Fill(r, out);
      if (!r.ok()) return;
      if (n >= *len) {
        *addr = nullptr;
        *len = 0;
      } else {
        *addr = static_cast<char*>(*addr) + params_.page_size;  // the rest stays mapped
        *len -= params_.page_size;
      }
    };
    if (rec->status == CallStatus::kCompared) run(kernel_, &m.kaddr, &m.klen, &rec->kernel);
    run(mock_, &m.maddr, &m.mlen, &rec->mock);
  }

  void PlayOne(const CloseCall& c, CallRecord* rec) {
    size_t slot;
    if (!Target(c.target, rec, &slot)) return;
    Slot& s = slots_[slot];
    if (rec->status == CallStatus::kCompared) {
      Fill(kernel_.Close(s.kfd), &rec->kernel);
      s.kernel_open = false;  // the number is no longer ours, whatever close(2) said
    }
    Fill(mock_.Close(s.mfd), &rec->mock);
    s.mock_open = false;
    ForgetFromGroup(slot);
  }

  void PlayOne(const FcntlCall& c, CallRecord* rec) {
    size_t slot;
    if (!Target(c.target, rec, &slot)) return;
    auto run = [&](Backend& b, int fd, Outcome* out) {
      Result<int> r = b.Fcntl(fd, c.cmd, 0);
      Fill(r, out);
      if (r.ok()) out->value = fmt::format("{:#x}", *r);
    };
    if (rec->status == CallStatus::kCompared) run(kernel_, slots_[slot].kfd, &rec->kernel);
    run(mock_, slots_[slot].mfd, &rec->mock);
  }

  void PlayOne(const PollCall& c, CallRecord* rec) {
    size_t slot;
    if (!Target(c.target, rec, &slot)) return;
    auto run = [&](Backend& b, int fd, Outcome* out) {
      pollfd p{fd, POLLIN, 0};
      Result<int> r = b.Poll(std::span<pollfd>(&p, 1), 0);
      Fill(r, out);
      // POLLIN depends on what the event recorded meanwhile: only the hang-up/error bits are compared.
      if (r.ok()) out->value = fmt::format("revents&(POLLHUP|POLLERR|POLLNVAL)={:#x}", p.revents & (POLLHUP | POLLERR | POLLNVAL));
    };
    if (rec->status == CallStatus::kCompared) run(kernel_, slots_[slot].kfd, &rec->kernel);
    run(mock_, slots_[slot].mfd, &rec->mock);
  }

  void PlayOne(const PrctlCall& c, CallRecord* rec) {
    rec->pmu = std::string(1, '-');  // not about one PMU (std::string: GCC 12 -Wrestrict false positive on = "-")
    auto run = [&](Backend& b, Outcome* out) {
      Result<int> r = b.Prctl(c.option);
      Fill(r, out);
      if (r.ok()) out->value = fmt::format("{}", *r);
    };
    run(kernel_, &rec->kernel);
    run(mock_, &rec->mock);
  }

  Backend& kernel_;
  Backend& mock_;
  const GeneratorParams& params_;
  int devnull_;
  std::vector<Slot> slots_;
  std::vector<MapSlot> maps_;
};

void IgnoreSignal(int) {}

}  // namespace

SequenceOutcome RunSequence(const Sequence& seq, Backend& kernel, Backend& mock, const GeneratorParams& params) {
  SequenceOutcome out;
  out.seed = seq.seed;
  Player player(kernel, mock, params);
  for (size_t i = 0; i < seq.calls.size(); ++i) out.calls.push_back(player.Play(i, seq.calls[i]));
  return out;
}

int InstallSigtrapHandler() {
  struct sigaction sa {};
  sa.sa_handler = IgnoreSignal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (::sigaction(SIGTRAP, &sa, nullptr) != 0) return errno;
  return 0;
}

}  // namespace perftest::fidelity
