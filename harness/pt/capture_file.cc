#include "harness/pt/capture_file.h"

#include <fmt/format.h>
#include <linux/perf_event.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <system_error>

namespace perftest::pt {

bool IsCaptureFile(std::span<const uint8_t> head) {
  return head.size() >= sizeof kCaptureMagic && std::memcmp(head.data(), kCaptureMagic, sizeof kCaptureMagic) == 0;
}

Result<Capture> ParseCapture(std::span<const uint8_t> bytes, const std::string& name) {
  using R = Result<Capture>;
  if (!IsCaptureFile(bytes)) return R::Failure(EBADMSG, "read capture " + name + ": not a perftest PT capture");
  Capture c;
  size_t at = sizeof kCaptureMagic;
  while (at < bytes.size()) {
    if (bytes.size() - at < 16) return R::Failure(EBADMSG, fmt::format("read capture {}: truncated at {}", name, at));
    CaptureChunk ch;
    uint64_t size = 0;
    std::memcpy(&ch.type, bytes.data() + at, 4);
    std::memcpy(&ch.source, bytes.data() + at + 4, 4);
    std::memcpy(&size, bytes.data() + at + 8, 8);
    at += 16;
    if (size > bytes.size() - at) return R::Failure(EBADMSG, fmt::format("read capture {}: chunk past the end", name));
    ch.payload.assign(bytes.begin() + static_cast<long>(at), bytes.begin() + static_cast<long>(at + size));
    at += size;
    at += std::min<size_t>((8 - size % 8) % 8, bytes.size() - at);  // (a last chunk's padding may be cut)
    if (ch.type == kCaptureMeta) {
      c.meta_json.assign(ch.payload.begin(), ch.payload.end());
    } else {
      c.chunks.push_back(std::move(ch));
    }
  }
  return R::Ok(std::move(c), "read capture " + name);
}

Result<Capture> ReadCapture(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Result<Capture>::Failure(errno == 0 ? ENOENT : errno, "read capture " + path);
  const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return ParseCapture(bytes, path);
}

namespace {

// An executable file mapping: what ImageSpecOf() formats.
struct FileMapping {
  uint64_t addr = 0, len = 0, pgoff = 0;
  std::string file;
};

// The mapping of a MMAP or MMAP2 record that maps code from a file
// (PERF_RECORD_MISC_MMAP_DATA clear, an absolute path), if it is one. The
// kernel names an anonymous executable mapping "//anon" (perf_event_mmap_event()).
std::optional<FileMapping> ExecFileMapping(const perftest::Record& r) {
  if (r.header.misc & PERF_RECORD_MISC_MMAP_DATA) return std::nullopt;
  FileMapping m;
  if (const auto* m1 = std::get_if<MmapRecord>(&r.body)) {
    m = {m1->addr, m1->len, m1->pgoff, m1->filename};
  } else if (const auto* m2 = std::get_if<Mmap2Record>(&r.body)) {
    m = {m2->addr, m2->len, m2->pgoff, m2->filename};
  } else {
    return std::nullopt;
  }
  if (m.file.size() < 2 || m.file[0] != '/' || m.file[1] == '/') return std::nullopt;
  return m;
}

std::string Spec(const FileMapping& m) { return fmt::format("{:#x}:{}:{:#x}:{:#x}", m.addr, m.file, m.pgoff, m.len); }

}  // namespace

std::string ImageSpecOf(const perftest::Record& r) {
  const std::optional<FileMapping> m = ExecFileMapping(r);
  return m ? Spec(*m) : "";
}

namespace {

// The mock's code files beside the capture: capture_path.image-ADDR.bin,
// ADDR in C syntax (0x...), in address order.
std::vector<std::string> SiblingImages(const std::string& capture_path) {
  namespace fs = std::filesystem;
  const fs::path capture(capture_path);
  const std::string prefix = capture.filename().string() + ".image-";
  const fs::path dir = capture.has_parent_path() ? capture.parent_path() : fs::path(".");
  std::vector<std::pair<uint64_t, std::string>> found;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() <= prefix.size() + 4 || name.compare(0, prefix.size(), prefix) != 0 ||
        name.compare(name.size() - 4, 4, ".bin") != 0) {
      continue;
    }
    const std::string addr_text = name.substr(prefix.size(), name.size() - prefix.size() - 4);
    char* end = nullptr;
    errno = 0;
    const uint64_t addr = std::strtoull(addr_text.c_str(), &end, 0);
    if (addr_text.empty() || *end != '\0' || errno != 0) continue;
    found.emplace_back(addr, fmt::format("{:#x}:{}", addr, e.path().string()));
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> specs;
  for (auto& f : found) specs.push_back(std::move(f.second));
  return specs;
}

}  // namespace

