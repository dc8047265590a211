// The Intel PT packet decoder: bytes in, Packets out (SDM Vol. 3C §33.4
// "Trace Packets and Formats"). The lowest decoder layer; the flow decoder
// holds one and offers the same verbs (libipt's pt_packet_decoder model).
//
//   pt::PacketDecoder decoder(trace);              // a view: `trace` must outlive it
//   for (auto s = decoder.SyncForward(); s.ok(); s = decoder.SyncForward()) {
//     pt::Packet p;
//     int err;
//     while ((err = decoder.Next(p)) == 0) Use(p);
//     if (err == ENODATA) break;                    // end of trace
//     Report(err, decoder.offset());                // the bad packet's offset; resync at the next PSB
//   }
//
// Verbs: SyncForward / SyncBackward / SyncSet position the decoder (it starts
// unsynchronized), Next decodes one packet and advances past it, offset()
// tells where it is. A failed Next does not move: offset() is the byte offset
// of the packet that could not be decoded, and SyncForward() resumes at the
// next PSB — including a PSB that the failed packet overlapped, as when a
// packet was cut short by the end of one AUX buffer and the trace continues
// with a PSB (perf-intel-pt.txt "dump option").
//
// Speed: Next(Packet&) is inline; the first byte indexes 256-entry tables
// (internal/opcodes.h), and fixed-size packets (and CYCs of up to 2 bytes)
// with at least 9 bytes left are decoded with one 8-byte load, a mask and
// three stores, one well-predicted branch, no allocation and no call. TNT-64,
// MODE and the other fixed-size 02h packets take a short out-of-line path;
// the rest (PSB, TMA, PTW, longer CYCs, errors, the trace's last bytes, PEBS
// blocks) a careful one. Each packet's position depends on the previous
// packet's first byte, so Next() in a loop is bound by that load-to-load
// latency; Decode() decodes several PSB-delimited segments interleaved to get
// past it, into 16-byte PacketRecords (packet_batch.h): per packet and lane
// a 1-byte load (the first byte b) and an 8-byte load (bytes 1..8), a reject
// test, the payload (bytes 1..8 masked), the offset/type word from a table,
// two 8-byte stores and the size from a table: 10 instructions (x86-64
// inline assembly, internal/packet_lanes.h RunRounds()), 11.4 a packet all
// told on bench_pt's trace (callgrind); the lanes' chain is the two loads.
// A lane decodes its segment's PSB+ the careful way, then runs unchecked up
// to the PSB that ends the segment, bounded by the segment's room for records.
// Past that, the cost is mostly the packets the test rejects (TNT-64 and
// MODE.TSX, ~2.3% of bench_pt's packets: each a mispredicted branch resolved
// only at the end of its lane's chain; with them rewritten as TSC and MTC
// packets of the same sizes the trace decodes ~16% faster) and, on a machine
// shared with other work, issue slots.
// Where the CPU has AVX-512 VBMI (and BMI2), the lanes are the mapped lanes
// instead (Options::portable keeps the ones above; BatchLanes() says which
// run): Decode() first maps the trace it will decode, 64 bytes at a time
// (internal/packet_map.h: for every byte, the size and kind of the packet
// that would start there, TNT-64 and MODE.TSX included, 0 for what the
// careful path takes), and a lane's step is then a 1-byte load of the size
// at its position (its whole chain), a 1-byte load of the kind, bytes 1..8,
// a pext with the kind's mask (the payload), the kind's record word plus the
// position, two stores, and no branch (a lane at a size 0 stays there until
// the look at the end of each block of rounds). The map takes ~20% of a
// pass on bench_pt's trace, the lanes' rounds ~60%.
// Errors and their order match libipt 2.0 (pt_pkt_next), which the
// differential tests check byte for byte.
#pragma once

#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "harness/pt/internal/opcodes.h"
#include "harness/pt/packet.h"
#include "harness/pt/packet_batch.h"
#include "harness/result.h"

