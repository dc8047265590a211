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
#include <cstdint>
#include <cstring>
#include <new>
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

// The call as it was made, for messages: either its text, or a copy of its
// arguments and the function that formats them, run the first time the text
// is asked for (str()). A backend describes every call this way, so a call
// that succeeds and is never printed costs no formatting and no allocation
// (the benchmark bench/mock_bench.cc measures exactly that path). Converts
// from std::string and const char*, so Result<T>::Ok(v, "read(fd=5, len=8)")
// keeps working.
//
//   struct ReadArgs { int fd; size_t len; };
//   std::string FormatRead(const ReadArgs& a);  // "read(fd=5, len=8)"
//   CallDescription d = CallDescription::Deferred<FormatRead>(ReadArgs{5, 8});
//   d.str();  // formats now, once
class CallDescription {
 public:
  CallDescription() noexcept {}
  CallDescription(std::string text) { SetText(std::move(text)); }
  CallDescription(const char* text) { SetText(std::string(text)); }

  // `Format(args)` gives the text on first use. Args must be trivially
  // copyable; they are copied (inline up to kInlineArgs bytes — enough for
  // perf_event_open's attr and arguments — else to the heap), so they may
  // point at nothing the caller owns.
  template <auto Format, typename Args>
  static CallDescription Deferred(const Args& args) {
    static_assert(std::is_trivially_copyable_v<Args>);
    CallDescription d;
    if constexpr (sizeof(Args) <= kInlineArgs && alignof(Args) <= alignof(uint64_t)) {
      // A copy construction, not a memcpy: the compiler stores the fields
      // straight into args_, with no temporary read back as a whole.
      ::new (static_cast<void*>(d.args_)) Args(args);
      d.args_size_ = sizeof(Args);
      d.format_ = [](const CallDescription& c) -> std::string {
        Args a;
        std::memcpy(&a, c.args_, sizeof a);
        return Format(a);
      };
    } else {
      d.big_args_ = ::operator new(sizeof(Args));
      d.args_size_ = sizeof(Args);
      std::memcpy(d.big_args_, &args, sizeof args);
      d.format_ = [](const CallDescription& c) -> std::string {
        Args a;
        std::memcpy(&a, c.big_args_, sizeof a);
        return Format(a);
      };
    }
    return d;
  }

  // Copies and moves copy the arguments, or the text once there is one.
  CallDescription(const CallDescription& o) { CopyFrom(o); }
  CallDescription(CallDescription&& o) noexcept { MoveFrom(o); }
  CallDescription& operator=(const CallDescription& o) {
    if (this != &o) {
      Destroy();
      CopyFrom(o);
    }
    return *this;
  }
  CallDescription& operator=(CallDescription&& o) noexcept {
    if (this != &o) {
      Destroy();
      MoveFrom(o);
    }
    return *this;
  }
  ~CallDescription() { Destroy(); }

  // The text ("" when none was given). Not thread-safe on first use.
  const std::string& str() const {
    if (text_ == nullptr) SetText(format_ != nullptr ? format_(*this) : std::string());
    return *text_;
  }

 private:
  // Arguments up to this size are kept inline (perf_event_open's are 152
  // bytes with the attr of today's UAPI); copies of small ones copy only
  // kSmallArgs bytes.
  static constexpr size_t kInlineArgs = 160;
  static constexpr size_t kSmallArgs = 32;

  // The text is on the heap, made only once there is one: a deferred
  // description is moved and destroyed without touching a std::string.
  void SetText(std::string t) const { text_ = new std::string(std::move(t)); }
  void CopyArgs(const CallDescription& o) noexcept {
    format_ = o.format_;
    args_size_ = o.args_size_;
    if (o.args_size_ <= kSmallArgs) [[likely]] {
      std::memcpy(args_, o.args_, kSmallArgs);
    } else if (o.big_args_ == nullptr) {
      std::memcpy(args_, o.args_, kInlineArgs);
    }
  }
  void CopyFrom(const CallDescription& o) {
    CopyArgs(o);
    if (o.big_args_ != nullptr) [[unlikely]] {
      big_args_ = ::operator new(o.args_size_);
      std::memcpy(big_args_, o.big_args_, o.args_size_);
    }
    if (o.text_ != nullptr) [[unlikely]] SetText(*o.text_);
  }
  void MoveFrom(CallDescription& o) noexcept {
    CopyArgs(o);
    big_args_ = o.big_args_;
    text_ = o.text_;
    o.big_args_ = nullptr;
    o.text_ = nullptr;
  }
  void Destroy() noexcept {
    if (big_args_ != nullptr || text_ != nullptr) [[unlikely]] DestroySlow();
  }
  [[gnu::noinline]] void DestroySlow() noexcept {
    ::operator delete(big_args_);
    big_args_ = nullptr;
    delete text_;
    text_ = nullptr;
  }

