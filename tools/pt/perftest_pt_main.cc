// perftest_pt: Intel PT tools on the perftest_pt library. The runner forwards
// `perftest pt dump ...` here (DESIGN.md "Command line").
//
//   perftest_pt dump FILE [--offset=N] [--sync] [--lastip] [--format=text|json]
//                         [--no-blocks] [--limit=N]
//   perftest_pt decode FILE --itrace=SPEC [--image ADDR:FILE[:OFFSET[:SIZE]]]... [--format=text|json]
//                           (decode_command.h)
//   perftest_pt record ... (record_cli.h)
//
// FILE holds raw Intel PT bytes (an AUX area's contents, a fixtures/pt/*.bin),
// or is a capture of `perftest pt record` (capture_file.h): its AUX data.
// Exit status: 0 dumped (decode errors are part of the output), 2 bad
// arguments or an unreadable file.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <vector>

#include "harness/pt/dump.h"
#include "tools/pt/decode_command.h"
#include "tools/pt/record_cli.h"

namespace {

constexpr int kExitBadInput = 2;

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"perftest_pt: Intel Processor Trace tools (packet dump, flow decode)"};
  app.require_subcommand(1);

  std::string file;
  uint64_t offset = 0;
  uint64_t limit = 0;
  bool sync = false;
  bool last_ip = false;
  bool no_blocks = false;
  std::string format = "text";
  CLI::App* dump = app.add_subcommand(
      "dump", "print every packet like `perf script -D`: offset, raw bytes, packet and payload");
  dump->add_option("FILE", file, "raw Intel PT trace bytes, or a capture from `perftest pt record` (its AUX data)")
      ->required();
  dump->add_option("--offset", offset, "start decoding at this byte offset (need not be a PSB)");
  dump->add_flag("--sync", sync, "first move to the next PSB at or after --offset");
  dump->add_flag("--lastip", last_ip, "show the IP each TIP/TIP.PGE/TIP.PGD/FUP makes (reset at PSB)");
  dump->add_flag("--no-blocks", no_blocks,
                 "no PEBS-via-PT block packets: 02 63/33/b3 are unknown opcodes (as in libipt 2.0)");
  dump->add_option("--limit", limit, "stop after this many packets (0: all)");
  dump->add_option("--format", format, "text (perf script -D style) or json (JSON Lines)")
      ->check(CLI::IsMember({"text", "json"}));

  perftest::pt::DecodeCommand decode;
  perftest::pt::AddDecodeCommand(app, &decode);
  perftest::pt::RecordOptions record_options;
  CLI::App* record = perftest::pt::AddRecordSubcommand(app, &record_options);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kExitBadInput;
  }
  if (decode.app->parsed()) return perftest::pt::RunDecode(decode);
  if (record->parsed()) {
    record_options.cmdline.assign(argv, argv + argc);
    return perftest::pt::RunRecordSubcommand(record_options);
  }

  std::vector<uint8_t> trace;
  std::string error;
  if (!perftest::pt::ReadTraceInput(file, "dump", &trace, nullptr, &error)) {
    fmt::print(stderr, "perftest_pt: {}\n", error);
    return kExitBadInput;
  }
  perftest::pt::DumpOptions options;
  options.format = format == "json" ? perftest::pt::DumpOptions::Format::kJson : perftest::pt::DumpOptions::Format::kText;
  options.offset = offset;
  options.sync = sync;
  options.last_ip = last_ip;
  options.block_packets = !no_blocks;
  options.limit = limit;
  const auto stats = perftest::pt::Dump(trace, options, [](std::string_view s) {
    std::fwrite(s.data(), 1, s.size(), stdout);
  });
  if (!stats.ok()) {
    fmt::print(stderr, "perftest_pt: --offset={:#x} is past the end of {} ({} bytes)\n", offset, file, trace.size());
    return kExitBadInput;
  }
  std::fflush(stdout);
  return 0;
}
