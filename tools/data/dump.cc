#include "tools/data/dump.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <cstring>

#include "harness/attr.h"
#include "harness/perf_data/aux_queues.h"
#include "harness/perf_data/compressed.h"
#include "harness/perf_data/user_records.h"
#include "tools/data/dump_header.h"

namespace perftest::data {
namespace {

using namespace perftest::perf_data;

template <typename T>
T Load(std::span<const std::byte> b, size_t at) {
  T v{};
  if (at + sizeof v <= b.size()) std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}

std::string CStr(std::span<const std::byte> b, size_t at) {
  if (at >= b.size()) return {};
  const char* p = reinterpret_cast<const char*>(b.data() + at);
  return std::string(p, strnlen(p, b.size() - at));
}

std::string CpuList(const std::vector<int32_t>& cpus) {
  std::string s;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    s += (s.empty() ? "" : ",") + (j == i ? fmt::format("{}", cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]));
    i = j + 1;
  }
  return s;
}

// The kernel records harness/records.h keeps as raw bodies (tools/perf/util/event.c).
std::string DescribeOther(uint32_t type, std::span<const std::byte> b) {
  switch (type) {
    case PERF_RECORD_AUX: {
      const auto flags = Load<uint64_t>(b, 16);
      return fmt::format(" offset: {:#x} size: {:#x} flags: {:#x} [{}{}{}]", Load<uint64_t>(b, 0),
                         Load<uint64_t>(b, 8), flags, flags & PERF_AUX_FLAG_TRUNCATED ? "T" : "",
                         flags & PERF_AUX_FLAG_OVERWRITE ? "O" : "", flags & PERF_AUX_FLAG_PARTIAL ? "P" : "");
    }
    case PERF_RECORD_ITRACE_START:
      return fmt::format(" pid: {} tid: {}", Load<uint32_t>(b, 0), Load<uint32_t>(b, 4));
    case PERF_RECORD_LOST_SAMPLES: return fmt::format(" lost {}", Load<uint64_t>(b, 0));
    case PERF_RECORD_KSYMBOL:
      return fmt::format(" addr {:x} len {} type {} flags {:#x} name {}", Load<uint64_t>(b, 0), Load<uint32_t>(b, 8),
                         Load<uint16_t>(b, 12), Load<uint16_t>(b, 14), CStr(b, 16));
    case PERF_RECORD_BPF_EVENT:
      return fmt::format(" type {}, flags {}, id {}", Load<uint16_t>(b, 0), Load<uint16_t>(b, 2), Load<uint32_t>(b, 4));
    case PERF_RECORD_CGROUP: return fmt::format(" cgroup: {} {}", Load<uint64_t>(b, 0), CStr(b, 8));
    case PERF_RECORD_TEXT_POKE:
      return fmt::format(" {:#x} old len {} new len {}", Load<uint64_t>(b, 0), Load<uint16_t>(b, 8), Load<uint16_t>(b, 10));
    case PERF_RECORD_AUX_OUTPUT_HW_ID: return fmt::format(" hw_id: {:#x}", Load<uint64_t>(b, 0));
    case PERF_RECORD_READ: return fmt::format(" {} {}", Load<uint32_t>(b, 0), Load<uint32_t>(b, 4));
    default: return fmt::format(" ({} bytes)", b.size());
  }
}

std::string DescribeSample(const perf_event_header& h, const SampleRecord& s, uint64_t sample_type) {
  std::string line = fmt::format("({}, {:#x}): {}/{}: {:#x} period: {} addr: {:#x}",
                                 DescribeSampleType(sample_type & PERF_SAMPLE_IP), h.misc,
                                 static_cast<int32_t>(s.pid.value_or(0)), static_cast<int32_t>(s.tid.value_or(0)),
                                 s.ip.value_or(0), s.period.value_or(0), s.addr.value_or(0));
  if (s.id) line += fmt::format(" id: {}", *s.id);
  if (s.cpu) line += fmt::format(" cpu: {}", *s.cpu);
  if (s.callchain) {
    line += fmt::format("\n... FP chain: nr:{}", s.callchain->size());
    for (size_t i = 0; i < s.callchain->size(); ++i) line += fmt::format("\n..... {:2}: {:016x}", i, (*s.callchain)[i]);
  }
  if (s.branch_stack) {
    line += fmt::format("\n... branch stack: nr:{}", s.branch_stack->entries.size());
    for (const auto& e : s.branch_stack->entries) line += fmt::format("\n..... {:016x} -> {:016x}", e.from, e.to);
  }
  if (s.raw) line += fmt::format("\n... raw size: {}", s.raw->size());
  if (s.aux) line += fmt::format("\n... AUX size: {}", s.aux->size());
  return line;
}

