// The perf fields of a SIGTRAP siginfo (si_code TRAP_PERF), which glibc's
// siginfo_t does not name: si_perf_data, si_perf_type and si_perf_flags
// follow si_addr in the kernel's _sigfault union (include/uapi/asm-generic/
// siginfo.h, `struct { unsigned long _data; __u32 _type; __u32 _flags; } _perf`,
// filled by kernel/signal.c send_sig_perf() with attr.sig_data and attr.type).
//
//   void Handler(int, siginfo_t* si, void*) { data = SigPerfData(*si); }
#pragma once

#include <signal.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace perftest {

// Offset of _sigfault._perf._data: the union after the 8-byte si_addr.
inline constexpr size_t kSigPerfDataOffset = offsetof(siginfo_t, si_addr) + sizeof(void*);
inline constexpr size_t kSigPerfTypeOffset = kSigPerfDataOffset + sizeof(unsigned long);
inline constexpr size_t kSigPerfFlagsOffset = kSigPerfTypeOffset + sizeof(uint32_t);

// si_code of a perf sigtrap (asm-generic/siginfo.h TRAP_PERF).
inline constexpr int kTrapPerf = 6;

inline uint64_t SigPerfData(const siginfo_t& si) {
  unsigned long v;
  std::memcpy(&v, reinterpret_cast<const char*>(&si) + kSigPerfDataOffset, sizeof v);
  return v;
}

inline uint32_t SigPerfType(const siginfo_t& si) {
  uint32_t v;
  std::memcpy(&v, reinterpret_cast<const char*>(&si) + kSigPerfTypeOffset, sizeof v);
  return v;
}

inline uint32_t SigPerfFlags(const siginfo_t& si) {
  uint32_t v;
  std::memcpy(&v, reinterpret_cast<const char*>(&si) + kSigPerfFlagsOffset, sizeof v);
  return v;
}

// Fills the perf fields (for a backend that delivers a perf SIGTRAP itself).
inline void SetSigPerf(siginfo_t* si, uint64_t data, uint32_t type, uint32_t flags) {
  const unsigned long d = static_cast<unsigned long>(data);
  std::memcpy(reinterpret_cast<char*>(si) + kSigPerfDataOffset, &d, sizeof d);
  std::memcpy(reinterpret_cast<char*>(si) + kSigPerfTypeOffset, &type, sizeof type);
  std::memcpy(reinterpret_cast<char*>(si) + kSigPerfFlagsOffset, &flags, sizeof flags);
}

}  // namespace perftest
