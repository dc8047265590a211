#include "fidelity/host.h"

#include <linux/perf_event.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

namespace perftest::fidelity {

bool IsSafePmu(const std::string& name) {
  static const char* const kSafe[] = {"software", "tracepoint", "breakpoint", "uprobe", "msr", "power"};
  return std::find(std::begin(kSafe), std::end(kSafe), name) != std::end(kSafe);
}

std::vector<uint64_t> ReadTracepointIds() {
  static const char* const kRoots[] = {"/sys/kernel/tracing/events", "/sys/kernel/debug/tracing/events"};
  static const char* const kEvents[] = {"sched/sched_switch", "sched/sched_process_fork", "syscalls/sys_enter_getpid",
                                        "syscalls/sys_exit_getpid", "raw_syscalls/sys_enter"};
  std::vector<uint64_t> ids;
  for (const char* root : kRoots) {
    for (const char* ev : kEvents) {
      std::ifstream in(std::string(root) + "/" + ev + "/id");
      uint64_t id;
      if (in >> id) ids.push_back(id);
    }
    if (!ids.empty()) break;
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

namespace {

// GeneratorParams::uprobe_path: a kUprobeTargetSize-byte file in /tmp, removed
// at exit (the name lives in a static array: no destructor runs before the atexit handler).
char g_uprobe_target[] = "/tmp/perftest-fidelity-uprobe-XXXXXX";

const char* UprobeTargetPath() {
  static const bool made = [] {
    const int fd = ::mkstemp(g_uprobe_target);
    if (fd < 0) return false;
    const std::string bytes(kUprobeTargetSize, '\x90');
    const bool ok = ::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
    ::close(fd);
    if (!ok) {
      ::unlink(g_uprobe_target);
      return false;
    }
    std::atexit([] { ::unlink(g_uprobe_target); });
    return true;
  }();
  return made ? g_uprobe_target : nullptr;
}

}  // namespace

GeneratorParams HostGeneratorParams(Backend& kernel) {
  const MachineInfo& m = kernel.Machine();
  GeneratorParams p;
  p.max_sample_rate = m.max_sample_rate;
  p.max_stack = m.max_stack;
  p.page_size = m.page_size;
  for (const Pmu& pmu : m.pmus) {
    if (pmu.type == PERF_TYPE_SOFTWARE) continue;  // always generated
    if (IsSafePmu(pmu.name)) {
      p.pmus.push_back({pmu.name, pmu.type});
    } else {
      p.avoid_types.push_back(pmu.type);
    }
  }
  std::sort(p.pmus.begin(), p.pmus.end(), [](const auto& a, const auto& b) { return a.type < b.type; });
  // A counting cycles event for this task, user space only: ENOENT means no hardware PMU.
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_HARDWARE;
  attr.config = PERF_COUNT_HW_CPU_CYCLES;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  Result<int> fd = kernel.PerfEventOpen(&attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd.ok()) (void)kernel.Close(*fd);
  p.generate_hardware_types = !fd.ok() && fd.error() == ENOENT;
  if (!p.generate_hardware_types) {
    for (uint32_t t : {PERF_TYPE_HARDWARE, PERF_TYPE_HW_CACHE, PERF_TYPE_RAW}) p.avoid_types.push_back(t);
  }
  std::sort(p.avoid_types.begin(), p.avoid_types.end());
  p.avoid_types.erase(std::unique(p.avoid_types.begin(), p.avoid_types.end()), p.avoid_types.end());
  p.tracepoint_ids = ReadTracepointIds();
  if (std::any_of(p.pmus.begin(), p.pmus.end(), [](const auto& q) { return q.name == "uprobe"; })) {
    p.uprobe_path = UprobeTargetPath();
  }
  return p;
}

}  // namespace perftest::fidelity
