// Unit tests of harness/pt/packet_decoder.h on hand-assembled bytes from the
// Intel SDM Vol. 3C §33.4.2 "Packet Definitions" tables (testing/sdm_vectors.h
// and below, each citing its table); libipt agreement is in
// libipt_differential_test.cc.
#include "harness/pt/packet_decoder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <utility>
#include <vector>

#include "harness/pt/testing/sdm_vectors.h"
#include "harness/pt/testing/trace_generator.h"
#include "harness/pt/testing/spec.h"
#include "harness/syscall_matchers.h"

namespace perftest::pt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Bytes;
using testing::Concat;
using testing::PsbBytes;
using testing::Spec;

// Decodes one packet at offset 0.
Result<Packet> DecodeOne(const std::vector<uint8_t>& bytes, PacketDecoder::Options options = {}) {
  PacketDecoder d(bytes, options);
  EXPECT_OK(d.SyncSet(0));
  return d.Next();
}

// Decodes from offset 0 to the first error; returns the packets and the error.
std::vector<Packet> DecodeAll(const std::vector<uint8_t>& bytes, int* err = nullptr,
                              PacketDecoder::Options options = {}) {
  PacketDecoder d(bytes, options);
  EXPECT_OK(d.SyncSet(0));
  std::vector<Packet> out;
  Packet p;
  int e;
  while ((e = d.Next(p)) == 0) out.push_back(p);
  if (err != nullptr) *err = e;
  return out;
}

std::vector<PacketType> Types(const std::vector<Packet>& packets) {
  std::vector<PacketType> t;
  for (const Packet& p : packets) t.push_back(p.type);
  return t;
}

TEST(PacketDecoder, EverySdmVector) {
  Spec("pt.packet.all_types", "SDM Vol. 3C §33.4.2 Packet Definitions (every table)");
  for (const testing::SdmVector& v : testing::SdmVectors()) {
    SCOPED_TRACE(v.spec);
    const std::vector<uint8_t> bytes = v.block ? Concat({testing::BbpFor(v.block), v.bytes}) : v.bytes;
    const uint64_t at = v.block ? 3 : 0;
    PacketDecoder d(bytes);
    ASSERT_OK(d.SyncSet(0));
    if (v.block) ASSERT_OK(d.Next());  // the BBP that opens the block
    ASSERT_OK_AND_ASSIGN(Packet p, d.Next());
    EXPECT_EQ(p.type, v.type);
    EXPECT_EQ(p.offset, at);
    EXPECT_EQ(p.size, v.bytes.size());
    EXPECT_EQ(p.opcode, v.type == PacketType::kEvd ? v.bytes[2] : v.bytes[0]);  // (EVD: its Type, packet.h)
    EXPECT_EQ(Describe(p), v.describe);
    EXPECT_EQ(d.offset(), bytes.size());
    EXPECT_THAT(d.Next(), FailsWithErrno(ENODATA));
  }
}

TEST(PacketDecoder, EveryTypeHasAVector) {
  Spec("pt.packet.all_types", "SDM Vol. 3C §33.4.2 Packet Definitions");
  std::vector<bool> seen(kPacketTypeCount, false);
  for (const testing::SdmVector& v : testing::SdmVectors()) seen[static_cast<int>(v.type)] = true;
  for (int t = 1; t < kPacketTypeCount; ++t) {
    EXPECT_TRUE(seen[t]) << PacketName(static_cast<PacketType>(t));
  }
}

TEST(PacketDecoder, ShortTnt) {
  Spec("pt.packet.tnt8", "SDM §33.4.2.1, table 'TNT Packet Definition' (short TNT)");
  // 6Ch = 0110_1100b: bit 0 clear; bits 7:1 = 0110110b: the stop bit (bit 5 of
  // the field), then B1..B5 = T N T T N.
  ASSERT_OK_AND_ASSIGN(Packet p, DecodeOne(Bytes({0x6c})));
  EXPECT_EQ(p.type, PacketType::kTnt8);
  EXPECT_EQ(p.tnt_size(), 5u);
  EXPECT_EQ(p.tnt_bits(), 0b10110u);  // oldest branch in bit 4: T N T T N
  // Every byte with bit 0 clear, other than 00h (PAD) and 02h (extended), is a TNT-8.
  for (int b = 4; b < 256; b += 2) {
    ASSERT_OK_AND_ASSIGN(Packet q, DecodeOne(Bytes({b})));
    EXPECT_EQ(q.type, PacketType::kTnt8) << b;
    EXPECT_EQ(q.tnt_size() + 1, static_cast<unsigned>(std::bit_width(static_cast<unsigned>(b >> 1)))) << b;
  }
}

TEST(PacketDecoder, LongTnt) {
  Spec("pt.packet.tnt64", "SDM §33.4.2.1, table 'TNT Packet Definition' (long TNT)");
  ASSERT_OK_AND_ASSIGN(Packet p, DecodeOne(Bytes({0x02, 0xa3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})));
  EXPECT_EQ(p.type, PacketType::kTnt64);
  EXPECT_EQ(p.tnt_size(), 47u);
  EXPECT_EQ(p.tnt_bits(), 0x7fffffffffffu);
  // No stop bit, or a stop bit with no branch before it: EBADMSG.
  EXPECT_THAT(DecodeOne(Bytes({0x02, 0xa3, 0, 0, 0, 0, 0, 0})), FailsWithErrno(EBADMSG));
  EXPECT_THAT(DecodeOne(Bytes({0x02, 0xa3, 1, 0, 0, 0, 0, 0})), FailsWithErrno(EBADMSG));
}

