#include "harness/perf_data/writer.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "harness/perf_data/features.h"
#include "harness/perf_data/internal/bytes.h"

namespace perftest::perf_data {
namespace {

using internal::ByteAppender;

// The attr as `size` bytes: the file's bytes where they have that size,
// else the parsed attr, padded with zeros or cut.
std::vector<std::byte> AttrBytes(const Attr& a, size_t size) {
  if (a.bytes.size() == size) return a.bytes;
  std::vector<std::byte> out(size, std::byte{0});
  const std::vector<std::byte>& src = a.bytes.empty()
      ? std::vector<std::byte>(reinterpret_cast<const std::byte*>(&a.attr),
                               reinterpret_cast<const std::byte*>(&a.attr) + sizeof a.attr)
      : a.bytes;
  std::memcpy(out.data(), src.data(), std::min(size, src.size()));
  return out;
}

}  // namespace

bool IsPipeOnlyRecord(uint32_t type) {
  return type == PERF_RECORD_HEADER_ATTR || type == PERF_RECORD_HEADER_FEATURE ||
         type == PERF_RECORD_HEADER_EVENT_TYPE || type == PERF_RECORD_HEADER_TRACING_DATA;
}

std::vector<std::byte> WritePerfData(const PerfData& data) {
  FileHeader h;
  h.attr_size = data.header.pipe || data.header.attr_size == 0 ? sizeof(perf_event_attr) + sizeof(FileSection)
                                                                : data.header.attr_size;
  const size_t attr_bytes = h.attr_size - sizeof(FileSection);
  std::vector<std::byte> out(kFileHeaderSize, std::byte{0});
  ByteAppender w(&out);

  // Each attr's ids, then the attrs pointing at them.
  std::vector<FileSection> id_sections;
  for (const Attr& a : data.attrs) {
    id_sections.push_back({w.size(), a.ids.size() * 8});
    for (uint64_t id : a.ids) w.Put(id);
  }
  h.attrs = {w.size(), data.attrs.size() * h.attr_size};
  for (size_t i = 0; i < data.attrs.size(); ++i) {
    w.Bytes(AttrBytes(data.attrs[i], attr_bytes));
    w.Put(id_sections[i]);
  }

  // The data section; AUXTRACE records indexed where they land.
  std::map<int, std::vector<std::byte>> features = data.features;
  std::vector<AuxtraceIndexEntry> aux_index;
  h.data.offset = w.size();
  for (const DataRecord& r : data.records) {
    if (IsPipeOnlyRecord(r.header.type)) {
      if (r.header.type == PERF_RECORD_HEADER_TRACING_DATA && !features.contains(HEADER_TRACING_DATA)) {
        features[HEADER_TRACING_DATA] = r.payload;
      }
      continue;
    }
    if (r.header.type == PERF_RECORD_AUXTRACE) aux_index.push_back({w.size(), r.header.size});
    w.Bytes(r.bytes);
    w.Bytes(r.payload);
  }
  h.data.size = w.size() - h.data.offset;
  if (!aux_index.empty() || features.contains(HEADER_AUXTRACE)) {
    features[HEADER_AUXTRACE] = EncodeAuxtraceIndex(aux_index);
  }

  // Feature table, then the sections in bit order.
  for (const auto& [bit, bytes] : features) h.features.set(bit);
  const uint64_t table = w.size();
  w.Zeros(features.size() * sizeof(FileSection) + data.feature_table_padding);
  size_t slot = 0;
  for (const auto& [bit, bytes] : features) {
    const FileSection s{w.size(), bytes.size()};
    std::memcpy(out.data() + table + slot++ * sizeof s, &s, sizeof s);
    w.Bytes(bytes);
  }

  std::vector<std::byte> head;
  EncodeFileHeader(h, &head);
  std::memcpy(out.data(), head.data(), head.size());
  return out;
}

std::vector<std::byte> WritePerfDataPipe(const PerfData& data) {
  std::vector<std::byte> out;
  FileHeader h;
  h.pipe = true;
  EncodeFileHeader(h, &out);
  for (const Attr& a : data.attrs) {
    perf_event_attr attr = a.attr;
    attr.size = sizeof attr;
    EncodeHeaderAttr(attr, a.ids, &out);
  }
  for (const auto& [bit, bytes] : data.features) {
    if (bit == HEADER_TRACING_DATA) continue;  // a HEADER_TRACING_DATA record's job in pipe mode
    EncodeHeaderFeature(static_cast<uint64_t>(bit), bytes, &out);
  }
  EncodeHeaderFeature(HEADER_LAST_FEATURE, {}, &out);  // the end mark perf writes
  ByteAppender w(&out);
  // A file's HEADER_TRACING_DATA feature is a HEADER_TRACING_DATA record in
  // pipe mode: {header; u32 size} (12 bytes), then `size` bytes, 8-aligned.
  const bool has_tracing_record =
      std::any_of(data.records.begin(), data.records.end(),
                  [](const DataRecord& r) { return r.header.type == PERF_RECORD_HEADER_TRACING_DATA; });
  if (auto it = data.features.find(HEADER_TRACING_DATA); it != data.features.end() && !has_tracing_record) {
    const size_t aligned = (it->second.size() + 7) & ~size_t{7};
    w.Put(perf_event_header{PERF_RECORD_HEADER_TRACING_DATA, 0, 12});
    w.Put(static_cast<uint32_t>(aligned));
    w.Bytes(it->second);
    w.Zeros(aligned - it->second.size());
  }
  for (const DataRecord& r : data.records) {
    if (r.header.type == PERF_RECORD_HEADER_ATTR || r.header.type == PERF_RECORD_HEADER_FEATURE) continue;
    w.Bytes(r.bytes);
    w.Bytes(r.payload);
  }
  return out;
}

Result<void> WritePerfDataFile(const PerfData& data, const std::string& path, bool pipe) {
  const std::vector<std::byte> bytes = pipe ? WritePerfDataPipe(data) : WritePerfData(data);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Result<void>::Failure(errno, fmt::format("open(\"{}\", O_WRONLY|O_CREAT|O_TRUNC)", path));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return Result<void>::Failure(err, fmt::format("write(\"{}\", {} bytes)", path, bytes.size() - done));
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) return Result<void>::Failure(errno, fmt::format("close(\"{}\")", path));
  return Result<void>::Ok(perftest::internal::Monostate{}, fmt::format("write(\"{}\", {} bytes)", path, bytes.size()));
}

}  // namespace perftest::perf_data
