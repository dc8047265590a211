#include "harness/perf_data/reader.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>

namespace perftest::perf_data {
namespace {

Result<PerfData> Bad(uint64_t offset, std::string_view what, const std::string& detail) {
  return Result<PerfData>::Failure(EBADMSG, fmt::format("offset {:#x}: {}: {}", offset, what, detail));
}

// Whether [offset, offset + size) lies in a file of `file_size` bytes.
bool InFile(uint64_t offset, uint64_t size, uint64_t file_size) {
  return offset <= file_size && size <= file_size - offset;
}

template <typename T>
T Load(std::span<const std::byte> b, size_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}

Result<void> ReadAttrs(std::span<const std::byte> file, PerfData* d) {
  const FileHeader& h = d->header;
  const uint64_t entry = h.attr_size;  // struct perf_file_attr: attr, then its ids section
  const uint64_t attr_bytes = entry - sizeof(FileSection);
  if (!InFile(h.attrs.offset, h.attrs.size, file.size())) {
    return Result<void>::Failure(EBADMSG, fmt::format("offset 0x18: attrs section [{:#x}, +{:#x}) is outside the {}-byte file",
                                                      h.attrs.offset, h.attrs.size, file.size()));
  }
  if (h.attrs.size % entry != 0) {
    return Result<void>::Failure(EBADMSG, fmt::format("offset {:#x}: attrs section of {} bytes is not whole entries of {} bytes",
                                                      h.attrs.offset, h.attrs.size, entry));
  }
  for (uint64_t at = h.attrs.offset; at < h.attrs.offset + h.attrs.size; at += entry) {
    Attr a;
    a.bytes.assign(file.begin() + at, file.begin() + at + attr_bytes);
    std::memcpy(&a.attr, a.bytes.data(), std::min<size_t>(attr_bytes, sizeof a.attr));
    const auto ids = Load<FileSection>(file, at + attr_bytes);
    if (!InFile(ids.offset, ids.size, file.size()) || ids.size % 8 != 0) {
      return Result<void>::Failure(EBADMSG, fmt::format("offset {:#x}: attr {}: ids section [{:#x}, +{:#x}) is outside the file or not whole u64s",
                                                        at, d->attrs.size(), ids.offset, ids.size));
    }
    a.ids.resize(ids.size / 8);
    if (ids.size != 0) std::memcpy(a.ids.data(), file.data() + ids.offset, ids.size);
    d->attrs.push_back(std::move(a));
  }
  return Result<void>::Ok();
}

// Splits [begin, end) of `file` into records.
Result<void> ReadRecords(std::span<const std::byte> file, uint64_t begin, uint64_t end, PerfData* d) {
  auto bad = [](uint64_t off, std::string_view what, const std::string& detail) {
    return Result<void>::Failure(EBADMSG, fmt::format("offset {:#x}: {}: {}", off, what, detail));
  };
  uint64_t off = begin;
  while (off < end) {
    const uint64_t left = end - off;
    if (left < sizeof(perf_event_header)) {
      return bad(off, "record header", fmt::format("truncated: {} bytes left, a header takes 8", left));
    }
    DataRecord r;
    r.offset = off;
    r.header = Load<perf_event_header>(file, off);
    const std::string name = RecordTypeName(r.header.type);
    if (r.header.size < sizeof(perf_event_header)) {
      return bad(off, name, fmt::format("header.size={} is below the 8-byte header", r.header.size));
    }
    if (r.header.size > left) {
      return bad(off, name, fmt::format("truncated: header.size={} but {} bytes left", r.header.size, left));
    }
    r.bytes.assign(file.begin() + off, file.begin() + off + r.header.size);
    uint64_t payload = 0;
    if (r.header.type == PERF_RECORD_AUXTRACE) {
      if (r.header.size < 16) return bad(off, name, fmt::format("header.size={} has no room for size", r.header.size));
      payload = Load<uint64_t>(file, off + 8);
    } else if (r.header.type == PERF_RECORD_HEADER_TRACING_DATA) {
      if (r.header.size < 12) return bad(off, name, fmt::format("header.size={} has no room for size", r.header.size));
      payload = (uint64_t{Load<uint32_t>(file, off + 8)} + 7) & ~uint64_t{7};
    }
    if (payload > left - r.header.size) {
      return bad(off, name, fmt::format("truncated: its data of {} bytes after the record, {} bytes left", payload,
                                        left - r.header.size));
    }
    r.payload.assign(file.begin() + off + r.header.size, file.begin() + off + r.header.size + payload);
    if (!IsKnownRecordType(r.header.type)) ++d->unknown_records;
    off += r.size_in_file();
    d->records.push_back(std::move(r));
  }
  return Result<void>::Ok();
}

Result<void> ReadFeatures(std::span<const std::byte> file, PerfData* d) {
  const FileHeader& h = d->header;
  const uint64_t table = h.data.offset + h.data.size;
  const uint64_t nr = h.features.count();
  if (!InFile(table, nr * sizeof(FileSection), file.size())) {
    return Result<void>::Failure(EBADMSG, fmt::format("offset {:#x}: feature table of {} sections is past the end of the {}-byte file",
                                                      table, nr, file.size()));
  }
  uint64_t at = table;
  uint64_t first_section = UINT64_MAX;
  for (int bit = 0; bit < HEADER_FEAT_BITS; ++bit) {
    if (!h.features.test(bit)) continue;
    const auto s = Load<FileSection>(file, at);
    if (!InFile(s.offset, s.size, file.size())) {
      return Result<void>::Failure(EBADMSG, fmt::format("offset {:#x}: feature {} section [{:#x}, +{:#x}) is outside the {}-byte file",
                                                        at, FeatureName(bit), s.offset, s.size, file.size()));
    }
    d->features[bit].assign(file.begin() + s.offset, file.begin() + s.offset + s.size);
    first_section = std::min(first_section, s.offset);
    if (bit >= HEADER_LAST_FEATURE || bit == HEADER_RESERVED) ++d->unknown_features;
    at += sizeof(FileSection);
  }
  const uint64_t table_end = table + nr * sizeof(FileSection);
  if (first_section != UINT64_MAX && first_section > table_end && first_section - table_end <= 16 * HEADER_FEAT_BITS) {
    d->feature_table_padding = first_section - table_end;
  }
  return Result<void>::Ok();
}

// Pipe mode: attrs and features come from their records.
Result<void> CollectPipeHeaders(PerfData* d) {
  for (const DataRecord& r : d->records) {
    if (r.header.type != PERF_RECORD_HEADER_ATTR && r.header.type != PERF_RECORD_HEADER_FEATURE) continue;
    Result<UserRecord> u = ParseUserRecord(r.bytes);
    if (!u.ok()) return Result<void>::Failure(u.error(), fmt::format("offset {:#x}: {}", r.offset, u.call()));
    if (auto* a = std::get_if<HeaderAttrRecord>(&*u)) {
      d->attrs.push_back(Attr{a->attr, std::move(a->attr_bytes), std::move(a->ids)});
    } else if (auto* f = std::get_if<HeaderFeatureRecord>(&*u)) {
      // HEADER_LAST_FEATURE with no data: the end mark perf writes after the
      // features (synthetic-events.c perf_event__synthesize_features()).
      if (f->feat_id == HEADER_LAST_FEATURE) continue;
      if (f->feat_id >= HEADER_FEAT_BITS) {
        ++d->unknown_features;
        continue;
      }
      const int bit = static_cast<int>(f->feat_id);
      if (bit >= HEADER_LAST_FEATURE || bit == HEADER_RESERVED) ++d->unknown_features;
      d->header.features.set(bit);
      d->features[bit] = std::move(f->data);
    }
  }
  return Result<void>::Ok();
}

}  // namespace

Result<PerfData> ReadPerfData(std::span<const std::byte> file) {
  Result<FileHeader> h = ParseFileHeader(file);
  if (!h.ok()) return Result<PerfData>::FailureFrom(h);
  PerfData d;
  d.header = std::move(*h);
  Result<void> step = Result<void>::Ok();
  if (d.header.pipe) {
    step = ReadRecords(file, kPipeHeaderSize, file.size(), &d);
    if (step.ok()) step = CollectPipeHeaders(&d);
  } else {
    step = ReadAttrs(file, &d);
    if (step.ok() && !InFile(d.header.data.offset, d.header.data.size, file.size())) {
      return Bad(0x28, "data section", fmt::format("[{:#x}, +{:#x}) is outside the {}-byte file", d.header.data.offset,
                                                   d.header.data.size, file.size()));
    }
    if (step.ok()) step = ReadRecords(file, d.header.data.offset, d.header.data.offset + d.header.data.size, &d);
    if (step.ok()) step = ReadFeatures(file, &d);
  }
  if (!step.ok()) return Result<PerfData>::FailureFrom(step);
  return Result<PerfData>::Ok(std::move(d));
}

Result<PerfData> ReadPerfDataFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Result<PerfData>::Failure(errno, fmt::format("open(\"{}\")", path));
  std::vector<std::byte> bytes;
  std::byte buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return Result<PerfData>::Failure(err, fmt::format("read(\"{}\")", path));
    }
    if (n == 0) break;
    bytes.insert(bytes.end(), buf, buf + n);
  }
  ::close(fd);
  Result<PerfData> d = ReadPerfData(bytes);
  if (!d.ok()) return Result<PerfData>::Failure(d.error(), fmt::format("{}: {}", path, d.call()));
  return d;
}

