// `perftest data dump FILE`: every record of a perf.data file, one line
// each in the layout of `perf report -D` ("TIME OFFSET [SIZE]: NAME
// details", then "... " detail lines), the header's feature sections first
// (as `perf report --header-only` names them, each line starting "# "), and
// at the end the count of each record type, the AUX queues (aux_queues.h)
// when there is AUXTRACE data, and the unknown records and features:
//
//   # hostname : vm
//   0 0x108 [0x50]: PERF_RECORD_ID_INDEX nr: 2
//    ... id: 8  idx: 0  cpu: 0  tid: 8950
//   279360106824 0x3f0 [0x48]: PERF_RECORD_SAMPLE(IP, 0x2): 8950/8950: 0x7fc20865c62a period: 250000 addr: 0
//   ...
//   stats: records: 23  unknown records: 0  unknown features: 0
//
// Records are listed in file order (perf report -D sorts the timed ones by
// time between FINISHED_ROUNDs); those of a PERF_RECORD_COMPRESSED (perf
// record -z) follow it, decompressed, with its offset, and are counted too
// (as perf counts them). The detail fields follow
// tools/perf/util/event.c perf_event__fprintf_*() and session.c
// dump_sample() where this tool prints the same field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>

#include "harness/perf_data/reader.h"
#include "harness/result.h"

namespace perftest::data {

struct DumpStats {
  size_t records = 0;
  size_t unknown_records = 0;
  size_t unknown_features = 0;
  std::map<uint32_t, size_t> by_type;  // record type -> count
};

struct DumpOptions {
  bool header = true;  // the feature sections, "# " lines
  bool stats = true;   // the closing counts
};

// Writes the listing of `data` to `out`. Errors: the first record or feature
// section whose contents do not parse (EBADMSG, "offset 0x...: parse
// PERF_RECORD_...: ..."), compressed data zstd rejects or that ends inside
// a record (EBADMSG), after the lines before it were written.
Result<DumpStats> DumpPerfData(const perf_data::PerfData& data, std::FILE* out, const DumpOptions& options = {});

}  // namespace perftest::data
