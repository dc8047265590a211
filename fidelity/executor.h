// The executor of the differential fidelity check: plays one call sequence on
// two backends, call by call, and records both outcomes.
//
//   InstallSigtrapHandler();                          // before any kernel run
//   std::unique_ptr<Backend> kernel = MakeKernelBackend();
//   std::unique_ptr<Backend> mock = MakeMockBackend(profile);   // fresh per sequence
//   SequenceOutcome out = RunSequence(seq, *kernel, *mock, params);
//   for (const CallRecord& r : out.calls) if (!Agree(r)) ...   // compare.h
//
// Resolving the sequence's abstract arguments: "event[k]" is the k-th
// (modulo) event the *mock* has open, so the calls the mock sees depend only
// on the sequence and the mock's own answers — the mock side of a run is a
// function of the seed. When that event did not open on the kernel (an
// earlier disagreement), the call runs on the mock only and is recorded as
// kDependent, not compared; so is a call on an event whose group gained a
// member on one backend only. pid "self" is each backend's CurrentTask(); cpu
// "ncpus" is each backend's Machine().ncpus.
//
// Cleanup: every fd the sequence opened on the kernel is closed and every
// kernel mapping unmapped before RunSequence returns; mock mappings are
// unmapped through the mock, whose fds go with it (use a fresh mock per
// sequence).
//
// Compared per call: success or failure and the errno; on E2BIG the size
// written back into attr.size; for a successful read the byte count and, with
// PERF_FORMAT_GROUP, nr; for ioctl, fcntl and prctl the return value; for a
// readable mmap the layout of perf_event_mmap_page (version, compat_version,
// data/aux offset and size, capability bits, index, pmc_width); for poll the
// POLLHUP/POLLERR/POLLNVAL bits. Never compared: counts, times, ids, fd
// numbers, POLLIN (they legitimately differ).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fidelity/call.h"
#include "fidelity/generator.h"
#include "harness/backend.h"

namespace perftest::fidelity {

// What one backend answered to one call.
struct Outcome {
  bool ran = false;   // false: not issued on this backend (see CallStatus)
  bool ok = false;
  int err = 0;        // errno when !ok
  // What is compared besides ok/err: "24 bytes, nr=2" (read), "0" (ioctl
  // return), "attr.size=136" (E2BIG write-back), the user page's layout
  // (mmap); empty when nothing else is compared.
  std::string value;
  std::string call;   // the backend's call string (Result::call(); the mock adds its reason)
};

enum class CallStatus {
  kCompared,   // issued on both backends
  kDependent,  // its event or mapping exists on the mock only, or its group differs (an earlier
               // disagreement): issued on the mock only
  kNoTarget,   // names an event or mapping and the mock has none open: issued on neither
};

struct CallRecord {
  size_t index = 0;          // in the sequence
  std::string op;            // OpName(): "perf_event_open", "ioctl(PERF_EVENT_IOC_ID)", ...
  std::string pmu;           // the attr's PMU (open) or the target event's, PmuNameForType()
  std::string description;   // DescribeCall(), plus how event[k] resolved
  CallStatus status = CallStatus::kCompared;
  Outcome kernel;
  Outcome mock;
};

struct SequenceOutcome {
  uint64_t seed = 0;
  std::vector<CallRecord> calls;
};

// Plays `seq` on `kernel` and `mock` (any two backends: tests pass two
// mocks). `params` names the PMUs in the records.
SequenceOutcome RunSequence(const Sequence& seq, Backend& kernel, Backend& mock, const GeneratorParams& params);

// Installs a SIGTRAP handler that does nothing, so that sigtrap events
// (perf_event_attr.sigtrap) firing in this process do not kill it.
// Errors: the errno of sigaction(2).
int InstallSigtrapHandler();

}  // namespace perftest::fidelity
