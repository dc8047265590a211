#include "harness/pt/internal/packet_map.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_epi32() to the builtins,
// which -Wmaybe-uninitialized takes for a read of an uninitialized value
// once inlined (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace perftest::pt::internal {

#if defined(__x86_64__)

bool HaveMapPacketsAvx512() {
  static const bool have = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                           __builtin_cpu_supports("avx512vbmi");
  return have;
}

namespace {

#define PERFTEST_PT_AVX512 __attribute__((target("avx512f,avx512bw,avx512vbmi")))

// The first byte's tables as 64-entry lookups (vpermb: the index's bits 5:0):
//   low[b & 3Fh]   the size of b, for b whose bits 1:0 are not 01b (even b:
//                  TNT-8, PAD; 02h is taken apart; CYC, by its Exp bit), 80h
//                  for the others
//   high01[b >> 2] the size of b for b whose bits 1:0 are 01b (TIP, TIP.PGE,
//                  TIP.PGD, FUP by IPBytes, TSC, MTC, MODE, bad opcodes),
//                  MODE's with bit 7 set (it is told apart by it)
//   reject[b & 3Fh] first_reject[b], MODE aside (its 3Fh bits are TSC's, MTC's)
struct MapTables {
  alignas(64) uint8_t low[64];
  alignas(64) uint8_t high01[64];
  alignas(64) uint8_t reject[64];
};
constexpr MapTables MakeMapTables() {
  const PacketKinds& t = kPacketKinds;
  MapTables m{};
  for (int i = 0; i < 64; ++i) {
    m.low[i] = (i & 3) == 1 ? 0x80 : t.first_size[i | 0x40];  // (| 40h: not 02h)
    const int b = 4 * i + 1;
    m.high01[i] = static_cast<uint8_t>(t.first_size[b] | (b == kOpcMode ? 0x80 : 0));
    m.reject[i] = t.first_reject[i];
  }
  return m;
}
constexpr MapTables kMapTables = MakeMapTables();
// The tables' premises: bits 5:0 tell the size and reject bits apart, but
// for 01b bytes (and 02h, and MODE's reject bits).
constexpr bool CheckMapTables() {
  const PacketKinds& t = kPacketKinds;
  for (int b = 0; b < 256; ++b) {
    if ((b & 3) == 1 || b == kOpcExt) continue;
    if (t.first_size[b] != kMapTables.low[b & 63]) return false;
  }
  for (int b = 0; b < 256; ++b) {
    if (b != kOpcMode && t.first_reject[b] != kMapTables.reject[b & 63]) return false;
  }
  return kMapTables.high01[kOpcMode >> 2] == 0x82;
}
static_assert(CheckMapTables());

// MapPacketsAvx512()'s constants, in registers.
struct MapConstants {
  __m512i low, high01, reject, shr2, c02, c08, c20, c7f, cc0, cfe, ca3;
};

// The map of the 64 positions whose bytes 0..7 are v[0..7] (v[j]: the 64
// bytes from position + j), stored for the positions in `store`:
//   the first byte's size: low[b], or high01[b >> 2] for bytes 01b
//     (vpmultishiftqb shifts each byte right by 2, bits of the next byte
//     above, which vpermb does not look at); MODE by its bit 7
//   reject when byte 1 & reject[b] (or C0h for MODE: leaf 010b..111b)
//   02h: TNT-64 (byte 1 A3h) if bytes 3..7 | (byte 2 & FEh) are not 0 (a
//     stop bit, and a branch before it), else 0
//   the kind: the first byte, MODE's with byte 1's bit 5 flipped in
// Per 64 bytes: 8 loads, 8 uops for port 5 (vpermb, vpmultishiftqb, tests
// into masks), ~10 vector ALU, ~5 mask ops, 2 stores.
PERFTEST_PT_AVX512 __attribute__((always_inline)) inline void MapBlock(const MapConstants& c, const __m512i* v,
                                                                        uint8_t* sizes, uint8_t* kinds,
                                                                        __mmask64 store) {
  const __m512i low = _mm512_permutexvar_epi8(v[0], c.low);
  const __m512i high = _mm512_permutexvar_epi8(_mm512_multishift_epi64_epi8(c.shr2, v[0]), c.high01);
  const __m512i size = _mm512_mask_blend_epi8(_mm512_movepi8_mask(low), low, high);
  const __mmask64 mode = _mm512_movepi8_mask(size);
  const __m512i reject_bits = _mm512_mask_mov_epi8(_mm512_permutexvar_epi8(v[0], c.reject), mode, c.cc0);
  __mmask64 reject = _mm512_test_epi8_mask(v[1], reject_bits);
  const __mmask64 ext = _mm512_cmpeq_epi8_mask(v[0], c.c02);
  const __mmask64 tnt = _mm512_mask_cmpeq_epi8_mask(ext, v[1], c.ca3);
  __m512i high_bytes = _mm512_ternarylogic_epi32(v[3], v[4], v[5], 0xfe);  // a | b | c
  high_bytes = _mm512_ternarylogic_epi32(high_bytes, v[6], v[7], 0xfe);
  high_bytes = _mm512_ternarylogic_epi32(high_bytes, v[2], c.cfe, 0xf8);  // a | (b & c)
  reject |= _mm512_mask_testn_epi8_mask(tnt, high_bytes, high_bytes);
  const __mmask64 keep = ~reject & (~ext | tnt);
  const __m512i sized = _mm512_mask_mov_epi8(_mm512_and_si512(size, c.c7f), tnt, c.c08);
  // a ^ (b & c): the first byte, MODE's with byte 1's bit 5 (20h there).
  const __m512i kind = _mm512_ternarylogic_epi32(v[0], v[1], _mm512_maskz_mov_epi8(mode, c.c20), 0x78);
  _mm512_mask_storeu_epi8(sizes, store, _mm512_maskz_mov_epi8(keep, sized));
  _mm512_mask_storeu_epi8(kinds, store, kind);
}

// Loads 64 bytes at p, of which the first `n` (0..64) are readable (the rest read as 0).
PERFTEST_PT_AVX512 inline __m512i LoadPart(const uint8_t* p, size_t n) {
  return _mm512_maskz_loadu_epi8(n >= 64 ? ~__mmask64{0} : (__mmask64{1} << n) - 1, p);
}

}  // namespace

