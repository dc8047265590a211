#include "tools/pt/record_perf_data.h"

#include <fmt/format.h>
#include <sys/utsname.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <cstring>
#include <fstream>

#include "harness/perf_data/features.h"
#include "harness/perf_data/format.h"
#include "harness/perf_data/writer.h"
#include "harness/pt/packet_decoder.h"

namespace perftest::pt {
namespace {

using perf_data::DataRecord;

DataRecord MakeRecord(std::vector<std::byte> bytes, std::vector<std::byte> payload = {}) {
  DataRecord r;
  std::memcpy(&r.header, bytes.data(), sizeof r.header);
  r.bytes = std::move(bytes);
  r.payload = std::move(payload);
  return r;
}

// "GenuineIntel,FAMILY,MODEL,STEPPING" as perf's get_cpuid() (arch/x86/util/header.c) writes it.
std::string HostCpuid() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return "";
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  if (!__get_cpuid(1, &a, &b, &c, &d)) return "";
  unsigned family = (a >> 8) & 0xf, model = (a >> 4) & 0xf;
  const unsigned stepping = a & 0xf;
  if (family == 0xf) family += (a >> 20) & 0xff;
  if (family >= 6) model += ((a >> 16) & 0xf) << 4;
  return fmt::format("{},{},{},{}", vendor, family, model, stepping);
#else
  return "";
#endif
}

// The first "KEY : value" of a /proc file.
std::string ProcField(const char* path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}

}  // namespace

perf_data::TimeConvRecord TimeConvOf(const perf_data::IntelPtInfo& pt) {
  perf_data::TimeConvRecord t;
  t.time_shift = pt.time_shift;
  t.time_mult = pt.time_mult;
  t.time_zero = pt.time_zero;
  t.time_cycles = 0;
  t.time_mask = 0;
  t.cap_user_time_zero = static_cast<uint8_t>(pt.cap_user_time_zero);
  t.cap_user_time_short = 0;
  return t;
}

PerfDataSink::PerfDataSink(PerfDataEvent pt, PerfDataEvent sideband)
    : pt_(std::move(pt)), sideband_(std::move(sideband)) {}

void PerfDataSink::Synthesized(std::vector<std::byte> record) { synthesized_.push_back(std::move(record)); }

void PerfDataSink::Record(std::span<const std::byte> record) {
  records_.push_back(MakeRecord(std::vector<std::byte>(record.begin(), record.end())));
  round_open_ = true;
}

void PerfDataSink::Aux(uint64_t aux_offset, std::span<const std::byte> data, uint64_t reference, bool lost_after) {
  if (aux_pending_.empty()) aux_pending_offset_ = aux_offset;
  aux_reference_ = reference;
  aux_pending_.insert(aux_pending_.end(), data.begin(), data.end());
  aux_bytes_ += data.size();
  FlushAux(lost_after);
}

void PerfDataSink::FlushAux(bool all) {
  size_t n = aux_pending_.size();
  if (!all) {
    // Up to the packet the data cuts short (the pending bytes start at a packet).
    const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(aux_pending_.data()), aux_pending_.size());
    PacketDecoder decoder(bytes);
    if (decoder.SyncSet(0).ok()) {
      Packet p;
      int err = 0;
      while ((err = decoder.Next(p)) == 0) {
      }
      if (err == EMSGSIZE) n = decoder.offset();
    }
  }
  if (n == 0) return;
  std::vector<std::byte> payload(aux_pending_.begin(), aux_pending_.begin() + static_cast<ptrdiff_t>(n));
  payload.resize((n + 7) / 8 * 8, std::byte{0});
  perf_data::AuxtraceRecord a;
  a.size = payload.size();
  a.offset = aux_pending_offset_;
  a.reference = aux_reference_;
  a.idx = 0;
  a.cpu = static_cast<uint32_t>(-1);
  std::vector<std::byte> bytes;
  perf_data::EncodeAuxtrace(a, &bytes);
  auxtrace_at_.push_back(records_.size());
  records_.push_back(MakeRecord(std::move(bytes), std::move(payload)));
  aux_pending_.erase(aux_pending_.begin(), aux_pending_.begin() + static_cast<ptrdiff_t>(n));
  aux_pending_offset_ += n;
  round_open_ = true;
}

