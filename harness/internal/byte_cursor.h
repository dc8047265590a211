// ByteCursor: reads native-endian fields from a byte span in order, bounds
// checked, remembering the first field that did not fit. Internal to the
// harness: the record parsers (harness/records.cc) and the perf.data reader
// (harness/perf_data) share it.
//
//   internal::ByteCursor c(body);
//   uint64_t nr;
//   std::span<const std::byte> ips;
//   if (!c.Get(&nr, "callchain.nr") || !c.Span(nr * 8, &ips, "callchain.ips")) return Fail(c.error());
//   // c.error(): "callchain.ips needs 128 bytes at offset 16, 40 left"
//
// The success path is a compare and a memcpy per field (no allocation): the
// ring-buffer parse benchmark (bench/ringbuffer_bench.cc) runs on it; the
// message is formatted only when a field does not fit.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace perftest::internal {

class ByteCursor {
 public:
  explicit ByteCursor(std::span<const std::byte> bytes) : bytes_(bytes) {}

  // Reads a trivially copyable T; false (and error() set) when it does not fit.
  template <typename T>
  bool Get(T* out, std::string_view field) {
    if (!Need(sizeof(T), field)) [[unlikely]] return false;
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
  // The next `n` bytes, in place (no copy).
  bool Span(size_t n, std::span<const std::byte>* out, std::string_view field) {
    if (!Need(n, field)) [[unlikely]] return false;
    *out = bytes_.subspan(off_, n);
    off_ += n;
    return true;
  }
  // The next `n` bytes, copied.
  bool Bytes(size_t n, std::vector<std::byte>* out, std::string_view field) {
    std::span<const std::byte> s;
    if (!Span(n, &s, field)) return false;
    out->assign(s.begin(), s.end());
    return true;
  }
  bool Skip(size_t n, std::string_view field) {
    if (!Need(n, field)) [[unlikely]] return false;
    off_ += n;
    return true;
  }
  // A NUL-terminated string in a field of `n` bytes (no NUL: all n bytes).
  bool FixedString(size_t n, std::string* out, std::string_view field) {
    std::span<const std::byte> s;
    if (!Span(n, &s, field)) return false;
    const char* p = reinterpret_cast<const char*>(s.data());
    out->assign(p, strnlen(p, n));
    return true;
  }
  std::span<const std::byte> Rest() const { return bytes_.subspan(off_); }
  size_t offset() const { return off_; }
  size_t remaining() const { return bytes_.size() - off_; }
  bool done() const { return off_ == bytes_.size(); }
  const std::string& error() const { return error_; }
  // Sets the error (first one wins) and returns false.
  bool Fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
    return false;
  }

 private:
  bool Need(size_t n, std::string_view field) {
    if (n <= remaining()) [[likely]] return true;
    return NeedFailed(n, field);
  }
  [[gnu::noinline, gnu::cold]] bool NeedFailed(size_t n, std::string_view field) {
    return Fail(fmt::format("{} needs {} bytes at offset {}, {} left", field, n, off_, remaining()));
  }

  std::span<const std::byte> bytes_;
  size_t off_ = 0;
  std::string error_;
};

}  // namespace perftest::internal
