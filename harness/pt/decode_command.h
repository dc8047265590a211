// `perftest_pt decode FILE --itrace=SPEC [--image ADDR:FILE[:OFFSET[:SIZE]]]...
//                       [--format=text|json] [--tsc-hz=N] [--max-nonturbo-ratio=N]`
// (the runner's `perftest pt decode`): decodes the instruction flow of a raw
// Intel PT trace over the given object code and prints the itrace samples
// (itrace.h), one per line — perf script style text, or JSON Lines — then a
// summary line ("# N instructions, N samples, N errors"; in JSON a final
// {"summary":...} object). Exit status: 0 decoded (decode errors are part
// of the output, as `e` samples), 2 bad arguments or unreadable files.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace perftest::pt {

struct DecodeCommand {
  std::string file;
  std::string itrace;
  std::vector<std::string> images;
  std::string format = "text";
  uint64_t tsc_hz = 0;
  uint32_t max_nonturbo_ratio = 0;
  CLI::App* app = nullptr;
};

// Adds the `decode` subcommand to `app`, filling `cmd` when parsed.
void AddDecodeCommand(CLI::App& app, DecodeCommand* cmd);
// Runs it; returns the exit status.
int RunDecode(const DecodeCommand& cmd);

}  // namespace perftest::pt
