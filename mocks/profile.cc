#include "mocks/profile.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "mocks/attr_validation.h"
#include "mocks/tracepoint_pmu.h"

#ifndef PERFTEST_PROFILE_DIR
#define PERFTEST_PROFILE_DIR "fixtures/profiles"
#endif

namespace perftest {
namespace {

using Json = nlohmann::json;

// Collects the first error; every accessor names the key it was asked for.
class Reader {
 public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

  void Fail(const std::string& key, const std::string& what) {
    if (error_.empty()) error_ = fmt::format("parse_profile({}): key '{}': {}", origin_, key, what);
  }

  const Json* Find(const Json& obj, const std::string& key, const std::string& path, bool required) {
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (required) Fail(path, "missing");
      return nullptr;
    }
    return &*it;
  }

  void String(const Json& obj, const std::string& key, std::string* out, bool required = true,
              const std::string& prefix = "") {
    const std::string path = prefix + key;
    const Json* v = Find(obj, key, path, required);
    if (v == nullptr) return;
    if (!v->is_string()) return Fail(path, fmt::format("expected a string, got {}", v->type_name()));
    *out = v->get<std::string>();
  }

  // An integer in [lo, hi].
  template <typename T>
  void Int(const Json& obj, const std::string& key, T* out, long long lo, long long hi, bool required = true,
           const std::string& prefix = "") {
    const std::string path = prefix + key;
    const Json* v = Find(obj, key, path, required);
    if (v == nullptr) return;
    if (!v->is_number_integer()) return Fail(path, fmt::format("expected an integer, got {}", v->type_name()));
    const long long n = v->get<long long>();
    if (n < lo || n > hi) return Fail(path, fmt::format("{} is outside [{}, {}]", n, lo, hi));
    *out = static_cast<T>(n);
  }

  void Bool(const Json& obj, const std::string& key, bool* out, const std::string& prefix = "") {
    const std::string path = prefix + key;
    const Json* v = Find(obj, key, path, false);
    if (v == nullptr) return;
    if (!v->is_boolean()) return Fail(path, fmt::format("expected true or false, got {}", v->type_name()));
    *out = v->get<bool>();
  }

  // A map of sysfs file name -> contents (strings).
  void StringMap(const Json& obj, const std::string& key, std::map<std::string, std::string>* out,
                 const std::string& prefix) {
    const std::string path = prefix + key;
    const Json* v = Find(obj, key, path, false);
    if (v == nullptr) return;
    if (!v->is_object()) return Fail(path, fmt::format("expected an object of strings, got {}", v->type_name()));
    for (auto it = v->begin(); it != v->end(); ++it) {
      if (!it.value().is_string()) {
        return Fail(path + "." + it.key(), fmt::format("expected a string, got {}", it.value().type_name()));
      }
      (*out)[it.key()] = it.value().get<std::string>();
    }
  }

 private:
  std::string origin_;
  std::string error_;
};

}  // namespace

// The PMU kinds MockBackend implements (profile.h): the one table to extend
// when the mock learns a new PMU (add its row here, its event init in
// MockBackend::PerfEventOpen()).
const std::vector<PmuKind>& ImplementedPmuKinds() {
  static const std::vector<PmuKind> kinds = {
      {"software", PERF_TYPE_SOFTWARE, false, {}},
      {"tracepoint", PERF_TYPE_TRACEPOINT, false, {}},
      {"breakpoint", PERF_TYPE_BREAKPOINT, false, {}},
      // "cpu": the Intel core PMU (the default kind of a PMU named "cpu").
      {"cpu", PERF_TYPE_RAW, true, mock::CoreKind::kIntelCore},
      {"intel_core", PERF_TYPE_RAW, true, mock::CoreKind::kIntelCore},
      // drivers/perf/arm_pmu.c armpmu_register(): perf_pmu_register(..., -1), a dynamic type.
      {"armv8_pmuv3", PmuKind::kDynamicType, true, mock::CoreKind::kArmv8Pmuv3},
      // drivers/perf/riscv_pmu_sbi.c: perf_pmu_register(&pmu->pmu, "cpu", PERF_TYPE_RAW).
      {"riscv_sbi", PERF_TYPE_RAW, true, mock::CoreKind::kRiscvSbi},
      // arch/x86/events/intel/pt.c pt_init(): perf_pmu_register(..., "intel_pt", -1);
      // its caps/ drive pt_event_valid() (mocks/intel_pt_pmu.h).
      {"intel_pt", PmuKind::kDynamicType, false, {}},
      // arch/x86/events/msr.c and rapl.c: perf_pmu_register(..., "msr"/"power", -1);
      // count-only PMUs over free-running MSRs (mocks/free_running_pmu.h).
      {"msr", PmuKind::kDynamicType, false, {}},
      {"power", PmuKind::kDynamicType, false, {}},
      // kernel/events/core.c perf_tp_register(): perf_pmu_register(&perf_uprobe, "uprobe", -1);
      // local uprobe trace events on a file (mocks/uprobe_pmu.h).
      {"uprobe", PmuKind::kDynamicType, false, {}},
  };
  return kinds;
}

