// The "# " header lines of `perftest data dump`: the file's header and each
// feature section, named as `perf report --header-only` names them
// (tools/perf/util/header.c print_*()).
#pragma once

#include <cstdio>

#include "harness/perf_data/reader.h"
#include "harness/result.h"

namespace perftest::data {

// Writes the header lines. Errors: the first feature section that does not
// parse (EBADMSG, "feature HOSTNAME at offset ...: ...").
Result<void> DumpHeader(const perf_data::PerfData& data, std::FILE* out);

}  // namespace perftest::data
