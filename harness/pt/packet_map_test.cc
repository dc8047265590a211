// Unit tests of harness/pt/internal/packet_map.h: MapOne() against
// PacketDecoder::Next() at every position of varied bytes, and
// MapPacketsAvx512() against MapOne() (where the CPU has AVX-512 VBMI).
#include "harness/pt/internal/packet_map.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <vector>

#include "harness/pt/packet_decoder.h"
#include "harness/pt/testing/spec.h"
#include "harness/pt/testing/trace_generator.h"

namespace perftest::pt {
namespace {

using internal::kPacketKinds;
using internal::MapEntry;
using internal::MapOne;
using testing::Spec;

// Bytes to map: realistic and random traces, random bytes, and random
// bytes drawn mostly from the opcodes and second bytes the map looks at.
std::vector<std::vector<uint8_t>> Inputs() {
  std::vector<std::vector<uint8_t>> in;
  in.push_back(testing::RealisticTrace({.seed = 3, .size = 128 << 10}));
  std::mt19937_64 rng(41);
  in.push_back(testing::RandomTrace(rng, 20000, 300, {.block_packets = true, .event_trace = true}));
  std::vector<uint8_t> random(64 << 10);
  for (uint8_t& b : random) b = static_cast<uint8_t>(rng());
  in.push_back(random);
  const uint8_t hot[] = {0x02, 0xa3, 0x99, 0x00, 0x01, 0x20, 0x07, 0x03, 0x23, 0x73, 0xc3, 0x12, 0x92,
                         0x82, 0xc8, 0xf3, 0x62, 0xe2, 0x22, 0xa2, 0x43, 0x83, 0x40, 0xc0, 0xff};
  for (uint8_t& b : random) b = rng() % 3 == 0 ? static_cast<uint8_t>(rng()) : hot[rng() % sizeof hot];
  in.push_back(random);
  return in;
}

// The record a lane writes from the map at `p` (9 bytes readable), as a Packet.
Packet FromMap(const uint8_t* p, MapEntry e, uint64_t offset) {
  uint64_t raw = 0;  // bytes 1..8
  std::memcpy(&raw, p + 1, sizeof raw);
  Packet q;
  q.offset = offset;
  // pext by hand: the mask's bits of raw, packed from bit 0.
  uint64_t payload = 0;
  int out = 0;
  for (int bit = 0; bit < 64; ++bit) {
    if ((kPacketKinds.mask[e.kind] >> bit) & 1) payload |= ((raw >> bit) & 1) << out++;
  }
  q.payload = payload;
  const auto word = static_cast<uint32_t>(kPacketKinds.word[e.kind] >> 32);
  std::memcpy(&q.type, &word, 4);  // type, size, opcode, ext
  return q;
}

TEST(PacketMap, MapOneIsNext) {
  Spec("pt.decoder.map", "internal/packet_map.h: a mapped size is the size of the packet Next() decodes there");
  size_t mapped = 0;
  for (const std::vector<uint8_t>& bytes : Inputs()) {
    for (size_t i = 0; i + 16 <= bytes.size(); ++i) {
      const MapEntry e = MapOne(bytes.data() + i);
      if (e.size == 0) continue;
      ++mapped;
      PacketDecoder d(bytes);
      ASSERT_TRUE(d.SyncSet(i).ok());
      Packet p;
      ASSERT_EQ(d.Next(p), 0) << i;
      ASSERT_EQ(FromMap(bytes.data() + i, e, i), p) << i << ": " << ToString(p);
      EXPECT_EQ(e.size, p.size);
    }
  }
  EXPECT_GT(mapped, 100000u);
}

TEST(PacketMap, WhatTheMapLeavesOut) {
  Spec("pt.decoder.map_rejects", "internal/packet_map.h: errors and the careful path's packets have size 0");
  auto size_of = [](std::vector<uint8_t> b) {
    b.resize(16, 0);
    return MapOne(b.data()).size;
  };
  EXPECT_EQ(size_of({0x02, 0xa3, 0, 0, 0, 0, 0, 0}), 0);  // TNT-64 without a stop bit
  EXPECT_EQ(size_of({0x02, 0xa3, 1, 0, 0, 0, 0, 0}), 0);  // ... or no branch before it
  EXPECT_EQ(size_of({0x02, 0xa3, 2, 0, 0, 0, 0, 0}), 8);
  EXPECT_EQ(size_of({0x02, 0xa3, 0, 0, 0, 0, 0, 1}), 8);
  EXPECT_EQ(size_of({0x99, 0x40}), 0);                     // MODE leaf 010b
  EXPECT_EQ(size_of({0x99, 0x20}), 2);                     // MODE.TSX
  EXPECT_EQ(size_of({0x07, 0x01, 0x00}), 0);               // a 3-byte CYC
  EXPECT_EQ(size_of({0x07, 0x00}), 2);
  EXPECT_EQ(size_of(testing::PsbBytes()), 0);
  // The other 02h packets: the careful path's.
  for (const uint8_t x :
       {0x23, 0x03, 0x43, 0x73, 0x83, 0xc3, 0xc8, 0xf3, 0x12, 0x62, 0xc2, 0x22, 0xa2, 0x63, 0x33, 0x02}) {
    EXPECT_EQ(size_of({0x02, x, 0x88, 2, 3, 4, 5, 6, 7, 8, 9}), 0) << int{x};
  }
  EXPECT_EQ(size_of({0xad}), 0);                           // TIP, IPBytes 101b
  for (int b = 0; b < 256; ++b) {
    // The kinds of 02h packets and MODE.TSX are first bytes with no packet.
    if (internal::kFast.size[b] == 0 && b != internal::kOpcExt) {
      EXPECT_EQ(size_of({static_cast<uint8_t>(b)}), 0) << b;
    }
  }
}

// Bytes [0, n) of an allocation whose next page is unmapped: reading past them faults.
class Fenced {
 public:
  explicit Fenced(size_t n) : page_(static_cast<size_t>(sysconf(_SC_PAGESIZE))) {
    len_ = (n + page_ - 1) / page_ * page_ + page_;
    base_ = static_cast<uint8_t*>(mmap(nullptr, len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    EXPECT_NE(base_, MAP_FAILED);
    EXPECT_EQ(mprotect(base_ + len_ - page_, page_, PROT_NONE), 0);
    data_ = base_ + len_ - page_ - n;
  }
  ~Fenced() { munmap(base_, len_); }
  uint8_t* data() { return data_; }

 private:
  size_t page_, len_;
  uint8_t* base_;
  uint8_t* data_;
};

TEST(PacketMap, Avx512IsMapOne) {
  Spec("pt.decoder.map_avx512",
       "internal/packet_map.h MapPacketsAvx512(): MapOne() at every position (kinds where mapped)");
  if (!internal::HaveMapPacketsAvx512()) GTEST_SKIP() << "no AVX-512 F/BW/VBMI on this CPU: the portable lanes run";
  for (const std::vector<uint8_t>& bytes : Inputs()) {
    // Lengths that end inside a 64-byte block and on one; the trace's last
    // byte just before an unmapped page (the map reads no further).
    for (const size_t n : {bytes.size() - 7, bytes.size() - 7 - 1, bytes.size() - 7 - 63, size_t{1}, size_t{64}}) {
      Fenced src(n + 7);
      std::memcpy(src.data(), bytes.data() + bytes.size() - (n + 7), n + 7);
      std::vector<uint8_t> sizes(n + 64, 0xee), kinds(n + 64, 0xee);
      internal::MapPacketsAvx512(src.data(), n, sizes.data(), kinds.data());
      for (size_t i = 0; i < n; ++i) {
        const MapEntry e = MapOne(src.data() + i);
        ASSERT_EQ(sizes[i], e.size) << i << " of " << n;
        if (e.size > 0) {
          ASSERT_EQ(kinds[i], e.kind) << i << " of " << n;
        }
      }
      for (size_t i = n; i < n + 64; ++i) {
        ASSERT_EQ(sizes[i], 0xee) << "written past the end: " << i;
        ASSERT_EQ(kinds[i], 0xee) << "written past the end: " << i;
      }
    }
  }
}

}  // namespace
}  // namespace perftest::pt
