#include "fidelity/call.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#include <vector>

#include "harness/attr.h"
#include "harness/describe.h"

namespace perftest::fidelity {
namespace {

std::string FdChoiceName(const FdChoice& f) {
  switch (f.kind) {
    case FdArg::kNone: return "-1";
    case FdArg::kEvent: return fmt::format("event[{}]", f.event);
    case FdArg::kBadFd: return fmt::format("{} (no such fd)", kBadFdNumber);
    case FdArg::kNonPerf: return "/dev/null";
  }
  return "?";
}

std::string ProtName(int prot) {
  std::string p;
  auto add = [&](int bit, const char* name) {
    if (prot & bit) p += p.empty() ? name : std::string("|") + name;
  };
  add(PROT_READ, "PROT_READ");
  add(PROT_WRITE, "PROT_WRITE");
  add(PROT_EXEC, "PROT_EXEC");
  return p.empty() ? "PROT_NONE" : p;
}

std::string ReadLenName(ReadLen l) {
  switch (l) {
    case ReadLen::kExact: return "exact";
    case ReadLen::kExactMinus1: return "exact-1";
    case ReadLen::kExactMinus8: return "exact-8";
    case ReadLen::kZero: return "0";
    case ReadLen::kLarge: return "4096";
  }
  return "?";
}

std::string IoctlArgText(const IoctlCall& c) {
  switch (c.arg) {
    case IoctlArg::kValue: return fmt::format("{:#x}", c.value);
    case IoctlArg::kNull: return "NULL";
    case IoctlArg::kPtrU64: return fmt::format("&{:#x}", c.value);
    case IoctlArg::kFd: return FdChoiceName(c.fd);
    case IoctlArg::kMinusOne: return "-1";
    case IoctlArg::kString: return fmt::format("\"{}\"", c.filter);
    case IoctlArg::kQueryBpf: return "&{ids_len=0}";
    case IoctlArg::kAttrSame: return "&(its own attr)";
    case IoctlArg::kAttrRetype: return "&(its own attr, another type)";
  }
  return "?";
}

}  // namespace

std::string PidArgName(PidArg p) {
  switch (p) {
    case PidArg::kSelf: return "0";
    case PidArg::kAny: return "-1";
    case PidArg::kSelfTid: return "self-tid";
    case PidArg::kNonexistent: return fmt::format("{} (no such task)", kNonexistentPid);
    case PidArg::kNegative: return "-2";
  }
  return "?";
}

std::string CpuArgName(CpuArg c) {
  switch (c) {
    case CpuArg::kAny: return "-1";
    case CpuArg::kFirst: return "0";
    case CpuArg::kLast: return "ncpus-1";
    case CpuArg::kPastLast: return "ncpus";
    case CpuArg::kHuge: return "INT_MAX";
    case CpuArg::kNegative: return "-2";
  }
  return "?";
}

std::string DescribeOpenAttr(const perf_event_attr& a, const std::vector<uint8_t>& tail) {
  std::string s = DescribeAttr(a);
  if (a.bp_type != 0) s += fmt::format(", bp_type={:#x}", a.bp_type);
  if (a.__reserved_1 != 0) s += fmt::format(", __reserved_1={:#x}", static_cast<uint64_t>(a.__reserved_1));
  if (a.__reserved_2 != 0) s += fmt::format(", __reserved_2={:#x}", a.__reserved_2);
  if (a.__reserved_3 != 0) s += fmt::format(", __reserved_3={:#x}", a.__reserved_3);
  std::vector<std::string> nz;
  for (size_t i = 0; i < tail.size(); ++i) {
    if (tail[i] != 0) nz.push_back(fmt::format("[{}]={:#x}", sizeof(perf_event_attr) + i, tail[i]));
  }
  if (!nz.empty()) s += fmt::format(", tail {}", fmt::join(nz, " "));
  return s;
}

std::string OpName(const Call& call) {
  struct Visitor {
    std::string operator()(const OpenCall&) const { return "perf_event_open"; }
    std::string operator()(const ReadCall&) const { return "read"; }
    std::string operator()(const IoctlCall& c) const {
      return fmt::format("ioctl({})", IoctlRequestName(c.request));
    }
    std::string operator()(const MmapCall&) const { return "mmap"; }
    std::string operator()(const MunmapCall&) const { return "munmap"; }
    std::string operator()(const CloseCall&) const { return "close"; }
    std::string operator()(const FcntlCall& c) const {
      return c.cmd == F_GETFD ? "fcntl(F_GETFD)" : c.cmd == F_GETFL ? "fcntl(F_GETFL)" : fmt::format("fcntl({})", c.cmd);
    }
    std::string operator()(const PollCall&) const { return "poll"; }
    std::string operator()(const PrctlCall& c) const { return DescribePrctl(c.option); }
  };
  return std::visit(Visitor{}, call);
}

std::string DescribeCall(const Call& call) {
  struct Visitor {
    std::string operator()(const OpenCall& c) const {
      return fmt::format("perf_event_open({}, pid={}, cpu={}, group_fd={}, flags={:#x})", DescribeOpenAttr(c.attr, c.tail),
                         PidArgName(c.pid), CpuArgName(c.cpu), FdChoiceName(c.group), c.flags);
    }
    std::string operator()(const ReadCall& c) const {
      return fmt::format("read(event[{}], len={})", c.target, ReadLenName(c.len));
    }
    std::string operator()(const IoctlCall& c) const {
      return fmt::format("ioctl(event[{}], {}, {})", c.target, IoctlRequestName(c.request), IoctlArgText(c));
    }
    std::string operator()(const MmapCall& c) const {
      const char* f = (c.flags & MAP_SHARED) ? "MAP_SHARED" : (c.flags & MAP_PRIVATE) ? "MAP_PRIVATE" : "0";
      return fmt::format("mmap(NULL, {}, {}, {}, event[{}], {})", c.length, ProtName(c.prot), f, c.target, c.offset);
    }
    std::string operator()(const MunmapCall& c) const {
      return fmt::format("munmap(mapping[{}], {})", c.mapping, c.whole ? "whole" : "first page");
    }
    std::string operator()(const CloseCall& c) const { return fmt::format("close(event[{}])", c.target); }
    std::string operator()(const FcntlCall& c) const {
      return fmt::format("fcntl(event[{}], {})", c.target, c.cmd == F_GETFD ? "F_GETFD" : "F_GETFL");
    }
    std::string operator()(const PollCall& c) const {
      return fmt::format("poll(event[{}], POLLIN, timeout=0)", c.target);
    }
    std::string operator()(const PrctlCall& c) const { return DescribePrctl(c.option); }
  };
  return std::visit(Visitor{}, call);
}

}  // namespace perftest::fidelity
