#include "mocks/simulated_symbols.h"

#include <algorithm>

namespace perftest::mock {
namespace {

constexpr char kTask[] = "perftest-mock-task";
constexpr char kLibc[] = "libc.so.6";
constexpr char kKernel[] = "[kernel.kallsyms]";

constexpr SimulatedSymbol kSymbols[] = {
    {0x0000555555555a00, 0x100, "touch_pages", kTask},             // kUserTouchIp
    {0x0000555555555b00, 0x100, "spin", kTask},                    // kUserSpinIp
    {0x0000555555555c00, 0x100, "run_workload", kTask},            // callers, kUserStoreIp, kUserLoadIp
    {0x0000555555555e00, 0x080, "main", kTask},
    {0x00007ffff7dc3d00, 0x100, "__libc_start_call_main", kLibc},
    {0x00007ffff7e8b800, 0x040, "syscall", kLibc},                 // kUserSyscallIp
    {0x00007ffff7e9a180, 0x100, "clock_nanosleep", kLibc},         // kUserSleepIp
    {0x00007ffff7e9f780, 0x040, "nanosleep", kLibc},
    {0xffffffff81002b00, 0x100, "start_secondary", kKernel},
    {0xffffffff810a6c00, 0x200, "copy_process", kKernel},          // kKernelForkIp
    {0xffffffff8110c100, 0x100, "do_idle", kKernel},
    {0xffffffff8110c3c0, 0x040, "cpu_startup_entry", kKernel},
    {0xffffffff8118a280, 0x100, "hrtimer_nanosleep", kKernel},
    {0xffffffff8118a480, 0x040, "__x64_sys_clock_nanosleep", kKernel},
    {0xffffffff81f2e880, 0x080, "do_syscall_64", kKernel},
    {0xffffffff81f3c100, 0x600, "__schedule", kKernel},            // kKernelSwitchIp
    {0xffffffff81f3c8c0, 0x040, "schedule", kKernel},
    {0xffffffff81f43b00, 0x080, "do_nanosleep", kKernel},
    {0xffffffff81f4a0a0, 0x080, "default_idle", kKernel},          // kKernelIdleIp
    {0xffffffff81f4a3c0, 0x040, "default_idle_call", kKernel},
    {0xffffffff82000080, 0x080, "entry_SYSCALL_64_after_hwframe", kKernel},
};

}  // namespace

std::span<const SimulatedSymbol> SimulatedSymbols() { return kSymbols; }

const SimulatedSymbol* FindSimulatedSymbol(uint64_t ip) {
  auto it = std::upper_bound(std::begin(kSymbols), std::end(kSymbols), ip,
                             [](uint64_t v, const SimulatedSymbol& s) { return v < s.start; });
  if (it == std::begin(kSymbols)) return nullptr;
  --it;
  return ip - it->start < it->size ? &*it : nullptr;
}

}  // namespace perftest::mock