namespace {

const PmuKind* FindKind(const std::string& kind) {
  for (const PmuKind& k : ImplementedPmuKinds()) {
    if (kind == k.kind) return &k;
  }
  return nullptr;
}

std::string KindNames() {
  std::string out;
  for (const PmuKind& k : ImplementedPmuKinds()) out += (out.empty() ? "" : ", ") + std::string(k.kind);
  return out;
}

// Profile names kept for users' scripts: alias -> the file's stem, from
// aliases.txt in the compiled-in profiles directory ("ALIAS NAME" lines, '#'
// comments), the table the runner reads too (runner/perftest/layout.py).
const std::map<std::string, std::string>& Aliases() {
  static const std::map<std::string, std::string> aliases = [] {
    std::map<std::string, std::string> out;
    std::ifstream in(std::string(PERFTEST_PROFILE_DIR) + "/aliases.txt");
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream words(line.substr(0, line.find('#')));
      std::string alias, name;
      if (words >> alias >> name) out[alias] = name;
    }
    return out;
  }();
  return aliases;
}

const std::set<std::string>& KnownKeys() {
  static const std::set<std::string> keys = {
      "name",      "arch",         "description",     "provenance", "kernel_release", "ncpus",  "page_size",
      "perf_event_paranoid", "max_sample_rate", "max_stack", "max_contexts_per_stack", "mlock_kb",
      "hz",        "attr_size",    "privileged",      "memlock_rlimit_kb",    "pmus",
      "tracepoints", "hw_breakpoint_slots", "hw_watchpoint_slots", "cpu_mhz", "hardware", "clock_pmu_types", "attr_aux_action",
      "sched_clock_counter", "compat_task", "kernel_release"};
  return keys;
}

std::string Stem(std::string_view origin) {
  return std::filesystem::path(std::string(origin)).stem().string();
}

}  // namespace

bool MockProfile::HasPmu(uint32_t type) const {
  return std::any_of(pmus.begin(), pmus.end(), [type](const Pmu& p) { return p.type == type; });
}

MachineInfo MockProfile::ToMachineInfo() const {
  MachineInfo m;
  m.arch = arch;
  m.description = description;
  m.ncpus = ncpus;
  m.page_size = page_size;
  m.perf_event_paranoid = perf_event_paranoid;
  m.max_sample_rate = max_sample_rate;
  m.max_stack = max_stack;
  m.mlock_kb = mlock_kb;
  m.pmus = pmus;
  return m;
}

std::string ProfileSearchDir() {
  const char* env = std::getenv("PERFTEST_PROFILES_DIR");
  if (env != nullptr && *env != '\0') return env;
  return PERFTEST_PROFILE_DIR;
}