TEST(PacketDecoder, IpPacketsEveryIpBytes) {
  Spec("pt.packet.ip_compression", "SDM §33.4.2.2, table 'Compressed IP Payload Format'");
  struct Case {
    uint8_t low;
    PacketType type;
  };
  const Case kTypes[] = {{0x0d, PacketType::kTip}, {0x11, PacketType::kTipPge},
                         {0x01, PacketType::kTipPgd}, {0x1d, PacketType::kFup}};
  const int kSizes[8] = {0, 2, 4, 6, 6, -1, 8, -1};
  for (const Case& c : kTypes) {
    for (int ipbytes = 0; ipbytes < 8; ++ipbytes) {
      SCOPED_TRACE(::testing::Message() << "opcode " << (ipbytes << 5 | c.low));
      std::vector<uint8_t> bytes = {static_cast<uint8_t>(ipbytes << 5 | c.low)};
      for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<uint8_t>(0x11 * (i + 1)));
      Result<Packet> r = DecodeOne(bytes);
      if (kSizes[ipbytes] < 0) {
        EXPECT_THAT(r, FailsWithErrno(EBADMSG)) << "IPBytes " << ipbytes << " is reserved";
        // Reserved IPBytes are reported before truncation (libipt's order).
        EXPECT_THAT(DecodeOne({bytes[0]}), FailsWithErrno(EBADMSG));
        continue;
      }
      ASSERT_OK(r);
      EXPECT_EQ(r->type, c.type);
      EXPECT_EQ(r->size, 1 + kSizes[ipbytes]);
      EXPECT_EQ(r->ipbytes(), ipbytes);
      uint64_t want = 0;
      for (int i = 0; i < kSizes[ipbytes]; ++i) want |= uint64_t{bytes[1 + i]} << (8 * i);
      EXPECT_EQ(r->ip_payload(), want);
    }
  }
}

TEST(PacketDecoder, Pip) {
  Spec("pt.packet.pip", "SDM §33.4.2.7, table 'PIP Packet Definition'");
  ASSERT_OK_AND_ASSIGN(Packet p, DecodeOne(Bytes({0x02, 0x43, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff})));
  EXPECT_EQ(p.cr3(), 0xfffffffffffe0u);  // CR3[51:5]
  EXPECT_FALSE(p.nr());
  ASSERT_OK_AND_ASSIGN(Packet q, DecodeOne(Bytes({0x02, 0x43, 0x01, 0, 0, 0, 0, 0})));
  EXPECT_EQ(q.cr3(), 0u);
  EXPECT_TRUE(q.nr());
}

TEST(PacketDecoder, ModeLeaves) {
  Spec("pt.packet.mode", "SDM §33.4.2.8, tables 'MODE.Exec Packet Definition', 'MODE.TSX Packet Definition'");
  ASSERT_OK_AND_ASSIGN(Packet exec, DecodeOne(Bytes({0x99, 0x07})));
  EXPECT_EQ(exec.type, PacketType::kModeExec);
  EXPECT_TRUE(exec.cs_l());
  EXPECT_TRUE(exec.cs_d());
  EXPECT_TRUE(exec.if_flag());
  EXPECT_EQ(exec.exec_mode(), ExecMode::kInvalid);
  ASSERT_OK_AND_ASSIGN(Packet tsx, DecodeOne(Bytes({0x99, 0x23})));
  EXPECT_EQ(tsx.type, PacketType::kModeTsx);
  EXPECT_TRUE(tsx.intx());
  EXPECT_TRUE(tsx.txabort());
  // Leaves 010b..111b are not defined.
  for (int leaf = 2; leaf < 8; ++leaf) {
    EXPECT_THAT(DecodeOne(Bytes({0x99, leaf << 5})), FailsWithErrno(EBADMSG)) << leaf;
  }
}

TEST(PacketDecoder, TmaReservedBits) {
  Spec("pt.packet.tma", "SDM §33.4.2.13, table 'TMA Packet Definition'; libipt pt_pkt_read_tma (erratum SKZ84)");
  ASSERT_OK_AND_ASSIGN(Packet p, DecodeOne(Bytes({0x02, 0x73, 0xcd, 0xab, 0x00, 0x34, 0x00})));
  EXPECT_EQ(p.tma_ctc(), 0xabcd);
  EXPECT_EQ(p.tma_fc(), 0x34);
  EXPECT_THAT(DecodeOne(Bytes({0x02, 0x73, 0xcd, 0xab, 0x01, 0x34, 0x00})), FailsWithErrno(EBADMSG));
  EXPECT_THAT(DecodeOne(Bytes({0x02, 0x73, 0xcd, 0xab, 0x00, 0x34, 0x02})), FailsWithErrno(EBADMSG));
}

