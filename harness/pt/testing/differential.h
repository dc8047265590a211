// Our packet decoder against libipt 2.0.5 on the same bytes — the protocol
// shared by libipt_differential_test.cc and fuzz/packet_differential_fuzzer.cc.
//
//   pt::testing::DiffStats stats;
//   std::string diff = pt::testing::DiffAgainstLibipt(bytes, &stats);
//   EXPECT_EQ(diff, "");                       // else: the first difference, with context
//
// Protocol, run on both decoders (ours with block_packets = false, see
// libipt_reference.h "pt.libipt.no_blocks"):
//   forward:   SyncForward, then Next until an error; after an error
//              SyncForward again; to the end of the trace
//   from 0:    the same, starting with SyncSet(0) instead
//   backward:  SyncBackward from the end, repeatedly, to the first PSB
// The forward protocols also run with our Decode(PacketBatch&) (64 Ki
// records) in place of Next(), against the same libipt events: with the
// lanes it picks by default and held to its portable lanes
// (PacketDecoder::Options::portable).
// Each packet (type, offset, size, payload as RefPacket), each error (errno,
// offset) and each sync point (offset, or none) is an event; the two event
// lists must be identical.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "harness/pt/testing/libipt_reference.h"

namespace perftest::pt::testing {

struct DiffEvent {
  enum Kind { kPacket, kError, kSync, kNoSync } kind = kPacket;
  RefPacket packet;  // kPacket
  int err = 0;       // kError
  uint64_t offset = 0;
  bool operator==(const DiffEvent&) const = default;
};
std::string ToString(const DiffEvent& e);

struct DiffStats {
  uint64_t streams = 0, bytes = 0, packets = 0, errors = 0, syncs = 0;
  uint64_t pwre_divergent = 0;  // PWRE packets where pt.libipt.pwre_hw shows (bit 7 != bit 3)
};

// "" if both decoders agree on every protocol, else a description of the
// first difference. Adds to `stats` when given.
std::string DiffAgainstLibipt(std::span<const uint8_t> trace, DiffStats* stats = nullptr);

}  // namespace perftest::pt::testing
