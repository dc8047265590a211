// Synthetic Intel PT traces for tests and benchmarks, built with
// packet_encoder.h from a seed (same seed, same bytes).
//
//   std::vector<uint8_t> trace = pt::testing::RealisticTrace({.size = 8 << 20});
//   std::mt19937_64 rng(seed);
//   pt::Packet p = pt::testing::RandomPacket(rng, {.block_packets = false});
//
// RealisticTrace() is shaped like what perf records from a user program with
// `intel_pt/cyc,mtc/`: PSB+ (PSB, TSC, TMA, CBR, MODE.Exec, FUP, PSBEND) once
// per psb_period bytes, then mostly TNT-8 and TIP with last-IP compression
// (upd16/upd32 mostly), a CYC before most packets, MTC at a steady rate, and
// now and then a FUP+TIP (interrupt), TIP.PGD/TIP.PGE pair, MODE.TSX or PAD.
// RandomPacket() draws any packet type with edge-biased fields, valid by
// construction (the encoder accepts it).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "harness/pt/packet.h"

namespace perftest::pt::testing {

struct RealisticTraceOptions {
  uint64_t seed = 1;
  size_t size = 1 << 20;       // bytes, at least (the last packet is complete)
  size_t psb_period = 4096;    // bytes between PSB+
  bool cyc = true;
  bool mtc = true;
};
std::vector<uint8_t> RealisticTrace(const RealisticTraceOptions& options);

struct RandomPacketOptions {
  bool block_packets = false;  // also BBP/BIP/BEP
  bool event_trace = false;    // also CFE, EVD and TRIG (not with libipt_exact)
  bool libipt_exact = false;   // only fields libipt 2.0.5 can represent (ToLibipt() succeeds)
};
Packet RandomPacket(std::mt19937_64& rng, const RandomPacketOptions& options);

// `count` random packets with a PSB+ in front and every ~`psb_every` packets,
// encoded with our encoder. Block packets come as BBP, BIPs, BEP.
std::vector<uint8_t> RandomTrace(std::mt19937_64& rng, size_t count, size_t psb_every,
                                 const RandomPacketOptions& options);

}  // namespace perftest::pt::testing