TEST(PacketDecoder, CycLengths) {
  Spec("pt.packet.cyc", "SDM §33.4.2.14, table 'CYC Packet Definition'");
  // 1 + n bytes carry 5 + 7n bits; the decoder keeps 64 bits, so at most 8 extension bytes.
  for (unsigned ext = 0; ext <= 8; ++ext) {
    std::vector<uint8_t> bytes = {static_cast<uint8_t>(ext ? 0xff : 0xfb)};
    for (unsigned i = 1; i <= ext; ++i) bytes.push_back(i == ext ? 0xfe : 0xff);
    ASSERT_OK_AND_ASSIGN(Packet p, DecodeOne(bytes));
    EXPECT_EQ(p.size, 1 + ext);
    EXPECT_EQ(p.cyc(), (uint64_t{1} << (5 + 7 * ext)) - 1) << ext;
  }
  std::vector<uint8_t> too_long(10, 0xff);
  too_long.back() = 0x00;
  EXPECT_THAT(DecodeOne(too_long), FailsWithErrno(EBADMSG));
  // The same, cut before the 9th extension byte: truncation is found first.
  too_long.pop_back();
  EXPECT_THAT(DecodeOne(too_long), FailsWithErrno(EMSGSIZE));
}

TEST(PacketDecoder, Ptw) {
  Spec("pt.packet.ptw", "SDM §33.4.2.21, table 'PTW Packet Definition'");
  ASSERT_OK_AND_ASSIGN(Packet p, DecodeOne(Bytes({0x02, 0x92, 1, 2, 3, 4})));
  EXPECT_EQ(p.ptw_payload_bytes(), 4u);
  EXPECT_TRUE(p.ptw_ip());
  EXPECT_EQ(p.ptw_payload(), 0x04030201u);
  // PayloadBytes 10b and 11b are reserved: EBADMSG, even with the payload missing.
  EXPECT_THAT(DecodeOne(Bytes({0x02, 0x52, 1, 2, 3, 4, 5, 6, 7, 8})), FailsWithErrno(EBADMSG));
  EXPECT_THAT(DecodeOne(Bytes({0x02, 0xf2})), FailsWithErrno(EBADMSG));
}

TEST(PacketDecoder, PowerPackets) {
  Spec("pt.packet.power", "SDM §33.4.2.22-25, tables 'EXSTOP', 'MWAIT', 'PWRE', 'PWRX Packet Definition'");
  ASSERT_OK_AND_ASSIGN(Packet mwait, DecodeOne(Bytes({0x02, 0xc2, 0x78, 0x56, 0x34, 0x12, 0x03, 0, 0, 0})));
  EXPECT_EQ(mwait.mwait_hints(), 0x12345678u);
  EXPECT_EQ(mwait.mwait_ext(), 3u);
  ASSERT_OK_AND_ASSIGN(Packet pwre, DecodeOne(Bytes({0x02, 0x22, 0x08, 0x12})));
  EXPECT_FALSE(pwre.pwre_hw()) << "HW is byte 2 bit 7, not bit 3";
  EXPECT_EQ(pwre.pwre_state(), 1);
  EXPECT_EQ(pwre.pwre_sub_state(), 2);
  ASSERT_OK_AND_ASSIGN(Packet pwrx, DecodeOne(Bytes({0x02, 0xa2, 0x31, 0x0c, 0, 0, 0})));
  EXPECT_EQ(pwrx.pwrx_last(), 3);
  EXPECT_EQ(pwrx.pwrx_deepest(), 1);
  EXPECT_EQ(pwrx.pwrx_wake_reason(), 0xc);
}

TEST(PacketDecoder, UnknownOpcodes) {
  Spec("pt.packet.unknown_opcode", "SDM §33.4.2 (no packet has these opcodes)");
  int unknown_first = 0;
  for (int b = 0; b < 256; ++b) {
    if (b == 0x02) continue;  // 02h 02h is an unknown extended opcode, counted below
    Result<Packet> r = DecodeOne(std::vector<uint8_t>(16, static_cast<uint8_t>(b)));
    if (!r.ok() && r.error() == EILSEQ) ++unknown_first;
  }
  // Odd bytes that are not CYC (xxxxxx11b), TIP/TIP.PGE/TIP.PGD/FUP (low 5
  // bits 01101b/10001b/00001b/11101b), TSC (19h), MTC (59h) or MODE (99h):
  // low 5 bits 00101b, 01001b, 10101b (3 x 8), and 39h, 79h, B9h, F9h — and
  // D9h, which is TRIG to SDMs with Trigger Tracing, unknown to libipt 2.0.
  EXPECT_EQ(unknown_first, 28);
  int unknown_libipt = 0;
  for (int b = 0; b < 256; ++b) {
    if (b == 0x02) continue;
    Result<Packet> r = DecodeOne(std::vector<uint8_t>(16, static_cast<uint8_t>(b)), PacketDecoder::Options::Libipt205());
    if (!r.ok() && r.error() == EILSEQ) ++unknown_libipt;
  }
  EXPECT_EQ(unknown_libipt, 29);
  EXPECT_THAT(DecodeOne(Bytes({0x02, 0x02})), FailsWithErrno(EILSEQ));
  EXPECT_THAT(DecodeOne(Bytes({0xd9, 0, 0}), PacketDecoder::Options::Libipt205()), FailsWithErrno(EILSEQ));
  EXPECT_THAT(DecodeOne(Bytes({0x02, 0x04})), FailsWithErrno(EILSEQ));
  EXPECT_THAT(DecodeOne(Bytes({0x02, 0xc3, 0x89, 0, 0, 0, 0, 0, 0, 0, 0})), FailsWithErrno(EILSEQ));
}

