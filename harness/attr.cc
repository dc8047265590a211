#include "harness/attr.h"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

namespace perftest {
namespace {

template <size_t N>
std::string DescribeBits(uint64_t mask, const std::array<std::pair<uint64_t, std::string_view>, N>& names) {
  std::string out;
  for (const auto& [bit, name] : names) {
    if (mask & bit) {
      if (!out.empty()) out += '|';
      out += name;
      mask &= ~bit;
    }
  }
  if (mask != 0) {
    if (!out.empty()) out += '|';
    out += fmt::format("{:#x}", mask);
  }
  return out.empty() ? "0" : out;
}

constexpr std::array<std::pair<uint64_t, std::string_view>, 25> kSampleTypeNames{{
    {PERF_SAMPLE_IP, "IP"},
    {PERF_SAMPLE_TID, "TID"},
    {PERF_SAMPLE_TIME, "TIME"},
    {PERF_SAMPLE_ADDR, "ADDR"},
    {PERF_SAMPLE_READ, "READ"},
    {PERF_SAMPLE_CALLCHAIN, "CALLCHAIN"},
    {PERF_SAMPLE_ID, "ID"},
    {PERF_SAMPLE_CPU, "CPU"},
    {PERF_SAMPLE_PERIOD, "PERIOD"},
    {PERF_SAMPLE_STREAM_ID, "STREAM_ID"},
    {PERF_SAMPLE_RAW, "RAW"},
    {PERF_SAMPLE_BRANCH_STACK, "BRANCH_STACK"},
    {PERF_SAMPLE_REGS_USER, "REGS_USER"},
    {PERF_SAMPLE_STACK_USER, "STACK_USER"},
    {PERF_SAMPLE_WEIGHT, "WEIGHT"},
    {PERF_SAMPLE_DATA_SRC, "DATA_SRC"},
    {PERF_SAMPLE_IDENTIFIER, "IDENTIFIER"},
    {PERF_SAMPLE_TRANSACTION, "TRANSACTION"},
    {PERF_SAMPLE_REGS_INTR, "REGS_INTR"},
    {PERF_SAMPLE_PHYS_ADDR, "PHYS_ADDR"},
    {PERF_SAMPLE_AUX, "AUX"},
    {PERF_SAMPLE_CGROUP, "CGROUP"},
    {PERF_SAMPLE_DATA_PAGE_SIZE, "DATA_PAGE_SIZE"},
    {PERF_SAMPLE_CODE_PAGE_SIZE, "CODE_PAGE_SIZE"},
    {PERF_SAMPLE_WEIGHT_STRUCT, "WEIGHT_STRUCT"},
}};

constexpr std::array<std::pair<uint64_t, std::string_view>, 5> kReadFormatNames{{
    {PERF_FORMAT_TOTAL_TIME_ENABLED, "TOTAL_TIME_ENABLED"},
    {PERF_FORMAT_TOTAL_TIME_RUNNING, "TOTAL_TIME_RUNNING"},
    {PERF_FORMAT_ID, "ID"},
    {PERF_FORMAT_GROUP, "GROUP"},
    {PERF_FORMAT_LOST, "LOST"},
}};

}  // namespace

perf_event_attr MakeAttr(uint32_t type, uint64_t config) {
  perf_event_attr a;
  std::memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = type;
  a.config = config;
  a.disabled = 1;
  return a;
}

std::string DescribeSampleType(uint64_t sample_type) { return DescribeBits(sample_type, kSampleTypeNames); }
std::string DescribeReadFormat(uint64_t read_format) { return DescribeBits(read_format, kReadFormatNames); }

std::string DescribeAttr(const perf_event_attr& a) {
  std::vector<std::string> parts;
  parts.push_back(fmt::format("type={}", a.type));
  parts.push_back(fmt::format("config={:#x}", a.config));
  parts.push_back(fmt::format("size={}", a.size));
  if (a.sample_period != 0) parts.push_back(fmt::format("{}={}", a.freq ? "sample_freq" : "sample_period", a.sample_period));
  if (a.sample_type != 0) parts.push_back("sample_type=" + DescribeSampleType(a.sample_type));
  if (a.read_format != 0) parts.push_back("read_format=" + DescribeReadFormat(a.read_format));
  // The flag bits, by their UAPI names, in declaration order.
  const std::pair<bool, std::string_view> flags[] = {
      {a.disabled, "disabled"},         {a.inherit, "inherit"},
      {a.pinned, "pinned"},             {a.exclusive, "exclusive"},
      {a.exclude_user, "exclude_user"}, {a.exclude_kernel, "exclude_kernel"},
      {a.exclude_hv, "exclude_hv"},     {a.exclude_idle, "exclude_idle"},
      {a.mmap, "mmap"},                 {a.comm, "comm"},
      {a.freq, "freq"},                 {a.inherit_stat, "inherit_stat"},
      {a.enable_on_exec, "enable_on_exec"}, {a.task, "task"},
      {a.watermark, "watermark"},       {a.mmap_data, "mmap_data"},
      {a.sample_id_all, "sample_id_all"}, {a.exclude_host, "exclude_host"},
      {a.exclude_guest, "exclude_guest"}, {a.exclude_callchain_kernel, "exclude_callchain_kernel"},
      {a.exclude_callchain_user, "exclude_callchain_user"}, {a.mmap2, "mmap2"},
      {a.comm_exec, "comm_exec"},       {a.use_clockid, "use_clockid"},
      {a.context_switch, "context_switch"}, {a.write_backward, "write_backward"},
      {a.namespaces, "namespaces"},     {a.ksymbol, "ksymbol"},
      {a.bpf_event, "bpf_event"},       {a.aux_output, "aux_output"},
      {a.cgroup, "cgroup"},             {a.text_poke, "text_poke"},
      {a.build_id, "build_id"},         {a.inherit_thread, "inherit_thread"},
      {a.remove_on_exec, "remove_on_exec"}, {a.sigtrap, "sigtrap"},
  };
  for (const auto& [set, name] : flags) {
    if (set) parts.emplace_back(name);
  }
  if (a.precise_ip != 0) parts.push_back(fmt::format("precise_ip={}", a.precise_ip));
  if (a.wakeup_events != 0) parts.push_back(fmt::format("{}={}", a.watermark ? "wakeup_watermark" : "wakeup_events", a.wakeup_events));
  if (a.config1 != 0) parts.push_back(fmt::format("config1={:#x}", a.config1));
  if (a.config2 != 0) parts.push_back(fmt::format("config2={:#x}", a.config2));
  if (a.branch_sample_type != 0) parts.push_back(fmt::format("branch_sample_type={:#x}", a.branch_sample_type));
  if (a.sample_regs_user != 0) parts.push_back(fmt::format("sample_regs_user={:#x}", a.sample_regs_user));
  if (a.sample_stack_user != 0) parts.push_back(fmt::format("sample_stack_user={}", a.sample_stack_user));
  if (a.clockid != 0) parts.push_back(fmt::format("clockid={}", a.clockid));
  if (a.sample_regs_intr != 0) parts.push_back(fmt::format("sample_regs_intr={:#x}", a.sample_regs_intr));
  if (a.aux_watermark != 0) parts.push_back(fmt::format("aux_watermark={}", a.aux_watermark));
  if (a.sample_max_stack != 0) parts.push_back(fmt::format("sample_max_stack={}", a.sample_max_stack));
  if (a.aux_sample_size != 0) parts.push_back(fmt::format("aux_sample_size={}", a.aux_sample_size));
  if (a.sig_data != 0) parts.push_back(fmt::format("sig_data={:#x}", a.sig_data));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string RecordTypeName(uint32_t type) {
  switch (type) {
    case PERF_RECORD_MMAP: return "PERF_RECORD_MMAP";
    case PERF_RECORD_LOST: return "PERF_RECORD_LOST";
    case PERF_RECORD_COMM: return "PERF_RECORD_COMM";
    case PERF_RECORD_EXIT: return "PERF_RECORD_EXIT";
    case PERF_RECORD_THROTTLE: return "PERF_RECORD_THROTTLE";
    case PERF_RECORD_UNTHROTTLE: return "PERF_RECORD_UNTHROTTLE";
    case PERF_RECORD_FORK: return "PERF_RECORD_FORK";
    case PERF_RECORD_READ: return "PERF_RECORD_READ";
    case PERF_RECORD_SAMPLE: return "PERF_RECORD_SAMPLE";
    case PERF_RECORD_MMAP2: return "PERF_RECORD_MMAP2";
    case PERF_RECORD_AUX: return "PERF_RECORD_AUX";
    case PERF_RECORD_ITRACE_START: return "PERF_RECORD_ITRACE_START";
    case PERF_RECORD_LOST_SAMPLES: return "PERF_RECORD_LOST_SAMPLES";
    case PERF_RECORD_SWITCH: return "PERF_RECORD_SWITCH";
    case PERF_RECORD_SWITCH_CPU_WIDE: return "PERF_RECORD_SWITCH_CPU_WIDE";
    case PERF_RECORD_NAMESPACES: return "PERF_RECORD_NAMESPACES";
    case PERF_RECORD_KSYMBOL: return "PERF_RECORD_KSYMBOL";
    case PERF_RECORD_BPF_EVENT: return "PERF_RECORD_BPF_EVENT";
    case PERF_RECORD_CGROUP: return "PERF_RECORD_CGROUP";
    case PERF_RECORD_TEXT_POKE: return "PERF_RECORD_TEXT_POKE";
    case PERF_RECORD_AUX_OUTPUT_HW_ID: return "PERF_RECORD_AUX_OUTPUT_HW_ID";
    default: return fmt::format("PERF_RECORD_{}", type);
  }
}

}  // namespace perftest
