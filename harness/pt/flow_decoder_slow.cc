// FlowDecoder's slow path (see flow_decoder.cc for the file layout):
// NextSlow() takes every step that Next() does not, Resolve() decides where
// the last instruction of a block goes, TakeTip() applies a held TIP/TIP.PGD.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <span>

#include <fmt/format.h>

#include "harness/pt/flow_decoder.h"
#include "harness/pt/internal/flow_decoder_inline.h"

namespace perftest::pt {

using internal::kRetStackSize;
using internal::StoreLast;

int FlowDecoder::NextSlow(FlowStep* step) {
  // The TIP a pending MODE.Exec waited for: the mode changes there, and the
  // packets after the TIP are read at once (PeekAfterIp()).
  auto take_mode_tip = [&]() -> int {
    ctl_ = Ctl::kNone;
    ApplyPendingMode();
    const int err = PeekAfterIp();
    if (err != 0) synced_ = false;
    return err;
  };
  // No code (or no instruction) where the flow got to after an IP packet
  // whose read-ahead (PeekAfterIp(), sticky_error_) ended at a packet cut
  // by the end of the trace: if that is an event packet right after the IP
  // packet, libipt asked for its event there and failed (-pte_eos,
  // CutEventPacketAhead()) before its flow got here — the end of the trace,
  // EMSGSIZE, not `err`.
  auto code_error = [&](int err) -> int {
    if (sticky_error_ != EMSGSIZE) return err;
    PacketDecoder ahead = packets_;
    Packet ip;
    if (!ahead.SyncSet(ctl_offset_).ok() || ahead.Next(ip) != 0 || !ip.is_ip()) return err;
    const uint64_t at = packets_.offset();
    if (CutEventPacketAhead(ahead.offset(), at) == 0) return err;
    return Fail(EMSGSIZE, fmt::format("{} at offset {:#x}: the event packet after the IP packet at {:#x} is cut "
                                      "by the end of the trace",
                                      PacketDecoder::ErrorDescription(EMSGSIZE), at, ctl_offset_));
  };
  for (;;) {
    if (!later_.empty()) [[unlikely]] ReleaseLater(!enabled_ || !synced_);
    if (TakeQueuedEvent(step)) return 0;
    if (deferred_error_ != 0) {
      const int err = deferred_error_;
      deferred_error_ = 0;
      synced_ = false;
      return err;
    }
    if (!synced_) return ENOTCONN;

    if (!enabled_) {
      if (const int err = NeedControl()) {
        synced_ = false;
        // A TIP or TNT-64 cut by the end of the trace: libipt's read-ahead
        // stops at it by its opcode (pt_df_fetch; no event), so it has not
        // reached the end, and pt_insn_next without an enable fails
        // -pte_no_enable — not the end of the trace.
        const std::span<const uint8_t> trace = packets_.trace();
        const uint64_t at = error_offset_;
        if (err == EMSGSIZE && at < trace.size() &&
            ((trace[at] & 0x1f) == 0x0d || (trace[at] == 0x02 && at + 1 < trace.size() && trace[at + 1] == 0xa3))) {
          const int bad = Fail(EBADMSG, fmt::format("{} at {:#x} (cut by the end of the trace) while tracing is disabled",
                                                    (trace[at] & 0x1f) == 0x0d ? "TIP" : "TNT-64", at));
          error_offset_ = at;
          return bad;
        }
        // Events read on the way (CBR, PTW, EXSTOP, ... while disabled:
        // libipt reports them, standalone) go out before the end.
        if (event_head_ < events_.size() || !later_.empty()) {
          deferred_error_ = err;
          synced_ = true;
          continue;
        }
        return err;
      }
      if (tnt_count_ != 0) {
        synced_ = false;
        return Fail(EBADMSG, "TNT while tracing is disabled");
      }
      switch (ctl_) {
        case Ctl::kTipPge:
          if (ctl_suppressed_) {
            synced_ = false;
            return Fail(EBADMSG, fmt::format("TIP.PGE at {:#x} with a suppressed IP", ctl_offset_));
          }
          ctl_ = Ctl::kNone;
          ip_ = ctl_ip_;
          enabled_ = true;
          last_direct_ = false;
          // (libipt pt_qry_decode_tip_pge: the enabled event, then the
          // exec-mode event bound to the TIP.PGE.)
          Queue(FlowEvent{.type = FlowEvent::Type::kEnabled, .mode = pending_mode_ != mode_ && mode_pending_ ? pending_mode_ : mode_,
                          .ip = ip_, .offset = ctl_offset_});
          ApplyPendingMode();
          if (const int err = PeekAfterIp()) {
            synced_ = false;
            return err;
          }
          continue;
        case Ctl::kTipPgd:
          if (mode_pending_) {
            // The TIP a MODE.Exec waits for (libipt pt_qry_decode_tip_pgd
            // gives the event bound to it, the exec-mode one, and no
            // disable event): the mode changes, tracing stays disabled.
            if (const int err = take_mode_tip()) return err;
            continue;
          }
          synced_ = false;
          return DisabledControl();
        case Ctl::kOverflow:
          break;  // below
        default:  // TIP, TIP.PGD, an asynchronous FUP: nothing to apply them to
          synced_ = false;
          return DisabledControl();
      }
    } else if (tnt_count_ == 0 && ctl_ == Ctl::kNone && sticky_error_ == 0) {
      // At the end of the trace, or before a bad packet, walk on to the
      // next branch that needs a packet (as libipt does); the error comes then.
      const int err = FetchControl();
      if (err == ENODATA && event_query_failed_) [[unlikely]] {  // (a MODE.Exec's event query at the end)
        event_query_failed_ = false;
        synced_ = false;
        return err;
      }
      if (err != 0 && err != ENODATA) sticky_error_ = err;
      if (event_head_ < events_.size()) continue;
    }

    // (Behind an event held for an IP or instruction the flow has not
    // reached, libipt asks for the overflow's event only once the flow gets
    // there: the flow goes on, and a branch's query meets the OVF,
    // -pte_bad_query — Resolve() with ctl_ held.)
    if (ctl_ == Ctl::kOverflow && !(enabled_ && AsyncHeldBack())) {
      if (const int err = bound_pending_ ? TakeBoundAtIp() : 0) {
        synced_ = false;
        return err;
      }
      ctl_ = Ctl::kNone;
      tnt_count_ = 0;
      Queue(FlowEvent{.type = FlowEvent::Type::kOverflow, .ip_suppressed = ctl_suppressed_, .ip = ctl_ip_,
                      .offset = ctl_offset_});
      enabled_ = !ctl_suppressed_;
      if (enabled_) ip_ = ctl_ip_;
      last_direct_ = false;  // (no branch brought the flow here: see the TIP.PGD rule below)
      if (const int err = PeekAfterIp()) {
        synced_ = false;
        return err;
      }
      continue;
    }
    if (ctl_ == Ctl::kTipPge && !AsyncHeldBack()) {
      // (Behind an event libipt holds for an IP or instruction the flow has
      // not reached, it asks for the TIP.PGE's event only once the flow gets
      // there: the flow goes on, and a branch's query meets the TIP.PGE,
      // -pte_bad_query.) The event query decodes the TIP.PGE and reads ahead
      // past it: an error there comes first; else its enabled event while
      // tracing is enabled, -pte_bad_context (pt_insn_process_enabled).
      // (A TIP.PGE without an IP fails its own decode first: pt_qry_decode_tip_pge,
      // -pte_bad_packet.)
      synced_ = false;
      if (const int err = ctl_suppressed_ ? 0 : ReadAheadPastEventPacket()) return err;
      return Fail(EBADMSG, fmt::format("TIP.PGE at {:#x} while tracing is enabled", ctl_offset_));
    }
    if (ctl_ == Ctl::kAsync || ctl_ == Ctl::kAsyncDisable) {
      if (ctl_ == Ctl::kAsync && mode_pending_ && mode_at_ == 0 && (ctl_suppressed_ || ip_ == ctl_ip_) &&
          !AsyncHeldBack()) [[unlikely]] {
        // A MODE.Exec read before the asynchronous FUP(s): libipt's
        // exec-mode event comes off evb_tip first, bound to the TIP's IP
        // (pt_qry_decode_tip, pt_qry_event_tip; pt_insn_check_ip_event
        // holds it until the flow gets there): the mode changes there,
        // before the asynchronous branch behind it.
        ApplyPendingMode();
        continue;
      }
      if (ip_ == ctl_from_ && !AsyncModeFirst() && !AsyncHeldBack()) {
        if (const int err = bound_pending_ ? TakeBoundAtIp() : 0) {
          synced_ = false;
          return err;
        }
        if (mode_pending_ && mode_at_ == 0) ApplyPendingMode(ctl_ == Ctl::kAsyncDisable);  // (BranchPastAsync)
        QueueEventTraceHeld();  // (a CFE with this FUP, and its EVDs: right before)
        if (ctl_ == Ctl::kAsyncDisable) {
          Queue(FlowEvent{.type = FlowEvent::Type::kAsyncDisabled, .ip_suppressed = ctl_suppressed_, .ip = ctl_ip_,
                          .from = ip_, .offset = ctl_offset_});
          enabled_ = false;
          last_direct_ = false;
          ctl_ = Ctl::kNone;
          // A MODE.Exec read right after the FUP: its exec-mode event comes
          // next off evb_tip, the IP suppressed (pt_qry_event_tip_pgd).
          if (!tip_status_.empty()) {
            ReleaseTipStatus(true);  // (and such a MODE.Exec among the PIPs and VMCSs there)
          } else if (mode_pending_ && mode_at_ == 1) {
            ApplyPendingMode(true);
          }
          if (!fups_behind_.empty()) [[unlikely]] {
            // Another asynchronous FUP waits for the TIP.PGD: libipt hands
            // out its disable event next (pt_qry_decode_tip_pgd), while
            // tracing is disabled — rejected at its IP (pt_insn_event:
            // -pte_bad_context); elsewhere pt_insn_next has no enable
            // (-pte_no_enable), or, the TIP.PGD gone with that last event on
            // evb_tip, the status of the read-ahead past it (-pte_eos, a
            // packet error there).
            const std::string what = fmt::format("asynchronous FUP (IP {:#x}) waits for the TIP.PGD at {:#x} that "
                                                 "disabled tracing", fups_behind_.front(), ctl_offset_);
            const bool last = fups_behind_.size() == 1 && !(mode_pending_ && mode_at_ > 1) && tip_status_.empty();
            uint64_t at = 0;
            const int end = fups_behind_.front() != ip_ && last ? ReadAheadEos(&at) : 0;
            if (end == 0 || end == ENODATA) {
              deferred_error_ = Fail(end == 0 ? EBADMSG : ENODATA, end == 0 ? what : what + ", then the end of the trace");
            } else {
              deferred_error_ = Fail(end, fmt::format("{} at offset {:#x} (after the {})",
                                                      PacketDecoder::ErrorDescription(end), at, what));
              error_offset_ = at;
            }
            fups_behind_.clear();
            tip_status_.clear();
            continue;
          }
          if (const int err = PeekAfterIp()) {
            synced_ = false;
            return err;
          }
          continue;
        }
        if (ctl_suppressed_) {
          synced_ = false;
          return Fail(EBADMSG, fmt::format("FUP+TIP at {:#x}: the TIP suppresses the IP", ctl_offset_));
        }
        Queue(FlowEvent{.type = FlowEvent::Type::kAsyncBranch, .ip = ctl_ip_, .from = ip_, .offset = ctl_offset_});
        ip_ = ctl_ip_;
        last_direct_ = false;
        if (!tip_status_.empty()) ReleaseTipStatus(false);  // (a MODE.Exec among them too; below otherwise)
        if (mode_at_ != 0) --mode_at_;  // (a MODE.Exec behind this FUP: one FUP fewer before it)
        if (!fups_behind_.empty()) [[unlikely]] {
          // Another asynchronous FUP waits for the same TIP: libipt's TIP
          // stays (pt_qry_decode_tip consumes it with the last event on
          // evb_tip), an asynchronous branch from that FUP's IP to it — after
          // a MODE.Exec read before that FUP, whose exec-mode event binds to
          // the TIP's IP, where the flow is now.
          ctl_from_ = fups_behind_.front();
          fups_behind_.erase(fups_behind_.begin());
          NoteEvent(false, 0);
          continue;
        }
        if (const int err = take_mode_tip()) return err;
        continue;
      }
    } else if (ctl_ == Ctl::kTipPgd && tnt_count_ == 0 && last_direct_ && !ctl_suppressed_ && ctl_ip_ == ip_) {
      // A direct branch left the traced region (SDM §33.2.5.3 IP filtering).
      // (last_direct_: the last block ended with one and brought the flow
      // here; an enable, asynchronous event or overflow clears it — libipt
      // binds a disable with an IP to an instruction, pt_insn_at_disabled_event,
      // and decodes none at an enable's IP before the TIP.PGD.)
      Queue(FlowEvent{.type = FlowEvent::Type::kDisabled, .ip = ctl_ip_, .offset = ctl_offset_});
      enabled_ = false;
      last_direct_ = false;
      ctl_ = Ctl::kNone;
      continue;
    }

    if (mode_ == ExecMode::kInvalid) [[unlikely]] {
      // No MODE.Exec since the sync, or one with the reserved CS.L=1 CS.D=1:
      // libipt's mode is unknown (ptem_unknown), and it decodes no
      // instruction in it (-pte_bad_insn) — after it read none where no
      // code is (-pte_nomap).
      synced_ = false;
      if (image_->Read(ip_).empty()) return Fail(ENXIO, fmt::format("no object code at {:#x}", ip_));
      return Fail(EILSEQ, fmt::format("no execution mode at {:#x} (no MODE.Exec since the PSB, or the reserved "
                                      "CS.L=1 CS.D=1)", ip_));
    }
    if (cache_->CheckGeneration()) hint_ = link_block_ = 0;
    uint32_t bi;
    if (hint_ != 0 && cache_->block(hint_ - 1).ip == ip_ && cache_->block(hint_ - 1).mode() == mode_) [[likely]] {
      bi = hint_ - 1;
    } else {
      bi = FindAndLink();  // (a link to fill in, or a wrong guess to correct)
    }
    hint_ = link_block_ = 0;
    // A copy: the stores to `step` below could alias the cache, and would
    // make the compiler load the block's fields again after each.
    const Block blk = cache_->block(bi);
    const Block* const b = &blk;
    bool async_blocked = false;  // (an asynchronous event in this block that libipt holds back)
    // Start loading both possible successors while this block is handled:
    // the walk is bound by these loads.
    cache_->Prefetch(b->next[0]);
    cache_->Prefetch(b->next[1]);
    bound_from_ = 0;  // (CheckBound() goes on from here: not from an earlier block's instruction)
    if (bound_pending_) [[unlikely]] {
      // (Up to an asynchronous event inside the block: libipt takes it at
      // its instruction only if no event before it is held then.)
      uint32_t async_at = kNoFail;
      if (IsAsync(ctl_) && AsyncBindIp() > b->ip && AsyncBindIp() < b->end()) {
        const uint8_t* lengths = cache_->lengths(*b);
        uint64_t x = b->ip;
        uint32_t i = 0;
        while (x < AsyncBindIp()) x += lengths[i++];
        if (x == AsyncBindIp()) async_at = i;
      }
      if (const uint32_t at = ReachBound(*b, 0, async_at); at != kNoFail) return CutAtBoundFailure(step, *b, at);
      if (async_at != kNoFail && bound_pending_) {
        if (const uint32_t at = ReachBound(*b, async_at); at != kNoFail) return CutAtBoundFailure(step, *b, at);
        async_blocked = true;
      }
    }
    if (b->ninsn() == 0) [[unlikely]] {
      synced_ = false;
      return code_error(Fail(b->error(), b->error() == ENXIO ? fmt::format("no object code at {:#x}", ip_)
                                                         : fmt::format("invalid instruction at {:#x}", ip_)));
    }
    FlowBlock& out = step->block;
    step->kind = FlowStep::kBlock;
    out.ip = b->ip;
    out.mode = b->mode();
    out.lengths = cache_->lengths(*b);
    out.time = time_;

    if (const uint64_t later_ip = later_.empty() ? kAtNone : later_.front().at;
        later_ip > b->ip && later_ip < b->end() &&
        !((ctl_ == Ctl::kAsync || ctl_ == Ctl::kAsyncDisable) && !async_blocked && AsyncBindIp() > b->ip &&
          AsyncBindIp() < later_ip)) {
      // Events wait for an IP inside this block: run up to it.
      if (CutBlockAt(*b, later_ip, &out)) return 0;
    }
    if ((ctl_ == Ctl::kAsync || ctl_ == Ctl::kAsyncDisable) && !async_blocked && AsyncBindIp() > b->ip &&
        AsyncBindIp() < b->end()) {
      // The event is inside this block: run up to it.
      if (CutBlockAt(*b, AsyncBindIp(), &out)) return 0;
    }

    const BranchClass last_branch = b->branch();
    out.ninsn = b->ninsn();
    out.end_ip = b->end();
    out.truncated = false;
    StoreLast(out.last, *b);
    last_direct_ = last_branch == BranchClass::kDirectJump || last_branch == BranchClass::kDirectCall;
    if (b->has_error()) [[unlikely]] {
      // The block stops before an instruction that cannot be decoded: the
      // error comes after the block.
      ip_ = b->end();
      deferred_error_ = code_error(Fail(b->error(), b->error() == ENXIO ? fmt::format("no object code at {:#x}", ip_)
                                                                    : fmt::format("invalid instruction at {:#x}", ip_)));
      out.truncated = true;
      return 0;
    }
    // The common case inline: a conditional branch with a TNT bit at hand.
    if (last_branch == BranchClass::kCondJump && tnt_count_ != 0 && !bound_wall_) [[likely]] {
      const uint32_t taken = TakeCondJump(*b);
      if (b->next[taken] != 0) {
        hint_ = b->next[taken];
      } else {
        link_block_ = bi + 1;
        link_k_ = static_cast<uint8_t>(taken);
        link_ip_ = ip_;
      }
      return 0;
    }
    const int err = Resolve(bi);
    if (err != 0) [[unlikely]] return CutAtError(&out, *b, err);
    return 0;
  }
}


// The last instruction of `b` executed: where does the flow go?
int FlowDecoder::Resolve(uint32_t block) {
  Block& b = cache_->block(block);
  const Insn x = b.last();
  // Follow (or remember to fill in) the successor link k of this block.
  auto link = [&](int k) {
    if (b.next[k] != 0) {
      hint_ = b.next[k];
    } else {
      link_block_ = block + 1;
      link_k_ = static_cast<uint8_t>(k);
      link_ip_ = ip_;
    }
  };
  // Returns and indirect branches: next[1] remembers the last target (a
  // guess, checked against the IP before use), updated when it changes.
  auto predict = [&]() {
    hint_ = b.next[1];
    link_block_ = block + 1;
    link_k_ = 1;
    link_ip_ = ip_;
  };
  // A block left with no packet: too many in a row is a loop the trace never leaves.
  auto step_without_packet = [&]() -> int {
    if (++steps_without_packet_ <= options_.max_steps_without_packet) return 0;
    return Fail(EBADMSG, fmt::format("{} blocks without a packet (endless loop?) at {:#x}", steps_without_packet_, x.ip));
  };
  // The packet the branch needs (NeedControl()). A packet error met while
  // reading ahead (sticky_error_) lies behind the events read before it:
  // while one of those is held, unreached, with another behind it, libipt's
  // query stops at that one first (CheckBound(): -pte_bad_query).
  // A TIP.PGE or TIP.PGD cut by the end of the trace while libipt holds an
  // event the flow has not reached (bound_pending_): its instruction decoder
  // has not asked for the next event, so the branch's query meets the
  // packet, an event ahead known by its opcode (pt_df_fetch), and fails
  // before it decodes it (pt_qry_cache_tnt, pt_qry_indirect_branch:
  // pt_qry_will_event, -pte_bad_query). With none held, the event query
  // decodes it first: the end of the trace.
  auto need_control = [&]() -> int {
    if (bound_wall_ && sticky_error_ != 0 && tnt_count_ == 0 && ctl_ == Ctl::kNone) [[unlikely]] {
      if (const int err = CheckBound(b)) return err;
    }
    const int err = NeedControl();
    if (err == EMSGSIZE && bound_pending_) [[unlikely]] {
      const uint64_t at = error_offset_;
      const std::span<const uint8_t> trace = packets_.trace();
      const uint8_t op = at < trace.size() ? trace[at] & 0x1f : 0;
      if (op == 0x11 || op == 0x01) {  // TIP.PGE, TIP.PGD
        const int bad = Fail(EBADMSG, fmt::format("{} at {:#x}: {} at {:#x} (cut by the end of the trace) is an event "
                                                  "ahead of its packet while an event is held",
                                                  BranchClassName(x.branch), x.ip, op == 0x11 ? "TIP.PGE" : "TIP.PGD", at));
        error_offset_ = at;
        return bad;
      }
    }
    return err;
  };
  switch (x.branch) {
    case BranchClass::kNone:
    case BranchClass::kPtwrite:
      ip_ = x.next_ip();
      link(0);
      return step_without_packet();
    case BranchClass::kDirectCall:
      if (x.target != x.next_ip()) PushReturn(x.next_ip(), block);
      [[fallthrough]];
    case BranchClass::kDirectJump:
      ip_ = x.target;
      link(1);
      return step_without_packet();
    case BranchClass::kCondJump:
      if (const int err = need_control()) [[unlikely]] return CondJumpPacketError(x, err);
      if (bound_wall_) [[unlikely]] {
        if (const int err = CheckBound(b)) return err;
      }
      if (tnt_count_ != 0) [[likely]] {
        link(static_cast<int>(TakeCondJump(b)));
        return 0;
      }
      if (IsAsync(ctl_) || PgdHeldPast()) {
        if (const int r = BranchPastAsync(x); r != kNotPast) return r == kRetry ? Resolve(block) : r;
      }
      if (UnboundControl()) return BeyondControl(x);
      if (ctl_ == Ctl::kTipPgd) return TakeTip(nullptr);
      return Fail(EBADMSG, fmt::format("conditional branch at {:#x}: no TNT bit", x.ip));
    case BranchClass::kReturn:
      if (const int err = need_control()) return err;
      if (bound_wall_) [[unlikely]] {
        if (const int err = CheckBound(b)) return err;
      }
      if (tnt_count_ != 0) {
        --tnt_count_;
        if (((tnt_bits_ >> tnt_count_) & 1) == 0)
          return Fail(EBADMSG, fmt::format("return at {:#x}: not-taken TNT bit", x.ip));
        if (ret_count_ == 0)
          return Fail(EBADMSG, fmt::format("compressed return at {:#x} with an empty return stack", x.ip));
        PopReturn(b, block);
        return 0;
      }
      if (IsAsync(ctl_) || PgdHeldPast()) {
        if (const int r = BranchPastAsync(x); r != kNotPast) {
          if (r == kRetry) return Resolve(block);
          if (r == 0) predict();
          return r;
        }
      }
      if (UnboundControl()) return BeyondControl(x);
      if (const int err = TakeTip(nullptr)) return err;
      predict();
      return 0;
    case BranchClass::kIndirectCall:
    case BranchClass::kIndirectJump:
    case BranchClass::kFarTransfer:
      if (const int err = need_control()) return err;
      if (bound_wall_) [[unlikely]] {
        if (const int err = CheckBound(b)) return err;
      }
      if (tnt_count_ != 0 && ctl_ == Ctl::kNone) [[unlikely]] {
        // libipt's indirect-branch query takes the next TIP while TNT bits
        // are still cached (it fails only if a TNT packet comes first, and
        // then before it decodes that packet or reads past it:
        // pt_qry_indirect_branch, -pte_bad_query): the bits stay for the
        // branches after it.
        if (const int err = EventBeforeTip(x)) return err;
        const uint64_t bits = tnt_bits_;
        const uint32_t count = tnt_count_;
        tnt_count_ = 0;
        tnt_held_ = true;
        const int fetched = FetchControl();
        tnt_held_ = false;
        if (fetched != 0) return fetched;  // the end of the trace: -pte_eos
        tnt_bits_ = bits;  // (a TNT packet fetched instead of a TIP: the error below)
        tnt_count_ = count;
      }
      if (tnt_count_ != 0 && ctl_ != Ctl::kTip)
        return Fail(EBADMSG, fmt::format("{} at {:#x}: a TNT bit where a TIP was needed",
                                         BranchClassName(x.branch), x.ip));
      if (x.branch == BranchClass::kIndirectCall) PushReturn(x.next_ip(), block);
      if (x.branch != BranchClass::kFarTransfer && (IsAsync(ctl_) || PgdHeldPast())) {
        if (const int r = BranchPastAsync(x); r != kNotPast) {
          if (r == 0 && enabled_) predict();
          return r;
        }
      }
      if (x.branch != BranchClass::kFarTransfer ? UnboundControl() : IsAsync(ctl_)) return BeyondControl(x);
      if (const int err = TakeTip(nullptr)) return err;
      if (enabled_) predict();
      return 0;
  }
  return 0;
}

// The held control packet is a TIP.PGD without an IP (no MODE.Exec bound to
// it): libipt's disabled event, which binds to a far transfer only
// (pt_insn_at_disabled_event), is taken and held, so a near branch's query
// reads the packets after it, as past a held FUP+TIP (BranchPastAsync()).
bool FlowDecoder::PgdHeldPast() const { return ctl_ == Ctl::kTipPgd && ctl_suppressed_ && !mode_pending_; }

// A near branch `x` that needs a packet while an asynchronous FUP+TIP whose
// FUP IP the flow has not reached is held: libipt's query decoder took the
// pair as an event (pt_qry_decode_fup, pt_qry_decode_tip), which its
// instruction decoder holds (pt_insn_check_ip_event), so the branch's query
// reads the packets after the TIP (pt_qry_cond_branch, pt_qry_indirect_branch):
// a TNT for a conditional branch or a return, a TIP for an indirect branch or
// a return, is the branch's, and the event stays held. Returns 0 (the TIP
// taken: ip_ set), kRetry (TNT bits fetched: resolve the branch again), an
// error, or kNotPast (another packet next: BeyondControl()). An indirect
// jump or call caches a TNT it meets first and takes the TIP after it.
int FlowDecoder::BranchPastAsync(const Insn& x) {
  if (mode_pending_ && mode_at_ == 0 && (ctl_ == Ctl::kAsyncDisable || ctl_suppressed_)) {
    // A MODE.Exec read before the FUP: its exec-mode event came first off
    // evb_tip with the IP suppressed (pt_qry_event_tip_pgd), and went at
    // once; the FUP's event, the last, let the TIP go.
    ApplyPendingMode(ctl_ == Ctl::kAsyncDisable);
  }
  if (have_unread_ || mode_pending_ || fup_pending_ || !fups_behind_.empty() || !tip_status_.empty() ||
      tnt_count_ != 0 || AsyncHeldBack())
    return kNotPast;
  const bool cond = x.branch == BranchClass::kCondJump, ret = x.branch == BranchClass::kReturn;
  Packet q;
  if (NextPastStatus(&q) != 0) return kNotPast;
  const bool tnt = q.type == PacketType::kTnt8 || q.type == PacketType::kTnt64;
  if (!tnt && (q.type != PacketType::kTip || cond)) return kNotPast;
  const Ctl held = ctl_;
  const bool held_suppressed = ctl_suppressed_;
  const uint64_t held_ip = ctl_ip_, held_offset = ctl_offset_;
  ctl_ = Ctl::kNone;
  int err = FetchControl();
  if (err == 0 && !cond && !ret && tnt_count_ != 0 && ctl_ == Ctl::kNone) {
    // An indirect jump or call: its query decodes a single TNT packet into
    // the empty TNT cache on its way to the TIP, and the bits stay for the
    // branches after it (pt_qry_indirect_branch); an event packet before
    // the TIP (EventBeforeTip()) or a second TNT fails it (-pte_bad_query).
    err = EventBeforeTip(x);
    if (err == 0) {
      const uint64_t bits = tnt_bits_;
      const uint32_t count = tnt_count_;
      tnt_count_ = 0;
      tnt_held_ = true;
      err = FetchControl();
      tnt_held_ = false;
      if (err == 0 && tnt_count_ != 0)
        err = Fail(EBADMSG, fmt::format("{} at {:#x}: a second TNT before its TIP", BranchClassName(x.branch), x.ip));
      tnt_bits_ = bits;
      tnt_count_ = count;
    }
  }
  const bool tip = ctl_ == Ctl::kTip, tip_suppressed = ctl_suppressed_;
  const uint64_t tip_ip = ctl_ip_;
  ctl_ = held;
  ctl_suppressed_ = held_suppressed;
  ctl_ip_ = held_ip;
  ctl_offset_ = held_offset;
  if (err != 0) return err;
  if (!tip && !cond && !ret && tnt_count_ != 0) {
    // (The indirect branch's query cached a TNT and met no TIP after it:
    // an event packet or a second TNT, -pte_bad_query.)
    return Fail(EBADMSG, fmt::format("{} at {:#x}: no TIP after the TNT its query read past the held event",
                                     BranchClassName(x.branch), x.ip));
  }
  if (!tip) return tnt_count_ != 0 ? kRetry : kNotPast;
  if (tip_suppressed) return Fail(EBADMSG, fmt::format("{} at {:#x}: TIP with a suppressed IP", BranchClassName(x.branch), x.ip));
  ip_ = tip_ip;
  return 0;
}

// A conditional branch `x` with no TNT bit cached, whose fetch of the next
// TNT or control packet failed with `err`: a TIP cut by the end of the
// trace (EMSGSIZE) that no event binds to (no asynchronous FUP or MODE.Exec
// before it) is libipt's -pte_bad_query, not -pte_eos — its TNT query
// (pt_qry_cond_branch -> pt_qry_cache_tnt) knows the next packet by its
// opcode alone (pt_df_fetch) and fails at a TIP that is not part of an
// event before it decodes the TIP's IP bytes (pt_pkt_read_ip: -pte_eos).
// Any other error is `err`.
__attribute__((noinline, cold)) int FlowDecoder::CondJumpPacketError(const Insn& x, int err) {
  if (err != EMSGSIZE || fup_pending_ || fup_cut_ || mode_pending_) return err;
  const std::span<const uint8_t> trace = packets_.trace();
  const uint64_t at = error_offset_;
  if (at >= trace.size() || (trace[at] & 0x1f) != 0x0d) return err;  // (TIP: IPBytes:01101)
  const int bad = Fail(EBADMSG, fmt::format("conditional branch at {:#x}: TIP at {:#x} where a TNT bit was needed (the TIP cut by the end of the trace)", x.ip, at));
  error_offset_ = at;
  return bad;
}

// An indirect branch or far transfer `x` while TNT bits are cached: libipt
// signals no event while its TNT cache holds bits (pt_qry_status_flags), so
// its instruction decoder has not asked for the event packet that may come
// next, and the branch's query meets it before any TIP: "an event ahead"
// (pt_qry_indirect_branch, pt_qry_will_event: -pte_bad_query) — any packet
// that makes an event (pdff_event in pt_decoder_function.c) after PAD and
// timing packets. Returns that error (error_offset_ at the event packet),
// or 0 (a TIP, TNT, FUP, PSB, packet error or the end: as FetchControl()).
int FlowDecoder::EventBeforeTip(const Insn& x) {
  PacketDecoder ahead = packets_;
  bool unread = have_unread_;
  for (;;) {
    Packet q;
    if (unread) {
      q = unread_;
      unread = false;
    } else if (ahead.Next(q) != 0) {
      return 0;
    }
    if (internal::IsReadAheadStatus(q.type)) continue;
    switch (q.type) {
      case PacketType::kTipPge: case PacketType::kTipPgd: case PacketType::kPip: case PacketType::kOvf:
      case PacketType::kModeExec: case PacketType::kModeTsx: case PacketType::kCbr: case PacketType::kTraceStop:
      case PacketType::kVmcs: case PacketType::kMnt: case PacketType::kExStop: case PacketType::kMwait:
      case PacketType::kPwre: case PacketType::kPwrx: case PacketType::kPtw: {
        const int err = Fail(EBADMSG, fmt::format("{} at {:#x} with TNT bits cached: {} at {:#x} before its TIP",
                                                  BranchClassName(x.branch), x.ip, PacketName(q.type), q.offset));
        error_offset_ = q.offset;
        return err;
      }
      default:
        return 0;
    }
  }
}

// A TIP, TIP.PGD or asynchronous FUP while tracing is disabled: the trace
// does not fit (SDM §33.2.5: TIP.PGD and FUP+TIP come only while PacketEn
// is 1). libipt's query decoder takes a TIP.PGD or FUP as an event, which
// its instruction decoder cannot bind while disabled (pt_insn_check_ip_event);
// pt_insn_next then answers from the status of the read-ahead after that
// event: -pte_eos if it reached the end of the trace (only PAD and timing
// follow), the read-ahead's packet error if it met one, else -pte_no_enable.
// A TIP is no event: the read-ahead stops at it, -pte_no_enable.
int FlowDecoder::DisabledControl() {
  const std::string what =
      fmt::format("{} at {:#x} while tracing is disabled",
                  ctl_ == Ctl::kTip ? "TIP" : ctl_ == Ctl::kTipPgd ? "TIP.PGD" : "FUP", ctl_offset_);
  if (ctl_ != Ctl::kTip) {
    uint64_t at = 0;
    const int end = ReadAheadEos(&at);
    if (end == ENODATA) return Fail(ENODATA, what + ", then the end of the trace");
    if (end != 0) {
      const int err = Fail(end, fmt::format("{} at offset {:#x} (after the {})", PacketDecoder::ErrorDescription(end),
                                            at, what));
      error_offset_ = at;
      return err;
    }
  }
  return Fail(EBADMSG, what);
}

// The branch just executed takes its target from the held TIP, or is where
// a held TIP.PGD stops tracing.
int FlowDecoder::TakeTip(uint64_t*) {
  if (ctl_ == Ctl::kTip) {
    if (ctl_suppressed_) [[unlikely]] {
      // libipt reads ahead after the TIP before it looks at its IP: a bad
      // packet there is the error (pt_qry_indirect_branch), else -pte_noip.
      if (const int err = CheckAhead()) return err;
      return Fail(EBADMSG, fmt::format("TIP at {:#x} with a suppressed IP", ctl_offset_));
    }
    ip_ = ctl_ip_;
    ctl_ = Ctl::kNone;
    ApplyPendingMode();
    return PeekAfterIp();
  }
  if (ctl_ == Ctl::kTipPgd) {
    Queue(FlowEvent{.type = FlowEvent::Type::kDisabled, .ip_suppressed = ctl_suppressed_, .ip = ctl_ip_,
                    .offset = ctl_offset_});
    enabled_ = false;
    if (!ctl_suppressed_) ip_ = ctl_ip_;
    ctl_ = Ctl::kNone;
    return PeekAfterIp();
  }
  return Fail(EBADMSG, fmt::format("branch at {:#x}: no TIP", ip_));
}

// The flow runs through `b` from its instruction `from` on: at each
// instruction, libipt lets the held event go if the flow is at its IP, and
// with it the events behind it up to the next one bound to another IP
// (NoteEvent; pt_insn_check_ip_event). A PTW's event waits there
// (pt_insn_check_ip_event holds a ptwrite event while tracing is enabled):
// it binds to the instruction itself, and at most one to an instruction
// (pt_insn_check_insn_event, bound_ptwrite). After it, the flow moves on
// past the instruction before libipt looks at the next event's IP
// (pt_insn_proceed_postponed): events at the same IP, a second PTW's
// included, wait for the flow to come back there. A PTW without an IP binds
// to the next PTWRITE (which ends a block).
// Returns the instruction at which an event that fails goes (Held::fails;
// libipt looks at the events at an IP before it decodes the instruction
// there: 0 also for a block with no instruction), or kNoFail.
// `stop`: at that instruction only the events bound to its IP go (as
// libipt looks at them before it decodes the instruction there).
uint32_t FlowDecoder::ReachBound(const Block& b, uint32_t from, uint32_t stop) {
  const uint8_t* lengths = cache_->lengths(b);
  size_t head = 0;
  uint32_t fail_at = kNoFail;
  uint64_t x = b.ip;
  for (uint32_t i = 0; i < from && i < b.ninsn(); ++i) x += lengths[i];
  bound_from_ = from;
  const uint32_t n = std::max<uint32_t>(b.ninsn(), 1);
  for (uint32_t i = from; i < n && head < bound_.size() && fail_at == kNoFail; ++i) {
    while (head < bound_.size() && !bound_[head].ptwrite && (bound_[head].ip == x || bound_[head].ip == kUnbound)) {
      if (bound_[head++].fails) {
        fail_at = i;
        break;
      }
    }
    if (i == stop) break;
    if (fail_at == kNoFail && i < b.ninsn() && head < bound_.size() && bound_[head].ptwrite &&
        (bound_[head].ip == x || (bound_[head].ip == kUnbound && BindsHeld(b, i, x, bound_[head].binds)))) {
      if (bound_[head].binds == 0 && !later_.empty()) ptw_ready_.push_back(x);  // (a held PTW event's PTWRITE)
      ++head;
      bound_from_ = i + 1;
    }
    if (i < b.ninsn()) x += lengths[i];
  }
  // (An unbound event left at the head goes at once; one that fails, at the
  // next instruction.)
  while (fail_at == kNoFail && head < bound_.size() && bound_[head].ip == kUnbound && !bound_[head].fails &&
         !bound_[head].ptwrite)
    ++head;
  bound_.erase(bound_.begin(), bound_.begin() + static_cast<long>(head));
  bound_pending_ = !bound_.empty();
  bound_wall_ = bound_.size() >= 2;
  return fail_at;
}

// Whether libipt still holds an event read before the asynchronous
// branch's that the flow has not reached (bound_: the first is bound to
// another IP or to an instruction): it has not asked for the asynchronous
// branch's event yet, so that is not taken, and its TIP stays
// (pt_insn_check_ip_event, pt_qry_decode_tip).
bool FlowDecoder::AsyncHeldBack() const {
  if (!bound_pending_) return false;
  const Held& h = bound_.front();
  return h.ptwrite || (h.ip != kUnbound && h.ip != ip_);
}

// Whether a held event waiting for an instruction (Held::ptwrite, unbound)
// binds to instruction `i` of `b` (at `x`): a PTW's to a PTWRITE (which
// ends a block); a PIP's to MOV CR3, a VMCS's to VMPTRLD, both to
// VMLAUNCH, VMRESUME and far branches (libipt pt_insn_binds_to_pip,
// pt_insn_binds_to_vmcs).
bool FlowDecoder::BindsHeld(const Block& b, uint32_t i, uint64_t x, uint8_t binds) const {
  const bool last = i + 1 == b.ninsn();
  if (binds == 0) return last && b.branch() == BranchClass::kPtwrite;
  if (last && b.branch() == BranchClass::kFarTransfer) return true;
  const std::span<const uint8_t> c = image_->Read(x);
  const LegacyPrefixes prefixes = ScanLegacyPrefixes(c);
  size_t n = prefixes.count;
  if (b.mode() == ExecMode::k64Bit && n < c.size() && (c[n] & 0xf0) == 0x40) ++n;  // REX
  if (n + 2 >= c.size() || c[n] != 0x0f) return false;
  const uint8_t op = c[n + 1], modrm = c[n + 2], reg = (modrm >> 3) & 7;
  if (op == 0x01 && (modrm == 0xc2 || modrm == 0xc3)) return true;  // VMLAUNCH, VMRESUME
  if (binds == 1) return op == 0x22 && reg == 3;                      // MOV CR3, r
  return op == 0xc7 && reg == 6 && (modrm >> 6) != 3 && !prefixes.opsize && !prefixes.rep;  // VMPTRLD m64
}

// The branch that ends `b` needs a packet: libipt's query fails while it
// holds an event that the flow has not reached and another event waits
// behind it (NoteEvent).
int FlowDecoder::CheckBound(const Block& b) {
  if (ReachBound(b, bound_from_) != kNoFail) return FailStatusUpdate(b.last().ip);
  if (!bound_wall_) return 0;
  const Held& held = bound_.front();
  return Fail(EBADMSG, fmt::format("{} at {:#x}: its packet lies behind an event, and the event before that one "
                                   "is bound to {}, which the flow has not reached",
                                   BranchClassName(b.branch()), b.last().ip,
                                   held.ip == kUnbound ? std::string(held.binds == 0   ? "the next PTWRITE"
                                                                     : held.binds == 1 ? "the next MOV CR3 or far branch"
                                                                                       : "the next VMPTRLD or far branch")
                                                       : fmt::format("IP {:#x}", held.ip)));
}

// The flow got to a mid-flow PSB+'s MODE.Exec that contradicts the current
// mode while tracing is enabled: libipt's instruction decoder rejects the
// status update when it takes the event at `ip` (pt_insn_process_exec_mode:
// -pte_bad_status_update). Or to a TraceStop read while tracing is enabled
// (bad_is_stop_): libipt's pt_insn_process_stop rejects it (-pte_bad_context).
int FlowDecoder::FailStatusUpdate(uint64_t ip) {
  if (bad_is_stop_)  // (libipt pt_insn_process_stop: -pte_bad_context)
    return Fail(EBADMSG, fmt::format("at {:#x}: TraceStop at {:#x} while tracing is enabled (no TIP.PGD before it)",
                                     ip, bad_mode_offset_));
  return Fail(EBADMSG, fmt::format("at {:#x}: the PSB+ status update (MODE.Exec at {:#x}) contradicts the {} "
                                   "execution mode", ip, bad_mode_offset_, ExecModeName(mode_)));
}

// Events that bind to the instructions of `b` (bound_pending_) let go, up
// to one that fails at its instruction `at` (ReachBound): the instructions
// before it run, then the error (the block cut there; or the error at once).
bool FlowDecoder::CutBlockAt(const Block& b, uint64_t at, FlowBlock* out) {
  uint64_t x = b.ip;
  uint32_t i = 0;
  while (x < at) x += out->lengths[i++];
  if (x != at) return false;
  out->ninsn = i;
  out->end_ip = x;
  out->truncated = true;
  out->last = Insn{.ip = x - out->lengths[i - 1], .length = out->lengths[i - 1], .mode = b.mode()};
  ip_ = x;
  last_direct_ = false;
  return true;
}

int FlowDecoder::CutAtBoundFailure(FlowStep* step, const Block& b, uint32_t at) {
  if (at == 0) {
    synced_ = false;
    return FailStatusUpdate(ip_);
  }
  const uint8_t* lengths = cache_->lengths(b);
  uint64_t x = b.ip;
  for (uint32_t i = 0; i < at; ++i) x += lengths[i];
  FlowBlock& out = step->block;
  step->kind = FlowStep::kBlock;
  out.ip = b.ip;
  out.mode = b.mode();
  out.lengths = lengths;
  out.time = time_;
  out.ninsn = at;
  out.end_ip = x;
  out.truncated = true;
  out.last = Insn{.ip = x - lengths[at - 1], .length = lengths[at - 1], .mode = b.mode()};
  ip_ = x;
  deferred_error_ = FailStatusUpdate(x);
  return 0;
}

// A MODE.Exec read before a TIP, FUP+TIP or TIP.PGE takes effect at its
// target (ip_): an event when the mode changes.
// (ip_suppressed: libipt gives the event no IP — bound to a TIP.PGD.)
void FlowDecoder::ApplyPendingMode(bool ip_suppressed) {
  if (!mode_pending_) return;
  mode_pending_ = false;
  // (An event also where the mode stays: libipt reports every MODE.Exec's,
  // pt_qry_event_tip / _tip_pge / _tip_pgd.)
  mode_ = pending_mode_;
  Queue(FlowEvent{.type = FlowEvent::Type::kExecMode, .ip_suppressed = ip_suppressed, .mode = mode_,
                  .ip = ip_suppressed ? 0 : ip_, .offset = pending_mode_offset_});
}

}  // namespace perftest::pt
