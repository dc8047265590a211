// Records of the perf mmap ring buffer: parsing and encoding.
//
//   SampleLayout layout = SampleLayout::FromAttr(attr);     // computed once per event
//   Result<Record> r = ParseRecord(layout, raw.bytes);      // raw from RingBuffer::Next()
//   if (auto* s = std::get_if<SampleRecord>(&r->body)) use(s->ip, s->tid);
//   if (r->sample_id) check(r->sample_id->time);            // sample_id_all trailer
//
//   Result<RecordView> v = ParseRecordView(layout, raw.bytes); // zero-copy: views into raw.bytes
//   if (v->is_sample()) use(v->sample.ip, v->sample.callchain.back());
//
// Layouts are those of <linux/perf_event.h> "enum perf_event_type": PERF_RECORD_SAMPLE
// fields appear in the UAPI order (IDENTIFIER, IP, TID, TIME, ADDR, ID, STREAM_ID,
// CPU, PERIOD, READ, CALLCHAIN, RAW, BRANCH_STACK, REGS_USER, STACK_USER, WEIGHT,
// DATA_SRC, TRANSACTION, REGS_INTR, PHYS_ADDR, CGROUP, DATA_PAGE_SIZE,
// CODE_PAGE_SIZE, AUX); kernel/events/core.c perf_output_sample() writes them.
// Non-sample records carry the sample_id_all trailer (TID, TIME, ID, STREAM_ID,
// CPU, IDENTIFIER) when attr.sample_id_all is set (__perf_event_header__init_id()).
//
// Encoders are the inverse of the parsers; MockBackend writes records with them.
#pragma once

#include <linux/perf_event.h>

#include <cstddef>
#include <compare>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "harness/read_format.h"
#include "harness/result.h"

namespace perftest {

// What decides the shape of an event's records; derived from perf_event_attr.
struct SampleLayout {
  uint64_t sample_type = 0;
  uint64_t read_format = 0;
  uint64_t branch_sample_type = 0;
  uint64_t sample_regs_user = 0;
  uint64_t sample_regs_intr = 0;
  bool sample_id_all = false;
  // Members in PERF_SAMPLE_READ with PERF_FORMAT_GROUP are counted from the data
  // (the `nr` field); nothing to configure.

