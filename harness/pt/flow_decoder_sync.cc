// FlowDecoder: synchronization (see flow_decoder.cc for the file layout) —
// SyncForward/SyncSet reset the flow state and read the PSB+.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "harness/pt/flow_decoder.h"
#include "harness/pt/internal/flow_decoder_inline.h"

namespace perftest::pt {

using internal::StatusEvent;

// Reads the rest of a PSB+ (after the PSB) to PSBEND.
int FlowDecoder::ReadPsbPlus(uint64_t psb_offset, bool at_sync) {
  last_ip_.Reset();
  bool have_fup = false;
  uint64_t fup_ip = 0;
  // libipt's events at PSBEND, in order: whether each binds to the FUP's IP
  // (MODE.Exec, MODE.TSX, PIP, VMCS: kBound) or not (CBR, MNT). Mid-flow they
  // go through NoteEvent(); a MODE.Exec that contradicts the mode while
  // tracing is enabled fails where libipt takes it (kFails: FailStatusUpdate).
  enum : uint8_t { kNotBound, kBound, kFails };
  uint8_t events[16];
  size_t nevents = 0;
  auto event = [&](uint8_t kind) {
    if (nevents < std::size(events)) events[nevents++] = kind;
  };
  bool tsc_for_tma = false;  // a TSC in this PSB+ that has no TMA yet (TakeTma())
  // The PSB+'s events, queued at its end in order; those that bind to the
  // FUP (MODE.Exec, MODE.TSX) take its IP then, suppressed without one
  // (libipt pt_qry_event_psbend -> pt_qry_event_ip: the last IP).
  std::vector<std::pair<bool, FlowEvent>> psb_evs;
  auto queue_all = [&] {
    for (auto& [bound, e] : psb_evs) {
      if (bound) {
        e.ip_suppressed = !have_fup;
        e.ip = have_fup ? fup_ip : 0;
      }
      // Mid-flow, the events bound to the FUP wait for the flow to get
      // there (PIP, VMCS: status updates at the FUP's IP too).
      const bool at_fup = e.type == FlowEvent::Type::kExecMode || e.type == FlowEvent::Type::kTsx ||
                          e.type == FlowEvent::Type::kPaging || e.type == FlowEvent::Type::kVmcs;
      if (!at_sync && have_fup && at_fup) {
        QueueAt(e, fup_ip);
      } else {
        Queue(e);
      }
    }
  };
  for (;;) {
    Packet p;
    if (const int err = ReadPacket(&p)) return err;
    switch (p.type) {
      case PacketType::kOvf:
        // An OVF ends the PSB+ as a PSBEND does (libipt's header read stops
        // at it, pdff_psbend: pt_qry_read_psb_header), its events go first
        // (pt_qry_decode_ovf), then it is an overflow as anywhere.
        Unread(p);
        [[fallthrough]];
      case PacketType::kPsbEnd:
        queue_all();
        psb_events_ = static_cast<uint32_t>(nevents);
        psb_at_ = psb_offset;  // (the clean stretch's regions after a PSB+: CleanAhead())
        psb_end_ = packets_.offset();
        if (at_sync) {
          enabled_ = have_fup;
          ip_ = fup_ip;
        } else {
          for (size_t i = 0; i < nevents; ++i) {
            if (events[i] == kFails) {
              NoteEventHeld(have_fup, fup_ip, false, true);
            } else {
              NoteEvent(events[i] == kBound && have_fup, fup_ip);
            }
          }
        }
        return 0;
      case PacketType::kFup:
        if (!last_ip_.UpdateInline(p.ipbytes(), p.payload)) return Fail(EBADMSG, "bad FUP in PSB+");
        have_fup = p.ipbytes() != 0;
        fup_ip = last_ip_.raw();
        break;
      case PacketType::kModeExec:
        // A status update: mid-flow, while tracing is enabled, it must agree
        // with the mode (pt_insn_process_exec_mode), which it does not change.
        if (!at_sync && enabled_ && mode_ != ExecMode::kInvalid && p.exec_mode() != mode_) {
          bad_mode_offset_ = p.offset;
          bad_is_stop_ = false;
          event(kFails);
        } else {
          mode_ = p.exec_mode();
          event(kBound);
          // (libipt reports it, a status update: pt_qry_header_mode_exec.)
          psb_evs.emplace_back(true, FlowEvent{.type = FlowEvent::Type::kExecMode, .mode = mode_, .offset = p.offset,
                                               .time = time_});
        }
        break;
      case PacketType::kModeTsx:
        event(kBound);
        psb_evs.emplace_back(true, FlowEvent{.type = FlowEvent::Type::kTsx, .ip_suppressed = true,
                                             .payload = p.payload & 3, .offset = p.offset, .time = time_});
        break;
      case PacketType::kPip:
      case PacketType::kVmcs:
        event(kBound);
        psb_evs.emplace_back(false, StatusEvent(p));
        psb_evs.back().second.time = time_;
        break;
      case PacketType::kCbr:
        if (p.cbr() == 0) {
          // No core:bus ratio: libipt's time update rejects the packet
          // (-pte_bad_packet), failing the PSB+ (its offset).
          const int err = Fail(EBADMSG, fmt::format("CBR 0 in the PSB+ at {:#x}", psb_offset));
          error_offset_ = psb_offset;
          return err;
        }
        Timing(p);
        event(kNotBound);
        psb_evs.emplace_back(false, StatusEvent(p));
        psb_evs.back().second.time = time_;
        break;
      case PacketType::kTma:
        if (const int err = TakeTma(p, tsc_for_tma)) {
          error_offset_ = psb_offset;  // (libipt goes back to the PSB: pt_qry_decode_psb)
          return err;
        }
        tsc_for_tma = false;
        break;
      case PacketType::kTsc:
        tsc_for_tma = true;
        Timing(p);
        break;
      case PacketType::kMtc:
      case PacketType::kCyc:
        Timing(p);
        break;
      case PacketType::kMnt:
        event(kNotBound);
        psb_evs.emplace_back(false, FlowEvent{.type = FlowEvent::Type::kMnt, .ip_suppressed = true,
                                              .payload = p.mnt_payload(), .offset = p.offset, .time = time_});
        break;
      case PacketType::kPad:
        break;
      default:
        return Fail(EBADMSG, fmt::format("{} inside the PSB+ at {:#x}", PacketName(p.type), psb_offset));
    }
  }
}


Result<uint64_t> FlowDecoder::Start(Result<uint64_t> psb) {
  synced_ = false;
  end_of_trace_ = false;
  enabled_ = false;
  ret_top_ = ret_count_ = 0;
  tnt_count_ = 0;
  ctl_ = Ctl::kNone;
  have_unread_ = false;
  mode_pending_ = false;
  fup_pending_ = false;
  fup_cut_ = false;
  fups_behind_.clear();
  tip_status_.clear();
  // No execution mode until a MODE.Exec gives one (libipt pt_insn_reset:
  // ptem_unknown; the PSB+ has one as a rule).
  mode_ = ExecMode::kInvalid;
  bound_.clear();
  bound_pending_ = bound_wall_ = false;
  fup_held_.clear();
  evd_held_.clear();
  cfe_held_.clear();
  tma_tsc_ = tsc_base_;  // (libipt's time starts afresh at a sync, pt_qry_reset: no TMA until a TSC)
  events_.clear();
  event_head_ = 0;
  later_.clear();
  ptw_ready_.clear();
  deferred_error_ = 0;
  sticky_error_ = 0;
  event_query_failed_ = false;
  steps_without_packet_ = 0;
  last_direct_ = false;
  hint_ = link_block_ = 0;
  walk_gen_ = kNoWalk;
  clean_regions_ = 0;
  clean_end_ = 0;
  psb_at_ = kNoPsb;
  psb_end_ = 0;
  if (!psb.ok()) return psb;
  Packet p;
  if (packets_.Next(p) != 0 || p.type != PacketType::kPsb) {
    return Result<uint64_t>::Failure(EBADMSG, fmt::format("pt::FlowDecoder::Sync(offset={:#x})", *psb));
  }
  if (const int err = ReadPsbPlus(p.offset, true)) {
    return Result<uint64_t>::Failure(err, fmt::format("pt::FlowDecoder::Sync: PSB+ at {:#x}: {}", *psb,
                                                       error_message_));
  }
  if (const int err = ReadAheadAfterSync()) {
    return Result<uint64_t>::Failure(err, fmt::format("pt::FlowDecoder::Sync: PSB+ at {:#x}: {}", *psb,
                                                       error_message_));
  }
  synced_ = true;
  return psb;
}

// libipt starts decoding at a PSB+ by reading ahead to the first packet a
// query needs (pt_qry_start), through PAD and timing packets; events for the
// PSBEND (MODE.Exec, MODE.TSX, PIP, VMCS, CBR, MNT) stop it there, and it
// goes on as pt_insn_sync_forward() fetches them one by one (all before the
// first instruction: at sync they bind to the FUP's IP or to none).
//   - The end of the trace: with no PSB+ event the synchronization fails
//     (-pte_eos: nothing to decode); with events it ends the flow later.
//   - An unknown opcode or a bad timing packet: with at most one PSB+ event
//     the synchronization fails with it (the next SyncForward() goes on past
//     it); with more, the fetch of the last one fails: the error comes after
//     the PSB+'s events, before any instruction. (The former only with
//     Options::libipt_errors; else as the latter.)
int FlowDecoder::ReadAheadAfterSync() {
  uint64_t at = 0;
  if (have_unread_ && unread_.type == PacketType::kOvf) {
    // The PSB+ ended at an OVF (ReadPsbPlus): libipt decodes the OVF right
    // after the PSB+'s events — in the sync's read-ahead when there are
    // none — and looks for the FUP that resolves it (pt_qry_decode_ovf ->
    // pt_qry_find_ovf_fup, pt_pkt_find_ovf_fup): through PAD, MNT and timing
    // packets, an unknown opcode or a bad packet there fails it, as a TNT,
    // TIP, TIP.PGD or PSBEND does (-pte_bad_context).
    PacketDecoder ahead = packets_;
    Packet q;
    int e;
    while ((e = ahead.Next(q)) == 0 && (internal::IsReadAheadStatus(q.type) || q.type == PacketType::kCbr ||
                                         q.type == PacketType::kMnt)) {
    }
    const bool context = e == 0 && (q.type == PacketType::kTnt8 || q.type == PacketType::kTnt64 ||
                                    q.type == PacketType::kTip || q.type == PacketType::kTipPgd ||
                                    q.type == PacketType::kPsbEnd);
    if (context) e = EBADMSG;
    if (e != 0 && e != ENODATA && e != EMSGSIZE) {
      const int err = Fail(e, fmt::format("{} after the OVF at {:#x} that ends the PSB+ (looking for its FUP)",
                                          context ? std::string(PacketName(q.type)) : PacketDecoder::ErrorDescription(e),
                                          unread_.offset));
      error_offset_ = unread_.offset;
      if (psb_events_ == 0 && options_.libipt_errors) return err;
      deferred_error_ = err;
      DropPsbEventsForError();
      return 0;
    }
  }
  int end = ReadAheadEos(&at);
  if (end == 0 && !have_unread_) {
    // The read-ahead stops at an event packet (pt_df_fetch knows it by its
    // opcode): libipt asks for its event after the PSB+'s, in the sync
    // itself if the PSB+ has none (pt_insn_start -> pt_insn_check_ip_event);
    // a bad payload there fails that query (-pte_bad_packet).
    PacketDecoder ahead = packets_;
    Packet q;
    int e;
    while ((e = ahead.Next(q)) == 0 && internal::IsReadAheadStatus(q.type)) {
    }
    if (e == EBADMSG && internal::OpensEventPacket(packets_.trace(), ahead.offset(), false, false)) {
      const int err = Fail(e, fmt::format("{} at offset {:#x} after the PSB+ (an event packet, queried at once)",
                                          PacketDecoder::ErrorDescription(e), ahead.offset()));
      error_offset_ = ahead.offset();
      if (psb_events_ == 0 && options_.libipt_errors) return err;
      deferred_error_ = err;
      DropPsbEventsForError();
      return 0;
    }
  }
  if (end == 0 && enabled_) {
    // A MODE.Exec the read-ahead stops at (or a PIP or VMCS after a FUP):
    // its event query comes before the first instruction (pt_insn_start),
    // and fails at a TNT (NextPastModeQuery()).
    PacketDecoder ahead = packets_;
    Packet m;
    // (The read-ahead decodes a FUP with an IP: an asynchronous branch queued
    // for the next TIP.)
    size_t fups = 0;
    while (ahead.Next(m) == 0 && (internal::IsReadAheadStatus(m.type) ||
                                  (m.type == PacketType::kFup && m.ipbytes() != 0 && fup_held_.empty()))) {
      if (m.type == PacketType::kFup && ++fups > kTipQueueMax) return FailTipQueueFull(m);  // (the sync fails)
    }
    Packet q;
    const bool queried = m.type == PacketType::kModeExec ||
                         (fups != 0 && (m.type == PacketType::kPip || m.type == PacketType::kVmcs));
    if (queried && fups >= kTipQueueMax) {  // (its event the 7th for the TIP)
      deferred_error_ = FailTipQueueFull(m);
      DropPsbEventsForError();
      return 0;
    }
    if (queried && !have_unread_ && NextPastModeQuery(&q, false) == 0 &&
        (q.type == PacketType::kTnt8 || q.type == PacketType::kTnt64)) {
      deferred_error_ = FailEventQuery(m, q, "its TIP");
      DropPsbEventsForError();
      event_query_failed_ = false;  // (an error held for the first Next(), not FetchControl()'s)
      return 0;
    }
  }
  if (end == 0 || (end == ENODATA && psb_events_ != 0)) return 0;
  if (end == ENODATA) return Fail(ENODATA, "only PAD and timing packets follow the PSB+");
  const int err = Fail(end, fmt::format("{} at offset {:#x} after the PSB+", PacketDecoder::ErrorDescription(end), at));
  error_offset_ = at;
  if (psb_events_ <= 1 && options_.libipt_errors) return err;
  deferred_error_ = err;
  DropPsbEventsForError();
  return 0;
}

// Options::libipt_errors: libipt's first event query after the sync meets
// the packet error its read-ahead found, before any of the PSB+'s events.
void FlowDecoder::DropPsbEventsForError() {
  if (!options_.libipt_errors) return;
  events_.clear();
  event_head_ = 0;
  later_.clear();
  ptw_ready_.clear();
}

Result<uint64_t> FlowDecoder::SyncForward() { return Start(packets_.SyncForward()); }

Result<uint64_t> FlowDecoder::SyncSet(uint64_t offset) {
  Result<void> r = packets_.SyncSet(offset);
  if (!r.ok()) return Start(Result<uint64_t>::FailureFrom(r));
  return Start(Result<uint64_t>::Ok(offset));
}

}  // namespace perftest::pt
