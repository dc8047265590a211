// The packet map: for every byte of a trace, the size of the packet that
// would start there and its kind, computed for many bytes at once (SIMD)
// ahead of PacketDecoder::Decode(PacketBatch&)'s lanes, so that a lane's
// dependency chain is one load: position -> sizes[position] -> next
// position (internal/packet_lanes.h RunRoundsMapped()). Internal to harness/pt.
//
//   uint8_t sizes[n], kinds[n];
//   internal::MapPacketsAvx512(trace + from, n, sizes, kinds);   // bytes [from, from + n + 7) readable
//   // sizes[i] == internal::MapOne(trace + from + i).size, and the same for kinds where sizes[i] > 0
//
// sizes[i] is the size (1..9) of the packet PacketDecoder::Next() decodes
// there, outside a PEBS block, for the packets known by their first byte
// (CYCs of up to 2 bytes, MODE) and TNT-64; else 0: an error, or a packet
// the map leaves to the careful path (the other 02h packets, a longer CYC).
// Where sizes[i] > 0, kinds[i] indexes kPacketKinds (below): the payload's
// bits among bytes 1..8 (a pext mask) and the record word (type, size,
// opcode, ext). A packet's kind is its first byte, except for TNT-64 and
// MODE.TSX, which take first-byte values that name no packet.
//
// Sources: SDM Vol. 3C §33.4.2 (sizes and fields of each packet), and what
// Next() returns (opcodes.h, packet_decoder.cc): TNT-64 needs a stop bit
// and a branch (payload >= 2), MODE a leaf 000b or 001b, a 2-byte CYC its
// extension byte's Exp bit clear.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "harness/pt/internal/opcodes.h"
#include "harness/pt/packet.h"

namespace perftest::pt::internal {

// The kinds' tables, and the byte tables the map is computed from.
struct PacketKinds {
  // By kind:
  uint64_t mask[256];  // the payload's bits among bytes 1..8 (little-endian), for pext
  uint64_t word[256];  // bytes 8..15 of the PacketRecord at offset 0: type, size, opcode, ext << 32
  // By first byte (02h aside): the size (0: not in the map), and the bits of
  // byte 1 that, set, leave the packet out (CYC's Exp bit; MODE's leaf bits 7:6).
  uint8_t first_size[256];
  uint8_t first_reject[256];
};

// The one 02h packet in the map, TNT-64 (1.7% of bench_pt's packets; the
// others come a few per PSB+ or rarely), has the kind 02h; MODE.TSX has
// 99h with byte 1's bit 5 (its leaf's low bit) flipped in: B9h. Neither
// names a packet as a first byte (02h is taken by its second byte).
inline constexpr uint8_t kTnt64Kind = kOpcExt;
inline constexpr uint8_t kModeTsxKind = kOpcMode ^ 0x20;

constexpr PacketKinds MakePacketKinds() {
  PacketKinds t{};
  constexpr auto word = [](PacketType type, unsigned size, uint8_t opcode, uint8_t ext) {
    return (uint64_t{static_cast<uint8_t>(type)} | uint64_t{size} << 8 | uint64_t{opcode} << 16 | uint64_t{ext} << 24)
           << 32;
  };
  for (int b = 0; b < 256; ++b) {
    t.mask[b] = kFast.mask[b];
    t.word[b] = (kFast.info[b] & 0xffffffffu) << 32;
    const uint16_t r = kFast.reject[b];
    if (b == kOpcMode) {
      t.first_size[b] = 2;
      t.first_reject[b] = 0xc0;  // leaf 010b..111b: EBADMSG
    } else if ((r & 0xff) == 0) {
      t.first_size[b] = kFast.size[b];
      t.first_reject[b] = static_cast<uint8_t>(r >> 8);  // CYC: byte 1's Exp bit
    }  // else 0: 02h (TNT-64 by its second byte), bad opcodes, bad IPBytes
  }
  t.mask[kOpcMode] = 0xff;
  t.word[kOpcMode] = word(PacketType::kModeExec, 2, kOpcMode, 0);
  t.mask[kModeTsxKind] = 0xff;
  t.word[kModeTsxKind] = word(PacketType::kModeTsx, 2, kOpcMode, 0);
  t.mask[kTnt64Kind] = kPayloadMask[7] & ~uint64_t{0xff};  // bytes 2..7 of bytes 1..8
  t.word[kTnt64Kind] = word(PacketType::kTnt64, 8, kOpcExt, kExtTnt64);
  return t;
}
alignas(64) inline constexpr PacketKinds kPacketKinds = MakePacketKinds();
static_assert(kPacketKinds.first_size[kModeTsxKind] == 0 && kPacketKinds.first_size[kTnt64Kind] == 0);

struct MapEntry {
  uint8_t size = 0;  // 0: not in the map
  uint8_t kind = 0;  // where size > 0
};

// The map at p (bytes p[0..7] readable): what MapPacketsAvx512() writes for it.
inline MapEntry MapOne(const uint8_t* p) {
  const uint8_t b0 = p[0], b1 = p[1];
  const PacketKinds& t = kPacketKinds;
  if (b0 == kOpcExt) {
    uint64_t payload = 0;  // bytes 2..7
    for (int i = 7; i >= 2; --i) payload = payload << 8 | p[i];
    // TNT-64 with a stop bit and a branch before it.
    return b1 == kExtTnt64 && payload >= 2 ? MapEntry{8, kTnt64Kind} : MapEntry{};
  }
  if ((b1 & t.first_reject[b0]) != 0) return {};
  return {t.first_size[b0], static_cast<uint8_t>(b0 == kOpcMode ? b0 ^ (b1 & 0x20) : b0)};
}

// Whether MapPacketsAvx512() runs here (x86-64 with AVX-512 F, BW and VBMI).
bool HaveMapPacketsAvx512();

// Writes the map of the n positions p[0..n) to sizes[0..n) and kinds[0..n)
// (MapOne() for each), 64 at a time. Bytes p[0 .. n+7) must be readable; it
// reads nothing past them and writes nothing past sizes[n), kinds[n).
// Only where HaveMapPacketsAvx512().
void MapPacketsAvx512(const uint8_t* p, size_t n, uint8_t* sizes, uint8_t* kinds);

}  // namespace perftest::pt::internal
