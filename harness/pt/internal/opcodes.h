// Opcode bytes of SDM §33.4.2 and the dispatch tables the packet decoder
// indexes with the first byte (and, for 02h, the second byte). Internal to
// harness/pt: packet_decoder.h inlines its fast path over these tables, and
// packet_encoder.cc writes the same constants.
#pragma once

#include <array>
#include <cstdint>

#include "harness/pt/packet.h"

namespace perftest::pt::internal {

// First bytes.
inline constexpr uint8_t kOpcPad = 0x00;
inline constexpr uint8_t kOpcExt = 0x02;   // extended opcode follows
inline constexpr uint8_t kOpcTip = 0x0d;   // low 5 bits; IPBytes in 7:5
inline constexpr uint8_t kOpcTipPge = 0x11;
inline constexpr uint8_t kOpcTipPgd = 0x01;
inline constexpr uint8_t kOpcFup = 0x1d;
inline constexpr uint8_t kOpcTsc = 0x19;
inline constexpr uint8_t kOpcMtc = 0x59;
inline constexpr uint8_t kOpcMode = 0x99;
inline constexpr uint8_t kOpcCyc = 0x03;   // low 2 bits; Exp in bit 2, Cycle Counter[4:0] in 7:3
inline constexpr uint8_t kOpcBip = 0x04;   // low 3 bits, inside a block; ID in 7:3
inline constexpr uint8_t kOpcTrig = 0xd9;  // TRIG: 3 bytes, 5 with ICNTV (byte 1 bit 6)

// Second bytes after 02h.
inline constexpr uint8_t kExtPsb = 0x82;
inline constexpr uint8_t kExtPsbEnd = 0x23;
inline constexpr uint8_t kExtTnt64 = 0xa3;
inline constexpr uint8_t kExtPip = 0x43;
inline constexpr uint8_t kExtCbr = 0x03;
inline constexpr uint8_t kExtTma = 0x73;
inline constexpr uint8_t kExtStop = 0x83;
inline constexpr uint8_t kExtVmcs = 0xc8;
inline constexpr uint8_t kExtOvf = 0xf3;
inline constexpr uint8_t kExtExt2 = 0xc3;  // a third opcode byte follows
inline constexpr uint8_t kExt2Mnt = 0x88;
inline constexpr uint8_t kExtPtw = 0x12;   // low 5 bits; IP in 7, PayloadBytes in 6:5
inline constexpr uint8_t kExtExStop = 0x62;
inline constexpr uint8_t kExtExStopIp = 0xe2;
inline constexpr uint8_t kExtMwait = 0xc2;
inline constexpr uint8_t kExtPwre = 0x22;
inline constexpr uint8_t kExtPwrx = 0xa2;
inline constexpr uint8_t kExtBbp = 0x63;
inline constexpr uint8_t kExtBep = 0x33;
inline constexpr uint8_t kExtBepIp = 0xb3;
inline constexpr uint8_t kExtCfe = 0x13;
inline constexpr uint8_t kExtEvd = 0x53;

inline constexpr int kPsbSize = 16;

// What the first byte says.
enum class OpKind : uint8_t {
  kSimple,      // fixed size, payload from bytes 1..size-1 (OpEntry); CYC with Exp set included
  kExt,         // 02h: look at the second byte
  kMode,        // 99h: the leaf in byte 1 picks MODE.Exec or MODE.TSX
  kBadOpcode,   // no such packet: EILSEQ
  kBadIpBytes,  // TIP/TIP.PGE/TIP.PGD/FUP with IPBytes 101b or 111b: EBADMSG
  kTrig,        // D9h: TRIG, its size from byte 1 (PacketDecoder::Options::trigger_packets)
};

// What the first byte says. The fast path (FastDecode below) takes a packet
// when ((byte 1 | 100h) & reject) == 0 (FastTables::reject holds the test as
// a mask over bytes 0..1), with payload = bytes 1..8 & mask.
struct OpEntry {
  uint64_t mask = 0;   // the payload bits among bytes 1..8
  PacketType type = PacketType::kInvalid;
  uint8_t size = 0;    // total bytes (fast path)
  uint8_t opcode = 0;  // the index
  uint8_t ext = 0;
  uint16_t reject = 0x100;  // 100h: not for the fast path; else bits of byte 1 that must be clear
  OpKind kind = OpKind::kBadOpcode;
};

constexpr OpEntry Entry(PacketType type, uint8_t size, OpKind kind) {
  OpEntry e;
  e.type = type;
  e.size = size;
  e.kind = kind;
  if (kind == OpKind::kSimple && size >= 1) {
    e.mask = size - 1 >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * (size - 1))) - 1;
    e.reject = 0;
  }
  return e;
}

