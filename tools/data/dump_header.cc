#include "tools/data/dump_header.h"

#include <fmt/format.h>

#include <cerrno>

#include "harness/attr.h"
#include "harness/perf_data/features.h"

namespace perftest::data {
namespace {

using namespace perftest::perf_data;

std::string Hex(std::span<const std::byte> b) {
  std::string s;
  for (std::byte x : b) s += fmt::format("{:02x}", static_cast<unsigned>(x));
  return s;
}

std::string Join(const std::vector<std::string>& v, std::string_view sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? std::string(sep) : "") + v[i];
  return s;
}

template <typename T>
Result<void> Fail(int feature, const Result<T>& r) {
  return Result<void>::Failure(r.error(), fmt::format("feature {}: {}", FeatureName(feature), r.call()));
}

// One feature's lines; false when it is not one this dump decodes.
Result<bool> DumpFeature(const PerfData& d, int bit, std::span<const std::byte> s, std::FILE* out) {
  auto string_line = [&](const char* label) -> Result<bool> {
    Result<std::string> v = ParseStringFeature(s);
    if (!v.ok()) return Result<bool>::FailureFrom(Fail(bit, v));
    fmt::print(out, "# {} : {}\n", label, *v);
    return Result<bool>::Ok(true);
  };
  switch (bit) {
    case HEADER_HOSTNAME: return string_line("hostname");
    case HEADER_OSRELEASE: return string_line("os release");
    case HEADER_VERSION: return string_line("perf version");
    case HEADER_ARCH: return string_line("arch");
    case HEADER_CPUDESC: return string_line("cpudesc");
    case HEADER_CPUID: return string_line("cpuid");
    case HEADER_NRCPUS: {
      Result<NrCpus> n = ParseNrCpus(s);
      if (!n.ok()) return Result<bool>::FailureFrom(Fail(bit, n));
      fmt::print(out, "# nrcpus online : {}\n# nrcpus avail : {}\n", n->online, n->available);
      return Result<bool>::Ok(true);
    }
    case HEADER_TOTAL_MEM: {
      Result<uint64_t> m = ParseU64Feature(s);
      if (!m.ok()) return Result<bool>::FailureFrom(Fail(bit, m));
      fmt::print(out, "# total memory : {} kB\n", *m);
      return Result<bool>::Ok(true);
    }
    case HEADER_CLOCKID: {
      Result<uint64_t> m = ParseU64Feature(s);
      if (!m.ok()) return Result<bool>::FailureFrom(Fail(bit, m));
      fmt::print(out, "# clockid frequency: {} MHz\n", *m == 0 ? 0 : 1000 / *m);
      return Result<bool>::Ok(true);
    }
    case HEADER_CMDLINE: {
      Result<std::vector<std::string>> v = ParseStringListFeature(s);
      if (!v.ok()) return Result<bool>::FailureFrom(Fail(bit, v));
      fmt::print(out, "# cmdline : {}\n", Join(*v, " "));
      return Result<bool>::Ok(true);
    }
    case HEADER_EVENT_DESC: {
      Result<std::vector<EventDesc>> v = ParseEventDesc(s);
      if (!v.ok()) return Result<bool>::FailureFrom(Fail(bit, v));
      for (const EventDesc& e : *v) {
        std::vector<std::string> ids;
        for (uint64_t id : e.ids) ids.push_back(std::to_string(id));
        fmt::print(out, "# event : name = {}, id = {{ {} }}, {}\n", e.name, Join(ids, ", "), DescribeAttr(e.attr));
      }
      return Result<bool>::Ok(true);
    }
    case HEADER_CPU_TOPOLOGY: {
      uint32_t nr = 0;
      if (d.features.contains(HEADER_NRCPUS)) {
        Result<NrCpus> n = ParseNrCpus(d.features.at(HEADER_NRCPUS));
        if (n.ok()) nr = n->available;
      }
      Result<CpuTopology> t = ParseCpuTopology(s, nr);
      if (!t.ok()) return Result<bool>::FailureFrom(Fail(bit, t));
      for (const auto& c : t->core_siblings) fmt::print(out, "# sibling sockets : {}\n", c);
      for (const auto& c : t->die_siblings) fmt::print(out, "# sibling dies    : {}\n", c);
      for (const auto& c : t->thread_siblings) fmt::print(out, "# sibling threads : {}\n", c);
      for (size_t i = 0; i < t->cpus.size(); ++i) {
        const auto& c = t->cpus[i];
        if (c.die_id) {
          fmt::print(out, "# CPU {}: Core ID {}, Die ID {}, Socket ID {}\n", i, c.core_id, *c.die_id, c.socket_id);
        } else {
          fmt::print(out, "# CPU {}: Core ID {}, Socket ID {}\n", i, c.core_id, c.socket_id);
        }
      }
      return Result<bool>::Ok(true);
    }
    case HEADER_BUILD_ID: {
      Result<std::vector<BuildIdRecord>> v = ParseBuildIds(s);
      if (!v.ok()) return Result<bool>::FailureFrom(Fail(bit, v));
      for (const BuildIdRecord& b : *v) fmt::print(out, "# build id : {} {}\n", Hex(b.build_id), b.filename);
      return Result<bool>::Ok(true);
    }
    case HEADER_PMU_MAPPINGS: {
      Result<std::vector<PmuMapping>> v = ParsePmuMappings(s);
      if (!v.ok()) return Result<bool>::FailureFrom(Fail(bit, v));
      std::vector<std::string> items;
      for (const PmuMapping& p : *v) items.push_back(fmt::format("{} = {}", p.name, p.type));
      fmt::print(out, "# pmu mappings: {}\n", Join(items, ", "));
      return Result<bool>::Ok(true);
    }
    case HEADER_GROUP_DESC: {
      Result<std::vector<GroupDesc>> v = ParseGroupDesc(s);
      if (!v.ok()) return Result<bool>::FailureFrom(Fail(bit, v));
      for (const GroupDesc& g : *v) {
        fmt::print(out, "# group: {} leader_idx: {} nr_members: {}\n", g.name, g.leader_idx, g.nr_members);
      }
      return Result<bool>::Ok(true);
    }
    case HEADER_AUXTRACE: {
      Result<std::vector<AuxtraceIndexEntry>> v = ParseAuxtraceIndex(s);
      if (!v.ok()) return Result<bool>::FailureFrom(Fail(bit, v));
      fmt::print(out, "# auxtrace index : {} entries\n", v->size());
      for (const auto& e : *v) fmt::print(out, "#   offset {:#x} size {:#x}\n", e.file_offset, e.sz);
      return Result<bool>::Ok(true);
    }
    case HEADER_SAMPLE_TIME: {
      Result<SampleTime> t = ParseSampleTime(s);
      if (!t.ok()) return Result<bool>::FailureFrom(Fail(bit, t));
      fmt::print(out, "# time of first sample : {}.{:06}\n# time of last sample : {}.{:06}\n", t->first / 1000000000,
                 t->first % 1000000000 / 1000, t->last / 1000000000, t->last % 1000000000 / 1000);
      return Result<bool>::Ok(true);
    }
    case HEADER_CLOCK_DATA: {
      Result<ClockData> c = ParseClockData(s);
      if (!c.ok()) return Result<bool>::FailureFrom(Fail(bit, c));
      fmt::print(out, "# clockid: {}\n# reference time: wall clock {} ns, clockid {} ns\n", c->clockid, c->wall_clock_ns,
                 c->clockid_time_ns);
      return Result<bool>::Ok(true);
    }
    default: return Result<bool>::Ok(false);
  }
}

}  // namespace

