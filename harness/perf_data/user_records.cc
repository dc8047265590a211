#include "harness/perf_data/user_records.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "harness/perf_data/internal/bytes.h"

namespace perftest::perf_data {
namespace {

using internal::ByteAppender;
using internal::ByteCursor;

constexpr uint16_t PERF_CPU_MAP__CPUS = 0, PERF_CPU_MAP__MASK = 1, PERF_CPU_MAP__RANGE_CPUS = 2;
constexpr uint64_t PERF_EVENT_UPDATE__UNIT = 0, PERF_EVENT_UPDATE__SCALE = 1, PERF_EVENT_UPDATE__NAME = 2,
                   PERF_EVENT_UPDATE__CPUS = 3;

template <typename T>
Result<T> Malformed(uint32_t type, const std::string& detail) {
  return Result<T>::Failure(EBADMSG, fmt::format("parse {}: {}", RecordTypeName(type), detail));
}

// Fails unless `nr` entries of `entry_size` bytes fit in what is left.
bool CountFits(ByteCursor& c, uint64_t nr, size_t entry_size, std::string_view field) {
  if (nr <= c.remaining() / entry_size) return true;
  return c.Fail(fmt::format("{}={} entries of {} bytes exceed the {} bytes left", field, nr, entry_size,
                            c.remaining()));
}

// The header of a record of `type` whose body is `body_size` bytes.
void PutHeader(ByteAppender& w, uint32_t type, uint16_t misc, size_t body_size) {
  perf_event_header h{type, misc, static_cast<uint16_t>(sizeof(perf_event_header) + body_size)};
  w.Put(h);
}

bool ParseCpuMapInto(ByteCursor& c, CpuMapData* m) {
  if (!c.Get(&m->type, "cpu_map.type")) return false;
  uint16_t nr = 0;
  switch (m->type) {
    case PERF_CPU_MAP__CPUS: {
      if (!c.Get(&nr, "cpus.nr") || !CountFits(c, nr, 2, "cpus.nr")) return false;
      for (uint16_t i = 0; i < nr; ++i) {
        uint16_t cpu = 0;
        c.Get(&cpu, "cpus.cpu");
        m->cpus.push_back(cpu == 0xffff ? -1 : cpu);
      }
      return true;
    }
    case PERF_CPU_MAP__MASK: {
      uint16_t long_size = 0;
      if (!c.Get(&nr, "mask.nr") || !c.Get(&long_size, "mask.long_size")) return false;
      if (long_size != 4 && long_size != 8) return c.Fail(fmt::format("mask.long_size={}, not 4 or 8", long_size));
      if (long_size == 8 && !c.Skip(4, "mask.__pad")) return false;
      if (!CountFits(c, nr, long_size, "mask.nr")) return false;
      for (uint32_t i = 0; i < nr; ++i) {
        uint64_t word = 0;
        if (long_size == 4) {
          uint32_t w32 = 0;
          c.Get(&w32, "mask.mask");
          word = w32;
        } else {
          c.Get(&word, "mask.mask");
        }
        for (uint32_t b = 0; b < long_size * 8u; ++b) {
          if ((word >> b) & 1) m->cpus.push_back(static_cast<int32_t>(i * long_size * 8 + b));
        }
      }
      return true;
    }
    case PERF_CPU_MAP__RANGE_CPUS: {
      uint16_t start = 0, end = 0;
      uint8_t any = 0, pad = 0;
      if (!c.Get(&any, "range.any_cpu") || !c.Get(&pad, "range.__pad") || !c.Get(&start, "range.start_cpu") ||
          !c.Get(&end, "range.end_cpu")) {
        return false;
      }
      if (end < start) return c.Fail(fmt::format("range.end_cpu={} below start_cpu={}", end, start));
      if (any) m->cpus.push_back(-1);
      for (uint32_t cpu = start; cpu <= end; ++cpu) m->cpus.push_back(static_cast<int32_t>(cpu));
      return true;
    }
    default:
      return c.Fail(fmt::format("cpu_map.type={} is none of CPUS (0), MASK (1), RANGE_CPUS (2)", m->type));
  }
}

bool ParseBuildIdInto(ByteCursor& c, uint16_t misc, BuildIdRecord* b) {
  b->misc = misc;
  std::span<const std::byte> id;
  if (!c.Get(&b->pid, "pid") || !c.Span(24, &id, "build_id")) return false;
  size_t size = 20;
  if (misc & PERF_RECORD_MISC_BUILD_ID_SIZE) size = std::min<size_t>(20, static_cast<uint8_t>(id[20]));
  b->build_id.assign(id.begin(), id.begin() + size);
  return c.FixedString(c.remaining(), &b->filename, "filename");
}

Result<UserRecord> ParseBody(uint32_t type, uint16_t misc, ByteCursor& c) {
  auto ok = [](auto&& v) { return Result<UserRecord>::Ok(UserRecord(std::move(v))); };
  auto fail = [&] { return Malformed<UserRecord>(type, c.error()); };
  switch (type) {
    case PERF_RECORD_HEADER_ATTR: {
      HeaderAttrRecord r;
      uint32_t size = 0;
      std::span<const std::byte> probe = c.Rest();
      if (probe.size() < 8) return Malformed<UserRecord>(type, "attr needs 8 bytes for type and size");
      std::memcpy(&size, probe.data() + 4, 4);
      if (size == 0) size = kPerfAttrSizeVer0;
      if (!c.Bytes(size, &r.attr_bytes, "attr")) return fail();
      std::memcpy(&r.attr, r.attr_bytes.data(), std::min<size_t>(size, sizeof r.attr));
      if (c.remaining() % 8 != 0) return Malformed<UserRecord>(type, fmt::format("{} bytes of ids: not whole u64s", c.remaining()));
      r.ids.resize(c.remaining() / 8);
      for (uint64_t& id : r.ids) c.Get(&id, "id");
      return ok(std::move(r));
    }
    case PERF_RECORD_HEADER_EVENT_TYPE: {
      EventTypeRecord r;
      if (!c.Get(&r.event_id, "event_id") || !c.FixedString(64, &r.name, "name")) return fail();
      return ok(std::move(r));
    }
    case PERF_RECORD_HEADER_TRACING_DATA: {
      TracingDataRecord r;
      if (!c.Get(&r.size, "size")) return fail();
      return ok(r);
    }
    case PERF_RECORD_HEADER_BUILD_ID: {
      BuildIdRecord r;
      if (!ParseBuildIdInto(c, misc, &r)) return fail();
      return ok(std::move(r));
    }
    case PERF_RECORD_FINISHED_ROUND: return ok(FinishedRoundRecord{});
    case PERF_RECORD_FINISHED_INIT: return ok(FinishedInitRecord{});
    case PERF_RECORD_ID_INDEX: {
      IdIndexRecord r;
      uint64_t nr = 0;
      if (!c.Get(&nr, "nr") || !CountFits(c, nr, sizeof(IdIndexRecord::Entry), "nr")) return fail();
      // Newer perf appends {machine_pid, vcpu} per entry after the entries (id_index_entry_2).
      r.entries.resize(nr);
      for (auto& e : r.entries) c.Get(&e, "entries");
      return ok(std::move(r));
    }
    case PERF_RECORD_AUXTRACE_INFO: {
      AuxtraceInfoRecord r;
      uint32_t reserved;
      if (!c.Get(&r.type, "type") || !c.Get(&reserved, "reserved__")) return fail();
      r.priv.resize(c.remaining() / 8);
      for (uint64_t& p : r.priv) c.Get(&p, "priv");
      return ok(std::move(r));
    }
    case PERF_RECORD_AUXTRACE: {
      AuxtraceRecord r;
      uint32_t reserved;
      if (!c.Get(&r.size, "size") || !c.Get(&r.offset, "offset") || !c.Get(&r.reference, "reference") ||
          !c.Get(&r.idx, "idx") || !c.Get(&r.tid, "tid") || !c.Get(&r.cpu, "cpu") || !c.Get(&reserved, "reserved__")) {
        return fail();
      }
      return ok(r);
    }
    case PERF_RECORD_AUXTRACE_ERROR: {
      AuxtraceErrorRecord r;
      if (!c.Get(&r.type, "type") || !c.Get(&r.code, "code") || !c.Get(&r.cpu, "cpu") || !c.Get(&r.pid, "pid") ||
          !c.Get(&r.tid, "tid") || !c.Get(&r.fmt, "fmt") || !c.Get(&r.ip, "ip") || !c.Get(&r.time, "time") ||
          !c.FixedString(64, &r.msg, "msg")) {
        return fail();
      }
      if (c.remaining() >= 8) {
        uint32_t v;
        c.Get(&v, "machine_pid");
        r.machine_pid = v;
        c.Get(&v, "vcpu");
        r.vcpu = v;
      }
      return ok(std::move(r));
    }
    case PERF_RECORD_THREAD_MAP: {
      ThreadMapRecord r;
      uint64_t nr = 0;
      if (!c.Get(&nr, "nr") || !CountFits(c, nr, 24, "nr")) return fail();
      r.entries.resize(nr);
      for (auto& e : r.entries) {
        c.Get(&e.pid, "pid");
        c.FixedString(16, &e.comm, "comm");
      }
      return ok(std::move(r));
    }
    case PERF_RECORD_CPU_MAP: {
      CpuMapRecord r;
      if (!ParseCpuMapInto(c, &r.data)) return fail();
      return ok(std::move(r));
    }
    case PERF_RECORD_STAT_CONFIG: {
      StatConfigRecord r;
      uint64_t nr = 0;
      if (!c.Get(&nr, "nr") || !CountFits(c, nr, 16, "nr")) return fail();
      r.terms.resize(nr);
      for (auto& t : r.terms) c.Get(&t.first, "tag"), c.Get(&t.second, "val");
      return ok(std::move(r));
    }
    case PERF_RECORD_STAT: {
      StatRecord r;
      if (!c.Get(&r.id, "id") || !c.Get(&r.cpu, "cpu") || !c.Get(&r.thread, "thread") || !c.Get(&r.val, "val") ||
          !c.Get(&r.ena, "ena") || !c.Get(&r.run, "run")) {
        return fail();
      }
      return ok(r);
    }
    case PERF_RECORD_STAT_ROUND: {
      StatRoundRecord r;
      if (!c.Get(&r.type, "type") || !c.Get(&r.time, "time")) return fail();
      return ok(r);
    }
    case PERF_RECORD_EVENT_UPDATE: {
      EventUpdateRecord r;
      if (!c.Get(&r.type, "type") || !c.Get(&r.id, "id")) return fail();
      bool parsed = true;
      switch (r.type) {
        case PERF_EVENT_UPDATE__UNIT:
        case PERF_EVENT_UPDATE__NAME: parsed = c.FixedString(c.remaining(), &r.text, "data"); break;
        case PERF_EVENT_UPDATE__SCALE: parsed = c.Get(&r.scale, "scale"); break;
        case PERF_EVENT_UPDATE__CPUS: parsed = ParseCpuMapInto(c, &r.cpus); break;
        default: break;  // a newer update type: its data is left alone
      }
      if (!parsed) return fail();
      return ok(std::move(r));
    }
    case PERF_RECORD_TIME_CONV: {
      TimeConvRecord r;
      if (!c.Get(&r.time_shift, "time_shift") || !c.Get(&r.time_mult, "time_mult") ||
          !c.Get(&r.time_zero, "time_zero")) {
        return fail();
      }
      if (c.remaining() >= 24) {  // perf 5.12+ (event_contains(time_cycles))
        uint64_t v = 0;
        uint8_t b = 0;
        c.Get(&v, "time_cycles"), r.time_cycles = v;
        c.Get(&v, "time_mask"), r.time_mask = v;
        c.Get(&b, "cap_user_time_zero"), r.cap_user_time_zero = b;
        c.Get(&b, "cap_user_time_short"), r.cap_user_time_short = b;
      }
      return ok(r);
    }
    case PERF_RECORD_HEADER_FEATURE: {
      HeaderFeatureRecord r;
      if (!c.Get(&r.feat_id, "feat_id")) return fail();
      c.Bytes(c.remaining(), &r.data, "data");
      return ok(std::move(r));
    }
    case PERF_RECORD_COMPRESSED: return ok(CompressedRecord{c.remaining()});
    default:
      return Result<UserRecord>::Failure(ENOENT, fmt::format("parse {}: not one of perf's record types",
                                                             RecordTypeName(type)));
  }
}

}  // namespace

Result<UserRecord> ParseUserRecord(std::span<const std::byte> record) {
  perf_event_header h{};
  if (record.size() < sizeof h) {
    return Result<UserRecord>::Failure(EBADMSG, fmt::format("parse record: {} bytes, no room for the header", record.size()));
  }
  std::memcpy(&h, record.data(), sizeof h);
  if (h.size != record.size()) {
    return Malformed<UserRecord>(h.type, fmt::format("header.size={} but the record is {} bytes", h.size, record.size()));
  }
  ByteCursor c(record.subspan(sizeof h));
  return ParseBody(h.type, h.misc, c);
}

Result<BuildIdRecord> ParseBuildId(uint16_t misc, std::span<const std::byte> body) {
  ByteCursor c(body);
  BuildIdRecord b;
  if (!ParseBuildIdInto(c, misc, &b)) return Malformed<BuildIdRecord>(PERF_RECORD_HEADER_BUILD_ID, c.error());
  return Result<BuildIdRecord>::Ok(std::move(b));
}

Result<CpuMapData> ParseCpuMapData(std::span<const std::byte> bytes) {
  ByteCursor c(bytes);
  CpuMapData m;
  if (!ParseCpuMapInto(c, &m)) return Malformed<CpuMapData>(PERF_RECORD_CPU_MAP, c.error());
  return Result<CpuMapData>::Ok(std::move(m));
}

Result<IntelPtInfo> ParseIntelPtInfo(const AuxtraceInfoRecord& info) {
  if (info.type != PERF_AUXTRACE_INTEL_PT) {
    return Result<IntelPtInfo>::Failure(EINVAL, fmt::format("Intel PT info: auxtrace type {}, not {} (intel_pt)",
                                                            info.type, PERF_AUXTRACE_INTEL_PT));
  }
  const auto& p = info.priv;
  if (p.size() < kIntelPtPrivFixed) {
    return Result<IntelPtInfo>::Failure(
        EBADMSG, fmt::format("Intel PT info: {} priv words, fewer than the {} fixed ones", p.size(), kIntelPtPrivFixed));
  }
  IntelPtInfo pt{p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11], p[12], p[13], p[14], p[15]};
  const uint64_t filter_len = p[16];
  size_t words = 0;
  if (filter_len != 0) {
    words = filter_len / 8 + 1;  // chars + NUL, to 8 bytes (intel_pt_filter_bytes())
    if (words > p.size() - kIntelPtPrivFixed) {
      return Result<IntelPtInfo>::Failure(
          EBADMSG, fmt::format("Intel PT info: filter_str_len={} exceeds the {} priv bytes after the fixed words",
                               filter_len, (p.size() - kIntelPtPrivFixed) * 8));
    }
    const char* s = reinterpret_cast<const char*>(&p[kIntelPtPrivFixed]);
    pt.filter.assign(s, strnlen(s, filter_len));
  }
  if (p.size() > kIntelPtPrivFixed + words) pt.event_trace = p[kIntelPtPrivFixed + words];
  return Result<IntelPtInfo>::Ok(std::move(pt));
}