TEST(PacketDecoder, PsbPattern) {
  Spec("pt.packet.psb", "SDM §33.4.2.17, table 'PSB Packet Definition'");
  std::vector<uint8_t> bad = PsbBytes();
  bad[9] = 0x83;
  EXPECT_THAT(DecodeOne(bad), FailsWithErrno(EBADMSG));
  bad.resize(10);
  EXPECT_THAT(DecodeOne(bad), FailsWithErrno(EMSGSIZE));
}

TEST(PacketDecoder, TruncatedAtEveryCut) {
  Spec("pt.packet.truncated", "SDM §33.4.2 packet sizes; libipt pte_eos");
  for (const testing::SdmVector& v : testing::SdmVectors()) {
    SCOPED_TRACE(v.describe);
    for (size_t cut = 1; cut < v.bytes.size(); ++cut) {
      std::vector<uint8_t> prefix(v.bytes.begin(), v.bytes.begin() + static_cast<long>(cut));
      if (v.block) prefix = Concat({testing::BbpFor(v.block), prefix});
      PacketDecoder d(prefix);
      ASSERT_OK(d.SyncSet(0));
      if (v.block) ASSERT_OK(d.Next());  // the BBP
      Packet p;
      EXPECT_EQ(d.Next(p), EMSGSIZE) << "cut at " << cut;
      EXPECT_EQ(d.offset(), v.block ? 3u : 0u) << "a failed Next does not move";
      EXPECT_THAT(d.Next(), FailsWithErrno(EMSGSIZE)) << "and fails the same way again";
    }
  }
}

TEST(PacketDecoder, TruncatedStreamPrefixes) {
  Spec("pt.packet.truncated", "SDM §33.4.2 packet sizes");
  std::vector<uint8_t> stream;
  for (const testing::SdmVector& v : testing::SdmVectors()) {
    if (v.type == PacketType::kBbp || v.block) continue;
    stream.insert(stream.end(), v.bytes.begin(), v.bytes.end());
  }
  int err = 0;
  const std::vector<Packet> all = DecodeAll(stream, &err);
  ASSERT_EQ(err, ENODATA);
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    std::vector<uint8_t> prefix(stream.begin(), stream.begin() + static_cast<long>(cut));
    const std::vector<Packet> got = DecodeAll(prefix, &err);
    size_t complete = 0;
    while (complete < all.size() && all[complete].offset + all[complete].size <= cut) ++complete;
    ASSERT_EQ(got.size(), complete) << "cut " << cut;
    for (size_t i = 0; i < complete; ++i) ASSERT_EQ(got[i], all[i]);
    const bool at_boundary = complete == all.size() || all[complete].offset == cut;
    EXPECT_EQ(err, at_boundary ? ENODATA : EMSGSIZE) << "cut " << cut;
  }
}

TEST(PacketDecoder, NotSynchronized) {
  Spec("pt.decoder.nosync", "libipt pt_pkt_next: -pte_nosync before synchronization");
  const std::vector<uint8_t> bytes = PsbBytes();
  PacketDecoder d(bytes);
  EXPECT_FALSE(d.synced());
  EXPECT_THAT(d.Next(), FailsWithErrno(ENOTCONN));
  ASSERT_OK(d.SyncForward());
  EXPECT_THAT(d.Next(), SucceedsWith(::testing::Field(&Packet::type, PacketType::kPsb)));
}

TEST(PacketDecoder, ErrorNamesOffsetInCall) {
  Spec("pt.decoder.error_offset", "STYLE.md 3: the result names the call as made");
  const std::vector<uint8_t> bytes = Bytes({0x00, 0x00, 0xc9});
  PacketDecoder d(bytes);
  ASSERT_OK(d.SyncSet(0));
  EXPECT_OK(d.Next());
  EXPECT_OK(d.Next());
  const Result<Packet> r = d.Next();
  EXPECT_THAT(r, FailsWithErrno(EILSEQ));
  EXPECT_THAT(r.ToString(), HasSubstr("Next(offset=0x2) = -EILSEQ"));
  EXPECT_EQ(d.offset(), 2u);
}

TEST(PacketDecoder, SyncSet) {
  Spec("pt.decoder.sync_set", "libipt pt_pkt_sync_set");
  const std::vector<uint8_t> bytes = Bytes({0x00, 0x59, 0x12});
  PacketDecoder d(bytes);
  EXPECT_THAT(d.SyncSet(4), FailsWithErrno(EINVAL));
  ASSERT_OK(d.SyncSet(1));
  EXPECT_EQ(d.sync_offset(), 1u);
  EXPECT_THAT(d.Next(), SucceedsWith(::testing::Field(&Packet::type, PacketType::kMtc)));
  ASSERT_OK(d.SyncSet(3));
  EXPECT_THAT(d.Next(), FailsWithErrno(ENODATA));
}

