// MockBackend, uprobe events counting (the rules in mocks/uprobe_pmu.h):
// the simulated task executes a function of this process; a uprobe event
// whose (inode, offset) is that function's place in its file counts each
// entry (or, a return probe, each return), as perf_tp_event() counts the
// kernel's uprobe_perf_func()/uretprobe_perf_func() submissions.
#include <mutex>
#include <unordered_map>

#include "harness/file_mapping.h"
#include "mocks/internal/mock_backend_impl.h"
#include "mocks/software_pmu.h"
#include "mocks/uprobe_pmu.h"

namespace perftest::mock {
namespace {

// The return address a retprobe sample reports for a call made by the
// workload's loop: the mock never makes the call, so it names a stand-in in
// the code of this process, as the real caller (the workload runner, linked
// into the same binary) would be.
__attribute__((noinline)) void ExecuteCallSite() { asm volatile("" ::: "memory"); }
uint64_t ExecuteReturnIp() { return reinterpret_cast<uint64_t>(&ExecuteCallSite); }

// The file location of `func` in this process: one /proc/self/maps read per
// address for the life of the process (the code of this process stays where
// it is mapped). nullopt when no file maps it.
std::optional<FileLocation> LocationOf(uint64_t func) {
  static std::mutex mu;
  static std::unordered_map<uint64_t, std::optional<FileLocation>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(func);
  if (it == cache.end()) {
    Result<FileLocation> at = FileLocationOf(func);
    it = cache.emplace(func, at.ok() ? std::optional<FileLocation>(*at) : std::nullopt).first;
  }
  return it->second;
}

}  // namespace

void MockBackend::UprobeExecute(uint64_t func, uint64_t times) {
  bool any = false;
  for (const auto& e : events_) any |= e->uprobe != nullptr && e->active;
  if (!any) return;  // no maps read when nothing listens
  const std::optional<FileLocation> at = LocationOf(func);
  if (!at) return;  // anonymous code: no inode a uprobe could sit on
  // handle_swbp() at entry, handle_trampoline() at the return: entry probes
  // first, then return probes, per call.
  for (uint64_t n = 0; n < times; ++n) {
    for (bool ret : {false, true}) {
      const uint64_t ip = ret ? ExecuteReturnIp() : func;
      for (size_t i = 0; i < events_.size(); ++i) {
        MockEvent& ev = *events_[i];
        if (!ev.active || ev.hw.stopped || ev.uprobe == nullptr || ev.uprobe->retprobe != ret) continue;
        if (!UprobeSiteMatches(*ev.uprobe, at->dev, at->inode, at->offset)) continue;
        if (ev.pid == -1 ? ev.cpu != 0 : ev.pid != task_.tid) continue;  // the per-CPU list of CPU 0
        // perf_tp_event_match(): user regs, so exclude_kernel drops nothing; then the filter.
        if (ev.filter != nullptr &&
            !ev.filter->Match(TraceValues{{{"common_pid", task_.pid}, {"common_flags", 0},
                                           {"common_preempt_count", 1}, {"common_type", 0}},
                                          {}})) {
          continue;
        }
        SampleData d = UserData(ip, 0);
        d.has_raw = true;
        d.raw = UprobeRawData(ret, func, ip, task_.pid);
        SoftwareEventCount(ev, 1, d,
                           [this](MockEvent& e, int throttle, const SampleData& sd) { return Overflow(e, throttle, sd); });
      }
    }
  }
}

}  // namespace perftest::mock