RecordParser::RecordParser(const PerfData& data) : data_(data) {
  for (size_t i = 0; i < data.attrs.size(); ++i) {
    layouts_.push_back(SampleLayout::FromAttr(data.attrs[i].attr));
    for (uint64_t id : data.attrs[i].ids) attr_of_id_.emplace(id, i);
  }
  if (data.attrs.empty()) return;
  const uint64_t st = data.attrs[0].attr.sample_type;
  if (st & PERF_SAMPLE_IDENTIFIER) {
    sample_id_pos_ = 0;
    trailer_id_pos_ = 1;
  } else if (st & PERF_SAMPLE_ID) {
    sample_id_pos_ = std::popcount(st & (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR));
    trailer_id_pos_ = 1 + std::popcount(st & (PERF_SAMPLE_CPU | PERF_SAMPLE_STREAM_ID));
  }
  if (!data.attrs[0].attr.sample_id_all) trailer_id_pos_ = -1;
}

const Attr* RecordParser::AttrOf(const DataRecord& r) const {
  if (data_.attrs.empty()) return nullptr;
  if (data_.attrs.size() == 1) return &data_.attrs[0];
  const size_t words = (r.bytes.size() - sizeof(perf_event_header)) / 8;
  int64_t pos = -1;
  if (r.header.type == PERF_RECORD_SAMPLE && sample_id_pos_ >= 0) {
    pos = sample_id_pos_;
  } else if (r.header.type != PERF_RECORD_SAMPLE && trailer_id_pos_ >= 0) {
    pos = static_cast<int64_t>(words) - trailer_id_pos_;
  }
  if (pos < 0 || static_cast<size_t>(pos) >= words) return &data_.attrs[0];
  const auto id = Load<uint64_t>(r.bytes, sizeof(perf_event_header) + pos * 8);
  auto it = attr_of_id_.find(id);
  return it == attr_of_id_.end() ? &data_.attrs[0] : &data_.attrs[it->second];
}

