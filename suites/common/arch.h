// Facts of the machine's architecture that cases check against, by
// MachineInfo::arch (uname machine: the kernel's, or the mock profile's "arch"),
// so that one suite binary asserts the right rule on x86_64, arm64 and riscv64
// and under the mock with any profile.
//
//   const std::string& arch = backend().Machine().arch;
//   EXPECT_LT(ip, UserAddressLimit(arch)) << "a user-space address";
//   EXPECT_EQ(nr, GetpidSyscallNr(arch).value());
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace perftest {

// The end of the address range a process is given without asking for more:
// every user-space address (ip, sp, a mapping) of a task lies below it.
//   x86_64:  DEFAULT_MAP_WINDOW = 2^47 (arch/x86/include/asm/page_64_types.h;
//            addresses above it, with 5-level paging, only for an mmap hint above it)
//   aarch64: DEFAULT_MAP_WINDOW_64 = 2^48 (arch/arm64/include/asm/processor.h;
//            52-bit VA kernels too hand out higher addresses only on a hint)
//   riscv64: 2^47 (arch/riscv/include/asm/processor.h: Sv48's user half;
//            Sv57 kernels keep mmap below it without a hint; Sv39's is lower)
// Other arches: 2^63 (the kernel half of a 64-bit address space starts there).
inline uint64_t UserAddressLimit(std::string_view arch) {
  if (arch == "x86_64" || arch == "riscv64") return uint64_t{1} << 47;
  if (arch == "aarch64") return uint64_t{1} << 48;
  return uint64_t{1} << 63;
}

// The lowest kernel-space address: every kernel text, stack and data address
// (a kernel callchain entry) is at or above it.
//   x86_64:  0xffff800000000000 (4-level paging; Documentation/arch/x86/x86_64/mm.rst)
//   aarch64: 0xffff000000000000 = -2^48 (VA_BITS=48: PAGE_OFFSET, the linear map;
//            the kernel image and modules lie higher; Documentation/arch/arm64/memory.rst)
//   riscv64: 0xff60000000000000 = -(2^55 + 2^53): Sv57's PAGE_OFFSET, the lowest of
//            the three modes (Documentation/arch/riscv/vm-layout.rst)
// Other arches: 2^63.
inline uint64_t KernelAddressFloor(std::string_view arch) {
  if (arch == "x86_64") return 0xffff800000000000ull;
  if (arch == "aarch64") return 0xffff000000000000ull;
  if (arch == "riscv64") return 0xff60000000000000ull;
  return uint64_t{1} << 63;
}

// getpid's system call number, the __syscall_nr that the syscalls:sys_enter_getpid
// and sys_exit_getpid tracepoints record: 39 on x86_64
// (arch/x86/entry/syscalls/syscall_64.tbl), 172 on arm64 and riscv64 (both use the
// generic table, include/uapi/asm-generic/unistd.h __NR_getpid). nullopt elsewhere.
inline std::optional<int64_t> GetpidSyscallNr(std::string_view arch) {
  if (arch == "x86_64") return 39;
  if (arch == "aarch64" || arch == "riscv64") return 172;
  return std::nullopt;
}

}  // namespace perftest
