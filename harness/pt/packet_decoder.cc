#include "harness/pt/packet_decoder.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "harness/pt/internal/packet_lanes.h"
#include "harness/pt/internal/packet_map.h"
#include "harness/pt/sync.h"

namespace perftest::pt {
namespace {

using internal::ExtKind;
using internal::kLaneTables;
using internal::kMapLim;
using internal::kMapStride;
using internal::kRecordTables;
using internal::kRounds;
using internal::LaneTables;
using internal::MapLanes;
using internal::OpKind;
using internal::RunRounds;
using internal::RunRoundsMapped;

// Little-endian load of `n` (0..8) bytes at `p`, `avail` bytes being readable there.
inline uint64_t LoadLE(const uint8_t* p, unsigned n, size_t avail) {
  if (avail >= 8) {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v & internal::kPayloadMask[n];
  }
  uint64_t v = 0;
  for (unsigned i = 0; i < n; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

// Packets that end a PEBS block (perf intel_pt_upd_pkt_ctx(): all but those listed).
bool KeepsBlock(PacketType type) {
  switch (type) {
    case PacketType::kPad:
    case PacketType::kTsc:
    case PacketType::kTma:
    case PacketType::kMtc:
    case PacketType::kFup:
    case PacketType::kCyc:
    case PacketType::kCbr:
    case PacketType::kMnt:
    case PacketType::kExStop:
    case PacketType::kPwre:
    case PacketType::kPwrx:
    case PacketType::kBip:
      return true;
    default:
      return false;
  }
}

// Decodes the 02h packet at `pos` (avail >= 1 bytes). Returns 0 or an errno.
int DecodeExt(Packet& p, const uint8_t* pos, size_t avail, const PacketDecoder::Options& options) {
  if (avail < 2) return EMSGSIZE;
  const uint8_t x = pos[1];
  const internal::ExtEntry e = internal::kExtByte[x];
  unsigned size = e.size;
  uint64_t payload = 0;
  switch (e.kind) {
    case ExtKind::kBad:
      return EILSEQ;
    case ExtKind::kEvent:
      if (!options.event_trace_packets) return EILSEQ;
      if (avail < size) return EMSGSIZE;
      if (e.type == PacketType::kEvd) {
        // The Type byte goes to `opcode` (packet.h), the 8 data bytes to the payload.
        p.payload = LoadLE(pos + 3, 8, avail - 3);
        p.type = e.type;
        p.size = static_cast<uint8_t>(size);
        p.opcode = pos[2];
        p.ext = x;
        return 0;
      }
      payload = LoadLE(pos + 2, size - 2, avail - 2);
      break;
    case ExtKind::kBlock:
      if (!options.block_packets) return EILSEQ;
      [[fallthrough]];
    case ExtKind::kSimple:
      if (avail < size) return EMSGSIZE;
      payload = LoadLE(pos + 2, size - 2, avail - 2);
      break;
    case ExtKind::kPsb: {
      if (avail < size) return EMSGSIZE;
      for (unsigned i = 2; i < size; i += 2) {
        if (pos[i] != internal::kOpcExt || pos[i + 1] != internal::kExtPsb) return EBADMSG;
      }
      break;
    }
    case ExtKind::kTnt64:
      if (avail < size) return EMSGSIZE;
      payload = LoadLE(pos + 2, 6, avail - 2);
      if (payload < 2) return EBADMSG;  // no stop bit, or no branch before it
      break;
    case ExtKind::kTma: {
      if (avail < size) return EMSGSIZE;
      const uint64_t ctc = pos[2] | (uint64_t{pos[3]} << 8);
      const uint64_t fc = pos[5] | (uint64_t{pos[6]} << 8);
      if (pos[4] != 0 || (fc & ~uint64_t{0x1ff}) != 0) return EBADMSG;
      payload = ctc | (fc << 16);
      break;
    }
    case ExtKind::kPtw: {
      const unsigned payload_bytes_code = (x >> 5) & 3;
      if (payload_bytes_code > 1) return EBADMSG;
      size = payload_bytes_code == 0 ? 6 : 10;
      if (avail < size) return EMSGSIZE;
      payload = LoadLE(pos + 2, size - 2, avail - 2);
      break;
    }
    case ExtKind::kExt2:
      if (avail < 3) return EMSGSIZE;
      if (pos[2] != internal::kExt2Mnt) return EILSEQ;
      if (avail < size) return EMSGSIZE;
      payload = LoadLE(pos + 3, 8, avail - 3);
      break;
  }
  p.payload = payload;
  p.type = e.type;
  p.size = static_cast<uint8_t>(size);
  p.opcode = pos[0];
  p.ext = x;
  return 0;
}

// Decodes the CYC at `pos` (avail >= 1 bytes): Cycle Counter[4:0] in byte 0,
// then 7 bits per extension byte while the previous byte's Exp bit is set
// (SDM §33.4.2.14); at most 8 extension bytes, as libipt (the count must fit
// 64 bits). The payload is the extension bytes. Returns 0 or an errno.
int DecodeCyc(Packet& p, const uint8_t* pos, size_t avail) {
  size_t i = 1;
  bool more = (pos[0] & 4) != 0;
  while (more) {
    if (i >= avail) return EMSGSIZE;
    if (i > 8) return EBADMSG;  // a 9th extension byte
    more = (pos[i++] & 1) != 0;
  }
  p.payload = LoadLE(pos + 1, static_cast<unsigned>(i - 1), avail - 1);
  p.type = PacketType::kCyc;
  p.size = static_cast<uint8_t>(i);
  return 0;
}

// Decodes the packet at `pos` (avail >= 1 bytes) outside a block. Returns 0 or an errno.
int DecodeAt(Packet& p, const uint8_t* pos, size_t avail, const PacketDecoder::Options& options) {
  const uint8_t b = pos[0];
  const uint64_t info = internal::kFast.info[b];
  const auto type = static_cast<PacketType>(info & 0xff);
  const uint8_t size = internal::kFast.size[b];
  switch (internal::kFirstByteKind[b]) {
    case OpKind::kSimple:
      if (type == PacketType::kCyc) {
        if (const int err = DecodeCyc(p, pos, avail); err != 0) return err;
        break;
      }
      if (avail < size) return EMSGSIZE;
      p.payload = LoadLE(pos + 1, size - 1u, avail - 1);
      p.type = type;
      p.size = size;
      break;
    case OpKind::kExt:
      return DecodeExt(p, pos, avail, options);
    case OpKind::kMode: {
      if (avail < 2) return EMSGSIZE;
      const uint8_t m = pos[1];
      switch (m >> 5) {
        case 0b000: p.type = PacketType::kModeExec; break;
        case 0b001: p.type = PacketType::kModeTsx; break;
        default: return EBADMSG;
      }
      p.payload = m;
      p.size = 2;
      break;
    }
    case OpKind::kTrig: {
      // D9h, flags (IP, ICNTV, MULT), TRBV, and ICNT[15:0] when ICNTV is set.
      if (!options.trigger_packets) return EILSEQ;
      if (avail < 3) return EMSGSIZE;
      const unsigned n = (pos[1] & 0x40) != 0 ? 5 : 3;
      if (avail < n) return EMSGSIZE;
      p.payload = LoadLE(pos + 1, n - 1, avail - 1);
      p.type = PacketType::kTrig;
      p.size = static_cast<uint8_t>(n);
      break;
    }
    case OpKind::kBadOpcode:
      return EILSEQ;
    case OpKind::kBadIpBytes:
      return EBADMSG;
  }
  p.opcode = b;
  p.ext = 0;
  return 0;
}

// TMA's second byte (02h 73h; SDM §33.4.2.13).
constexpr uint8_t kExtTmaByte = 0x73;

// SKD007 (cpu.h): a 2-byte CYC (Exp set, one extension byte with Exp clear)
// whose extension byte is 02h, followed by F3h: the 02h F3h is an OVF issued
// after the CYC's first byte (libipt pt_pkt_handle_skd007: a CYC payload of
// 20h..3Fh whose next byte is the OVF opcode extension).
bool Skd007At(const uint8_t* pos, const uint8_t* end) {
  return end - pos >= 3 && (pos[0] & 7) == 7 && pos[1] == internal::kOpcExt && pos[2] == 0xf3;
}

// One packet at `pos` (begin <= pos < end) the careful way: bounds, the slow
// kinds, PEBS block context (`block`, updated). Returns 0 or an errno.
int DecodeOneSlow(const uint8_t* begin, const uint8_t* end, const uint8_t* pos, uint8_t& block,
                  const PacketDecoder::Options& options, Packet& out) {
  if (options.skd007 && Skd007At(pos, end)) ++pos;  // the OVF after the CYC's first byte
  const size_t avail = static_cast<size_t>(end - pos);
  Packet p;
  p.offset = static_cast<uint64_t>(pos - begin);
  if (block != 0 && (pos[0] & 7) == internal::kOpcBip) {
    // BIP: ID in bits 7:3, then the item value, of the size the BBP announced.
    const unsigned size = 1 + block;
    if (avail < size) return EMSGSIZE;
    p.payload = LoadLE(pos + 1, block, avail - 1);
    p.type = PacketType::kBip;
    p.size = static_cast<uint8_t>(size);
    p.opcode = pos[0];
    p.ext = 0;
  } else {
    const int err = DecodeAt(p, pos, avail, options);
    if (err == EBADMSG && options.skz84 && pos[0] == internal::kOpcExt && avail >= 2 && pos[1] == kExtTmaByte &&
        avail >= 8) {
      // SKZ84: the corrupted TMA and its bogus data byte, as libipt's pt_pkt_decode_tma.
      p.type = PacketType::kInvalid;
      p.size = 8;
      p.payload = 0;
      p.opcode = pos[0];
      p.ext = pos[1];
    } else if (err != 0) {
      return err;
    }
  }
  if (p.type == PacketType::kBbp) {
    block = (p.payload & 0x80) ? 4 : 8;
  } else if (block != 0 && !KeepsBlock(p.type)) {
    block = 0;
  }
  out = p;
  return 0;
}

// The common packets the fast path leaves out — TNT-64, MODE and the other
// fixed-size 02h packets — with at least 24 bytes readable at begin[off] and
// no PEBS block open. Returns false for anything else (the careful path).
inline bool SemiFastDecode(const uint8_t* begin, uint64_t off, Packet& p) {
  const uint8_t* pos = begin + off;
  const uint8_t b = pos[0];
  const uint8_t x = pos[1];
  if (b == internal::kOpcExt) {
    const internal::ExtEntry e = internal::kExtByte[x];
    uint64_t raw;  // bytes 2..9
    std::memcpy(&raw, pos + 2, sizeof raw);
    if (e.kind == ExtKind::kSimple) {
      p.payload = raw & internal::kPayloadMask[e.size - 2u];
    } else if (e.kind == ExtKind::kTnt64) {
      p.payload = raw & internal::kPayloadMask[6];
      if (p.payload < 2) return false;
    } else {
      return false;
    }
    p.type = e.type;
    p.size = e.size;
  } else if (b == internal::kOpcMode && (x >> 5) <= 1) {
    p.type = (x >> 5) == 0 ? PacketType::kModeExec : PacketType::kModeTsx;
    p.payload = x;
    p.size = 2;
  } else {
    return false;
  }
  p.offset = off;
  p.opcode = b;
  p.ext = b == internal::kOpcExt ? x : 0;
  return true;
}

// Writing a decoded packet as the output type of Decode(): a Packet with its
// absolute offset, or a PacketRecord with its offset from the batch's base.
inline void Assign(Packet& out, const Packet& p, uint64_t /*base*/) { out = p; }
inline void Assign(PacketRecord& out, const Packet& p, uint64_t base) {
  out.payload = p.payload;
  out.offset = static_cast<uint32_t>(p.offset - base);
  std::memcpy(&out.type, &p.type, 4);  // type, size, opcode, ext
}

// A record's offset from the base.
inline uint64_t RecordOffset(const Packet& r, uint64_t base) { return r.offset - base; }
inline uint64_t RecordOffset(const PacketRecord& r, uint64_t /*base*/) { return r.offset; }

// Bytes that must be readable at a packet for the unchecked steps below: the
// fast path reads bytes 0..8, SemiFastDecode bytes 0..9.
constexpr uint64_t kUncheckedBytes = 10;

// FastDecode() into a Packet at B[rel], B being the trace at `base`.
inline bool FastStep(const uint8_t* B, uint64_t base, uint64_t rel, Packet& r, unsigned& size) {
  return internal::FastDecode(B - base, base + rel, r, size);
}

// The fast path into a PacketRecord: the reject test, then the payload (an
// 8-byte load and a mask) and the offset/type word (a table load and an
// add), two 8-byte stores; the size from the first byte.
inline bool FastStep(const uint8_t* B, uint64_t /*base*/, uint64_t rel, PacketRecord& r, unsigned& size) {
  uint16_t word;  // bytes 0..1
  std::memcpy(&word, B + rel, sizeof word);
  const uint8_t b = static_cast<uint8_t>(word);
  if ((word & kRecordTables.reject[b]) != 0) return false;
  uint64_t raw;  // bytes 1..8
  std::memcpy(&raw, B + rel + 1, sizeof raw);
  r.payload = raw & internal::kFast.mask[b];
  const uint64_t rec = kRecordTables.high[b] + rel;
  std::memcpy(&r.offset, &rec, sizeof rec);
  size = kRecordTables.size[b];
  return true;
}

// SemiFastDecode() for either output type, with kUncheckedBytes readable.
template <typename Rec>
inline bool SemiStep(const uint8_t* B, uint64_t base, uint64_t rel, Rec& r, unsigned& size) {
  Packet p;
  if (!SemiFastDecode(B - base, base + rel, p)) return false;
  Assign(r, p, base);
  size = p.size;
  return true;
}

// Decode(): the trace ahead is cut at PSBs into segments, which up to
// kLanes lanes decode at once, interleaved (each lane's chain byte -> size
// -> next byte is two loads long; several hide each other's latency).
// (5 lanes, all in registers in RunRounds(), measure the same; 6 or 8 no
// longer fit the registers.)
constexpr size_t kLanes = 4;
constexpr size_t kMaxSegments = PacketBatch::kMaxChunks;
constexpr uint64_t kMinSegmentBytes = 1024;
constexpr size_t kMinLanePackets = 4096;
constexpr uint64_t kMinLaneBytes = 4096;
// How far past its limit a lane may get before it checks again: kRounds
// packets of at most kUncheckedBytes.
constexpr uint64_t kOverrunBytes = kRounds * kUncheckedBytes;
// Packets of a PSB+ at most that a lane decodes the careful way at the start
// of a segment (bench_pt's trace: 7, PSB to PSBEND).
constexpr unsigned kPsbPlusPackets = 12;

struct Segment {
  uint64_t start = 0, stop = 0;  // [start, stop) from the base; stop is a PSB or the budget's end
  uint64_t end = 0;              // where its lane stopped
  size_t count = 0;              // records written from region(start)
  int err = 0;                   // why it stopped early (an errno of Next()), or 0
  uint8_t block = 0;             // PEBS block context at `end`
  bool done = false;
};

template <typename Rec>
struct SegLane {
  uint64_t off = 0;    // next packet, from the base
  int64_t lim = -1;    // kRounds packets fit unchecked while off <= lim
  Rec* out = nullptr;  // next record
  Rec* rec_end = nullptr;  // the end of the segment's room for records (PacketRecord lanes)
  size_t seg = 0;
  uint8_t block = 0;
};

// Runs the K lanes `lanes` in lock step, kRounds packets each between two
// checks, until one meets a packet the unchecked steps do not take or nears
// its limit. Returns that lane's index in `lanes`. (For Packets; PacketRecord
// lanes take the RunLanes() below.)
template <size_t K, typename Rec>
size_t RunLanes(const uint8_t* B, uint64_t base, SegLane<Rec>* const* lanes, const LaneTables& /*unused*/,
                const MapLanes* /*unused*/) {
  uint64_t off[K];
  int64_t lim[K];
  Rec* out[K];
  for (size_t j = 0; j < K; ++j) {
    off[j] = lanes[j]->off;
    lim[j] = lanes[j]->lim;
    out[j] = lanes[j]->out;
  }
  size_t leave = K;
  for (;;) {
    bool near = false;
#pragma GCC unroll 4
    for (size_t j = 0; j < K; ++j) near |= static_cast<int64_t>(off[j]) > lim[j];
    if (near) [[unlikely]] {
      leave = 0;
      while (static_cast<int64_t>(off[leave]) <= lim[leave]) ++leave;
      break;
    }
    // Round r writes out[j][r]: unrolled, a constant displacement.
#pragma GCC unroll 8
    for (uint64_t r = 0; r < kRounds; ++r) {
#pragma GCC unroll 4
      for (size_t j = 0; j < K; ++j) {
        unsigned size;
        if (!FastStep(B, base, off[j], out[j][r], size)) [[unlikely]] {
          if (!SemiStep(B, base, off[j], out[j][r], size)) {
            leave = j;
            // Lanes before j have done round r, the others not.
            for (size_t i = 0; i < K; ++i) out[i] += r + (i < j ? 1 : 0);
            goto done;
          }
        }
        off[j] += size;
      }
    }
    for (size_t j = 0; j < K; ++j) out[j] += kRounds;
  }
done:
  for (size_t j = 0; j < K; ++j) {
    lanes[j]->off = off[j];
    lanes[j]->out = out[j];
  }
  return leave;
}

// RunLanes() for PacketRecords: RunRounds() (RunRoundsMapped() with `mapped`)
// for as many rounds as the lane nearest its limit surely has room for
// (rather than a test of every lane's limit each round), then looks again.
// A packet RunRounds() rejects (PSBEND, CBR, ...) is decoded here if
// SemiStep() takes it, else the lane leaves.
template <size_t K>
[[gnu::always_inline]] inline size_t RunLanes(const uint8_t* B, uint64_t base, SegLane<PacketRecord>* const* lanes,
                                              const LaneTables& t, const MapLanes* mapped) {
  const uint8_t* p[K];
  PacketRecord* out[K];
  for (size_t j = 0; j < K; ++j) {
    p[j] = B + lanes[j]->off;
    out[j] = lanes[j]->out;
  }
  constexpr int64_t kRoundBytes = kRounds * kUncheckedBytes;
  size_t leave = K;
  for (;;) {
    // Rounds every lane has room for: one while off <= lim, one more per
    // kRoundBytes; and kRounds records each in its segment's room.
    int64_t slack = INT64_MAX, room = INT64_MAX;
    for (size_t j = 0; j < K; ++j) {
      slack = std::min<int64_t>(slack, lanes[j]->lim - (p[j] - B));
      room = std::min<int64_t>(room, lanes[j]->rec_end - out[j]);
    }
    if (slack < 0 || room < static_cast<int64_t>(kRounds)) [[unlikely]] {
      leave = 0;
      while (lanes[leave]->lim - (p[leave] - B) >= 0 &&
             lanes[leave]->rec_end - out[leave] >= static_cast<int64_t>(kRounds)) {
        ++leave;
      }
      break;
    }
    const int64_t rounds = std::min<int64_t>(slack / kRoundBytes + 1, room / static_cast<int64_t>(kRounds));
    if (mapped != nullptr) {
      PacketRecord* before[K];
      for (size_t j = 0; j < K; ++j) before[j] = out[j];
      if (!RunRoundsMapped<K>(*mapped, p, out, out[0] + rounds * kRounds)) continue;
      // Lanes at a size 0: their records back to the first for that packet
      // (in their last block), then SemiStep(), else the first of them leaves.
      for (size_t j = 0; j < K; ++j) {
        if (p[j][mapped->d] != 0) continue;
        const auto rel = static_cast<uint32_t>(p[j] - B);
        PacketRecord* const block = std::max(before[j], out[j] - kRounds);
        while (out[j] > block && out[j][-1].offset == rel) --out[j];
      }
      for (size_t j = 0; j < K; ++j) {
        if (p[j][mapped->d] != 0) continue;
        const auto rel = static_cast<uint32_t>(p[j] - B);
        unsigned size;
        if (!SemiStep(B, base, rel, *out[j], size)) {
          leave = j;
          break;
        }
        ++out[j];
        p[j] += size;
      }
      if (leave != K) break;
      continue;
    }
    uint64_t r = 0;
    const size_t j = RunRounds<K>(t, p, out, out[0] + rounds * kRounds, r);
    if (j == K) continue;
    // Lane j is at round r: a packet RunRounds() does not take.
    unsigned size;
    const uint64_t rel = static_cast<uint64_t>(p[j] - B);
    const bool ok = SemiStep(B, base, rel, out[j][r], size);
    // Lanes before j have done round r, j too if `ok`, the others not.
    for (size_t i = 0; i < K; ++i) out[i] += r + (i < j || (i == j && ok) ? 1 : 0);
    if (!ok) {
      leave = j;
      break;
    }
    p[j] += size;
  }
  for (size_t j = 0; j < K; ++j) {
    lanes[j]->off = static_cast<uint64_t>(p[j] - B);
    lanes[j]->out = out[j];
  }
  return leave;
}

// The CPU runs the mapped lanes: the map's AVX-512 code, and pext.
bool MappedLanesHere() {
#if defined(__x86_64__)
  static const bool here = internal::HaveMapPacketsAvx512() && __builtin_cpu_supports("bmi2");
  return here;
#else
  return false;
#endif
}

}  // namespace

PacketDecoder::PacketDecoder(std::span<const uint8_t> trace, Options options)
    : begin_(trace.data()),
      end_(trace.data() + trace.size()),
      pos_(trace.data()),
      sync_(trace.data()),
      fast_end_(trace.data()),
      options_(options) {}

void PacketDecoder::MoveTo(const uint8_t* pos) {
  pos_ = pos;
  sync_ = pos;
  synced_ = true;
  block_ = 0;
  UpdateFastEnd();
}

Result<uint64_t> PacketDecoder::SyncForward() {
  uint64_t from = 0;
  if (synced_) {
    from = offset();
    if (pos_ == sync_) from += internal::kPsbSize;  // past the PSB we are at
    from -= from < internal::kPsbSize - 1 ? from : internal::kPsbSize - 1;
  }
  const std::optional<uint64_t> psb = FindPsbForward(trace(), from);
  if (!psb) {
    return Result<uint64_t>::Failure(ENODATA, fmt::format("pt::PacketDecoder::SyncForward(from={:#x})", from));
  }
  MoveTo(begin_ + *psb);
  return Result<uint64_t>::Ok(*psb, "pt::PacketDecoder::SyncForward()");
}

Result<uint64_t> PacketDecoder::SyncBackward() {
  const uint64_t from = synced_ ? offset() : trace().size();
  const std::optional<uint64_t> psb = FindPsbBackward(trace(), from);
  if (!psb) {
    return Result<uint64_t>::Failure(ENODATA, fmt::format("pt::PacketDecoder::SyncBackward(from={:#x})", from));
  }
  MoveTo(begin_ + *psb);
  return Result<uint64_t>::Ok(*psb, "pt::PacketDecoder::SyncBackward()");
}

Result<void> PacketDecoder::SyncSet(uint64_t offset) {
  if (offset > trace().size()) {
    return Result<void>::Failure(
        EINVAL, fmt::format("pt::PacketDecoder::SyncSet(offset={:#x}, size={:#x})", offset, trace().size()));
  }
  MoveTo(begin_ + offset);
  return Result<void>::Ok();
}


int PacketDecoder::NextSlow(Packet& packet) noexcept {
  if (!synced_) return ENOTCONN;
  if (pos_ == end_) return ENODATA;
  if (block_ == 0 && end_ - pos_ >= 24 && !options_.Errata() && SemiFastDecode(begin_, offset(), packet)) {
    pos_ += packet.size;
    return 0;
  }
  const int err = DecodeOneSlow(begin_, end_, pos_, block_, options_, packet);
  if (err != 0) return err;
  pos_ = begin_ + packet.offset + packet.size;  // SKD007 skips a byte before the packet
  UpdateFastEnd();
  return 0;
}

int PacketDecoder::StepCareful(const uint8_t* B, uint64_t rel, uint8_t& block, Packet& p) const noexcept {
  if (block == 0 && static_cast<uint64_t>(end_ - B) - rel >= kUncheckedBytes) {
    unsigned size;
    if (internal::FastDecode(begin_, static_cast<uint64_t>(B - begin_) + rel, p, size)) return 0;
    if (SemiFastDecode(begin_, static_cast<uint64_t>(B - begin_) + rel, p)) return 0;
  }
  return DecodeOneSlow(begin_, end_, B + rel, block, options_, p);
}

template <typename Rec>
[[gnu::always_inline]] inline size_t PacketDecoder::DecodeSegments(Rec* out, size_t cap, int& err,
                                                                   PacketBatch::Chunk* chunks, size_t* nchunks,
                                                                   uint8_t* map) noexcept {
  const uint8_t* const B = pos_;
  const uint64_t base = offset();
  const uint64_t avail = static_cast<uint64_t>(end_ - pos_);
  // A record per byte at most: `cap` records hold this much trace for sure.
  // (Under 4 GiB, so that offsets from the base fit a PacketRecord.)
  // Short of the trace's end, the last segment's lane may run kOverrunBytes
  // past the budget's end (at the end, its reads stop kOverrunBytes short).
  // The mapped lanes: the map holds kMapStride positions (and a margin past the budget's end).
  const uint64_t budget = std::min<uint64_t>(avail <= cap ? avail : cap - kOverrunBytes,
                                             map != nullptr ? uint64_t{kMapLim} : uint64_t{1} << 30);

  // The mapped lanes' map: the budget and a little past its end (the last
  // segment's lane runs up to kOverrunBytes past it; positions read bytes
  // 0..7), in one pass through the trace's bytes in order, before the PSB
  // scans below, which then find their bytes in cache. (Mapping each segment
  // when a lane takes it, after the scans, measured ~3% slower a pass.)
  int64_t map_lim = 0;  // the lanes stay kOverrunBytes short of the map's end
  if (map != nullptr) {
    const uint64_t map_end = std::min<uint64_t>(budget + kOverrunBytes + 16, avail >= 7 ? avail - 7 : 0);
    internal::MapPacketsAvx512(B, map_end, map, map + kMapStride);
    map_lim = static_cast<int64_t>(map_end) - static_cast<int64_t>(kOverrunBytes);
  }

  // Segments: from pos_ to the first PSB at least `spacing` bytes on, and so
  // on, up to the budget's end. The search starts a little short of the PSB
  // distance the last call found (the trace's PSB period), so that it scans
  // a few words rather than a period.
  // Without the map, the PSBs ahead are near where the last call found them
  // (psb_gap_ apart, each in a page of its own): their lines are asked for
  // at once, so that the scans below do not wait for each in turn.
  if (map == nullptr && psb_gap_ > 256) {
    for (uint64_t off = psb_gap_ - 128; off + 192 <= budget; off += psb_gap_) {
      __builtin_prefetch(B + off);
      __builtin_prefetch(B + off + 64);
      __builtin_prefetch(B + off + 128);
    }
  }
  const uint64_t spacing = std::max<uint64_t>(kMinSegmentBytes, psb_gap_ > 256 ? psb_gap_ - 128 : 0);
  Segment segs[kMaxSegments];
  size_t nseg = 0;
  uint64_t start = 0;
  while (nseg + 1 < kMaxSegments) {
    const std::optional<uint64_t> next = FindPsbForward(trace().first(base + budget), base + start + spacing);
    if (!next) break;
    segs[nseg].start = start;
    segs[nseg].stop = *next - base;
    ++nseg;
    start = *next - base;
  }
  if (nseg >= 2) psb_gap_ = segs[1].stop - segs[1].start;
  segs[nseg].start = start;
  segs[nseg].stop = budget;
  ++nseg;

  // Each lane takes the next segment when it is done with one; after a
  // segment that fails or runs past its stop, later ones are not needed.
  const uint64_t size_rel = avail;
  SegLane<Rec> lanes[kLanes];
  SegLane<Rec>* active[kLanes];
  // The tables of RunRounds() (the portable PacketRecord lanes) or of
  // RunRoundsMapped(), for a trace at B; the Packet lanes use neither.
  std::optional<LaneTables> own_tables;
  if (std::is_same_v<Rec, PacketRecord> && map == nullptr) own_tables.emplace(B);
  const LaneTables& tables = own_tables ? *own_tables : kLaneTables;
  MapLanes map_lanes;
  const MapLanes* mapped = nullptr;
  if (std::is_same_v<Rec, PacketRecord> && map != nullptr) {
    const uint64_t b = reinterpret_cast<uintptr_t>(B);
    for (int i = 0; i < 256; ++i) {
      map_lanes.mask[i] = internal::kPacketKinds.mask[i];
      map_lanes.word[i] = internal::kPacketKinds.word[i] - b;
    }
    map_lanes.d = reinterpret_cast<intptr_t>(map) - static_cast<intptr_t>(b);
    mapped = &map_lanes;
  }
  size_t nactive = 0;
  size_t next_seg = 0, seg_limit = nseg;
  auto take = [&](SegLane<Rec>& l) {
    if (next_seg >= seg_limit) return false;
    l.seg = next_seg++;
    l.off = segs[l.seg].start;
    l.out = out + segs[l.seg].start;
    l.block = l.seg == 0 ? block_ : 0;
    return true;
  };
  // Decodes lane `l` the careful way until it may go back to RunLanes()
  // (returns true) or has no segment left (false); at least one packet if
  // RunLanes() left it there (`stuck`: a packet it does not take).
  auto attend = [&](SegLane<Rec>& l, bool stuck) {
    if constexpr (std::is_same_v<Rec, PacketRecord>) {
      // RunLanes()'s records of a lane stuck at a packet it does not take (kInvalid).
      while (stuck && l.out > out + segs[l.seg].start && l.out[-1].type == PacketType::kInvalid) --l.out;
    }
    for (;;) {
      Segment& s = segs[l.seg];
      // The lane runs unchecked up to its stop — a PSB, which it does not
      // take, so that it stops there — and at most kOverrunBytes past it when
      // it is out of step with the packets (a corrupt trace: its records there
      // are dropped below); its reads stay in the trace.
      // PacketRecord lanes: a segment that ends at a PSB needs no bound on
      // its bytes (the PSB stops the lane) but on its records: out of step,
      // the lane goes on until the segment's room is full (records kept for
      // the packets before the stop, below) or the trace's end nears. The
      // last segment, which ends at the budget's end, is bounded by its stop.
      const int64_t read_lim = static_cast<int64_t>(size_rel) - static_cast<int64_t>(kUncheckedBytes + kOverrunBytes);
      const bool psb_stop = std::is_same_v<Rec, PacketRecord> && l.seg + 1 < nseg;
      l.lim = psb_stop ? read_lim : std::min<int64_t>(static_cast<int64_t>(s.stop) - 1, read_lim);
      // Mapped lanes: the last segment's lane stays kOverrunBytes short of
      // the map's end; a lane that meets the PSB at its stop stops there
      // (the map has size 0 for it), and one out of step goes on past the
      // map's end (its sizes there are from other positions, 0..9; its
      // records there are dropped below) but not past kMapLim.
      if (mapped != nullptr) l.lim = std::min(l.lim, psb_stop ? kMapLim : map_lim);
      l.rec_end = out + s.stop;
      // A segment begins with a PSB+ (PSB, TSC, TMA, CBR, ..., PSBEND), whose
      // packets RunLanes() mostly rejects: decoded here, up to its PSBEND
      // (or kPsbPlusPackets), rather than in as many RunLanes() exits.
      unsigned careful = l.off == s.start ? kPsbPlusPackets : 0;
      int e = 0;
      while (l.off < s.stop) {
        if (!stuck && careful == 0 && l.block == 0 && static_cast<int64_t>(l.off) <= l.lim &&
            l.rec_end - l.out >= static_cast<ptrdiff_t>(kRounds)) {
          return true;
        }
        stuck = false;
        // Near the trace's end or inside a block: still the unchecked steps while they may read.
        unsigned size;
        if (l.block == 0 && l.off + kUncheckedBytes <= size_rel &&
            (FastStep(B, base, l.off, *l.out, size) || SemiStep(B, base, l.off, *l.out, size))) {
          ++l.out;
          l.off += size;
        } else {
          Packet p;
          e = StepCareful(B, l.off, l.block, p);
          if (e != 0) break;
          Assign(*l.out, p, base);
          ++l.out;
          l.off += p.size;
        }
        if (careful > 0) careful = l.out[-1].type == PacketType::kPsbEnd ? 0 : careful - 1;
      }
      s.end = l.off;
      s.count = static_cast<size_t>(l.out - (out + s.start));
      s.err = e;
      s.block = l.block;
      s.done = true;
      if (e != 0 || l.off != s.stop || l.block != 0) seg_limit = std::min(seg_limit, l.seg + 1);
      if (!take(l)) return false;
    }
  };
  for (SegLane<Rec>& l : lanes) {
    if (!take(l)) break;
    if (attend(l, false)) active[nactive++] = &l;
  }
  while (nactive > 0) {
    size_t j = 0;
    switch (nactive) {


      case 4: j = RunLanes<4>(B, base, active, tables, mapped); break;
      case 3: j = RunLanes<3>(B, base, active, tables, mapped); break;
      case 2: j = RunLanes<2>(B, base, active, tables, mapped); break;
      default: j = RunLanes<1>(B, base, active, tables, mapped); break;
    }
    SegLane<Rec>& l = *active[j];
    // A lane past the first failed segment is not needed.
    if (l.seg < seg_limit && attend(l, true)) continue;
    for (size_t k = j; k + 1 < nactive; ++k) active[k] = active[k + 1];
    --nactive;
    // Lanes past a segment that failed meanwhile.
    for (size_t k = 0; k < nactive;) {
      if (active[k]->seg >= seg_limit) {
        for (size_t m = k; m + 1 < nactive; ++m) active[m] = active[m + 1];
        --nactive;
      } else {
        ++k;
      }
    }
  }

  // Keep segment k + 1 only if segment k ended exactly where it begins, outside a block.
  size_t count = 0;
  size_t last = 0;
  if (chunks != nullptr) *nchunks = 0;
  for (size_t k = 0; k < nseg && segs[k].done; ++k) {
    Segment& s = segs[k];
    if (s.end > s.stop && k + 1 < nseg) {
      // The lane went on past its stop, out of step with the packets: its
      // records from index stop on may be the next segment's. Keep those
      // of packets before the stop (at lower indices: a record per byte at
      // most); the segment ends after the last of them.
      const Rec* const r = out + s.start;
      size_t n = std::min<size_t>(s.count, s.stop - s.start);
      while (n > 0 && RecordOffset(r[n - 1], base) >= s.stop) --n;
      if (n < s.count) {
        s.count = n;
        s.end = n > 0 ? RecordOffset(r[n - 1], base) + r[n - 1].size : s.start;
        s.err = 0;
        s.block = 0;  // past the stop only in RunLanes(), outside blocks
      }
    }
    if (chunks != nullptr) {
      if (s.count > 0) chunks[(*nchunks)++] = {s.start, s.count};
    } else if (k > 0) {
      std::memmove(out + count, out + s.start, s.count * sizeof(Rec));
    }
    count += s.count;
    last = k;
    if (s.err != 0 || s.end != s.stop || s.block != 0) break;
  }
  pos_ = B + segs[last].end;
  block_ = segs[last].block;
  UpdateFastEnd();
  err = segs[last].err;
  if (err == 0 && pos_ == end_) err = ENODATA;
  return count;
}

template <typename Rec>
size_t PacketDecoder::DecodeSerial(Rec* out, size_t cap, int& err) noexcept {
  const uint64_t base = offset();
  size_t count = 0;
  err = 0;
  for (; count < cap; ++count) {
    Packet p;
    err = Next(p);
    if (err != 0) break;
    Assign(out[count], p, base);
  }
  return count;
}

size_t PacketDecoder::Decode(std::span<Packet> out, int& err) noexcept {
  err = 0;
  if (out.empty()) return 0;
  if (synced_ && block_ == 0 && !options_.Errata() && out.size() >= kMinLanePackets && end_ - pos_ >= static_cast<ptrdiff_t>(kMinLaneBytes)) {
    return DecodeSegments(out.data(), out.size(), err, nullptr, nullptr, nullptr);
  }
  // In order, a packet at a time: short traces, a small `out`, inside a PEBS block.
  return DecodeSerial(out.data(), out.size(), err);
}

int PacketDecoder::Decode(PacketBatch& batch) noexcept {
  int err = 0;
  batch.base_ = offset();
  const size_t cap = batch.records_.size();
  if (synced_ && block_ == 0 && !options_.Errata() && cap >= kMinLanePackets && end_ - pos_ >= static_cast<ptrdiff_t>(kMinLaneBytes)) {
    uint8_t* map = nullptr;
    if (!options_.portable && MappedLanesHere()) {
      if (batch.map_.empty()) batch.map_.resize(2 * kMapStride);
      map = batch.map_.data();
    }
    batch.size_ = DecodeSegments(batch.records_.data(), cap, err, batch.chunks_, &batch.nchunks_, map);
  } else {
    batch.size_ = DecodeSerial(batch.records_.data(), cap, err);
    batch.chunks_[0] = {0, batch.size_};
    batch.nchunks_ = batch.size_ > 0 ? 1 : 0;
  }
  return err;
}

std::string_view PacketDecoder::BatchLanes(const Options& options) {
  return !options.portable && MappedLanesHere() ? "mapped (AVX-512 VBMI, BMI2)" : "portable";
}

Result<Packet> PacketDecoder::Next() {
  Packet p;
  const int err = Next(p);
  if (err != 0) return Result<Packet>::Failure(err, fmt::format("pt::PacketDecoder::Next(offset={:#x})", offset()));
  return Result<Packet>::Ok(p);
}

std::string_view PacketDecoder::ErrorDescription(int err) {
  switch (err) {
    case ENOTCONN: return "not synchronized";
    case ENODATA: return "end of trace";
    case EILSEQ: return "unknown opcode";
    case EBADMSG: return "bad payload";
    case EMSGSIZE: return "truncated packet";
    default: return std::strerror(err);
  }
}

}  // namespace perftest::pt
