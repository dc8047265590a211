#include "harness/records.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <string_view>

#include "harness/attr.h"

namespace perftest {
namespace {

// Reads u32/u64 fields from a byte span, remembering the first failure.
class Cursor {
 public:
  explicit Cursor(std::span<const std::byte> bytes) : bytes_(bytes) {}

  template <typename T>
  bool Get(T* out, std::string_view field) {
    if (!Need(sizeof(T), field)) return false;
    std::memcpy(out, bytes_.data() + off_, sizeof(T));
    off_ += sizeof(T);
    return true;
  }
  template <typename T>
  bool Get(std::optional<T>* out, std::string_view field) {
    T v;
    if (!Get(&v, field)) return false;
    *out = v;
    return true;
  }
  bool Bytes(size_t n, std::vector<std::byte>* out, std::string_view field) {
    if (!Need(n, field)) return false;
    out->assign(bytes_.begin() + off_, bytes_.begin() + off_ + n);
    off_ += n;
    return true;
  }
  bool Skip(size_t n, std::string_view field) {
    if (!Need(n, field)) return false;
    off_ += n;
    return true;
  }
  std::span<const std::byte> Rest() const { return bytes_.subspan(off_); }
  size_t offset() const { return off_; }
  size_t remaining() const { return bytes_.size() - off_; }
  const std::string& error() const { return error_; }

 private:
  bool Need(size_t n, std::string_view field) {
    if (n <= remaining()) return true;
    if (error_.empty()) {
      error_ = fmt::format("field {} needs {} bytes at offset {}, {} left", field, n, off_, remaining());
    }
    return false;
  }

  std::span<const std::byte> bytes_;
  size_t off_ = 0;
  std::string error_;
};

class Writer {
 public:
  explicit Writer(std::vector<std::byte>* out) : out_(out) {}
  template <typename T>
  void Put(T v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    out_->insert(out_->end(), p, p + sizeof v);
  }
  template <typename T>
  void Put(const std::optional<T>& v) { Put(v.value_or(T{})); }
  void Bytes(std::span<const std::byte> b) { out_->insert(out_->end(), b.begin(), b.end()); }
  // A NUL-terminated string padded with zeros to a multiple of 8 bytes
  // (kernel: ALIGN(strlen(s) + 1, sizeof(u64))).
  void PaddedString(std::string_view s) {
    const size_t n = (s.size() + 1 + 7) & ~size_t{7};
    const size_t start = out_->size();
    out_->resize(start + n, std::byte{0});
    std::memcpy(out_->data() + start, s.data(), s.size());
  }
  void PadTo8() { out_->resize((out_->size() + 7) & ~size_t{7}, std::byte{0}); }
  size_t size() const { return out_->size(); }