namespace perftest::pt {

class PacketDecoder {
 public:
  struct Options {
    // Decode the PEBS-via-PT block packets (SDM §33.4.2.26-28): BBP opens a
    // block in which a byte xxxxx100b is a BIP with the BBP's item size
    // instead of a TNT-8, until a packet that ends the block (BEP, or any but
    // PAD, TSC, TMA, MTC, FUP, CYC, CBR, MNT, EXSTOP, PWRE, PWRX and BIP; as
    // perf's intel_pt_upd_pkt_ctx()). With false, 02h 63h, 02h 33h and
    // 02h B3h are unknown opcodes (EILSEQ), as to decoders that predate them
    // (libipt 2.0).
    bool block_packets = true;
    // Decode the Event Trace packets CFE (02h 13h) and EVD (02h 53h) (SDM
    // §33.4.2.29-30; written with IA32_RTIT_CTL.EventEn). With false they
    // are unknown opcodes (EILSEQ), as to libipt 2.0.
    bool event_trace_packets = true;
    // Decode TRIG (D9h; SDM §33.4.2 "TRIG Packet", Trigger Tracing). With
    // false D9h is an unknown opcode (EILSEQ), as to libipt 2.0 and 2.1.
    bool trigger_packets = true;
    // Decode(PacketBatch&) runs its portable lanes even where the CPU has
    // AVX-512 VBMI and BMI2 (by default it runs the mapped lanes there);
    // the output is the same — tests compare both.
    bool portable = false;
    // CPU errata workarounds of the packet layer (cpu.h ErrataFor(); as
    // libipt's pt_pkt_decode_cyc/pt_pkt_decode_tma apply them). With either
    // set, every packet takes the careful path (NextSlow, DecodeSerial).
    // SKD007: a 2-byte CYC whose extension byte is 02h followed by F3h is
    // an OVF cut into a CYC's first byte: the CYC byte is skipped and the
    // OVF (02h F3h) decoded. SKZ84: a TMA with reserved bits set is taken
    // as an invalid packet of 8 bytes (the TMA and its bogus data byte):
    // PacketType::kInvalid, size 8, instead of EBADMSG.
    bool skd007 = false;
    bool skz84 = false;

    bool Errata() const { return skd007 || skz84; }

    // The packets libipt 2.0.5 (Debian's libipt-dev, the tests' reference)
    // decodes: no PEBS block, Event Trace or TRIG packets.
    static constexpr Options Libipt205() {
      Options o;
      o.block_packets = false;
      o.event_trace_packets = false;
      o.trigger_packets = false;
      return o;
    }
  };

  explicit PacketDecoder(std::span<const uint8_t> trace) : PacketDecoder(trace, Options{}) {}
  PacketDecoder(std::span<const uint8_t> trace, Options options);

  // Moves to the next PSB (sync.h FindPsbForward) and returns its offset.
  // The search starts at the beginning of the trace if the decoder has not
  // been synchronized; after the last sync point if the decoder is still at
  // it; else up to 15 bytes before offset(), so that a PSB overlapped by a
  // preceding (truncated) packet is found. Leaves any PEBS block.
  // Errors: ENODATA, no PSB there (the decoder does not move).
  Result<uint64_t> SyncForward();

  // Moves to the previous PSB (sync.h FindPsbBackward) before offset(), or
  // before the end of the trace if not synchronized, and returns its offset.
  // Leaves any PEBS block.
  // Errors: ENODATA, no PSB there (the decoder does not move).
  Result<uint64_t> SyncBackward();

  // Moves to `offset`, which need not be a PSB (to decode from a known
  // packet boundary, as `perf script -D` does from 0), and makes it the sync
  // point. Leaves any PEBS block.
  // Errors: EINVAL, offset > trace size.
  Result<void> SyncSet(uint64_t offset);

  // Decodes the packet at offset() into `packet` and advances past it.
  // Returns 0, or one of these errno values (and then neither `packet`
  // nor the decoder changes); when several apply, the first in this list
  // is reported — libipt's order:
  //   ENOTCONN  not synchronized yet (no Sync* call succeeded)
  //   ENODATA   end of the trace: offset() == size
  //   EILSEQ    unknown opcode: the first byte, the byte after 02h, or the
  //             byte after 02h C3h names no packet (SDM §33.4.2), or a block,
  //             Event Trace or TRIG packet whose Options flag is false
  //   EBADMSG   a payload the SDM does not allow, known from the opcode:
  //             IPBytes 101b/111b (TIP, TIP.PGE, TIP.PGD, FUP), PTW
  //             PayloadBytes 10b/11b
  //   EMSGSIZE  truncated: the packet runs past the end of the trace (also
  //             when the opcode itself is cut: 02h, or 02h C3h, at the end)
  //   EBADMSG   a payload the SDM does not allow: TNT-64 without a stop bit;
  //             a PSB whose 16 bytes are not 02h 82h x8; a MODE leaf other
  //             than Exec (000b) or TSX (001b); a TMA with reserved bits set
  //             (byte 4, byte 6 bits 7:1; libipt's check for erratum SKZ84);
  //             a CYC whose count does not fit 64 bits (a 9th extension byte)
  int Next(Packet& packet) noexcept;

  // For a caller that decodes the commonest packets itself (the flow
  // decoder's CYC and TNT-8): the bytes at offset() where Next() takes its
  // fast path — synchronized, outside a PEBS block, at least 9 bytes
  // readable — else null. Skip(n) then moves past the n-byte packet there
  // that the caller decoded (as Next() would have).
  // FastAt(p): the same for the position p (9 bytes readable there), for a
  // caller that looks further ahead.
  const uint8_t* FastBytes() const { return pos_ < fast_end_ ? pos_ : nullptr; }
  bool FastAt(const uint8_t* p) const { return p < fast_end_; }
  void Skip(unsigned n) { pos_ += n; }