Result<MockProfile> ParseProfile(std::string_view json_text, std::string_view origin) {
  const std::string where(origin);
  Json root;
  try {
    root = Json::parse(json_text);
  } catch (const Json::parse_error& e) {
    return Result<MockProfile>::Failure(EINVAL, fmt::format("parse_profile({}): malformed JSON: {}", where, e.what()));
  }
  if (!root.is_object()) {
    return Result<MockProfile>::Failure(
        EINVAL, fmt::format("parse_profile({}): key '': expected a JSON object, got {}", where, root.type_name()));
  }

  Reader r(where);
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (!KnownKeys().count(it.key())) r.Fail(it.key(), "unknown key");
  }

  MockProfile p;
  p.name = Stem(origin);
  r.String(root, "name", &p.name, /*required=*/false);
  r.String(root, "arch", &p.arch);
  r.String(root, "description", &p.description);
  r.String(root, "provenance", &p.provenance);
  r.String(root, "kernel_release", &p.kernel_release, /*required=*/false);
  r.Int(root, "ncpus", &p.ncpus, 1, 4096);
  r.Int(root, "page_size", &p.page_size, 4096, 1 << 20);
  if (r.ok() && (p.page_size & (p.page_size - 1)) != 0) r.Fail("page_size", fmt::format("{} is not a power of two", p.page_size));
  r.Int(root, "perf_event_paranoid", &p.perf_event_paranoid, -1, 4);
  r.Int(root, "max_sample_rate", &p.max_sample_rate, 1, 100000000);
  r.Int(root, "max_stack", &p.max_stack, 0, 65535);
  r.Int(root, "max_contexts_per_stack", &p.max_contexts_per_stack, 0, 65535, /*required=*/false);
  r.Int(root, "mlock_kb", &p.mlock_kb, 0, 1u << 31);
  r.Int(root, "hz", &p.hz, 1, 10000, /*required=*/false);
  r.String(root, "kernel_release", &p.kernel_release, /*required=*/false);
  p.kernel_version = mock::kUapiKernelVersion;
  if (r.ok() && !p.kernel_release.empty()) {
    if (std::optional<uint32_t> v = mock::ParseKernelRelease(p.kernel_release)) {
      p.kernel_version = *v;
    } else {
      r.Fail("kernel_release", fmt::format("'{}' is no kernel release (expected major.minor, e.g. \"6.18\")",
                                           p.kernel_release));
    }
  }
  // perf_event_attr grew config3 in Linux 6.3 (09519ec3b19e "perf: Add
  // perf_event_attr::config3"): sizeof 136, PERF_ATTR_SIZE_VER8.
  if (p.kernel_version >= mock::KernelVersion(6, 3)) p.attr_size = 136;
  p.attr_aux_action = mock::AttrBitsFor(p.kernel_version).aux_action;
  r.Int(root, "attr_size", &p.attr_size, PERF_ATTR_SIZE_VER0, 4096, /*required=*/false);
  if (r.ok() && p.attr_size % 8 != 0) r.Fail("attr_size", fmt::format("{} is not a multiple of 8", p.attr_size));
  r.Bool(root, "privileged", &p.privileged);
  r.Int(root, "memlock_rlimit_kb", &p.memlock_rlimit_kb, 0, 1u << 31, /*required=*/false);

  const Json* pmus = r.Find(root, "pmus", "pmus", /*required=*/true);
  if (pmus != nullptr && !pmus->is_array()) r.Fail("pmus", fmt::format("expected an array, got {}", pmus->type_name()));
  if (pmus != nullptr && pmus->is_array()) {
    std::set<std::string> names;
    std::set<uint32_t> types;
    for (size_t i = 0; i < pmus->size() && r.ok(); ++i) {
      const Json& j = (*pmus)[i];
      const std::string prefix = fmt::format("pmus[{}].", i);
      if (!j.is_object()) {
        r.Fail(fmt::format("pmus[{}]", i), fmt::format("expected an object, got {}", j.type_name()));
        break;
      }
      for (auto it = j.begin(); it != j.end(); ++it) {
        static const std::set<std::string> pmu_keys = {"name", "kind", "type", "format", "events", "caps"};
        if (!pmu_keys.count(it.key())) r.Fail(prefix + it.key(), "unknown key");
      }
      Pmu pmu;
      r.String(j, "name", &pmu.name, true, prefix);
      std::string kind = pmu.name;
      r.String(j, "kind", &kind, false, prefix);
      r.Int(j, "type", &pmu.type, 0, 0x7fffffffll, true, prefix);
      r.StringMap(j, "format", &pmu.format, prefix);
      r.StringMap(j, "events", &pmu.events, prefix);
      r.StringMap(j, "caps", &pmu.caps, prefix);
      if (!r.ok()) break;
      const PmuKind* known = FindKind(kind);
      if (known == nullptr) {
        r.Fail(prefix + (j.contains("kind") ? "kind" : "name"),
               fmt::format("PMU kind '{}' is not implemented by MockBackend (implemented: {})", kind, KindNames()));
      } else if (known->type != PmuKind::kDynamicType && pmu.type != static_cast<uint32_t>(known->type)) {
        r.Fail(prefix + "type", fmt::format("PMU '{}' (kind {}) has type {} in the kernel, not {}", pmu.name, kind,
                                            known->type, pmu.type));
      } else if (known->type == PmuKind::kDynamicType && pmu.type < PERF_TYPE_MAX) {
        r.Fail(prefix + "type", fmt::format("PMU '{}' (kind {}) has a dynamic type, which is >= PERF_TYPE_MAX ({}), "
                                            "not {}", pmu.name, kind, int{PERF_TYPE_MAX}, pmu.type));
      } else if (!names.insert(pmu.name).second || !types.insert(pmu.type).second) {
        r.Fail(prefix + "name", fmt::format("PMU '{}' (type {}) is listed twice", pmu.name, pmu.type));
      } else if (known->core && p.has_hardware) {
        r.Fail(prefix + "kind", fmt::format("PMU '{}': the model has one core PMU, and one is listed already", pmu.name));
      } else if (known->core) {
        p.has_hardware = true;
        p.core_pmu_type = pmu.type;
        p.hardware.kind = known->core_kind;
      }
      p.pmus.push_back(std::move(pmu));
    }
  }
  r.Int(root, "hw_breakpoint_slots", &p.hw_breakpoint_slots, 0, 64, /*required=*/false);
  if (root.contains("hw_watchpoint_slots")) {
    uint32_t wrps = 0;
    r.Int(root, "hw_watchpoint_slots", &wrps, 0, 64, /*required=*/true);
    p.hw_watchpoint_slots = wrps;
  }
  r.Int(root, "cpu_mhz", &p.cpu_mhz, 1, 100000, /*required=*/false);
  if (const Json* tps = r.Find(root, "tracepoints", "tracepoints", /*required=*/false); tps != nullptr && r.ok()) {
    if (!tps->is_object()) r.Fail("tracepoints", fmt::format("expected an object of ids, got {}", tps->type_name()));
    for (auto it = tps->begin(); r.ok() && tps->is_object() && it != tps->end(); ++it) {
      const std::string key = "tracepoints." + it.key();
      if (!it.value().is_number_unsigned()) {
        r.Fail(key, fmt::format("expected a tracefs id (unsigned integer), got {}", it.value().type_name()));
      } else if (mock::FindTracepointModel(it.key()) == nullptr) {
        r.Fail(key, fmt::format("the model cannot fire this tracepoint (modelled: {})",
                                fmt::join(mock::ModelledTracepoints(), ", ")));
      } else {
        p.tracepoints[it.key()] = it.value().get<uint64_t>();
      }
    }
    if (r.ok() && !p.tracepoints.empty() &&
        std::none_of(p.pmus.begin(), p.pmus.end(), [](const Pmu& q) { return q.type == PERF_TYPE_TRACEPOINT; })) {
      r.Fail("tracepoints", "tracepoints need the \"tracepoint\" PMU in pmus");
    }
  }
  if (const Json* hw = r.Find(root, "hardware", "hardware", /*required=*/p.has_hardware && r.ok()); hw != nullptr && r.ok()) {
    if (!p.has_hardware) r.Fail("hardware", "describes a core PMU, but pmus lists none (kinds cpu, intel_core, armv8_pmuv3, riscv_sbi)");
    if (!hw->is_object()) r.Fail("hardware", fmt::format("expected an object, got {}", hw->type_name()));
    if (r.ok()) {
      for (auto it = hw->begin(); it != hw->end(); ++it) {
        static const std::set<std::string> keys = {"gp_counters", "fixed_counters", "counter_width", "max_precise",
                                                   "overflow_interrupt", "mode_exclusion"};
        if (!keys.count(it.key())) r.Fail("hardware." + it.key(), "unknown key");
      }
      r.Int(*hw, "gp_counters", &p.hardware.gp_counters, 1, 64, true, "hardware.");
      r.Int(*hw, "fixed_counters", &p.hardware.fixed_counters, 0, 3, true, "hardware.");
      r.Int(*hw, "counter_width", &p.hardware.counter_width, 16, 64, true, "hardware.");
      r.Int(*hw, "max_precise", &p.hardware.max_precise, 0, 3, false, "hardware.");
      r.Bool(*hw, "overflow_interrupt", &p.hardware.overflow_interrupt, "hardware.");
      r.Bool(*hw, "mode_exclusion", &p.hardware.mode_exclusion, "hardware.");
    }
  }
  if (const Json* clocks = r.Find(root, "clock_pmu_types", "clock_pmu_types", false); clocks != nullptr && r.ok()) {
    if (!clocks->is_object()) r.Fail("clock_pmu_types", fmt::format("expected an object, got {}", clocks->type_name()));
    for (auto it = clocks->begin(); r.ok() && clocks->is_object() && it != clocks->end(); ++it) {
      if (it.key() != "cpu_clock" && it.key() != "task_clock") r.Fail("clock_pmu_types." + it.key(), "unknown key (cpu_clock, task_clock)");
    }
    r.Int(*clocks, "cpu_clock", &p.cpu_clock_type, PERF_TYPE_MAX, 0x7fffffffll, true, "clock_pmu_types.");
    r.Int(*clocks, "task_clock", &p.task_clock_type, PERF_TYPE_MAX, 0x7fffffffll, true, "clock_pmu_types.");
    if (r.ok() && (p.cpu_clock_type == p.task_clock_type || p.HasPmu(p.cpu_clock_type) || p.HasPmu(p.task_clock_type))) {
      r.Fail("clock_pmu_types", "the clock PMUs' types must differ from each other and from every listed PMU's");
    }
  }
  r.Bool(root, "attr_aux_action", &p.attr_aux_action);
  r.Bool(root, "compat_task", &p.compat_task);
  if (r.ok() && p.compat_task && p.arch != "aarch64") {
    r.Fail("compat_task", fmt::format("AArch32 (compat) tasks are modelled for arch aarch64 only, not {}", p.arch));
  }
  if (const Json* c = r.Find(root, "sched_clock_counter", "sched_clock_counter", false); c != nullptr && r.ok()) {
    if (!c->is_object()) r.Fail("sched_clock_counter", fmt::format("expected an object, got {}", c->type_name()));
    for (auto it = c->begin(); r.ok() && c->is_object() && it != c->end(); ++it) {
      if (it.key() != "khz" && it.key() != "bits" && it.key() != "start") {
        r.Fail("sched_clock_counter." + it.key(), "unknown key (khz, bits, start)");
      }
    }
    r.Int(*c, "khz", &p.sched_clock_counter.khz, 1, 100'000'000, true, "sched_clock_counter.");
    r.Int(*c, "bits", &p.sched_clock_counter.bits, 32, 64, false, "sched_clock_counter.");
    r.Int(*c, "start", &p.sched_clock_counter.start, 0, 0x7fffffffffffffffll, false, "sched_clock_counter.");
  }
  if (!r.ok()) return Result<MockProfile>::Failure(EINVAL, r.error());
  std::sort(p.pmus.begin(), p.pmus.end(), [](const Pmu& a, const Pmu& b) { return a.name < b.name; });
  return Result<MockProfile>::Ok(std::move(p), fmt::format("parse_profile({})", where));
}

