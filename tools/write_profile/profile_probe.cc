#include "tools/write_profile/profile_probe.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <linux/hw_breakpoint.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "harness/attr.h"
#include "harness/workload.h"
#include "mocks/hardware_pmu.h"
#include "mocks/tracepoint_pmu.h"

namespace perftest::tools {
namespace {

constexpr int kCapSysAdmin = 21;
constexpr int kCapPerfmon = 38;
constexpr uint32_t kMaxProbeSlots = 64;
constexpr uint32_t kMaxProbeCounters = 64;
constexpr uint32_t kMaxProbeType = 64;

// Counters a core PMU kind has besides the general-purpose ones, and their
// width: not visible in sysfs, so taken from the architecture (said in the
// provenance).
struct CoreShape {
  uint32_t fixed_counters;
  uint32_t counter_width;
  const char* why;
};

CoreShape ShapeOf(mock::CoreKind kind) {
  switch (kind) {
    case mock::CoreKind::kIntelCore:
      return {3, 48, "Intel architectural perfmon v4+: 3 fixed counters, 48-bit (Intel SDM vol. 3B ch. 20)"};
    case mock::CoreKind::kArmv8Pmuv3:
      return {1, 32, "PMUv3: the cycle counter PMCCNTR_EL0; event counters 32-bit before FEAT_PMUv3p5"};
    case mock::CoreKind::kRiscvSbi:
      return {2, 64, "RISC-V: the CY and IR counters (mcycle, minstret), 64-bit"};
  }
  return {0, 64, "?"};
}

// PMUs MockBackend models beside the core PMU, listed under their own names:
// msr and power (RAPL) are count-only PMUs modelled from their events/
// (mocks/free_running_pmu.h); uprobe: local uprobe trace events
// (mocks/uprobe_pmu.h). Their types are dynamic.
const std::set<std::string>& PlainPmus() {
  static const std::set<std::string> names = {"software", "tracepoint", "breakpoint", "msr", "power", "uprobe"};
  return names;
}

// The core PMU kind the mock would model `name` as, if any.
std::optional<mock::CoreKind> CoreKindOf(const std::string& name, const std::string& arch, const HostFacts& host) {
  if (name.rfind("armv8_", 0) == 0) return mock::CoreKind::kArmv8Pmuv3;
  if (name == "cpu" && arch == "riscv64") return mock::CoreKind::kRiscvSbi;
  if (name == "cpu" && arch == "x86_64" && host.cpu_vendor == "GenuineIntel") return mock::CoreKind::kIntelCore;
  return std::nullopt;
}

std::string ErrnoText(int err) { return err == 0 ? "success" : std::string(ErrnoName(err)); }

// Opens for this task (pid 0, any CPU) and keeps the fds until Close() or
// destruction.
class Prober {
 public:
  explicit Prober(Backend& b) : b_(b) {}
  ~Prober() { CloseAll(); }

  // 0 or the errno; keeps the fd when `keep`, else closes it at once.
  int Open(perf_event_attr attr, int group_fd = -1, bool keep = false, perf_event_attr* out = nullptr) {
    Result<int> fd = b_.PerfEventOpen(&attr, 0, -1, group_fd, PERF_FLAG_FD_CLOEXEC);
    if (out != nullptr) *out = attr;
    if (!fd.ok()) return fd.error();
    if (keep) {
      fds_.push_back(*fd);
    } else {
      (void)b_.Close(*fd);
    }
    last_fd_ = *fd;
    return 0;
  }
  int last_fd() const { return last_fd_; }
  void CloseAll() {
    for (auto it = fds_.rbegin(); it != fds_.rend(); ++it) (void)b_.Close(*it);
    fds_.clear();
  }

