// `perftest pt record`: capture Intel PT into a file — the AUX data, the PT
// event's records (ITRACE_START, AUX, LOST) and the side-band records of a
// dummy event (MMAP, COMM, FORK/EXIT, SWITCH) that a decoder needs to find the
// executed images — from a real command on a kernel with intel_pt, or from the
// mock's simulated task (x86_64-intel profile; the mock with its PT model,
// mocks/pt_sim_source.h, whose ground truth it reads through MockControl).
// A tool above the harness and the mock (tools/pt), as perf record is above
// the kernel.
//
//   RecordOptions o;  o.backend = "mock";  o.output = "/tmp/t.data";
//   Result<CaptureSummary> s = Record(o);            // writes o.output
//   Result<perf_data::PerfData> d = perf_data::ReadPerfDataFile("/tmp/t.data");
//
// Formats (--format): "perf.data" (the default) is perf's own file format
// (record_perf_data.h): perf script and perf report decode it, and
// `perftest pt decode` reads it (tools/data/pt_trace.h). The code it names
// is reachable by perf: the kernel's MMAP2 records name the real files, and
// HEADER_BUILD_ID gives their build ids (read with libelf); the mock's
// simulated program is written beside the capture as a real ELF file,
// OUTPUT.NAME.elf (elf_image.h: its code at its addresses, a function
// symbol per entry point, a build id), and the recording opens with the
// records perf record synthesizes for a task that already runs (COMM, then
// an MMAP2 of that file: perf_event__synthesize_mmap_events() from
// /proc/PID/maps). The mock's TSC (pt_sim's) is not its perf clock: the
// TIME_CONV/AUXTRACE_INFO conversion anchors the trace's first TSC at the
// PT event's first record (ITRACE_START) and runs at the simulated TSC
// rate (the nominal ratio times 100 MHz). "ptcap" is the project's
// earlier format (capture_file.h), still written on request and read by
// `pt decode`/`pt dump`, for the captures and tests made with it; nothing
// outside perftest reads it.
// Beside OUTPUT the recorder writes OUTPUT.trace.bin, the AUX bytes in order,
// with the --image specs to decode it (CaptureSummary::image_specs): with the
// mock, the simulated program's code and its ground truth; with the kernel,
// the executable file mappings of the side-band (MMAP2). `perftest pt decode
// OUTPUT` reads the capture itself (CaptureTraceOf()).
//
// Kernel path (perf record's with a workload): the command is forked and
// waits; the intel_pt event (attr from the event string) and a dummy
// software event for side-band (mmap, mmap2, comm, task, context_switch) are
// opened on it disabled with enable_on_exec, each with a data buffer, the PT
// event with its AUX area (full-trace or snapshot); the child is released,
// execs, and both buffers are drained (poll, 100 ms) until it exits; in
// full-trace mode a TRUNCATED transaction (AUX area full, event disabled) is
// drained and the event re-enabled. Per-task and cpu=-1: the command's own
// children are not traced (an inherited per-task event cannot be mmapped).
// On a machine without intel_pt this fails before anything runs, with ENOENT
// naming /sys/bus/event_source/devices/intel_pt. Not run on Intel PT hardware
// by this project's tests (the development VM has none).
#pragma once

#include <linux/perf_event.h>

#include <cstdint>
#include <string>
#include <vector>

#include "harness/pt/capture_file.h"
#include "harness/result.h"

namespace perftest::pt {

struct RecordOptions {
  std::string backend = "kernel";         // "kernel" or "mock"
  std::string profile = "x86_64-intel";   // mock: the machine
  std::string event = "intel_pt//u";      // perf's event string (harness/event_string.h)
  std::string output = "perf.data";
  std::string format = "perf.data";       // "perf.data" or "ptcap"
  bool truth = true;                      // mock: write OUTPUT.trace.truth.json (large: ~60 bytes
                                          // per instruction)
  size_t data_pages = 64;                 // data buffer (power of two)
  size_t aux_pages = 64;                  // AUX area (power of two)
  bool snapshot = false;                  // read-only AUX mapping, captured once at the end
  uint64_t instructions = 1000000;        // mock: user instructions the simulated task retires
                                          // (and 4 system calls halfway)
  std::vector<std::string> command;       // kernel: the command to run and trace
  std::vector<std::string> cmdline;       // perf.data HEADER_CMDLINE: the recorder's own argv
};

struct CaptureSummary {
  uint64_t records = 0;     // RECORD chunks
  uint64_t aux_records = 0; // PERF_RECORD_AUX among them
  uint64_t aux_bytes = 0;   // trace bytes written
  uint64_t truncated = 0;   // AUX records with PERF_AUX_FLAG_TRUNCATED
  int exit_status = 0;      // kernel: the command's wait status
  // OUTPUT.trace.bin, the AUX bytes in order, and one ADDR:FILE[:OFFSET:SIZE]
  // per code section for `perftest pt decode --image`. Mock only (the
  // simulated task's trace, mocks/pt_sim): OUTPUT.trace.truth.json, the ground truth
  // (mocks/pt_sim/ground_truth.h; both read back with
  // pt_sim::ReadGeneratedTrace(OUTPUT + ".trace")); one ADDR:FILE per code section for
  // `perftest pt decode --image`. truth_complete: the trace file holds every
  // byte the truth describes (full-trace mode, nothing TRUNCATED); otherwise
  // the truth covers more than was recorded.
  std::string trace_file, truth_file;
  std::string elf_file;     // perf.data from the mock: the simulated program as an ELF file
  std::vector<std::string> image_specs;
  bool truth_complete = false;
};

// Errors: ENOENT no intel_pt PMU (the message names the sysfs directory), no
// such profile, or the command is not found in PATH; EINVAL bad options or
// event string (perf's message in the call); the errno of
// perf_event_open/mmap/fork/write otherwise.
Result<CaptureSummary> Record(const RecordOptions& options);

}  // namespace perftest::pt