void PerfDataSink::EndRound() {
  if (!round_open_) return;
  std::vector<std::byte> bytes;
  perf_data::EncodeFinishedRound(&bytes);
  records_.push_back(MakeRecord(std::move(bytes)));
  round_open_ = false;
}

perf_data::PerfData PerfDataSink::Build(const PerfDataInfo& info) {
  using namespace perf_data;
  FlushAux(/*all=*/true);
  EndRound();
  PerfData d;
  for (const PerfDataEvent* e : {&pt_, &sideband_}) {
    Attr a;
    a.attr = e->attr;
    a.attr.size = sizeof(perf_event_attr);
    a.ids = {e->id};
    d.attrs.push_back(std::move(a));
  }
  std::vector<std::byte> head;
  EncodeTimeConv(TimeConvOf(info.intel_pt), &head);
  d.records.push_back(MakeRecord(std::move(head)));
  std::vector<std::byte> ai;
  EncodeAuxtraceInfo(EncodeIntelPtInfo(info.intel_pt), &ai);
  d.records.push_back(MakeRecord(std::move(ai)));
  IdIndexRecord index;
  const uint64_t any = ~uint64_t{0};
  index.entries = {{pt_.id, 0, any, static_cast<uint64_t>(info.tid)},
                   {sideband_.id, 1, any, static_cast<uint64_t>(info.tid)}};
  std::vector<std::byte> ii;
  EncodeIdIndex(index, &ii);
  d.records.push_back(MakeRecord(std::move(ii)));
  for (std::vector<std::byte>& r : synthesized_) d.records.push_back(MakeRecord(std::move(r)));
  synthesized_.clear();
  for (size_t i : auxtrace_at_) {
    // AuxtraceRecord: header, size, offset, reference, then u32 idx, tid, cpu.
    const uint32_t tid = static_cast<uint32_t>(info.tid);
    std::memcpy(records_[i].bytes.data() + 8 + 24 + 4, &tid, 4);
  }
  auxtrace_at_.clear();
  for (DataRecord& r : records_) d.records.push_back(std::move(r));
  records_.clear();

  struct utsname u{};
  ::uname(&u);
  d.features[HEADER_HOSTNAME] = EncodeStringFeature(u.nodename);
  d.features[HEADER_OSRELEASE] = EncodeStringFeature(u.release);
  d.features[HEADER_VERSION] = EncodeStringFeature("perftest pt record");
  d.features[HEADER_ARCH] = EncodeStringFeature(u.machine);
  d.features[HEADER_NRCPUS] = EncodeNrCpus({info.nr_cpus, info.nr_cpus});
  const std::string desc = ProcField("/proc/cpuinfo", "model name");
  if (!desc.empty()) d.features[HEADER_CPUDESC] = EncodeStringFeature(desc);
  const std::string cpuid = HostCpuid();
  if (!cpuid.empty()) d.features[HEADER_CPUID] = EncodeStringFeature(cpuid);
  const std::string mem = ProcField("/proc/meminfo", "MemTotal");
  if (!mem.empty()) d.features[HEADER_TOTAL_MEM] = EncodeU64Feature(std::strtoull(mem.c_str(), nullptr, 10));
  d.features[HEADER_CMDLINE] = EncodeStringListFeature(info.cmdline);
  std::vector<EventDesc> events;
  for (const PerfDataEvent* e : {&pt_, &sideband_}) events.push_back({e->attr, e->name, {e->id}});
  events[0].attr.size = events[1].attr.size = sizeof(perf_event_attr);
  d.features[HEADER_EVENT_DESC] = EncodeEventDesc(events);
  if (!info.build_ids.empty()) d.features[HEADER_BUILD_ID] = EncodeBuildIds(info.build_ids);
  return d;
}

Result<void> PerfDataSink::Write(const std::string& path, const PerfDataInfo& info) {
  return perf_data::WritePerfDataFile(Build(info), path);
}

}  // namespace perftest::pt
