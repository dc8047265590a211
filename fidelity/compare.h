// Comparison of one call's outcomes on the kernel and on the mock, and the
// name of the class a disagreement falls into.
//
//   if (!Agree(rec)) report[DisagreementKind(rec)]++;
//   // "perf_event_open [software]: kernel EINVAL, mock ok"
//   // "read [software]: kernel ok (24 bytes, nr=2), mock ok (16 bytes, nr=1)"
#pragma once

#include <string>

#include "fidelity/executor.h"

namespace perftest::fidelity {

// Same success, same errno, same compared value (Outcome::value). Both must
// have run.
bool Agree(const Outcome& kernel, const Outcome& mock);
// rec.status == kCompared and its outcomes agree. Calls not compared agree
// vacuously: use rec.status to tell them apart.
bool Agree(const CallRecord& rec);

// "ok", "ok (24 bytes)", "EINVAL", "E2BIG (attr.size=136)", "not run".
std::string OutcomeText(const Outcome& o);

// The class of a disagreement: "<op> [<pmu>]: kernel <outcome>, mock <outcome>".
std::string DisagreementKind(const CallRecord& rec);

}  // namespace perftest::fidelity