std::string DescribeKernel(const DataRecord& r, const perftest::Record& k, const Attr* attr) {
  const uint16_t misc = r.header.misc;
  return std::visit(
      [&](const auto& b) -> std::string {
        using T = std::decay_t<decltype(b)>;
        if constexpr (std::is_same_v<T, SampleRecord>) {
          return DescribeSample(r.header, b, attr ? attr->attr.sample_type : 0);
        } else if constexpr (std::is_same_v<T, MmapRecord>) {
          return fmt::format(" {}/{}: [{:#x}({:#x}) @ {:#x}]: {} {}", static_cast<int32_t>(b.pid),
                             static_cast<int32_t>(b.tid), b.addr, b.len, b.pgoff,
                             misc & PERF_RECORD_MISC_MMAP_DATA ? 'r' : 'x', b.filename);
        } else if constexpr (std::is_same_v<T, Mmap2Record>) {
          const std::string prot = fmt::format("{}{}{}{}", b.prot & PROT_READ ? 'r' : '-', b.prot & PROT_WRITE ? 'w' : '-',
                                               b.prot & PROT_EXEC ? 'x' : '-', b.flags & MAP_SHARED ? 's' : 'p');
          if (misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
            std::string id;
            for (std::byte x : b.build_id) id += fmt::format("{:02x}", static_cast<unsigned>(x));
            return fmt::format(" {}/{}: [{:#x}({:#x}) @ {:#x} {}]: {} {}", static_cast<int32_t>(b.pid),
                               static_cast<int32_t>(b.tid), b.addr, b.len, b.pgoff, id, prot, b.filename);
          }
          return fmt::format(" {}/{}: [{:#x}({:#x}) @ {:#x} {:02x}:{:02x} {} {}]: {} {}", static_cast<int32_t>(b.pid),
                             static_cast<int32_t>(b.tid), b.addr, b.len, b.pgoff, b.maj, b.min, b.ino,
                             b.ino_generation, prot, b.filename);
        } else if constexpr (std::is_same_v<T, CommRecord>) {
          return fmt::format("{}: {}:{}/{}", misc & PERF_RECORD_MISC_COMM_EXEC ? " exec" : "", b.comm,
                             static_cast<int32_t>(b.pid), static_cast<int32_t>(b.tid));
        } else if constexpr (std::is_same_v<T, TaskRecord>) {
          return fmt::format("({}:{}):({}:{})", static_cast<int32_t>(b.pid), static_cast<int32_t>(b.tid),
                             static_cast<int32_t>(b.ppid), static_cast<int32_t>(b.ptid));
        } else if constexpr (std::is_same_v<T, ThrottleRecord>) {
          return fmt::format(": time {} id {} stream_id {}", b.time, b.id, b.stream_id);
        } else if constexpr (std::is_same_v<T, LostRecord>) {
          return fmt::format(": id {} lost {}", b.id, b.lost);
        } else if constexpr (std::is_same_v<T, SwitchRecord>) {
          std::string s = misc & PERF_RECORD_MISC_SWITCH_OUT ? " OUT" : " IN ";
          if (misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) s += " preempt";
          if (b.next_prev_pid) {
            s += fmt::format("  {} pid/tid: {}/{}", misc & PERF_RECORD_MISC_SWITCH_OUT ? "next" : "prev",
                             static_cast<int32_t>(*b.next_prev_pid), static_cast<int32_t>(*b.next_prev_tid));
          }
          return s;
        } else if constexpr (std::is_same_v<T, NamespacesRecord>) {
          std::string s = fmt::format(" {}/{} - nr_namespaces: {}", b.pid, b.tid, b.namespaces.size());
          for (const auto& n : b.namespaces) s += fmt::format(" [dev: {}, inode: {}]", n.dev, n.ino);
          return s;
        } else {
          return DescribeOther(r.header.type, b.body);
        }
      },
      k.body);
}