Result<ParsedRecord> RecordParser::Parse(const DataRecord& r) const {
  const std::string where = r.offset_in_stream
                                ? fmt::format("offset {:#x} (PERF_RECORD_COMPRESSED, +{:#x} decompressed)", r.offset,
                                              *r.offset_in_stream)
                                : fmt::format("offset {:#x}", r.offset);
  auto wrap = [&](const auto& inner) {
    return Result<ParsedRecord>::Failure(inner.error(), fmt::format("{}: {}", where, inner.call()));
  };
  if (r.header.type >= PERF_RECORD_USER_TYPE_START) {
    Result<UserRecord> u = ParseUserRecord(r.bytes);
    if (!u.ok()) return wrap(u);
    return Result<ParsedRecord>::Ok(ParsedRecord(std::move(*u)));
  }
  if (!perftest::IsKnownRecordType(r.header.type)) {
    return Result<ParsedRecord>::Failure(ENOENT, fmt::format("{}: {}: unknown record type", where,
                                                             RecordTypeName(r.header.type)));
  }
  const Attr* a = AttrOf(r);
  const SampleLayout layout = a != nullptr ? layouts_[a - data_.attrs.data()] : SampleLayout{};
  Result<perftest::Record> k = ParseRecord(layout, r.bytes);
  if (!k.ok()) return wrap(k);
  return Result<ParsedRecord>::Ok(ParsedRecord(std::move(*k)));
}

}  // namespace perftest::perf_data
