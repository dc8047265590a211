// Unit tests of harness/pt/last_ip.h against the SDM Vol. 3C §33.4.2.2 table
// "Compressed IP Payload Format" (and its examples of IP reconstruction).
#include "harness/pt/last_ip.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "harness/pt/internal/opcodes.h"
#include "harness/pt/testing/spec.h"
#include "harness/syscall_matchers.h"

namespace perftest::pt {
namespace {

using testing::Spec;

constexpr uint64_t kLast = 0xffffffff81234567;  // a kernel address

TEST(LastIp, NoIpYet) {
  Spec("pt.last_ip.none", "libipt pt_last_ip_query: -pte_noip");
  LastIp last;
  EXPECT_THAT(last.ip(), FailsWithErrno(ENOENT));
  EXPECT_OK(last.Update(0b000, 0));
  EXPECT_THAT(last.ip(), FailsWithErrno(ENOENT)) << "suppressed with no IP is still no IP";
}

TEST(LastIp, EveryIpBytes) {
  Spec("pt.last_ip.decompress", "SDM §33.4.2.2, table 'Compressed IP Payload Format'");
  struct Case {
    uint8_t ipbytes;
    uint64_t payload;
    uint64_t want;
  };
  const Case kCases[] = {
      {0b001, 0xbeef, 0xffffffff8123beef},        // IP[15:0] from the payload
      {0b010, 0xdeadbeef, 0xffffffffdeadbeef},    // IP[31:0]
      {0b011, 0x7fffdeadbeef, 0x00007fffdeadbeef},  // IP[47:0], bit 47 clear: zero-extended
      {0b011, 0x8000deadbeef, 0xffff8000deadbeef},  // bit 47 set: sign-extended
      {0b100, 0x8000deadbeef, 0xffff8000deadbeef},  // IP[47:0], IP[63:48] from the last IP
      {0b110, 0x0123456789abcdef, 0x0123456789abcdef},
  };
  for (const Case& c : kCases) {
    LastIp last;
    ASSERT_OK(last.Update(0b110, kLast));
    ASSERT_OK(last.Update(c.ipbytes, c.payload));
    EXPECT_THAT(last.ip(), SucceedsWith(c.want)) << "IPBytes " << int{c.ipbytes};
    EXPECT_EQ(LastIp::Decompress(kLast, c.ipbytes, c.payload), c.want);
  }
}

TEST(LastIp, Update48KeepsHighBitsOfLastIp) {
  Spec("pt.last_ip.decompress", "SDM §33.4.2.2, table 'Compressed IP Payload Format' (IPBytes 100b)");
  LastIp last;
  ASSERT_OK(last.Update(0b110, 0x1234000000000000));
  ASSERT_OK(last.Update(0b100, 0xffffdeadbeef));
  EXPECT_THAT(last.ip(), SucceedsWith(0x1234ffffdeadbeefu));
}

TEST(LastIp, SuppressedKeepsLastIp) {
  Spec("pt.last_ip.suppressed", "SDM §33.4.2.2 (IPBytes 000b: IP suppressed); libipt -pte_ip_suppressed");
  LastIp last;
  ASSERT_OK(last.Update(0b110, kLast));
  ASSERT_OK(last.Update(0b000, 0));
  EXPECT_THAT(last.ip(), FailsWithErrno(EADDRNOTAVAIL));
  EXPECT_TRUE(last.suppressed());
  // The next update compresses against the IP before the suppressed one.
  ASSERT_OK(last.Update(0b001, 0x1111));
  EXPECT_THAT(last.ip(), SucceedsWith(0xffffffff81231111u));
}

TEST(LastIp, ReservedIpBytes) {
  Spec("pt.last_ip.reserved", "SDM §33.4.2.2 (IPBytes 101b, 111b reserved)");
  LastIp last;
  ASSERT_OK(last.Update(0b110, kLast));
  EXPECT_THAT(last.Update(0b101, 0), FailsWithErrno(EBADMSG));
  EXPECT_THAT(last.Update(0b111, 0), FailsWithErrno(EBADMSG));
  EXPECT_THAT(last.ip(), SucceedsWith(kLast)) << "unchanged";
}

TEST(LastIp, UpdateFromZeroAfterReset) {
  Spec("pt.last_ip.reset", "SDM §33.4.2.17 (PSB resets the last IP); libipt pt_last_ip_init");
  LastIp last;
  ASSERT_OK(last.Update(0b110, kLast));
  last.Reset();
  EXPECT_THAT(last.ip(), FailsWithErrno(ENOENT));
  ASSERT_OK(last.Update(0b001, 0x1234));
  EXPECT_THAT(last.ip(), SucceedsWith(0x1234u));
}

TEST(LastIp, PacketUpdate) {
  Spec("pt.last_ip.packet", "last_ip.h Update(const Packet&)");
  LastIp last;
  Packet tip;
  tip.type = PacketType::kTip;
  tip.opcode = 0x4d;  // IPBytes 010b
  tip.payload = 0x401000;
  EXPECT_OK(last.Update(tip));
  EXPECT_THAT(last.ip(), SucceedsWith(0x401000u));
  Packet tsc;
  tsc.type = PacketType::kTsc;
  EXPECT_THAT(last.Update(tsc), FailsWithErrno(EINVAL));
}

TEST(LastIp, UpdateMaskedAgreesWithUpdateInline) {
  Spec("pt.last_ip.masked", "last_ip.h UpdateMasked(); SDM §33.4.2.2 'Compressed IP Payload Format'");
  // The payload mask of each IPBytes, as the packet decoder's tables give it
  // for a TIP (opcode[4:0] 0Dh, IPBytes in opcode[7:5]).
  auto mask = [](uint8_t ipbytes) { return internal::kFast.mask[(ipbytes << 5) | 0x0d]; };
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    const uint64_t start = i % 3 == 0 ? 0 : rng();
    for (uint8_t ipbytes : {0b000, 0b001, 0b010, 0b011, 0b100, 0b110}) {
      const uint64_t payload = rng() & mask(ipbytes);
      LastIp a, b;
      if (i % 3 != 0) {  // (from no IP yet, too)
        ASSERT_TRUE(a.UpdateInline(0b110, start));
        ASSERT_TRUE(b.UpdateInline(0b110, start));
      }
      ASSERT_TRUE(a.UpdateInline(ipbytes, payload));
      b.UpdateMasked(ipbytes, payload, mask(ipbytes));
      EXPECT_EQ(a.raw(), b.raw()) << "IPBytes " << int{ipbytes} << " payload " << payload;
      EXPECT_EQ(a.have_ip(), b.have_ip());
      EXPECT_EQ(a.suppressed(), b.suppressed());
    }
  }
}

TEST(LastIp, CompressRoundTripsAndIsShortest) {
  Spec("pt.last_ip.compress", "SDM §33.4.2.2, table 'Compressed IP Payload Format'");
  std::mt19937_64 rng(7);
  const int kSize[8] = {0, 2, 4, 6, 6, -1, 8, -1};
  for (int i = 0; i < 100000; ++i) {
    const uint64_t last = rng() >> (rng() % 64);
    uint64_t ip = last;
    switch (rng() % 5) {
      case 0: ip = (last & ~0xffffull) | (rng() & 0xffff); break;
      case 1: ip = (last & ~0xffffffffull) | (rng() & 0xffffffff); break;
      case 2: ip = rng() & 0x7fffffffffff; break;
      case 3: ip = rng() | 0xffff800000000000; break;
      default: ip = rng(); break;
    }
    const bool have = rng() % 8 != 0;
    const LastIp::Compressed c = LastIp::Compress(last, have, ip);
    ASSERT_EQ(LastIp::Decompress(have ? last : 0xdeadbeefdeadbeef, c.ipbytes, c.payload), ip)
        << std::hex << last << " " << ip << " " << int{c.ipbytes};
    // No shorter encoding reproduces the IP.
    for (uint8_t shorter : {0b001, 0b010, 0b011, 0b100}) {
      if (kSize[shorter] >= kSize[c.ipbytes]) continue;
      if (!have && shorter != 0b011) continue;
      EXPECT_NE(LastIp::Decompress(last, shorter, ip & ((uint64_t{1} << (8 * kSize[shorter])) - 1)), ip);
    }
  }
}

}  // namespace
}  // namespace perftest::pt
