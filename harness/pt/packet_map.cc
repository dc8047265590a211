#include "harness/pt/internal/packet_map.h"

#if defined(__x86_64__)
#include <immintrin.h>
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

// A 256-byte table in four registers.
struct Table256 {
  __m512i q[4];
};

PERFTEST_PT_AVX512 inline Table256 LoadTable(const uint8_t* t) {
  return {{_mm512_loadu_si512(t), _mm512_loadu_si512(t + 64), _mm512_loadu_si512(t + 128),
           _mm512_loadu_si512(t + 192)}};
}

// t[idx] for each byte: two 128-entry lookups (vpermi2b: bits 6:0 of the
// index), picked by bit 7 (`high`, the index bytes' sign bits).
PERFTEST_PT_AVX512 inline __m512i Lookup(const Table256& t, __m512i idx, __mmask64 high) {
  const __m512i lo = _mm512_permutex2var_epi8(t.q[0], idx, t.q[1]);
  const __m512i hi = _mm512_permutex2var_epi8(t.q[2], idx, t.q[3]);
  return _mm512_mask_blend_epi8(high, lo, hi);
}

// Loads 64 bytes at p, of which the first `n` (0..64) are readable (the rest read as 0).
PERFTEST_PT_AVX512 inline __m512i LoadPart(const uint8_t* p, size_t n) {
  return _mm512_maskz_loadu_epi8(n >= 64 ? ~__mmask64{0} : (__mmask64{1} << n) - 1, p);
}

// The constants of MapPacketsAvx512(), in registers.
struct MapConstants {
  Table256 first_size, first_reject, ext_size, ext_kind;
  __m512i c02, c99, c20, ca3, cfe, tsx;
};

// The map of the 64 positions whose bytes 0..7 are v[0..7] (v[j]: the 64
// bytes from position + j): the first byte's size and reject bits, the
// second byte's size and kind for 02h (four table lookups); MODE.TSX's
// kind; TNT-64's stop-bit test (bytes 3..7 zero and byte 2 <= 1: no stop
// bit, or none before it); the sizes of rejected packets zeroed. Stores
// the positions in `store`.
PERFTEST_PT_AVX512 __attribute__((always_inline)) inline void MapBlock(const MapConstants& c, const __m512i* v,
                                                                        uint8_t* sizes, uint8_t* kinds,
                                                                        __mmask64 store) {
  const __mmask64 h0 = _mm512_movepi8_mask(v[0]);
  const __mmask64 h1 = _mm512_movepi8_mask(v[1]);
  const __mmask64 m02 = _mm512_cmpeq_epi8_mask(v[0], c.c02);
  const __mmask64 m99 = _mm512_cmpeq_epi8_mask(v[0], c.c99);
  __m512i size = _mm512_mask_blend_epi8(m02, Lookup(c.first_size, v[0], h0), Lookup(c.ext_size, v[1], h1));
  __m512i kind = _mm512_mask_mov_epi8(v[0], _mm512_mask_test_epi8_mask(m99, v[1], c.c20), c.tsx);
  kind = _mm512_mask_mov_epi8(kind, m02, Lookup(c.ext_kind, v[1], h1));
  // (first_reject is 0 for 02h.)
  __mmask64 reject = _mm512_test_epi8_mask(v[1], Lookup(c.first_reject, v[0], h0));
  // TNT-64: bytes 3..7 | (byte 2 & FEh) == 0.
  const __mmask64 tnt = _mm512_mask_cmpeq_epi8_mask(m02, v[1], c.ca3);
  __m512i high = _mm512_ternarylogic_epi32(v[3], v[4], v[5], 0xfe);  // a | b | c
  high = _mm512_ternarylogic_epi32(high, v[6], v[7], 0xfe);
  high = _mm512_ternarylogic_epi32(high, v[2], c.cfe, 0xf8);  // a | (b & c)
  reject |= _mm512_mask_testn_epi8_mask(tnt, high, high);
  size = _mm512_maskz_mov_epi8(~reject, size);
  _mm512_mask_storeu_epi8(sizes, store, size);
  _mm512_mask_storeu_epi8(kinds, store, kind);
}

}  // namespace

PERFTEST_PT_AVX512 void MapPacketsAvx512(const uint8_t* p, size_t n, uint8_t* sizes, uint8_t* kinds) {
  const PacketKinds& t = kPacketKinds;
  const MapConstants c{LoadTable(t.first_size),
                       LoadTable(t.first_reject),
                       LoadTable(t.ext_size),
                       LoadTable(t.ext_kind),
                       _mm512_set1_epi8(static_cast<char>(kOpcExt)),
                       _mm512_set1_epi8(static_cast<char>(kOpcMode)),
                       _mm512_set1_epi8(0x20),
                       _mm512_set1_epi8(static_cast<char>(kExtTnt64)),
                       _mm512_set1_epi8(static_cast<char>(0xfe)),
                       _mm512_set1_epi8(static_cast<char>(t.mode_tsx_kind))};
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