  static SampleLayout FromAttr(const perf_event_attr& attr);
  // Bytes of the sample_id_all trailer (0 unless sample_id_all).
  size_t SampleIdSize() const;
};

// The sample_id_all trailer; fields present per sample_type.
struct SampleId {
  std::optional<uint32_t> pid, tid;         // PERF_SAMPLE_TID
  std::optional<uint64_t> time;             // PERF_SAMPLE_TIME, ns (perf_clock or attr.clockid)
  std::optional<uint64_t> id;               // PERF_SAMPLE_ID
  std::optional<uint64_t> stream_id;        // PERF_SAMPLE_STREAM_ID
  std::optional<uint32_t> cpu, res;         // PERF_SAMPLE_CPU
  std::optional<uint64_t> identifier;       // PERF_SAMPLE_IDENTIFIER
  bool operator==(const SampleId&) const = default;
};

struct BranchEntry {
  uint64_t from = 0, to = 0, flags = 0;  // struct perf_branch_entry, flags as the raw u64
  bool operator==(const BranchEntry&) const = default;
};

// PERF_RECORD_SAMPLE. A field is present iff its bit is in sample_type.
struct SampleRecord {
  std::optional<uint64_t> identifier;
  std::optional<uint64_t> ip;
  std::optional<uint32_t> pid, tid;
  std::optional<uint64_t> time;
  std::optional<uint64_t> addr;
  std::optional<uint64_t> id;
  std::optional<uint64_t> stream_id;
  std::optional<uint32_t> cpu, res;
  std::optional<uint64_t> period;
  std::optional<ReadValues> read;
  std::optional<std::vector<uint64_t>> callchain;  // ips, including PERF_CONTEXT_* markers
  std::optional<std::vector<std::byte>> raw;       // PERF_SAMPLE_RAW data (size u32 + data; padding kept)
  struct BranchStack {
    std::optional<uint64_t> hw_idx;  // PERF_SAMPLE_BRANCH_HW_INDEX
    std::vector<BranchEntry> entries;
    bool operator==(const BranchStack&) const = default;
  };
  std::optional<BranchStack> branch_stack;
  struct Regs {
    uint64_t abi = 0;  // PERF_SAMPLE_REGS_ABI_*; regs empty when abi == NONE
    std::vector<uint64_t> regs;
    bool operator==(const Regs&) const = default;
  };
  std::optional<Regs> regs_user;
  struct StackUser {
    std::vector<std::byte> data;  // `size` bytes
    uint64_t dyn_size = 0;        // present only when size > 0
    bool operator==(const StackUser&) const = default;
  };
  std::optional<StackUser> stack_user;
  std::optional<uint64_t> weight;  // PERF_SAMPLE_WEIGHT or WEIGHT_STRUCT (raw u64)
  std::optional<uint64_t> data_src;
  std::optional<uint64_t> transaction;
  std::optional<Regs> regs_intr;
  std::optional<uint64_t> phys_addr;
  std::optional<uint64_t> cgroup;
  std::optional<uint64_t> data_page_size;
  std::optional<uint64_t> code_page_size;
  std::optional<std::vector<std::byte>> aux;  // PERF_SAMPLE_AUX data
  bool operator==(const SampleRecord&) const = default;
};

// PERF_RECORD_MMAP.
struct MmapRecord {
  uint32_t pid = 0, tid = 0;
  uint64_t addr = 0, len = 0, pgoff = 0;
  std::string filename;
  bool operator==(const MmapRecord&) const = default;
};

// PERF_RECORD_MMAP2 (maj/min/ino form; with PERF_RECORD_MISC_MMAP_BUILD_ID the
// build_id form: build_id_size and build_id replace maj..ino_generation).
struct Mmap2Record {
  uint32_t pid = 0, tid = 0;
  uint64_t addr = 0, len = 0, pgoff = 0;
  uint32_t maj = 0, min = 0;
  uint64_t ino = 0, ino_generation = 0;
  std::vector<std::byte> build_id;  // build-id form only
  uint32_t prot = 0, flags = 0;
  std::string filename;
  bool operator==(const Mmap2Record&) const = default;
};

// PERF_RECORD_COMM (misc PERF_RECORD_MISC_COMM_EXEC on exec).
struct CommRecord {
  uint32_t pid = 0, tid = 0;
  std::string comm;
  bool operator==(const CommRecord&) const = default;
};

// PERF_RECORD_FORK and PERF_RECORD_EXIT share a layout.
struct TaskRecord {
  uint32_t pid = 0, ppid = 0, tid = 0, ptid = 0;
  uint64_t time = 0;
  bool operator==(const TaskRecord&) const = default;
};

// PERF_RECORD_THROTTLE and PERF_RECORD_UNTHROTTLE.
struct ThrottleRecord {
  uint64_t time = 0, id = 0, stream_id = 0;
  bool operator==(const ThrottleRecord&) const = default;
};

// PERF_RECORD_LOST: `lost` records were dropped because the buffer was full.
struct LostRecord {
  uint64_t id = 0, lost = 0;
  bool operator==(const LostRecord&) const = default;
};

// PERF_RECORD_SWITCH (no body) and PERF_RECORD_SWITCH_CPU_WIDE ({u32
// next_prev_pid, next_prev_tid}: the task switched to on SWITCH_OUT, from on
// switch in). header.misc carries PERF_RECORD_MISC_SWITCH_OUT and
// PERF_RECORD_MISC_SWITCH_OUT_PREEMPT (kernel/events/core.c perf_event_switch_output()).
struct SwitchRecord {
  std::optional<uint32_t> next_prev_pid, next_prev_tid;  // SWITCH_CPU_WIDE only
  bool operator==(const SwitchRecord&) const = default;
};

// PERF_RECORD_NAMESPACES: {u32 pid, tid; u64 nr_namespaces; {u64 dev, ino}[nr]},
// indexed by NET_NS_INDEX .. CGROUP_NS_INDEX (perf_event_namespaces_output()).
struct NamespacesRecord {
  uint32_t pid = 0, tid = 0;
  struct Namespace {
    uint64_t dev = 0, ino = 0;
    bool operator==(const Namespace&) const = default;
  };
  std::vector<Namespace> namespaces;
  bool operator==(const NamespacesRecord&) const = default;
};

// Any other record type: the body bytes after the header, trailer included.
struct OtherRecord {
  std::vector<std::byte> body;
  bool operator==(const OtherRecord&) const = default;
};

struct Record {
  perf_event_header header{};
  std::variant<SampleRecord, MmapRecord, Mmap2Record, CommRecord, TaskRecord, ThrottleRecord,
               LostRecord, OtherRecord, SwitchRecord, NamespacesRecord>
      body;
  // The sample_id_all trailer of a non-sample record (nullopt for SAMPLE, for
  // OtherRecord, and when sample_id_all is off).
  std::optional<SampleId> sample_id;
};

// --- zero-copy views ---
//
// The same fields without copying: a view's spans point into the bytes it was
// parsed from (a RawRecord's, so valid until the ring's next Next()/Begin();
// RingBuffer copies a record only when it wraps). For readers that look at
// every sample (profilers): no allocation per record.
//
//   while (std::optional<RawRecord> raw = rb.Next()) {
//     Result<RecordView> v = ParseRecordView(layout, raw->bytes);
//     if (v.ok() && v->is_sample()) Count(v->sample.pid, v->sample.callchain);  // callchain: U64Array
//     else if (v.ok()) Result<Record> r = ParseRecord(layout, v->bytes);          // side-band, owned
//   }

// u64 values where they lie (callchain ips, register values, STACK_USER is
// bytes): read with memcpy, so any alignment of the underlying bytes is fine.
class U64Array {
 public:
  class iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = uint64_t;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = uint64_t;
    iterator() = default;
    explicit iterator(const std::byte* p) : p_(p) {}
    uint64_t operator*() const { return Load(p_); }
    uint64_t operator[](difference_type i) const { return Load(p_ + 8 * i); }
    iterator& operator++() { p_ += 8; return *this; }
    iterator operator++(int) { iterator t = *this; p_ += 8; return t; }
    iterator& operator--() { p_ -= 8; return *this; }
    iterator operator--(int) { iterator t = *this; p_ -= 8; return t; }
    iterator& operator+=(difference_type n) { p_ += 8 * n; return *this; }
    iterator& operator-=(difference_type n) { p_ -= 8 * n; return *this; }
    friend iterator operator+(iterator it, difference_type n) { return it += n; }
    friend iterator operator+(difference_type n, iterator it) { return it += n; }
    friend iterator operator-(iterator it, difference_type n) { return it -= n; }
    friend difference_type operator-(iterator a, iterator b) { return (a.p_ - b.p_) / 8; }
    friend bool operator==(iterator a, iterator b) { return a.p_ == b.p_; }
    friend auto operator<=>(iterator a, iterator b) { return a.p_ <=> b.p_; }