PERFTEST_PT_AVX512 void MapPacketsAvx512(const uint8_t* p, size_t n, uint8_t* sizes, uint8_t* kinds) {
  const MapConstants c{_mm512_load_si512(kMapTables.low),
                       _mm512_load_si512(kMapTables.high01),
                       _mm512_load_si512(kMapTables.reject),
                       _mm512_set1_epi64(0x3a322a221a120a02),  // vpmultishiftqb: each byte from its bit 2 on
                       _mm512_set1_epi8(static_cast<char>(kOpcExt)),
                       _mm512_set1_epi8(8),
                       _mm512_set1_epi8(0x20),
                       _mm512_set1_epi8(0x7f),
                       _mm512_set1_epi8(static_cast<char>(0xc0)),
                       _mm512_set1_epi8(static_cast<char>(0xfe)),
                       _mm512_set1_epi8(static_cast<char>(kExtTnt64))};
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const uint8_t* q = p + i;
    const __m512i v[8] = {_mm512_loadu_si512(q),     _mm512_loadu_si512(q + 1), _mm512_loadu_si512(q + 2),
                          _mm512_loadu_si512(q + 3), _mm512_loadu_si512(q + 4), _mm512_loadu_si512(q + 5),
                          _mm512_loadu_si512(q + 6), _mm512_loadu_si512(q + 7)};
    MapBlock(c, v, sizes + i, kinds + i, ~__mmask64{0});
  }
  if (i < n) {
    // The last positions: bytes up to p[n + 6] are read.
    const size_t left = n - i;
    __m512i v[8];
    for (size_t j = 0; j < 8; ++j) v[j] = LoadPart(p + i + j, left + 7 - j);
    MapBlock(c, v, sizes + i, kinds + i, (__mmask64{1} << left) - 1);
  }
}

#else  // not x86-64

bool HaveMapPacketsAvx512() { return false; }
void MapPacketsAvx512(const uint8_t*, size_t, uint8_t*, uint8_t*) { __builtin_trap(); }

#endif

}  // namespace perftest::pt::internal
