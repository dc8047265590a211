// FlowDecoder: packets to flow state (see flow_decoder.cc for the file
// layout). FetchControl() reads up to the next TNT or control packet,
// queueing the events and timing met on the way.
#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <span>

#include <fmt/format.h>

#include "harness/pt/flow_decoder.h"
#include "harness/pt/internal/flow_decoder_inline.h"

namespace perftest::pt {
using internal::IsReadAheadStatus;
using internal::StatusEvent;

// The event a PIP, VMCS or CBR packet reports, bound to no IP: the same
// inside a PSB+ and in the stream.
FlowEvent internal::StatusEvent(const Packet& p) {
  switch (p.type) {
    case PacketType::kPip:
      return FlowEvent{.type = FlowEvent::Type::kPaging, .ip_suppressed = true, .payload = p.cr3(), .offset = p.offset};
    case PacketType::kVmcs:
      return FlowEvent{.type = FlowEvent::Type::kVmcs, .ip_suppressed = true, .payload = p.vmcs_base(),
                       .offset = p.offset};
    default:  // kCbr
      return FlowEvent{.type = FlowEvent::Type::kCbr, .ip_suppressed = true, .payload = p.cbr(), .offset = p.offset};
  }
}

// Whether the bytes at `at` open a packet libipt's read-ahead takes for an
// event packet by its opcode alone (pt_df_fetch; pdff_event): TIP.PGE,
// TIP.PGD, MODE, and the 02h packets PIP, OVF, CBR, TraceStop, VMCS, MNT,
// EXSTOP, MWAIT, PWRE, PWRX, PTW — a TIP too if `tip_bound` (an event waits
// for it), a FUP if `fup_bound`. (For a packet cut by the end of the trace:
// libipt's instruction decoder asks for that event, whose decode fails.)
bool internal::OpensEventPacket(std::span<const uint8_t> trace, uint64_t at, bool tip_bound, bool fup_bound) {
  if (at >= trace.size()) return false;
  const uint8_t b0 = trace[at], op = b0 & 0x1f;
  if (op == 0x11 || op == 0x01 || b0 == 0x99) return true;  // TIP.PGE, TIP.PGD, MODE
  if (op == 0x0d) return tip_bound;
  if (op == 0x1d) return fup_bound;
  if (b0 != 0x02 || at + 1 >= trace.size()) return false;
  switch (const uint8_t e = trace[at + 1]) {
    case 0x43: case 0xf3: case 0x03: case 0x83: case 0xc8: case 0xc3: case 0x62: case 0xe2: case 0xc2: case 0x22:
    case 0xa2:
      return true;
    default:
      return (e & 0x1f) == 0x12;  // PTW
  }
}

namespace {
// The packet at `at`, cut by the end of the trace, as libipt's read-ahead
// knows it, by its opcode alone (pt_df_fetch): a TIP or a TNT-64 (type and
// offset only), else kInvalid. Its event query fails at such a packet before
// it decodes it (NoEventFor(): -pte_bad_query), not with the -pte_eos of
// its cut payload.
Packet CutPacket(std::span<const uint8_t> trace, uint64_t at) {
  Packet q;
  q.offset = at;
  if (at < trace.size() && (trace[at] & 0x1f) == 0x0d) {
    q.type = PacketType::kTip;
  } else if (at + 1 < trace.size() && trace[at] == 0x02 && trace[at + 1] == 0xa3) {
    q.type = PacketType::kTnt64;
  }
  return q;
}
}  // namespace

void FlowDecoder::Queue(const FlowEvent& e) {
  // (Options::libipt_errors: an event whose packet the bad one follows is lost.)
  if (sticky_error_ != 0 && options_.libipt_errors && EventPacketBefore(e.offset, error_at_)) [[unlikely]] return;
  if (!later_.empty()) [[unlikely]] {
    later_.push_back({kAtNone, e});
    later_.back().event.time = time_;
    return;
  }
  events_.push_back(e);
  events_.back().time = time_;
}

void FlowDecoder::QueueAt(const FlowEvent& e, uint64_t ip) {
  if (later_.empty() && (!enabled_ || ip == ip_)) {  // (nothing to wait for)
    Queue(e);
    return;
  }
  later_.push_back({ip, e});
  later_.back().event.time = time_;
}

// A PTW's event, its PTWRITE held for (NoteEventHeld): it waits in later_
// for that instruction, and goes right after it (libipt reports the PTWRITE,
// then the event with its IP). Returns false if it is not held (tracing
// disabled): then it is queued as it is.
bool FlowDecoder::HoldPtwEvent(const FlowEvent& e) {
  if (!enabled_ || bound_.empty() || !bound_.back().ptwrite) return false;
  later_.push_back({kAtPtwrite, e});
  later_.back().event.time = time_;
  return true;
}

void FlowDecoder::ReleaseLater(bool all) {
  size_t n = 0, ready = 0;
  for (; n < later_.size(); ++n) {
    Later& l = later_[n];
    if (all || l.at == kAtNone || l.at == ip_) continue;
    if (l.at == kAtPtwrite && ready < ptw_ready_.size()) {
      l.event.ip = ptw_ready_[ready++];
      l.event.ip_suppressed = false;
      continue;
    }
    break;
  }
  for (size_t k = 0; k < n; ++k) events_.push_back(later_[k].event);
  later_.erase(later_.begin(), later_.begin() + static_cast<long>(n));
  ptw_ready_.erase(ptw_ready_.begin(), ptw_ready_.begin() + static_cast<long>(all ? ptw_ready_.size() : ready));
}

// The FUP `fup` (last_ip_ updated by it) for the events held for the next
// FUP (fup_held_): libipt's pt_qry_decode_fup gives each, in order, the
// FUP's IP — none for a FUP without one (pt_qry_event_ip: the event's IP
// suppressed) — and consumes the FUP with the last, unless only a MODE.TSX
// with TXAbort waited (pt_qry_event_fup: the abort leaves the FUP to be
// decoded again, as the asynchronous branch's). Returns whether an event
// consumed the FUP.
bool FlowDecoder::TakeFupHeld(const Packet& fup) {
  const bool bound = fup.ipbytes() != 0;
  bool consumed = false;
  for (FlowEvent e : fup_held_) {
    e.ip_suppressed = !bound;
    e.ip = bound ? last_ip_.raw() : 0;
    if (e.type == FlowEvent::Type::kCfe || e.type == FlowEvent::Type::kEvd) {
      // (Its FUP is an asynchronous one: the event goes with its branch.)
      if (e.type == FlowEvent::Type::kEvd) e.ip_suppressed = true, e.ip = 0;
      cfe_held_.push_back(e);
      continue;
    }
    if (e.type == FlowEvent::Type::kPtwrite) {
      // Held until the flow gets to the PTWRITE at its IP — without an
      // IP, to the next PTWRITE (pt_insn_check_insn_event).
      NoteEventHeld(bound, e.ip, true);
      if (HoldPtwEvent(e)) {
        consumed = true;  // (a PTW's FUP is its own)
        continue;
      }
    } else {
      NoteEvent(bound, e.ip);
    }
    // (A TSX abort's FUP, and a CFE's, is also the FUP of the asynchronous
    // branch that follows.)
    consumed |= !((e.type == FlowEvent::Type::kTsx && (e.payload & 2) != 0) || e.type == FlowEvent::Type::kCfe);
    if (bound && e.type != FlowEvent::Type::kPtwrite) {
      QueueAt(e, e.ip);  // (reported where the flow gets to its IP)
    } else {
      Queue(e);
    }
  }
  fup_held_.clear();
  return consumed;
}

// CFE, EVD and TRIG (SDM §33.4.2.29 "Control Flow Event (CFE) Packet",
// §33.4.2.30 "Event Data (EVD) Packet", "TRIG Packet"). A CFE or TRIG with
// its IP bit set is followed by a FUP with the IP of the event: it waits in
// fup_held_ for it (TakeFupHeld()). The CFE's FUP goes on to be the FUP of
// the control transfer it announces (an interrupt's FUP+TIP; libipt 2.1+
// binds the CFE event to that FUP and still makes the asynchronous branch of
// it): the CFE's event goes right before that branch (cfe_held_), at the
// instruction the interrupt stopped. The TRIG's FUP is its own (the anchor
// its ICNT counts from). An EVD adds data to the CFE that follows it (libipt
// 2.1+ merges them into one event; here it is its own event, right before
// the CFE's): it waits for it (evd_held_). Any other is an event where it is
// read, as PWRE.
int FlowDecoder::TakeEventTracePacket(const Packet& p) {
  FlowEvent e{.ip_suppressed = true, .offset = p.offset};
  bool want_ip = false;
  if (p.type == PacketType::kCfe) {
    e.type = FlowEvent::Type::kCfe;
    e.payload = p.cfe_type() | (uint64_t{p.cfe_vector()} << 8);
    want_ip = p.cfe_ip();
  } else if (p.type == PacketType::kEvd) {
    e.type = FlowEvent::Type::kEvd;
    e.payload = p.evd_payload();
    e.evd_type = p.evd_type();
    evd_held_.push_back(e);
    return 0;
  } else {
    e.type = FlowEvent::Type::kTrig;
    e.payload = p.trig_trbv() | (uint64_t{p.trig_icnt()} << 8) | (uint64_t{p.trig_mult()} << 24) |
                (uint64_t{p.trig_icntv()} << 25);
    want_ip = p.trig_ip();
  }
  if (e.type == FlowEvent::Type::kCfe) {
    // Its EVDs first, wherever it goes.
    if (want_ip) {
      fup_held_.insert(fup_held_.end(), evd_held_.begin(), evd_held_.end());
    } else {
      for (const FlowEvent& d : evd_held_) {
        NoteEvent(false, 0);
        Queue(d);
      }
    }
    evd_held_.clear();
  }
  if (want_ip) {
    fup_held_.push_back(e);
    return 0;
  }
  NoteEvent(false, 0);
  Queue(e);
  return 0;
}

// The CFE events held for an asynchronous FUP (and the EVDs before them),
// now that the flow is at its IP: queued before its branch's event.
void FlowDecoder::QueueEventTraceHeld() {
  if (cfe_held_.empty()) [[likely]] return;
  for (const FlowEvent& e : cfe_held_) Queue(e);
  cfe_held_.clear();
}

// CYC (Timing() for the most frequent timing packet, inline).
inline void FlowDecoder::TimingCyc(const Packet& p) {
  // (The common CYC of one or two bytes: opcode[7:3], then bits 7:1 of the
  // one extension byte — Packet::cyc() without its general unpacking.)
  AddCycles(p.payload < 0x100 ? (uint64_t{p.opcode} >> 3) | ((p.payload >> 1) << 5) : p.cyc());
}

void FlowDecoder::Timing(const Packet& p) {
  switch (p.type) {
    case PacketType::kTsc:
      TimingTsc(p.tsc());
      break;
    case PacketType::kTma:
      last_mtc_ctc_ = p.tma_ctc();
      have_tma_ = true;
      break;
    case PacketType::kMtc:
      TimingMtc(p.mtc_ctc());
      break;
    case PacketType::kCyc:
      TimingCyc(p);
      break;
    case PacketType::kCbr:
      time_.cbr = p.cbr();
      break;
    default:
      break;
  }
}

// A TMA: libipt's time update takes it only after a TSC (since the sync),
// one per TSC — else -pte_bad_context (pt_time_update_tma, through
// pt_qry_apply_tma, which passes on any error but a configuration one),
// failing the query that decodes it: the PSB+ (the sync, or the read-ahead
// into a mid-flow PSB+), or the read-ahead after a TNT or TIP. `tsc_before`:
// a TSC came before it in the same PSB+; else (a TSC read elsewhere, by the
// fast path, goes uncounted) the last TSC must differ from the one the last
// TMA, or the sync, saw (tma_tsc_). EBADMSG at the TMA, or 0 (the TMA
// taken as timing).
int FlowDecoder::TakeTma(const Packet& p, bool tsc_before) {
  if (!tsc_before && tsc_base_ == tma_tsc_) [[unlikely]] {
    const int err = Fail(EBADMSG, fmt::format("TMA at {:#x} without a TSC of its own (none since the sync, or one "
                                              "that had its TMA)", p.offset));
    error_offset_ = p.offset;
    return err;
  }
  tma_tsc_ = tsc_base_;
  Timing(p);
  return 0;
}

// A TNT packet read by FetchControl(): its bits are at hand.
inline int FlowDecoder::TakeTnt(const Packet& p) {
  return TakeTntField(p.type == PacketType::kTnt8 ? uint64_t{p.opcode} >> 1 : p.payload);
}

// A TIP, TIP.PGE or TIP.PGD read by FetchControl(): the control packet held.
inline __attribute__((always_inline)) int FlowDecoder::TakeIpControl(const Packet& p) {
  return TakeIpControl(p.type, p.ipbytes(), p.payload, p.offset);
}

// FetchControl() (internal/flow_decoder_inline.h) past the packets it takes
// from their bytes: the packets of the fast path (CYC, MTC, TSC, TNT, TIP,
// TIP.PGE, TIP.PGD) are taken here; any other goes back (Unread()) to
// FetchControlRest(), which takes every packet — two functions, so that
// this one keeps few registers.
int FlowDecoder::FetchControlPackets() {
  Packet p;  // (out of the loop: ReadPacket() writes all of it; no zeroing per packet)
  for (;;) {
    if (const int err = ReadPacket(&p)) return err;
    switch (p.type) {
      case PacketType::kCyc:
        TimingCyc(p);
        continue;
      case PacketType::kMtc:
      case PacketType::kTsc:
        Timing(p);
        continue;
      case PacketType::kTnt8:
      case PacketType::kTnt64:
        return TakeTnt(p);
      case PacketType::kTip:
      case PacketType::kTipPge:
      case PacketType::kTipPgd:
        return TakeIpControl(p);
      default:
        Unread(p);
        return FetchControlRest();
    }
  }
}

int FlowDecoder::FetchControlRest() {
  Packet p;
  for (;;) {
    if (const int err = ReadPacket(&p)) return err;
    switch (p.type) {
      case PacketType::kTnt8:
      case PacketType::kTnt64:
        return TakeTnt(p);
      case PacketType::kTip:
        if (mode_pending_) [[unlikely]] {
          // The TIP a MODE.Exec binds to: libipt's exec-mode event carries
          // the TIP's IP, and goes when the flow is there
          // (pt_qry_decode_tip -> pt_qry_event_tip: the TIP stays for the
          // branch; pt_insn_check_ip_event) — now, if the flow is already
          // there (say, a compressed return to the TIP's target), before
          // the branch that takes the TIP.
          const int err = TakeIpControl(p);
          if (err == 0 && mode_at_ == 0 && !fup_pending_ && !ctl_suppressed_ && ctl_ip_ == ip_ && enabled_ &&
              !bound_pending_)
            ApplyPendingMode();
          return err;
        }
        return TakeIpControl(p);
      case PacketType::kTipPge:
      case PacketType::kTipPgd:
        return TakeIpControl(p);
      case PacketType::kFup: {
        if (!last_ip_.UpdateInline(p.ipbytes(), p.payload)) return Fail(EBADMSG, "bad FUP");
        // The FUP events wait for (libipt pt_qry_decode_fup: the events on
        // evb_fup take it first): no asynchronous event, unless only an
        // aborted MODE.TSX waited.
        if (!fup_held_.empty() && TakeFupHeld(p)) [[unlikely]] break;
        if (p.ipbytes() == 0) {
          // The error is at the FUP, as libipt's (-pte_ip_suppressed):
          // inside the read-ahead window after a TIP, it fails the branch
          // that took it.
          const int err = Fail(EBADMSG, fmt::format("FUP at {:#x} without an IP", p.offset));
          error_offset_ = p.offset;
          return err;
        }
        // (While an earlier one waits, the TIP binds to that first: libipt
        // queues both on evb_tip, and keeps the TIP for this one.)
        if (fup_pending_) {
          fups_behind_.push_back(last_ip_.raw());
          if (TipQueueFull()) return FailTipQueueFull(p);
        }
        if (!fup_pending_) {
          ctl_from_ = last_ip_.raw();
          ctl_offset_ = p.offset;
        }
        // The packet that says what happened there: TIP (interrupt,
        // exception) or TIP.PGD (tracing stopped).
        for (;;) {
          Packet q;
          if (const int err = ReadPacket(&q)) {
            fup_cut_ = true;  // (its TIP, if that is the packet cut, binds to it)
            return err;
          }
          if (q.type == PacketType::kTip || q.type == PacketType::kTipPgd) {
            if (!last_ip_.UpdateInline(q.ipbytes(), q.payload)) return Fail(EBADMSG, "bad IP packet");
            ctl_ = q.type == PacketType::kTip ? Ctl::kAsync : Ctl::kAsyncDisable;
            fup_pending_ = false;
            ctl_suppressed_ = q.ipbytes() == 0;
            ctl_ip_ = last_ip_.raw();
            steps_without_packet_ = 0;
            NoteEvent(false, 0);
            return 0;
          }
          if (q.type == PacketType::kModeExec) {
            mode_pending_ = true;
            pending_mode_ = q.exec_mode();
            pending_mode_offset_ = q.offset;
            mode_at_ = static_cast<uint32_t>(fups_behind_.size()) + 1;
            mode_status_ = tip_status_.size();
            // (Its event query meets a TNT first: as the case below.)
            if (Packet r; enabled_ && NextPastModeQuery(&r, true) == 0 &&
                          (r.type == PacketType::kTnt8 || r.type == PacketType::kTnt64))
              return FailEventQuery(q, r, "its TIP");
            continue;
          }
          if (q.type == PacketType::kTma) {
            if (const int err = TakeTma(q, false)) return err;
            continue;
          }
          if (q.type == PacketType::kTsc || q.type == PacketType::kMtc || q.type == PacketType::kCyc ||
              q.type == PacketType::kPad) {
            Timing(q);
            continue;
          }
          if (q.type == PacketType::kFup && q.ipbytes() != 0) {
            // Another one: libipt queues it behind the first on evb_tip.
            if (!last_ip_.UpdateInline(q.ipbytes(), q.payload)) return Fail(EBADMSG, "bad FUP");
            fups_behind_.push_back(last_ip_.raw());
            if (TipQueueFull()) return FailTipQueueFull(q);
            continue;
          }
          // A TIP.PGE is an event packet: libipt's read-ahead stops there,
          // and the event query hands it the asynchronous branch waiting on
          // evb_tip, which it rejects (pt_qry_decode_tip_pge,
          // pt_qry_event_tip_pge: -pte_bad_context) — at once, failing the
          // branch before (or, behind a held event, later: ReadAheadError()).
          if (q.type == PacketType::kTipPge) return FailEventQuery(p, q, "TIP or TIP.PGD");
          if (q.type == PacketType::kFup)
            return Fail(EBADMSG, fmt::format("FUP at {:#x} followed by {} at {:#x}, not TIP or TIP.PGD", p.offset,
                                             PacketName(q.type), q.offset));
          // An OVF (libipt's event query for it drops the waiting
          // asynchronous branches with its event queue: pt_qry_decode_ovf,
          // before the flow goes on at the TIP before: kOvf below), an
          // event packet, or a PSB+ (libipt's read-ahead decodes the PSB
          // and its header without touching the queued asynchronous branch:
          // pt_qry_decode_psb), or a TNT (libipt's read-ahead decoded the
          // FUP, nothing waiting for one: the branches take the TNT's bits,
          // and the event shows once they are used): as libipt (the FUP's
          // event waits, bound to the next TIP/TIP.PGD), handle it and keep
          // waiting.
          Unread(q);
          fup_pending_ = true;
          break;
        }
        continue;
      }
      case PacketType::kModeExec:
        mode_pending_ = true;
        pending_mode_ = p.exec_mode();
        pending_mode_offset_ = p.offset;
        mode_at_ = fup_pending_ ? static_cast<uint32_t>(fups_behind_.size()) + 1 : 0;
        mode_status_ = tip_status_.size();
        NoteEvent(false, 0);  // (libipt: an event, bound to the next TIP)
        if (enabled_ && !have_unread_) {
          // libipt asks for the event as soon as its read-ahead stops at
          // the MODE.Exec: pt_qry_event reads on (through PAD and timing)
          // to the TIP it binds to, and a TNT first is -pte_bad_query.
          Packet q;
          const int end = NextPastModeQuery(&q, fup_pending_);
          if (end == 0 && (q.type == PacketType::kTnt8 || q.type == PacketType::kTnt64))
            return FailEventQuery(p, q, "its TIP");
          if (end == ENODATA) {
            // It reads to the end of the trace (-pte_eos): the flow ends
            // before the next instruction.
            const int err = Fail(ENODATA, fmt::format("MODE.Exec at {:#x}: the trace ends before its TIP", p.offset));
            event_query_failed_ = true;
            return err;
          }
        }
        break;
      case PacketType::kModeTsx:
      case PacketType::kPtw:
      case PacketType::kExStop: {
        FlowEvent e;
        e.offset = p.offset;
        e.ip_suppressed = true;
        bool want_ip = false;
        if (p.type == PacketType::kModeTsx) {
          e.type = FlowEvent::Type::kTsx;
          e.payload = p.payload & 3;
          want_ip = enabled_;  // (while disabled, an event of its own: pt_qry_decode_mode_tsx)
        } else if (p.type == PacketType::kPtw) {
          e.type = FlowEvent::Type::kPtwrite;
          e.payload = p.ptw_payload();
          e.payload_bytes = static_cast<uint8_t>(p.ptw_payload_bytes());
          want_ip = p.ptw_ip();
        } else {
          e.type = FlowEvent::Type::kExStop;
          want_ip = p.exstop_ip();
        }
        if (want_ip) {
          // The FUP that gives the IP (SDM §33.4.2.8, .21, .22): libipt
          // queues the event for the next FUP, whatever comes first
          // (pt_qry_decode_mode_tsx, _ptw, _exstop: evb_fup; TakeFupHeld()),
          // and asks for it as soon as its read-ahead stops at this packet:
          // pt_qry_event decodes on through PAD and timing packets, and a
          // TNT or a TIP that no event binds to there is -pte_bad_query.
          Packet q;
          for (;;) {
            if (const int err = ReadPacket(&q)) {
              // (An unknown opcode there fails the query at once; so does a
              // TIP or TNT-64 cut by the end, known by its opcode.)
              if (enabled_ && err == EILSEQ) event_query_failed_ = true;
              if (const Packet cut = CutPacket(packets_.trace(), error_offset_);
                  enabled_ && err == EMSGSIZE && NoEventFor(cut))
                return FailEventQuery(p, cut, "its FUP");
              return err;
            }
            if (!IsReadAheadStatus(q.type)) break;
            if (q.type == PacketType::kTma) {
              if (const int err = TakeTma(q, false)) return err;
              continue;
            }
            Timing(q);
          }
          if (enabled_ && NoEventFor(q)) return FailEventQuery(p, q, "its FUP");
          Unread(q);
          fup_held_.push_back(e);
          break;
        }
        if (e.type == FlowEvent::Type::kPtwrite) {
          // Held until the flow gets to the next PTWRITE (pt_insn_check_insn_event).
          NoteEventHeld(false, 0, true);
          if (HoldPtwEvent(e)) break;
        } else {
          NoteEvent(false, 0);
        }
        Queue(e);
        break;
      }
      case PacketType::kOvf: {
        // Flow lost. A FUP follows with the IP where tracing resumed, or
        // (tracing off when the overflow resolved) nothing of the kind.
        tnt_count_ = 0;
        ctl_offset_ = p.offset;
        last_ip_.Reset();  // as libipt: no IP compression across an overflow
        // libipt's query decoder resets its state here, its event queue
        // included (pt_qry_decode_ovf -> pt_qry_reset -> pt_evq_init): an
        // event still waiting for the packet it binds to is dropped: an
        // MWAIT waiting for a FUP (the next FUP is an asynchronous one
        // again), a MODE.Exec waiting for its TIP, an asynchronous FUP
        // waiting for its TIP or TIP.PGD.
        fup_held_.clear();
        mode_pending_ = false;
        fup_pending_ = false;
        fups_behind_.clear();
        tip_status_.clear();
        Packet q;
        for (;;) {
          if (const int err = ReadPacket(&q)) {
            if (err != ENODATA) return err;
            q.type = PacketType::kInvalid;
            break;
          }
          if (q.type == PacketType::kTma) {
            if (const int err = TakeTma(q, false)) return err;
            continue;
          }
          if (q.type == PacketType::kCyc || q.type == PacketType::kMtc || q.type == PacketType::kTsc ||
              q.type == PacketType::kPad || q.type == PacketType::kCbr) {
            Timing(q);
            continue;
          }
          break;
        }
        ctl_ = Ctl::kOverflow;
        NoteEvent(false, 0);
        if (q.type == PacketType::kFup) {
          if (!last_ip_.UpdateInline(q.ipbytes(), q.payload)) return Fail(EBADMSG, "bad FUP");
          ctl_suppressed_ = q.ipbytes() == 0;
          ctl_ip_ = last_ip_.raw();
        } else {
          if (q.type != PacketType::kInvalid) Unread(q);
          ctl_suppressed_ = true;
        }
        return 0;
      }
      case PacketType::kPsb:
        if (const int err = ReadPsbPlus(p.offset, false)) return err;
        break;
      case PacketType::kPip:
      case PacketType::kVmcs:
        if (fup_pending_) [[unlikely]] {  // (bound to the asynchronous branch's TIP: tip_status_)
          tip_status_.emplace_back(static_cast<uint32_t>(fups_behind_.size()) + 1, StatusEvent(p));
          tip_status_.back().second.time = time_;
          if (TipQueueFull()) return FailTipQueueFull(p);
          // (Its event query makes no event here and reads on: a TNT
          // before the TIP fails it, as a MODE.Exec's.)
          if (Packet q; enabled_ && !have_unread_ && NextPastModeQuery(&q, true) == 0 &&
                        (q.type == PacketType::kTnt8 || q.type == PacketType::kTnt64))
            return FailEventQuery(p, q, "its TIP");
          break;
        }
        // libipt holds a PIP's or VMCS's event while tracing is enabled
        // until an instruction it binds to (pt_insn_check_insn_event).
        NoteEventHeld(false, 0, true, false, p.type == PacketType::kPip ? 1 : 2);
        Queue(StatusEvent(p));
        break;
      case PacketType::kTraceStop:
        if (enabled_) [[unlikely]] {
          // libipt disables tracing before it stops: a TraceStop while
          // enabled fails where its event goes (pt_insn_process_stop,
          // -pte_bad_context; FailStatusUpdate()).
          bad_mode_offset_ = p.offset;
          bad_is_stop_ = true;
          NoteEventHeld(false, 0, false, true);
        } else {
          NoteEvent(false, 0);
        }
        Queue(FlowEvent{.type = FlowEvent::Type::kStop, .ip_suppressed = true, .offset = p.offset});
        break;
      case PacketType::kMwait:
        if (enabled_ && !have_unread_) {
          // libipt asks for the event as soon as its read-ahead stops at
          // the MWAIT; it waits for a FUP, so pt_qry_event reads on (through
          // PAD and timing), and a TNT or a TIP that no event binds to is
          // -pte_bad_query, failing the branch before.
          Packet q;
          const int end = NextPastStatus(&q);
          if (end == EMSGSIZE) q = CutPacket(packets_.trace(), q.offset);  // (cut by the end: by its opcode)
          if ((end == 0 || end == EMSGSIZE) && NoEventFor(q)) return FailEventQuery(p, q, "its FUP");
        }
        // Bound to the next FUP (above), and reported there, with its IP
        // (libipt pt_qry_decode_mwait queues it on evb_fup; an OVF or a
        // sync drops it unreported: pt_qry_decode_ovf resets the queue).
        fup_held_.push_back(FlowEvent{.type = FlowEvent::Type::kMwait, .ip_suppressed = true, .payload = p.payload,
                                      .offset = p.offset});
        break;
      case PacketType::kCfe:
      case PacketType::kEvd:
      case PacketType::kTrig:
        // (Not known to libipt 2.0.5: no read-ahead rule of its to follow.)
        if (const int err = TakeEventTracePacket(p)) return err;
        break;
      case PacketType::kPwre:
        NoteEvent(false, 0);
        Queue(FlowEvent{.type = FlowEvent::Type::kPwre, .ip_suppressed = true, .payload = p.payload,
                        .offset = p.offset});
        break;
      case PacketType::kPwrx:
        NoteEvent(false, 0);
        Queue(FlowEvent{.type = FlowEvent::Type::kPwrx, .ip_suppressed = true, .payload = p.payload,
                        .offset = p.offset});
        break;
      case PacketType::kMnt:
        NoteEvent(false, 0);
        Queue(FlowEvent{.type = FlowEvent::Type::kMnt, .ip_suppressed = true, .payload = p.mnt_payload(),
                        .offset = p.offset});
        break;
      case PacketType::kCbr:
        if (p.cbr() == 0) [[unlikely]] {
          // libipt's time update rejects a core:bus ratio of 0
          // (pt_qry_decode_cbr -> pt_time_update_cbr: -pte_bad_packet), in
          // the query for the CBR's event, asked for at once (as in a PSB+:
          // ReadPsbPlus).
          const int err = Fail(EBADMSG, fmt::format("CBR 0 at {:#x}", p.offset));
          error_offset_ = p.offset;
          event_query_failed_ = true;
          return err;
        }
        Timing(p);
        NoteEvent(false, 0);
        Queue(StatusEvent(p));
        break;
      case PacketType::kCyc:
        TimingCyc(p);
        break;
      case PacketType::kTma:
        if (const int err = TakeTma(p, false)) return err;
        break;
      case PacketType::kTsc:
      case PacketType::kMtc:
        Timing(p);
        break;
      default:  // PAD, PSBEND, PEBS blocks
        break;
    }
  }
}

// The packet libipt's read-ahead stops at from the decoder's position
// (pt_qry_read_ahead: through PAD and timing), into *q, the decoder not
// moved; 0, or the error Next() met first (q->offset: where).
int FlowDecoder::NextPastStatus(Packet* q) const {
  PacketDecoder ahead = packets_;
  int err;
  while ((err = ahead.Next(*q)) == 0 && IsReadAheadStatus(q->type)) {
  }
  if (err != 0) q->offset = ahead.offset();
  return err;
}

// The event query for `event` (an event packet libipt asks about as soon as
// its read-ahead stops there: pt_qry_event) read on to `q`, a packet no
// event binds to: -pte_bad_query, which fails the branch before `event`.
// The error is EBADMSG at q's offset; `wanted` names what the event waits
// for ("its FUP", "its TIP").
int FlowDecoder::FailEventQuery(const Packet& event, const Packet& q, std::string_view wanted) {
  const int err = Fail(EBADMSG, fmt::format("{} at {:#x} followed by {} at {:#x}, not {}", PacketName(event.type),
                                            event.offset, PacketName(q.type), q.offset, wanted));
  error_offset_ = q.offset;
  event_query_failed_ = true;
  return err;
}

// libipt's query decoder signals the event packet after a TNT once the
// TNT's bits are used up (pt_qry_status_flags), and the instruction decoder
// asks for the event at once (pt_insn_check_ip_event -> pt_qry_event): the
// packets that make an event straight away (TIP.PGE, TIP.PGD, a PIP or
// VMCS of their own, TraceStop, PWRE, PWRX) are decoded, and the query
// reads ahead past them (pt_qry_read_ahead, through PAD and timing). A
// packet error there — an unknown opcode, a bad timing packet — fails the
// branch that took the TNT's last bit. Returns that error (error_offset_
// set), or 0. (A packet error before the event packet: CheckAhead().)
// `from`: where CheckAhead() stopped skipping PAD and timing packets.
int FlowDecoder::EventQueryAfterTnt(uint64_t from) {
  if (have_unread_) return 0;
  // Mostly a TNT, TIP, FUP or MODE comes next (after timing packets): say
  // so without copying the packet decoder; and for an event packet and the
  // status packets after it that decode on the fast path (as
  // PacketDecoder::Next() would: synchronized, outside a PEBS block, 9 bytes
  // readable), decide as below from them. Anything else: the careful way.
  const std::span<const uint8_t> trace = packets_.trace();
  if (packets_.synced() && packets_.block_item_bytes() == 0) {
    bool after_event = false;  // the event packet is decoded: the read-ahead past it
    for (uint64_t off = from; off + 9 <= trace.size();) {
      const uint8_t b0 = trace[off];
      // (After the event: no status packet, the read-ahead stops — but a
      // bad MODE there is an error: decode it.)
      if (((b0 & 1) == 0 && b0 != 0 && b0 != 0x02) || (b0 & 0x1f) == 0x0d || (b0 & 0x1f) == 0x1d ||
          (b0 == 0x99 && !after_event))
        return 0;
      Packet q;
      unsigned size;
      if (!internal::FastDecode(trace.data(), off, q, size)) break;
      off += size;
      if (IsReadAheadStatus(q.type)) continue;
      if (after_event) return 0;
      if (!StartsEventQuery(q)) {
        if (q.type == PacketType::kCbr || q.type == PacketType::kMnt) break;  // (skipped below)
        return 0;
      }
      after_event = true;
    }
  }
  PacketDecoder ahead = packets_;
  Packet q;
  do {
    // (CheckAhead's error — but an event packet cut by the end right here:
    // its event query's decode meets the end at once, CutEventPacketAhead().)
    if (const int e = ahead.Next(q)) return e == EMSGSIZE ? CutEventPacketAhead(packets_.offset(), ahead.offset()) : 0;
    if (q.type == PacketType::kCbr && q.cbr() == 0) [[unlikely]] {  // (its decode fails: FetchControlRest())
      error_offset_ = q.offset;
      error_ip_ = ip_;
      error_message_ = fmt::format("CBR 0 at {:#x} (its event queried after the TNT)", q.offset);
      return EBADMSG;
    }
  } while (IsReadAheadStatus(q.type) || q.type == PacketType::kCbr || q.type == PacketType::kMnt);
  if (!StartsEventQuery(q)) return 0;
  for (;;) {
    Packet r;
    const int err = ahead.Next(r);
    if (err == ENODATA || err == EMSGSIZE) return 0;  // -pte_eos: no error here
    if (err != 0) {
      // The read-ahead decodes status packets only; it stops at the opcode
      // of any other packet without decoding it.
      if (err != EILSEQ && !internal::OpensReadAheadStatus(trace, ahead.offset())) return 0;
      error_offset_ = ahead.offset();
      error_ip_ = ip_;
      error_message_ = fmt::format("{} at offset {:#x} (read ahead after the {} at {:#x} that follows the TNT)",
                                   PacketDecoder::ErrorDescription(err), error_offset_, PacketName(q.type), q.offset);
      return err;
    }
    if (!IsReadAheadStatus(r.type)) return 0;
  }
}

// A packet cut by the end of the trace at `at`, read ahead from `start`
// (after a TIP or TNT): if it comes first, past PAD and timing packets, and
// is an event packet by its opcode (OpensEventPacket()), and no
// event is held, libipt's instruction decoder asks for that event at once
// (pt_insn_check_ip_event) and its decode meets the end (-pte_eos), failing
// the branch before: EMSGSIZE (error_offset_ at), else 0 (the end of the
// trace, later).
__attribute__((noinline, cold)) int FlowDecoder::CutEventPacketAhead(uint64_t start, uint64_t at) {
  if (bound_pending_) return 0;
  PacketDecoder ahead = packets_;
  if (!ahead.SyncSet(start).ok()) return 0;
  for (Packet q; ahead.Next(q) == 0;) {
    if (!IsReadAheadStatus(q.type)) return 0;
  }
  if (ahead.offset() != at ||
      !internal::OpensEventPacket(packets_.trace(), at, fup_pending_ || mode_pending_, !fup_held_.empty()))
    return 0;
  error_offset_ = at;
  error_ip_ = ip_;
  error_message_ = fmt::format("{} at offset {:#x} (an event packet, queried at once)",
                               PacketDecoder::ErrorDescription(EMSGSIZE), at);
  return EMSGSIZE;
}

// Whether `q`, the first packet after a TNT's PAD and timing packets, makes
// an event at once that libipt's query reads ahead past (EventQueryAfterTnt).
bool FlowDecoder::StartsEventQuery(const Packet& q) const {
  switch (q.type) {
    case PacketType::kTipPge:
      return !mode_pending_ && q.ipbytes() != 0;  // (else an event bound to it first; -pte_bad_packet)
    case PacketType::kPip:
    case PacketType::kVmcs:
      return !fup_pending_;  // (else bound to the asynchronous branch's TIP)
    case PacketType::kTipPgd:
    case PacketType::kTraceStop:
    case PacketType::kPwre:
    case PacketType::kPwrx:
      return true;
    default:
      return false;
  }
}

// An event packet that binds to the next FUP (libipt evb_fup): MODE.TSX,
// MWAIT, PTW and EXSTOP with IP=1.
bool FlowDecoder::BindsToFup(const Packet& q) {
  return q.type == PacketType::kModeTsx || q.type == PacketType::kMwait ||
         (q.type == PacketType::kPtw && q.ptw_ip()) || (q.type == PacketType::kExStop && q.exstop_ip());
}

// Whether `q`, the packet after an event packet that waits for a FUP, is one
// libipt's event query cannot take (pt_qry_event: -pte_bad_query): a TNT, or
// a TIP with no event bound to it (no MODE.Exec before it, no asynchronous
// FUP waiting for it).
bool FlowDecoder::NoEventFor(const Packet& q) const {
  if (q.type == PacketType::kTnt8 || q.type == PacketType::kTnt64) return true;
  return q.type == PacketType::kTip && !mode_pending_ && !fup_pending_;
}

// An event read while tracing is enabled, in libipt's terms (its query
// decoder's events). libipt's instruction decoder holds an event bound to an
// IP (PTW, EXSTOP, MWAIT, MODE.TSX with their FUP: pt_insn_check_ip_event)
// until the flow reaches that IP, and takes no further event meanwhile; a
// branch whose packet lies behind such a further event then fails
// (pt_qry_cache_tnt: "an event ahead", -pte_bad_query). `bound`: the event
// binds to `ip`.
// (NoteEvent() calls this only when an event binds or one is held:
// bound_pending_ is !bound_.empty() at all times.)
void FlowDecoder::NoteEventHeld(bool bound, uint64_t ip, bool ptwrite, bool fails, uint8_t binds) {
  if (!enabled_) {  // (libipt takes events at once while tracing is disabled)
    bound_.clear();
  } else if (!bound_.empty() || bound || ptwrite || fails) {
    bound_.push_back(Held{.ip = bound ? ip : kUnbound, .ptwrite = ptwrite, .fails = fails, .binds = binds});
  }
  bound_pending_ = !bound_.empty();
  bound_wall_ = bound_.size() >= 2;
}

}  // namespace perftest::pt
