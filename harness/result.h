// Result<T>: the outcome of a call across the Backend seam — a value, or an
// errno exactly as the kernel (or the mock) returned it, together with the call
// as it was made.
//
//   Result<int> fd = backend.PerfEventOpen(attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
//   if (!fd.ok()) return fd.error();              // e.g. ENOENT
//   fmt::print("{}\n", fd.ToString());            // "perf_event_open(type=1, ...) = 5"
//
// Nothing throws across the seam (DESIGN.md "Backend: the seam"); errors are
// values, as in gVisor's PosixErrorOr<T> (STYLE.md).
#pragma once

#include <cerrno>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace perftest {

// "EINVAL" for EINVAL, "E<unknown N>" for an unknown value. Never null.
std::string ErrnoName(int err);

namespace internal {
struct Monostate {};
}  // namespace internal

template <typename T>
class [[nodiscard]] Result {
  using Stored = std::conditional_t<std::is_void_v<T>, internal::Monostate, T>;

 public:
  // Success. `call` is the call as it was made, e.g. "read(fd=5, len=32)".
  template <typename U = Stored>
  static Result Ok(U&& value, std::string call = {}) {
    Result r;
    r.value_.emplace(std::forward<U>(value));
    r.call_ = std::move(call);
    return r;
  }
  static Result Ok() requires std::is_void_v<T> { return Ok(internal::Monostate{}); }

  // Failure with a positive errno value (EINVAL, not -EINVAL).
  static Result Failure(int err, std::string call = {}) {
    Result r;
    r.error_ = err;
    r.call_ = std::move(call);
    return r;
  }

  // Converts a failed Result<U> into a failed Result<T> with the same errno and call.
  template <typename U>
  static Result FailureFrom(const Result<U>& other) {
    return Failure(other.error(), other.call());
  }

  bool ok() const { return value_.has_value(); }
  // The errno of a failure; 0 on success.
  int error() const { return ok() ? 0 : error_; }
  const std::string& call() const { return call_; }

  // Precondition: ok(). Aborts with the call description otherwise.
  const Stored& value() const& { CheckOk(); return *value_; }
  Stored& value() & { CheckOk(); return *value_; }
  Stored&& value() && { CheckOk(); return std::move(*value_); }
  const Stored& operator*() const& { return value(); }
  Stored& operator*() & { return value(); }
  const Stored* operator->() const { return &value(); }
  Stored* operator->() { return &value(); }

  // "CALL = VALUE" or "CALL = -ENAME (strerror)" — the form matchers print.
  std::string ToString() const;

 private:
  Result() = default;
  void CheckOk() const;

  std::optional<Stored> value_;
  int error_ = 0;
  std::string call_;
};

namespace internal {
[[noreturn]] void DieOnBadAccess(const std::string& call, int err);
std::string DescribeFailure(const std::string& call, int err);
std::string DescribeSuccess(const std::string& call, const std::string& value);
std::string ValueToString(long long v);
std::string ValueToString(unsigned long long v);
std::string ValueToString(const void* p);
template <typename V>
std::string ValueToString(const V&) { return "ok"; }
inline std::string ValueToString(int v) { return ValueToString(static_cast<long long>(v)); }
inline std::string ValueToString(long v) { return ValueToString(static_cast<long long>(v)); }
inline std::string ValueToString(unsigned v) { return ValueToString(static_cast<unsigned long long>(v)); }
inline std::string ValueToString(unsigned long v) { return ValueToString(static_cast<unsigned long long>(v)); }
inline std::string ValueToString(void* p) { return ValueToString(static_cast<const void*>(p)); }
inline std::string ValueToString(Monostate) { return "0"; }
}  // namespace internal

template <typename T>
void Result<T>::CheckOk() const {
  if (!ok()) internal::DieOnBadAccess(call_, error_);
}

template <typename T>
std::string Result<T>::ToString() const {
  if (!ok()) return internal::DescribeFailure(call_, error_);
  return internal::DescribeSuccess(call_, internal::ValueToString(*value_));
}

}  // namespace perftest