 private:
  Backend& b_;
  std::vector<int> fds_;
  int last_fd_ = -1;
};

perf_event_attr UserAttr(uint32_t type, uint64_t config) {
  perf_event_attr a = MakeAttr(type, config);
  a.exclude_kernel = 1;  // what perf_event_paranoid 2 allows without privilege
  a.exclude_hv = 1;
  return a;
}

// perf_copy_attr(): a size below PERF_ATTR_SIZE_VER0 is E2BIG, with the
// kernel's own sizeof(*attr) written into attr.size.
uint32_t ProbeAttrSize(Prober& prober, std::vector<std::string>& notes) {
  perf_event_attr small = UserAttr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS);
  small.size = 8;
  perf_event_attr back{};
  const int err = prober.Open(small, -1, false, &back);
  const uint32_t size = err == E2BIG ? back.size : static_cast<uint32_t>(sizeof(perf_event_attr));
  notes.push_back(fmt::format("attr_size={}: what perf_event_open(attr.size=8) wrote back ({})", size,
                              ErrnoText(err)));
  return size;
}

// How many of `bp` this task can hold open (kept open), and the errno of the
// first one refused.
std::pair<uint32_t, int> FillSlots(Prober& prober, const perf_event_attr& bp) {
  uint32_t slots = 0;
  int last = 0;
  while (slots < kMaxProbeSlots && (last = prober.Open(bp, -1, /*keep=*/true)) == 0) ++slots;
  return {slots, last};
}

// Write watchpoints on one word of this task until ENOSPC; then, with those
// held, an execute breakpoint: ENOSPC when both share one pool of debug
// registers (x86: CONFIG_HAVE_MIXED_BREAKPOINTS_REGS), else the execute
// breakpoints are counted too (arm64: BRPs and WRPs, hw_breakpoint_slots(TYPE_INST)
// and (TYPE_DATA), kernel/events/hw_breakpoint.c).
void ProbeBreakpointSlots(Prober& prober, MockProfile& p, std::vector<std::string>& notes) {
  static volatile uint64_t word = 0;
  perf_event_attr w = UserAttr(PERF_TYPE_BREAKPOINT, 0);
  w.bp_type = HW_BREAKPOINT_W;
  w.bp_addr = reinterpret_cast<uintptr_t>(&word);
  w.bp_len = HW_BREAKPOINT_LEN_8;
  perf_event_attr x = UserAttr(PERF_TYPE_BREAKPOINT, 0);
  x.bp_type = HW_BREAKPOINT_X;
  x.bp_addr = ExecuteTargetAddress();
  x.bp_len = sizeof(long);  // x86 requires it; arm64 makes an execute breakpoint 4 bytes
  const auto [data, data_err] = FillSlots(prober, w);
  const auto [inst, inst_err] = data_err == ENOSPC ? FillSlots(prober, x) : std::pair<uint32_t, int>{0, 0};
  prober.CloseAll();
  if (data_err != ENOSPC) {
    notes.push_back(fmt::format("hw_breakpoint_slots: not probed (a watchpoint open said {}); default kept",
                                ErrnoText(data_err)));
  } else if (inst == 0) {
    p.hw_breakpoint_slots = data;
    notes.push_back(fmt::format("hw_breakpoint_slots={}: the next write watchpoint of this task was ENOSPC, and so "
                                "was an execute breakpoint (one pool)", data));
  } else {
    p.hw_breakpoint_slots = inst;
    p.hw_watchpoint_slots = data;
    notes.push_back(fmt::format("hw_breakpoint_slots={}, hw_watchpoint_slots={}: execute breakpoints and write "
                                "watchpoints each until {} (separate pools)", inst, data, ErrnoText(inst_err)));
  }
}

// The clock PMUs' dynamic types: not in sysfs on Linux 6.x.
void ProbeClockTypes(Prober& prober, MockProfile& p, std::vector<std::string>& notes) {
  uint32_t cpu_clock = 0, task_clock = 0;
  for (uint32_t t = PERF_TYPE_MAX; t < kMaxProbeType; ++t) {
    if (p.HasPmu(t)) continue;
    if (cpu_clock == 0 && prober.Open(UserAttr(t, PERF_COUNT_SW_CPU_CLOCK)) == 0) cpu_clock = t;
    if (task_clock == 0 && prober.Open(UserAttr(t, PERF_COUNT_SW_TASK_CLOCK)) == 0) task_clock = t;
  }
  if (cpu_clock != 0 && task_clock != 0 && cpu_clock != task_clock) {
    p.cpu_clock_type = cpu_clock;
    p.task_clock_type = task_clock;
    notes.push_back(fmt::format("clock_pmu_types: perf_event_open(type={}, config=0) and (type={}, config=1) open "
                                "cpu-clock and task-clock", cpu_clock, task_clock));
  }
}

// aux_action (Linux 6.13+): aux_start_paused is EOPNOTSUPP on a PMU without
// AUX, where older kernels refuse the reserved bit with EINVAL. The bit is
// bit 0 of the 32-bit word before sig_data (__reserved_3 in headers older
// than 6.13), set by offset so that this builds with either header.
void ProbeAuxAction(Prober& prober, MockProfile& p, std::vector<std::string>& notes) {
  perf_event_attr paused = UserAttr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS);
  const uint32_t start_paused = 1;
  std::memcpy(reinterpret_cast<char*>(&paused) + offsetof(perf_event_attr, sig_data) - sizeof start_paused,
              &start_paused, sizeof start_paused);
  const int err = prober.Open(paused);
  p.attr_aux_action = err == EOPNOTSUPP;
  notes.push_back(fmt::format("attr_aux_action={}: aux_start_paused on a software event said {}",
                              p.attr_aux_action ? "true" : "false", ErrnoText(err)));
}

