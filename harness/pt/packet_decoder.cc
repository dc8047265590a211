#include "harness/pt/packet_decoder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "harness/pt/sync.h"

namespace perftest::pt {
namespace {

using internal::ExtKind;
using internal::OpKind;

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
int DecodeExt(Packet& p, const uint8_t* pos, size_t avail, bool block_packets) {
  if (avail < 2) return EMSGSIZE;
  const uint8_t x = pos[1];
  const internal::ExtEntry e = internal::kExtByte[x];
  unsigned size = e.size;
  uint64_t payload = 0;
  switch (e.kind) {
    case ExtKind::kBad:
      return EILSEQ;
    case ExtKind::kBlock:
      if (!block_packets) return EILSEQ;
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
int DecodeAt(Packet& p, const uint8_t* pos, size_t avail, bool block_packets) {
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
      return DecodeExt(p, pos, avail, block_packets);
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
    case OpKind::kBadOpcode:
      return EILSEQ;
    case OpKind::kBadIpBytes:
      return EBADMSG;
  }
  p.opcode = b;
  p.ext = 0;
  return 0;
}

// One packet at `pos` (begin <= pos < end) the careful way: bounds, the slow
// kinds, PEBS block context (`block`, updated). Returns 0 or an errno.
int DecodeOneSlow(const uint8_t* begin, const uint8_t* end, const uint8_t* pos, uint8_t& block,
                  bool block_packets, Packet& out) {
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
    const int err = DecodeAt(p, pos, avail, block_packets);
    if (err != 0) return err;
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

// A stretch of the trace decoded on its own, for Decode().
struct Lane {
  const uint8_t* pos;    // next packet
  const uint8_t* start;  // where the lane began
  const uint8_t* stop;   // the next lane's start (or the end of the trace)
  Packet* first;         // its region of `out`
  Packet* out;           // next free slot
  Packet* out_end;
  uint8_t block = 0;     // PEBS block context at pos
  int err = 0;           // why it stopped: an errno of Next(), or 0
};

// Runs one lane to its stop, its region's end, an error or a BBP (after
// which block context would have to carry over): fast path while 9 bytes
// are readable, the careful path otherwise.
void FinishLane(Lane& l, const uint8_t* begin, const uint8_t* end, bool block_packets) {
  const uint8_t* fast_end = end - begin >= 9 ? end - 8 : begin;
  while (l.pos < l.stop && l.out < l.out_end) {
    if (l.block == 0 && l.pos < fast_end) {
      unsigned n;
      if (internal::FastDecode(begin, static_cast<uint64_t>(l.pos - begin), *l.out, n)) {
        l.pos += n;
        ++l.out;
        continue;
      }
    }
    const int err = DecodeOneSlow(begin, end, l.pos, l.block, block_packets, *l.out);
    if (err != 0) {
      l.err = err;
      return;
    }
    l.pos += l.out->size;
    ++l.out;
    if (l.block != 0) return;  // a BBP: the rest is decoded in order
  }
  if (l.pos == end) l.err = ENODATA;
}

// Runs the K lanes lanes[idx[0..K-1]] in lock step, one packet each per
// round, with their positions in registers, until one of them must leave:
// it nears its limit (it is then finished on its own), fails, or opens a
// PEBS block. Returns that lane's index into `idx`. A packet is at most 16
// bytes, so `rounds` rounds fit before every lane's limit without checks.
template <size_t K>
size_t Interleave(Lane* lanes, const size_t* idx, const uint8_t* const* limit, const uint8_t* begin,
                  const uint8_t* end, bool block_packets) {
  uint64_t off[K];  // offsets, not pointers: they are also the packets' `offset`
  Packet* out[K];
  for (size_t j = 0; j < K; ++j) {
    off[j] = static_cast<uint64_t>(lanes[idx[j]].pos - begin);
    out[j] = lanes[idx[j]].out;
  }
  size_t leave = K;
  while (leave == K) {
    size_t rounds = SIZE_MAX;
    for (size_t j = 0; j < K; ++j) {
      const uint64_t lim = static_cast<uint64_t>(limit[idx[j]] - begin);
      const Lane& l = lanes[idx[j]];
      // Several lanes can stop in one round: each leaves in a later call.
      if (l.err != 0 || l.block != 0 || off[j] + internal::kPsbSize > lim ||
          l.out_end - out[j] < internal::kPsbSize) {
        leave = j;
        break;
      }
      rounds = std::min({rounds, static_cast<size_t>(lim - off[j]) / internal::kPsbSize,
                         static_cast<size_t>(l.out_end - out[j])});
    }
    if (leave != K) break;
    // The hot loop: fast-path packets only, no calls, so the lanes' state stays in registers.
    size_t slow = K;
    for (size_t r = 0; r < rounds; ++r) {
#pragma GCC unroll 4
      for (size_t j = 0; j < K; ++j) {
        unsigned size;
        if (!internal::FastDecode(begin, off[j], *out[j], size)) [[unlikely]] {
          slow = j;
          goto slow_packet;
        }
        off[j] += size;
        ++out[j];
      }
    }
    continue;
  slow_packet:
    // The careful path for this one packet (02h packets, MODE, long CYC, errors).
    {
      Lane& l = lanes[idx[slow]];
      if (SemiFastDecode(begin, off[slow], *out[slow])) {  // 24 bytes readable: see `rounds`
        off[slow] += out[slow]->size;
        ++out[slow];
        continue;
      }
      const int e = DecodeOneSlow(begin, end, begin + off[slow], l.block, block_packets, *out[slow]);
      if (e != 0) {
        l.err = e;
        leave = slow;
        break;
      }
      off[slow] += out[slow]->size;
      ++out[slow];
      if (l.block != 0) leave = slow;  // a BBP: block context from here on
    }
  }
  for (size_t j = 0; j < K; ++j) {
    lanes[idx[j]].pos = begin + off[j];
    lanes[idx[j]].out = out[j];
  }
  return leave;
}

constexpr size_t kMaxLanes = 4;
constexpr size_t kMinLanePackets = 4096;


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
  if (block_ == 0 && end_ - pos_ >= 24 && SemiFastDecode(begin_, offset(), packet)) {
    pos_ += packet.size;
    return 0;
  }
  const int err = DecodeOneSlow(begin_, end_, pos_, block_, options_.block_packets, packet);
  if (err != 0) return err;
  pos_ += packet.size;
  UpdateFastEnd();
  return 0;
}

size_t PacketDecoder::DecodeLanes(std::span<Packet> out, int& err) noexcept {
  // The stretch ahead that `out` can hold for sure (a packet is at least one
  // byte), cut at PSBs into up to kMaxLanes lanes: each runs from a PSB (or
  // pos_) to the first PSB at least `spacing` bytes on — about one PSB period
  // each when the budget holds a few — so that the lanes are about as long
  // and the next call starts at a PSB. Lane j's region of `out` starts at
  // its byte distance from pos_, so no lane can run out of room.
  const uint64_t budget = std::min<uint64_t>(out.size(), static_cast<uint64_t>(end_ - pos_));
  const uint8_t* const limit_all = pos_ + budget;
  // The PSB search from each bound starts `spacing` bytes on; when the last
  // call found PSBs further apart than that (the trace's PSB period), it
  // starts a little short of that distance instead (up to a quarter of the
  // budget), so that it scans a few words rather than half a period. Only
  // the lanes' lengths depend on it.
  const uint64_t gap = psb_gap_ > 256 ? std::min<uint64_t>(psb_gap_ - 128, budget / kMaxLanes) : 0;
  const uint64_t spacing = std::max<uint64_t>({budget / (2 * kMaxLanes), 1, gap});
  const uint8_t* bounds[kMaxLanes + 1];
  size_t nb = 0;
  bounds[nb++] = pos_;
  while (nb <= kMaxLanes) {
    const std::optional<uint64_t> next =
        FindPsbForward(trace(), static_cast<uint64_t>(bounds[nb - 1] - begin_) + spacing);
    if (!next || begin_ + *next > limit_all || begin_ + *next <= bounds[nb - 1]) break;
    bounds[nb++] = begin_ + *next;
  }
  if (nb >= 3) psb_gap_ = static_cast<uint64_t>(bounds[2] - bounds[1]);
  if (nb == 1) bounds[nb++] = limit_all;  // no PSB in reach: one lane to the budget's end
  const size_t n = nb - 1;
  Lane lanes[kMaxLanes];
  for (size_t j = 0; j < n; ++j) {
    Lane& l = lanes[j];
    l.pos = l.start = bounds[j];
    l.stop = bounds[j + 1];
    l.first = l.out = out.data() + (l.start - pos_);
    l.out_end = l.first + (l.stop - l.start);
    l.block = j == 0 ? block_ : 0;
  }

  // Interleaved while two or more lanes run; each lane that must leave is
  // finished on its own (unless it failed or opened a PEBS block).
  const uint8_t* const fast_end = end_ - 8;  // end_ - begin_ >= 9 here
  const uint8_t* limit[kMaxLanes];
  size_t idx[kMaxLanes];
  for (size_t j = 0; j < n; ++j) {
    limit[j] = std::min(lanes[j].stop, fast_end);
    idx[j] = j;
  }
  for (size_t k = n; k > 0; --k) {
    size_t leave = 0;
    switch (k) {
      case 4: leave = Interleave<4>(lanes, idx, limit, begin_, end_, options_.block_packets); break;
      case 3: leave = Interleave<3>(lanes, idx, limit, begin_, end_, options_.block_packets); break;
      case 2: leave = Interleave<2>(lanes, idx, limit, begin_, end_, options_.block_packets); break;
      default: break;
    }
    Lane& l = lanes[idx[leave]];
    if (l.err == 0 && l.block == 0) FinishLane(l, begin_, end_, options_.block_packets);
    for (size_t j = leave; j + 1 < k; ++j) idx[j] = idx[j + 1];
  }

  // Keep lane j + 1 only if lane j ran cleanly into its start, outside a block.
  size_t count = static_cast<size_t>(lanes[0].out - lanes[0].first);
  size_t last = 0;
  for (size_t j = 1; j < n; ++j) {
    const Lane& prev = lanes[j - 1];
    if (prev.err != 0 || prev.block != 0 || prev.pos != lanes[j].start) break;
    const size_t k = static_cast<size_t>(lanes[j].out - lanes[j].first);
    std::memmove(out.data() + count, lanes[j].first, k * sizeof(Packet));
    count += k;
    last = j;
  }
  pos_ = lanes[last].pos;
  block_ = lanes[last].block;
  UpdateFastEnd();
  err = lanes[last].err;
  return count;
}

size_t PacketDecoder::Decode(std::span<Packet> out, int& err) noexcept {
  err = 0;
  if (out.empty()) return 0;
  if (synced_ && block_ == 0 && out.size() >= kMinLanePackets && end_ - pos_ >= 4096) {
    return DecodeLanes(out, err);
  }
  // In order, a packet at a time: short traces, a small `out`, inside a PEBS block.
  size_t count = 0;
  for (; count < out.size(); ++count) {
    err = Next(out[count]);
    if (err != 0) break;
  }
  return count;
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
