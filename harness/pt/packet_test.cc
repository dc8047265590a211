// Unit tests of harness/pt/packet.h: names, IPBytes sizes, descriptions.
#include "harness/pt/packet.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "harness/pt/testing/spec.h"

namespace perftest::pt {
namespace {

using testing::Spec;

TEST(Packet, NamesAreTheSdmsAndUnique) {
  Spec("pt.packet.names", "SDM Vol. 3C §33.4.2 packet names");
  std::set<std::string_view> names;
  for (int t = 0; t < kPacketTypeCount; ++t) names.insert(PacketName(static_cast<PacketType>(t)));
  EXPECT_EQ(names.size(), static_cast<size_t>(kPacketTypeCount));
  EXPECT_EQ(PacketName(PacketType::kTipPge), "TIP.PGE");
  EXPECT_EQ(PacketName(PacketType::kModeExec), "MODE.Exec");
  EXPECT_EQ(PacketName(PacketType::kTraceStop), "TraceStop");
  EXPECT_EQ(PacketName(PacketType::kTnt64), "TNT-64");
  EXPECT_EQ(PacketName(static_cast<PacketType>(200)), "INVALID");
}

TEST(Packet, IpPayloadSizes) {
  Spec("pt.packet.ip_compression", "SDM §33.4.2.2, table 'Compressed IP Payload Format'");
  EXPECT_EQ(IpPayloadSize(0b000), 0);
  EXPECT_EQ(IpPayloadSize(0b001), 2);
  EXPECT_EQ(IpPayloadSize(0b010), 4);
  EXPECT_EQ(IpPayloadSize(0b011), 6);
  EXPECT_EQ(IpPayloadSize(0b100), 6);
  EXPECT_EQ(IpPayloadSize(0b101), -1);
  EXPECT_EQ(IpPayloadSize(0b110), 8);
  EXPECT_EQ(IpPayloadSize(0b111), -1);
  EXPECT_EQ(IpBytesName(0b011), "sext48");
}

TEST(Packet, ToStringHasOffsetAndSize) {
  Spec("pt.packet.print", "packet.h ToString");
  Packet p;
  p.type = PacketType::kMtc;
  p.offset = 0x10;
  p.size = 2;
  p.opcode = 0x59;
  p.payload = 0x7;
  EXPECT_EQ(ToString(p), "[0x10+2] MTC 0x7");
}

}  // namespace
}  // namespace perftest::pt