TEST(PacketDecoder, SyncForwardSkipsToPsbAndPastIt) {
  Spec("pt.decoder.sync_forward", "SDM §33.4.2.17 (PSB: 'used to find packet boundaries'); libipt pt_pkt_sync_forward");
  const std::vector<uint8_t> bytes =
      Concat({Bytes({0xc9, 0xc9, 0xc9}), PsbBytes(), Bytes({0x02, 0x23, 0x00}), PsbBytes(), Bytes({0x02, 0x23})});
  PacketDecoder d(bytes);
  EXPECT_THAT(d.SyncForward(), SucceedsWith(3u));
  EXPECT_THAT(d.SyncForward(), SucceedsWith(22u)) << "from a sync point: the next PSB";
  EXPECT_THAT(d.SyncForward(), FailsWithErrno(ENODATA));
  EXPECT_EQ(d.offset(), 22u) << "a failed sync does not move";
  EXPECT_THAT(d.SyncBackward(), SucceedsWith(3u));
  EXPECT_THAT(d.SyncBackward(), FailsWithErrno(ENODATA));
}

TEST(PacketDecoder, ResyncFindsPsbOverlappedByTruncatedPacket) {
  Spec("pt.decoder.resync_overlap",
       "perf-intel-pt.txt 'dump option' (last packet truncated, then a PSB); libipt pt_pkt_sync_forward");
  // A TIP cut short by the end of one buffer (IPBytes 010b wants 4 payload
  // bytes), then the next buffer starting with PSB, PSBEND.
  const std::vector<uint8_t> bytes = Concat({Bytes({0x4d, 0x11}), PsbBytes(), Bytes({0x02, 0x23})});
  int err = 0;
  const std::vector<Packet> packets = DecodeAll(bytes, &err);
  // The TIP swallows 3 PSB bytes, an 82h decodes as TNT-8, and the rest of the PSB is short.
  ASSERT_THAT(Types(packets), ElementsAre(PacketType::kTip, PacketType::kTnt8));
  EXPECT_EQ(err, EMSGSIZE);
  PacketDecoder d(bytes);
  ASSERT_OK(d.SyncSet(0));
  Packet p;
  while (d.Next(p) == 0) {
  }
  EXPECT_EQ(d.offset(), 6u);
  EXPECT_THAT(d.SyncForward(), SucceedsWith(2u)) << "the PSB starts before the error";
  EXPECT_THAT(d.Next(), SucceedsWith(::testing::Field(&Packet::type, PacketType::kPsb)));
  EXPECT_THAT(d.Next(), SucceedsWith(::testing::Field(&Packet::type, PacketType::kPsbEnd)));
}

TEST(PacketDecoder, ResyncAfterErrorMakesProgress) {
  Spec("pt.decoder.resync", "libipt pt_pkt_sync_forward after an error");
  std::vector<uint8_t> bytes;
  for (int i = 0; i < 5; ++i) bytes = Concat({bytes, PsbBytes(), Bytes({0x02, 0x23, 0xc9, 0x00, 0x00})});
  PacketDecoder d(bytes);
  int psbs = 0, errors = 0;
  for (Result<uint64_t> s = d.SyncForward(); s.ok(); s = d.SyncForward()) {
    Packet p;
    int err;
    while ((err = d.Next(p)) == 0) psbs += p.type == PacketType::kPsb;
    if (err == ENODATA) break;
    EXPECT_EQ(err, EILSEQ);
    ++errors;
  }
  EXPECT_EQ(psbs, 5);
  EXPECT_EQ(errors, 5);
}

TEST(PacketDecoder, BlockContext) {
  Spec("pt.packet.pebs_block", "SDM §33.4.2.26-28, tables 'BBP', 'BIP', 'BEP Packet Definition'; perf intel_pt_upd_pkt_ctx");
  // BBP (4-byte items), BIP, MTC (keeps the block), BIP, BEP, then 14h again: a TNT-8 now.
  const std::vector<uint8_t> bytes = Concat({testing::BbpFor(4), Bytes({0x0c, 1, 2, 3, 4}), Bytes({0x59, 0x01}),
                                             Bytes({0x14, 5, 6, 7, 8}), Bytes({0x02, 0x33}), Bytes({0x14})});
  int err = 0;
  const std::vector<Packet> packets = DecodeAll(bytes, &err);
  EXPECT_EQ(err, ENODATA);
  ASSERT_THAT(Types(packets), ElementsAre(PacketType::kBbp, PacketType::kBip, PacketType::kMtc, PacketType::kBip,
                                          PacketType::kBep, PacketType::kTnt8));
  EXPECT_EQ(packets[1].bip_id(), 1);
  EXPECT_EQ(packets[1].bip_value(), 0x04030201u);
  EXPECT_EQ(packets[3].bip_id(), 2);
  // 8-byte items; a TNT-8 that is not xxxxx100b ends the block.
  const std::vector<uint8_t> eight =
      Concat({testing::BbpFor(8), Bytes({0x04, 1, 2, 3, 4, 5, 6, 7, 8}), Bytes({0x06}), Bytes({0x04})});
  EXPECT_THAT(Types(DecodeAll(eight)),
              ElementsAre(PacketType::kBbp, PacketType::kBip, PacketType::kTnt8, PacketType::kTnt8));
  // A BIP cut short inside a block.
  const std::vector<uint8_t> cut = Concat({testing::BbpFor(8), Bytes({0x04, 1, 2})});
  PacketDecoder d(cut);
  ASSERT_OK(d.SyncSet(0));
  EXPECT_OK(d.Next());
  EXPECT_EQ(d.block_item_bytes(), 8u);
  EXPECT_THAT(d.Next(), FailsWithErrno(EMSGSIZE));
  // Sync leaves the block.
  ASSERT_OK(d.SyncSet(3));
  EXPECT_EQ(d.block_item_bytes(), 0u);
}

