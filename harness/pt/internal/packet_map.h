// The packet map: for every byte of a trace, the size of the packet that
// would start there and its kind, computed for many bytes at once (SIMD)
// ahead of PacketDecoder::Decode(PacketBatch&)'s lanes, so that a lane's
// dependency chain is one load: position -> sizes[position] -> next
// position (packet_decoder.cc RunRoundsMapped()). Internal to harness/pt.
//
//   uint8_t sizes[n], kinds[n];
//   internal::MapPacketsAvx512(trace + from, n, sizes, kinds);   // bytes up to n + 7 readable
//   // sizes[i] == internal::MapOne(trace + from + i).size, and the same for kinds
//
// sizes[i] is 0 for a packet the map leaves to the careful path: an error,
// PSB, TMA, MNT, MWAIT, PTW with an 8-byte payload, the PEBS block packets,
// a CYC of more than 2 bytes — else the size (1..9) of the packet
// PacketDecoder::Next() decodes there, outside a PEBS block. kinds[i]
// indexes kPacketKinds (below): the payload's bits among bytes 1..8 (a pext
// mask) and the record word (type, size, opcode, ext). A packet's kind is
// its first byte, except for 02h packets and MODE.TSX, which take first-byte
// values that name no packet (their sizes are 0 where they are first bytes).
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
  // By the byte after 02h: the size (0: not in the map) and the kind.
  uint8_t ext_size[256];
  uint8_t ext_kind[256];
  uint8_t mode_tsx_kind;  // MODE.TSX's kind (MODE.Exec's is 99h)
};

// 02h packets the map takes: fixed size, payload bytes 2..size-1 (at most
// bytes 1..8 are read), no check beyond the opcode (TNT-64's stop bit aside).
inline constexpr uint8_t kMappedExt[] = {kExtTnt64, kExtPsbEnd, kExtCbr,  kExtPip,  kExtStop,    kExtVmcs, kExtOvf,
                                         kExtExStop, kExtExStopIp, kExtPwre, kExtPwrx, kExtPtw, kExtPtw | 0x80};

constexpr PacketKinds MakePacketKinds() {
  PacketKinds t{};
  constexpr auto word = [](PacketType type, unsigned size, uint8_t opcode, uint8_t ext) {
    return (uint64_t{static_cast<uint8_t>(type)} | uint64_t{size} << 8 | uint64_t{opcode} << 16 | uint64_t{ext} << 24)
           << 32;
  };
  // Kinds of first bytes: themselves.
  for (int b = 0; b < 256; ++b) {
    t.mask[b] = kFast.mask[b];
    t.word[b] = (kFast.info[b] & 0xffffffffu) << 32;
    const uint16_t r = kFast.reject[b];
    if (b == kOpcMode) {
      t.first_size[b] = 2;
      t.first_reject[b] = 0xc0;  // leaf 010b..111b: EBADMSG
    } else if (b == kOpcExt || (r & 0xff) != 0) {
      t.first_size[b] = 0;  // 02h (by its second byte, below), bad opcodes, bad IPBytes
    } else {
      t.first_size[b] = kFast.size[b];
      t.first_reject[b] = static_cast<uint8_t>(r >> 8);  // CYC: byte 1's Exp bit
    }
  }
  t.mask[kOpcMode] = 0xff;
  t.word[kOpcMode] = word(PacketType::kModeExec, 2, kOpcMode, 0);
  // Free kinds: first bytes that name no packet, 02h aside (no first byte
  // maps to a kind of its own with a nonzero first_size).
  uint8_t free_kinds[256] = {};
  int nfree = 0;
  for (int b = 1; b < 256; ++b) {
    if (b != kOpcExt && b != kOpcMode && kFast.size[b] == 0) free_kinds[nfree++] = static_cast<uint8_t>(b);
  }
  int next = 0;
  const uint8_t none = free_kinds[next++];  // for 02h x not in the map: size 0
  for (int x = 0; x < 256; ++x) t.ext_kind[x] = none;
  for (const uint8_t x : kMappedExt) {
    const ExtEntry e = kExtByte[x];
    const unsigned size = e.kind == ExtKind::kPtw ? 6 : e.size;
    const uint8_t k = free_kinds[next++];
    t.ext_size[x] = static_cast<uint8_t>(size);
    t.ext_kind[x] = k;
    t.word[k] = word(e.type, size, kOpcExt, x);
    t.mask[k] = kPayloadMask[size - 1] & ~uint64_t{0xff};  // bytes 2..size-1 of bytes 1..8
  }
  t.mode_tsx_kind = free_kinds[next++];
  t.mask[t.mode_tsx_kind] = 0xff;
  t.word[t.mode_tsx_kind] = word(PacketType::kModeTsx, 2, kOpcMode, 0);
  return t;
}
alignas(64) inline constexpr PacketKinds kPacketKinds = MakePacketKinds();

struct MapEntry {
  uint8_t size = 0;  // 0: not in the map
  uint8_t kind = 0;
  bool operator==(const MapEntry&) const = default;
};

// The map at p (bytes p[0..7] readable): what MapPacketsAvx512() writes for it.
inline MapEntry MapOne(const uint8_t* p) {
  const uint8_t b0 = p[0], b1 = p[1];
  const PacketKinds& t = kPacketKinds;
  if (b0 == kOpcExt) {
    MapEntry e{t.ext_size[b1], t.ext_kind[b1]};
    if (b1 == kExtTnt64) {
      uint64_t payload = 0;  // bytes 2..7
      for (int i = 7; i >= 2; --i) payload = payload << 8 | p[i];
      if (payload < 2) e.size = 0;  // no stop bit, or no branch before it
    }
    return e;
  }
  MapEntry e{t.first_size[b0], b0};
  if ((b1 & t.first_reject[b0]) != 0) e.size = 0;
  if (b0 == kOpcMode && (b1 & 0x20) != 0) e.kind = t.mode_tsx_kind;
  return e;
}

// Whether MapPacketsAvx512() runs here (x86-64 with AVX-512 F, BW and VBMI).
bool HaveMapPacketsAvx512();

// Writes the map of the n positions p[0..n) to sizes[0..n) and kinds[0..n)
// (MapOne() for each), 64 at a time. Bytes p[0 .. n+7) must be readable; it
// reads nothing past them and writes nothing past sizes[n), kinds[n).
// Only where HaveMapPacketsAvx512().
void MapPacketsAvx512(const uint8_t* p, size_t n, uint8_t* sizes, uint8_t* kinds);

}  // namespace perftest::pt::internal