std::string DescribeIntelPt(const IntelPtInfo& p) {
  std::string s = fmt::format(
      "\n  PMU Type            {}\n  Time Shift          {}\n  Time Muliplier      {}\n  Time Zero           {}"
      "\n  Cap Time Zero       {}\n  TSC bit             {:#x}\n  NoRETComp bit       {:#x}\n  Have sched_switch   {}"
      "\n  Snapshot mode       {}\n  Per-cpu maps        {}\n  MTC bit             {:#x}\n  MTC freq bits       {:#x}"
      "\n  TSC:CTC numerator   {}\n  TSC:CTC denominator {}\n  CYC bit             {:#x}\n  Max non-turbo ratio {}"
      "\n  Filter string len.  {}\n  Filter string       \"{}\"",
      p.pmu_type, p.time_shift, p.time_mult, p.time_zero, p.cap_user_time_zero, p.tsc_bit, p.noretcomp_bit,
      p.have_sched_switch, p.snapshot_mode, p.per_cpu_mmaps, p.mtc_bit, p.mtc_freq_bits, p.tsc_ctc_ratio_n,
      p.tsc_ctc_ratio_d, p.cyc_bit, p.max_non_turbo_ratio, p.filter.size(), p.filter);
  if (p.event_trace) s += fmt::format("\n  Event Trace         {}", *p.event_trace);
  return s;
}

