// A forked child that takes ChildCredentials (KernelBackend::RunInChild):
// the real fork/setrlimit/setresuid/capset sequence. Internal to harness/.
#pragma once

#include <functional>

#include "harness/backend.h"

namespace perftest::internal {

// The name of capability `cap`, "CAP_PERFMON"; "CAP_<n>" when unknown.
std::string CapabilityName(int cap);

// Forks; the child joins its own process group, applies `creds` (rlimits,
// then uid with PR_SET_KEEPCAPS when `caps` is given, then capset), runs
// fn(backend) and sends its return value to the parent over a pipe. The
// parent reaps the child before returning. Errors as Backend::RunInChild.
Result<int> RunInForkedChild(Backend& backend, const ChildCredentials& creds, const std::function<int(Backend&)>& fn);

}  // namespace perftest::internal
