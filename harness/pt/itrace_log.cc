#include "harness/pt/itrace_log.h"

#include <fmt/format.h>

#include <cerrno>

#include "harness/pt/dump.h"

namespace perftest::pt {

ItraceLog::ItraceLog(std::span<const uint8_t> trace, const ItraceOptions& options,
                     std::function<void(std::string_view)> sink)
    : trace_(trace), o_(options), sink_(std::move(sink)), packets_(trace, PacketDecoder::Options{.block_packets = true}) {}

void ItraceLog::Out(std::string line) {
  line += '\n';
  ++lines_;
  if (!o_.log_on_error) {
    sink_(line);
    return;
  }
  ring_bytes_ += line.size();
  ring_.push_back(std::move(line));
  while (ring_bytes_ > o_.log_on_error_size && !ring_.empty()) {
    ring_bytes_ -= ring_.front().size();
    ring_.pop_front();
  }
}

void ItraceLog::Line(std::string_view line) { Out(std::string(line)); }

void ItraceLog::PacketsUpTo(uint64_t offset) {
  while (!packets_done_ && packets_.offset() < offset) {
    if (!packets_synced_) {
      const uint64_t from = packets_.offset();
      Result<uint64_t> s = packets_.SyncForward();
      if (!s.ok()) {
        packets_done_ = true;
        return;
      }
      if (*s != from) Out(fmt::format(".  {:08x}:  resync at PSB, {:#x} bytes skipped", *s, *s - from));
      packets_synced_ = true;
      continue;
    }
    Packet p;
    const int err = packets_.Next(p);
    if (err == ENODATA) {
      packets_done_ = true;
      return;
    }
    if (err != 0) {
      Out(fmt::format(".  {:08x}:  error: {} ({})", packets_.offset(), PacketDecoder::ErrorDescription(err),
                      ErrnoName(err)));
      packets_synced_ = false;
      continue;
    }
    Out(DumpLine(trace_, p));
  }
}

void ItraceLog::Error(int err, uint64_t offset, uint64_t ip, std::string_view message) {
  Out(fmt::format("error {} at offset {:#x} ip {:#x}: {}", ErrnoName(err), offset, ip, message));
  if (o_.log_on_error && err != EOVERFLOW) {
    sink_("--- debug log before error ---\n");
    for (const std::string& l : ring_) sink_(l);
    ring_.clear();
    ring_bytes_ = 0;
  }
}

void ItraceLog::PerfEvent(std::string_view name, uint64_t time) {
  if (o_.log_perf_events) Out(fmt::format("perf event {} time {}", name, time));
}

void ItraceLog::Finish() {
  if (!o_.log_on_error) PacketsUpTo(trace_.size());
}

}  // namespace perftest::pt
