// Bounds-checked little helpers for the perf.data reader and writer: a
// cursor that reads native-endian fields from a byte span and remembers the
// first field that did not fit (harness/internal/byte_cursor.h), and an
// appender for the writer. Internal to harness/perf_data (not a public API).
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "harness/internal/byte_cursor.h"

namespace perftest::perf_data::internal {

// The cursor is the harness's one (harness/internal/byte_cursor.h), shared
// with the ring-buffer record parsers.
using perftest::internal::ByteCursor;

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
