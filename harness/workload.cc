#include "harness/workload.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

// The target of Workload::kExecute: never inlined, never folded (the empty
// asm is a side effect), so an HW_BREAKPOINT_X on its address fires once per call.
extern "C" __attribute__((noinline, used)) void perftest_workload_execute_target() { asm volatile("" ::: "memory"); }

namespace perftest {

uint64_t ExecuteTargetAddress() { return reinterpret_cast<uint64_t>(&perftest_workload_execute_target); }

Workload Workload::TouchPages(uint64_t pages, std::chrono::nanoseconds spacing) {
  Workload w;
  w.kind = Kind::kTouchPages;
  w.count = pages;
  w.duration = spacing;
  return w;
}

Workload Workload::Spin(std::chrono::nanoseconds how_long) {
  Workload w;
  w.kind = Kind::kSpin;
  w.duration = how_long;
  return w;
}

Workload Workload::Sleep(uint64_t times, std::chrono::nanoseconds each) {
  Workload w;
  w.kind = Kind::kSleep;
  w.count = times;
  w.duration = each;
  return w;
}

Workload Workload::SetComm(std::string comm) {
  Workload w;
  w.kind = Kind::kSetComm;
  w.comm = std::move(comm);
  return w;
}

Workload Workload::MmapExec(uint64_t pages) {
  Workload w;
  w.kind = Kind::kMmapExec;
  w.count = pages;
  return w;
}

Workload Workload::Fork(uint64_t children) {
  Workload w;
  w.kind = Kind::kFork;
  w.count = children;
  return w;
}

Workload Workload::ForkTouch(uint64_t children, uint64_t pages_each) {
  Workload w = Fork(children);
  w.pages_each = pages_each;
  return w;
}

Workload Workload::Threads(uint64_t threads, uint64_t pages_each) {
  Workload w;
  w.kind = Kind::kThreads;
  w.count = threads;
  w.pages_each = pages_each;
  return w;
}

Workload Workload::ForkExec(uint64_t children, std::string path) {
  Workload w;
  w.kind = Kind::kForkExec;
  w.count = children;
  w.path = std::move(path);
  return w;
}

Workload Workload::WriteMemory(const volatile void* addr, uint32_t width, uint64_t times) {
  Workload w;
  w.kind = Kind::kWriteMemory;
  w.addr = reinterpret_cast<uint64_t>(addr);
  w.width = width;
  w.count = times;
  return w;
}

Workload Workload::ReadMemory(const volatile void* addr, uint32_t width, uint64_t times) {
  Workload w = WriteMemory(addr, width, times);
  w.kind = Kind::kReadMemory;
  return w;
}

Workload Workload::Execute(uint64_t times) {
  Workload w;
  w.kind = Kind::kExecute;
  w.count = times;
  return w;
}

Workload Workload::Syscalls(uint64_t times) {
  Workload w;
  w.kind = Kind::kSyscalls;
  w.count = times;
  return w;
}

Workload Workload::Instructions(uint64_t instructions) {
  Workload w;
  w.kind = Kind::kInstructions;
  w.count = instructions;
  return w;
}

Workload Workload::Exec(std::string path) { return ForkExec(1, std::move(path)); }

std::string Workload::Describe() const {
  switch (kind) {
    case Kind::kTouchPages:
      return fmt::format("touch_pages({}, spacing={})", count, duration);
    case Kind::kSpin:
      return fmt::format("spin({})", duration);
    case Kind::kSleep:
      return fmt::format("sleep({} x {})", count, duration);
    case Kind::kSetComm:
      return fmt::format("set_comm(\"{}\")", comm);
    case Kind::kMmapExec:
      return fmt::format("mmap_exec({} pages)", count);
    case Kind::kFork:
      if (pages_each != 0) return fmt::format("fork({} children, {} pages each)", count, pages_each);
      return fmt::format("fork({} children)", count);
    case Kind::kThreads:
      return fmt::format("threads({} threads, {} pages each)", count, pages_each);
    case Kind::kForkExec:
      return fmt::format("fork_exec({} children, \"{}\")", count, path);
    case Kind::kWriteMemory:
      return fmt::format("write_memory({:#x}, width={}, {} times)", addr, width, count);
    case Kind::kReadMemory:
      return fmt::format("read_memory({:#x}, width={}, {} times)", addr, width, count);
    case Kind::kExecute:
      return fmt::format("execute({:#x}, {} times)", ExecuteTargetAddress(), count);
    case Kind::kSyscalls:
      return fmt::format("syscalls(getpid, {} times)", count);
    case Kind::kInstructions:
      return fmt::format("instructions({})", count);
  }
  return "workload(?)";
}

}  // namespace perftest