AuxtraceInfoRecord EncodeIntelPtInfo(const IntelPtInfo& pt) {
  AuxtraceInfoRecord r;
  r.type = PERF_AUXTRACE_INTEL_PT;
  r.priv = {pt.pmu_type,      pt.time_shift,    pt.time_mult,       pt.time_zero,     pt.cap_user_time_zero,
            pt.tsc_bit,       pt.noretcomp_bit, pt.have_sched_switch, pt.snapshot_mode, pt.per_cpu_mmaps,
            pt.mtc_bit,       pt.mtc_freq_bits, pt.tsc_ctc_ratio_n, pt.tsc_ctc_ratio_d, pt.cyc_bit,
            pt.max_non_turbo_ratio, pt.filter.size()};
  if (!pt.filter.empty()) {
    std::vector<uint64_t> words(pt.filter.size() / 8 + 1, 0);
    std::memcpy(words.data(), pt.filter.data(), pt.filter.size());
    r.priv.insert(r.priv.end(), words.begin(), words.end());
  }
  if (pt.event_trace) r.priv.push_back(*pt.event_trace);
  return r;
}

void EncodeHeaderAttr(const perf_event_attr& attr, std::span<const uint64_t> ids, std::vector<std::byte>* out) {
  ByteAppender w(out);
  const size_t attr_size = attr.size != 0 ? attr.size : sizeof attr;
  PutHeader(w, PERF_RECORD_HEADER_ATTR, 0, attr_size + ids.size() * 8);
  perf_event_attr a = attr;
  a.size = static_cast<uint32_t>(attr_size);
  const auto* p = reinterpret_cast<const std::byte*>(&a);
  w.Bytes({p, std::min(attr_size, sizeof a)});
  if (attr_size > sizeof a) w.Zeros(attr_size - sizeof a);
  for (uint64_t id : ids) w.Put(id);
}