TEST(PacketDecoder, BlockPacketsDisabled) {
  Spec("pt.packet.pebs_block", "libipt 2.0 has no BBP/BIP/BEP: -pte_bad_opc");
  PacketDecoder::Options options;
  options.block_packets = false;
  EXPECT_THAT(DecodeOne(testing::BbpFor(4), options), FailsWithErrno(EILSEQ));
  EXPECT_THAT(DecodeOne(Bytes({0x02, 0x33}), options), FailsWithErrno(EILSEQ));
  EXPECT_THAT(DecodeOne(Bytes({0x02, 0xb3}), options), FailsWithErrno(EILSEQ));
}

TEST(PacketDecoder, EventTracePackets) {
  Spec("pt.packet.cfe_evd", "SDM §33.4.2.29 'CFE Packet Definition', §33.4.2.30 'EVD Packet Definition'");
  // CFE VMEXIT_INTR (09h) of vector 0Eh (#PF), IP bit clear: 02 13 09 0E.
  ASSERT_OK_AND_ASSIGN(Packet cfe, DecodeOne(Bytes({0x02, 0x13, 0x09, 0x0e})));
  EXPECT_EQ(cfe.type, PacketType::kCfe);
  EXPECT_EQ(cfe.size, 4);
  EXPECT_EQ(cfe.cfe_type(), 9);
  EXPECT_EQ(cfe.cfe_vector(), 14);
  EXPECT_FALSE(cfe.cfe_ip());
  // CFE SWINTR (0Eh) of INT 80h, IP bit set: 02 13 8E 80 (reserved bits 6:5 ignored).
  ASSERT_OK_AND_ASSIGN(Packet swintr, DecodeOne(Bytes({0x02, 0x13, 0xee, 0x80})));
  EXPECT_EQ(swintr.cfe_type(), 0x0e);
  EXPECT_EQ(swintr.cfe_vector(), 0x80);
  EXPECT_TRUE(swintr.cfe_ip());
  // EVD VMX exit qualification (01h), payload 0xf00baa.
  ASSERT_OK_AND_ASSIGN(Packet evd, DecodeOne(Bytes({0x02, 0x53, 0x01, 0xaa, 0x0b, 0xf0, 0, 0, 0, 0, 0})));
  EXPECT_EQ(evd.type, PacketType::kEvd);
  EXPECT_EQ(evd.size, 11);
  EXPECT_EQ(evd.evd_type(), 1);
  EXPECT_EQ(evd.evd_payload(), 0xf00baau);
  // Cut short: EMSGSIZE at every cut.
  EXPECT_THAT(DecodeOne(Bytes({0x02, 0x13, 0x01})), FailsWithErrno(EMSGSIZE));
  EXPECT_THAT(DecodeOne(Bytes({0x02, 0x53, 0x01, 0, 0, 0, 0, 0, 0, 0})), FailsWithErrno(EMSGSIZE));
  // Unknown to libipt 2.0 (and with event_trace_packets = false).
  PacketDecoder::Options off;
  off.event_trace_packets = false;
  EXPECT_THAT(DecodeOne(Bytes({0x02, 0x13, 0x09, 0x0e}), off), FailsWithErrno(EILSEQ));
  EXPECT_THAT(DecodeOne(Bytes({0x02, 0x53, 0x01, 0, 0, 0, 0, 0, 0, 0, 0}), off), FailsWithErrno(EILSEQ));
  ASSERT_OK(DecodeOne(Bytes({0xd9, 0, 0}), off));  // (TRIG has its own flag)
}

TEST(PacketDecoder, TrigPacket) {
  Spec("pt.packet.trig", "SDM §33.4.2 'TRIG Packet Definition' (Trigger Tracing)");
  // Without ICNTV: 3 bytes, whatever follows.
  ASSERT_OK_AND_ASSIGN(Packet t, DecodeOne(Bytes({0xd9, 0x20, 0x03, 0xff, 0xff})));
  EXPECT_EQ(t.type, PacketType::kTrig);
  EXPECT_EQ(t.size, 3);
  EXPECT_EQ(t.trig_trbv(), 3);
  EXPECT_TRUE(t.trig_mult());
  EXPECT_FALSE(t.trig_icntv());
  EXPECT_FALSE(t.trig_ip());
  // With ICNTV (byte 1 bit 6): ICNT in bytes 3..4, little-endian.
  ASSERT_OK_AND_ASSIGN(Packet i, DecodeOne(Bytes({0xd9, 0xc0, 0x1a, 0x02, 0x01})));
  EXPECT_EQ(i.size, 5);
  EXPECT_TRUE(i.trig_icntv());
  EXPECT_TRUE(i.trig_ip());
  EXPECT_EQ(i.trig_icnt(), 0x102);
  EXPECT_EQ(i.trig_trbv(), 0x1a);
  EXPECT_THAT(DecodeOne(Bytes({0xd9, 0x40, 0x1a, 0x02})), FailsWithErrno(EMSGSIZE));
  EXPECT_THAT(DecodeOne(Bytes({0xd9, 0x00})), FailsWithErrno(EMSGSIZE));
  PacketDecoder::Options off;
  off.trigger_packets = false;
  EXPECT_THAT(DecodeOne(Bytes({0xd9, 0x00, 0x01}), off), FailsWithErrno(EILSEQ));
}

