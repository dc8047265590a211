// A packet dump of an Intel PT trace, as `perf script -D` prints one
// (perf-intel-pt.txt "dump option"): offset, raw bytes, packet and payload,
// one line per packet; or the same as JSON Lines for machines.
//
//   pt::DumpOptions options;
//   options.last_ip = true;
//   pt::Dump(trace, options, [](std::string_view s) { std::fwrite(s.data(), 1, s.size(), stdout); });
//
// Text, one line per packet (perf's layout: 16 byte columns, then the packet):
//   .  00000000:  02 82 02 82 02 82 02 82 02 82 02 82 02 82 02 82 PSB
//   .  00000010:  4d 00 10 40 00                                  TIP 0x401000 (upd32)  ip 0x401000
//   .  00000015:  c9                                              error: unknown opcode (EILSEQ)
//   .  00001000:  resync at PSB, 0xfeb bytes skipped
// JSON Lines, one object per line:
//   {"offset":16,"size":5,"bytes":"4d00104000","packet":"TIP","ipbytes":2,"payload":"0x401000","ip":"0x401000"}
//   {"offset":21,"error":"EILSEQ","message":"unknown opcode","bytes":"c9"}
//   {"offset":4096,"resync":true,"from":21}          (decoding resumes at the PSB at 4096)
//   {"offset":8000,"resync":false,"skipped":192}     (no PSB after the error at 8000)
// 64-bit quantities are hex strings, small fields numbers.
//
// Unlike perf -D, which skips one byte after a bad packet, decoding resumes
// at the next PSB (PacketDecoder::SyncForward), as the decoders that follow do.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "harness/pt/packet.h"
#include "harness/result.h"

namespace perftest::pt {

struct DumpOptions {
  enum class Format { kText, kJson };
  Format format = Format::kText;
  uint64_t offset = 0;        // start decoding here (need not be a PSB)
  bool sync = false;          // first move to the first PSB at or after `offset`
  bool last_ip = false;       // show the IP each IP packet makes (last_ip.h), reset at PSB
  bool block_packets = true;  // PacketDecoder::Options::block_packets
  uint64_t limit = 0;         // stop after this many packets; 0: no limit
};

struct DumpStats {
  uint64_t packets = 0;
  uint64_t errors = 0;
  uint64_t skipped = 0;  // bytes passed over by resynchronization
  bool truncated = false;  // stopped by `limit`
};

// Dumps `trace` from `options.offset`, passing the output to `sink` in
// pieces of whole lines. Errors: EINVAL, `options.offset` past the end (then
// nothing is written). A decode error is not a failure: it is written out,
// counted in DumpStats::errors, and followed by a resync.
Result<DumpStats> Dump(std::span<const uint8_t> trace, const DumpOptions& options,
                       const std::function<void(std::string_view)>& sink);

// The text line for one packet (without the newline), as Dump() writes it
// with last_ip = false.
std::string DumpLine(std::span<const uint8_t> trace, const Packet& packet);

}  // namespace perftest::pt