void EncodeHeaderFeature(uint64_t feat_id, std::span<const std::byte> data, std::vector<std::byte>* out) {
  ByteAppender w(out);
  PutHeader(w, PERF_RECORD_HEADER_FEATURE, 0, 8 + data.size());
  w.Put(feat_id);
  w.Bytes(data);
}

void EncodeFinishedRound(std::vector<std::byte>* out) {
  ByteAppender w(out);
  PutHeader(w, PERF_RECORD_FINISHED_ROUND, 0, 0);
}

void EncodeIdIndex(const IdIndexRecord& r, std::vector<std::byte>* out) {
  ByteAppender w(out);
  PutHeader(w, PERF_RECORD_ID_INDEX, 0, 8 + r.entries.size() * sizeof(IdIndexRecord::Entry));
  w.Put(uint64_t{r.entries.size()});
  for (const auto& e : r.entries) w.Put(e);
}

void EncodeAuxtraceInfo(const AuxtraceInfoRecord& r, std::vector<std::byte>* out) {
  ByteAppender w(out);
  PutHeader(w, PERF_RECORD_AUXTRACE_INFO, 0, 8 + r.priv.size() * 8);
  w.Put(r.type);
  w.Put(uint32_t{0});
  for (uint64_t p : r.priv) w.Put(p);
}