namespace {

using OrderedJson = nlohmann::ordered_json;

// The kind to write for `pmu`: "" when its name selects its kind already.
std::string WrittenKind(const MockProfile& p, const Pmu& pmu) {
  const PmuKind* by_name = FindKind(pmu.name);
  if (!p.has_hardware || pmu.type != p.core_pmu_type) return "";
  if (by_name != nullptr && by_name->core && by_name->core_kind == p.hardware.kind) return "";
  for (const PmuKind& k : ImplementedPmuKinds()) {
    if (k.core && k.core_kind == p.hardware.kind) return k.kind;
  }
  return "";
}

OrderedJson StringMapJson(const std::map<std::string, std::string>& m) {
  OrderedJson out = OrderedJson::object();
  for (const auto& [k, v] : m) out[k] = v;
  return out;
}

}  // namespace

std::string WriteProfile(const MockProfile& p) {
  OrderedJson j;
  j["name"] = p.name;
  j["arch"] = p.arch;
  j["description"] = p.description;
  j["provenance"] = p.provenance;
  if (!p.kernel_release.empty()) j["kernel_release"] = p.kernel_release;
  j["ncpus"] = p.ncpus;
  j["page_size"] = p.page_size;
  j["perf_event_paranoid"] = p.perf_event_paranoid;
  j["max_sample_rate"] = p.max_sample_rate;
  j["max_stack"] = p.max_stack;
  j["max_contexts_per_stack"] = p.max_contexts_per_stack;
  j["mlock_kb"] = p.mlock_kb;
  j["hz"] = p.hz;
  j["attr_size"] = p.attr_size;
  j["privileged"] = p.privileged;
  j["memlock_rlimit_kb"] = p.memlock_rlimit_kb;
  OrderedJson pmus = OrderedJson::array();
  for (const Pmu& pmu : p.pmus) {
    OrderedJson e;
    e["name"] = pmu.name;
    if (std::string kind = WrittenKind(p, pmu); !kind.empty()) e["kind"] = kind;
    e["type"] = pmu.type;
    e["format"] = StringMapJson(pmu.format);
    e["events"] = StringMapJson(pmu.events);
    e["caps"] = StringMapJson(pmu.caps);
    pmus.push_back(std::move(e));
  }
  j["pmus"] = std::move(pmus);
  if (!p.tracepoints.empty()) {
    OrderedJson tps = OrderedJson::object();
    for (const auto& [name, id] : p.tracepoints) tps[name] = id;
    j["tracepoints"] = std::move(tps);
  }
  j["hw_breakpoint_slots"] = p.hw_breakpoint_slots;
  if (p.hw_watchpoint_slots) j["hw_watchpoint_slots"] = *p.hw_watchpoint_slots;
  j["cpu_mhz"] = p.cpu_mhz;
  if (p.has_hardware) {
    j["hardware"] = {{"gp_counters", p.hardware.gp_counters},
                     {"fixed_counters", p.hardware.fixed_counters},
                     {"counter_width", p.hardware.counter_width},
                     {"max_precise", p.hardware.max_precise},
                     {"overflow_interrupt", p.hardware.overflow_interrupt},
                     {"mode_exclusion", p.hardware.mode_exclusion}};
  }
  if (p.cpu_clock_type != 0) {
    j["clock_pmu_types"] = {{"cpu_clock", p.cpu_clock_type}, {"task_clock", p.task_clock_type}};
  }
  j["attr_aux_action"] = p.attr_aux_action;
  if (p.compat_task) j["compat_task"] = true;
  if (p.sched_clock_counter.khz != 0) {
    j["sched_clock_counter"] = {{"khz", p.sched_clock_counter.khz},
                                {"bits", p.sched_clock_counter.bits},
                                {"start", p.sched_clock_counter.start}};
  }
  return j.dump(2) + "\n";
}

