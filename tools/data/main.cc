// perftest_data: perf.data files (`perftest data ...` forwards here).
//
//   perftest_data dump FILE                 every record, as `perf report -D` lists them
//   perftest_data rewrite IN OUT [--pipe]   read IN, write it back (file mode, or pipe mode)
//
// Exit codes: 0 done; 2 bad usage or bad input (a file that cannot be read,
// is not perf.data, or is truncated or corrupt: the message names the byte
// offset and the record); 3 an output that cannot be written.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "harness/perf_data/reader.h"
#include "harness/perf_data/writer.h"
#include "tools/data/dump.h"

namespace {

using namespace perftest;

int Error(const std::string& message, int code) {
  std::fflush(stdout);
  fmt::print(stderr, "perftest data: error: {}\n", message);
  return code;
}

int Dump(const std::string& path, bool header, bool stats) {
  Result<perf_data::PerfData> d = perf_data::ReadPerfDataFile(path);
  if (!d.ok()) return Error(d.ToString(), 2);
  Result<data::DumpStats> s = data::DumpPerfData(*d, stdout, {header, stats});
  if (!s.ok()) return Error(fmt::format("{}: {}", path, s.ToString()), 2);
  return 0;
}

int Rewrite(const std::string& in, const std::string& out, bool pipe) {
  Result<perf_data::PerfData> d = perf_data::ReadPerfDataFile(in);
  if (!d.ok()) return Error(d.ToString(), 2);
  // Every record must parse before it is written back.
  perf_data::RecordParser parser(*d);
  for (const perf_data::DataRecord& r : d->records) {
    if (!perf_data::IsKnownRecordType(r.header.type)) continue;
    Result<perf_data::ParsedRecord> p = parser.Parse(r);
    if (!p.ok()) return Error(fmt::format("{}: {}", in, p.ToString()), 2);
  }
  Result<void> w = perf_data::WritePerfDataFile(*d, out, pipe);
  if (!w.ok()) return Error(w.ToString(), 3);
  fmt::print(stderr, "perftest data: wrote {} ({} mode, {} records, {} unknown records, {} unknown features)\n", out,
             pipe ? "pipe" : "file", d->records.size(), d->unknown_records, d->unknown_features);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"perf.data files: list records, rewrite"};
  app.require_subcommand(1);
  std::string file, in, out;
  bool no_header = false, no_stats = false, pipe = false;
  CLI::App* dump = app.add_subcommand("dump", "list every record of FILE as `perf report -D` does, with the header "
                                              "first and the count of each record type (unknown ones too) last");
  dump->add_option("FILE", file, "a perf.data file (file or pipe mode)")->required();
  dump->add_flag("--no-header", no_header, "leave out the header and feature lines");
  dump->add_flag("--no-stats", no_stats, "leave out the closing counts");
  CLI::App* rewrite = app.add_subcommand("rewrite", "read IN and write it to OUT (what is rewritten: "
                                                    "harness/perf_data/writer.h)");
  rewrite->add_option("IN", in, "a perf.data file")->required();
  rewrite->add_option("OUT", out, "where to write")->required();
  rewrite->add_flag("--pipe", pipe, "write pipe mode (as `perf record -o -`)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (dump->parsed()) return Dump(file, !no_header, !no_stats);
  return Rewrite(in, out, pipe);
}
