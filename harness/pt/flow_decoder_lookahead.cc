// FlowDecoder: libipt's read-ahead rules (see flow_decoder.cc for the file
// layout) — when a packet error, or a control packet that binds elsewhere,
// fails the branch being resolved, and when it waits for a later query.
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "harness/pt/flow_decoder.h"
#include "harness/pt/internal/flow_decoder_inline.h"
#include "harness/pt/internal/opcodes.h"

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
// EventQueryAfterTnt() find nothing, as seen from first bytes alone: CYCs of
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

bool FlowDecoder::QuietAfterTnt() const {
  if (have_unread_) return true;  // (both return 0 at once)
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
