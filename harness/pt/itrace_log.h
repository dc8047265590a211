// The itrace `d` debug log (perf-intel-pt.txt "The d option"): every
// decoded packet and instruction, interleaved as the decode goes, with the
// flow events and errors — perf writes it to intel_pt.log.
//
//   pt::ItraceLog log(trace, *options, [&](std::string_view s) { out << s; });
//   pt::SynthesizeItrace(trace, image, *options, {}, &synth, &log);
//   log.Finish();
//
// Lines (each ends in '\n'):
//   packets as `perftest pt dump` writes them (dump.h DumpLine), up to the
//     packet the flow decoder has read;
//   "sync at PSB 0x1000"; "insn 401000 len 5"; "event enabled ip 0x401000
//     ..." (flow_decoder.h ToString); "error EBADMSG at offset 0x1a0 ip
//     0x401005: ..."; existing events (+a, the default) "perf event NAME
//     time T".
// Flags as perf's (auxtrace.h AUXTRACE_LOG_FLG_*): -a leaves the existing
// events out; +e keeps only the last log_on_error_size bytes (whole lines)
// and writes them out at each decode error other than an overflow
// (perf: intel_pt_log_dump_buf at each error but INTEL_PT_ERR_LOST),
// preceded by "--- debug log before error ---"; +o is for the caller (the
// CLI writes to stdout instead of intel_pt.log).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "harness/pt/itrace.h"
#include "harness/pt/packet_decoder.h"

namespace perftest::pt {

class ItraceLog {
 public:
  ItraceLog(std::span<const uint8_t> trace, const ItraceOptions& options,
            std::function<void(std::string_view)> sink);

  // Writes the packets that start before `offset` and were not written yet.
  void PacketsUpTo(uint64_t offset);
  // One line (without its newline).
  void Line(std::string_view line);
  // A decode error: its line, and with +e the buffered log.
  void Error(int err, uint64_t offset, uint64_t ip, std::string_view message);
  // An existing (perf) event, unless -a.
  void PerfEvent(std::string_view name, uint64_t time);
  // Writes the remaining packets (not with +e).
  void Finish();

  uint64_t lines() const { return lines_; }

 private:
  void Out(std::string line);

  std::span<const uint8_t> trace_;
  ItraceOptions o_;
  std::function<void(std::string_view)> sink_;
  PacketDecoder packets_;
  bool packets_synced_ = false, packets_done_ = false;
  std::deque<std::string> ring_;  // +e
  size_t ring_bytes_ = 0;
  uint64_t lines_ = 0;
};

}  // namespace perftest::pt
