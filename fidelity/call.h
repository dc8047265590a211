// The call sequences of the differential fidelity check: what the generator
// (generator.h) produces and the executor (executor.h) plays on the kernel and
// on the mock. Calls name backend-specific things abstractly — "this task",
// "event #k of the sequence", "a fd that is not a perf event" — and the
// executor resolves them per backend, so one Sequence means the same thing on
// both.
//
//   Sequence s = GenerateSequence(seed, params);
//   for (const Call& c : s.calls) fmt::print("{}\n", DescribeCall(c));
//   // "perf_event_open(type=1, config=0x2, size=128, disabled, pid=self, cpu=-1, group_fd=-1, flags=0x8)"
//   // "ioctl(event[0], PERF_EVENT_IOC_PERIOD, &1000)"
#pragma once

#include <linux/perf_event.h>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace perftest::fidelity {

// An event of the sequence, chosen when the call runs: index % (number of
// events the mock has open), in open order. Resolving against the mock's
// events keeps the mock side a function of the seed alone.
using EventRef = uint32_t;

// perf_event_open(2) `pid`.
enum class PidArg {
  kSelf,         // 0: the calling task
  kAny,          // -1: any task (CPU-wide)
  kSelfTid,      // the calling task by its tid (Backend::CurrentTask())
  kNonexistent,  // a pid above PID_MAX_LIMIT: no such task
  kNegative,     // -2
};
// perf_event_open(2) `cpu`.
enum class CpuArg {
  kAny,       // -1
  kFirst,     // 0
  kLast,      // ncpus - 1
  kPastLast,  // ncpus (not a CPU)
  kHuge,      // INT_MAX
  kNegative,  // -2
};
// A fd argument (group_fd; SET_OUTPUT's and SET_BPF's argument).
enum class FdArg {
  kNone,     // -1
  kEvent,    // an event of the sequence (FdChoice::event)
  kBadFd,    // a number no fd has (kBadFdNumber)
  kNonPerf,  // an open fd that is not a perf event (/dev/null)
};
struct FdChoice {
  FdArg kind = FdArg::kNone;
  EventRef event = 0;
  bool operator==(const FdChoice&) const = default;
};

// A fd number above any RLIMIT_NOFILE in practice: EBADF on both backends.
inline constexpr int kBadFdNumber = 1 << 20;
// A pid no task can have (PID_MAX_LIMIT is 4 Mi on 64-bit).
inline constexpr int kNonexistentPid = (1 << 30) - 7;

// perf_event_open(attr, pid, cpu, group_fd, flags). The attr buffer is `attr`
// followed by `tail` (bytes past sizeof(perf_event_attr) of this build, for
// attr.size values beyond it); bytes past both are zero.
struct OpenCall {
  perf_event_attr attr{};
  std::vector<uint8_t> tail;
  PidArg pid = PidArg::kSelf;
  CpuArg cpu = CpuArg::kAny;
  FdChoice group;
  uint64_t flags = 0;
};

// read(2) of an event fd into a 4096-byte buffer.
enum class ReadLen {
  kExact,        // the read_format size for the event's group as the sequence built it
  kExactMinus1,  // one byte short: ENOSPC
  kExactMinus8,
  kZero,
  kLarge,        // the whole buffer
};
struct ReadCall {
  EventRef target = 0;
  ReadLen len = ReadLen::kExact;
};

// ioctl(2) on an event fd; how `arg` is formed.
enum class IoctlArg {
  kValue,       // `value` itself (ENABLE flags, REFRESH count, PAUSE_OUTPUT)
  kNull,        // a NULL pointer
  kPtrU64,      // a pointer to a u64 holding `value` (PERIOD), or to room for one (ID)
  kFd,          // a fd, per `fd` (SET_OUTPUT, SET_BPF)
  kMinusOne,    // (unsigned long)-1 (SET_OUTPUT: stop redirecting)
  kString,      // a pointer to `filter` (SET_FILTER)
  kQueryBpf,    // a pointer to a perf_event_query_bpf with ids_len = 0
  kAttrSame,    // a pointer to the target's own open attr (MODIFY_ATTRIBUTES)
  kAttrRetype,  // the same attr with another type (MODIFY_ATTRIBUTES)
};
struct IoctlCall {
  EventRef target = 0;
  unsigned long request = 0;
  IoctlArg arg = IoctlArg::kValue;
  uint64_t value = 0;
  FdChoice fd;
  std::string filter;
};

// mmap(NULL, length, prot, flags, event fd, offset).
struct MmapCall {
  EventRef target = 0;
  uint64_t length = 0;  // bytes
  int prot = 0;
  int flags = 0;
  int64_t offset = 0;
};

// munmap(2) of a mapping the sequence made: index % (mappings the mock has),
// the whole of it or only its first page.
struct MunmapCall {
  uint32_t mapping = 0;
  bool whole = true;
};

struct CloseCall {
  EventRef target = 0;
};

// fcntl(event fd, F_GETFD or F_GETFL).
struct FcntlCall {
  EventRef target = 0;
  int cmd = 0;
};

// poll(2) of one event fd for POLLIN, timeout 0.
struct PollCall {
  EventRef target = 0;
};

// prctl(PR_TASK_PERF_EVENTS_ENABLE or _DISABLE).
struct PrctlCall {
  int option = 0;
};

using Call = std::variant<OpenCall, ReadCall, IoctlCall, MmapCall, MunmapCall, CloseCall, FcntlCall, PollCall,
                          PrctlCall>;

struct Sequence {
  uint64_t seed = 0;  // the sequence seed (SequenceSeed()), enough to regenerate it
  std::vector<Call> calls;
};

// The operation's name as the report groups by: "perf_event_open", "read",
// "ioctl(PERF_EVENT_IOC_PERIOD)", "mmap", "fcntl(F_GETFL)", ...
std::string OpName(const Call& call);

// The call with its arguments in the sequence's own terms (events as
// "event[k]"), e.g. "perf_event_open(type=1, config=0x0, size=128, disabled,
// pid=self, cpu=-1, group_fd=event[0], flags=0x8)". The attr is DescribeAttr()
// plus what it leaves out: bp_type, reserved fields and a non-zero tail.
std::string DescribeCall(const Call& call);

// DescribeAttr() plus bp_type, __reserved_1/2/3 and the non-zero bytes of `tail`
// (offsets from the start of the attr).
std::string DescribeOpenAttr(const perf_event_attr& attr, const std::vector<uint8_t>& tail);

std::string PidArgName(PidArg p);
std::string CpuArgName(CpuArg c);

}  // namespace perftest::fidelity
