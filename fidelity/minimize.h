// Shrinking a disagreement to a minimal reproducer: the fewest earlier calls
// and the fewest non-default attr fields and arguments that still give the
// same disagreement class (DisagreementKind()) on a fresh mock and the kernel.
//
//   Sequence seq = GenerateSequence(example.sequence_seed, params);
//   Minimized m = Minimize(seq, example.call_index, cls.kind, *kernel,
//                          [&] { return MakeMockBackend(profile); }, params);
//   for (const Call& c : m.calls) fmt::print("{}\n", DescribeCall(c));
//
// Greedy, one change at a time: drop an earlier call; in each perf_event_open,
// clear attr.size's tail and set it to sizeof, zero a field, clear one bit of
// a mask field or of the flag word, set pid 0 / cpu -1 / group_fd -1 / flags 0.
// A change is kept when the last call still disagrees the same way. Each try
// runs the whole candidate sequence on both backends, so it costs a few
// syscalls; `max_tries` bounds the work.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "fidelity/call.h"
#include "fidelity/generator.h"
#include "harness/backend.h"

namespace perftest::fidelity {

struct Minimized {
  bool reproduced = false;  // the unshrunk sequence gave `kind` again (false: flaky or state-dependent)
  std::vector<Call> calls;  // the minimal sequence; its last call disagrees as `kind`
  size_t tries = 0;
};

Minimized Minimize(const Sequence& seq, size_t call_index, const std::string& kind, Backend& kernel,
                   const std::function<std::unique_ptr<Backend>()>& make_mock, const GeneratorParams& params,
                   size_t max_tries = 600);

}  // namespace perftest::fidelity