std::string DescribeUser(const UserRecord& u) {
  return std::visit(
      [&](const auto& b) -> std::string {
        using T = std::decay_t<decltype(b)>;
        if constexpr (std::is_same_v<T, HeaderAttrRecord>) {
          std::string ids;
          for (uint64_t id : b.ids) ids += fmt::format(" {}", id);
          return fmt::format(" ids:{}\n... {}", ids, DescribeAttr(b.attr));
        } else if constexpr (std::is_same_v<T, EventTypeRecord>) {
          return fmt::format(" event_id: {} name: {}", b.event_id, b.name);
        } else if constexpr (std::is_same_v<T, TracingDataRecord>) {
          return fmt::format(" size: {}", b.size);
        } else if constexpr (std::is_same_v<T, BuildIdRecord>) {
          std::string id;
          for (std::byte x : b.build_id) id += fmt::format("{:02x}", static_cast<unsigned>(x));
          return fmt::format(" pid {} build id {} {}", b.pid, id, b.filename);
        } else if constexpr (std::is_same_v<T, IdIndexRecord>) {
          std::string s = fmt::format(" nr: {}", b.entries.size());
          for (const auto& e : b.entries) {
            s += fmt::format("\n ... id: {}  idx: {}  cpu: {}  tid: {}", e.id, e.idx, static_cast<int64_t>(e.cpu),
                             static_cast<int64_t>(e.tid));
          }
          return s;
        } else if constexpr (std::is_same_v<T, AuxtraceInfoRecord>) {
          std::string s = fmt::format(" type: {}", b.type);
          if (b.type == PERF_AUXTRACE_INTEL_PT) {
            Result<IntelPtInfo> pt = ParseIntelPtInfo(b);
            s += pt.ok() ? DescribeIntelPt(*pt) : fmt::format("\n  ({})", pt.call());
          } else {
            for (size_t i = 0; i < b.priv.size(); ++i) s += fmt::format("\n  priv[{}] {:#x}", i, b.priv[i]);
          }
          return s;
        } else if constexpr (std::is_same_v<T, AuxtraceRecord>) {
          return fmt::format(" size: {:#x}  offset: {:#x}  ref: {:#x}  idx: {}  tid: {}  cpu: {}", b.size, b.offset,
                             b.reference, b.idx, static_cast<int32_t>(b.tid), static_cast<int32_t>(b.cpu));
        } else if constexpr (std::is_same_v<T, AuxtraceErrorRecord>) {
          return fmt::format(" type {} code {} cpu {} pid {} tid {} ip {:#x} time {} msg: {}", b.type, b.code,
                             static_cast<int32_t>(b.cpu), static_cast<int32_t>(b.pid), static_cast<int32_t>(b.tid),
                             b.ip, b.time, b.msg);
        } else if constexpr (std::is_same_v<T, ThreadMapRecord>) {
          std::string s = fmt::format(" nr: {}", b.entries.size());
          for (const auto& e : b.entries) s += fmt::format(" thread: {}", static_cast<int64_t>(e.pid));
          return s;
        } else if constexpr (std::is_same_v<T, CpuMapRecord>) {
          return fmt::format(": {}", CpuList(b.data.cpus));
        } else if constexpr (std::is_same_v<T, StatConfigRecord>) {
          std::string s = fmt::format(" nr: {}", b.terms.size());
          for (const auto& [tag, val] : b.terms) s += fmt::format("\n... tag {} val {}", tag, val);
          return s;
        } else if constexpr (std::is_same_v<T, StatRecord>) {
          return fmt::format("\n... id {}, cpu {}, thread {}\n... value {}, enabled {}, running {}", b.id,
                             static_cast<int32_t>(b.cpu), static_cast<int32_t>(b.thread), b.val, b.ena, b.run);
        } else if constexpr (std::is_same_v<T, StatRoundRecord>) {
          return fmt::format("\n... time {}, type {}", b.time, b.type == 1 ? "FINAL" : "INTERVAL");
        } else if constexpr (std::is_same_v<T, EventUpdateRecord>) {
          std::string s = fmt::format("\n... id:    {}", b.id);
          switch (b.type) {
            case 0: return s + fmt::format("\n... unit:  {}", b.text);
            case 1: return s + fmt::format("\n... scale: {:f}", b.scale);
            case 2: return s + fmt::format("\n... name:  {}", b.text);
            case 3: return s + fmt::format("\n... cpus:  {}", CpuList(b.cpus.cpus));
            default: return s + fmt::format("\n... unknown type {}", b.type);
          }
        } else if constexpr (std::is_same_v<T, TimeConvRecord>) {
          std::string s = fmt::format("\n... Time Shift      {}\n... Time Muliplier  {}\n... Time Zero       {}",
                                      b.time_shift, b.time_mult, b.time_zero);
          if (b.time_cycles) {
            s += fmt::format("\n... Time Cycles     {}\n... Time Mask       {:#x}\n... Cap Time Zero   {}"
                             "\n... Cap Time Short  {}",
                             *b.time_cycles, b.time_mask.value_or(0), b.cap_user_time_zero.value_or(0),
                             b.cap_user_time_short.value_or(0));
          }
          return s;
        } else if constexpr (std::is_same_v<T, HeaderFeatureRecord>) {
          if (b.feat_id == HEADER_LAST_FEATURE) return " end of features";
          return fmt::format(" {} ({} bytes)", FeatureName(static_cast<int>(std::min<uint64_t>(b.feat_id, 1 << 30))),
                             b.data.size());
        } else if constexpr (std::is_same_v<T, CompressedRecord>) {
          return fmt::format(" {} bytes (zstd, not decompressed)", b.compressed_size);
        } else {
          return "";  // FINISHED_ROUND, FINISHED_INIT: no body
        }
      },
      u);
}

