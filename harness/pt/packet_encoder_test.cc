// Unit tests of harness/pt/packet_encoder.h: the builders give the SDM's
// bytes (testing/sdm_vectors.h), encoding inverts decoding both ways, and
// the encoder rejects what no decoder produces.
#include "harness/pt/packet_encoder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "harness/pt/packet_decoder.h"
#include "harness/pt/testing/sdm_vectors.h"
#include "harness/pt/testing/spec.h"
#include "harness/pt/testing/trace_generator.h"
#include "harness/syscall_matchers.h"

namespace perftest::pt {
namespace {

using ::testing::ElementsAreArray;
using testing::Bytes;
using testing::Spec;

std::vector<uint8_t> Encode(const Packet& p) {
  uint8_t buf[kMaxPacketSize];
  Result<size_t> n = EncodePacket(p, buf);
  EXPECT_OK(n);
  if (!n.ok()) return {};
  return std::vector<uint8_t>(buf, buf + *n);
}

TEST(PacketEncoder, BuildersGiveSdmBytes) {
  Spec("pt.encoder.builders", "SDM Vol. 3C §33.4.2 Packet Definitions");
  struct Case {
    Packet packet;
    std::vector<uint8_t> bytes;
  };
  const Case kCases[] = {
      {make::Pad(), Bytes({0x00})},
      {make::Psb(), testing::PsbBytes()},
      {make::PsbEnd(), Bytes({0x02, 0x23})},
      {make::Tnt8(0b10110, 5), Bytes({0x6c})},
      {make::Tnt64(0b01, 2), Bytes({0x02, 0xa3, 0x05, 0, 0, 0, 0, 0})},
      {make::Tip(IpBytes::kUpdate32, 0x401000), Bytes({0x4d, 0x00, 0x10, 0x40, 0x00})},
      {make::TipPgd(IpBytes::kSuppressed, 0), Bytes({0x01})},
      {make::Fup(IpBytes::kSext48, 0x401000), Bytes({0x7d, 0x00, 0x10, 0x40, 0x00, 0x00, 0x00})},
      {make::Pip(0x12345000, true), Bytes({0x02, 0x43, 0x01, 0x45, 0x23, 0x01, 0x00, 0x00})},
      {make::ModeExec(ExecMode::k64Bit, true), Bytes({0x99, 0x05})},
      {make::ModeTsx(false, true), Bytes({0x99, 0x22})},
      {make::TraceStop(), Bytes({0x02, 0x83})},
      {make::Cbr(42), Bytes({0x02, 0x03, 0x2a, 0x00})},
      {make::Tsc(0x22334455667788), Bytes({0x19, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22})},
      {make::Mtc(0xab), Bytes({0x59, 0xab})},
      {make::Tma(0x1234, 0x1ff), Bytes({0x02, 0x73, 0x34, 0x12, 0x00, 0xff, 0x01})},
      {make::Cyc(0x15), Bytes({0xab})},
      {make::Cyc(0x21), Bytes({0x0f, 0x02})},
      {make::Cyc(0x1000), Bytes({0x07, 0x01, 0x02})},
      {make::Cyc(1, 3), Bytes({0x0f, 0x01, 0x00})},
      {make::Vmcs(0x12345000), Bytes({0x02, 0xc8, 0x45, 0x23, 0x01, 0x00, 0x00})},
      {make::Ovf(), Bytes({0x02, 0xf3})},
      {make::Mnt(0x0807060504030201), Bytes({0x02, 0xc3, 0x88, 1, 2, 3, 4, 5, 6, 7, 8})},
      {make::Ptw(0xdeadbeef, 4, false), Bytes({0x02, 0x12, 0xef, 0xbe, 0xad, 0xde})},
      {make::Ptw(0x0102030405060708, 8, true), Bytes({0x02, 0xb2, 8, 7, 6, 5, 4, 3, 2, 1})},
      {make::ExStop(true), Bytes({0x02, 0xe2})},
      {make::Mwait(0x20, 1), Bytes({0x02, 0xc2, 0x20, 0, 0, 0, 1, 0, 0, 0})},
      {make::Pwre(2, 1, true), Bytes({0x02, 0x22, 0x80, 0x21})},
      {make::Pwrx(6, 2, 1), Bytes({0x02, 0xa2, 0x62, 0x01, 0, 0, 0})},
      {make::Bbp(4, 4), Bytes({0x02, 0x63, 0x84})},
      {make::Bip(2, 0x12345678, 4), Bytes({0x14, 0x78, 0x56, 0x34, 0x12})},
      {make::Bep(true), Bytes({0x02, 0xb3})},
  };
  for (const Case& c : kCases) {
    EXPECT_THAT(Encode(c.packet), ElementsAreArray(c.bytes)) << Describe(c.packet);
  }
}

TEST(PacketEncoder, ReencodesEverySdmVector) {
  Spec("pt.encoder.roundtrip", "SDM Vol. 3C §33.4.2 Packet Definitions");
  for (const testing::SdmVector& v : testing::SdmVectors()) {
    std::vector<uint8_t> bytes = v.block ? testing::Concat({testing::BbpFor(v.block), v.bytes}) : v.bytes;
    PacketDecoder d(bytes);
    ASSERT_OK(d.SyncSet(0));
    if (v.block) ASSERT_OK(d.Next());  // the BBP that opens the block
    ASSERT_OK_AND_ASSIGN(Packet p, d.Next());
    EXPECT_THAT(Encode(p), ElementsAreArray(v.bytes)) << v.describe;
  }
}

TEST(PacketEncoder, DecodeOfEncodeIsIdentity) {
  Spec("pt.encoder.roundtrip", "packet_encoder.h: Decode(Encode(p)) == p");
  std::mt19937_64 rng(11);
  for (int i = 0; i < 20000; ++i) {
    Packet p = testing::RandomPacket(rng, {.block_packets = true, .event_trace = true});
    std::vector<uint8_t> bytes = Encode(p);
    ASSERT_FALSE(bytes.empty()) << Describe(p);
    PacketDecoder d(bytes);
    ASSERT_OK(d.SyncSet(0));
    ASSERT_OK_AND_ASSIGN(Packet q, d.Next());
    EXPECT_EQ(q, p);
  }
}

TEST(PacketEncoder, EncodeOfDecodeIsIdentity) {
  Spec("pt.encoder.roundtrip", "packet_encoder.h: Encode(Decode(bytes)) == bytes");
  std::mt19937_64 rng(12);
  for (int trace = 0; trace < 50; ++trace) {
    const std::vector<uint8_t> bytes = testing::RandomTrace(rng, 500, 50, {.block_packets = true, .event_trace = true});
    PacketDecoder d(bytes);
    ASSERT_OK(d.SyncSet(0));
    std::vector<uint8_t> again;
    Packet p;
    int err;
    while ((err = d.Next(p)) == 0) {
      const std::vector<uint8_t> one = Encode(p);
      again.insert(again.end(), one.begin(), one.end());
    }
    EXPECT_EQ(err, ENODATA);
    EXPECT_EQ(again, bytes);
  }
}

TEST(PacketEncoder, RejectsWhatNoDecoderProduces) {
  Spec("pt.encoder.errors", "packet_encoder.h EncodePacket errors");
  uint8_t buf[kMaxPacketSize];
  EXPECT_THAT(EncodePacket(Packet{}, buf), FailsWithErrno(EINVAL));
  EXPECT_THAT(EncodePacket(make::Tnt8(0, 0), buf), FailsWithErrno(EINVAL));
  EXPECT_THAT(EncodePacket(make::Tnt8(0, 7), buf), FailsWithErrno(EINVAL));
  EXPECT_THAT(EncodePacket(make::Tnt64(0, 48), buf), FailsWithErrno(EINVAL));
  EXPECT_THAT(EncodePacket(make::Tip(static_cast<IpBytes>(0b101), 0), buf), FailsWithErrno(EINVAL));
  Packet wide_ip = make::Tip(IpBytes::kUpdate16, 0);
  wide_ip.payload = 0x10000;
  EXPECT_THAT(EncodePacket(wide_ip, buf), FailsWithErrno(EINVAL));
  EXPECT_THAT(EncodePacket(make::Cyc(uint64_t{1} << 61), buf), FailsWithErrno(EINVAL));
  EXPECT_THAT(EncodePacket(make::Cyc(0x1000, 2), buf), FailsWithErrno(EINVAL)) << "needs 3 bytes";
  Packet tsx_as_exec = make::ModeTsx(true, false);
  tsx_as_exec.type = PacketType::kModeExec;
  EXPECT_THAT(EncodePacket(tsx_as_exec, buf), FailsWithErrno(EINVAL));
  Packet ptw = make::Ptw(0, 4, false);
  ptw.ext = 0x52;  // PayloadBytes 10b
  EXPECT_THAT(EncodePacket(ptw, buf), FailsWithErrno(EINVAL));
  uint8_t small[4];
  EXPECT_THAT(EncodePacket(make::Psb(), small), FailsWithErrno(ENOSPC));
}

TEST(PacketEncoder, NextIpCompressesAgainstLastIp) {
  Spec("pt.encoder.ip_compression", "SDM §33.4.2.2, table 'Compressed IP Payload Format'");
  PacketEncoder enc;
  ASSERT_THAT(enc.NextIp(PacketType::kTipPge, 0x401000), SucceedsWith(7u));  // sext48: no last IP
  ASSERT_THAT(enc.NextIp(PacketType::kTip, 0x401234), SucceedsWith(3u));     // upd16
  ASSERT_THAT(enc.NextIp(PacketType::kTip, 0x7f0000001000), SucceedsWith(7u));
  ASSERT_THAT(enc.NextIp(PacketType::kFup, 0x7f0012345678), SucceedsWith(5u));  // upd32
  ASSERT_THAT(enc.NextIp(PacketType::kTipPgd, std::nullopt), SucceedsWith(1u));
  ASSERT_THAT(enc.Next(make::Psb()), SucceedsWith(16u));
  ASSERT_THAT(enc.NextIp(PacketType::kFup, 0x7f0012345679), SucceedsWith(7u)) << "PSB reset the last IP";
  EXPECT_THAT(enc.NextIp(PacketType::kTsc, 0), FailsWithErrno(EINVAL));
}

}  // namespace
}  // namespace perftest::pt
