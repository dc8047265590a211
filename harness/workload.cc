#include "harness/workload.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

namespace perftest {

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
      return fmt::format("fork({} children)", count);
  }
  return "workload(?)";
}

}  // namespace perftest
