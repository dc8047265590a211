#include "harness/pt/testing/trace_generator.h"

#include <optional>

#include <cstdlib>

#include "harness/pt/packet_encoder.h"

namespace perftest::pt::testing {
namespace {

// Aborts: a generator bug, not a test outcome.
void Put(PacketEncoder& enc, const Packet& p) {
  if (!enc.Next(p).ok()) std::abort();
}
void PutIp(PacketEncoder& enc, PacketType type, std::optional<uint64_t> ip) {
  if (!enc.NextIp(type, ip).ok()) std::abort();
}

uint64_t Below(std::mt19937_64& rng, uint64_t n) { return n == 0 ? 0 : rng() % n; }
bool Chance(std::mt19937_64& rng, unsigned percent) { return Below(rng, 100) < percent; }

// A value of `bits` bits, biased to the edges: 0, all ones, one bit, small, any.
uint64_t Edgy(std::mt19937_64& rng, unsigned bits) {
  const uint64_t mask = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  switch (Below(rng, 6)) {
    case 0: return 0;
    case 1: return mask;
    case 2: return (uint64_t{1} << Below(rng, bits)) & mask;
    case 3: return Below(rng, 256) & mask;
    default: return rng() & mask;
  }
}

IpBytes RandomIpBytes(std::mt19937_64& rng) {
  static constexpr IpBytes kAll[] = {IpBytes::kSuppressed, IpBytes::kUpdate16, IpBytes::kUpdate32,
                                     IpBytes::kSext48,     IpBytes::kUpdate48, IpBytes::kFull};
  return kAll[Below(rng, 6)];
}

}  // namespace

Packet RandomPacket(std::mt19937_64& rng, const RandomPacketOptions& options) {
  const bool exact = options.libipt_exact;
  // Every type the encoder takes outside a block, plus BBP/BEP if asked.
  const int kinds = options.block_packets ? 28 : 26;
  if (options.event_trace && !exact && Chance(rng, 10)) {
    switch (Below(rng, 3)) {
      case 0: return make::Cfe(static_cast<uint8_t>(Below(rng, 16)), static_cast<uint8_t>(Edgy(rng, 8)), Chance(rng, 50));
      case 1: return make::Evd(static_cast<uint8_t>(Below(rng, 3)), Edgy(rng, 64));
      default: {
        const std::optional<uint16_t> icnt =
            Chance(rng, 50) ? std::optional<uint16_t>(static_cast<uint16_t>(Edgy(rng, 16))) : std::nullopt;
        return make::Trig(static_cast<uint8_t>(Edgy(rng, 8)), icnt, Chance(rng, 30), Chance(rng, 30));
      }
    }
  }
  switch (Below(rng, kinds)) {
    case 0: return make::Pad();
    case 1: return make::Psb();
    case 2: return make::PsbEnd();
    case 3: {
      const unsigned n = 1 + static_cast<unsigned>(Below(rng, 6));
      return make::Tnt8(rng(), n);
    }
    case 4: {
      const unsigned n = Chance(rng, 30) ? 47 : 1 + static_cast<unsigned>(Below(rng, 47));
      return make::Tnt64(rng(), n);
    }
    case 5: return make::Tip(RandomIpBytes(rng), Edgy(rng, 64));
    case 6: return make::TipPge(RandomIpBytes(rng), Edgy(rng, 64));
    case 7: return make::TipPgd(RandomIpBytes(rng), Edgy(rng, 64));
    case 8: return make::Fup(RandomIpBytes(rng), Edgy(rng, 64));
    case 9: return make::Pip(Edgy(rng, 52) & ~uint64_t{0x1f}, Chance(rng, 50));
    case 10: {
      Packet p = make::ModeExec(Chance(rng, 50), Chance(rng, 50), !exact && Chance(rng, 30));
      if (!exact && Chance(rng, 10)) p.payload |= Below(rng, 4) << 3;  // reserved bits 4:3
      return p;
    }
    case 11: {
      Packet p = make::ModeTsx(Chance(rng, 50), Chance(rng, 50));
      if (!exact && Chance(rng, 10)) p.payload |= Below(rng, 8) << 2;  // reserved bits 4:2
      return p;
    }
    case 12: return make::TraceStop();
    case 13: {
      Packet p = make::Cbr(static_cast<uint8_t>(Edgy(rng, 8)));
      if (!exact && Chance(rng, 10)) p.payload |= Below(rng, 256) << 8;  // reserved byte 3
      return p;
    }
    case 14: return make::Tsc(Edgy(rng, 56));
    case 15: return make::Mtc(static_cast<uint8_t>(Edgy(rng, 8)));
    case 16: return make::Tma(static_cast<uint16_t>(Edgy(rng, 16)), static_cast<uint16_t>(Edgy(rng, 9)));
    case 17: {
      const uint64_t cycles = Edgy(rng, 1 + static_cast<unsigned>(Below(rng, 61)));
      return make::Cyc(cycles);
    }
    case 18: return make::Vmcs(Edgy(rng, 52) & ~uint64_t{0xfff});
    case 19: return make::Ovf();
    case 20: return make::Mnt(Edgy(rng, 64));
    case 21: return make::Ptw(Edgy(rng, 64), Chance(rng, 50) ? 4 : 8, Chance(rng, 50));
    case 22: return make::ExStop(Chance(rng, 50));
    case 23: return make::Mwait(static_cast<uint32_t>(Edgy(rng, 32)), static_cast<uint32_t>(Edgy(rng, 32)));
    case 24: {
      Packet p = make::Pwre(static_cast<uint8_t>(Below(rng, 16)), static_cast<uint8_t>(Below(rng, 16)),
                            !exact && Chance(rng, 50));
      if (Chance(rng, 20)) p.payload |= 0x08;  // libipt's HW bit (reserved per SDM)
      if (!exact && Chance(rng, 10)) p.payload |= Below(rng, 8);
      return p;
    }
    case 25: {
      uint8_t wake = static_cast<uint8_t>(Below(rng, 16));
      if (exact) wake &= 0xd;  // libipt has no bit 1
      Packet p = make::Pwrx(static_cast<uint8_t>(Below(rng, 16)), static_cast<uint8_t>(Below(rng, 16)), wake);
      if (!exact && Chance(rng, 10)) p.payload |= Below(rng, 1u << 20) << 12;  // reserved bits
      return p;
    }
    case 26: return make::Bbp(Chance(rng, 50) ? 4 : 8, static_cast<uint8_t>(Below(rng, 32)));
    default: return make::Bep(Chance(rng, 50));
  }
}

std::vector<uint8_t> RandomTrace(std::mt19937_64& rng, size_t count, size_t psb_every,
                                 const RandomPacketOptions& options) {
  PacketEncoder enc;
  auto psb_plus = [&] {
    Put(enc, make::Psb());
    const size_t n = Below(rng, 5);
    RandomPacketOptions inner = options;
    inner.block_packets = false;
    for (size_t i = 0; i < n; ++i) Put(enc, RandomPacket(rng, inner));
    Put(enc, make::PsbEnd());
  };
  psb_plus();
  for (size_t i = 0; i < count; ++i) {
    if (psb_every != 0 && Below(rng, psb_every) == 0) psb_plus();
    Packet p = RandomPacket(rng, options);
    if (p.type == PacketType::kBep) continue;  // BEPs close the blocks below
    Put(enc, p);
    if (p.type == PacketType::kBbp) {
      // BIPs of the BBP's item size, with a timing packet now and then, then BEP.
      const unsigned item = p.bbp_item_bytes();
      const size_t items = 1 + Below(rng, 6);
      for (size_t k = 0; k < items; ++k) {
        Put(enc, make::Bip(static_cast<uint8_t>(Below(rng, 32)), Edgy(rng, 64), item));
        if (Chance(rng, 15)) Put(enc, make::Mtc(static_cast<uint8_t>(rng())));
        if (Chance(rng, 15)) Put(enc, make::Cyc(Below(rng, 1000)));
      }
      Put(enc, make::Bep(Chance(rng, 50)));
      if (Chance(rng, 50)) PutIp(enc, PacketType::kFup, rng() & 0x7fffffffffff);
    }
  }
  return enc.Release();
}

std::vector<uint8_t> RealisticTrace(const RealisticTraceOptions& options) {
  std::mt19937_64 rng(options.seed);
  PacketEncoder enc;
  uint64_t ip = 0x401000 + Below(rng, 0x10000);
  uint64_t tsc = 0x12345678000 + Below(rng, 1u << 30);
  uint8_t ctc = static_cast<uint8_t>(rng());
  // A few hot functions in a 64 KiB text, a shared library 4 GiB away, rare far jumps.
  auto branch_target = [&]() -> uint64_t {
    const uint64_t r = Below(rng, 100);
    if (r < 70) return (ip & ~uint64_t{0xffff}) | (Below(rng, 0x10000) & ~uint64_t{3});
    if (r < 93) return 0x7f0000000000 + (Below(rng, 1u << 30));
    return 0x400000 + Below(rng, 1u << 24);
  };
  auto psb_plus = [&] {
    Put(enc, make::Psb());
    Put(enc, make::Tsc(tsc));
    if (options.mtc) Put(enc, make::Tma(static_cast<uint16_t>(ctc * 8 + Below(rng, 8)), static_cast<uint16_t>(Below(rng, 512))));
    Put(enc, make::Cbr(0x20 + static_cast<uint8_t>(Below(rng, 8))));
    Put(enc, make::ModeExec(ExecMode::k64Bit));
    PutIp(enc, PacketType::kFup, ip);
    Put(enc, make::PsbEnd());
  };
  size_t next_psb = 0;
  size_t since_mtc = 0;
  while (enc.offset() < options.size) {
    if (enc.offset() >= next_psb) {
      psb_plus();
      next_psb = (enc.offset() / options.psb_period + 1) * options.psb_period;
    }
    tsc += 20 + Below(rng, 200);
    if (options.mtc && ++since_mtc >= 12 + Below(rng, 8)) {
      since_mtc = 0;
      Put(enc, make::Mtc(++ctc));
    }
    if (options.cyc && Chance(rng, 60)) {
      // Mostly a one-byte CYC (< 32 cycles), else two.
      Put(enc, make::Cyc(Chance(rng, 70) ? 1 + Below(rng, 31) : 32 + Below(rng, 4000)));
    }
    const uint64_t r = Below(rng, 1000);
    if (r < 600) {
      const unsigned n = Chance(rng, 70) ? 6 : 1 + static_cast<unsigned>(Below(rng, 5));
      Put(enc, make::Tnt8(rng(), n));
    } else if (r < 900) {
      ip = branch_target();
      PutIp(enc, PacketType::kTip, ip);
    } else if (r < 930) {
      // An interrupt: FUP at the current IP, TIP to the handler's return.
      PutIp(enc, PacketType::kFup, ip + Below(rng, 64));
      ip = branch_target();
      PutIp(enc, PacketType::kTip, ip);
    } else if (r < 950) {
      PutIp(enc, PacketType::kTipPgd, std::nullopt);
      ip = branch_target();
      PutIp(enc, PacketType::kTipPge, ip);
    } else if (r < 960) {
      Put(enc, make::ModeTsx(Chance(rng, 50), false));
    } else if (r < 970) {
      Put(enc, make::Pad());
    } else {
      Put(enc, make::Tnt64(rng(), 20 + static_cast<unsigned>(Below(rng, 28))));
    }
  }
  return enc.Release();
}

}  // namespace perftest::pt::testing
