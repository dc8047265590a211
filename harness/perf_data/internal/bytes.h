// Bounds-checked little helpers for the perf.data reader and writer: a
// cursor that reads native-endian fields from a byte span and remembers the
// first field that did not fit, and an appender for the writer. Internal to
// harness/perf_data (not a public API).
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace perftest::perf_data::internal {

class ByteCursor {
 public:
  explicit ByteCursor(std::span<const std::byte> bytes) : bytes_(bytes) {}

  // Reads a trivially copyable T; false (and error() set) when it does not fit.
  template <typename T>
  bool Get(T* out, std::string_view field) {
    if (!Need(sizeof(T), field)) return false;
    std::memcpy(out, bytes_.data() + off_, sizeof(T));
    off_ += sizeof(T);
    return true;
  }
  bool Span(size_t n, std::span<const std::byte>* out, std::string_view field) {
    if (!Need(n, field)) return false;
    *out = bytes_.subspan(off_, n);
    off_ += n;
    return true;
  }
  bool Bytes(size_t n, std::vector<std::byte>* out, std::string_view field) {
    std::span<const std::byte> s;
    if (!Span(n, &s, field)) return false;
    out->assign(s.begin(), s.end());
    return true;
  }
  bool Skip(size_t n, std::string_view field) {
    if (!Need(n, field)) return false;
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
    if (n <= remaining()) return true;
    return Fail(fmt::format("{} needs {} bytes at +{:#x}, {} left", field, n, off_, remaining()));
  }

  std::span<const std::byte> bytes_;
  size_t off_ = 0;
  std::string error_;
};

class ByteAppender {
 public:
  explicit ByteAppender(std::vector<std::byte>* out) : out_(out) {}
  template <typename T>
  void Put(const T& v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    out_->insert(out_->end(), p, p + sizeof v);
  }
  void Bytes(std::span<const std::byte> b) { out_->insert(out_->end(), b.begin(), b.end()); }
  // `s`, NUL, zeros to `n` bytes in all (n > s.size(); s is cut to n-1).
  void FixedString(std::string_view s, size_t n) {
    const size_t at = out_->size();
    out_->resize(at + n, std::byte{0});
    std::memcpy(out_->data() + at, s.data(), std::min(s.size(), n - 1));
  }
  void Zeros(size_t n) { out_->resize(out_->size() + n, std::byte{0}); }
  void PadTo8() { out_->resize((out_->size() + 7) & ~size_t{7}, std::byte{0}); }
  size_t size() const { return out_->size(); }
  std::vector<std::byte>& out() { return *out_; }

 private:
  std::vector<std::byte>* out_;
};

}  // namespace perftest::perf_data::internal
