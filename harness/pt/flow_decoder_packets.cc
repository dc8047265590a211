// FlowDecoder: packets to flow state (see flow_decoder.cc for the file
// layout). FetchControl() reads up to the next TNT or control packet,
// queueing the events and timing met on the way.
#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "harness/pt/flow_decoder.h"
#include "harness/pt/internal/flow_decoder_inline.h"

namespace perftest::pt {

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

void FlowDecoder::Queue(FlowEvent e) {
  e.time = time_;
  events_.push_back(e);
}

// CYC (Timing() for the most frequent timing packet, inline).
inline void FlowDecoder::TimingCyc(const Packet& p) {
  const uint64_t cycles = p.cyc();
  time_.cyc += cycles;
  cyc_since_ += cycles;
  if (options_.max_nonturbo_ratio != 0 && time_.cbr != 0 && tsc_base_ != 0) {
    const uint64_t est = tsc_mtc_ + cyc_since_ * options_.max_nonturbo_ratio / time_.cbr;
    time_.tsc = std::max(time_.tsc, est);
  }
}

void FlowDecoder::Timing(const Packet& p) {
  switch (p.type) {
    case PacketType::kTsc:
      tsc_base_ = p.tsc();
      time_.tsc = tsc_mtc_ = tsc_base_;
      cyc_since_ = 0;
      break;
    case PacketType::kTma:
      last_mtc_ctc_ = p.tma_ctc();
      have_tma_ = true;
      break;
    case PacketType::kMtc:
      if (options_.tsc_ctc_ratio_n != 0 && have_tma_) {
        // CTC[N+7:N] (N = mtc_period): advance by the 8-bit difference.
        const unsigned n = options_.mtc_period;
        const uint64_t last = (last_mtc_ctc_ >> n) & 0xff;
        const uint64_t delta = (uint64_t{p.mtc_ctc()} - last) & 0xff;
        last_mtc_ctc_ += delta << n;
        tsc_mtc_ += ((delta << n) * options_.tsc_ctc_ratio_n) / std::max<uint32_t>(1, options_.tsc_ctc_ratio_d);
        time_.tsc = std::max(time_.tsc, tsc_mtc_);
        cyc_since_ = 0;
      }
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

// Reads packets up to the next TNT or control packet (TIP, TIP.PGE,
// TIP.PGD, asynchronous FUP with its TIP/TIP.PGD, OVF), queueing events and
// timing on the way. Precondition: no TNT bits and no control packet held.
int FlowDecoder::FetchControl() {
  for (;;) {
    Packet p;
    if (const int err = ReadPacket(&p)) return err;
    switch (p.type) {
      case PacketType::kTnt8:
      case PacketType::kTnt64: {
        // As libipt's query decoder, look past the TNT at once: a bad
        // packet there fails the branch that fetched the TNT.
        // (Not while tracing is disabled: libipt then queries nothing and
        // reports the TNT itself, -pte_no_enable.)
        if (enabled_) {
          if (const int err = CheckAhead()) return err;
        }
        tnt_bits_ = p.tnt_bits();
        tnt_count_ = p.tnt_size();
        steps_without_packet_ = 0;
        return 0;
      }
      case PacketType::kTip:
      case PacketType::kTipPge:
      case PacketType::kTipPgd:
        if (!last_ip_.UpdateInline(p.ipbytes(), p.payload)) return Fail(EBADMSG, "bad IP packet");
        ctl_ = p.type == PacketType::kTip ? Ctl::kTip : p.type == PacketType::kTipPge ? Ctl::kTipPge : Ctl::kTipPgd;
        if (fup_pending_ && p.type != PacketType::kTipPge) [[unlikely]] {  // the TIP of an earlier FUP
          fup_pending_ = false;
          ctl_ = ctl_ == Ctl::kTip ? Ctl::kAsync : Ctl::kAsyncDisable;
        }
        ctl_suppressed_ = p.ipbytes() == 0;
        ctl_ip_ = last_ip_.raw();
        ctl_offset_ = p.offset;
        steps_without_packet_ = 0;
        if (ctl_ != Ctl::kTip) NoteEvent(false, 0);  // (libipt: a TIP alone is no event)
        return 0;
      case PacketType::kFup: {
        if (!last_ip_.UpdateInline(p.ipbytes(), p.payload)) return Fail(EBADMSG, "bad FUP");
        if (mwait_held_) [[unlikely]] {
          // The FUP an MWAIT waits for (its EXSTOP lost): it gives the
          // MWAIT's IP, if any, and is no asynchronous event (libipt
          // pt_qry_decode_fup: events bound to FUP take it first).
          mwait_held_ = false;
          NoteEvent(p.ipbytes() != 0, last_ip_.raw());
          break;
        }
        if (p.ipbytes() == 0) {
          // The error is at the FUP, as libipt's (-pte_ip_suppressed):
          // inside the read-ahead window after a TIP, it fails the branch
          // that took it.
          const int err = Fail(EBADMSG, fmt::format("FUP at {:#x} without an IP", p.offset));
          error_offset_ = p.offset;
          return err;
        }
        ctl_from_ = last_ip_.raw();
        ctl_offset_ = p.offset;
        // The packet that says what happened there: TIP (interrupt,
        // exception) or TIP.PGD (tracing stopped).
        for (;;) {
          Packet q;
          if (const int err = ReadPacket(&q)) return err;
          if (q.type == PacketType::kTip || q.type == PacketType::kTipPgd) {
            if (!last_ip_.UpdateInline(q.ipbytes(), q.payload)) return Fail(EBADMSG, "bad IP packet");
            ctl_ = q.type == PacketType::kTip ? Ctl::kAsync : Ctl::kAsyncDisable;
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
            continue;
          }
          if (q.type == PacketType::kTsc || q.type == PacketType::kTma || q.type == PacketType::kMtc ||
              q.type == PacketType::kCyc || q.type == PacketType::kPad) {
            Timing(q);
            continue;
          }
          if (q.type == PacketType::kTnt8 || q.type == PacketType::kTnt64 || q.type == PacketType::kTipPge ||
              q.type == PacketType::kFup || q.type == PacketType::kPsb || q.type == PacketType::kOvf)
            return Fail(EBADMSG, fmt::format("FUP at {:#x} followed by {} at {:#x}, not TIP or TIP.PGD", p.offset,
                                             PacketName(q.type), q.offset));
          // An event packet: as libipt (the FUP's event waits, bound to the
          // next TIP/TIP.PGD), handle it and keep waiting.
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
        NoteEvent(false, 0);  // (libipt: an event, bound to the next TIP)
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
          want_ip = true;
        } else if (p.type == PacketType::kPtw) {
          e.type = FlowEvent::Type::kPtwrite;
          e.payload = p.ptw_payload();
          e.payload_bytes = static_cast<uint8_t>(p.ptw_payload_bytes());
          want_ip = p.ptw_ip();
        } else {
          e.type = FlowEvent::Type::kExStop;
          want_ip = p.exstop_ip();
        }
        if (want_ip) {  // the FUP that gives the IP (SDM §33.4.2.8, .21, .22)
          Packet q;
          for (;;) {
            if (const int err = ReadPacket(&q)) return err;
            if (q.type == PacketType::kCyc || q.type == PacketType::kMtc || q.type == PacketType::kPad) {
              Timing(q);
              continue;
            }
            break;
          }
          if (q.type == PacketType::kFup) {
            if (!last_ip_.UpdateInline(q.ipbytes(), q.payload)) return Fail(EBADMSG, "bad FUP");
            e.ip_suppressed = q.ipbytes() == 0;
            e.ip = last_ip_.raw();
          } else {
            Unread(q);
          }
        }
        // libipt holds an MWAIT until the next FUP (it binds to FUP, as an
        // EXSTOP, PTW or MODE.TSX with an IP does): the FUP of this packet,
        // if it has one, gives both their IP, the MWAIT's first.
        if (mwait_held_ && !e.ip_suppressed) {
          NoteEvent(true, e.ip);
          mwait_held_ = false;
        }
        NoteEvent(!e.ip_suppressed, e.ip);
        Queue(e);
        break;
      }
      case PacketType::kOvf: {
        // Flow lost. A FUP follows with the IP where tracing resumed, or
        // (tracing off when the overflow resolved) nothing of the kind.
        tnt_count_ = 0;
        ctl_offset_ = p.offset;
        last_ip_.Reset();  // as libipt: no IP compression across an overflow
        Packet q;
        for (;;) {
          if (const int err = ReadPacket(&q)) {
            if (err != ENODATA) return err;
            q.type = PacketType::kInvalid;
            break;
          }
          if (q.type == PacketType::kCyc || q.type == PacketType::kMtc || q.type == PacketType::kTsc ||
              q.type == PacketType::kTma || q.type == PacketType::kPad || q.type == PacketType::kCbr) {
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
        NoteEvent(false, 0);
        Queue(StatusEvent(p));
        break;
      case PacketType::kTraceStop:
        NoteEvent(false, 0);
        Queue(FlowEvent{.type = FlowEvent::Type::kStop, .ip_suppressed = true, .offset = p.offset});
        break;
      case PacketType::kMwait:
        mwait_held_ = true;  // bound to the next FUP (above)
        Queue(FlowEvent{.type = FlowEvent::Type::kMwait, .ip_suppressed = true, .payload = p.payload,
                        .offset = p.offset});
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
        Timing(p);
        NoteEvent(false, 0);
        Queue(StatusEvent(p));
        break;
      case PacketType::kCyc:
        TimingCyc(p);
        break;
      case PacketType::kTsc:
      case PacketType::kTma:
      case PacketType::kMtc:
        Timing(p);
        break;
      default:  // PAD, PSBEND, PEBS blocks
        break;
    }
  }
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
void FlowDecoder::NoteEventHeld(bool bound, uint64_t ip) {
  if (!enabled_) {  // (libipt takes events at once while tracing is disabled)
    bound_.clear();
  } else if (!bound_.empty() || bound) {
    bound_.push_back(bound ? ip : kUnbound);
  }
  bound_pending_ = !bound_.empty();
  bound_wall_ = bound_.size() >= 2;
}

}  // namespace perftest::pt
