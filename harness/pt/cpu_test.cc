// Tests of harness/pt/cpu.h (the CPU and its errata) and of the packet-layer
// errata workarounds (PacketDecoder::Options::skd007/skz84), each on a
// hand-made trace decoded with and without the workaround, against libipt
// 2.0.5 (Debian libipt-dev) configured for the same CPU (pt_cpu_errata).
#include "harness/pt/cpu.h"

#include <gtest/gtest.h>
#include <intel-pt.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "harness/pt/packet_decoder.h"
#include "harness/pt/testing/libipt_reference.h"
#include "harness/pt/testing/spec.h"

namespace perftest::pt {
namespace {

using testing::Bytes;
using testing::Concat;
using testing::PsbBytes;
using testing::Spec;

// libipt 2.0.5's errata for a CPU; *known false where it answers -pte_bad_cpu.
Errata LibiptErrata(const Cpu& cpu, bool* known) {
  pt_cpu c{};
  c.vendor = pcv_intel;
  c.family = static_cast<uint16_t>(cpu.family);
  c.model = static_cast<uint8_t>(cpu.model);
  c.stepping = static_cast<uint8_t>(cpu.stepping);
  pt_errata e{};
  *known = pt_cpu_errata(&e, &c) == 0;
  return Errata{.bdm70 = e.bdm70 != 0, .bdm64 = e.bdm64 != 0, .skd007 = e.skd007 != 0, .skd022 = e.skd022 != 0,
                .skd010 = e.skd010 != 0, .skl014 = e.skl014 != 0, .apl12 = e.apl12 != 0, .apl11 = e.apl11 != 0,
                .skl168 = e.skl168 != 0, .skz84 = e.skz84 != 0};
}

// A packet as both decoders say it: type, offset, size (or the errno that ended the stream).
struct Seen {
  PacketType type;
  uint64_t offset;
  unsigned size;
  bool operator==(const Seen&) const = default;
};
std::ostream& operator<<(std::ostream& os, const Seen& s) {
  return os << "{" << static_cast<int>(s.type) << " @" << s.offset << " +" << s.size << "}";
}

// libipt's pt_pkt_next from offset 0 with the errata of `cpu` (or none): the
// packets, then the errno of the first error (ErrnoFromLibipt) in *err.
std::vector<Seen> LibiptPackets(const std::vector<uint8_t>& trace, const Cpu* cpu, int* err) {
  std::vector<uint8_t> copy = trace;
  pt_config config;
  pt_config_init(&config);
  config.begin = copy.data();
  config.end = copy.data() + copy.size();
  if (cpu != nullptr) {
    config.cpu.vendor = pcv_intel;
    config.cpu.family = static_cast<uint16_t>(cpu->family);
    config.cpu.model = static_cast<uint8_t>(cpu->model);
    config.cpu.stepping = static_cast<uint8_t>(cpu->stepping);
    EXPECT_EQ(pt_cpu_errata(&config.errata, &config.cpu), 0);
  }
  pt_packet_decoder* d = pt_pkt_alloc_decoder(&config);
  EXPECT_NE(d, nullptr);
  EXPECT_EQ(pt_pkt_sync_set(d, 0), 0);
  std::vector<Seen> out;
  for (;;) {
    uint64_t before = 0;
    pt_pkt_get_offset(d, &before);
    pt_packet p;
    const int r = pt_pkt_next(d, &p, sizeof p);
    if (r < 0) {
      *err = testing::ErrnoFromLibipt(r, before, trace.size());
      break;
    }
    uint64_t after = 0;
    pt_pkt_get_offset(d, &after);
    const testing::RefPacket ref = testing::FromLibipt(p, after - p.size);
    out.push_back({ref.type, after - p.size, p.size});
  }
  pt_pkt_free_decoder(d);
  return out;
}

std::vector<Seen> OurPackets(const std::vector<uint8_t>& trace, PacketDecoder::Options options, int* err) {
  PacketDecoder d(trace, options);
  EXPECT_TRUE(d.SyncSet(0).ok());
  std::vector<Seen> out;
  Packet p;
  while ((*err = d.Next(p)) == 0) out.push_back({p.type, p.offset, p.size});
  return out;
}

PacketDecoder::Options WithErrata(const Errata& e) {
  PacketDecoder::Options o = PacketDecoder::Options::Libipt205();
  o.skd007 = e.skd007;
  o.skz84 = e.skz84;
  return o;
}

TEST(PtCpu, ParsesFamilyModelStepping) {
  Spec("pt.cpu.parse", "libipt ptxed --cpu f/m[/s]; perf HEADER_CPUID (arch/x86/util/header.c get_cpuid)");
  EXPECT_EQ(ParseCpu("6/142/10"), (Cpu{6, 142, 10}));
  EXPECT_EQ(ParseCpu("0x6/0x8e"), (Cpu{6, 0x8e, 0}));
  std::string error;
  EXPECT_FALSE(ParseCpu("6", &error));
  EXPECT_NE(error.find("FAMILY/MODEL"), std::string::npos) << error;
  EXPECT_FALSE(ParseCpu("6/x/1", &error));
  EXPECT_NE(error.find("model 'x'"), std::string::npos) << error;
  EXPECT_FALSE(ParseCpu("6/300/1", &error));
  EXPECT_FALSE(ParseCpu("6/1/2/3", &error));
  EXPECT_EQ(CpuFromPerfCpuid("GenuineIntel,6,85,4"), (Cpu{6, 85, 4}));
  EXPECT_FALSE(CpuFromPerfCpuid("AuthenticAMD,25,1,1"));
  EXPECT_FALSE(CpuFromPerfCpuid("GenuineIntel,6"));
}

// Every family/model libipt 2.0.5 knows gets libipt's errata; the models
// newer libipt added (pt_config.c) are known to us and unknown to 2.0.5.
TEST(PtCpu, ErrataAgreeWithLibipt) {
  Spec("pt.cpu.errata_table", "libipt pt_cpu_errata (libipt/src/pt_config.c); 2.0.5 for the models it knows");
  int libipt_known = 0;
  for (uint32_t family = 0; family < 0x20; ++family) {
    for (uint32_t model = 0; model < 0x100; ++model) {
      const Cpu cpu{family, model, 0};
      bool theirs_known = false;
      bool ours_known = false;
      const Errata theirs = LibiptErrata(cpu, &theirs_known);
      const Errata ours = ErrataFor(cpu, &ours_known);
      if (!theirs_known) continue;
      ++libipt_known;
      EXPECT_TRUE(ours_known) << family << "/" << model;
      Errata expected = theirs;
      // Declared divergence pt.cpu.skl014_fixed: libipt commit d1c66a87
      // ("skl014 fixed on recent processors", after 2.0.5) drops SKL014
      // for these models; we follow the newer table.
      if (family == 6 && (model == 0x8f || model == 0x97 || model == 0x9a || model == 0xbf)) expected.skl014 = false;
      EXPECT_EQ(ErrataNames(ours), ErrataNames(expected)) << family << "/" << model;
    }
  }
  EXPECT_GE(libipt_known, 20);
  EXPECT_EQ(ErrataNames(ErrataFor({6, 0x8e, 9})), "bdm70,skd007,skd022,skd010,skl014,skl168");
  EXPECT_EQ(ErrataNames(ErrataFor({6, 0x55, 4})), "bdm70,skd022,skl014,skz84");
  EXPECT_EQ(ErrataNames(ErrataFor({6, 0x5c, 9})), "apl12,apl11");
  bool known = true;
  EXPECT_EQ(ErrataNames(ErrataFor({0x17, 1, 0}, &known)), "");
  EXPECT_FALSE(known);
}

// SKD007: PSB+, a CYC whose first byte (Exp set) is followed by 02h F3h.
// Without the workaround: a 2-byte CYC, then F3h as a 1-byte CYC. With it:
// the CYC byte is dropped and 02h F3h is the OVF.
TEST(PtCpu, Skd007OvfInsideCyc) {
  Spec("pt.cpu.skd007", "SKD007 (Skylake spec update); libipt pt_pkt_handle_skd007 (pt_packet_decoder.c), 2.0.5 with cpu 6/0x4e for the plain decode");
  const std::vector<uint8_t> trace = Concat({PsbBytes(), Bytes({0x02, 0x23, 0x0f, 0x02, 0xf3, 0x00})});
  const Cpu skylake{6, 0x4e, 3};
  ASSERT_TRUE(ErrataFor(skylake).skd007);
  const uint64_t cyc = PsbBytes().size() + 2;

  int our_err = 0;
  int their_err = 0;
  const std::vector<Seen> plain = OurPackets(trace, WithErrata({}), &our_err);
  EXPECT_EQ(plain, LibiptPackets(trace, nullptr, &their_err));
  EXPECT_EQ(our_err, their_err);
  ASSERT_GE(plain.size(), 3u);
  EXPECT_EQ(plain[plain.size() - 3], (Seen{PacketType::kCyc, cyc, 2}));

  // libipt 2.0.5 applies SKD007 in its query decoder (pt_query_decoder.c
  // check_erratum_skd007), not in pt_pkt_next: its packet decoder gives the
  // plain decode even with the erratum set. The rule of the packet layer is
  // that of current libipt (pt_packet_decoder.c pt_pkt_handle_skd007): skip
  // the CYC's first byte, report the OVF at the next offset.
  EXPECT_EQ(LibiptPackets(trace, &skylake, &their_err), plain);
  const std::vector<Seen> fixed = OurPackets(trace, WithErrata(ErrataFor(skylake)), &our_err);
  EXPECT_EQ(our_err, ENODATA);
  EXPECT_EQ(fixed.size(), plain.size() - 1);
  ASSERT_GE(fixed.size(), 2u);
  EXPECT_EQ(fixed[fixed.size() - 2], (Seen{PacketType::kOvf, cyc + 1, 2}));
  EXPECT_EQ(fixed.back(), (Seen{PacketType::kPad, cyc + 3, 1}));

  // A full CYC payload (extension byte other than 02h) is left alone.
  const std::vector<uint8_t> other = Concat({PsbBytes(), Bytes({0x02, 0x23, 0x0f, 0x04, 0xf3, 0x00})});
  EXPECT_EQ(OurPackets(other, WithErrata(ErrataFor(skylake)), &our_err), LibiptPackets(other, &skylake, &their_err));
}

// SKZ84: a TMA with a reserved byte set and a bogus data byte after it.
// Without the workaround: EBADMSG at the TMA. With it: an invalid packet of
// 8 bytes, then decoding goes on.
TEST(PtCpu, Skz84CorruptedTma) {
  Spec("pt.cpu.skz84", "SKZ84 (Skylake-SP spec update); libipt 2.0.5 pt_pkt_decode_tma with cpu 6/0x55");
  const std::vector<uint8_t> trace =
      Concat({PsbBytes(), Bytes({0x02, 0x23, 0x02, 0x73, 0x34, 0x12, 0xff, 0x01, 0x00, 0x5a, 0x00})});
  const Cpu skx{6, 0x55, 4};
  ASSERT_TRUE(ErrataFor(skx).skz84);
  const uint64_t tma = PsbBytes().size() + 2;

  int our_err = 0;
  int their_err = 0;
  const std::vector<Seen> plain = OurPackets(trace, WithErrata({}), &our_err);
  EXPECT_EQ(plain, LibiptPackets(trace, nullptr, &their_err));
  EXPECT_EQ(our_err, EBADMSG);
  EXPECT_EQ(their_err, EBADMSG);

  const std::vector<Seen> fixed = OurPackets(trace, WithErrata(ErrataFor(skx)), &our_err);
  EXPECT_EQ(fixed, LibiptPackets(trace, &skx, &their_err));
  EXPECT_EQ(our_err, ENODATA);
  EXPECT_EQ(their_err, ENODATA);
  ASSERT_GE(fixed.size(), 2u);
  EXPECT_EQ(fixed[fixed.size() - 2], (Seen{PacketType::kInvalid, tma, 8}));
  EXPECT_EQ(fixed.back(), (Seen{PacketType::kPad, tma + 8, 1}));
}

}  // namespace
}  // namespace perftest::pt