// One record's line: "TIME OFFSET [SIZE]: NAME details" (then detail lines).
Result<void> DumpRecord(const RecordParser& parser, const DataRecord& r, std::FILE* out, DumpStats* stats) {
  ++stats->records;
  ++stats->by_type[r.header.type];
  std::string line;
  uint64_t time = 0;
  if (!perf_data::IsKnownRecordType(r.header.type)) {
    ++stats->unknown_records;
    line = fmt::format(" unknown record type, {} bytes skipped", r.bytes.size());
  } else {
    Result<ParsedRecord> p = parser.Parse(r);
    if (!p.ok()) return Result<void>::FailureFrom(p);
    if (const auto* k = std::get_if<perftest::Record>(&*p)) {
      if (const auto* s = std::get_if<SampleRecord>(&k->body)) {
        time = s->time.value_or(0);
      } else if (k->sample_id && k->sample_id->time) {
        time = *k->sample_id->time;
      } else if (const Attr* a = parser.AttrOf(r); a != nullptr && a->attr.sample_id_all) {
        // Records the harness keeps whole (OtherRecord: AUX, ITRACE_START,
        // LOST_SAMPLES, KSYMBOL, ...) carry the trailer too
        // (perf_event_header__init_id()): its last SampleIdSize() bytes.
        const SampleLayout layout = SampleLayout::FromAttr(a->attr);
        const size_t n = layout.SampleIdSize();
        if (n != 0 && r.bytes.size() >= sizeof(perf_event_header) + n) {
          Result<SampleId> id = ParseSampleId(layout, std::span<const std::byte>(r.bytes).last(n));
          if (id.ok() && id->time) time = *id->time;
        }
      }
      line = DescribeKernel(r, *k, parser.AttrOf(r));
    } else {
      line = DescribeUser(std::get<UserRecord>(*p));
    }
  }
  // Records decompressed from PERF_RECORD_COMPRESSED carry its offset, as in perf report -D.
  fmt::print(out, "{} {:#x} [{:#x}]: {}{}\n", time, r.offset, r.header.size, perf_data::RecordTypeName(r.header.type),
             line);
  return Result<void>::Ok();
}

}  // namespace

Result<DumpStats> DumpPerfData(const PerfData& d, std::FILE* out, const DumpOptions& options) {
  if (options.header) {
    Result<void> h = DumpHeader(d, out);
    if (!h.ok()) return Result<DumpStats>::FailureFrom(h);
  }
  DumpStats stats;
  stats.unknown_features = d.unknown_features;
  RecordParser parser(d);
  Decompressor z;
  uint64_t last_compressed = 0;
  for (const DataRecord& r : d.records) {
    Result<void> done = DumpRecord(parser, r, out, &stats);
    if (!done.ok()) return Result<DumpStats>::FailureFrom(done);
    if (r.header.type != PERF_RECORD_COMPRESSED) continue;
    last_compressed = r.offset;
    Result<std::vector<DataRecord>> inner = z.Feed(r);
    if (!inner.ok()) return Result<DumpStats>::FailureFrom(inner);
    for (const DataRecord& i : *inner) {
      done = DumpRecord(parser, i, out, &stats);
      if (!done.ok()) return Result<DumpStats>::FailureFrom(done);
    }
  }
  if (z.pending() != 0) {
    return Result<DumpStats>::Failure(
        EBADMSG, fmt::format("offset {:#x}: PERF_RECORD_COMPRESSED: the decompressed stream ends inside a record "
                             "({} bytes of it)", last_compressed, z.pending()));
  }
  if (options.stats) {
    fmt::print(out, "\nAggregated stats:\n");
    for (const auto& [type, n] : stats.by_type) {
      fmt::print(out, "{:>40} events: {:10}\n", perf_data::RecordTypeName(type), n);
    }
    if (stats.by_type.contains(PERF_RECORD_AUXTRACE)) {
      Result<AuxQueues> q = AuxQueuesOf(d);
      if (!q.ok()) return Result<DumpStats>::FailureFrom(q);
      for (const AuxQueue& queue : q->queues) {
        fmt::print(out, "AUX queue {}: cpu {} tid {}: {} buffers, {} bytes\n", queue.idx, queue.cpu, queue.tid,
                   queue.buffers.size(), queue.bytes());
      }
    }
    fmt::print(out, "stats: records: {}  unknown records: {}  unknown features: {}\n", stats.records,
               stats.unknown_records, stats.unknown_features);
  }
  return Result<DumpStats>::Ok(std::move(stats));
}

}  // namespace perftest::data
