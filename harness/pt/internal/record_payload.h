// A packet's payload (packet.h "Payload layout per type") read back from its
// bytes, given its type and size — what PacketBatch::payload() computes for
// a PacketRecord, which holds no payload of its own (packet_batch.h).
// Internal to harness/pt.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>

#include "harness/pt/internal/opcodes.h"
#include "harness/pt/packet.h"

namespace perftest::pt::internal {

// Where the payload starts in a packet of each type: after the opcode byte
// (1), after 02h and the extension byte (2), after 02h C3h 88h (MNT, 3). A
// PSB has none: its start is its size (16), so that size - start is 0. TMA's
// payload is not a run of bytes (TmaPayload below); its entry is not used.
constexpr std::array<uint8_t, kPacketTypeCount> MakePayloadStart() {
  std::array<uint8_t, kPacketTypeCount> t{};
  for (int i = 0; i < kPacketTypeCount; ++i) {
    switch (static_cast<PacketType>(i)) {
      case PacketType::kPsb: t[i] = kPsbSize; break;
      case PacketType::kPsbEnd:
      case PacketType::kTnt64:
      case PacketType::kPip:
      case PacketType::kTraceStop:
      case PacketType::kCbr:
      case PacketType::kTma:
      case PacketType::kVmcs:
      case PacketType::kOvf:
      case PacketType::kPtw:
      case PacketType::kExStop:
      case PacketType::kMwait:
      case PacketType::kPwre:
      case PacketType::kPwrx:
      case PacketType::kBbp:
      case PacketType::kBep: t[i] = 2; break;
      case PacketType::kMnt: t[i] = 3; break;
      default: t[i] = 1; break;  // one opcode byte (BIP's ID shares it)
    }
  }
  return t;
}
inline constexpr std::array<uint8_t, kPacketTypeCount> kPayloadStart = MakePayloadStart();

// TMA (02h 73h CTC[7:0] CTC[15:8] 0 FC[7:0] FC[8]): CTC[15:0] | FastCounter[8:0] << 16.
inline uint64_t TmaPayload(const uint8_t* p) {
  return p[2] | uint64_t{p[3]} << 8 | uint64_t{p[5]} << 16 | uint64_t{p[6]} << 24;
}

// The payload of the well-formed packet of `type` and `size` at `p`, with
// `avail` (>= size) bytes readable there.
inline uint64_t PayloadOf(const uint8_t* p, uint64_t avail, PacketType type, unsigned size) {
  if (type == PacketType::kTma) [[unlikely]] return TmaPayload(p);
  const unsigned start = kPayloadStart[static_cast<uint8_t>(type)];
  const unsigned n = size - start;  // 0..8
  if (avail >= start + 8u) [[likely]] {
    uint64_t v;
    std::memcpy(&v, p + start, sizeof v);
    return v & kPayloadMask[n];
  }
  uint64_t v = 0;
  for (unsigned i = 0; i < n; ++i) v |= uint64_t{p[start + i]} << (8 * i);
  return v;
}

// The same as a table lookup, for PayloadFast(): indexed by a record's
// type and size as one little-endian 16-bit word (type | size << 8), where
// the payload starts (0: TMA, or no such packet — take PayloadOf()) and the
// mask of its bytes among the 8 read there. A PSB's bytes from 2 on are
// masked away.
inline constexpr size_t kTypeSizeWords = (16 << 8) + kPacketTypeCount;
struct PayloadTables {
  uint64_t mask[kTypeSizeWords];
  uint8_t start[kTypeSizeWords];
};
constexpr PayloadTables MakePayloadTables() {
  PayloadTables t{};
  for (int type = 0; type < kPacketTypeCount; ++type) {
    if (type == static_cast<int>(PacketType::kTma)) continue;
    for (int size = 1; size <= 16; ++size) {
      const unsigned start = type == static_cast<int>(PacketType::kPsb) ? 2 : kPayloadStart[type];
      if (static_cast<unsigned>(size) < start) continue;
      const unsigned n = size - start;
      const size_t i = static_cast<size_t>(type) | static_cast<size_t>(size) << 8;
      t.start[i] = static_cast<uint8_t>(start);
      t.mask[i] = type == static_cast<int>(PacketType::kPsb) || n > 8 ? 0 : kPayloadMask[n];
    }
  }
  return t;
}
alignas(64) inline constexpr PayloadTables kPayloadTables = MakePayloadTables();

// PayloadOf() for the packet at data + offset, `avail` bytes being readable
// from `data`, `type_size` its type | size << 8: while offset < safe (avail
// - 10), one 8-byte load and a mask.
inline uint64_t PayloadFast(const uint8_t* data, uint64_t avail, uint64_t safe, uint32_t offset, uint16_t type_size) {
  const unsigned start = kPayloadTables.start[type_size];
  if (offset >= safe || start == 0) [[unlikely]] {
    return PayloadOf(data + offset, avail - offset, static_cast<PacketType>(type_size & 0xff), type_size >> 8);
  }
  uint64_t v;
  std::memcpy(&v, data + offset + start, sizeof v);
  return v & kPayloadTables.mask[type_size];
}

}  // namespace perftest::pt::internal