   private:
    const std::byte* p_ = nullptr;
  };

  U64Array() = default;
  // `bytes.size()` should be a multiple of 8; a partial last value is ignored.
  explicit U64Array(std::span<const std::byte> bytes) : bytes_(bytes.first(bytes.size() / 8 * 8)) {}

  size_t size() const { return bytes_.size() / 8; }
  bool empty() const { return bytes_.empty(); }
  uint64_t operator[](size_t i) const { return Load(bytes_.data() + 8 * i); }
  uint64_t front() const { return (*this)[0]; }
  uint64_t back() const { return (*this)[size() - 1]; }
  iterator begin() const { return iterator(bytes_.data()); }
  iterator end() const { return iterator(bytes_.data() + bytes_.size()); }
  std::span<const std::byte> bytes() const { return bytes_; }
  std::vector<uint64_t> ToVector() const { return std::vector<uint64_t>(begin(), end()); }

 private:
  static uint64_t Load(const std::byte* p) {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  std::span<const std::byte> bytes_;
};

// PERF_RECORD_SAMPLE's fields in place. A field means something iff its bit
// is in sample_type (has()); absent ones read 0 / empty. Same UAPI order and
// rules as SampleRecord.
struct SampleView {
  uint64_t sample_type = 0;  // the layout's
  uint64_t identifier = 0, ip = 0;
  uint32_t pid = 0, tid = 0;
  uint64_t time = 0, addr = 0, id = 0, stream_id = 0;
  uint32_t cpu = 0, res = 0;
  uint64_t period = 0;
  std::span<const std::byte> read;  // PERF_SAMPLE_READ: the read_format bytes (DecodeReadFormat)
  U64Array callchain;               // ips, including PERF_CONTEXT_* markers
  std::span<const std::byte> raw;   // PERF_SAMPLE_RAW data after the u32 size (padding kept)
  struct BranchStack {
    std::optional<uint64_t> hw_idx;     // PERF_SAMPLE_BRANCH_HW_INDEX
    std::span<const std::byte> entries; // nr struct perf_branch_entry
    size_t size() const { return entries.size() / sizeof(perf_branch_entry); }
    BranchEntry operator[](size_t i) const;
  } branch_stack;
  struct Regs {
    uint64_t abi = 0;  // PERF_SAMPLE_REGS_ABI_*; regs empty when NONE
    U64Array regs;     // one per bit of the mask, lowest bit first
  } regs_user, regs_intr;
  struct StackUser {
    std::span<const std::byte> data;  // `size` bytes, of which dyn_size were filled
    uint64_t dyn_size = 0;
  } stack_user;
  uint64_t weight = 0, data_src = 0, transaction = 0, phys_addr = 0, cgroup = 0;
  uint64_t data_page_size = 0, code_page_size = 0;
  std::span<const std::byte> aux;  // PERF_SAMPLE_AUX data