void EncodeAuxtrace(const AuxtraceRecord& a, std::vector<std::byte>* out) {
  ByteAppender w(out);
  PutHeader(w, PERF_RECORD_AUXTRACE, 0, 40);
  w.Put(a.size);
  w.Put(a.offset);
  w.Put(a.reference);
  w.Put(a.idx);
  w.Put(a.tid);
  w.Put(a.cpu);
  w.Put(uint32_t{0});
}

void EncodeTimeConv(const TimeConvRecord& r, std::vector<std::byte>* out) {
  ByteAppender w(out);
  const bool long_form = r.time_cycles.has_value();
  PutHeader(w, PERF_RECORD_TIME_CONV, 0, long_form ? 48 : 24);
  w.Put(r.time_shift);
  w.Put(r.time_mult);
  w.Put(r.time_zero);
  if (!long_form) return;
  w.Put(*r.time_cycles);
  w.Put(r.time_mask.value_or(0));
  w.Put(r.cap_user_time_zero.value_or(0));
  w.Put(r.cap_user_time_short.value_or(0));
  w.Zeros(6);
}

void EncodeThreadMap(const ThreadMapRecord& r, std::vector<std::byte>* out) {
  ByteAppender w(out);
  PutHeader(w, PERF_RECORD_THREAD_MAP, 0, 8 + r.entries.size() * 24);
  w.Put(uint64_t{r.entries.size()});
  for (const auto& e : r.entries) {
    w.Put(e.pid);
    w.FixedString(e.comm, 16);
  }
}

void EncodeCpuMap(std::span<const int32_t> cpus, std::vector<std::byte>* out) {
  ByteAppender w(out);
  const size_t body = (2 + 2 + 2 * cpus.size() + 7) & ~size_t{7};
  PutHeader(w, PERF_RECORD_CPU_MAP, 0, body);
  const size_t start = w.size();
  w.Put(PERF_CPU_MAP__CPUS);
  w.Put(static_cast<uint16_t>(cpus.size()));
  for (int32_t cpu : cpus) w.Put(static_cast<uint16_t>(cpu));
  w.Zeros(body - (w.size() - start));
}

}  // namespace perftest::perf_data
