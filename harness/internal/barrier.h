// The ring-buffer memory ordering, written down once (<linux/perf_event.h>
// struct perf_event_mmap_page, data_head/data_tail comment): the reader loads
// data_head with acquire ordering before reading data (the UAPI's smp_rmb()),
// and stores data_tail with release ordering after it is done with the data
// (the UAPI's smp_mb()). The writer (the kernel, or MockBackend) mirrors this.
#pragma once

#include <linux/types.h>

#include <cstdint>

namespace perftest::internal {

inline uint64_t LoadAcquire(const volatile __u64* p) {
  return __atomic_load_n(const_cast<const __u64*>(p), __ATOMIC_ACQUIRE);
}

inline void StoreRelease(volatile __u64* p, uint64_t v) {
  __atomic_store_n(const_cast<__u64*>(p), v, __ATOMIC_RELEASE);
}

}  // namespace perftest::internal
