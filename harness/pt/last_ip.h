// IP decompression for TIP, TIP.PGE, TIP.PGD and FUP (SDM §33.4.2.2 "Target
// IP (TIP) Packet", table "Compressed IP Payload Format"): the decoder keeps
// the last IP, and each IP packet replaces some of its low bytes, or all of
// it, or says that the IP is suppressed.
//
//   pt::LastIp last_ip;                          // no IP yet
//   last_ip.Reset();                             // at each PSB (SDM §33.4.2.17)
//   if (p.is_ip()) RETURN_IF_ERROR(last_ip.Update(p));
//   Result<uint64_t> ip = last_ip.ip();          // EADDRNOTAVAIL if suppressed
//
// The inverse, LastIp::Compress(), picks the shortest IPBytes that
// reproduces an IP, as the encoder (and the mock's PT writer) needs it.
#pragma once

#include <cstdint>

#include "harness/pt/packet.h"
#include "harness/result.h"

namespace perftest::pt {

class LastIp {
 public:
  LastIp() = default;

  // Forgets the last IP, as a PSB does: the last IP becomes 0 and there is
  // no IP until the next IP packet with a payload. (libipt: pt_last_ip_init.)
  void Reset() { *this = LastIp(); }

  // Applies the IPBytes/payload of an IP packet:
  //   000b  the IP is suppressed; the last IP itself is kept
  //   001b  IP[15:0] = payload, IP[63:16] from the last IP
  //   010b  IP[31:0] = payload, IP[63:32] from the last IP
  //   011b  IP[47:0] = payload, sign-extended from bit 47
  //   100b  IP[47:0] = payload, IP[63:48] from the last IP
  //   110b  IP = payload
  // An update with no IP so far starts from a last IP of 0 (as the hardware
  // does after a PSB). Payload bits above the IPBytes size are ignored.
  // Errors: EBADMSG for the reserved IPBytes 101b and 111b (the last IP is
  // unchanged).
  Result<void> Update(uint8_t ipbytes, uint64_t payload);
  // Same for a TIP, TIP.PGE, TIP.PGD or FUP packet; EINVAL for any other type.
  Result<void> Update(const Packet& packet);
  // Update(ipbytes, payload) without the Result, inline, for decoders' hot
  // paths: false (and no change) for the reserved IPBytes 101b and 111b.
  bool UpdateInline(uint8_t ipbytes, uint64_t payload) {
    if (ipbytes == 0b000) {
      suppressed_ = true;
      return true;
    }
    if ((ipbytes & 0b101) == 0b101) return false;  // 101b, 111b
    ip_ = Decompress(ip_, ipbytes, payload);
    have_ip_ = true;
    suppressed_ = false;
    return true;
  }

  // UpdateInline() for an IPBytes that is not reserved and a payload already
  // masked to its size (`mask`: the payload bits of that IPBytes — 0 for
  // 000b, the low 16, 32, 48, 48 or 64 bits — as the packet decoder's
  // first-byte tables give them, internal/opcodes.h kFast.mask): no branch
  // on IPBytes (a select for the sign extension of 011b), for the flow
  // decoder's IP packets read straight from their bytes, whose IPBytes are
  // as unpredictable as the branches they resolve.
  void UpdateMasked(uint8_t ipbytes, uint64_t payload, uint64_t mask) {
    const uint64_t merged = (ip_ & ~mask) | payload;  // (000b: mask 0, the last IP kept)
    const uint64_t extended = static_cast<uint64_t>(static_cast<int64_t>(payload << 16) >> 16);
    ip_ = ipbytes == 0b011 ? extended : merged;
    have_ip_ = have_ip_ || ipbytes != 0;
    suppressed_ = ipbytes == 0;
  }

  // The current IP. Errors: ENOENT if there has been no IP since the start
  // or the last Reset(); EADDRNOTAVAIL if the last IP packet suppressed it
  // (IPBytes 000b). (libipt: pte_noip, pte_ip_suppressed.)
  Result<uint64_t> ip() const;

  bool have_ip() const { return have_ip_; }
  bool suppressed() const { return suppressed_; }
  // The stored last IP, whether or not it is current (0 after Reset()).
  uint64_t raw() const { return ip_; }

  // The IP that `ipbytes`/`payload` make from `last` (no error checking:
  // reserved IPBytes return `last`).
  static uint64_t Decompress(uint64_t last, uint8_t ipbytes, uint64_t payload) {
    switch (ipbytes) {
      case 0b001: return (last & ~0xffffull) | (payload & 0xffffull);
      case 0b010: return (last & ~0xffffffffull) | (payload & 0xffffffffull);
      case 0b011: return static_cast<uint64_t>(static_cast<int64_t>(payload << 16) >> 16);
      case 0b100: return (last & ~0xffffffffffffull) | (payload & 0xffffffffffffull);
      case 0b110: return payload;
      default: return last;
    }
  }

  // The shortest IPBytes (and its payload) that turns `last` into `ip`:
  // 001b/010b when the high 48/32 bits match, then 011b when `ip` is the
  // sign extension of its bit 47, then 100b when the high 16 bits match,
  // else 110b. With have_last = false only 011b and 110b are used.
  struct Compressed {
    uint8_t ipbytes;
    uint64_t payload;
  };
  static Compressed Compress(uint64_t last, bool have_last, uint64_t ip);

 private:
  uint64_t ip_ = 0;
  bool have_ip_ = false;
  bool suppressed_ = false;
};

}  // namespace perftest::pt
