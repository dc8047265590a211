#include "tools/pt/record_cli.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>

namespace perftest::pt {

CLI::App* AddRecordSubcommand(CLI::App& app, RecordOptions* o) {
  CLI::App* rec = app.add_subcommand(
      "record", "capture Intel PT (AUX data + side-band records) into perf.data (perf script reads it) or a .ptcap");
  rec->add_option("--backend", o->backend, "kernel (trace COMMAND) or mock (the simulated task)")
      ->check(CLI::IsMember({"kernel", "mock"}));
  rec->add_option("--profile", o->profile, "mock: the machine profile (default x86_64-intel)");
  rec->add_option("--event", o->event, "perf event string (default intel_pt//u)");
  rec->add_option("-o,--output", o->output, "capture file to write (default perf.data)");
  rec->add_option("--format", o->format,
                  "perf.data (perf's format: perf script/report read it; the default) or ptcap (perftest's older format)")
      ->check(CLI::IsMember({"perf.data", "ptcap"}));
  rec->add_flag("!--no-truth", o->truth,
                "mock: keep no per-instruction ground truth (about 40 bytes an instruction in memory, 60 in "
                "OUTPUT.trace.truth.json) and write neither it, OUTPUT.trace.bin "
                "and the image files");
  rec->add_option("--data-pages", o->data_pages, "data buffer pages (power of two)");
  rec->add_option("--aux-pages", o->aux_pages, "AUX area pages (power of two)");
  rec->add_flag("--snapshot", o->snapshot, "snapshot mode: read-only AUX mapping, captured when tracing ends");
  rec->add_option("--instructions", o->instructions, "mock: user instructions the simulated task retires");
  rec->add_option("command", o->command, "kernel: the command to run and trace (after --)");
  return rec;
}

int RunRecordSubcommand(const RecordOptions& o) {
  Result<CaptureSummary> r = Record(o);
  if (!r.ok()) {
    fmt::print(stderr, "perftest_pt: {}\n", r.ToString());
    return r.error() == ENOENT ? 3 : r.error() == EINVAL ? 2 : 1;
  }
  fmt::print("{}: {} records, {} AUX records, {} trace bytes, {} truncated\n", o.output, r->records, r->aux_records,
             r->aux_bytes, r->truncated);
  if (!r->truth_file.empty()) {
    fmt::print("trace: {}\ntruth: {}{}\n", r->trace_file, r->truth_file,
               r->truth_complete ? "" : " (covers more than the trace: truncated or snapshot)");
  }
  // The capture carries its trace and names its code (capture_file.h
  // CaptureTraceOf()); the raw trace beside it needs the --image specs.
  std::string images;
  for (const std::string& spec : r->image_specs) images += " --image " + spec;
  if (!r->elf_file.empty()) fmt::print("code: {} (the simulated program: ELF, function symbols, build id)\n", r->elf_file);
  fmt::print("decode: perftest pt decode {} --itrace=i1i\n", o.output);
  if (o.format == "perf.data") fmt::print("    or: perf script -i {} --itrace=i1i\n", o.output);
  if (!r->trace_file.empty()) fmt::print("    or: perftest pt decode {} --itrace=i1i{}\n", r->trace_file, images);
  return 0;
}

}  // namespace perftest::pt