  bool has(uint64_t sample_bit) const { return (sample_type & sample_bit) != 0; }
  // An owned copy, the fields of sample_type set. Errors: EBADMSG when `read`
  // does not decode per layout.read_format (not when the view came from
  // ParseSampleView with the same layout: it checked).
  Result<SampleRecord> ToRecord(const SampleLayout& layout) const;
};

// A record in place: its header and bytes, and for PERF_RECORD_SAMPLE the
// sample's fields. Other types are framed only; ParseRecord(layout, bytes)
// gives their typed, owned form.
struct RecordView {
  perf_event_header header{};
  std::span<const std::byte> bytes;  // header.size bytes, header included
  SampleView sample;                 // PERF_RECORD_SAMPLE only
  bool is_sample() const { return header.type == PERF_RECORD_SAMPLE; }
};

// Parses the body of a PERF_RECORD_SAMPLE (the bytes after the header) into
// views over `body`. Errors: EBADMSG as ParseSample (same checks, same messages).
Result<SampleView> ParseSampleView(const SampleLayout& layout, std::span<const std::byte> body);

// Frames one whole record (the header checks of ParseRecord) and, for a
// sample, parses it as ParseSampleView does. Errors: EBADMSG as ParseRecord
// for the header and for samples; other types' bodies are not looked at.
Result<RecordView> ParseRecordView(const SampleLayout& layout, std::span<const std::byte> bytes);

// ParseRecordView for a reader's loop: one view, reused, so a record costs
// no copy of the view and no allocation (bench/ringbuffer_bench.cc).
//
//   RecordViewParser parser(layout);
//   while (std::optional<RawRecord> raw = rb.Next()) {
//     const RecordView* v = parser.Parse(raw->bytes);
//     if (v == nullptr) { warn(parser.error()); continue; }
//     if (v->is_sample()) use(v->sample.tid, v->sample.callchain);
//   }
class RecordViewParser {
 public:
  explicit RecordViewParser(const SampleLayout& layout);
  // The record in `bytes` as a view (valid until the next Parse() and while
  // `bytes` is), or nullptr when it is malformed: error() then says what, as
  // ParseRecordView's EBADMSG message does. A sample's fields absent from the
  // layout stay 0/empty.
  const RecordView* Parse(std::span<const std::byte> bytes);
  const std::string& error() const { return error_; }
  const SampleLayout& layout() const { return layout_; }

 private:
  SampleLayout layout_;
  size_t head_bytes_ = 0;  // the fixed fields before PERF_SAMPLE_READ
  RecordView view_;
  std::string error_;
};

// Parses one whole record (header included). Errors: EBADMSG when header.size
// disagrees with `bytes`, is not a multiple of 8, or the fields the layout calls
// for do not fit (the call string names the record type, field and offset).
Result<Record> ParseRecord(const SampleLayout& layout, std::span<const std::byte> bytes);

// Parses the body of a PERF_RECORD_SAMPLE (the bytes after the header).
Result<SampleRecord> ParseSample(const SampleLayout& layout, std::span<const std::byte> body);

// Parses a sample_id_all trailer of exactly layout.SampleIdSize() bytes.
Result<SampleId> ParseSampleId(const SampleLayout& layout, std::span<const std::byte> trailer);

// Encoders: append the whole record (header included, size padded to 8 bytes).
// Non-sample records get `sample_id` as trailer when layout.sample_id_all.
void EncodeSample(const SampleLayout& layout, uint16_t misc, const SampleRecord& s,
                  std::vector<std::byte>* out);
void EncodeRecord(const SampleLayout& layout, const Record& r, std::vector<std::byte>* out);
void EncodeSampleId(const SampleLayout& layout, const SampleId& id, std::vector<std::byte>* out);

// Whether `type` is a PERF_RECORD_* value defined by the UAPI header this was
// built against (1 .. PERF_RECORD_MAX-1).
bool IsKnownRecordType(uint32_t type);

// PERF_CONTEXT_* markers in a callchain are >= PERF_CONTEXT_MAX (as u64).
inline bool IsCallchainContext(uint64_t ip) { return ip >= static_cast<uint64_t>(PERF_CONTEXT_MAX); }

}  // namespace perftest
