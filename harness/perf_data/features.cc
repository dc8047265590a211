#include "harness/perf_data/features.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "harness/perf_data/internal/bytes.h"

namespace perftest::perf_data {
namespace {

using internal::ByteAppender;
using internal::ByteCursor;

constexpr size_t kNameAlign = 64;  // NAME_ALIGN, tools/perf/util/header.c

template <typename T>
Result<T> Malformed(std::string_view feature, const std::string& detail) {
  return Result<T>::Failure(EBADMSG, fmt::format("parse feature {}: {}", feature, detail));
}

bool GetString(ByteCursor& c, std::string* s, std::string_view field) {
  uint32_t len = 0;
  return c.Get(&len, field) && c.FixedString(len, s, field);
}

bool GetStringList(ByteCursor& c, std::vector<std::string>* list, std::string_view field) {
  uint32_t nr = 0;
  if (!c.Get(&nr, field)) return false;
  // Each string takes at least its u32 len.
  if (nr > c.remaining() / 4) return c.Fail(fmt::format("{}.nr={} exceeds the {} bytes left", field, nr, c.remaining()));
  list->resize(nr);
  for (std::string& s : *list) {
    if (!GetString(c, &s, field)) return false;
  }
  return true;
}

void PutString(ByteAppender& w, std::string_view s) {
  const size_t len = (s.size() + 1 + kNameAlign - 1) / kNameAlign * kNameAlign;
  w.Put(static_cast<uint32_t>(len));
  w.FixedString(s, len);
}

}  // namespace

Result<std::string> ParseStringFeature(std::span<const std::byte> section) {
  ByteCursor c(section);
  std::string s;
  if (!GetString(c, &s, "string")) return Malformed<std::string>("string", c.error());
  return Result<std::string>::Ok(std::move(s));
}

Result<std::vector<std::string>> ParseStringListFeature(std::span<const std::byte> section) {
  ByteCursor c(section);
  std::vector<std::string> list;
  if (!GetStringList(c, &list, "list")) return Malformed<std::vector<std::string>>("string list", c.error());
  return Result<std::vector<std::string>>::Ok(std::move(list));
}

Result<uint64_t> ParseU64Feature(std::span<const std::byte> section) {
  ByteCursor c(section);
  uint64_t v = 0;
  if (!c.Get(&v, "u64")) return Malformed<uint64_t>("u64", c.error());
  return Result<uint64_t>::Ok(v);
}

Result<NrCpus> ParseNrCpus(std::span<const std::byte> section) {
  ByteCursor c(section);
  NrCpus n;
  if (!c.Get(&n.online, "nr_cpus_online") || !c.Get(&n.available, "nr_cpus_available")) {
    return Malformed<NrCpus>("NRCPUS", c.error());
  }
  return Result<NrCpus>::Ok(n);
}

Result<std::vector<BuildIdRecord>> ParseBuildIds(std::span<const std::byte> section) {
  std::vector<BuildIdRecord> ids;
  size_t off = 0;
  while (off < section.size()) {
    perf_event_header h{};
    if (section.size() - off < sizeof h) {
      return Malformed<std::vector<BuildIdRecord>>("BUILD_ID", fmt::format("{} bytes at +{:#x}: no room for a header", section.size() - off, off));
    }
    std::memcpy(&h, section.data() + off, sizeof h);
    if (h.size < sizeof h || h.size > section.size() - off) {
      return Malformed<std::vector<BuildIdRecord>>("BUILD_ID", fmt::format("entry at +{:#x}: header.size={} with {} bytes left", off, h.size, section.size() - off));
    }
    Result<BuildIdRecord> b = ParseBuildId(h.misc, section.subspan(off + sizeof h, h.size - sizeof h));
    if (!b.ok()) return Malformed<std::vector<BuildIdRecord>>("BUILD_ID", fmt::format("entry at +{:#x}: {}", off, b.call()));
    ids.push_back(std::move(*b));
    off += h.size;
  }
  return Result<std::vector<BuildIdRecord>>::Ok(std::move(ids));
}

Result<std::vector<EventDesc>> ParseEventDesc(std::span<const std::byte> section) {
  ByteCursor c(section);
  uint32_t nr = 0, attr_size = 0;
  auto fail = [&] { return Malformed<std::vector<EventDesc>>("EVENT_DESC", c.error()); };
  if (!c.Get(&nr, "nr") || !c.Get(&attr_size, "attr_size")) return fail();
  if (attr_size < kPerfAttrSizeVer0) {
    return Malformed<std::vector<EventDesc>>("EVENT_DESC", fmt::format("attr_size={} below {}", attr_size, kPerfAttrSizeVer0));
  }
  if (nr > c.remaining() / attr_size) c.Fail(fmt::format("nr={} events exceed the {} bytes left", nr, c.remaining()));
  if (!c.error().empty()) return fail();
  std::vector<EventDesc> events(nr);
  for (EventDesc& e : events) {
    std::span<const std::byte> attr;
    uint32_t nr_ids = 0;
    if (!c.Span(attr_size, &attr, "attr") || !c.Get(&nr_ids, "nr_ids") || !GetString(c, &e.name, "name")) return fail();
    std::memcpy(&e.attr, attr.data(), std::min<size_t>(attr_size, sizeof e.attr));
    if (nr_ids > c.remaining() / 8) c.Fail(fmt::format("nr_ids={} exceeds the {} bytes left", nr_ids, c.remaining()));
    if (!c.error().empty()) return fail();
    e.ids.resize(nr_ids);
    for (uint64_t& id : e.ids) c.Get(&id, "ids");
  }
  return Result<std::vector<EventDesc>>::Ok(std::move(events));
}

Result<CpuTopology> ParseCpuTopology(std::span<const std::byte> section, uint32_t nr_cpus_available) {
  ByteCursor c(section);
  CpuTopology t;
  auto fail = [&] { return Malformed<CpuTopology>("CPU_TOPOLOGY", c.error()); };
  if (!GetStringList(c, &t.core_siblings, "core_siblings") || !GetStringList(c, &t.thread_siblings, "thread_siblings")) {
    return fail();
  }
  const size_t nr = nr_cpus_available != 0 ? nr_cpus_available : c.remaining() / 8;
  if (nr > c.remaining() / 8) {
    c.Fail(fmt::format("{} CPUs (NRCPUS) need {} bytes, {} left", nr, nr * 8, c.remaining()));
    return fail();
  }
  t.cpus.resize(nr);
  for (auto& cpu : t.cpus) c.Get(&cpu.core_id, "core_id"), c.Get(&cpu.socket_id, "socket_id");
  if (nr_cpus_available != 0 && !c.done()) {
    if (!GetStringList(c, &t.die_siblings, "die_siblings")) return fail();
    if (nr > c.remaining() / 4) {
      c.Fail(fmt::format("{} die ids need {} bytes, {} left", nr, nr * 4, c.remaining()));
      return fail();
    }
    for (auto& cpu : t.cpus) {
      uint32_t die = 0;
      c.Get(&die, "die_id");
      cpu.die_id = die;
    }
  }
  return Result<CpuTopology>::Ok(std::move(t));
}

Result<ClockData> ParseClockData(std::span<const std::byte> section) {
  ByteCursor c(section);
  ClockData d;
  if (!c.Get(&d.version, "version") || !c.Get(&d.clockid, "clockid") || !c.Get(&d.wall_clock_ns, "wall_clock_ns") ||
      !c.Get(&d.clockid_time_ns, "clockid_time_ns")) {
    return Malformed<ClockData>("CLOCK_DATA", c.error());
  }
  return Result<ClockData>::Ok(d);
}

Result<std::vector<AuxtraceIndexEntry>> ParseAuxtraceIndex(std::span<const std::byte> section) {
  ByteCursor c(section);
  uint64_t nr = 0;
  if (!c.Get(&nr, "nr")) return Malformed<std::vector<AuxtraceIndexEntry>>("AUXTRACE", c.error());
  if (nr > c.remaining() / 16) {
    return Malformed<std::vector<AuxtraceIndexEntry>>("AUXTRACE", fmt::format("nr={} entries exceed the {} bytes left", nr, c.remaining()));
  }
  std::vector<AuxtraceIndexEntry> entries(nr);
  for (auto& e : entries) c.Get(&e.file_offset, "file_offset"), c.Get(&e.sz, "sz");
  return Result<std::vector<AuxtraceIndexEntry>>::Ok(std::move(entries));
}

Result<SampleTime> ParseSampleTime(std::span<const std::byte> section) {
  ByteCursor c(section);
  SampleTime t;
  if (!c.Get(&t.first, "first") || !c.Get(&t.last, "last")) return Malformed<SampleTime>("SAMPLE_TIME", c.error());
  return Result<SampleTime>::Ok(t);
}

Result<std::vector<PmuMapping>> ParsePmuMappings(std::span<const std::byte> section) {
  ByteCursor c(section);
  uint32_t nr = 0;
  auto fail = [&] { return Malformed<std::vector<PmuMapping>>("PMU_MAPPINGS", c.error()); };
  if (!c.Get(&nr, "nr")) return fail();
  if (nr > c.remaining() / 8) c.Fail(fmt::format("nr={} exceeds the {} bytes left", nr, c.remaining()));
  if (!c.error().empty()) return fail();
  std::vector<PmuMapping> pmus(nr);
  for (auto& p : pmus) {
    if (!c.Get(&p.type, "type") || !GetString(c, &p.name, "name")) return fail();
  }
  return Result<std::vector<PmuMapping>>::Ok(std::move(pmus));
}

Result<std::vector<GroupDesc>> ParseGroupDesc(std::span<const std::byte> section) {
  ByteCursor c(section);
  uint32_t nr = 0;
  auto fail = [&] { return Malformed<std::vector<GroupDesc>>("GROUP_DESC", c.error()); };
  if (!c.Get(&nr, "nr")) return fail();
  if (nr > c.remaining() / 12) c.Fail(fmt::format("nr={} exceeds the {} bytes left", nr, c.remaining()));
  if (!c.error().empty()) return fail();
  std::vector<GroupDesc> groups(nr);
  for (auto& g : groups) {
    if (!GetString(c, &g.name, "name") || !c.Get(&g.leader_idx, "leader_idx") || !c.Get(&g.nr_members, "nr_members")) {
      return fail();
    }
  }
  return Result<std::vector<GroupDesc>>::Ok(std::move(groups));
}

std::vector<std::byte> EncodeStringFeature(std::string_view s) {
  std::vector<std::byte> out;
  ByteAppender w(&out);
  PutString(w, s);
  return out;
}

std::vector<std::byte> EncodeStringListFeature(std::span<const std::string> list) {
  std::vector<std::byte> out;
  ByteAppender w(&out);
  w.Put(static_cast<uint32_t>(list.size()));
  for (const std::string& s : list) PutString(w, s);
  return out;
}

std::vector<std::byte> EncodeU64Feature(uint64_t v) {
  std::vector<std::byte> out;
  ByteAppender(&out).Put(v);
  return out;
}

std::vector<std::byte> EncodeNrCpus(const NrCpus& n) {
  std::vector<std::byte> out;
  ByteAppender w(&out);
  w.Put(n.online);
  w.Put(n.available);
  return out;
}

std::vector<std::byte> EncodeEventDesc(std::span<const EventDesc> events) {
  std::vector<std::byte> out;
  ByteAppender w(&out);
  w.Put(static_cast<uint32_t>(events.size()));
  w.Put(static_cast<uint32_t>(sizeof(perf_event_attr)));
  for (const EventDesc& e : events) {
    perf_event_attr a = e.attr;
    a.size = sizeof a;
    w.Put(a);
    w.Put(static_cast<uint32_t>(e.ids.size()));
    PutString(w, e.name);
    for (uint64_t id : e.ids) w.Put(id);
  }
  return out;
}

std::vector<std::byte> EncodeAuxtraceIndex(std::span<const AuxtraceIndexEntry> entries) {
  std::vector<std::byte> out;
  ByteAppender w(&out);
  w.Put(uint64_t{entries.size()});
  for (const auto& e : entries) w.Put(e.file_offset), w.Put(e.sz);
  return out;
}

std::vector<std::byte> EncodeClockData(const ClockData& d) {
  std::vector<std::byte> out;
  ByteAppender w(&out);
  w.Put(d.version);
  w.Put(d.clockid);
  w.Put(d.wall_clock_ns);
  w.Put(d.clockid_time_ns);
  return out;
}

std::vector<std::byte> EncodeBuildIds(std::span<const BuildIdRecord> ids) {
  std::vector<std::byte> out;
  ByteAppender w(&out);
  for (const BuildIdRecord& b : ids) {
    const size_t name = (b.filename.size() + 1 + kNameAlign - 1) / kNameAlign * kNameAlign;
    perf_event_header h{PERF_RECORD_HEADER_BUILD_ID,
                        static_cast<uint16_t>(b.misc | PERF_RECORD_MISC_BUILD_ID_SIZE),
                        static_cast<uint16_t>(sizeof h + 4 + 24 + name)};
    w.Put(h);
    w.Put(b.pid);
    std::byte id[24] = {};
    const size_t n = std::min<size_t>(b.build_id.size(), 20);
    if (n != 0) std::memcpy(id, b.build_id.data(), n);
    id[20] = static_cast<std::byte>(n);
    w.Put(id);
    w.FixedString(b.filename, name);
  }
  return out;
}

}  // namespace perftest::perf_data