// A CYC with Exp set whose first extension byte ends it (the common long
// CYC): a 2-byte packet to the fast path. Longer CYCs (byte 1's Exp set)
// take the slow one.
constexpr OpEntry CycTwoByteEntry() {
  OpEntry e = Entry(PacketType::kCyc, 2, OpKind::kSimple);
  e.reject = 0x01;
  return e;
}

constexpr std::array<OpEntry, 256> MakeFirstByteTable() {
  std::array<OpEntry, 256> t{};
  for (int i = 0; i < 256; ++i) {
    const auto b = static_cast<uint8_t>(i);
    OpEntry e = Entry(PacketType::kInvalid, 0, OpKind::kBadOpcode);
    if (b == kOpcPad) {
      e = Entry(PacketType::kPad, 1, OpKind::kSimple);
    } else if (b == kOpcExt) {
      e = Entry(PacketType::kInvalid, 0, OpKind::kExt);
    } else if ((b & 1) == 0) {
      e = Entry(PacketType::kTnt8, 1, OpKind::kSimple);
    } else if ((b & 3) == kOpcCyc) {
      e = (b & 4) ? CycTwoByteEntry() : Entry(PacketType::kCyc, 1, OpKind::kSimple);
    } else if (b == kOpcTsc) {
      e = Entry(PacketType::kTsc, 8, OpKind::kSimple);
    } else if (b == kOpcMtc) {
      e = Entry(PacketType::kMtc, 2, OpKind::kSimple);
    } else if (b == kOpcMode) {
      e = Entry(PacketType::kInvalid, 2, OpKind::kMode);
    } else if (b == kOpcTrig) {
      e = Entry(PacketType::kTrig, 0, OpKind::kTrig);
    } else {
      PacketType type = PacketType::kInvalid;
      switch (b & 0x1f) {
        case kOpcTip: type = PacketType::kTip; break;
        case kOpcTipPge: type = PacketType::kTipPge; break;
        case kOpcTipPgd: type = PacketType::kTipPgd; break;
        case kOpcFup: type = PacketType::kFup; break;
        default: break;
      }
      if (type != PacketType::kInvalid) {
        constexpr int kIpSize[8] = {0, 2, 4, 6, 6, -1, 8, -1};
        const int n = kIpSize[b >> 5];
        e = n < 0 ? Entry(type, 0, OpKind::kBadIpBytes) : Entry(type, static_cast<uint8_t>(1 + n), OpKind::kSimple);
      }
    }
    e.opcode = b;
    t[i] = e;
  }
  return t;
}

// What the first byte says, for the slow path.
constexpr std::array<OpKind, 256> MakeFirstByteKindTable() {
  std::array<OpKind, 256> t{};
  const std::array<OpEntry, 256> full = MakeFirstByteTable();
  for (int i = 0; i < 256; ++i) t[i] = full[i].kind;
  return t;
}
inline constexpr std::array<OpKind, 256> kFirstByteKind = MakeFirstByteKindTable();

// The fast path's tables, indexed by the first byte, in one object so that a
// single base register reaches all three:
//   mask[b]  the payload bits among bytes 1..8
//   info[b]  bytes 0..3: the Packet's type, size, opcode, ext (0); bytes 4..5:
//            OpEntry::reject
//   size[b]  the packet's size
//   reject[b] the bits of bytes 0..1 (little-endian) that send the packet to
//            the slow path: the opcode's own bits for opcodes the fast path
//            never takes (02h, 99h, bad ones), bit 8 (byte 1's Exp bit) for a
//            CYC with Exp set, else 0
struct FastTables {
  uint64_t mask[256];
  uint64_t info[256];
  uint8_t size[256];
  uint16_t reject[256];
};
constexpr FastTables MakeFastTables() {
  FastTables t{};
  const std::array<OpEntry, 256> full = MakeFirstByteTable();
  for (int i = 0; i < 256; ++i) {
    const OpEntry& e = full[i];
    t.mask[i] = e.mask;
    t.info[i] = uint64_t{static_cast<uint8_t>(e.type)} | uint64_t{e.size} << 8 | uint64_t{e.opcode} << 16 |
                uint64_t{e.ext} << 24 | uint64_t{e.reject} << 32;
    t.size[i] = e.size;
    t.reject[i] = e.reject == 0x100 ? static_cast<uint16_t>(i == 0 ? 0 : i) : static_cast<uint16_t>(e.reject << 8);
  }
  return t;
}
alignas(64) inline constexpr FastTables kFast = MakeFastTables();