  std::string (*format_)(const CallDescription&) = nullptr;
  mutable std::string* text_ = nullptr;  // the text once made or given, else nullptr
  void* big_args_ = nullptr;             // Args over kInlineArgs bytes (operator new), else nullptr
  size_t args_size_ = 0;                 // sizeof(Args)
  // Args up to kInlineArgs bytes; uninitialized past args_size_ (copies of
  // small args copy kSmallArgs bytes, which may include some of that).
  alignas(uint64_t) unsigned char args_[kInlineArgs];
};

template <typename T>
class [[nodiscard]] Result {
  using Stored = std::conditional_t<std::is_void_v<T>, internal::Monostate, T>;

 public:
  // Success. `call` is the call as it was made, e.g. "read(fd=5, len=32)".
  template <typename U = Stored>
  static Result Ok(U&& value, const CallDescription& call = {}) {
    Result r(call);
    r.value_.emplace(std::forward<U>(value));
    return r;
  }
  template <typename U = Stored>
  static Result Ok(U&& value, CallDescription&& call) {
    Result r(std::move(call));
    r.value_.emplace(std::forward<U>(value));
    return r;
  }
  static Result Ok() requires std::is_void_v<T> { return Ok(internal::Monostate{}); }
  // Success, with the call made in place by `make_call()`, a callable that
  // returns the CallDescription (e.g. [&] { return ReadCall(fd, len); }):
  // the description is built straight into the Result, not moved there. For
  // a backend's hottest paths (bench/mock_bench.cc).
  template <typename U, typename MakeCall>
    requires std::is_invocable_r_v<CallDescription, MakeCall&>
  static Result OkWith(U&& value, MakeCall&& make_call) {
    return Result(InPlaceCall{}, std::forward<U>(value), make_call);
  }
  template <typename MakeCall>
    requires std::is_void_v<T> && std::is_invocable_r_v<CallDescription, MakeCall&>
  static Result OkWith(MakeCall&& make_call) {
    return Result(InPlaceCall{}, internal::Monostate{}, make_call);
  }

  // Failure with a positive errno value (EINVAL, not -EINVAL).
  static Result Failure(int err, const CallDescription& call = {}) {
    Result r(call);
    r.error_ = err;
    return r;
  }
  static Result Failure(int err, CallDescription&& call) {
    Result r(std::move(call));
    r.error_ = err;
    return r;
  }

  // Converts a failed Result<U> into a failed Result<T> with the same errno and call.
  template <typename U>
  static Result FailureFrom(const Result<U>& other) {
    return Failure(other.error(), other.call_description());
  }

  bool ok() const { return value_.has_value(); }
  // The errno of a failure; 0 on success.
  int error() const { return ok() ? 0 : error_; }
  // The call as it was made (formatted on first use).
  const std::string& call() const { return call_.str(); }
  // The same, unformatted: to pass on to another Result without formatting it.
  const CallDescription& call_description() const { return call_; }

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
  struct InPlaceCall {};
  template <typename U, typename MakeCall>
  Result(InPlaceCall, U&& value, MakeCall& make_call)
      : value_(std::in_place, std::forward<U>(value)), call_(make_call()) {}
  explicit Result(const CallDescription& call) : call_(call) {}
  explicit Result(CallDescription&& call) : call_(std::move(call)) {}
  void CheckOk() const;

  std::optional<Stored> value_;
  int error_ = 0;
  CallDescription call_;
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
  if (!ok()) internal::DieOnBadAccess(call_.str(), error_);
}

template <typename T>
std::string Result<T>::ToString() const {
  if (!ok()) return internal::DescribeFailure(call_.str(), error_);
  return internal::DescribeSuccess(call_.str(), internal::ValueToString(*value_));
}

}  // namespace perftest
