// `perftest_pt decode FILE (--itrace=SPEC | --call-trace | --call-ret-trace)
//                       [--image ADDR:FILE[:OFFSET[:SIZE]]]... [--format=text|json]
//                       [--tsc-hz=N] [--max-nonturbo-ratio=N] [--mtc-period=N] [--tsc-ctc-ratio=N/D]
//                       [--existing-event TSC[:NAME]]... [--debug-log FILE]`
// (the runner's `perftest pt decode`): decodes the instruction flow of FILE
// — raw Intel PT bytes, or a `perftest pt record` capture (capture_file.h:
// its AUX data, its code unless --image is given, and its timing
// parameters unless given) — over the object code, and prints the itrace
// samples (itrace.h), one per line as each is made (streamed through one
// buffer written in large write(2) chunks, none kept; with d+o they are kept
// and printed after the log): perf script style text, perf script's
// call-trace views (ToCallTrace()), or JSON Lines; then a summary line
// ("# N instructions, N samples, N errors"; in JSON a final {"summary":...}
// object). The timing parameters are perf's auxtrace info: MTC packets time
// the trace only with the TSC:CTC ratio, and without CYC packets IPC counts
// cycles from that time and the max non-turbo ratio. Exit status: 0 decoded
// (decode errors are part of the output, as `e` samples), 1 stdout could
// not be written, 2 bad arguments or unreadable files. --existing-event: events recorded with the trace for
// G/L (itrace.h "Existing events"). With `d` the debug log (itrace_log.h)
// goes to --debug-log (default intel_pt.log, as perf), or to stdout before
// the samples with d+o.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "harness/pt/capture_file.h"

// CLI11 (<CLI/CLI.hpp>, ~10 s of compile per file) is included by the .cc
// files that build the command line, not here.
namespace CLI {
class App;
}  // namespace CLI

namespace perftest::pt {

struct DecodeCommand {
  std::string file;
  std::string itrace;
  std::vector<std::string> images;
  std::string format = "text";
  uint64_t tsc_hz = 0;
  uint32_t max_nonturbo_ratio = 0;  // 0: not given (a capture's, if any)
  int mtc_period = -1;              // -1: not given (a capture's, else 3, perf's default)
  std::string tsc_ctc_ratio;        // "N/D" (CPUID.15H EBX/EAX); "": not given (a capture's)
  std::vector<std::string> existing_events;
  std::string debug_log = "intel_pt.log";
  std::string cpu;  // --cpu FAMILY/MODEL[/STEPPING] (pt/cpu.h): the errata workarounds; empty: none
  // perf script's --call-trace (itrace cewp, calls indented by depth) and
  // --call-ret-trace (crewp, with the flag names): itrace.h ToCallTrace().
  bool call_trace = false;
  bool call_ret_trace = false;
  CLI::App* app = nullptr;
};

// Reads `path` for `command` ("decode", "dump"; named in messages): raw
// Intel PT bytes as they are, or — a file that opens with the capture magic
// (capture_file.h) — a `perftest pt record` capture's AUX data in order, and,
// if `image_specs` is not null, the capture's code (CaptureTraceOf(): the
// mock's code files beside it, the side-band's file mappings). What it took
// from a capture is said on stderr. False with `error` set if the file
// cannot be read or the capture is malformed. `timing` and `data_lost`, if
// not null, get the capture's timing parameters and lost-data offsets
// (CaptureTrace; nothing for raw bytes).
// A perf.data file (its magic, "PERFILE2") gives its Intel PT AUX queues
// one after another, its side-band's code and AUXTRACE_INFO's timing, and,
// if `tsc_hz` is not null, the TSC rate of its TIME_CONV (1e9 * 2^time_shift
// / time_mult, as perf's intel_pt converts itrace periods in ns to ticks;
// 0 when the file has none), and if `cpuid` is not null the CPU a perf.data
// file's HEADER_CPUID names (empty when none).
bool ReadTraceInput(const std::string& path, std::string_view command, std::vector<uint8_t>* trace,
                    std::vector<std::string>* image_specs, std::string* error, CaptureTiming* timing = nullptr,
                    std::vector<uint64_t>* data_lost = nullptr, uint64_t* tsc_hz = nullptr,
                    std::string* cpuid = nullptr);

// Adds the `decode` subcommand to `app`, filling `cmd` when parsed.
void AddDecodeCommand(CLI::App& app, DecodeCommand* cmd);
// Runs it; returns the exit status.
int RunDecode(const DecodeCommand& cmd);

}  // namespace perftest::pt