TEST(PacketDecoder, FastAndSlowPathsAgree) {
  Spec("pt.decoder.fast_path", "packet_decoder.h 'Speed'");
  // Every simple first byte with a full 9-byte window (fast path) and with
  // exactly its own bytes (slow path: the trace ends with the packet).
  for (int b = 0; b < 256; ++b) {
    std::vector<uint8_t> wide(16, 0xa5);
    wide[0] = static_cast<uint8_t>(b);
    Result<Packet> fast = DecodeOne(wide);
    if (!fast.ok()) continue;
    std::vector<uint8_t> exact(wide.begin(), wide.begin() + fast->size);
    ASSERT_OK_AND_ASSIGN(Packet slow, DecodeOne(exact));
    EXPECT_EQ(*fast, slow) << b;
  }
}

// What the resync protocol gives with Next(): packets and (errno, offset) pairs.
struct Outcome {
  std::vector<Packet> packets;
  std::vector<std::pair<int, uint64_t>> stops;
  bool operator==(const Outcome&) const = default;
};

template <typename DecodeSome>
Outcome RunProtocol(const std::vector<uint8_t>& trace, PacketDecoder::Options options, DecodeSome decode_some) {
  Outcome o;
  PacketDecoder d(trace, options);
  if (!d.SyncSet(0).ok()) return o;
  for (size_t rounds = 0; rounds < 100'000'000; ++rounds) {
    const int err = decode_some(d, o.packets);
    if (err == 0) continue;
    o.stops.emplace_back(err, d.offset());
    if (err == ENODATA || !d.SyncForward().ok()) break;
  }
  return o;
}

Outcome WithNext(const std::vector<uint8_t>& trace, PacketDecoder::Options options = {}) {
  return RunProtocol(trace, options, [](PacketDecoder& d, std::vector<Packet>& out) {
    Packet p;
    int err;
    while ((err = d.Next(p)) == 0) out.push_back(p);
    return err;
  });
}

Outcome WithDecode(const std::vector<uint8_t>& trace, size_t batch, PacketDecoder::Options options = {}) {
  return RunProtocol(trace, options, [batch](PacketDecoder& d, std::vector<Packet>& out) {
    std::vector<Packet> buf(batch);
    int err = 0;
    const size_t n = d.Decode(buf, err);
    out.insert(out.end(), buf.begin(), buf.begin() + static_cast<long>(n));
    return err;
  });
}

Outcome WithBatch(const std::vector<uint8_t>& trace, size_t capacity, PacketDecoder::Options options = {}) {
  PacketBatch batch(capacity);
  return RunProtocol(trace, options, [&batch](PacketDecoder& d, std::vector<Packet>& out) {
    const int err = d.Decode(batch);
    batch.ForEach([&](const PacketRecord& r) { out.push_back(batch.ToPacket(r)); });
    return err;
  });
}