 private:
  std::vector<std::byte>* out_;
};

std::string CString(std::span<const std::byte> bytes) {
  const char* p = reinterpret_cast<const char*>(bytes.data());
  return std::string(p, strnlen(p, bytes.size()));
}

template <typename T>
Result<T> Malformed(std::string_view what, const std::string& detail) {
  return Result<T>::Failure(EBADMSG, fmt::format("parse {}: {}", what, detail));
}

bool ParseRegs(Cursor& c, uint64_t mask, SampleRecord::Regs* regs, std::string_view field) {
  if (!c.Get(&regs->abi, field)) return false;
  if (regs->abi == PERF_SAMPLE_REGS_ABI_NONE) return true;
  regs->regs.resize(std::popcount(mask));
  for (uint64_t& r : regs->regs) {
    if (!c.Get(&r, field)) return false;
  }
  return true;
}

void PutRegs(Writer& w, const SampleRecord::Regs& regs, uint64_t mask) {
  w.Put(regs.abi);
  if (regs.abi == PERF_SAMPLE_REGS_ABI_NONE) return;
  for (int i = 0; i < std::popcount(mask); ++i) {
    w.Put(static_cast<size_t>(i) < regs.regs.size() ? regs.regs[i] : 0);
  }
}

}  // namespace

SampleLayout SampleLayout::FromAttr(const perf_event_attr& attr) {
  SampleLayout l;
  l.sample_type = attr.sample_type;
  l.read_format = attr.read_format;
  l.branch_sample_type = attr.branch_sample_type;
  l.sample_regs_user = attr.sample_regs_user;
  l.sample_regs_intr = attr.sample_regs_intr;
  l.sample_id_all = attr.sample_id_all;
  return l;
}

size_t SampleLayout::SampleIdSize() const {
  if (!sample_id_all) return 0;
  size_t n = 0;
  if (sample_type & PERF_SAMPLE_TID) n += 8;
  if (sample_type & PERF_SAMPLE_TIME) n += 8;
  if (sample_type & PERF_SAMPLE_ID) n += 8;
  if (sample_type & PERF_SAMPLE_STREAM_ID) n += 8;
  if (sample_type & PERF_SAMPLE_CPU) n += 8;
  if (sample_type & PERF_SAMPLE_IDENTIFIER) n += 8;
  return n;
}

Result<SampleId> ParseSampleId(const SampleLayout& layout, std::span<const std::byte> trailer) {
  Cursor c(trailer);
  SampleId id;
  const uint64_t st = layout.sample_type;
  bool ok = true;
  if (ok && (st & PERF_SAMPLE_TID)) ok = c.Get(&id.pid, "sample_id.pid") && c.Get(&id.tid, "sample_id.tid");
  if (ok && (st & PERF_SAMPLE_TIME)) ok = c.Get(&id.time, "sample_id.time");
  if (ok && (st & PERF_SAMPLE_ID)) ok = c.Get(&id.id, "sample_id.id");
  if (ok && (st & PERF_SAMPLE_STREAM_ID)) ok = c.Get(&id.stream_id, "sample_id.stream_id");
  if (ok && (st & PERF_SAMPLE_CPU)) ok = c.Get(&id.cpu, "sample_id.cpu") && c.Get(&id.res, "sample_id.res");
  if (ok && (st & PERF_SAMPLE_IDENTIFIER)) ok = c.Get(&id.identifier, "sample_id.identifier");
  if (!ok) return Malformed<SampleId>("sample_id", c.error());
  return Result<SampleId>::Ok(std::move(id));
}

Result<SampleRecord> ParseSample(const SampleLayout& layout, std::span<const std::byte> body) {
  Cursor c(body);
  SampleRecord s;
  const uint64_t st = layout.sample_type;
  auto fail = [&] { return Malformed<SampleRecord>("PERF_RECORD_SAMPLE", c.error()); };

  if ((st & PERF_SAMPLE_IDENTIFIER) && !c.Get(&s.identifier, "identifier")) return fail();
  if ((st & PERF_SAMPLE_IP) && !c.Get(&s.ip, "ip")) return fail();
  if ((st & PERF_SAMPLE_TID) && !(c.Get(&s.pid, "pid") && c.Get(&s.tid, "tid"))) return fail();
  if ((st & PERF_SAMPLE_TIME) && !c.Get(&s.time, "time")) return fail();
  if ((st & PERF_SAMPLE_ADDR) && !c.Get(&s.addr, "addr")) return fail();
  if ((st & PERF_SAMPLE_ID) && !c.Get(&s.id, "id")) return fail();
  if ((st & PERF_SAMPLE_STREAM_ID) && !c.Get(&s.stream_id, "stream_id")) return fail();
  if ((st & PERF_SAMPLE_CPU) && !(c.Get(&s.cpu, "cpu") && c.Get(&s.res, "res"))) return fail();
  if ((st & PERF_SAMPLE_PERIOD) && !c.Get(&s.period, "period")) return fail();
  if (st & PERF_SAMPLE_READ) {
    Result<ReadValues> rv = DecodeReadFormat(layout.read_format, c.Rest());
    if (!rv.ok()) return Malformed<SampleRecord>("PERF_RECORD_SAMPLE", fmt::format("read: {}", rv.ToString()));
    // The size decoded is the size of the layout for the counters found.
    const size_t n = ReadFormatSize(layout.read_format, rv->counters.size());
    c.Skip(n, "read");
    s.read = std::move(*rv);
  }
  if (st & PERF_SAMPLE_CALLCHAIN) {
    uint64_t nr;
    if (!c.Get(&nr, "callchain.nr")) return fail();
    if (nr > c.remaining() / 8) {
      return Malformed<SampleRecord>("PERF_RECORD_SAMPLE",
                                     fmt::format("callchain.nr={} exceeds the {} bytes left", nr, c.remaining()));
    }
    s.callchain.emplace(nr);
    for (uint64_t& ip : *s.callchain) c.Get(&ip, "callchain.ips");
  }
  if (st & PERF_SAMPLE_RAW) {
    uint32_t size;
    std::vector<std::byte> data;
    if (!c.Get(&size, "raw.size") || !c.Bytes(size, &data, "raw.data")) return fail();
    s.raw = std::move(data);
  }
  if (st & PERF_SAMPLE_BRANCH_STACK) {
    SampleRecord::BranchStack bs;
    uint64_t nr;
    if (!c.Get(&nr, "branch_stack.nr")) return fail();
    if ((layout.branch_sample_type & PERF_SAMPLE_BRANCH_HW_INDEX) && !c.Get(&bs.hw_idx, "branch_stack.hw_idx")) {
      return fail();
    }
    if (nr > c.remaining() / sizeof(perf_branch_entry)) {
      return Malformed<SampleRecord>("PERF_RECORD_SAMPLE", fmt::format("branch_stack.nr={} too large", nr));
    }
    bs.entries.resize(nr);
    for (BranchEntry& e : bs.entries) {
      c.Get(&e.from, "branch.from");
      c.Get(&e.to, "branch.to");
      c.Get(&e.flags, "branch.flags");
    }
    s.branch_stack = std::move(bs);
  }
  if (st & PERF_SAMPLE_REGS_USER) {
    SampleRecord::Regs regs;
    if (!ParseRegs(c, layout.sample_regs_user, &regs, "regs_user")) return fail();
    s.regs_user = std::move(regs);
  }
  if (st & PERF_SAMPLE_STACK_USER) {
    SampleRecord::StackUser su;
    uint64_t size;
    if (!c.Get(&size, "stack_user.size")) return fail();
    if (size > c.remaining()) return Malformed<SampleRecord>("PERF_RECORD_SAMPLE", "stack_user.size too large");
    c.Bytes(size, &su.data, "stack_user.data");
    if (size != 0 && !c.Get(&su.dyn_size, "stack_user.dyn_size")) return fail();
    s.stack_user = std::move(su);
  }
  if ((st & PERF_SAMPLE_WEIGHT_TYPE) && !c.Get(&s.weight, "weight")) return fail();
  if ((st & PERF_SAMPLE_DATA_SRC) && !c.Get(&s.data_src, "data_src")) return fail();
  if ((st & PERF_SAMPLE_TRANSACTION) && !c.Get(&s.transaction, "transaction")) return fail();
  if (st & PERF_SAMPLE_REGS_INTR) {
    SampleRecord::Regs regs;
    if (!ParseRegs(c, layout.sample_regs_intr, &regs, "regs_intr")) return fail();
    s.regs_intr = std::move(regs);
  }
  if ((st & PERF_SAMPLE_PHYS_ADDR) && !c.Get(&s.phys_addr, "phys_addr")) return fail();
  if ((st & PERF_SAMPLE_CGROUP) && !c.Get(&s.cgroup, "cgroup")) return fail();
  if ((st & PERF_SAMPLE_DATA_PAGE_SIZE) && !c.Get(&s.data_page_size, "data_page_size")) return fail();
  if ((st & PERF_SAMPLE_CODE_PAGE_SIZE) && !c.Get(&s.code_page_size, "code_page_size")) return fail();
  if (st & PERF_SAMPLE_AUX) {
    uint64_t size;
    std::vector<std::byte> data;
    if (!c.Get(&size, "aux.size")) return fail();
    if (!c.Bytes(size, &data, "aux.data")) return fail();
    s.aux = std::move(data);
  }
  if (!c.error().empty()) return fail();
  if (c.remaining() != 0) {
    // The kernel writes exactly the fields sample_type asks for: extra bytes
    // mean the layout (sample_type, read_format, register masks) is not the
    // one the record was written with.
    return Malformed<SampleRecord>("PERF_RECORD_SAMPLE",
                                   fmt::format("{} bytes left after the last field at offset {}", c.remaining(), c.offset()));
  }
  return Result<SampleRecord>::Ok(std::move(s));
}

Result<Record> ParseRecord(const SampleLayout& layout, std::span<const std::byte> bytes) {
  Record r;
  if (bytes.size() < sizeof(perf_event_header)) {
    return Malformed<Record>("record", fmt::format("{} bytes is shorter than a header", bytes.size()));
  }
  std::memcpy(&r.header, bytes.data(), sizeof r.header);
  const std::string name = RecordTypeName(r.header.type);
  if (r.header.size != bytes.size()) {
    return Malformed<Record>(name, fmt::format("header.size={} but the record has {} bytes", r.header.size, bytes.size()));
  }
  if (r.header.size % 8 != 0) {
    return Malformed<Record>(name, fmt::format("header.size={} is not a multiple of 8", r.header.size));
  }
  std::span<const std::byte> body = bytes.subspan(sizeof r.header);

  if (r.header.type == PERF_RECORD_SAMPLE) {
    Result<SampleRecord> s = ParseSample(layout, body);
    if (!s.ok()) return Result<Record>::FailureFrom(s);
    r.body = std::move(*s);
    return Result<Record>::Ok(std::move(r));
  }
  const bool parsed_here = r.header.type == PERF_RECORD_SWITCH || r.header.type == PERF_RECORD_SWITCH_CPU_WIDE ||
                           r.header.type == PERF_RECORD_NAMESPACES;
  if (!IsKnownRecordType(r.header.type) || r.header.type == PERF_RECORD_READ ||
      (r.header.type > PERF_RECORD_MMAP2 && !parsed_here)) {
    r.body = OtherRecord{{body.begin(), body.end()}};
    return Result<Record>::Ok(std::move(r));
  }

  // Split off the sample_id_all trailer.
  const size_t id_size = layout.SampleIdSize();
  if (id_size > body.size()) {
    return Malformed<Record>(name, fmt::format("{} bytes cannot hold the {}-byte sample_id trailer", body.size(), id_size));
  }
  if (id_size != 0) {
    Result<SampleId> id = ParseSampleId(layout, body.subspan(body.size() - id_size));
    if (!id.ok()) return Result<Record>::FailureFrom(id);
    r.sample_id = std::move(*id);
  }
  Cursor c(body.first(body.size() - id_size));
  bool ok = true;
  switch (r.header.type) {
    case PERF_RECORD_MMAP: {
      MmapRecord m;
      ok = c.Get(&m.pid, "pid") && c.Get(&m.tid, "tid") && c.Get(&m.addr, "addr") && c.Get(&m.len, "len") &&
           c.Get(&m.pgoff, "pgoff");
      m.filename = CString(c.Rest());
      r.body = std::move(m);
      break;
    }
    case PERF_RECORD_MMAP2: {
      Mmap2Record m;
      ok = c.Get(&m.pid, "pid") && c.Get(&m.tid, "tid") && c.Get(&m.addr, "addr") && c.Get(&m.len, "len") &&
           c.Get(&m.pgoff, "pgoff");
      if (ok && (r.header.misc & PERF_RECORD_MISC_MMAP_BUILD_ID)) {
        uint8_t build_id_size = 0;
        std::vector<std::byte> id_bytes;
        ok = c.Get(&build_id_size, "build_id_size") && c.Skip(3, "reserved") && c.Bytes(20, &id_bytes, "build_id");
        if (ok) m.build_id.assign(id_bytes.begin(), id_bytes.begin() + std::min<size_t>(build_id_size, 20));
      } else if (ok) {
        ok = c.Get(&m.maj, "maj") && c.Get(&m.min, "min") && c.Get(&m.ino, "ino") &&
             c.Get(&m.ino_generation, "ino_generation");
      }
      ok = ok && c.Get(&m.prot, "prot") && c.Get(&m.flags, "flags");
      m.filename = CString(c.Rest());
      r.body = std::move(m);
      break;
    }
    case PERF_RECORD_COMM: {
      CommRecord m;
      ok = c.Get(&m.pid, "pid") && c.Get(&m.tid, "tid");
      m.comm = CString(c.Rest());
      r.body = std::move(m);
      break;
    }
    case PERF_RECORD_FORK:
    case PERF_RECORD_EXIT: {
      TaskRecord t;
      ok = c.Get(&t.pid, "pid") && c.Get(&t.ppid, "ppid") && c.Get(&t.tid, "tid") && c.Get(&t.ptid, "ptid") &&
           c.Get(&t.time, "time");
      r.body = t;
      break;
    }
    case PERF_RECORD_THROTTLE:
    case PERF_RECORD_UNTHROTTLE: {
      ThrottleRecord t;
      ok = c.Get(&t.time, "time") && c.Get(&t.id, "id") && c.Get(&t.stream_id, "stream_id");
      r.body = t;
      break;
    }
    case PERF_RECORD_LOST: {
      LostRecord l;
      ok = c.Get(&l.id, "id") && c.Get(&l.lost, "lost");
      r.body = l;
      break;
    }
    case PERF_RECORD_SWITCH:
    case PERF_RECORD_SWITCH_CPU_WIDE: {
      SwitchRecord sw;
      if (r.header.type == PERF_RECORD_SWITCH_CPU_WIDE) {
        ok = c.Get(&sw.next_prev_pid, "next_prev_pid") && c.Get(&sw.next_prev_tid, "next_prev_tid");
      }
      r.body = sw;
      break;
    }
    case PERF_RECORD_NAMESPACES: {
      NamespacesRecord n;
      uint64_t nr = 0;
      ok = c.Get(&n.pid, "pid") && c.Get(&n.tid, "tid") && c.Get(&nr, "nr_namespaces");
      if (ok && nr > c.remaining() / 16) {
        return Malformed<Record>(name, fmt::format("nr_namespaces={} exceeds the {} bytes left", nr, c.remaining()));
      }
      n.namespaces.resize(ok ? nr : 0);
      for (NamespacesRecord::Namespace& ns : n.namespaces) ok = ok && c.Get(&ns.dev, "dev") && c.Get(&ns.ino, "ino");
      r.body = std::move(n);
      break;
    }
  }
  if (!ok) return Malformed<Record>(name, c.error());
  // Fixed-layout bodies must use every byte before the trailer (strings are padded).
  const bool fixed = r.header.type != PERF_RECORD_MMAP && r.header.type != PERF_RECORD_MMAP2 &&
                     r.header.type != PERF_RECORD_COMM;
  if (fixed && c.remaining() != 0) {
    return Malformed<Record>(name, fmt::format("{} bytes left after the last field at offset {}", c.remaining(), c.offset()));
  }
  return Result<Record>::Ok(std::move(r));
}

void EncodeSampleId(const SampleLayout& layout, const SampleId& id, std::vector<std::byte>* out) {
  if (!layout.sample_id_all) return;
  Writer w(out);
  const uint64_t st = layout.sample_type;
  if (st & PERF_SAMPLE_TID) { w.Put(id.pid); w.Put(id.tid); }
  if (st & PERF_SAMPLE_TIME) w.Put(id.time);
  if (st & PERF_SAMPLE_ID) w.Put(id.id);
  if (st & PERF_SAMPLE_STREAM_ID) w.Put(id.stream_id);
  if (st & PERF_SAMPLE_CPU) { w.Put(id.cpu); w.Put(id.res); }
  if (st & PERF_SAMPLE_IDENTIFIER) w.Put(id.identifier);
}

namespace {

// Appends a header with size 0 and returns its offset; FinishHeader fills the size.
size_t BeginHeader(uint32_t type, uint16_t misc, std::vector<std::byte>* out) {
  const size_t at = out->size();
  perf_event_header h{type, misc, 0};
  const auto* p = reinterpret_cast<const std::byte*>(&h);
  out->insert(out->end(), p, p + sizeof h);
  return at;
}

void FinishHeader(size_t at, std::vector<std::byte>* out) {
  out->resize(at + ((out->size() - at + 7) & ~size_t{7}), std::byte{0});
  const uint16_t size = static_cast<uint16_t>(out->size() - at);
  std::memcpy(out->data() + at + offsetof(perf_event_header, size), &size, sizeof size);
}

}  // namespace

void EncodeSample(const SampleLayout& layout, uint16_t misc, const SampleRecord& s, std::vector<std::byte>* out) {
  const size_t at = BeginHeader(PERF_RECORD_SAMPLE, misc, out);
  Writer w(out);
  const uint64_t st = layout.sample_type;
  if (st & PERF_SAMPLE_IDENTIFIER) w.Put(s.identifier);
  if (st & PERF_SAMPLE_IP) w.Put(s.ip);
  if (st & PERF_SAMPLE_TID) { w.Put(s.pid); w.Put(s.tid); }
  if (st & PERF_SAMPLE_TIME) w.Put(s.time);
  if (st & PERF_SAMPLE_ADDR) w.Put(s.addr);
  if (st & PERF_SAMPLE_ID) w.Put(s.id);
  if (st & PERF_SAMPLE_STREAM_ID) w.Put(s.stream_id);
  if (st & PERF_SAMPLE_CPU) { w.Put(s.cpu); w.Put(s.res); }
  if (st & PERF_SAMPLE_PERIOD) w.Put(s.period);
  if (st & PERF_SAMPLE_READ) EncodeReadFormat(layout.read_format, s.read.value_or(ReadValues{}), out);
  if (st & PERF_SAMPLE_CALLCHAIN) {
    const std::vector<uint64_t> empty;
    const auto& ips = s.callchain ? *s.callchain : empty;
    w.Put(static_cast<uint64_t>(ips.size()));
    for (uint64_t ip : ips) w.Put(ip);
  }
  if (st & PERF_SAMPLE_RAW) {
    // The kernel pads the data so that u32 size + data ends on 8 bytes and
    // counts the padding in size (perf_prepare_sample()).
    std::vector<std::byte> data = s.raw.value_or(std::vector<std::byte>{});
    data.resize(((data.size() + 4 + 7) & ~size_t{7}) - 4, std::byte{0});
    w.Put(static_cast<uint32_t>(data.size()));
    w.Bytes(data);
  }
  if (st & PERF_SAMPLE_BRANCH_STACK) {
    const SampleRecord::BranchStack bs = s.branch_stack.value_or(SampleRecord::BranchStack{});
    w.Put(static_cast<uint64_t>(bs.entries.size()));
    if (layout.branch_sample_type & PERF_SAMPLE_BRANCH_HW_INDEX) w.Put(bs.hw_idx);
    for (const BranchEntry& e : bs.entries) { w.Put(e.from); w.Put(e.to); w.Put(e.flags); }
  }
  if (st & PERF_SAMPLE_REGS_USER) PutRegs(w, s.regs_user.value_or(SampleRecord::Regs{}), layout.sample_regs_user);
  if (st & PERF_SAMPLE_STACK_USER) {
    const SampleRecord::StackUser su = s.stack_user.value_or(SampleRecord::StackUser{});
    w.Put(static_cast<uint64_t>(su.data.size()));
    w.Bytes(su.data);
    if (!su.data.empty()) w.Put(su.dyn_size);
  }
  if (st & PERF_SAMPLE_WEIGHT_TYPE) w.Put(s.weight);
  if (st & PERF_SAMPLE_DATA_SRC) w.Put(s.data_src);
  if (st & PERF_SAMPLE_TRANSACTION) w.Put(s.transaction);
  if (st & PERF_SAMPLE_REGS_INTR) PutRegs(w, s.regs_intr.value_or(SampleRecord::Regs{}), layout.sample_regs_intr);
  if (st & PERF_SAMPLE_PHYS_ADDR) w.Put(s.phys_addr);
  if (st & PERF_SAMPLE_CGROUP) w.Put(s.cgroup);
  if (st & PERF_SAMPLE_DATA_PAGE_SIZE) w.Put(s.data_page_size);
  if (st & PERF_SAMPLE_CODE_PAGE_SIZE) w.Put(s.code_page_size);
  if (st & PERF_SAMPLE_AUX) {
    const std::vector<std::byte> data = s.aux.value_or(std::vector<std::byte>{});
    w.Put(static_cast<uint64_t>(data.size()));
    w.Bytes(data);
  }
  FinishHeader(at, out);
}

void EncodeRecord(const SampleLayout& layout, const Record& r, std::vector<std::byte>* out) {
  if (const auto* s = std::get_if<SampleRecord>(&r.body)) {
    EncodeSample(layout, r.header.misc, *s, out);
    return;
  }
  const size_t at = BeginHeader(r.header.type, r.header.misc, out);
  Writer w(out);
  std::visit(
      [&](const auto& b) {
        using T = std::decay_t<decltype(b)>;
        if constexpr (std::is_same_v<T, MmapRecord>) {
          w.Put(b.pid); w.Put(b.tid); w.Put(b.addr); w.Put(b.len); w.Put(b.pgoff);
          w.PaddedString(b.filename);
        } else if constexpr (std::is_same_v<T, Mmap2Record>) {
          w.Put(b.pid); w.Put(b.tid); w.Put(b.addr); w.Put(b.len); w.Put(b.pgoff);
          if (r.header.misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
            std::byte id[24] = {};
            id[0] = static_cast<std::byte>(std::min<size_t>(b.build_id.size(), 20));
            if (!b.build_id.empty()) std::memcpy(id + 4, b.build_id.data(), std::min<size_t>(b.build_id.size(), 20));
            w.Bytes(id);
          } else {
            w.Put(b.maj); w.Put(b.min); w.Put(b.ino); w.Put(b.ino_generation);
          }
          w.Put(b.prot); w.Put(b.flags);
          w.PaddedString(b.filename);
        } else if constexpr (std::is_same_v<T, CommRecord>) {
          w.Put(b.pid); w.Put(b.tid);
          w.PaddedString(b.comm);
        } else if constexpr (std::is_same_v<T, TaskRecord>) {
          w.Put(b.pid); w.Put(b.ppid); w.Put(b.tid); w.Put(b.ptid); w.Put(b.time);
        } else if constexpr (std::is_same_v<T, ThrottleRecord>) {
          w.Put(b.time); w.Put(b.id); w.Put(b.stream_id);
        } else if constexpr (std::is_same_v<T, LostRecord>) {
          w.Put(b.id); w.Put(b.lost);
        } else if constexpr (std::is_same_v<T, OtherRecord>) {
          w.Bytes(b.body);
        } else if constexpr (std::is_same_v<T, SwitchRecord>) {
          if (r.header.type == PERF_RECORD_SWITCH_CPU_WIDE) { w.Put(b.next_prev_pid); w.Put(b.next_prev_tid); }
        } else if constexpr (std::is_same_v<T, NamespacesRecord>) {
          w.Put(b.pid); w.Put(b.tid); w.Put(static_cast<uint64_t>(b.namespaces.size()));
          for (const NamespacesRecord::Namespace& ns : b.namespaces) { w.Put(ns.dev); w.Put(ns.ino); }
        }
      },
      r.body);
  if (!std::holds_alternative<OtherRecord>(r.body)) {
    w.PadTo8();
    EncodeSampleId(layout, r.sample_id.value_or(SampleId{}), out);
  }
  FinishHeader(at, out);
}

bool IsKnownRecordType(uint32_t type) { return type >= PERF_RECORD_MMAP && type < PERF_RECORD_MAX; }

}  // namespace perftest
