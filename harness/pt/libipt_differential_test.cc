// Differential tests: our packet decoder against libipt 2.0.5's
// pt_pkt_next (testing/libipt_reference.h) on the same bytes.
//
// Streams: realistic traces (testing/trace_generator.h), random packets of
// every type libipt knows encoded by our encoder and by libipt's
// pt_enc_next, seeded corruptions of all of them (byte and bit flips,
// truncation, deletion, insertion, duplication, splicing), and noise (random
// bytes, and bytes drawn from PT opcodes with PSBs sprinkled in).
//
// Protocol (testing/differential.h), run on both decoders: sync forward (or
// SyncSet(0)), then Next until an error; record each packet (type, offset,
// size, payload) and each error (errno, offset); after an error sync forward
// again, and record where it lands. The two records must be identical —
// packets up to the first error, the same error at the same offset, the same
// resync point, and so on to the end. A third protocol walks PSBs backward
// from the end.
//
// Declared divergences (testing/libipt_reference.h): pt.libipt.pwre_hw,
// pt.libipt.mode_if, pt.libipt.no_blocks. Set PERFTEST_PT_DIFF_SCALE=N to
// run N times as many streams.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "harness/pt/packet_decoder.h"
#include "harness/pt/packet_encoder.h"
#include "harness/pt/testing/differential.h"
#include "harness/pt/testing/libipt_reference.h"
#include "harness/pt/testing/sdm_vectors.h"
#include "harness/pt/testing/spec.h"
#include "harness/pt/testing/trace_generator.h"
#include "harness/syscall_matchers.h"

