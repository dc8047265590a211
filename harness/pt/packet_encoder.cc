#include "harness/pt/packet_encoder.h"

#include <fmt/format.h>

#include <bit>
#include <cerrno>
#include <cstring>

#include "harness/pt/internal/opcodes.h"

namespace perftest::pt {
namespace {

using namespace internal;  // opcode constants

bool Fits(uint64_t v, unsigned bytes) { return bytes >= 8 || (v >> (8 * bytes)) == 0; }

// Bytes of a CYC for `cycles`: 1 for up to 5 bits, then one per 7 bits.
unsigned CycMinSize(uint64_t cycles) {
  const unsigned bits = static_cast<unsigned>(std::bit_width(cycles));
  return bits <= 5 ? 1 : 1 + (bits - 5 + 6) / 7;
}

uint8_t IpOpcodeLow(PacketType type) {
  switch (type) {
    case PacketType::kTip: return kOpcTip;
    case PacketType::kTipPge: return kOpcTipPge;
    case PacketType::kTipPgd: return kOpcTipPgd;
    case PacketType::kFup: return kOpcFup;
    default: return 0;
  }
}

// Fills `buf` (kMaxPacketSize bytes); returns the size or -errno.
int Encode(const Packet& p, uint8_t* buf) {
  auto put = [&](unsigned at, uint64_t v, unsigned n) {
    for (unsigned i = 0; i < n; ++i) buf[at + i] = static_cast<uint8_t>(v >> (8 * i));
  };
  auto ext = [&](uint8_t x, uint64_t payload, unsigned payload_bytes) -> int {
    if (!Fits(payload, payload_bytes)) return -EINVAL;
    buf[0] = kOpcExt;
    buf[1] = x;
    put(2, payload, payload_bytes);
    return 2 + static_cast<int>(payload_bytes);
  };
  switch (p.type) {
    case PacketType::kInvalid:
      return -EINVAL;
    case PacketType::kPad:
      buf[0] = kOpcPad;
      return 1;
    case PacketType::kPsb:
      for (int i = 0; i < kPsbSize; i += 2) {
        buf[i] = kOpcExt;
        buf[i + 1] = kExtPsb;
      }
      return kPsbSize;
    case PacketType::kPsbEnd: return ext(kExtPsbEnd, 0, 0);
    case PacketType::kTraceStop: return ext(kExtStop, 0, 0);
    case PacketType::kOvf: return ext(kExtOvf, 0, 0);
    case PacketType::kTnt8:
      // Bit 0 clear, the stop bit in bits 7:2 (1..6 branches); nothing else.
      if ((p.opcode & 1) != 0 || p.opcode < 4 || p.payload != 0) return -EINVAL;
      buf[0] = p.opcode;
      return 1;
    case PacketType::kTnt64:
      if (p.payload < 2 || !Fits(p.payload, 6)) return -EINVAL;
      return ext(kExtTnt64, p.payload, 6);
    case PacketType::kTip:
    case PacketType::kTipPge:
    case PacketType::kTipPgd:
    case PacketType::kFup: {
      const uint8_t ipbytes = p.opcode >> 5;
      const int n = IpPayloadSize(ipbytes);
      if (n < 0 || !Fits(p.payload, static_cast<unsigned>(n))) return -EINVAL;
      if ((p.opcode & 0x1f) != IpOpcodeLow(p.type)) return -EINVAL;
      buf[0] = p.opcode;
      put(1, p.payload, static_cast<unsigned>(n));
      return 1 + n;
    }
    case PacketType::kPip: return ext(kExtPip, p.payload, 6);
    case PacketType::kModeExec:
    case PacketType::kModeTsx: {
      const uint64_t leaf = p.type == PacketType::kModeExec ? 0 : 1;
      if (p.payload > 0xff || (p.payload >> 5) != leaf) return -EINVAL;
      buf[0] = kOpcMode;
      buf[1] = static_cast<uint8_t>(p.payload);
      return 2;
    }
    case PacketType::kCbr: return ext(kExtCbr, p.payload, 2);
    case PacketType::kTsc:
      if (!Fits(p.payload, 7)) return -EINVAL;
      buf[0] = kOpcTsc;
      put(1, p.payload, 7);
      return 8;
    case PacketType::kMtc:
      if (!Fits(p.payload, 1)) return -EINVAL;
      buf[0] = kOpcMtc;
      buf[1] = static_cast<uint8_t>(p.payload);
      return 2;
    case PacketType::kTma: {
      const uint64_t fc = p.payload >> 16;
      if (fc > 0x1ff) return -EINVAL;
      buf[0] = kOpcExt;
      buf[1] = kExtTma;
      put(2, p.payload, 2);  // CTC[15:0]
      buf[4] = 0;            // reserved
      put(5, fc, 2);         // FastCounter[7:0], FastCounter[8]
      return 7;
    }
    case PacketType::kCyc: {
      // opcode: Cycle Counter[4:0], Exp, 11b; then extension bytes, each with
      // Exp (bit 0) set but the last.
      if (p.size < 1 || p.size > 9 || (p.opcode & 3) != kOpcCyc || ((p.opcode & 4) != 0) != (p.size > 1)) {
        return -EINVAL;
      }
      const unsigned n = p.size - 1u;
      if (!Fits(p.payload, n)) return -EINVAL;
      for (unsigned i = 0; i < n; ++i) {
        if (((p.payload >> (8 * i)) & 1) != (i + 1 < n ? 1u : 0u)) return -EINVAL;
      }
      buf[0] = p.opcode;
      put(1, p.payload, n);
      return static_cast<int>(p.size);
    }
    case PacketType::kVmcs: return ext(kExtVmcs, p.payload, 5);
    case PacketType::kMnt:
      buf[0] = kOpcExt;
      buf[1] = kExtExt2;
      buf[2] = kExt2Mnt;
      put(3, p.payload, 8);
      return 11;
    case PacketType::kPtw: {
      if ((p.ext & 0x1f) != kExtPtw) return -EINVAL;
      const unsigned code = (p.ext >> 5) & 3;
      if (code > 1) return -EINVAL;
      return ext(p.ext, p.payload, code == 0 ? 4 : 8);
    }
    case PacketType::kExStop:
      if (p.ext != kExtExStop && p.ext != kExtExStopIp) return -EINVAL;
      return ext(p.ext, 0, 0);
    case PacketType::kMwait: return ext(kExtMwait, p.payload, 8);
    case PacketType::kPwre: return ext(kExtPwre, p.payload, 2);
    case PacketType::kPwrx: return ext(kExtPwrx, p.payload, 5);
    case PacketType::kBbp: return ext(kExtBbp, p.payload, 1);
    case PacketType::kBep:
      if (p.ext != kExtBep && p.ext != kExtBepIp) return -EINVAL;
      return ext(p.ext, 0, 0);
    case PacketType::kCfe: return ext(kExtCfe, p.payload, 2);
    case PacketType::kEvd:
      // The Type byte is in `opcode` (packet.h).
      buf[0] = kOpcExt;
      buf[1] = kExtEvd;
      buf[2] = p.opcode;
      put(3, p.payload, 8);
      return 11;
    case PacketType::kTrig: {
      const unsigned n = (p.payload & 0x40) != 0 ? 4 : 2;
      if (!Fits(p.payload, n)) return -EINVAL;
      buf[0] = kOpcTrig;
      put(1, p.payload, n);
      return 1 + static_cast<int>(n);
    }
    case PacketType::kBip: {
      if ((p.opcode & 7) != kOpcBip || (p.size != 5 && p.size != 9)) return -EINVAL;
      const unsigned n = p.size - 1u;
      if (!Fits(p.payload, n)) return -EINVAL;
      buf[0] = p.opcode;
      put(1, p.payload, n);
      return static_cast<int>(p.size);
    }
  }
  return -EINVAL;
}

std::string Call(const Packet& p) { return fmt::format("pt::EncodePacket({})", Describe(p)); }

}  // namespace

Result<size_t> EncodePacket(const Packet& packet, std::span<uint8_t> out) {
  uint8_t buf[kMaxPacketSize];
  const int n = Encode(packet, buf);
  if (n < 0) return Result<size_t>::Failure(-n, Call(packet));
  if (out.size() < static_cast<size_t>(n)) return Result<size_t>::Failure(ENOSPC, Call(packet));
  std::memcpy(out.data(), buf, static_cast<size_t>(n));
  return Result<size_t>::Ok(static_cast<size_t>(n));
}

Result<size_t> PacketEncoder::Next(const Packet& packet) {
  uint8_t buf[kMaxPacketSize];
  const int n = Encode(packet, buf);
  if (n < 0) return Result<size_t>::Failure(-n, Call(packet));
  bytes_.insert(bytes_.end(), buf, buf + n);
  if (packet.type == PacketType::kPsb) last_ip_.Reset();
  if (packet.is_ip()) (void)last_ip_.Update(packet);
  return Result<size_t>::Ok(static_cast<size_t>(n));
}

Result<size_t> PacketEncoder::NextIp(PacketType type, std::optional<uint64_t> ip) {
  if (IpOpcodeLow(type) == 0) {
    return Result<size_t>::Failure(EINVAL, fmt::format("pt::PacketEncoder::NextIp({})", PacketName(type)));
  }
  if (!ip) return Next(make::Ip(type, IpBytes::kSuppressed, 0));
  const LastIp::Compressed c = LastIp::Compress(last_ip_.raw(), last_ip_.have_ip(), *ip);
  return Next(make::Ip(type, static_cast<IpBytes>(c.ipbytes), c.payload));
}

namespace make {
namespace {

Packet Of(PacketType type, uint8_t size, uint64_t payload = 0, uint8_t opcode = kOpcExt, uint8_t ext = 0) {
  Packet p;
  p.type = type;
  p.size = size;
  p.payload = payload;
  p.opcode = opcode;
  p.ext = ext;
  return p;
}

uint64_t Low(uint64_t v, unsigned bits) { return bits >= 64 ? v : v & ((uint64_t{1} << bits) - 1); }

Packet Tnt(PacketType type, uint64_t bits, unsigned count, unsigned max) {
  // Out-of-range counts give a packet the encoder rejects (no stop bit).
  const uint64_t field = count == 0 || count > max ? 0 : (Low(bits, count) | (uint64_t{1} << count));
  if (type == PacketType::kTnt8) return Of(type, 1, 0, static_cast<uint8_t>(field << 1));
  return Of(type, 8, field, kOpcExt, kExtTnt64);
}

}  // namespace

Packet Pad() { return Of(PacketType::kPad, 1, 0, kOpcPad); }
Packet Psb() { return Of(PacketType::kPsb, kPsbSize, 0, kOpcExt, kExtPsb); }
Packet PsbEnd() { return Of(PacketType::kPsbEnd, 2, 0, kOpcExt, kExtPsbEnd); }
Packet Tnt8(uint64_t bits, unsigned count) { return Tnt(PacketType::kTnt8, bits, count, 6); }
Packet Tnt64(uint64_t bits, unsigned count) { return Tnt(PacketType::kTnt64, bits, count, 47); }
Packet Ip(PacketType type, IpBytes ipbytes, uint64_t payload) {
  const auto code = static_cast<uint8_t>(ipbytes);
  const int n = IpPayloadSize(code);
  const uint8_t opcode = static_cast<uint8_t>((code << 5) | IpOpcodeLow(type));
  return Of(type, static_cast<uint8_t>(1 + (n < 0 ? 0 : n)), n < 0 ? payload : Low(payload, 8 * n), opcode);
}
Packet Tip(IpBytes ipbytes, uint64_t payload) { return Ip(PacketType::kTip, ipbytes, payload); }
Packet TipPge(IpBytes ipbytes, uint64_t payload) { return Ip(PacketType::kTipPge, ipbytes, payload); }
Packet TipPgd(IpBytes ipbytes, uint64_t payload) { return Ip(PacketType::kTipPgd, ipbytes, payload); }
Packet Fup(IpBytes ipbytes, uint64_t payload) { return Ip(PacketType::kFup, ipbytes, payload); }
Packet Pip(uint64_t cr3, bool nr) {
  return Of(PacketType::kPip, 8, (Low(cr3 >> 5, 47) << 1) | (nr ? 1 : 0), kOpcExt, kExtPip);
}
Packet ModeExec(bool cs_l, bool cs_d, bool if_flag) {
  return Of(PacketType::kModeExec, 2, (cs_l ? 1 : 0) | (cs_d ? 2 : 0) | (if_flag ? 4 : 0), kOpcMode);
}
Packet ModeExec(ExecMode mode, bool if_flag) {
  return ModeExec(mode == ExecMode::k64Bit || mode == ExecMode::kInvalid,
                  mode == ExecMode::k32Bit || mode == ExecMode::kInvalid, if_flag);
}
Packet ModeTsx(bool intx, bool txabort) {
  return Of(PacketType::kModeTsx, 2, 0x20 | (intx ? 1 : 0) | (txabort ? 2 : 0), kOpcMode);
}
Packet TraceStop() { return Of(PacketType::kTraceStop, 2, 0, kOpcExt, kExtStop); }
Packet Cbr(uint8_t ratio) { return Of(PacketType::kCbr, 4, ratio, kOpcExt, kExtCbr); }
Packet Tsc(uint64_t tsc) { return Of(PacketType::kTsc, 8, Low(tsc, 56), kOpcTsc); }
Packet Mtc(uint8_t ctc) { return Of(PacketType::kMtc, 2, ctc, kOpcMtc); }
Packet Tma(uint16_t ctc, uint16_t fc) {
  return Of(PacketType::kTma, 7, ctc | (Low(fc, 9) << 16), kOpcExt, kExtTma);
}
Packet Cyc(uint64_t cycles, unsigned size) {
  const unsigned min = CycMinSize(cycles);
  const unsigned n = size != 0 ? size : min;
  // Too small a size, or a count over 61 bits: size 0, which the encoder rejects.
  if (n < min || n > 9) return Of(PacketType::kCyc, 0, 0, kOpcCyc);
  const uint8_t opcode = static_cast<uint8_t>(((cycles & 0x1f) << 3) | (n > 1 ? 4 : 0) | kOpcCyc);
  uint64_t ext = 0;
  for (unsigned i = 0; i + 1 < n; ++i) {
    const uint64_t byte = (((cycles >> (5 + 7 * i)) & 0x7f) << 1) | (i + 2 < n ? 1 : 0);
    ext |= byte << (8 * i);
  }
  return Of(PacketType::kCyc, static_cast<uint8_t>(n), ext, opcode);
}
Packet Vmcs(uint64_t base) { return Of(PacketType::kVmcs, 7, Low(base >> 12, 40), kOpcExt, kExtVmcs); }
Packet Ovf() { return Of(PacketType::kOvf, 2, 0, kOpcExt, kExtOvf); }
Packet Mnt(uint64_t payload) { return Of(PacketType::kMnt, 11, payload, kOpcExt, kExtExt2); }
Packet Ptw(uint64_t payload, unsigned payload_bytes, bool ip) {
  const bool eight = payload_bytes == 8;
  const uint8_t ext = static_cast<uint8_t>((ip ? 0x80 : 0) | (eight ? 0x20 : 0) | kExtPtw);
  return Of(PacketType::kPtw, eight ? 10 : 6, eight ? payload : Low(payload, 32), kOpcExt, ext);
}
Packet ExStop(bool ip) { return Of(PacketType::kExStop, 2, 0, kOpcExt, ip ? kExtExStopIp : kExtExStop); }
Packet Mwait(uint32_t hints, uint32_t ext) {
  return Of(PacketType::kMwait, 10, hints | (uint64_t{ext} << 32), kOpcExt, kExtMwait);
}
Packet Pwre(uint8_t state, uint8_t sub_state, bool hw) {
  return Of(PacketType::kPwre, 4, (hw ? 0x80 : 0) | (uint64_t{sub_state & 0xfu} << 8) | (uint64_t{state & 0xfu} << 12),
            kOpcExt, kExtPwre);
}
Packet Pwrx(uint8_t last, uint8_t deepest, uint8_t wake_reason) {
  return Of(PacketType::kPwrx, 7, (deepest & 0xfu) | ((last & 0xfu) << 4) | (uint64_t{wake_reason & 0xfu} << 8),
            kOpcExt, kExtPwrx);
}
Packet Bbp(unsigned item_bytes, uint8_t type) {
  return Of(PacketType::kBbp, 3, (item_bytes == 4 ? 0x80 : 0) | (type & 0x1fu), kOpcExt, kExtBbp);
}
Packet Bip(uint8_t id, uint64_t value, unsigned item_bytes) {
  const bool four = item_bytes == 4;
  return Of(PacketType::kBip, four ? 5 : 9, four ? Low(value, 32) : value,
            static_cast<uint8_t>(((id & 0x1f) << 3) | kOpcBip));
}
Packet Bep(bool ip) { return Of(PacketType::kBep, 2, 0, kOpcExt, ip ? kExtBepIp : kExtBep); }
Packet Cfe(uint8_t type, uint8_t vector, bool ip) {
  return Of(PacketType::kCfe, 4, (ip ? 0x80 : 0) | (type & 0x1fu) | (uint64_t{vector} << 8), kOpcExt, kExtCfe);
}
Packet Evd(uint8_t type, uint64_t payload) {
  return Of(PacketType::kEvd, 11, payload, static_cast<uint8_t>(type & 0x3f), kExtEvd);
}
Packet Trig(uint8_t trbv, std::optional<uint16_t> icnt, bool mult, bool ip) {
  const uint64_t flags = (ip ? 0x80 : 0) | (icnt ? 0x40 : 0) | (mult ? 0x20 : 0);
  const uint64_t payload = flags | (uint64_t{trbv} << 8) | (icnt ? uint64_t{*icnt} << 16 : 0);
  return Of(PacketType::kTrig, icnt ? 5 : 3, payload, kOpcTrig);
}

}  // namespace make
}  // namespace perftest::pt