// What the second byte of a 02h packet says.
enum class ExtKind : uint8_t {
  kSimple,  // fixed size, payload = bytes 2..size-1
  kPsb,     // check the 16-byte pattern
  kTnt64,   // check the stop bit
  kTma,     // check the reserved bits
  kPtw,     // size from PayloadBytes
  kExt2,    // C3h: MNT if the third byte is 88h
  kBlock,   // BBP/BEP: kSimple when block packets are enabled
  kEvent,   // CFE (kSimple) and EVD (Type byte, then 8 bytes) when Event Trace packets are enabled
  kBad,     // EILSEQ
};

struct ExtEntry {
  PacketType type;
  uint8_t size;
  ExtKind kind;
};

constexpr std::array<ExtEntry, 256> MakeExtTable() {
  std::array<ExtEntry, 256> t{};
  for (int i = 0; i < 256; ++i) {
    const auto x = static_cast<uint8_t>(i);
    ExtEntry e{PacketType::kInvalid, 0, ExtKind::kBad};
    switch (x) {
      case kExtPsb: e = {PacketType::kPsb, kPsbSize, ExtKind::kPsb}; break;
      case kExtPsbEnd: e = {PacketType::kPsbEnd, 2, ExtKind::kSimple}; break;
      case kExtTnt64: e = {PacketType::kTnt64, 8, ExtKind::kTnt64}; break;
      case kExtPip: e = {PacketType::kPip, 8, ExtKind::kSimple}; break;
      case kExtCbr: e = {PacketType::kCbr, 4, ExtKind::kSimple}; break;
      case kExtTma: e = {PacketType::kTma, 7, ExtKind::kTma}; break;
      case kExtStop: e = {PacketType::kTraceStop, 2, ExtKind::kSimple}; break;
      case kExtVmcs: e = {PacketType::kVmcs, 7, ExtKind::kSimple}; break;
      case kExtOvf: e = {PacketType::kOvf, 2, ExtKind::kSimple}; break;
      case kExtExt2: e = {PacketType::kMnt, 11, ExtKind::kExt2}; break;
      case kExtExStop:
      case kExtExStopIp: e = {PacketType::kExStop, 2, ExtKind::kSimple}; break;
      case kExtMwait: e = {PacketType::kMwait, 10, ExtKind::kSimple}; break;
      case kExtPwre: e = {PacketType::kPwre, 4, ExtKind::kSimple}; break;
      case kExtPwrx: e = {PacketType::kPwrx, 7, ExtKind::kSimple}; break;
      case kExtBbp: e = {PacketType::kBbp, 3, ExtKind::kBlock}; break;
      case kExtBep:
      case kExtBepIp: e = {PacketType::kBep, 2, ExtKind::kBlock}; break;
      case kExtCfe: e = {PacketType::kCfe, 4, ExtKind::kEvent}; break;
      case kExtEvd: e = {PacketType::kEvd, 11, ExtKind::kEvent}; break;
      default:
        if ((x & 0x1f) == kExtPtw) e = {PacketType::kPtw, 0, ExtKind::kPtw};
        break;
    }
    t[i] = e;
  }
  return t;
}
inline constexpr std::array<ExtEntry, 256> kExtByte = MakeExtTable();

// kPayloadMask[n]: the low n bytes (n = 0..8).
inline constexpr std::array<uint64_t, 9> kPayloadMask = {
    0, 0xff, 0xffff, 0xffffff, 0xffffffff, 0xffffffffffull, 0xffffffffffffull, 0xffffffffffffffull,
    ~uint64_t{0}};

// The fast path shared by PacketDecoder::Next() and Decode(): decodes the
// packet at begin[off], with bytes begin[off..off+8] readable, if it is a
// fixed-size packet or a CYC of up to 2 bytes, into `packet`, sets `size` and
// returns true; else returns false (the caller takes the slow path; `packet`
// is untouched). Branch-free but for that one, well-predicted, test (one
// 16-bit load and the reject word); the size is read straight from the first
// byte, so the next packet's position depends on two loads only.
inline bool FastDecode(const uint8_t* begin, uint64_t off, Packet& packet, unsigned& size) {
  uint16_t word;  // bytes 0..1
  __builtin_memcpy(&word, begin + off, sizeof word);
  const uint8_t b = static_cast<uint8_t>(word);
  if ((word & kFast.reject[b]) != 0) return false;
  uint64_t raw;  // bytes 1..8
  __builtin_memcpy(&raw, begin + off + 1, sizeof raw);
  size = kFast.size[b];
  const uint64_t info = kFast.info[b];
  packet.offset = off;
  packet.payload = raw & kFast.mask[b];
  const auto tail = static_cast<uint32_t>(info);
  __builtin_memcpy(&packet.type, &tail, 4);  // type, size, opcode, ext (0)
  return true;
}

}  // namespace perftest::pt::internal