namespace perftest::pt {
namespace {

using testing::DiffAgainstLibipt;
using testing::DiffStats;
using testing::LibiptDecoder;
using testing::RefPacket;
using testing::Spec;

// Totals over the whole binary, printed at the end.
DiffStats& Global() {
  static DiffStats t;
  return t;
}

class TotalsPrinter : public ::testing::Environment {
 public:
  void TearDown() override {
    const DiffStats& t = Global();
    if (t.streams == 0) return;
    std::printf(
        "[libipt differential] %llu streams, %llu bytes, %llu packets, %llu errors, %llu sync points: identical; "
        "declared divergence pt.libipt.pwre_hw seen on %llu packets\n",
        static_cast<unsigned long long>(t.streams), static_cast<unsigned long long>(t.bytes),
        static_cast<unsigned long long>(t.packets), static_cast<unsigned long long>(t.errors),
        static_cast<unsigned long long>(t.syncs), static_cast<unsigned long long>(t.pwre_divergent));
  }
};
[[maybe_unused]] ::testing::Environment* const kTotalsPrinter =
    ::testing::AddGlobalTestEnvironment(new TotalsPrinter);

::testing::AssertionResult Agree(std::span<const uint8_t> bytes) {
  const std::string diff = DiffAgainstLibipt(bytes, &Global());
  if (diff.empty()) return ::testing::AssertionSuccess();
  // PERFTEST_PT_DIFF_SAVE=FILE keeps the failing stream, for perftest_pt dump.
  if (const char* save = std::getenv("PERFTEST_PT_DIFF_SAVE"); save != nullptr) {
    if (std::FILE* f = std::fopen(save, "wb")) {
      std::fwrite(bytes.data(), 1, bytes.size(), f);
      std::fclose(f);
    }
  }
  return ::testing::AssertionFailure() << diff;
}
::testing::AssertionResult Agree(std::initializer_list<uint8_t> bytes) {
  const std::vector<uint8_t> v(bytes);
  return Agree(std::span<const uint8_t>(v));
}

int Scale() {
  const char* s = std::getenv("PERFTEST_PT_DIFF_SCALE");
  const int n = s != nullptr ? std::atoi(s) : 1;
  return n > 0 ? n : 1;
}

// Seeded corruptions of `in`.
std::vector<uint8_t> Corrupt(std::mt19937_64& rng, const std::vector<uint8_t>& in,
                             const std::vector<uint8_t>& other) {
  std::vector<uint8_t> v = in;
  auto pos = [&](size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng() % n); };
  switch (rng() % 8) {
    case 0:  // a few bytes replaced
      for (int i = 0, n = 1 + static_cast<int>(rng() % 8); i < n && !v.empty(); ++i) v[pos(v.size())] = static_cast<uint8_t>(rng());
      break;
    case 1:  // a few bits flipped
      for (int i = 0, n = 1 + static_cast<int>(rng() % 8); i < n && !v.empty(); ++i) v[pos(v.size())] ^= static_cast<uint8_t>(1u << (rng() % 8));
      break;
    case 2:  // truncated
      v.resize(pos(v.size() + 1));
      break;
    case 3: {  // a range deleted
      const size_t a = pos(v.size()), n = std::min(v.size() - a, 1 + pos(64));
      v.erase(v.begin() + static_cast<long>(a), v.begin() + static_cast<long>(a + n));
      break;
    }
    case 4: {  // random bytes inserted
      const size_t a = pos(v.size() + 1);
      std::vector<uint8_t> junk(1 + pos(32));
      for (uint8_t& b : junk) b = static_cast<uint8_t>(rng());
      v.insert(v.begin() + static_cast<long>(a), junk.begin(), junk.end());
      break;
    }
    case 5: {  // a range duplicated
      if (v.empty()) break;
      const size_t a = pos(v.size()), n = std::min(v.size() - a, 1 + pos(64));
      std::vector<uint8_t> dup(v.begin() + static_cast<long>(a), v.begin() + static_cast<long>(a + n));
      v.insert(v.begin() + static_cast<long>(pos(v.size() + 1)), dup.begin(), dup.end());
      break;
    }
    case 6: {  // spliced with another stream at arbitrary points
      v.resize(pos(v.size() + 1));
      const size_t b = pos(other.size() + 1);
      v.insert(v.end(), other.begin() + static_cast<long>(b), other.end());
      break;
    }
    default:  // a PSB's worth of pattern written over arbitrary bytes (partial PSBs, runs)
      for (size_t i = pos(v.size()), n = 2 * (1 + pos(10)); n > 0 && i + 1 < v.size(); i += 2, n -= 2) {
        v[i] = 0x02;
        v[i + 1] = 0x82;
      }
      break;
  }
  return v;
}

std::vector<pt_packet> RandomLibiptPackets(std::mt19937_64& rng, size_t count) {
  std::vector<pt_packet> out;
  pt_packet psb{};
  psb.type = ppt_psb;
  out.push_back(psb);
  while (out.size() < count) {
    pt_packet p;
    if (testing::ToLibipt(testing::RandomPacket(rng, {.libipt_exact = true}), &p)) out.push_back(p);
  }
  return out;
}

TEST(LibiptDifferential, SdmVectors) {
  Spec("pt.libipt.sdm_vectors", "SDM Vol. 3C §33.4.2; libipt 2.0.5 pt_pkt_next");
  for (const testing::SdmVector& v : testing::SdmVectors()) {
    if (v.block || v.type == PacketType::kBbp || v.type == PacketType::kBep) continue;  // pt.libipt.no_blocks
    if (v.type == PacketType::kCfe || v.type == PacketType::kEvd || v.type == PacketType::kTrig) continue;  // below
    EXPECT_TRUE(Agree(v.bytes)) << v.describe;
  }
}

TEST(LibiptDifferential, EventTraceAndTrigAreUnknownToLibipt) {
  Spec("pt.libipt.no_event_trace",
       "declared divergence: libipt 2.0.5 predates Event Trace and Trigger Tracing (SDM §33.4.2.29-30, TRIG)");
  int seen = 0;
  for (const testing::SdmVector& v : testing::SdmVectors()) {
    if (v.type != PacketType::kCfe && v.type != PacketType::kEvd && v.type != PacketType::kTrig) continue;
    ++seen;
    LibiptDecoder ref(v.bytes);
    RefPacket r;
    ASSERT_EQ(ref.SyncSet(0), 0);
    EXPECT_EQ(ref.Next(&r), EILSEQ) << v.describe;
    // Ours with libipt 2.0.5's packet set agrees; by default it decodes them.
    PacketDecoder compat(v.bytes, PacketDecoder::Options::Libipt205());
    ASSERT_OK(compat.SyncSet(0));
    EXPECT_THAT(compat.Next(), FailsWithErrno(EILSEQ)) << v.describe;
    PacketDecoder ours(v.bytes);
    ASSERT_OK(ours.SyncSet(0));
    EXPECT_TRUE(ours.Next().ok()) << v.describe;
  }
  EXPECT_EQ(seen, 7);
}

TEST(LibiptDifferential, BlockPacketsAreUnknownToLibipt) {
  Spec("pt.libipt.no_blocks", "declared divergence: libipt 2.0.5 predates PEBS via PT (SDM §33.4.2.26-28)");
  for (const testing::SdmVector& v : testing::SdmVectors()) {
    if (v.type != PacketType::kBbp && v.type != PacketType::kBep) continue;
    LibiptDecoder ref(v.bytes);
    RefPacket r;
    ASSERT_EQ(ref.SyncSet(0), 0);
    EXPECT_EQ(ref.Next(&r), EILSEQ) << v.describe;
  }
}

TEST(LibiptDifferential, RealisticTraces) {
  Spec("pt.libipt.realistic", "libipt 2.0.5 pt_pkt_next, pt_pkt_sync_forward/backward");
  for (int i = 0; i < 8 * Scale(); ++i) {
    const std::vector<uint8_t> t = testing::RealisticTrace({.seed = 100u + static_cast<uint64_t>(i), .size = 1 << 20});
    ASSERT_TRUE(Agree(t)) << "seed " << 100 + i;
  }
}

TEST(LibiptDifferential, RandomPacketsOurEncoder) {
  Spec("pt.libipt.random_ours", "libipt 2.0.5 pt_pkt_next on streams from packet_encoder.h");
  std::mt19937_64 rng(2001);
  for (int i = 0; i < 2000 * Scale(); ++i) {
    const std::vector<uint8_t> t = testing::RandomTrace(rng, 200 + rng() % 800, 40, {});
    ASSERT_TRUE(Agree(t)) << "stream " << i;
  }
}

TEST(LibiptDifferential, RandomPacketsLibiptEncoder) {
  Spec("pt.libipt.random_libipt", "libipt 2.0.5 pt_enc_next + pt_pkt_next");
  std::mt19937_64 rng(2002);
  for (int i = 0; i < 2000 * Scale(); ++i) {
    std::vector<uint8_t> t;
    ASSERT_TRUE(testing::LibiptEncode(RandomLibiptPackets(rng, 200 + rng() % 800), &t));
    ASSERT_TRUE(Agree(t)) << "stream " << i;
  }
}

TEST(LibiptDifferential, EncodersAgree) {
  Spec("pt.libipt.encoder", "libipt 2.0.5 pt_enc_next vs packet_encoder.h, byte for byte");
  std::mt19937_64 rng(2003);
  size_t packets = 0;
  for (int i = 0; i < 1000 * Scale(); ++i) {
    const std::vector<pt_packet> ref_packets = RandomLibiptPackets(rng, 300);
    std::vector<uint8_t> ref_bytes;
    ASSERT_TRUE(testing::LibiptEncode(ref_packets, &ref_bytes));
    // Decode libipt's bytes with ours and encode again: the same bytes.
    PacketDecoder d(ref_bytes);
    ASSERT_OK(d.SyncSet(0));
    PacketEncoder enc;
    Packet p;
    int err;
    while ((err = d.Next(p)) == 0) {
      ASSERT_OK(enc.Next(p));
      ++packets;
    }
    ASSERT_EQ(err, ENODATA);
    ASSERT_EQ(enc.bytes(), ref_bytes) << "stream " << i;
  }
  // And our packets through libipt's encoder give our bytes.
  for (int i = 0; i < 1000 * Scale(); ++i) {
    PacketEncoder enc;
    std::vector<pt_packet> ref_packets;
    for (int k = 0; k < 300; ++k) {
      const Packet p = testing::RandomPacket(rng, {.libipt_exact = true});
      pt_packet r;
      ASSERT_TRUE(testing::ToLibipt(p, &r)) << Describe(p);
      ASSERT_OK(enc.Next(p));
      ref_packets.push_back(r);
    }
    std::vector<uint8_t> ref_bytes;
    ASSERT_TRUE(testing::LibiptEncode(ref_packets, &ref_bytes));
    ASSERT_EQ(enc.bytes(), ref_bytes) << "stream " << i;
  }
  RecordProperty("packets", static_cast<int>(packets));
}

TEST(LibiptDifferential, CorruptedStreams) {
  Spec("pt.libipt.corrupted", "libipt 2.0.5 pt_pkt_next errors and pt_pkt_sync_forward resync");
  std::mt19937_64 rng(2004);
  std::vector<std::vector<uint8_t>> bases;
  for (int i = 0; i < 8; ++i) bases.push_back(testing::RealisticTrace({.seed = 300u + static_cast<uint64_t>(i), .size = 16 << 10}));
  for (int i = 0; i < 40; ++i) bases.push_back(testing::RandomTrace(rng, 300, 30, {}));
  for (int i = 0; i < 40; ++i) {
    std::vector<uint8_t> t;
    ASSERT_TRUE(testing::LibiptEncode(RandomLibiptPackets(rng, 300), &t));
    bases.push_back(std::move(t));
  }
  for (int i = 0; i < 20000 * Scale(); ++i) {
    const auto& base = bases[rng() % bases.size()];
    const auto& other = bases[rng() % bases.size()];
    std::vector<uint8_t> t = Corrupt(rng, base, other);
    for (int more = static_cast<int>(rng() % 3); more > 0; --more) t = Corrupt(rng, t, other);
    ASSERT_TRUE(Agree(t)) << "corruption " << i;
  }
}

TEST(LibiptDifferential, Noise) {
  Spec("pt.libipt.noise", "libipt 2.0.5 pt_pkt_next on arbitrary bytes");
  std::mt19937_64 rng(2005);
  // Bytes that start or continue packets, so that noise decodes for a while.
  static constexpr uint8_t kAlphabet[] = {0x00, 0x02, 0x82, 0x23, 0xa3, 0x43, 0x03, 0x73, 0x83, 0xc8, 0xf3,
                                          0xc3, 0x88, 0x12, 0x32, 0x52, 0x72, 0x92, 0xb2, 0x62, 0xe2, 0xc2,
                                          0x22, 0xa2, 0x63, 0x33, 0xb3, 0x99, 0x19, 0x59, 0x0d, 0x1d, 0x11,
                                          0x01, 0x07, 0xff, 0x04, 0xfe, 0x2d, 0x4d, 0xad, 0xcd};
  for (int i = 0; i < 10000 * Scale(); ++i) {
    std::vector<uint8_t> t(rng() % 4096);
    const bool alphabet = i % 2 == 1;
    for (uint8_t& b : t) {
      b = alphabet && rng() % 4 != 0 ? kAlphabet[rng() % sizeof kAlphabet] : static_cast<uint8_t>(rng());
    }
    // PSBs (some cut short) sprinkled in.
    for (int k = static_cast<int>(rng() % 6); k > 0 && t.size() > 16; --k) {
      const size_t at = rng() % (t.size() - 16), n = rng() % 3 == 0 ? 2 * (rng() % 8) : 16;
      for (size_t j = 0; j < n; j += 2) {
        t[at + j] = 0x02;
        t[at + j + 1] = 0x82;
      }
    }
    ASSERT_TRUE(Agree(t)) << "noise " << i;
  }
}

TEST(LibiptDifferential, EmptyAndTiny) {
  Spec("pt.libipt.edges", "libipt 2.0.5 on 0..3-byte traces");
  EXPECT_TRUE(Agree({}));
  for (int a = 0; a < 256; ++a) {
    ASSERT_TRUE(Agree({static_cast<uint8_t>(a)}));
    ASSERT_TRUE(Agree({0x02, static_cast<uint8_t>(a)}));
    ASSERT_TRUE(Agree({0x02, 0xc3, static_cast<uint8_t>(a)}));
    ASSERT_TRUE(Agree({0x99, static_cast<uint8_t>(a)}));
  }
}

}  // namespace
}  // namespace perftest::pt
