// Intel PT packet encoder: Packets in, bytes out — the inverse of
// packet_decoder.h, for test streams and for the mock's PT writer.
//
//   pt::PacketEncoder enc;
//   enc.Next(pt::make::Psb());
//   enc.Next(pt::make::Tsc(0x1234));
//   enc.Next(pt::make::PsbEnd());
//   enc.NextIp(pt::PacketType::kTipPge, 0x401000);  // IPBytes picked from the last IP
//   enc.Next(pt::make::Tnt8(0b101, 3));             // taken, not taken, taken
//   std::vector<uint8_t> trace = enc.Release();
//
// The make:: builders return the Packet the decoder would produce for those
// fields (offset 0), so Decode(Encode(p)) == p and, for every packet the
// decoder returns, Encode(p) gives back its bytes exactly (round-trip tests,
// and the fuzzer). Builders mask their arguments to the field widths; the
// encoder rejects a Packet no decoder could have produced.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "harness/pt/last_ip.h"
#include "harness/pt/packet.h"
#include "harness/result.h"

namespace perftest::pt {

// Writes `packet` at the start of `out`; returns the number of bytes (its size).
// Errors: EINVAL, a packet the decoder never returns: kInvalid; a field out of
// range (TNT with 0 or too many branches, reserved IPBytes or PTW
// PayloadBytes, an IP payload wider than its IPBytes, a MODE payload of the
// other leaf, TMA FastCounter over 9 bits, CYC over 61 bits or a `size` too
// small for its count, an opcode/ext byte that does not name the type, a BIP
// whose size is not 5 or 9); ENOSPC, `out` is too small (nothing written).
Result<size_t> EncodePacket(const Packet& packet, std::span<uint8_t> out);

// The largest encoded packet (PSB), for buffers.
inline constexpr size_t kMaxPacketSize = 16;

// Appends packets to a growing trace buffer; the counterpart of libipt's pt_encoder.
class PacketEncoder {
 public:
  PacketEncoder() = default;

  // Appends `packet`; returns its size. Errors: as EncodePacket() (EINVAL);
  // nothing is appended then. A PSB resets the last IP (SDM §33.4.2.17).
  Result<size_t> Next(const Packet& packet);

  // Appends a TIP, TIP.PGE, TIP.PGD or FUP for `ip`, compressed against the
  // last IP with LastIp::Compress(); std::nullopt gives IPBytes 000b
  // (suppressed). Errors: EINVAL, `type` is not an IP packet type.
  Result<size_t> NextIp(PacketType type, std::optional<uint64_t> ip);

  uint64_t offset() const { return bytes_.size(); }
  const std::vector<uint8_t>& bytes() const { return bytes_; }
  std::vector<uint8_t> Release() { return std::move(bytes_); }
  const LastIp& last_ip() const { return last_ip_; }

 private:
  std::vector<uint8_t> bytes_;
  LastIp last_ip_;
};

// Builders, one per packet type (SDM §33.4.2.N as in packet.h).
namespace make {
Packet Pad();
Packet Psb();
Packet PsbEnd();
// `bits` as Packet::tnt_bits(): the oldest of `count` branches in bit count-1; 1 = taken.
// count: 1..6 for TNT-8, 1..47 for TNT-64 (the encoder rejects others).
Packet Tnt8(uint64_t bits, unsigned count);
Packet Tnt64(uint64_t bits, unsigned count);
// type: kTip, kTipPge, kTipPgd or kFup; `payload` is the raw IP payload for `ipbytes`.
Packet Ip(PacketType type, IpBytes ipbytes, uint64_t payload);
Packet Tip(IpBytes ipbytes, uint64_t payload);
Packet TipPge(IpBytes ipbytes, uint64_t payload);
Packet TipPgd(IpBytes ipbytes, uint64_t payload);
Packet Fup(IpBytes ipbytes, uint64_t payload);
Packet Pip(uint64_t cr3, bool nr);  // cr3 bits 51:5
Packet ModeExec(bool cs_l, bool cs_d, bool if_flag = false);
Packet ModeExec(ExecMode mode, bool if_flag = false);
Packet ModeTsx(bool intx, bool txabort);
Packet TraceStop();
Packet Cbr(uint8_t ratio);
Packet Tsc(uint64_t tsc);            // bits 55:0
Packet Mtc(uint8_t ctc);
Packet Tma(uint16_t ctc, uint16_t fc);  // fc bits 8:0
// The shortest CYC for `cycles`, or `size` bytes (up to 9) when given.
Packet Cyc(uint64_t cycles, unsigned size = 0);
Packet Vmcs(uint64_t base);          // bits 51:12
Packet Ovf();
Packet Mnt(uint64_t payload);
Packet Ptw(uint64_t payload, unsigned payload_bytes, bool ip);  // 4 or 8 bytes
Packet ExStop(bool ip);
Packet Mwait(uint32_t hints, uint32_t ext);
Packet Pwre(uint8_t state, uint8_t sub_state, bool hw);
Packet Pwrx(uint8_t last, uint8_t deepest, uint8_t wake_reason);
Packet Bbp(unsigned item_bytes, uint8_t type);  // 4 or 8
Packet Bip(uint8_t id, uint64_t value, unsigned item_bytes);
Packet Bep(bool ip);
// CFE: type bits 4:0, the vector, the IP bit (a FUP follows).
Packet Cfe(uint8_t type, uint8_t vector, bool ip);
// EVD: type bits 5:0 (0 CR2, 1 VMX exit qualification, 2 VMX exit reason), the data.
Packet Evd(uint8_t type, uint64_t payload);
// TRIG: the trigger bit vector, ICNT (given: ICNTV set), MULT, IP.
Packet Trig(uint8_t trbv, std::optional<uint16_t> icnt, bool mult, bool ip);
}  // namespace make

}  // namespace perftest::pt