  // Next(Packet&) as a Result: the packet, or the errno with the call
  // "pt::PacketDecoder::Next(offset=0x...)" naming the offset.
  Result<Packet> Next();

  // Many Next() calls at once: decodes the next packets from offset() on
  // into `batch` (packet_batch.h; replacing what it held) — the packets
  // Next() would return, in order, as 16-byte PacketRecords in one or more
  // chunks (one per segment, below: they are not moved together). Returns 0 when
  // more may follow (call again), else the errno Next() returns at the
  // stopping point: ENODATA at the end of the trace, or an error, with
  // offset() at the failing packet, as after Next(). A call decodes at most
  // batch.capacity() packets, and may stop short of that (at a PSB, or
  // wherever its interleaved stretches could not be joined).
  //
  // The fast way through a long trace: it takes the bytes ahead that the
  // batch can hold for sure (one packet per byte), cuts them at PSBs into
  // segments of about a PSB period, and decodes 4 segments at a time,
  // interleaved, so that their dependency chains (byte -> size -> next byte)
  // overlap; a lane done with a segment takes the next. A segment is kept
  // only if the one before it ended exactly where it begins, outside a PEBS
  // block — else decoding goes on from where that one ended, next call.
  // Give it room for several PSB periods of 1-byte packets (the default
  // 64 Ki records is 16 periods of 4 KiB). With less than 4 Ki records,
  // within 4 KiB of the end, or inside a PEBS block it decodes a packet at a
  // time.
  int Decode(PacketBatch& batch) noexcept;

  // The lanes Decode(PacketBatch&) runs with `options` on this CPU (a name
  // for reports): "mapped (AVX-512 VBMI, BMI2)" or "portable" (packet_decoder.cc).
  static std::string_view BatchLanes(const Options& options);

  // Decode(PacketBatch&) into Packets: fills `out` (at most out.size()
  // packets) and returns how many; `err` as Decode(PacketBatch&) returns it.
  // Takes the interleaved path with 4 Ki packets of room or more.
  size_t Decode(std::span<Packet> out, int& err) noexcept;

  // Where the next packet starts (the failing packet's offset after an
  // error); 0 before the first sync.
  uint64_t offset() const { return static_cast<uint64_t>(pos_ - begin_); }
  // The offset of the last sync point (0 before the first sync).
  uint64_t sync_offset() const { return static_cast<uint64_t>(sync_ - begin_); }
  bool synced() const { return synced_; }
  // Inside a PEBS block: the BIP item size (4 or 8), else 0.
  unsigned block_item_bytes() const { return block_; }
  std::span<const uint8_t> trace() const { return {begin_, static_cast<size_t>(end_ - begin_)}; }
  const Options& options() const { return options_; }

  // "unknown opcode", "bad payload", "truncated packet", "end of trace",
  // "not synchronized" for the errno values Next() returns; strerror otherwise.
  static std::string_view ErrorDescription(int err);

 private:
  int NextSlow(Packet& packet) noexcept;
  // Decode()'s engine, for Packet or PacketRecord output (packet_decoder.cc).
  // With `chunks`, the segments' records stay where they were decoded,
  // described there; else they are moved together.
  template <typename Rec>
  // `map`: the mapped lanes' map (PacketRecords only), else null.
  size_t DecodeSegments(Rec* out, size_t cap, int& err, PacketBatch::Chunk* chunks, size_t* nchunks,
                        uint8_t* map) noexcept;
  template <typename Rec>
  size_t DecodeSerial(Rec* out, size_t cap, int& err) noexcept;
  // One packet at B[rel] the careful way, in PEBS block context `block` (updated).
  int StepCareful(const uint8_t* B, uint64_t rel, uint8_t& block, Packet& p) const noexcept;
  void MoveTo(const uint8_t* pos);
  void UpdateFastEnd() {
    fast_end_ = (synced_ && block_ == 0 && end_ - begin_ >= 9 && !options_.Errata()) ? end_ - 8 : begin_;
  }

  const uint8_t* begin_;
  const uint8_t* end_;
  const uint8_t* pos_;
  const uint8_t* sync_;
  // pos_ < fast_end_: synchronized, outside a block, and 9 bytes readable at pos_.
  const uint8_t* fast_end_;
  Options options_;
  bool synced_ = false;
  uint8_t block_ = 0;  // BIP item size inside a PEBS block, else 0
  uint64_t psb_gap_ = 0;  // Decode(): the distance between two PSBs it last found
};

inline int PacketDecoder::Next(Packet& packet) noexcept {
  const uint8_t* pos = pos_;
  if (pos >= fast_end_) [[unlikely]] return NextSlow(packet);
  unsigned size;
  if (!internal::FastDecode(begin_, static_cast<uint64_t>(pos - begin_), packet, size)) [[unlikely]] {
    return NextSlow(packet);
  }
  pos_ = pos + size;
  return 0;
}

}  // namespace perftest::pt