void ProbeTracepoints(Backend& b, MockProfile& p, std::vector<std::string>& notes) {
  for (const std::string& tp : mock::ModelledTracepoints()) {
    const size_t colon = tp.find(':');
    Result<uint64_t> id = b.TracepointId(tp.substr(0, colon), tp.substr(colon + 1));
    if (id.ok()) p.tracepoints[tp] = *id;
  }
  if (!p.tracepoints.empty()) notes.push_back("tracepoints: ids from tracefs events/<system>/<event>/id");
}

// General-purpose counters: branch-miss events (no fixed counter counts
// them) in one group until the kernel refuses the next member.
void ProbeCoreCounters(Prober& prober, MockProfile& p, std::vector<std::string>& notes) {
  const CoreShape shape = ShapeOf(p.hardware.kind);
  p.hardware.fixed_counters = shape.fixed_counters;
  p.hardware.counter_width = shape.counter_width;
  perf_event_attr leader = UserAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES);
  int err = prober.Open(leader, -1, /*keep=*/true);
  if (err == EINVAL) {  // PERF_PMU_CAP_NO_EXCLUDE: no exclude_* at all
    leader.exclude_kernel = leader.exclude_hv = 0;
    err = prober.Open(leader, -1, /*keep=*/true);
  }
  uint32_t members = 0;
  if (err == 0) {
    const int leader_fd = prober.last_fd();
    perf_event_attr member = leader;
    member.disabled = 0;
    members = 1;
    while (members < kMaxProbeCounters && (err = prober.Open(member, leader_fd, /*keep=*/true)) == 0) ++members;
  }
  prober.CloseAll();
  p.hardware.gp_counters = std::max<uint32_t>(members, 1);
  if (p.hardware.kind == mock::CoreKind::kRiscvSbi) {
    // Sampling needs an overflow interrupt (Sscofpmf): riscv_pmu_sbi.c sets
    // PERF_PMU_CAP_NO_INTERRUPT and NO_EXCLUDE without it.
    perf_event_attr sampler = MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
    sampler.sample_period = 100000;
    p.hardware.overflow_interrupt = prober.Open(sampler) != EOPNOTSUPP;
    p.hardware.mode_exclusion = p.hardware.overflow_interrupt;
  }
  if (members == 0) {
    notes.push_back(fmt::format("hardware: gp_counters not probed (a branch-miss event said {}), 1 assumed; {}",
                                ErrnoText(err), shape.why));
  } else {
    notes.push_back(fmt::format("hardware: gp_counters={} branch-miss events fit one group (the next said {}); {}",
                                p.hardware.gp_counters, ErrnoText(err), shape.why));
  }
}

// The PMUs the mock models, from the machine's; the others named in `notes`.
void ListPmus(const MachineInfo& m, const HostFacts& host, MockProfile& p, std::vector<std::string>& notes) {
  std::vector<std::string> left_out;
  for (const Pmu& pmu : m.pmus) {
    if (PlainPmus().count(pmu.name)) {
      p.pmus.push_back(pmu);
      continue;
    }
    std::optional<mock::CoreKind> kind = CoreKindOf(pmu.name, m.arch, host);
    if (kind && !p.has_hardware) {
      p.pmus.push_back(pmu);
      p.has_hardware = true;
      p.core_pmu_type = pmu.type;
      p.hardware.kind = *kind;
      continue;
    }
    left_out.push_back(fmt::format("{} (type {})", pmu.name, pmu.type));
  }
  std::sort(p.pmus.begin(), p.pmus.end(), [](const Pmu& a, const Pmu& b) { return a.name < b.name; });
  if (!left_out.empty()) {
    notes.push_back(fmt::format("PMUs not listed (MockBackend does not implement them): {}", fmt::join(left_out, ", ")));
  }
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string ReadGzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return "";
  std::string out;
  char buf[65536];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

// The value of `key` ("CONFIG_HZ=", "CapEff:\t") at the start of a line.
std::optional<std::string> LineValue(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return line.substr(key.size());
  }
  return std::nullopt;
}

std::string Trim(std::string s) {
  const auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  s.erase(s.begin(), std::find_if_not(s.begin(), s.end(), space));
  s.erase(std::find_if_not(s.rbegin(), s.rend(), space).base(), s.end());
  return s;
}

}  // namespace

