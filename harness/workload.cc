#include "harness/workload.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

// The target of Workload::kExecute: never inlined, never folded (the empty
// asm is a side effect), so an HW_BREAKPOINT_X on its address fires once per call.
// Aligned to 16 at every -O level, so its file offset suits a uprobe under any
// arch's UPROBE_SWBP_INSN_SIZE (4 on arm64: the mock's arm64 profile checks it).
extern "C" __attribute__((noinline, used, aligned(16))) void perftest_workload_execute_target() { asm volatile("" ::: "memory"); }

namespace perftest {

uint64_t ExecuteTargetAddress() { return reinterpret_cast<uint64_t>(&perftest_workload_execute_target); }

namespace {

// A workload of `kind` repeated `count` times; the factories below set the rest.
Workload Of(Workload::Kind kind, uint64_t count, std::chrono::nanoseconds duration = std::chrono::nanoseconds{0}) {
  Workload w;
  w.kind = kind;
  w.count = count;
  w.duration = duration;
  return w;
}

}  // namespace

Workload Workload::TouchPages(uint64_t pages, std::chrono::nanoseconds spacing) {
  return Of(Kind::kTouchPages, pages, spacing);
}

Workload Workload::Spin(std::chrono::nanoseconds how_long) { return Of(Kind::kSpin, 0, how_long); }

Workload Workload::Sleep(uint64_t times, std::chrono::nanoseconds each) { return Of(Kind::kSleep, times, each); }

Workload Workload::SetComm(std::string comm) {
  Workload w = Of(Kind::kSetComm, 0);
  w.comm = std::move(comm);
  return w;
}

Workload Workload::MmapExec(uint64_t pages) { return Of(Kind::kMmapExec, pages); }

Workload Workload::Fork(uint64_t children) { return Of(Kind::kFork, children); }

Workload Workload::ForkTouch(uint64_t children, uint64_t pages_each) {
  Workload w = Fork(children);
  w.pages_each = pages_each;
  return w;
}

Workload Workload::Threads(uint64_t threads, uint64_t pages_each) {
  Workload w = Of(Kind::kThreads, threads);
  w.pages_each = pages_each;
  return w;
}

Workload Workload::ForkExec(uint64_t children, std::string path) {
  Workload w = Of(Kind::kForkExec, children);
  w.path = std::move(path);
  return w;
}

Workload Workload::WriteMemory(const volatile void* addr, uint32_t width, uint64_t times) {
  Workload w = Of(Kind::kWriteMemory, times);
  w.addr = reinterpret_cast<uint64_t>(addr);
  w.width = width;
  return w;
}

Workload Workload::ReadMemory(const volatile void* addr, uint32_t width, uint64_t times) {
  Workload w = WriteMemory(addr, width, times);
  w.kind = Kind::kReadMemory;
  return w;
}

Workload Workload::Execute(uint64_t times) { return Of(Kind::kExecute, times); }

Workload Workload::Syscalls(uint64_t times) { return Of(Kind::kSyscalls, times); }

Workload Workload::Instructions(uint64_t instructions) { return Of(Kind::kInstructions, instructions); }

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