Result<void> DumpHeader(const PerfData& d, std::FILE* out) {
  fmt::print(out, "# ========\n# {} mode, {} attrs\n", d.header.pipe ? "pipe" : "file", d.attrs.size());
  if (!d.header.pipe) {
    fmt::print(out, "# data offset : {}\n# data size : {}\n# feat offset : {}\n", d.header.data.offset,
               d.header.data.size, d.header.data.offset + d.header.data.size);
  }
  for (size_t i = 0; i < d.attrs.size(); ++i) {
    std::vector<std::string> ids;
    for (uint64_t id : d.attrs[i].ids) ids.push_back(std::to_string(id));
    fmt::print(out, "# attr {}: id = {{ {} }}, {}\n", i, Join(ids, ", "), DescribeAttr(d.attrs[i].attr));
  }
  for (const auto& [bit, bytes] : d.features) {
    Result<bool> done = DumpFeature(d, bit, bytes, out);
    if (!done.ok()) return Result<void>::FailureFrom(done);
    if (*done) continue;
    if (bit < HEADER_LAST_FEATURE && bit != HEADER_RESERVED) {
      fmt::print(out, "# {} : {} bytes (not decoded)\n", FeatureName(bit), bytes.size());
    } else {
      fmt::print(out, "# unknown feature bit {} : {} bytes (skipped)\n", bit, bytes.size());
    }
  }
  fmt::print(out, "# ========\n");
  return Result<void>::Ok();
}

}  // namespace perftest::data