HostFacts ReadHostFacts() {
  HostFacts h;
  utsname u{};
  if (::uname(&u) == 0) h.kernel_release = u.release;
  if (auto v = LineValue(ReadFile("/proc/cpuinfo"), "vendor_id")) {
    const size_t colon = v->find(':');
    h.cpu_vendor = Trim(colon == std::string::npos ? *v : v->substr(colon + 1));
  }
  if (std::string t = Trim(ReadFile("/proc/sys/kernel/perf_event_max_contexts_per_stack")); !t.empty()) {
    h.max_contexts_per_stack = static_cast<uint32_t>(std::strtoul(t.c_str(), nullptr, 10));
  }
  h.hz_source = fmt::format("CONFIG_HZ not readable (/boot/config-{}, /proc/config.gz): 250 assumed", h.kernel_release);
  for (const std::string& config : {ReadFile("/boot/config-" + h.kernel_release), ReadGzip("/proc/config.gz")}) {
    if (auto hz = LineValue(config, "CONFIG_HZ="); hz && std::strtoul(hz->c_str(), nullptr, 10) > 0) {
      h.hz = static_cast<uint32_t>(std::strtoul(hz->c_str(), nullptr, 10));
      h.hz_source = "CONFIG_HZ from the kernel config";
      break;
    }
  }
  if (auto cap = LineValue(ReadFile("/proc/self/status"), "CapEff:")) {
    const uint64_t eff = std::strtoull(Trim(*cap).c_str(), nullptr, 16);
    h.privileged = ((eff >> kCapPerfmon) & 1) || ((eff >> kCapSysAdmin) & 1);
  }
  rlimit rl{};
  h.memlock_rlimit_kb = 1u << 31;
  if (::getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    h.memlock_rlimit_kb = static_cast<uint32_t>(std::min<uint64_t>(rl.rlim_cur / 1024, 1u << 31));
  }
  h.euid = ::geteuid();
  return h;
}

Result<MockProfile> ProbeProfile(Backend& b, const HostFacts& host, std::string_view name) {
  const std::string call = fmt::format("probe_profile(\"{}\", backend={})", name, b.kind());
  Prober prober(b);
  if (int err = prober.Open(UserAttr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS)); err != 0) {
    return Result<MockProfile>::Failure(
        err, fmt::format("{}: perf_event_open does not work here ({}): nothing to probe (seccomp profile, "
                         "perf_event_paranoid, or no CONFIG_PERF_EVENTS)", call, ErrnoText(err)));
  }
  const MachineInfo& m = b.Machine();
  MockProfile p;
  std::vector<std::string> notes;
  p.name = std::string(name);
  p.arch = m.arch;
  p.kernel_release = host.kernel_release;
  p.ncpus = m.ncpus;
  p.page_size = m.page_size;
  p.perf_event_paranoid = m.perf_event_paranoid;
  p.max_sample_rate = m.max_sample_rate;
  p.max_stack = m.max_stack;
  p.mlock_kb = m.mlock_kb;
  p.max_contexts_per_stack = host.max_contexts_per_stack;
  p.hz = host.hz;
  notes.push_back(host.hz_source);
  p.privileged = host.privileged;
  p.memlock_rlimit_kb = host.memlock_rlimit_kb;
  p.attr_size = ProbeAttrSize(prober, notes);
  ListPmus(m, host, p, notes);
  if (p.HasPmu(PERF_TYPE_BREAKPOINT)) ProbeBreakpointSlots(prober, p, notes);
  ProbeClockTypes(prober, p, notes);
  ProbeAuxAction(prober, p, notes);
  if (p.HasPmu(PERF_TYPE_TRACEPOINT)) ProbeTracepoints(b, p, notes);
  if (p.has_hardware) ProbeCoreCounters(prober, p, notes);

  char when[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  p.description = fmt::format("this host, probed by perftest doctor --write-profile: Linux {} {}, {} CPUs{}",
                              host.kernel_release, m.arch, m.ncpus, p.has_hardware ? "" : ", no hardware PMU modelled");
  p.provenance = fmt::format(
      "Probed on this machine by `perftest doctor --write-profile` at {} (Linux {}, {}, uid {}): sysctls from "
      "/proc/sys/kernel, PMUs from /sys/bus/event_source/devices, real perf_event_open calls for the rest "
      "(through the {} backend). {}.",
      when, host.kernel_release, m.arch, host.euid, b.kind(), fmt::join(notes, "; "));
  return Result<MockProfile>::Ok(std::move(p), call);
}

}  // namespace perftest::tools
