// The `record` subcommand of perftest_pt (`perftest pt record`), kept apart
// from the dump command's main.
//
//   perftest_pt record [--backend=kernel|mock] [--profile=NAME] [--event=SPEC]
//                      [--output=FILE] [--data-pages=N] [--aux-pages=N]
//                      [--snapshot] [--instructions=N] [-- COMMAND ARGS...]
//
// Exit status: 0 captured; 2 bad arguments; 3 no intel_pt PMU here; 1 any
// other failure (the message names the call and errno).
#pragma once

#include "tools/pt/record.h"

// CLI11 (<CLI/CLI.hpp>) is included by the .cc files that use it.
namespace CLI {
class App;
}  // namespace CLI

namespace perftest::pt {

CLI::App* AddRecordSubcommand(CLI::App& app, RecordOptions* options);
int RunRecordSubcommand(const RecordOptions& options);

}  // namespace perftest::pt