Result<MockProfile> LoadProfile(std::string_view name_or_path) {
  std::string arg(name_or_path);
  if (auto alias = Aliases().find(arg); alias != Aliases().end()) arg = alias->second;
  const bool is_path = arg.find('/') != std::string::npos ||
                       (arg.size() >= 5 && arg.compare(arg.size() - 5, 5, ".json") == 0);
  const std::string path = is_path ? arg : ProfileSearchDir() + "/" + arg + ".json";
  const std::string call = fmt::format("load_profile(\"{}\" -> {})", name_or_path, path);
  if (arg.empty()) return Result<MockProfile>::Failure(ENOENT, call + ": empty profile name");

  std::ifstream in(path);
  if (!in) {
    const int err = errno != 0 ? errno : ENOENT;
    std::string known;
    if (!is_path) {
      std::error_code ec;
      for (const auto& e : std::filesystem::directory_iterator(ProfileSearchDir(), ec)) {
        if (e.path().extension() == ".json") known += (known.empty() ? "" : ", ") + e.path().stem().string();
      }
    }
    return Result<MockProfile>::Failure(
        err == EACCES ? EACCES : ENOENT,
        is_path ? call : fmt::format("{}: no such profile (known: {})", call, known.empty() ? "none" : known));
  }
  std::stringstream text;
  text << in.rdbuf();
  Result<MockProfile> p = ParseProfile(text.str(), path);
  if (!p.ok()) return Result<MockProfile>::Failure(p.error(), fmt::format("{}: {}", call, p.call()));
  return Result<MockProfile>::Ok(std::move(*p), call);
}

}  // namespace perftest
