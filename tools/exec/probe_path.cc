#include "tools/exec/probe_path.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "tools/exec/tracee.h"

namespace perftest::exec {

ProbePathRelay::ProbePathRelay() {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_ = 2 * kPathMax + page;
  void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    size_ = 0;
    return;
  }
  region_ = static_cast<char*>(p);
  if (mprotect(region_ + 2 * kPathMax, page, PROT_NONE) != 0) {
    munmap(region_, size_);
    region_ = nullptr;
    size_ = 0;
  }
}

ProbePathRelay::~ProbePathRelay() {
  if (region_ != nullptr) munmap(region_, size_);
}

uint64_t ProbePathRelay::Relay(pid_t tid, uint64_t addr) {
  if (addr == 0 || region_ == nullptr) return addr;
  // Read as strndup_user() does: up to kPathMax bytes, stopping at a NUL or
  // at the first byte that faults (page by page: a path may end just before
  // an unmapped page).
  char bytes[kPathMax];
  size_t n = 0;
  bool nul = false;
  uint64_t at = addr;
  while (n < kPathMax && !nul) {
    const size_t to_page = 4096 - (at % 4096);
    const size_t want = std::min(to_page, kPathMax - n);
    if (!ReadMemory(tid, at, bytes + n, want)) break;
    const void* z = std::memchr(bytes + n, '\0', want);
    n += z != nullptr ? static_cast<size_t>(static_cast<const char*>(z) - (bytes + n)) + 1 : want;
    nul = z != nullptr;
    at += want;
  }
  // The bytes end at the guard page: one more byte than was read faults.
  char* start = region_ + 2 * kPathMax - n;
  std::memcpy(start, bytes, n);
  return reinterpret_cast<uint64_t>(start);
}

}  // namespace perftest::exec