Result<CaptureTrace> CaptureTraceOf(const Capture& c, const std::string& capture_path) {
  using R = Result<CaptureTrace>;
  const std::string what = "capture " + capture_path;
  // The side-band's layout: the recorder gives its dummy event the PT
  // event's sample_type and sample_id_all (record.cc).
  SampleLayout layout;
  CaptureTiming timing;
  if (!c.meta_json.empty()) {
    const nlohmann::json meta = nlohmann::json::parse(c.meta_json, nullptr, /*allow_exceptions=*/false);
    if (meta.is_discarded()) return R::Failure(EBADMSG, what + ": META is not JSON");
    auto number = [](const nlohmann::json& o, const char* key) -> uint32_t {
      return o.contains(key) && o[key].is_number_unsigned() ? o[key].get<uint32_t>() : 0;
    };
    if (meta.contains("timing") && meta["timing"].is_object()) {
      const nlohmann::json& tm = meta["timing"];
      timing = {number(tm, "mtc_period"), number(tm, "tsc_ctc_ratio_n"), number(tm, "tsc_ctc_ratio_d"),
                number(tm, "max_nonturbo_ratio")};
    }
    if (meta.contains("attr") && meta["attr"].is_object()) {
      const nlohmann::json& a = meta["attr"];
      if (a.contains("sample_type") && a["sample_type"].is_number_unsigned()) {
        layout.sample_type = a["sample_type"].get<uint64_t>();
      }
      if (a.contains("sample_id_all") && a["sample_id_all"].is_number()) {
        layout.sample_id_all = a["sample_id_all"].get<int>() != 0;
      }
    }
  }
  CaptureTrace t;
  t.timing = timing;
  t.image_specs = SiblingImages(capture_path);
  bool truncated_before = false;  // the last AUX chunk was TRUNCATED
  for (const CaptureChunk& ch : c.chunks) {
    if (ch.type == kCaptureAux) {
      if (ch.payload.size() < 24) {
        return R::Failure(EBADMSG, fmt::format("{}: an AUX chunk of {} bytes (its header is 24)", what, ch.payload.size()));
      }
      uint64_t flags = 0;
      std::memcpy(&flags, ch.payload.data() + 16, sizeof flags);
      const bool has_data = ch.payload.size() > 24;
      // Data after a TRUNCATED chunk does not continue it (an empty chunk
      // between them carries the loss on).
      if (truncated_before && has_data) t.data_lost.push_back(t.trace.size());
      truncated_before = (flags & PERF_AUX_FLAG_TRUNCATED) != 0 || (truncated_before && !has_data);
      t.trace.insert(t.trace.end(), ch.payload.begin() + 24, ch.payload.end());
      ++t.aux_records;
      continue;
    }
    if (ch.type != kCaptureRecord || ch.source != kCaptureSideBand || ch.payload.size() < sizeof(perf_event_header)) {
      continue;
    }
    perf_event_header h;
    std::memcpy(&h, ch.payload.data(), sizeof h);
    if (h.type != PERF_RECORD_MMAP && h.type != PERF_RECORD_MMAP2) continue;
    Result<perftest::Record> rec =
        ParseRecord(layout, std::as_bytes(std::span<const uint8_t>(ch.payload.data(), ch.payload.size())));
    if (!rec.ok()) {
      t.notes.push_back(fmt::format("a side-band MMAP record could not be parsed: {}", rec.ToString()));
      continue;
    }
    const std::optional<FileMapping> m = ExecFileMapping(*rec);
    if (!m) continue;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(m->file, ec)) {
      t.notes.push_back(fmt::format("{} (mapped at {:#x}) is not on this machine: its code is not decoded", m->file,
                                    m->addr));
      continue;
    }
    std::string spec = Spec(*m);
    if (std::find(t.image_specs.begin(), t.image_specs.end(), spec) == t.image_specs.end()) {
      t.image_specs.push_back(std::move(spec));
    }
  }
  return R::Ok(std::move(t), what);
}

}  // namespace perftest::pt
