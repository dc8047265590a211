#include "harness/records.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <string_view>

#include "harness/attr.h"
#include "harness/internal/byte_cursor.h"

namespace perftest {
namespace {

using internal::ByteCursor;

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

bool ParseRegs(ByteCursor& c, uint64_t mask, SampleView::Regs* regs, std::string_view abi_field,
               std::string_view regs_field) {
  if (!c.Get(&regs->abi, abi_field)) return false;
  if (regs->abi == PERF_SAMPLE_REGS_ABI_NONE) return true;
  std::span<const std::byte> values;
  if (!c.Span(8 * static_cast<size_t>(std::popcount(mask)), &values, regs_field)) return false;
  regs->regs = U64Array(values);
  return true;
}

std::optional<SampleRecord::Regs> OwnedRegs(const SampleView::Regs& v) {
  return SampleRecord::Regs{v.abi, v.regs.ToVector()};
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
  ByteCursor c(trailer);
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

BranchEntry SampleView::BranchStack::operator[](size_t i) const {
  BranchEntry e;
  const std::byte* p = entries.data() + i * sizeof(perf_branch_entry);
  std::memcpy(&e.from, p, 8);
  std::memcpy(&e.to, p + 8, 8);
  std::memcpy(&e.flags, p + 16, 8);
  return e;
}

namespace {

// The fixed-size fields before PERF_SAMPLE_READ, in UAPI order:
// `get(&field, name)` reads one and says whether it fitted.
template <typename Get>
bool HeadFields(uint64_t st, SampleView& s, Get&& get) {
  return (!(st & PERF_SAMPLE_IDENTIFIER) || get(&s.identifier, "identifier")) &&
         (!(st & PERF_SAMPLE_IP) || get(&s.ip, "ip")) &&
         (!(st & PERF_SAMPLE_TID) || (get(&s.pid, "pid") && get(&s.tid, "tid"))) &&
         (!(st & PERF_SAMPLE_TIME) || get(&s.time, "time")) &&
         (!(st & PERF_SAMPLE_ADDR) || get(&s.addr, "addr")) &&
         (!(st & PERF_SAMPLE_ID) || get(&s.id, "id")) &&
         (!(st & PERF_SAMPLE_STREAM_ID) || get(&s.stream_id, "stream_id")) &&
         (!(st & PERF_SAMPLE_CPU) || (get(&s.cpu, "cpu") && get(&s.res, "res"))) &&
         (!(st & PERF_SAMPLE_PERIOD) || get(&s.period, "period"));
}

constexpr uint64_t kHeadBits = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                               PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |
                               PERF_SAMPLE_PERIOD;
// The fields after PERF_SAMPLE_CALLCHAIN: rare in profiles, parsed apart.
constexpr uint64_t kTailBits = PERF_SAMPLE_RAW | PERF_SAMPLE_BRANCH_STACK | PERF_SAMPLE_REGS_USER |
                               PERF_SAMPLE_STACK_USER | PERF_SAMPLE_WEIGHT_TYPE | PERF_SAMPLE_DATA_SRC |
                               PERF_SAMPLE_TRANSACTION | PERF_SAMPLE_REGS_INTR | PERF_SAMPLE_PHYS_ADDR |
                               PERF_SAMPLE_CGROUP | PERF_SAMPLE_DATA_PAGE_SIZE | PERF_SAMPLE_CODE_PAGE_SIZE |
                               PERF_SAMPLE_AUX;

// Bytes of the fixed head: each field a u64 or a pair of u32s.
size_t HeadBytes(uint64_t sample_type) { return 8 * static_cast<size_t>(std::popcount(sample_type & kHeadBits)); }

bool Bad(std::string* error, std::string detail) {
  *error = std::move(detail);
  return false;
}

// PERF_SAMPLE_RAW .. PERF_SAMPLE_AUX.
bool ParseSampleTail(ByteCursor& c, const SampleLayout& layout, SampleView& s, std::string* error) {
  const uint64_t st = layout.sample_type;
  auto fail = [&] { return Bad(error, c.error()); };
  if (st & PERF_SAMPLE_RAW) {
    uint32_t size;
    if (!c.Get(&size, "raw.size") || !c.Span(size, &s.raw, "raw.data")) return fail();
  }
  if (st & PERF_SAMPLE_BRANCH_STACK) {
    uint64_t nr;
    if (!c.Get(&nr, "branch_stack.nr")) return fail();
    if ((layout.branch_sample_type & PERF_SAMPLE_BRANCH_HW_INDEX) &&
        !c.Get(&s.branch_stack.hw_idx, "branch_stack.hw_idx")) {
      return fail();
    }
    if (nr > c.remaining() / sizeof(perf_branch_entry)) return Bad(error, fmt::format("branch_stack.nr={} too large", nr));
    c.Span(nr * sizeof(perf_branch_entry), &s.branch_stack.entries, "branch_stack.entries");
  }
  if ((st & PERF_SAMPLE_REGS_USER) &&
      !ParseRegs(c, layout.sample_regs_user, &s.regs_user, "regs_user.abi", "regs_user.regs")) {
    return fail();
  }
  if (st & PERF_SAMPLE_STACK_USER) {
    uint64_t size;
    if (!c.Get(&size, "stack_user.size")) return fail();
    if (size > c.remaining()) return Bad(error, "stack_user.size too large");
    c.Span(size, &s.stack_user.data, "stack_user.data");
    if (size != 0 && !c.Get(&s.stack_user.dyn_size, "stack_user.dyn_size")) return fail();
  }
  if ((st & PERF_SAMPLE_WEIGHT_TYPE) && !c.Get(&s.weight, "weight")) return fail();
  if ((st & PERF_SAMPLE_DATA_SRC) && !c.Get(&s.data_src, "data_src")) return fail();
  if ((st & PERF_SAMPLE_TRANSACTION) && !c.Get(&s.transaction, "transaction")) return fail();
  if ((st & PERF_SAMPLE_REGS_INTR) &&
      !ParseRegs(c, layout.sample_regs_intr, &s.regs_intr, "regs_intr.abi", "regs_intr.regs")) {
    return fail();
  }
  if ((st & PERF_SAMPLE_PHYS_ADDR) && !c.Get(&s.phys_addr, "phys_addr")) return fail();
  if ((st & PERF_SAMPLE_CGROUP) && !c.Get(&s.cgroup, "cgroup")) return fail();
  if ((st & PERF_SAMPLE_DATA_PAGE_SIZE) && !c.Get(&s.data_page_size, "data_page_size")) return fail();
  if ((st & PERF_SAMPLE_CODE_PAGE_SIZE) && !c.Get(&s.code_page_size, "code_page_size")) return fail();
  if (st & PERF_SAMPLE_AUX) {
    uint64_t size;
    if (!c.Get(&size, "aux.size") || !c.Span(size, &s.aux, "aux.data")) return fail();
  }
  return true;
}

// ParseSampleInto for any layout, field by field with a cursor.
bool ParseSampleGeneral(const SampleLayout& layout, size_t head, std::span<const std::byte> body, SampleView& s,
                        std::string* error) {
  ByteCursor c(body);
  const uint64_t st = layout.sample_type;
  s.sample_type = st;
  auto fail = [&] { return Bad(error, c.error()); };

  // The fixed head (u64s and u32 pairs): one bounds check when it fits; the
  // field-by-field checks only to say which field did not.
  if (head <= body.size()) [[likely]] {
    const std::byte* p = body.data();
    HeadFields(st, s, [&p](auto* field, std::string_view) {
      std::memcpy(field, p, sizeof *field);
      p += sizeof *field;
      return true;
    });
    c.Skip(head, "head");
  } else if (!HeadFields(st, s, [&c](auto* field, std::string_view name) { return c.Get(field, name); })) {
    return fail();
  }
  if (st & PERF_SAMPLE_READ) {
    // With PERF_FORMAT_GROUP the first u64 is nr, the number of counters.
    size_t size = ReadFormatSize(layout.read_format);
    if (layout.read_format & PERF_FORMAT_GROUP) {
      uint64_t nr = 0;
      if (c.remaining() >= 8) std::memcpy(&nr, c.Rest().data(), 8);
      if (nr > c.remaining() / 8) {
        return Bad(error, fmt::format("read: nr={} exceeds the {} bytes left", nr, c.remaining()));
      }
      size = ReadFormatSize(layout.read_format, nr);
    }
    if (size > c.remaining()) {
      return Bad(error, fmt::format("read: read_format {:#x} needs {} bytes, {} left", layout.read_format, size,
                                    c.remaining()));
    }
    c.Span(size, &s.read, "read");
  }
  if (st & PERF_SAMPLE_CALLCHAIN) {
    uint64_t nr;
    if (!c.Get(&nr, "callchain.nr")) return fail();
    if (nr > c.remaining() / 8) [[unlikely]] {
      return Bad(error, fmt::format("callchain.nr={} exceeds the {} bytes left", nr, c.remaining()));
    }
    std::span<const std::byte> ips;
    c.Span(nr * 8, &ips, "callchain.ips");
    s.callchain = U64Array(ips);
  }
  if ((st & kTailBits) && !ParseSampleTail(c, layout, s, error)) return false;
  if (c.remaining() != 0) [[unlikely]] {
    // The kernel writes exactly the fields sample_type asks for: extra bytes
    // mean the layout (sample_type, read_format, register masks) is not the
    // one the record was written with.
    return Bad(error, fmt::format("{} bytes left after the last field at offset {}", c.remaining(), c.offset()));
  }
  return true;
}

// ParseSampleView's work, in place: fills the fields of `s` that
// layout.sample_type names (others are left as they are). False, with the
// detail in *error, when the body is malformed. `head` is
// HeadBytes(layout.sample_type).
//
// A profiler's layout (head fields and PERF_SAMPLE_CALLCHAIN, nothing else)
// whose body fits it exactly is read here without a cursor; anything else,
// and every malformed body, goes through ParseSampleGeneral, which also
// words the errors. Both fill the same fields (records_test.cc compares).
bool ParseSampleInto(const SampleLayout& layout, size_t head, std::span<const std::byte> body, SampleView& s,
                     std::string* error) {
  const uint64_t st = layout.sample_type;
  if ((st & ~(kHeadBits | PERF_SAMPLE_CALLCHAIN)) == 0 && head <= body.size()) [[likely]] {
    const std::byte* p = body.data();
    const size_t rest = body.size() - head;
    bool fits = false;
    uint64_t nr = 0;
    if (!(st & PERF_SAMPLE_CALLCHAIN)) {
      fits = rest == 0;
    } else if (rest >= 8) {
      std::memcpy(&nr, p + head, sizeof nr);
      fits = nr == (rest - 8) / 8 && rest % 8 == 0;
    }
    if (fits) [[likely]] {
      s.sample_type = st;
      HeadFields(st, s, [&p](auto* field, std::string_view) {
        std::memcpy(field, p, sizeof *field);
        p += sizeof *field;
        return true;
      });
      if (st & PERF_SAMPLE_CALLCHAIN) s.callchain = U64Array(body.subspan(head + 8, nr * 8));
      return true;
    }
  }
  return ParseSampleGeneral(layout, head, body, s, error);
}

}  // namespace

Result<SampleView> ParseSampleView(const SampleLayout& layout, std::span<const std::byte> body) {
  Result<SampleView> out = Result<SampleView>::Ok(SampleView{});
  std::string error;
  if (!ParseSampleInto(layout, HeadBytes(layout.sample_type), body, *out, &error)) return Malformed<SampleView>("PERF_RECORD_SAMPLE", error);
  return out;
}

Result<SampleRecord> SampleView::ToRecord(const SampleLayout& layout) const {
  SampleRecord r;
  const uint64_t st = sample_type;
  auto bytes = [](std::span<const std::byte> b) { return std::vector<std::byte>(b.begin(), b.end()); };
  if (st & PERF_SAMPLE_IDENTIFIER) r.identifier = identifier;
  if (st & PERF_SAMPLE_IP) r.ip = ip;
  if (st & PERF_SAMPLE_TID) { r.pid = pid; r.tid = tid; }
  if (st & PERF_SAMPLE_TIME) r.time = time;
  if (st & PERF_SAMPLE_ADDR) r.addr = addr;
  if (st & PERF_SAMPLE_ID) r.id = id;
  if (st & PERF_SAMPLE_STREAM_ID) r.stream_id = stream_id;
  if (st & PERF_SAMPLE_CPU) { r.cpu = cpu; r.res = res; }
  if (st & PERF_SAMPLE_PERIOD) r.period = period;
  if (st & PERF_SAMPLE_READ) {
    Result<ReadValues> rv = DecodeReadFormat(layout.read_format, read);
    if (!rv.ok()) return Malformed<SampleRecord>("PERF_RECORD_SAMPLE", fmt::format("read: {}", rv.ToString()));
    r.read = std::move(*rv);
  }
  if (st & PERF_SAMPLE_CALLCHAIN) r.callchain = callchain.ToVector();
  if (st & PERF_SAMPLE_RAW) r.raw = bytes(raw);
  if (st & PERF_SAMPLE_BRANCH_STACK) {
    SampleRecord::BranchStack bs;
    bs.hw_idx = branch_stack.hw_idx;
    bs.entries.reserve(branch_stack.size());
    for (size_t i = 0; i < branch_stack.size(); ++i) bs.entries.push_back(branch_stack[i]);
    r.branch_stack = std::move(bs);
  }
  if (st & PERF_SAMPLE_REGS_USER) r.regs_user = OwnedRegs(regs_user);
  if (st & PERF_SAMPLE_STACK_USER) r.stack_user = SampleRecord::StackUser{bytes(stack_user.data), stack_user.dyn_size};
  if (st & PERF_SAMPLE_WEIGHT_TYPE) r.weight = weight;
  if (st & PERF_SAMPLE_DATA_SRC) r.data_src = data_src;
  if (st & PERF_SAMPLE_TRANSACTION) r.transaction = transaction;
  if (st & PERF_SAMPLE_REGS_INTR) r.regs_intr = OwnedRegs(regs_intr);
  if (st & PERF_SAMPLE_PHYS_ADDR) r.phys_addr = phys_addr;
  if (st & PERF_SAMPLE_CGROUP) r.cgroup = cgroup;
  if (st & PERF_SAMPLE_DATA_PAGE_SIZE) r.data_page_size = data_page_size;
  if (st & PERF_SAMPLE_CODE_PAGE_SIZE) r.code_page_size = code_page_size;
  if (st & PERF_SAMPLE_AUX) r.aux = bytes(aux);
  return Result<SampleRecord>::Ok(std::move(r));
}

Result<SampleRecord> ParseSample(const SampleLayout& layout, std::span<const std::byte> body) {
  Result<SampleView> v = ParseSampleView(layout, body);
  if (!v.ok()) return Result<SampleRecord>::FailureFrom(v);
  return v->ToRecord(layout);
}

namespace {

// The header checks shared by ParseRecord and ParseRecordView: nullopt when
// the header is sound, else the error's detail.
std::optional<std::string> HeaderProblem(const perf_event_header& h, size_t nbytes) {
  if (h.size != nbytes) return fmt::format("header.size={} but the record has {} bytes", h.size, nbytes);
  if (h.size % 8 != 0) return fmt::format("header.size={} is not a multiple of 8", h.size);
  return std::nullopt;
}

}  // namespace

RecordViewParser::RecordViewParser(const SampleLayout& layout)
    : layout_(layout), head_bytes_(HeadBytes(layout.sample_type)) {
  view_.sample.sample_type = layout.sample_type;
}

const RecordView* RecordViewParser::Parse(std::span<const std::byte> bytes) {
  if (bytes.size() < sizeof(perf_event_header)) [[unlikely]] {
    error_ = fmt::format("parse record: {} bytes is shorter than a header", bytes.size());
    return nullptr;
  }
  std::memcpy(&view_.header, bytes.data(), sizeof view_.header);
  if (view_.header.size != bytes.size() || view_.header.size % 8 != 0) [[unlikely]] {
    error_ = fmt::format("parse {}: {}", RecordTypeName(view_.header.type), *HeaderProblem(view_.header, bytes.size()));
    return nullptr;
  }
  view_.bytes = bytes;
  if (view_.header.type == PERF_RECORD_SAMPLE &&
      !ParseSampleInto(layout_, head_bytes_, bytes.subspan(sizeof view_.header), view_.sample, &error_)) [[unlikely]] {
    error_ = fmt::format("parse PERF_RECORD_SAMPLE: {}", error_);
    return nullptr;
  }
  return &view_;
}

Result<RecordView> ParseRecordView(const SampleLayout& layout, std::span<const std::byte> bytes) {
  RecordViewParser p(layout);
  const RecordView* v = p.Parse(bytes);
  if (v == nullptr) return Result<RecordView>::Failure(EBADMSG, p.error());
  return Result<RecordView>::Ok(*v);
}

Result<Record> ParseRecord(const SampleLayout& layout, std::span<const std::byte> bytes) {
  Record r;
  if (bytes.size() < sizeof(perf_event_header)) {
    return Malformed<Record>("record", fmt::format("{} bytes is shorter than a header", bytes.size()));
  }
  std::memcpy(&r.header, bytes.data(), sizeof r.header);
  // The type's name, for messages only (made on failure: no allocation per record).
  const auto name = [&r] { return RecordTypeName(r.header.type); };
  if (std::optional<std::string> problem = HeaderProblem(r.header, bytes.size())) return Malformed<Record>(name(), *problem);
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
    return Malformed<Record>(name(), fmt::format("{} bytes cannot hold the {}-byte sample_id trailer", body.size(), id_size));
  }
  if (id_size != 0) {
    Result<SampleId> id = ParseSampleId(layout, body.subspan(body.size() - id_size));
    if (!id.ok()) return Result<Record>::FailureFrom(id);
    r.sample_id = std::move(*id);
  }
  ByteCursor c(body.first(body.size() - id_size));
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
        return Malformed<Record>(name(), fmt::format("nr_namespaces={} exceeds the {} bytes left", nr, c.remaining()));
      }
      n.namespaces.resize(ok ? nr : 0);
      for (NamespacesRecord::Namespace& ns : n.namespaces) ok = ok && c.Get(&ns.dev, "dev") && c.Get(&ns.ino, "ino");
      r.body = std::move(n);
      break;
    }
  }
  if (!ok) return Malformed<Record>(name(), c.error());
  // Fixed-layout bodies must use every byte before the trailer (strings are padded).
  const bool fixed = r.header.type != PERF_RECORD_MMAP && r.header.type != PERF_RECORD_MMAP2 &&
                     r.header.type != PERF_RECORD_COMM;
  if (fixed && c.remaining() != 0) {
    return Malformed<Record>(name(), fmt::format("{} bytes left after the last field at offset {}", c.remaining(), c.offset()));
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
