// The tracepoint PMU (PERF_TYPE_TRACEPOINT) of MockBackend: the tracepoints
// the model can fire, their trace entry layout (tracefs events/<sys>/<name>/format),
// PERF_SAMPLE_RAW data, and event filters (PERF_EVENT_IOC_SET_FILTER).
//
//   const TracepointModel* tp = FindTracepointModel("syscalls:sys_enter_getpid");
//   std::vector<std::byte> raw = TraceRawData(*tp, id, pid, {{"__syscall_nr", 39}});
//   std::unique_ptr<TraceFilter> f;
//   if (int err = TraceFilter::Parse(*tp, "__syscall_nr == 39", &f, &why)) return err;
//   f->Match({{"common_pid", pid}, {"__syscall_nr", 39}});
//
// Which tracepoints exist and their ids come from the arch profile (its
// simulated tracefs); what fires them is the model's (mock_workloads.cc, mock_counting.cc):
//   syscalls:sys_enter_getpid, syscalls:sys_exit_getpid  Workload::Syscalls, once per call,
//                                                         with the task's user regs
//   sched:sched_switch                                    each switch away from the task (Sleep)
//   sched:sched_process_fork                              each fork (Fork), in the parent
//   sched:sched_stat_runtime                              update_curr(): each tick the task runs
//                                                         through, and when it goes to sleep;
//                                                         counts the runtime (ns) since the last
//                                                         update (__perf_count(runtime))
// Sources: kernel/trace/trace_syscalls.c perf_syscall_enter()/exit() (the raw
// size is ALIGN(size + sizeof(u32), sizeof(u64)) - sizeof(u32)),
// kernel/trace/trace_event_perf.c perf_trace_init() (an unknown id is EINVAL),
// kernel/events/core.c perf_tp_event_match() (exclude_kernel drops firings
// with kernel regs; exclude_user is not looked at), and
// kernel/trace/trace_events_filter.c for the filter language.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace perftest::mock {

// One field of a trace entry after the common_* header (offset from the entry's start).
struct TraceField {
  std::string name;
  uint32_t offset = 0;
  uint32_t size = 0;      // 4 or 8 for numbers; the array size for char[N]
  bool is_string = false; // char[N] (inline) or __data_loc char[] (4-byte locator)
  bool data_loc = false;
};

struct TracepointModel {
  std::string name;        // "system:event"
  uint32_t entry_size = 0; // bytes of the trace entry (the struct, with its padding)
  bool user_regs = false;  // fired with the task's user regs (syscalls), else kernel regs
  std::vector<TraceField> fields;
};

// The model's tracepoints by "system:event"; nullptr for one it cannot fire.
const TracepointModel* FindTracepointModel(std::string_view name);
// Every tracepoint the model can fire (for the profile loader's message).
std::vector<std::string> ModelledTracepoints();

// Field values of one firing: numbers (common_pid and the event's numeric
// fields) and strings (comm fields).
struct TraceValues {
  std::map<std::string, int64_t> numbers;
  std::map<std::string, std::string> strings;
};

// PERF_SAMPLE_RAW bytes of one firing: the trace entry {u16 common_type = id,
// u8 common_flags = 0, u8 common_preempt_count = 1, s32 common_pid, fields},
// zero-padded so that the u32 size word plus the data is a multiple of 8.
std::vector<std::byte> TraceRawData(const TracepointModel& tp, uint16_t id, const TraceValues& values);

// A compiled event filter: `field op number` terms (ops ==, !=, <, <=, >, >=,
// & — bits in common), combined with &&, || (&& binds tighter), ! and
// parentheses; numbers decimal or 0x hex, possibly negative.
class TraceFilter {
 public:
  // Errors (as Linux 6.18 returns them from PERF_EVENT_IOC_SET_FILTER):
  //   ENOENT  an unmatched '('        EPERM  an unmatched ')'
  //   EINVAL  anything else that is not a filter: empty, a bare value, an
  //           unknown field, a missing or unknown operator, a non-number,
  //           a string field (not modelled)
  static int Parse(const TracepointModel& tp, std::string_view text, std::unique_ptr<TraceFilter>* out,
                   std::string* why);
  ~TraceFilter();
  bool Match(const TraceValues& values) const;

  struct Node;

 private:
  TraceFilter() = default;
  std::unique_ptr<Node> root_;
};

}  // namespace perftest::mock
