// FlowDecoder: libipt's read-ahead rules (see flow_decoder.cc for the file
// layout) — when a packet error, or a control packet that binds elsewhere,
// fails the branch being resolved, and when it waits for a later query.
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "harness/pt/flow_decoder.h"
#include "harness/pt/internal/flow_decoder_inline.h"
#include "harness/pt/internal/opcodes.h"
#include "harness/pt/sync.h"

namespace perftest::pt {

int FlowDecoder::NeedControl() {
  if (tnt_count_ != 0 || ctl_ != Ctl::kNone) return 0;
  if (sticky_error_ != 0) return sticky_error_;
  return FetchControl();
}

namespace {
// Whether libipt decodes the packet whose first bytes are at `at` only when
// a later query needs it: its query decoder (pt_qry_read_ahead) stops
// without decoding at the next TNT, TIP or event packet; TNT and TIP wait
// for the branch that queries them, so a bad payload there is no error of
// the branch before. (Event packets — TIP.PGE, TIP.PGD, MODE, PIP, OVF,
// ... — are fetched by pt_insn_next at once, so their errors are.)
bool ReadAheadStopsAt(std::span<const uint8_t> trace, uint64_t at) {
  if (at >= trace.size()) return true;
  const uint8_t b0 = trace[at];
  if (b0 == 0x02) return at + 1 < trace.size() && trace[at + 1] == 0xa3;  // TNT-64
  if (b0 != 0 && (b0 & 1) == 0) return true;  // TNT-8
  return (b0 & 0x1f) == 0x0d;  // TIP
}
}  // namespace

namespace {
bool QuietPastFup(std::span<const uint8_t> trace, uint64_t off, unsigned size, uint8_t ipbytes);
}  // namespace

// Decodes (without consuming) the packets after the current position up to
// the first one that is not PAD or timing (or a FUP that no event waits
// for, which libipt's read-ahead decodes too); returns the error met, if any
// (the end of the trace, or a packet cut by it, is none). `next`, if given:
// where the PAD and timing packets it skipped without copying the packet
// decoder end (the current position if none).
int FlowDecoder::CheckAhead(uint64_t* next) {
  if (next != nullptr) *next = packets_.offset();
  if (have_unread_) return 0;
  // The common case without copying the packet decoder: the packets ahead
  // are fast-path packets (PacketDecoder::Next() would decode them the
  // same way: synchronized, outside a PEBS block, 9 bytes readable).
  if (packets_.synced() && packets_.block_item_bytes() == 0) {
    const std::span<const uint8_t> trace = packets_.trace();
    for (uint64_t off = packets_.offset(); off + 9 <= trace.size();) {
      Packet q;
      unsigned size;
      if (!internal::FastDecode(trace.data(), off, q, size)) break;  // the careful way, below
      if (q.type == PacketType::kPad || q.type == PacketType::kCyc || q.type == PacketType::kMtc ||
          q.type == PacketType::kTsc) {
        off += size;
        continue;
      }
      if (q.type == PacketType::kMwait) break;  // the careful way
      if (q.type == PacketType::kFup && fup_held_.empty() && !QuietPastFup(trace, off, size, q.ipbytes())) break;
      if (next != nullptr) *next = off;
      return 0;
    }
  }
  PacketDecoder ahead = packets_;
  for (;;) {
    Packet q;
    const int err = ahead.Next(q);
    if (err == ENODATA || err == EMSGSIZE) return 0;
    if (err != 0 && ReadAheadStopsAt(packets_.trace(), ahead.offset())) return 0;  // decoded when queried
    if (err != 0) {
      error_offset_ = ahead.offset();
      error_ip_ = ip_;
      error_message_ = fmt::format("{} at offset {:#x}", PacketDecoder::ErrorDescription(err), error_offset_);
      return err;
    }
    switch (q.type) {
      case PacketType::kPad: case PacketType::kCyc: case PacketType::kMtc: case PacketType::kTsc:
      case PacketType::kTma: case PacketType::kCbr: case PacketType::kMnt:
        continue;
      case PacketType::kFup: {
        // libipt's read-ahead decodes a FUP that no event waits for (an
        // asynchronous branch queued for the next TIP: pt_qry_decode_fup;
        // pt_qry_will_event holds it only while evb_fup has one) and reads
        // on; without an IP its decode fails (-pte_ip_suppressed).
        if (!fup_held_.empty()) return 0;
        if (q.ipbytes() != 0) continue;
        const int e = Fail(EBADMSG, fmt::format("FUP at {:#x} without an IP (read ahead)", q.offset));
        error_offset_ = q.offset;
        return e;
      }
      case PacketType::kPsb:
        // libipt's read-ahead decodes a PSB with its header (pt_decode_psb
        // has no flags; pt_qry_decode_psb -> pt_qry_read_psb_header, to the
        // PSBEND or an OVF): a packet error there, or a packet no header
        // takes (-pte_bad_context), fails it — at the PSB, where libipt goes
        // back to (as ReadPsbPlus() would fail later).
        for (;;) {
          Packet r;
          int e = ahead.Next(r);
          if (e == ENODATA || e == EMSGSIZE) return 0;
          if (e == 0) {
            switch (r.type) {
              case PacketType::kPsbEnd: case PacketType::kOvf:
                return 0;
              case PacketType::kPad: case PacketType::kTsc: case PacketType::kTma: case PacketType::kCbr:
              case PacketType::kFup: case PacketType::kModeExec: case PacketType::kModeTsx: case PacketType::kPip:
              case PacketType::kVmcs: case PacketType::kMnt: case PacketType::kCyc: case PacketType::kMtc:
                continue;
              default:
                e = EBADMSG;
                break;
            }
          }
          error_offset_ = q.offset;
          error_ip_ = ip_;
          error_message_ = fmt::format("{} in the PSB+ at {:#x} (read ahead)", PacketDecoder::ErrorDescription(e),
                                       q.offset);
          return e;
        }
      case PacketType::kMwait:
        // An event packet: libipt's instruction decoder asks for the event
        // at once. MWAIT makes none by itself (it waits for a FUP), so the
        // event query reads on, and a TNT or TIP next has no event for it
        // (pt_qry_event: -pte_bad_query), failing the branch.
        for (;;) {
          Packet r;
          if (ahead.Next(r) != 0) return 0;
          if (r.type == PacketType::kPad || r.type == PacketType::kCyc || r.type == PacketType::kMtc ||
              r.type == PacketType::kTsc || r.type == PacketType::kTma || r.type == PacketType::kCbr)
            continue;
          if (r.type != PacketType::kTnt8 && r.type != PacketType::kTnt64 && r.type != PacketType::kTip) return 0;
          const int e = Fail(EBADMSG, fmt::format("MWAIT at {:#x} followed by {} at {:#x}: no event for it", q.offset,
                                                  PacketName(r.type), r.offset));
          error_offset_ = r.offset;
          return e;
        }
      default:
        return 0;
    }
  }
}

// Whether, right after a TNT packet, both CheckAhead() and
// EventQueryAfterTnt() find nothing: the packets after it lie in the clean
// stretch (CleanAhead(), extended here if need be); else, as seen from
// first bytes alone (where the stretch stopped short): CYCs of
// one or two bytes, PADs, MTCs and TSCs (status packets, all valid) up to a
// TNT-8 or a TIP (where the read-ahead stops: a TIP's bad IP bytes are no
// error of this query, ReadAheadStopsAt; neither makes an event) — or up to
// a TIP.PGD with valid IP bytes (an event: the query reads on past it)
// and then such status packets up to a TNT-8 or an IP packet (where it
// stops; bad IP bytes there are EBADMSG, no error of the query). False: ask
// them.
namespace {
// QuietAfterTnt()'s view of a first byte: kQuietStop, where the read-ahead
// stops with nothing to report (TNT-8, TIP); kQuietIp, an IP packet
// (TIP.PGD, TIP.PGE, FUP; with kQuietPgd and the size in bits 3:0, a TIP.PGD
// with valid IP bytes); kQuietCycExp, a CYC with Exp; else the size of a
// status packet (PAD, CYC without Exp, MTC, TSC), or 0 (anything else) —
// from the packet decoder's first-byte table (internal/opcodes.h).
constexpr uint8_t kQuietStop = 0x80, kQuietCycExp = 0x40, kQuietPgd = 0x20, kQuietIp = 0x10;
struct QuietTable {
  uint8_t at[256] = {};
  constexpr QuietTable() {
    const std::array<internal::OpEntry, 256> first = internal::MakeFirstByteTable();  // (the packet decoder's)
    for (unsigned b = 0; b < 256; ++b) {
      const internal::OpEntry& op = first[b];
      uint8_t e = 0;
      switch (op.type) {
        case PacketType::kTnt8: case PacketType::kTip:  // (a TIP with bad IP bytes too)
          e = kQuietStop;
          break;
        case PacketType::kPad: case PacketType::kMtc: case PacketType::kTsc:
          e = op.size;
          break;
        case PacketType::kCyc:  // (with Exp: 2 bytes or more)
          e = op.size == 1 ? 1 : kQuietCycExp;
          break;
        case PacketType::kTipPgd:
          e = kQuietIp;
          if (op.kind == internal::OpKind::kSimple) e |= kQuietPgd | op.size;
          break;
        case PacketType::kTipPge: case PacketType::kFup:
          e = kQuietIp;
          break;
        default:  // MODE, 02h packets, bad opcodes
          break;
      }
      at[b] = e;
    }
  }
};
constexpr QuietTable kQuiet;

// A FUP's size by IPBytes (opcode[7:5]); 0: none or reserved.
constexpr uint8_t kFupSize[8] = {1, 3, 5, 7, 7, 0, 9, 0};

// CheckAhead()'s quick look past a FUP that no event waits for, at `off`
// (`size` bytes, IPBytes `ipbytes`): libipt's read-ahead decodes it and
// reads on — as a rule through status packets (as QuietAfterTnt() sees
// them) to its TIP, TIP.PGD or TIP.PGE, or a TNT-8, where it stops: true.
// False: the careful way (a FUP without an IP, whose decode fails; any
// other packet after it).
__attribute__((noinline)) bool QuietPastFup(std::span<const uint8_t> trace, uint64_t off, unsigned size,
                                            uint8_t ipbytes) {
  if (ipbytes == 0 || size == 0) return false;
  const uint8_t* const t = trace.data();
  for (off += size; off + 9 <= trace.size();) {
    const uint8_t e = kQuiet.at[t[off]];
    if (e < kQuietIp) {  // a status packet, or anything else
      if (e == 0) return false;
      off += e;
    } else if (e & kQuietCycExp) {
      if ((t[off + 1] & 1) != 0) return false;
      off += 2;
    } else {
      return (e & kQuietStop) != 0 || (t[off] & 0x1f) != 0x1d;  // (not another FUP: the careful way)
    }
  }
  return false;
}
}  // namespace

bool FlowDecoder::QuietAfterTnt() {
  if (have_unread_) return true;  // (both return 0 at once)
  // (The clean stretch answers for the read-ahead of a flow with no event
  // held: one waiting for a FUP or for an IP changes where it stops.)
  if (fup_held_.empty() && !bound_pending_ && (packets_.offset() < clean_end_ || CleanAhead())) return true;
  if (!packets_.synced() || packets_.block_item_bytes() != 0) return false;
  const std::span<const uint8_t> trace = packets_.trace();
  const uint8_t* const t = trace.data();
  const uint64_t size = trace.size();
  bool after_event = false;
  for (uint64_t off = packets_.offset(); off + 9 <= size;) {
    const uint8_t e = kQuiet.at[t[off]];
    if (e < kQuietIp) {  // a status packet, or anything else
      if (e == 0) return false;
      off += e;
    } else if (e & kQuietStop) {
      return true;
    } else if (e & kQuietCycExp) {
      if ((t[off + 1] & 1) != 0) return false;  // (longer than 2 bytes)
      off += 2;
    } else if (after_event) {  // kQuietIp
      return true;
    } else if (e & kQuietPgd) {
      off += e & 0xf;
      after_event = true;
    } else {
      return QuietAtFup(off);  // (a FUP, or a TIP.PGE: false)
    }
  }
  return false;
}

namespace {
// The packets that end libipt's read-ahead after a TNT wherever it meets
// them, in any state, with no error and no event (CheckAhead(),
// EventQueryAfterTnt()): TNT-8 and TIP (by the first byte; their IP bytes
// valid: the fast path rejects the reserved IPBytes) — and TNT-64 and OVF
// (CleanRare()). The read-ahead stops at them, or — after an event packet
// — at the first packet after it that is not PAD or timing, which is then
// no later than they are.
struct CleanStopTable {
  bool at[256] = {};
  constexpr CleanStopTable() {
    for (unsigned b = 0; b < 256; ++b)
      at[b] = ((b & 1) == 0 && b != internal::kOpcPad && b != internal::kOpcExt) || (b & 0x1f) == 0x0d;
  }
};
constexpr CleanStopTable kCleanStop;
// The packet decoder's fast-path reject bits (internal::kFast.reject), with
// MODE sent aside too (CleanRare(): it splits a region). What libipt's
// read-ahead does past a MODE.Exec (its event queued for the next TIP) or a
// MODE.TSX (waiting for its FUP: flow_decoder_fup_queue_test.cc) depends on
// the flow's state, which the stretch does not see: the careful look
// (CheckAhead(), EventQueryAfterTnt()) decides for the TNTs before one. (FUP, TIP.PGE and TIP.PGD need no split:
// ReadAheadPastSplittingPacketsInsideTheCleanStretch.)
struct CleanRejectTable {
  uint16_t at[256] = {};
  constexpr CleanRejectTable() {
    for (unsigned b = 0; b < 256; ++b) {
      at[b] = b == internal::kOpcMode ? 0xffff : internal::kFast.reject[b];
    }
  }
};
constexpr CleanRejectTable kCleanReject;
constexpr uint64_t kCleanMaxBytes = 64 * 1024;  // a region's bytes at most (its PSB period)

// What a lane meets at a packet the stretch's reject bits send aside.
enum class CleanRareKind : uint8_t { kEnd, kPacket, kStopper, kSplit };

// A stretch packet kCleanReject sends aside at t[off] (9 bytes readable):
// TNT-64 with a stop bit and OVF (kStopper), a CYC of 3 to 8 bytes
// (kPacket), a MODE.Exec or MODE.TSX (kSplit: the sub-interval ends before
// it). Sets *next past it; kEnd: the stretch ends here.
__attribute__((noinline)) CleanRareKind CleanRare(const uint8_t* t, uint64_t off, uint64_t* next) {
  const uint8_t b = t[off];
  if (b == internal::kOpcExt && t[off + 1] == internal::kExtTnt64) {
    uint64_t raw;  // bytes 1..8: the payload is bytes 2..7
    std::memcpy(&raw, t + off + 1, sizeof raw);
    *next = off + 8;
    return ((raw >> 8) & 0xffffffffffff) != 0 ? CleanRareKind::kStopper : CleanRareKind::kEnd;  // (no stop bit: EBADMSG)
  }
  if (b == internal::kOpcExt && t[off + 1] == internal::kExtOvf) {
    *next = off + 2;
    return CleanRareKind::kStopper;
  }
  if (b == internal::kOpcMode) {  // MODE.Exec or MODE.TSX (leaf, byte 1 bits 7:5: 000b, 001b)
    if ((t[off + 1] >> 5) > 1) return CleanRareKind::kEnd;
    *next = off + 2;
    return CleanRareKind::kSplit;
  }
  if ((b & 3) == internal::kOpcCyc) {  // (Exp, and byte 1's Exp: 3 bytes or more)
    unsigned n = 3;
    while (n < 9 && (t[off + n - 1] & 1) != 0) ++n;
    *next = off + n;
    if (n < 9) return CleanRareKind::kPacket;
  }
  return CleanRareKind::kEnd;
}

// A lane of CleanAhead(): the packets from `off` to `limit`; `end` past the
// last stopper among them; `region` collects its sub-intervals (the open
// one from `open`). A packet the stretch does not take ends it early
// (limit = off).
struct CleanLane {
  uint64_t off = 0, limit = 0, end = 0;
};
struct CleanSubs {
  internal::CleanRegionSubs* region = nullptr;
  uint64_t open = 0;
};

// Closes the open sub-interval at the lane's `end` (none if no stopper
// since it opened).
inline void CloseSub(CleanSubs& subs, uint64_t end) {
  internal::CleanRegionSubs& r = *subs.region;
  r.sub[r.nsub++] = {subs.open, std::max(end, subs.open)};
}

// One packet of a lane, if it has not ended: off moves past it, end past it
// if it is a stopper (a select: stoppers come as unpredictably as packets).
inline __attribute__((always_inline)) void CleanStep(const uint8_t* t, uint64_t& off, uint64_t& limit,
                                                      uint64_t& end, CleanSubs& subs) {
  if (off >= limit) return;
  uint16_t word;  // bytes 0..1
  std::memcpy(&word, t + off, sizeof word);
  const uint8_t b = static_cast<uint8_t>(word);
  if ((word & kCleanReject.at[b]) == 0) [[likely]] {
    off += internal::kFast.size[b];
    end ^= (end ^ off) & (uint64_t{0} - kCleanStop.at[b]);
    return;
  }
  uint64_t next = 0;
  switch (CleanRare(t, off, &next)) {
    case CleanRareKind::kEnd:
      limit = off;
      return;
    case CleanRareKind::kStopper:
      end = next;
      break;
    case CleanRareKind::kPacket:
      break;
    case CleanRareKind::kSplit:
      if (subs.region->nsub + 1 >= internal::kCleanSubs) {  // (room for the last one)
        limit = off;
        return;
      }
      CloseSub(subs, end);
      subs.open = next;
      break;
  }
  off = next;
}

// Runs up to 4 lanes (n) in lockstep: each packet's position depends on the
// packet before it (two loads and an add: about 14 cycles a packet), so a
// lane alone is bound by that latency; independent lanes overlap it. (Four
// lanes by name: in an array the compiler keeps them in memory.) Then
// closes each lane's last sub-interval.
void RunCleanLanes(const uint8_t* t, CleanLane* lanes, CleanSubs* subs, size_t n) {
  CleanLane l[4] = {};
  CleanSubs dummy[4] = {};
  internal::CleanRegionSubs spare[4];
  for (size_t i = 0; i < 4; ++i) {
    if (i < n) {
      l[i] = lanes[i];
      dummy[i] = subs[i];
    } else {
      dummy[i].region = &spare[i];
    }
  }
  uint64_t o0 = l[0].off, o1 = l[1].off, o2 = l[2].off, o3 = l[3].off;
  uint64_t m0 = l[0].limit, m1 = l[1].limit, m2 = l[2].limit, m3 = l[3].limit;
  uint64_t e0 = l[0].end, e1 = l[1].end, e2 = l[2].end, e3 = l[3].end;
  while (o0 < m0 || o1 < m1 || o2 < m2 || o3 < m3) {
    CleanStep(t, o0, m0, e0, dummy[0]);
    CleanStep(t, o1, m1, e1, dummy[1]);
    CleanStep(t, o2, m2, e2, dummy[2]);
    CleanStep(t, o3, m3, e3, dummy[3]);
  }
  const uint64_t offs[4] = {o0, o1, o2, o3}, limits[4] = {m0, m1, m2, m3}, ends[4] = {e0, e1, e2, e3};
  for (size_t i = 0; i < n; ++i) {
    lanes[i] = CleanLane{offs[i], limits[i], ends[i]};
    CloseSub(dummy[i], ends[i]);
  }
}
}  // namespace

// Where the PSB+ of the PSB at `psb` ends (after its PSBEND), as the packet
// decoder reads it; kNoPsb if it does not decode to a PSBEND.
uint64_t FlowDecoder::PsbPlusEnd(uint64_t psb) const {
  PacketDecoder ahead = packets_;
  if (!ahead.SyncSet(psb).ok()) return kNoPsb;
  Packet p;
  for (int i = 0; i < 64 && ahead.Next(p) == 0; ++i)
    if (p.type == PacketType::kPsbEnd) return ahead.offset();
  return kNoPsb;
}

// The decoder's sub-interval of region `r` for position `at` (r.start <=
// at): moves r.cur to the last that starts at or before it, and returns
// whether `at` lies before its end (then clean_end_ is that end).
bool FlowDecoder::CleanSubAt(CleanRegion& r, uint64_t at) {
  if (r.nsub == 0) return false;
  if (r.cur >= r.nsub || r.sub[r.cur].start > at) r.cur = 0;
  while (r.cur + 1 < r.nsub && r.sub[r.cur + 1].start <= at) ++r.cur;
  const CleanSub& s = r.sub[r.cur];
  if (s.start > at || at >= s.end) return false;
  clean_end_ = s.end;
  return true;
}

// Makes the sub-interval of the clean stretch that holds the decoder's
// position the current one (clean_end_), verifying regions ahead if no
// region does, and returns whether the packets right after the position
// lie in it (QuietAfterTnt() holds there).
//
// The stretch is made of regions (clean_), in order, up to kCleanRegions:
// one from the decoder's position, and one from the end of each PSB+ after
// it (a packet boundary, PsbPlusEnd()), each up to the next PSB. A region
// holds the packets PacketDecoder::Next() takes on its fast path
// (internal::FastDecode(): PAD, CYC of up to 2 bytes, MTC, TSC, TNT-8, TIP,
// TIP.PGE, TIP.PGD, FUP with valid IPBytes), MODE.Exec and MODE.TSX,
// TNT-64 with a stop bit, OVF and CYCs of up to 8 bytes, with 9 bytes readable at each: the packet decoder
// decodes them all without error, and none is an MWAIT (whose event query
// fails at a TNT: CheckAhead()). It ends early at any other packet (MODE,
// the other 02h packets, an unknown opcode, ...; the last 8 bytes of the
// trace). Its MODEs split it into sub-intervals (kCleanReject: what
// libipt's read-ahead does past one depends on the flow's state), so a TNT
// is vouched for only if a stopper (kCleanStop: TNT-8, TNT-64, TIP, OVF; not
// FUP, past which the read-ahead goes on) follows it in its own sub-interval: the read-ahead after it
// then stops no later than that stopper, having decoded only packets of the
// region. A region that starts after a PSB+ is the decoder's only once it
// has read that PSB+ and come to its end (psb_at_, psb_end_: its packets
// then are the decoder's).
//
// It replaces the scan after each TNT (QuietAfterTnt()'s, CheckAhead()'s,
// EventQueryAfterTnt()'s), whose branches on packet types are as
// unpredictable as the packets; its regions' packets are checked in
// lockstep (RunCleanLanes()).
bool FlowDecoder::CleanAhead() {
  const uint64_t at = packets_.offset();
  // The commonest case first: the decoder moved on within the first region
  // (past a packet that split it).
  if (clean_regions_ != 0 && clean_[0].start <= at && at <= clean_[0].checked &&
      (clean_[0].psb == kNoPsb || (clean_[0].psb == psb_at_ && clean_[0].start == psb_end_))) {
    clean_end_ = 0;
    return CleanSubAt(clean_[0], at);
  }
  // The next PSB at or after `at`, if a region we have starts at or before
  // it and its next PSB is not behind it (no PSB between: FindPsbForward()
  // would find the same).
  bool next_known = false;
  uint64_t next_psb = kNoPsb;
  for (size_t i = 0; i < clean_regions_ && !next_known; ++i) {
    if (clean_[i].start <= at && (clean_[i].stop == kNoPsb || at <= clean_[i].stop)) {
      next_known = true;
      next_psb = clean_[i].stop;
    }
  }
  // The regions behind the decoder go; the next one is the decoder's if it
  // checked the packets at `at` and the decoder has come through its PSB+
  // — then it answers even if `at` is past the end of its sub-interval
  // (past its last stopper, before the packet it stopped at: a new region
  // from `at` would stop there too).
  size_t first = 0;
  while (first < clean_regions_ && clean_[first].checked < at) ++first;
  if (first < clean_regions_ && clean_[first].start <= at &&
      (clean_[first].psb == kNoPsb || (clean_[first].psb == psb_at_ && clean_[first].start == psb_end_))) {
    std::copy(clean_.begin() + first, clean_.begin() + clean_regions_, clean_.begin());
    clean_regions_ -= static_cast<uint32_t>(first);
    clean_end_ = 0;
    return CleanSubAt(clean_[0], at);
  }
  // (A region that should hold `at` but does not — the decoder came another
  // way — goes with those after it.)
  if (first < clean_regions_ && clean_[first].start <= at) first = clean_regions_;
  clean_end_ = 0;
  const std::span<const uint8_t> trace = packets_.trace();
  if (!packets_.synced() || packets_.block_item_bytes() != 0 || trace.size() < 9) return false;
  const uint8_t* const t = trace.data();
  const uint64_t last = trace.size() - 8;  // (9 bytes readable before it)
  // A new region from `at`, up to the next PSB (a kept region's, if any),
  // the kept regions, and regions after the next PSBs up to kCleanRegions.
  std::array<CleanRegion, kCleanRegions> regions;
  std::array<CleanLane, kCleanRegions> lanes;
  std::array<CleanSubs, kCleanRegions> subs;
  size_t n = 0, nlanes = 0;
  std::array<size_t, kCleanRegions> lane_of{};
  auto add = [&](uint64_t start, uint64_t psb) {
    const std::optional<uint64_t> next =
        start == at && next_known ? (next_psb == kNoPsb ? std::nullopt : std::optional<uint64_t>(next_psb))
                                  : FindPsbForward(trace, start);
    const uint64_t stop = next ? *next : kNoPsb;
    regions[n] = CleanRegion{.start = start, .checked = start, .psb = psb, .stop = stop};
    lanes[nlanes] = CleanLane{.off = start, .limit = std::min({last, start + kCleanMaxBytes, next ? *next : last})};
    lane_of[nlanes++] = n++;
  };
  add(at, kNoPsb);
  for (size_t i = first; i < clean_regions_ && n < kCleanRegions; ++i) regions[n++] = clean_[i];
  while (n < kCleanRegions && regions[n - 1].stop != kNoPsb) {
    const uint64_t psb = regions[n - 1].stop;
    const uint64_t start = PsbPlusEnd(psb);
    if (start == kNoPsb) break;
    add(start, psb);
  }
  for (size_t i = 0; i < nlanes; ++i) subs[i] = CleanSubs{&regions[lane_of[i]], lanes[i].off};
  RunCleanLanes(t, lanes.data(), subs.data(), nlanes);
  // (A region ends at its last stopper, not at the PSB after it: libipt's
  // read-ahead goes on through a PSB+ — the TNT before a PSB is CheckAhead()'s.)
  for (size_t i = 0; i < nlanes; ++i) regions[lane_of[i]].checked = lanes[i].off;
  std::copy(regions.begin(), regions.begin() + n, clean_.begin());
  clean_regions_ = static_cast<uint32_t>(n);
  return CleanSubAt(clean_[0], at);
}

// QuietAfterTnt() at an IP packet at `off` (no TIP.PGD before it): a FUP
// that no event waits for, with its IP — CheckAhead() looks past it
// (QuietPastFup()), EventQueryAfterTnt() stops at it. (Out of line: the
// loop above keeps its registers.)
__attribute__((noinline)) bool FlowDecoder::QuietAtFup(uint64_t off) const {
  const std::span<const uint8_t> trace = packets_.trace();
  const uint8_t b0 = trace[off], ipbytes = b0 >> 5;
  return (b0 & 0x1f) == 0x1d && fup_held_.empty() && QuietPastFup(trace, off, kFupSize[ipbytes], ipbytes);
}

// PeekAfterIp(): internal/flow_decoder_inline.h.

namespace {
// libipt's read-ahead after an event packet its event query decoded
// (pt_qry_event -> pt_qry_read_ahead): it decodes status packets (PAD,
// timing) and stops at the opcode of any other packet without decoding it.
// Returns the error it meets there — an unknown opcode, a bad status
// packet — with its offset in *at, or 0 (the end of the trace, or a packet
// cut off by it, is -pte_eos: no error of the query).
int ReadAheadPastEvent(PacketDecoder ahead, uint64_t* at) {
  for (;;) {
    Packet r;
    const int err = ahead.Next(r);
    if (err == ENODATA || err == EMSGSIZE) return 0;
    if (err != 0) {
      *at = ahead.offset();
      return err == EILSEQ || internal::OpensReadAheadStatus(ahead.trace(), *at) ? err : 0;
    }
    if (!internal::IsReadAheadStatus(r.type)) return 0;
  }
}
}  // namespace

int FlowDecoder::ReadAheadPastEventPacket() {
  uint64_t at = 0;
  const int e = ReadAheadPastEvent(packets_, &at);
  if (e == 0) return 0;
  error_offset_ = at;
  error_ip_ = ip_;
  error_message_ = fmt::format("{} at offset {:#x} (read ahead after the {} at {:#x})",
                               PacketDecoder::ErrorDescription(e), at, ctl_ == Ctl::kTipPge ? "TIP.PGE" : "TIP.PGD",
                               ctl_offset_);
  return e;
}


// FetchControl() after an IP packet failed with `err` at error_offset_:
// whether libipt, which reads ahead after a TIP only through PAD, timing
// and PSB+ packets to the next TNT/TIP/event packet, meets the error now
// (then it fails the branch that took the IP) or only when a later query
// decodes that packet (then the error waits for the next branch that needs
// a packet: sticky_error_).
__attribute__((noinline, cold)) int FlowDecoder::ReadAheadError(uint64_t start, int err) {
  if (event_query_failed_) {  // (not a packet error: the event query right after the read-ahead)
    event_query_failed_ = false;
    // Behind an event libipt holds for an IP the flow has not reached, its
    // instruction decoder asks for the next event only once the flow gets
    // there (pt_insn_check_ip_event): the query fails then, not now — here,
    // when the flow next needs a packet (as a packet error read ahead).
    if (!bound_pending_) return err;
    sticky_error_ = err;
    return 0;
  }
  PacketDecoder ahead = packets_;
  if (!ahead.SyncSet(start).ok()) return err;
  uint64_t window_end = packets_.trace().size();
  bool in_psb = false;
  bool after_event = false;
  for (;;) {
    Packet q;
    const int e = ahead.Next(q);
    if (e != 0) {
      if (e != ENODATA && after_event) {
        window_end = ahead.offset() + 1;
      } else if (e != ENODATA && ReadAheadStopsAt(packets_.trace(), ahead.offset()) && !in_psb) {
        window_end = ahead.offset();
      }
      break;
    }
    if (q.type == PacketType::kPsb) {
      in_psb = true;
      continue;
    }
    if (in_psb) {
      if (q.type == PacketType::kPsbEnd) {
        // libipt's read-ahead goes on past the PSBEND — at once if the
        // PSB+ has no events, else in the event query for its last one,
        // asked for at once unless an event bound to an IP the flow has not
        // reached is held (pt_qry_decode_psbend, pt_qry_event) — through
        // status packets to the next TNT, TIP or event packet.
        if (bound_pending_) {
          window_end = q.offset;
          break;
        }
        in_psb = false;
      }
      continue;
    }
    switch (q.type) {
      case PacketType::kPad: case PacketType::kCyc: case PacketType::kMtc: case PacketType::kTsc:
      case PacketType::kTma: case PacketType::kCbr: case PacketType::kMnt: case PacketType::kFup:
        if (after_event) {
          window_end = q.offset;
          break;
        }
        continue;
      // A standalone event packet ends the read-ahead, but pt_insn_next asks
      // for its event at once (pts_event_pending), and pt_qry_event fetches
      // the packet after each event packet it decodes (pt_df_fetch): an
      // unknown or malformed packet right there fails now, before the next
      // instruction.
      case PacketType::kPip: case PacketType::kVmcs: case PacketType::kTraceStop: case PacketType::kMwait:
      case PacketType::kPwre: case PacketType::kPwrx:
        after_event = true;
        continue;
      case PacketType::kModeExec:
        // A MODE.Exec makes no event until its TIP: its event query, asked
        // for at once unless an event is held, decodes on through status
        // packets, FUPs and further MODE.Execs (NextPastModeQuery()), so an
        // error there fails now — up to the next packet that ends it.
        if (after_event || bound_pending_) {
          window_end = q.offset;
          break;
        }
        for (;;) {
          Packet r;
          const int e2 = ahead.Next(r);
          if (e2 != 0) {
            if (e2 != ENODATA && ReadAheadStopsAt(packets_.trace(), ahead.offset())) window_end = ahead.offset();
            break;
          }
          if (internal::IsReadAheadStatus(r.type) || r.type == PacketType::kFup || r.type == PacketType::kModeExec)
            continue;
          window_end = r.offset;
          break;
        }
        break;
      default:
        window_end = q.offset;
        break;
    }
    break;
  }
  if (error_offset_ < window_end) return err;
  sticky_error_ = err;
  if (options_.libipt_errors) DropEventsEndingAt(error_offset_);
  return 0;
}

// The packet the event query for a MODE.Exec (or for a PIP or VMCS while
// an asynchronous FUP waits: `fup_waiting`) stops at, after that packet:
// libipt asks for the event as soon as its read-ahead stops at the packet,
// and pt_qry_event decodes on while the packets make no event — the
// exec-mode (async-paging, async-vmcs) event waits on evb_tip — through PAD
// and timing, FUPs with an IP (each queues an asynchronous branch on
// evb_tip: pt_qry_decode_fup), further MODE.Execs, and PIPs and VMCSs once
// a FUP waits (pt_qry_decode_pip, _vmcs), up to a packet that gives it an
// event or fails it: a TNT there is -pte_bad_query. 0 and that packet in
// *q, or a packet error.
int FlowDecoder::NextPastModeQuery(Packet* q, bool fup_waiting) const {
  PacketDecoder ahead = packets_;
  int err;
  while ((err = ahead.Next(*q)) == 0) {
    if (internal::IsReadAheadStatus(q->type) || q->type == PacketType::kModeExec) continue;
    if (q->type == PacketType::kFup && q->ipbytes() != 0 && fup_held_.empty()) {
      fup_waiting = true;
      continue;
    }
    if ((q->type == PacketType::kPip || q->type == PacketType::kVmcs) && fup_waiting) continue;
    break;
  }
  return err;
}

// An asynchronous FUP that finds libipt's queue for the next TIP full
// (pt_qry_decode_fup -> pt_evq_enqueue: -pte_nomem, in the read-ahead that
// decodes it): EBADMSG at the FUP.
int FlowDecoder::FailTipQueueFull(const Packet& fup) {
  const int err = Fail(EBADMSG, fmt::format("{} at {:#x}: the {}th event waiting for a TIP (libipt's event queue "
                                            "holds {})", PacketName(fup.type), fup.offset, kTipQueueMax + 1,
                                            kTipQueueMax));
  error_offset_ = fup.offset;
  return err;
}

// The PIPs and VMCSs read after the asynchronous FUP whose branch (or
// disable) was just taken and before the next FUP: libipt hands out their
// async-paging/-vmcs events next, at the TIP's IP (where the flow is), or
// with the IP suppressed for a TIP.PGD (pt_qry_event_tip, _tip_pgd) — and
// a MODE.Exec read among them (mode_at_ 1) in its place.
void FlowDecoder::ReleaseTipStatus(bool ip_suppressed) {
  const bool mode_here = mode_pending_ && mode_at_ == 1;
  size_t kept = 0, released = 0;
  for (size_t i = 0; i < tip_status_.size(); ++i) {
    if (mode_here && i == mode_status_) ApplyPendingMode(ip_suppressed);
    auto [fups, e] = tip_status_[i];
    if (--fups != 0) {
      tip_status_[kept++] = {fups, e};
      continue;
    }
    e.ip_suppressed = ip_suppressed;
    e.ip = ip_suppressed ? 0 : ip_;
    events_.push_back(e);
    ++released;
  }
  tip_status_.resize(kept);
  if (mode_here) {
    ApplyPendingMode(ip_suppressed);  // (after them all)
  } else if (mode_pending_) {
    mode_status_ -= std::min(mode_status_, released);
  }
}

// Whether the held control packet cannot be what a near branch (conditional,
// return, near indirect) needs, as libipt's pt_insn_next binds events:
//   - an asynchronous FUP+TIP/TIP.PGD belongs to its FUP IP, not to a branch
//     before it;
//   - a TIP.PGD without an IP (and no address filter, as perf configures
//     none for libipt) binds only to far transfers (pt_insn_at_disabled_event:
//     far branch, CPL or CR3 change).
// libipt then answers the branch's query from the packets after it
// (BeyondControl).
bool FlowDecoder::UnboundControl() const {
  return IsAsync(ctl_) || (ctl_ == Ctl::kTipPgd && ctl_suppressed_);
}


// Where libipt's read-ahead from the decoder's position ends: 0 at a packet
// it stops at (TNT, TIP, an event packet, ...), ENODATA at the end of the
// trace, EMSGSIZE at a packet cut off by the end (*at: its offset; libipt
// reads -pte_eos there unless it stops at that packet: ReadAheadStopsAt),
// else the error of an unknown opcode or a bad status packet on the way
// (*at), which libipt's read-ahead returns.
int FlowDecoder::ReadAheadEnd(uint64_t* at) const {
  if (have_unread_ && !internal::IsReadAheadStatus(unread_.type)) return 0;
  PacketDecoder ahead = packets_;
  for (;;) {
    Packet q;
    const int err = ahead.Next(q);
    if (err == ENODATA) return ENODATA;
    if (err != 0) {
      *at = ahead.offset();
      return err == EMSGSIZE || err == EILSEQ || internal::OpensReadAheadStatus(packets_.trace(), *at) ? err : 0;
    }
    if (!internal::IsReadAheadStatus(q.type)) return 0;
  }
}

// ReadAheadEnd() as libipt's status flags see it after an event or a PSB+
// (pt_qry_will_eos): ENODATA if the read-ahead reached the end of the trace
// (pts_eos), the packet error it met (*at), else 0.
int FlowDecoder::ReadAheadEos(uint64_t* at) const {
  const int end = ReadAheadEnd(at);
  if (end == EMSGSIZE) return ReadAheadStopsAt(packets_.trace(), *at) ? 0 : ENODATA;
  return end;
}

// A branch whose packet would come after the held, unbound control packet:
// the end of the trace if only PAD and timing packets follow (libipt:
// -pte_eos), else the trace does not fit (-pte_bad_query).
__attribute__((noinline, cold)) int FlowDecoder::BeyondControl(const Insn& x) {
  uint64_t at = 0;
  // (Another asynchronous FUP, a MODE.Exec, PIP or VMCS waits for the same
  // TIP: libipt's TIP stays, and the branch's query meets it.)
  const int end = have_unread_ || (IsAsync(ctl_) && (!fups_behind_.empty() || mode_pending_ || !tip_status_.empty() || AsyncHeldBack())) ? 0 : ReadAheadEnd(&at);
  // A packet cut by the end that libipt's read-ahead stops at by its opcode
  // (pt_df_fetch) is the branch's query's: a TIP.PGE or TIP.PGD is an event
  // ahead (pt_qry_will_event), a TIP one that no TNT query takes
  // (pt_qry_cache_tnt): -pte_bad_query, before their IP bytes are read; a
  // TIP an indirect branch or a return takes is decoded (-pte_eos).
  const uint8_t cut = end == EMSGSIZE ? packets_.trace()[at] & 0x1f : 0;
  const bool cut_bad = cut == 0x11 || cut == 0x01 || (cut == 0x0d && x.branch == BranchClass::kCondJump);
  if (end == ENODATA || (end == EMSGSIZE && !cut_bad))
    return Fail(ENODATA, fmt::format("{} at {:#x}: the trace ends after the {} at {:#x}", BranchClassName(x.branch),
                                     x.ip, IsAsync(ctl_) ? "FUP" : "TIP.PGD", ctl_offset_));
  return Fail(EBADMSG, IsAsync(ctl_)
                           ? fmt::format("{} at {:#x}: the FUP at {:#x} (IP {:#x}) is never reached",
                                         BranchClassName(x.branch), x.ip, ctl_offset_, ctl_from_)
                           : fmt::format("{} at {:#x}: no packet (the TIP.PGD at {:#x} without an IP binds "
                                         "to far transfers only)", BranchClassName(x.branch), x.ip, ctl_offset_));
}

}  // namespace perftest::pt
