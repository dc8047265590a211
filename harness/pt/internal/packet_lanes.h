// Decode(PacketBatch&)'s round engines (packet_decoder.cc DecodeSegments()
// and RunLanes() drive them): K lanes, each decoding its own stretch of the
// trace into PacketRecords, run in lock step for blocks of kRounds rounds,
// one packet per lane and round, so that the lanes' dependency chains
// overlap. Internal to harness/pt; included by packet_decoder.cc only.
//
//   RunRounds<K>()        the portable lanes: the first byte indexes 256-entry
//                         tables (LaneTables); x86-64 assembly, C elsewhere
//   RunRoundsMapped<K>()  the mapped lanes, where the CPU has AVX-512 VBMI and
//                         BMI2: each position's size and kind come from the
//                         packet map (internal/packet_map.h; MapLanes)
// Under PERFTEST_PT_PORTABLE_LANES both step in C (the fuzz build: ASan
// checks no load inside inline assembly).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "harness/pt/internal/opcodes.h"
#include "harness/pt/packet.h"
#include "harness/pt/packet_batch.h"

namespace perftest::pt::internal {

// The lanes run kRounds packets each between two checks of their limits.
// (4 and 16 measure the same.)
constexpr uint64_t kRounds = 8;

// A PacketRecord's second 8 bytes as one word: the offset in the low half,
// type, size, opcode and ext (the low half of kFast.info) in the high half.
// The fast path's tables for records, in one object (one base register):
//   high[b]    that word's high half for first byte b, shifted in place
//   reject[b]  as kFast.reject; size[b] as kFast.size
static_assert(std::endian::native == std::endian::little);
struct RecordTables {
  uint64_t high[256];
  uint16_t reject[256];
  uint8_t size[256];
};
constexpr RecordTables MakeRecordTables() {
  RecordTables t{};
  for (int i = 0; i < 256; ++i) {
    t.high[i] = (kFast.info[i] & 0xffffffffu) << 32;
    t.reject[i] = kFast.reject[i];
    t.size[i] = kFast.size[i];
  }
  return t;
}
alignas(64) inline constexpr RecordTables kRecordTables = MakeRecordTables();

// A TNT-64's record word (PacketRecord bytes 8..15) at offset 0: type, size 8, opcode 02h, ext A3h.
constexpr uint64_t kTnt64Word = (uint64_t{static_cast<uint8_t>(PacketType::kTnt64)} | uint64_t{8} << 8 |
                                 uint64_t{kOpcExt} << 16 | uint64_t{kExtTnt64} << 24)
                                << 32;

// A MODE.Exec's record word: type, size 2, opcode 99h, ext 0 (MODE.TSX: the type plus 1).
static_assert(static_cast<uint8_t>(PacketType::kModeTsx) == static_cast<uint8_t>(PacketType::kModeExec) + 1);
constexpr uint64_t kModeExecWord =
    (uint64_t{static_cast<uint8_t>(PacketType::kModeExec)} | uint64_t{2} << 8 | uint64_t{kOpcMode} << 16)
    << 32;

// RunRounds()'s tables for PacketRecords, for a trace at B (see below),
// indexed by the first byte b; each an operand straight from memory at a
// scaled index. All but `high` and the two words are the same for every
// trace: Decode() copies them from kLaneTables (a memcpy) and fills in the
// rest for its B.
struct LaneTables {
  uint64_t high[256];     // kRecordTables.high[b] - B
  uint64_t size[256];     // the size: added to a pointer straight from memory
  uint64_t mask[256];     // kFast.mask[b]: the payload bits among bytes 1..8
  uint16_t reject[256];   // bits of bytes 1..2 that send the packet elsewhere: byte 1's
                          // Exp bit for CYC, the leaf for MODE; all of them for the
                          // opcodes the tables do not take (below)
  uint64_t tnt64 = 0;     // kTnt64Word - B
  uint64_t mode_tsx = 0;  // MODE.TSX's record word - B
  LaneTables() = default;
  explicit LaneTables(const uint8_t* B);
};

constexpr LaneTables MakeLaneTables() {
  LaneTables t{};
  for (int i = 0; i < 256; ++i) {
    t.high[i] = kRecordTables.high[i];
    t.size[i] = kRecordTables.size[i];
    t.mask[i] = kFast.mask[i];
    const uint16_t r = kRecordTables.reject[i];
    if ((r & 0xff) != 0) {
      // Not for the tables (02h, bad opcodes, bad IPBytes): rejected unless
      // bytes 1..2 are 0 (never in a valid trace: 02h 00h is no packet);
      // then the lane stays where it is (size 0), writing records of type
      // kInvalid, until RunLanes() leaves it and attend() drops them.
      t.reject[i] = 0xffff;
      t.high[i] = 0;
      t.size[i] = 0;
      t.mask[i] = 0;
    } else {
      t.reject[i] = r >> 8;
    }
  }
  // MODE.Exec (99h, leaf 000b in byte 1 bits 7:5; payload byte 1) from the
  // tables too: the other leaves (bits 7:5 not 000b) are rejected, and
  // RunRounds() takes MODE.TSX (001b). (MODE.Exec follows every TIP.PGE and
  // PSB: rejected, each would be a mispredicted branch.)
  t.high[kOpcMode] = kModeExecWord;
  t.size[kOpcMode] = 2;
  t.mask[kOpcMode] = 0xff;
  t.reject[kOpcMode] = 0xe0;
  return t;
}
alignas(64) inline constexpr LaneTables kLaneTables = MakeLaneTables();

inline LaneTables::LaneTables(const uint8_t* B) {
  std::memcpy(size, kLaneTables.size, sizeof size + sizeof mask + sizeof reject);
  static_assert(offsetof(LaneTables, mask) == offsetof(LaneTables, size) + sizeof size &&
                offsetof(LaneTables, reject) == offsetof(LaneTables, mask) + sizeof mask);
  const uint64_t b = reinterpret_cast<uintptr_t>(B);
  for (int i = 0; i < 256; ++i) high[i] = kLaneTables.high[i] - b;
  tnt64 = kTnt64Word - b;
  mode_tsx = kModeExecWord + (uint64_t{1} << 32) - b;
}

// The mapped lanes (internal/packet_map.h): the map gives each position's
// packet size and kind, so that a lane's chain is one load. The map is the
// batch's (PacketBatch::map_): sizes of the positions from the base at
// [0, kMapStride), their kinds at [kMapStride, 2 * kMapStride);
// DecodeSegments() maps its budget before the lanes run, so the budget
// stays under kMapStride and no lane runs past kMapLim.
// Per Decode() call: the kinds' record words less the trace's address at
// the base (as LaneTables::high), their pext masks, and where the map is:
// the size of the packet at p is p[d], its kind p[d + kMapStride].
constexpr uint64_t kMapStride = uint64_t{1} << 17;
constexpr int64_t kMapLim = kMapStride - 256;
struct MapLanes {
  uint64_t mask[256];
  uint64_t word[256];
  intptr_t d = 0;
};

// RunRounds()'s step: one packet of a lane at p into *o (and p past it);
// false if it is not one of those taken there.
[[gnu::always_inline]] inline bool LaneStep(const LaneTables& t, const uint8_t*& p, PacketRecord* o) {
  uint64_t cc, raw;  // byte 0; bytes 1..8
#if defined(__x86_64__) && !defined(PERFTEST_PT_PORTABLE_LANES)
  // In assembly on x86-64: what GCC 12 makes of the C below has more
  // instructions (copies, an lea per table) and keeps fewer lanes in registers.
  // PERFTEST_PT_PORTABLE_LANES selects the C step instead: the fuzz build
  // does, because ASan does not see the loads inside inline assembly.
  bool rejected;
  asm("movzbl (%[p]), %k[cc]\n\t"
      "movq 1(%[p]), %[raw]\n\t"
      "testw %w[raw], %c[reject](%[t], %[cc], 2)"
      : [cc] "=&r"(cc), [raw] "=&r"(raw), "=@ccnz"(rejected)
      : [p] "r"(p), [t] "r"(&t), [reject] "i"(offsetof(LaneTables, reject)), "m"(*(const uint8_t(*)[9])p));
  if (!rejected) [[likely]] {
    asm("andq %c[mask](%[t], %[cc], 8), %[raw]\n\t"
        "movq %[raw], %[w0]\n\t"
        "movq %c[high](%[t], %[cc], 8), %[raw]\n\t"
        "addq %[p], %[raw]\n\t"
        "movq %[raw], %[w1]\n\t"
        "addq %c[size](%[t], %[cc], 8), %[p]"
        : [raw] "+&r"(raw), [p] "+r"(p), [w0] "=m"(o->payload), [w1] "=m"(*reinterpret_cast<uint8_t(*)[8]>(&o->offset))
        : [t] "r"(&t), [cc] "r"(cc), [mask] "i"(offsetof(LaneTables, mask)), [high] "i"(offsetof(LaneTables, high)),
          [size] "i"(offsetof(LaneTables, size)));
    return true;
  }
#else
  cc = p[0];
  std::memcpy(&raw, p + 1, sizeof raw);
  if ((static_cast<uint16_t>(raw) & t.reject[cc]) == 0) [[likely]] {
    o->payload = raw & t.mask[cc];
    const uint64_t rec = t.high[cc] + reinterpret_cast<uintptr_t>(p);
    std::memcpy(&o->offset, &rec, sizeof rec);
    p += t.size[cc];
    return true;
  }
#endif
  // TNT-64 (02h A3h + 6 bytes, with a stop bit and a branch): the packet
  // the test rejects most often. (Measured, not taken, on bench_pt's trace,
  // interleaved A/B: TNT-64 through the tables — pext for the payload, a
  // per-opcode xorw before the test for byte 1 == A3h — is 7% faster but
  // takes a bad stop bit; with the stop-bit check (cmp + jb) it is 13
  // instructions a packet, 15.1 Ir/packet in all, and no faster. One more
  // load-op or two ALU ops before the test cost 7% and 2-3%; offsets
  // instead of pointers (one table load less) or one 8-byte load of bytes
  // 0..7 with pext gain nothing.)
  const uint64_t tnt = (raw >> 8) & kPayloadMask[6];
  if (cc == kOpcExt && static_cast<uint8_t>(raw) == kExtTnt64 && tnt >= 2) {
    o->payload = tnt;
    const uint64_t rec = t.tnt64 + reinterpret_cast<uintptr_t>(p);
    std::memcpy(&o->offset, &rec, sizeof rec);
    p += 8;
    return true;
  }
  // MODE.TSX (99h, leaf 001b in byte 1 bits 7:5).
  if (cc == kOpcMode && ((raw >> 5) & 7) == 1) {
    o->payload = raw & 0xff;
    const uint64_t rec = t.mode_tsx + reinterpret_cast<uintptr_t>(p);
    std::memcpy(&o->offset, &rec, sizeof rec);
    p += 2;
    return true;
  }
  return false;
}

// RunRounds(): RunLanes()'s loop for PacketRecords, on its own (a small
// function, so that the K lanes' positions and record pointers stay in
// registers). Runs whole blocks of kRounds rounds until lane 0's record
// pointer reaches `stop`, or until a lane meets a packet it does not take:
// then returns that lane's index j and sets `round` to the round (lanes
// before j have done it, the others not); else returns K. Per packet and
// lane: the first byte b and bytes 1..8 (two loads at the position p); the
// reject test (bytes 1..2 against reject[b]); the payload (bytes 1..8 &
// mask[b]) and the offset/type word (high[b] + p), two 8-byte stores; p +=
// size[b]. Each lane's chain p -> b -> p is two loads long, which the K
// lanes overlap. TNT-64 and MODE.TSX, which the test rejects, are decoded
// here too; anything else it rejects is left to the caller.
template <size_t K>
[[gnu::noinline]] size_t RunRounds(const LaneTables& t, const uint8_t** pp, PacketRecord** oo,
                                   const PacketRecord* stop, uint64_t& round) {
  static_assert(K >= 1 && K <= 4);
  // The lanes in scalars (an array indexed in unrolled loops ends up on the stack).
  const uint8_t* p0 = pp[0];
  const uint8_t* p1 = K > 1 ? pp[1] : nullptr;
  const uint8_t* p2 = K > 2 ? pp[2] : nullptr;
  const uint8_t* p3 = K > 3 ? pp[3] : nullptr;
  PacketRecord* o0 = oo[0];
  PacketRecord* o1 = K > 1 ? oo[1] : nullptr;
  PacketRecord* o2 = K > 2 ? oo[2] : nullptr;
  PacketRecord* o3 = K > 3 ? oo[3] : nullptr;
  size_t leave = K;
  do {
#pragma GCC unroll 8
    for (uint64_t r = 0; r < kRounds; ++r) {
      if (!LaneStep(t, p0, o0 + r)) [[unlikely]] {
        leave = 0, round = r;
        goto done;
      }
      if constexpr (K > 1) {
        if (!LaneStep(t, p1, o1 + r)) [[unlikely]] {
          leave = 1, round = r;
          goto done;
        }
      }
      if constexpr (K > 2) {
        if (!LaneStep(t, p2, o2 + r)) [[unlikely]] {
          leave = 2, round = r;
          goto done;
        }
      }
      if constexpr (K > 3) {
        if (!LaneStep(t, p3, o3 + r)) [[unlikely]] {
          leave = 3, round = r;
          goto done;
        }
      }
    }
    o0 += kRounds;
    if constexpr (K > 1) o1 += kRounds;
    if constexpr (K > 2) o2 += kRounds;
    if constexpr (K > 3) o3 += kRounds;
  } while (o0 != stop);
done:
  pp[0] = p0;
  oo[0] = o0;
  if constexpr (K > 1) pp[1] = p1, oo[1] = o1;
  if constexpr (K > 2) pp[2] = p2, oo[2] = o2;
  if constexpr (K > 3) pp[3] = p3, oo[3] = o3;
  return leave;
}

#if defined(__x86_64__)

// RunRoundsMapped()'s step: one packet of a lane at p into *o, and p past
// it. The size at p is p[d], its kind p[d + kMapStride] (MapLanes::d); at
// a size 0 (a packet the map does not take) p stays where it is, and *o is
// a record with p's offset, until RunRoundsMapped() looks. In x86-64
// assembly as LaneStep() (PERFTEST_PT_PORTABLE_LANES: in C).
[[gnu::always_inline, gnu::target("bmi2")]] inline void MappedStep(const MapLanes& t, intptr_t d, const uint8_t*& p,
                                                                   PacketRecord* o) {
#if defined(__x86_64__) && !defined(PERFTEST_PT_PORTABLE_LANES)
  uint64_t sz, k, raw;
  asm("movzbl (%[p],%[d]), %k[sz]\n\t"
      "movzbl %c[stride](%[p],%[d]), %k[k]\n\t"
      "movq 1(%[p]), %[raw]\n\t"
      "pextq %c[mask](%[t],%[k],8), %[raw], %[raw]\n\t"
      "movq %[raw], %[w0]\n\t"
      "movq %c[word](%[t],%[k],8), %[raw]\n\t"
      "addq %[p], %[raw]\n\t"
      "movq %[raw], %[w1]\n\t"
      "addq %[sz], %[p]"
      : [sz] "=&r"(sz), [k] "=&r"(k), [raw] "=&r"(raw), [p] "+r"(p), [w0] "=m"(o->payload),
        [w1] "=m"(*reinterpret_cast<uint8_t(*)[8]>(&o->offset))
      : [t] "r"(&t), [d] "r"(d), [stride] "i"(kMapStride), [mask] "i"(offsetof(MapLanes, mask)),
        [word] "i"(offsetof(MapLanes, word)));
#else
  const uint8_t* m = p + d;
  const unsigned sz = m[0], k = m[kMapStride];
  uint64_t raw;
  std::memcpy(&raw, p + 1, sizeof raw);
  o->payload = _pext_u64(raw, t.mask[k]);
  const uint64_t rec = t.word[k] + reinterpret_cast<uintptr_t>(p);
  std::memcpy(&o->offset, &rec, sizeof rec);
  p += sz;
#endif
}

// RunRounds() for the mapped lanes, without a branch a packet: blocks of
// kRounds rounds of MappedStep(), then one look at the size at each lane's
// position; returns true after the block in which a lane met a size 0 (a
// PSB at its stop, or a packet for the careful path), false at `stop`.
// Every lane's record pointer moves kRounds a block; a lane at a size 0
// has written records for that packet from the round it met it on
// (RunLanes() takes them back). Per packet and lane: the size at p in the
// map (the chain: p -> size -> p, one load and an add), the kind, bytes
// 1..8, the payload (pext with mask[kind]), the record word (word[kind] +
// p), two 8-byte stores. (The same step with a test and branch a packet, as
// RunRounds() has, measured ~4% slower.)
template <size_t K>
[[gnu::noinline, gnu::target("bmi2")]] bool RunRoundsMapped(const MapLanes& t, const uint8_t** pp, PacketRecord** oo,
                                                          const PacketRecord* stop) {
  static_assert(K >= 1 && K <= 4);
  const intptr_t d = t.d;
  const uint8_t* p0 = pp[0];
  const uint8_t* p1 = K > 1 ? pp[1] : nullptr;
  const uint8_t* p2 = K > 2 ? pp[2] : nullptr;
  const uint8_t* p3 = K > 3 ? pp[3] : nullptr;
  PacketRecord* o0 = oo[0];
  PacketRecord* o1 = K > 1 ? oo[1] : nullptr;
  PacketRecord* o2 = K > 2 ? oo[2] : nullptr;
  PacketRecord* o3 = K > 3 ? oo[3] : nullptr;
  bool stuck = false;
  do {
#pragma GCC unroll 8
    for (uint64_t r = 0; r < kRounds; ++r) {
      MappedStep(t, d, p0, o0 + r);
      if constexpr (K > 1) MappedStep(t, d, p1, o1 + r);
      if constexpr (K > 2) MappedStep(t, d, p2, o2 + r);
      if constexpr (K > 3) MappedStep(t, d, p3, o3 + r);
    }
    o0 += kRounds;
    if constexpr (K > 1) o1 += kRounds;
    if constexpr (K > 2) o2 += kRounds;
    if constexpr (K > 3) o3 += kRounds;
    // A size 0 at a lane's position: (size - 1) < 0.
    int any = p0[d] - 1;
    if constexpr (K > 1) any |= p1[d] - 1;
    if constexpr (K > 2) any |= p2[d] - 1;
    if constexpr (K > 3) any |= p3[d] - 1;
    stuck = any < 0;
  } while (!stuck && o0 != stop);
  pp[0] = p0;
  oo[0] = o0;
  if constexpr (K > 1) pp[1] = p1, oo[1] = o1;
  if constexpr (K > 2) pp[2] = p2, oo[2] = o2;
  if constexpr (K > 3) pp[3] = p3, oo[3] = o3;
  return stuck;
}

#else  // not x86-64: no mapped lanes (packet_decoder.cc MappedLanesHere() is false)

template <size_t K>
bool RunRoundsMapped(const MapLanes&, const uint8_t**, PacketRecord**, const PacketRecord*) {
  __builtin_trap();
}

#endif

}  // namespace perftest::pt::internal