TEST(PacketDecoder, DecodeIsNextInBulk) {
  Spec("pt.decoder.bulk", "packet_decoder.h Decode(), both forms: the packets and errors of Next()");
  std::mt19937_64 rng(77);
  std::vector<std::vector<uint8_t>> traces;
  for (uint64_t seed = 1; seed <= 3; ++seed) traces.push_back(testing::RealisticTrace({.seed = seed, .size = 256 << 10}));
  traces.push_back(testing::RealisticTrace({.seed = 9, .size = 64 << 10, .psb_period = 256}));
  traces.push_back(testing::RealisticTrace({.seed = 10, .size = 64 << 10, .psb_period = 65536}));
  for (int i = 0; i < 20; ++i) traces.push_back(testing::RandomTrace(rng, 8000, 200, {.block_packets = i % 2 == 0, .event_trace = i % 3 == 0}));
  // Dense PSBs, a PSB pattern inside payloads, and 1-byte packets only (lanes that fill their regions).
  traces.push_back(testing::RealisticTrace({.seed = 11, .size = 64 << 10, .psb_period = 16}));
  {
    std::vector<uint8_t> ones(40000, 0x04);  // TNT-8 N, every byte
    for (size_t at = 0; at + 16 < ones.size(); at += 4096 + 7) {
      for (size_t k = 0; k < 16; k += 2) {
        ones[at + k] = 0x02;
        ones[at + k + 1] = 0x82;
      }
    }
    traces.push_back(ones);
    // Opcodes the lanes' tables do not take (02h, an unknown opcode, TIP
    // with IPBytes 101b) followed by zero bytes, inside segments.
    const uint8_t bad[] = {0x02, 0x09, 0xad};
    for (size_t at = 1000, k = 0; at + 16 < ones.size(); at += 2500, ++k) {
      ones[at] = bad[k % 3];
      std::fill(ones.begin() + static_cast<long>(at) + 1, ones.begin() + static_cast<long>(at) + 12, 0);
    }
    traces.push_back(std::move(ones));
  }
  {
    std::vector<uint8_t> mnt;  // MNT packets whose payload is PSB pattern: PSBs that are not
    for (int i = 0; i < 3000; ++i) {
      const uint8_t p[] = {0x02, 0xc3, 0x88, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x04, 0x02, 0x82};
      mnt.insert(mnt.end(), std::begin(p), std::end(p));
    }
    traces.push_back(std::move(mnt));
  }
  // Corrupted copies: errors inside stretches, PSBs cut, stretches that overrun the next PSB.
  for (size_t i = 0, n = traces.size(); i < n; ++i) {
    std::vector<uint8_t> t = traces[i];
    for (int k = 0; k < 20; ++k) t[rng() % t.size()] = static_cast<uint8_t>(rng());
    // And a PSB's worth of pattern over arbitrary bytes: partial PSBs, long runs.
    for (size_t at = rng() % t.size(), k = 0; k < 16 && at + 1 < t.size(); k += 2, at += 2) {
      t[at] = 0x02;
      t[at + 1] = 0x82;
    }
    traces.push_back(std::move(t));
  }
  for (size_t i = 0; i < traces.size(); ++i) {
    const Outcome want = WithNext(traces[i]);
    for (size_t batch : {1, 100, 4096, 16384, 100000, 0x10001, 0x10002, 0x10003, 0x10004}) {
      // Above 0x10000: Decode(PacketBatch&) with 4 Ki or 64 Ki records, the
      // last two held to its portable lanes (Options::portable; the others
      // run the mapped lanes where the CPU has them); else Decode(std::span<Packet>).
      const Outcome got =
          batch > 0x10000 ? WithBatch(traces[i], batch % 2 == 1 ? 4096 : PacketBatch::kDefaultCapacity,
                                      PacketDecoder::Options{.portable = batch > 0x10002})
                          : WithDecode(traces[i], batch);
      if (got == want) continue;
      if (const char* save = std::getenv("PERFTEST_PT_DIFF_SAVE"); save != nullptr) {
        if (std::FILE* f = std::fopen(save, "wb")) {
          std::fwrite(traces[i].data(), 1, traces[i].size(), f);
          std::fclose(f);
        }
      }
      size_t k = 0;
      while (k < got.packets.size() && k < want.packets.size() && got.packets[k] == want.packets[k]) ++k;
      ADD_FAILURE() << "trace " << i << ", batch " << batch << ": packet " << k << " of " << want.packets.size()
                    << ": " << (k < got.packets.size() ? ToString(got.packets[k]) : "none") << " vs Next(): "
                    << (k < want.packets.size() ? ToString(want.packets[k]) : "none") << "; stops "
                    << got.stops.size() << " vs " << want.stops.size();
      return;
    }
  }
}

TEST(PacketDecoder, BatchOfFewRecordsIsNextInBulk) {
  Spec("pt.decoder.bulk_small", "packet_decoder.h Decode(PacketBatch&): a packet at a time with little room");
  std::mt19937_64 rng(78);
  const std::vector<uint8_t> trace = testing::RandomTrace(rng, 3000, 100, {.block_packets = true, .event_trace = true});
  const Outcome want = WithNext(trace);
  for (size_t capacity : {0, 1, 7, 100}) EXPECT_TRUE(WithBatch(trace, capacity) == want) << capacity;
}

TEST(PacketBatch, RecordsGiveBackPackets) {
  Spec("pt.decoder.batch", "packet_batch.h: a PacketRecord holds a Packet, offset from base()");
  const std::vector<uint8_t> trace = testing::RealisticTrace({.seed = 5, .size = 64 << 10});
  PacketDecoder d(trace);
  ASSERT_OK(d.SyncForward());
  ASSERT_OK(d.SyncSet(d.offset() + 16));  // past the first PSB: a base that is not 0
  PacketDecoder ref = d;
  PacketBatch batch;
  EXPECT_EQ(batch.capacity(), PacketBatch::kDefaultCapacity);
  const uint64_t base = d.offset();
  EXPECT_EQ(d.Decode(batch), ENODATA);
  EXPECT_EQ(batch.base(), base);
  ASSERT_GT(batch.size(), 1000u);
  EXPECT_GT(batch.chunk_count(), 1u);  // 64 KiB: several segments
  size_t n = 0;
  for (size_t c = 0; c < batch.chunk_count(); ++c) {
    ASSERT_FALSE(batch.chunk(c).empty());
    for (const PacketRecord& r : batch.chunk(c)) {
      Packet p;
      ASSERT_EQ(ref.Next(p), 0);
      ASSERT_EQ(batch.ToPacket(r), p) << n;
      EXPECT_EQ(batch.offset(r), p.offset);
      EXPECT_EQ(r.payload, p.payload);
      EXPECT_EQ(r.type, p.type);
      EXPECT_EQ(r.size, p.size);
      ++n;
    }
  }
  EXPECT_EQ(n, batch.size());
  EXPECT_EQ(batch.Packets().size(), n);
  Packet p;
  EXPECT_EQ(ref.Next(p), ENODATA);
  // At the end: nothing more, the same error.
  EXPECT_EQ(d.Decode(batch), ENODATA);
  EXPECT_TRUE(batch.empty());
}

}  // namespace
}  // namespace perftest::pt
