// libipt (Debian libipt-dev 2.0.5) as the reference packet decoder and
// encoder, for tests and benchmarks only — the perftest_pt library never
// links it (DESIGN.md "Dependencies").
//
//   pt::testing::LibiptDecoder ref(bytes);
//   pt::testing::RefPacket r;
//   ref.SyncForward(&offset);
//   while (ref.Next(&r) == 0) ...                 // errno values as PacketDecoder::Next
//   EXPECT_EQ(pt::testing::FromOurs(ours), r);    // same type, offset, size, payload
//
// RefPacket is what both decoders can say about a packet: libipt's
// pt_packet fields, with the errno values of packet_decoder.h. Declared
// divergences of libipt 2.0.5 from the SDM (each with an id, as in the
// differential test's report):
//   pt.libipt.pwre_hw     libipt reads PWRE.HW from byte 2 bit 3
//                         (pt_pl_pwre_hw_mask = 0x8); the SDM table "PWRE
//                         Packet Definition" and perf put it in bit 7.
//                         FromOurs() reports bit 3, as libipt does.
//   pt.libipt.mode_if     libipt 2.0 has no MODE.Exec IF bit (added with
//                         Event Trace); FromOurs() leaves it out.
//   pt.libipt.no_blocks   libipt 2.0 has no BBP/BIP/BEP (PEBS via PT): it
//                         reports -pte_bad_opc; compare with
//                         PacketDecoder::Options::block_packets = false.
#pragma once

#include <intel-pt.h>

#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "harness/pt/packet.h"

namespace perftest::pt::testing {

struct RefPacket {
  PacketType type = PacketType::kInvalid;  // libipt's ppt_mode split into MODE.Exec / MODE.TSX
  uint64_t offset = 0;
  uint8_t size = 0;
  uint64_t f[3] = {0, 0, 0};  // per type, see FromLibipt()

  bool operator==(const RefPacket&) const = default;
};
std::string ToString(const RefPacket& r);
void PrintTo(const RefPacket& r, std::ostream* os);

// Our packet as libipt 2.0.5 would report it (see the divergences above).
RefPacket FromOurs(const Packet& p);
// libipt's packet. Returns a kInvalid RefPacket for ppt_invalid/ppt_unknown.
RefPacket FromLibipt(const pt_packet& p, uint64_t offset);
// Our packet as a pt_packet for pt_enc_next (for types libipt 2.0.5 knows).
// Returns false for BBP/BIP/BEP.
bool ToLibipt(const Packet& p, pt_packet* out);

// libipt's errno-like mapping: -pte_eos at the end -> ENODATA, elsewhere ->
// EMSGSIZE; -pte_bad_opc -> EILSEQ; -pte_bad_packet -> EBADMSG;
// -pte_nosync -> ENOTCONN; anything else -> EIO.
int ErrnoFromLibipt(int pte, uint64_t offset, uint64_t size);

// A pt_packet_decoder over a private, 64-byte-aligned copy of the trace (so
// its address-aligned PSB search sees the same words as sync.h).
class LibiptDecoder {
 public:
  explicit LibiptDecoder(std::span<const uint8_t> trace);
  ~LibiptDecoder();
  LibiptDecoder(const LibiptDecoder&) = delete;
  LibiptDecoder& operator=(const LibiptDecoder&) = delete;

  // 0 and the new offset, or ENODATA (libipt -pte_eos, and -pte_internal
  // when libipt's search would start past the end).
  int SyncForward(uint64_t* offset);
  int SyncBackward(uint64_t* offset);
  // 0, or EINVAL past the end.
  int SyncSet(uint64_t offset);
  // 0, or an errno as PacketDecoder::Next (ErrnoFromLibipt).
  int Next(RefPacket* packet);
  // The raw libipt call, for benchmarks.
  int NextRaw(pt_packet* packet) { return pt_pkt_next(decoder_, packet, sizeof *packet); }
  uint64_t offset() const;

 private:
  uint8_t* buffer_;
  size_t size_;
  pt_packet_decoder* decoder_;
};

// Encodes `packets` with libipt's pt_enc_next. Returns false (and stops) on
// the first packet libipt rejects.
bool LibiptEncode(const std::vector<pt_packet>& packets, std::vector<uint8_t>* out);

}  // namespace perftest::pt::testing
