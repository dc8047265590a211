// FlowDecoder (flow_decoder.h), in five files by responsibility:
//   flow_decoder.cc            event names, construction, errors, and the fast
//                              path behind the inline Next(): NextFill() (a
//                              cached block with nothing pending), WalkStep(),
//                              WalkRefill()
//   flow_decoder_slow.cc       NextSlow(): events, enable/disable, asynchronous
//                              events, overflow, cache misses; Resolve(), TakeTip()
//   flow_decoder_packets.cc    packets to control state, events and timing
//                              (FetchControlPackets, Queue, Timing)
//   flow_decoder_lookahead.cc  libipt's read-ahead rules: which packet error
//                              fails which branch (CheckAhead, PeekAfterIp, ...)
//   flow_decoder_sync.cc       SyncForward/SyncSet and the PSB+
// internal/flow_decoder_inline.h holds what several of them inline (among it
// FetchControl(), the packets read straight from their bytes).
#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "harness/pt/flow_decoder.h"
#include "harness/pt/internal/flow_decoder_inline.h"

namespace perftest::pt {

using internal::StoreLast;

std::string_view FlowEventName(FlowEvent::Type type) {
  using T = FlowEvent::Type;
  switch (type) {
    case T::kEnabled: return "enabled";
    case T::kDisabled: return "disabled";
    case T::kAsyncDisabled: return "async-disabled";
    case T::kAsyncBranch: return "async-branch";
    case T::kOverflow: return "overflow";
    case T::kExecMode: return "exec-mode";
    case T::kTsx: return "tsx";
    case T::kPaging: return "paging";
    case T::kVmcs: return "vmcs";
    case T::kStop: return "stop";
    case T::kPtwrite: return "ptwrite";
    case T::kExStop: return "exstop";
    case T::kMwait: return "mwait";
    case T::kPwre: return "pwre";
    case T::kPwrx: return "pwrx";
    case T::kCbr: return "cbr";
    case T::kMnt: return "mnt";
    case T::kTsc: return "tsc";
    case T::kCfe: return "cfe";
    case T::kEvd: return "evd";
    case T::kTrig: return "trig";
  }
  return "unknown";
}

std::string ToString(const FlowEvent& e) {
  std::string s = fmt::format("{} @{:#x}", FlowEventName(e.type), e.offset);
  if (e.type == FlowEvent::Type::kAsyncBranch || e.type == FlowEvent::Type::kAsyncDisabled)
    s += fmt::format(" from={:#x}", e.from);
  s += e.ip_suppressed ? std::string(" ip=suppressed") : fmt::format(" ip={:#x}", e.ip);
  if (e.type == FlowEvent::Type::kEvd) s += fmt::format(" type={:#x}", e.evd_type);
  if (e.payload != 0) s += fmt::format(" payload={:#x}", e.payload);
  return s;
}

FlowDecoder::FlowDecoder(std::span<const uint8_t> trace, const Image* image, Options options)
    : packets_(trace, options.packets), image_(image), options_(options) {
  if (options.cache != nullptr) {
    cache_ = options.cache;
  } else {
    own_cache_ = std::make_unique<BlockCache>(image);
    cache_ = own_cache_.get();
  }
  walk_image_ = cache_->image();
}

// A packet error at the decoder's position (out of line: ReadPacket is inlined).
__attribute__((noinline, cold)) int FlowDecoder::FailPacket(int err) {
  error_offset_ = packets_.offset();
  if (options_.libipt_errors && err != ENODATA) DropEventsEndingAt(error_offset_);
  error_ip_ = ip_;
  error_message_ = fmt::format("{} at offset {:#x}", PacketDecoder::ErrorDescription(err), error_offset_);
  return err;
}

void FlowDecoder::Unread(const Packet& p) {
  unread_ = p;
  have_unread_ = true;
}

int FlowDecoder::Fail(int err, std::string message) {
  error_offset_ = packets_.offset();
  error_ip_ = ip_;
  error_message_ = std::move(message);
  return err;
}

// The flow leaves ip_ by an event before the instruction there runs (an
// overflow, an asynchronous branch or disable at ip_): libipt's instruction
// decoder first takes the events held for ip_ (pt_insn_check_ip_event: the
// flow is at their IP; e.g. a mid-flow PSB+ right after the TIP.PGE there),
// and the unbound ones behind them, as ReachBound() does at a block's first
// instruction. Returns FailStatusUpdate()'s error if one of them fails
// there, else 0.
int FlowDecoder::TakeBoundAtIp() {
  size_t head = 0;
  bool fails = false;
  while (!fails && head < bound_.size() && !bound_[head].ptwrite &&
         (bound_[head].ip == ip_ || bound_[head].ip == kUnbound))
    fails = bound_[head++].fails;
  bound_.erase(bound_.begin(), bound_.begin() + static_cast<long>(head));
  bound_pending_ = !bound_.empty();
  bound_wall_ = bound_.size() >= 2;
  return fails ? FailStatusUpdate(ip_) : 0;
}

// The common steps, with nothing pending: a block from the hint (or the
// cache) whose branch is a conditional branch with a TNT bit at hand, a
// direct jump or call, a compressed return, or an indirect branch or return
// whose TIP is held. Does exactly what NextSlow() would (which takes
// everything else), in a small function that touches the block once; then
// turns the walk on (walk_gen_) when Next() may take the following steps on
// the TNT bits left itself (WalkReady(), WalkInline()).
bool FlowDecoder::AtEndOfTrace() const {
  if (!enabled_ || !synced_ || tnt_count_ != 0 || ctl_ != Ctl::kNone || !events_.empty() || !later_.empty() ||
      bound_pending_ ||
      have_unread_ || deferred_error_ != 0 || sticky_error_ != 0 || !fup_held_.empty() || fup_pending_ ||
      mode_pending_)
    return false;
  PacketDecoder ahead = packets_;
  Packet p;
  int err;
  while ((err = ahead.Next(p)) == 0) {
    switch (p.type) {
      case PacketType::kPad: case PacketType::kTsc: case PacketType::kMtc: case PacketType::kTma:
      case PacketType::kCyc:
        continue;
      default:
        return false;
    }
  }
  return err == ENODATA;
}

__attribute__((noinline, cold)) int FlowDecoder::EndOfTrace() {
  end_of_trace_ = true;
  synced_ = false;
  error_offset_ = packets_.trace().size();
  error_ip_ = ip_;
  error_message_ = fmt::format("end of trace: the flow used up the trace at {:#x}", ip_);
  return ENODATA;
}

// Options::libipt_errors: the events not yet handed out whose packet the
// packet at `at`, which could not be decoded, follows (past PAD, timing
// packets and a MODE.Exec, which libipt's query for the event reads on
// through) are dropped: libipt loses them with its failing event query.
bool FlowDecoder::EventPacketBefore(uint64_t offset, uint64_t at) const {
  if (offset >= at) return false;
  PacketDecoder d(packets_.trace(), options_.packets);
  if (!d.SyncSet(offset).ok()) return false;
  Packet p;
  if (d.Next(p) != 0) return false;
  while (d.offset() < at) {
    if (d.Next(p) != 0) return false;
    if (!internal::IsReadAheadStatus(p.type) && p.type != PacketType::kModeExec) return false;
  }
  return d.offset() == at;
}

void FlowDecoder::DropEventsEndingAt(uint64_t at) {
  error_at_ = at;
  while (!later_.empty() && EventPacketBefore(later_.back().event.offset, at)) later_.pop_back();
  if (!later_.empty()) return;
  while (events_.size() > event_head_ && EventPacketBefore(events_.back().offset, at)) events_.pop_back();
  if (event_head_ == events_.size()) {
    events_.clear();
    event_head_ = 0;
  }
}

int FlowDecoder::NextFill(FlowStep* step) {
  if (options_.stop_at_end && AtEndOfTrace()) [[unlikely]] return EndOfTrace();
  walk_gen_ = kNoWalk;
  // (Events pending: NextSlow() empties events_ when it hands out the last.)
  if (!enabled_ || !synced_ || deferred_error_ != 0 || !events_.empty() || !later_.empty() || bound_pending_)
      [[unlikely]] {
    if (TakeQueuedEvent(step)) return 0;  // NextSlow()'s first move, here (about one step in ten)
    if (!enabled_ && synced_ && deferred_error_ == 0 && events_.empty() && !bound_pending_) return Enable(step);
    return NextSlow(step);
  }
  return NextFillBlock(step);
}

// NextFillBlock() with the packets the step needs at hand (TNT bits, or a
// control packet), or none to be had.
// (Inlined into NextFillBlock(); WalkRefill() has its own copy.)
inline __attribute__((always_inline)) int FlowDecoder::NextFillHeld(FlowStep* step) {
  // (A TIP.PGD that a direct branch reached goes before the block: NextSlow().)
  if ((ctl_ != Ctl::kNone && ctl_ != Ctl::kTip &&
       (ctl_ != Ctl::kTipPgd || (tnt_count_ == 0 && last_direct_ && !ctl_suppressed_ && ctl_ip_ == ip_))) ||
      cache_->Stale()) [[unlikely]]
    return NextSlow(step);
  // (A block from the hint has a valid mode if it is fast(): mode_ is valid.)
  uint32_t bi = hint_ - 1;
  if (hint_ == 0 || cache_->block(bi).ip != ip_ || cache_->block(bi).mode() != mode_) [[unlikely]] {
    if (mode_ == ExecMode::kInvalid) return NextSlow(step);
    bi = FindAndLink();  // (as NextSlow())
  }
  const Block& blk = cache_->block(bi);  // (a reference: a copy of the 32-byte aligned Block realigns the stack)
  if (!blk.fast()) [[unlikely]] return NextSlow(step);
  const BranchClass branch = blk.branch();
  const bool have_tnt = tnt_count_ != 0;
  // A TIP taken by an indirect branch, a return without a TNT bit or a far
  // transfer (Resolve() and TakeTip() with a held TIP).
  const bool tip_ok = !have_tnt && ctl_ == Ctl::kTip && !ctl_suppressed_ && !mode_pending_;
  // A TIP.PGD where a far transfer, or an indirect branch to its IP, leaves
  // the traced region (Resolve() and TakeTip(); a TIP.PGD without an IP
  // binds to far transfers only: UnboundControl()).
  const bool pgd_ok = !have_tnt && ctl_ == Ctl::kTipPgd;
  uint32_t taken = 0;
  switch (branch) {
    case BranchClass::kCondJump:
      if (!have_tnt) return NextSlow(step);
      break;
    case BranchClass::kDirectJump:
    case BranchClass::kDirectCall:
      if (steps_without_packet_ >= options_.max_steps_without_packet) return NextSlow(step);
      break;
    case BranchClass::kReturn:
      // A compressed return: a taken TNT bit and a return address at hand.
      if (have_tnt ? (((tnt_bits_ >> (tnt_count_ - 1)) & 1) == 0 || ret_count_ == 0) : !tip_ok)
        return NextSlow(step);
      break;
    case BranchClass::kIndirectJump:
    case BranchClass::kIndirectCall:
      if (!tip_ok && !(pgd_ok && !ctl_suppressed_)) return NextSlow(step);
      break;
    case BranchClass::kFarTransfer:
      if (!tip_ok && !pgd_ok) return NextSlow(step);
      break;
    default:
      return NextSlow(step);
  }
  // From here on the step is this block.
  hint_ = link_block_ = 0;
  cache_->Prefetch(blk.next[0]);
  cache_->Prefetch(blk.next[1]);
  FlowBlock& out = step->block;
  step->kind = FlowStep::kBlock;
  out.ip = blk.ip;
  out.mode = blk.mode();
  out.lengths = cache_->lengths(blk);
  out.time = time_;
  const uint64_t target = blk.target();  // for the direct branches
  out.ninsn = blk.ninsn();
  out.end_ip = blk.end();
  out.truncated = false;
  StoreLast(out.last, blk);
  last_direct_ = branch == BranchClass::kDirectJump || branch == BranchClass::kDirectCall;
  switch (branch) {
    case BranchClass::kCondJump:
      taken = TakeCondJump(blk);
      break;
    case BranchClass::kDirectCall:
      if (target != blk.end()) PushReturn(blk.end(), bi);
      [[fallthrough]];
    case BranchClass::kDirectJump:
      ip_ = target;
      taken = 1;
      ++steps_without_packet_;
      break;
    case BranchClass::kReturn:
      if (have_tnt) {  // compressed
        --tnt_count_;
        PopReturn(blk, bi);
        SetWalk(WalkReady());
        return 0;
      }
      [[fallthrough]];
    default: {  // the held TIP: indirect jump/call, return, far transfer
      if (branch == BranchClass::kIndirectCall) PushReturn(blk.end(), bi);
      if (ctl_ == Ctl::kTipPgd) {  // tracing stops here (TakeTip())
        // (Queue(), built in place: emplace_back() of a value that converts
        // to the event makes the element the conversion's result, every
        // field written once — no zeroing first, no temporary to copy.)
        struct Disabled {
          const FlowDecoder& d;
          operator FlowEvent() const {
            return FlowEvent{.type = FlowEvent::Type::kDisabled, .ip_suppressed = d.ctl_suppressed_,
                             .ip = d.ctl_ip_, .offset = d.ctl_offset_, .time = d.time_};
          }
        };
        if (!(sticky_error_ != 0 && options_.libipt_errors && EventPacketBefore(ctl_offset_, error_at_))) [[likely]]
          events_.emplace_back(Disabled{*this});
        enabled_ = false;
        if (!ctl_suppressed_) ip_ = ctl_ip_;
        ctl_ = Ctl::kNone;
        // Tracing mostly resumes after the far transfer (a system call
        // returns there): its fall-through link, a guess checked before use.
        hint_ = blk.next[0];
        link_block_ = bi + 1;
        link_k_ = 0;
        link_ip_ = blk.end();
        if (const int err = PeekAfterIp()) [[unlikely]] return CutAtError(&out, blk, err);
        return 0;
      }
      ip_ = ctl_ip_;
      ctl_ = Ctl::kNone;
      cache_->PrefetchDirect(ip_);  // (for the hint below, past the packets PeekAfterIp() reads)
      if (const int err = PeekAfterIp()) [[unlikely]] return CutAtError(&out, blk, err);
      // The block the cache last found at the target, or next[1], the last
      // target from here: a guess, checked before use (WalkInline()). (A
      // wrong guess costs a lookup in the cache, in WalkStep(): where the
      // target varies, a miss in the processor's cache more often than not.)
      {
        const uint32_t d = cache_->DirectHint(ip_);
        hint_ = d != 0 ? d : blk.next[1];
        cache_->Prefetch(hint_);
      }
      link_block_ = bi + 1;
      link_k_ = 1;
      link_ip_ = ip_;
      SetWalk(WalkReady());
      return 0;
    }
  }
  if (blk.next[taken] != 0) {
    hint_ = blk.next[taken];
    // The next block is known (and was prefetched a step ago): start loading
    // its successors too, two steps ahead of their use.
    const Block& nb = cache_->block(hint_ - 1);
    cache_->Prefetch(nb.next[0]);
    cache_->Prefetch(nb.next[1]);
  } else {
    link_block_ = bi + 1;
    link_k_ = static_cast<uint8_t>(taken);
    link_ip_ = ip_;
  }
  SetWalk(WalkReady());
  return 0;
}

// NextFill() once nothing is pending: the step is a block, or NextSlow()'s.
// (Out of line: the entry above, which hands out events and enables, saves
// no registers for its frame; a tail call here.)
__attribute__((noinline)) int FlowDecoder::NextFillBlock(FlowStep* step) {
  if (tnt_count_ == 0 && ctl_ == Ctl::kNone) {
    // NextSlow()'s first move in this state: read on to the next TNT or
    // control packet. Errors and events go the slow way.
    if (sticky_error_ != 0) return NextSlow(step);
    const int err = FetchControl();
    if (err != 0) [[unlikely]] {
      if (err != ENODATA) sticky_error_ = err;
      return NextSlow(step);
    }
    if (!events_.empty() || !later_.empty() || bound_pending_) return NextSlow(step);  // (as on entry: a PSB+ read may hold one)
  }
  return NextFillHeld(step);
}

// Tracing disabled, nothing pending: NextSlow()'s first move, inline for
// the common TIP.PGE already held (read after the TIP.PGD; with its IP, no
// MODE.Exec waiting for it); anything else goes to NextSlow() — which also
// reads the next packets itself, so that events met there come after an
// error of the read-ahead past the TIP.PGE, as they do. The Enabled event is
// the step; if the packets after the TIP.PGE fail, it waits in events_
// behind the error, ahead of the events that read met, as NextSlow() leaves
// them.
int FlowDecoder::Enable(FlowStep* step) {
  if (tnt_count_ != 0 || ctl_ != Ctl::kTipPge || ctl_suppressed_ || mode_pending_) return NextSlow(step);
  ctl_ = Ctl::kNone;
  ip_ = ctl_ip_;
  enabled_ = true;
  step->kind = FlowStep::kEvent;
  step->event = FlowEvent{.type = FlowEvent::Type::kEnabled, .mode = mode_, .ip = ip_, .offset = ctl_offset_,
                          .time = time_};
  if (const int err = PeekAfterIp()) [[unlikely]] {
    events_.insert(events_.begin(), step->event);
    synced_ = false;
    return err;
  }
  // (The walk as after a fast step: NextFill() would take the next block
  // as it does.)
  SetWalk(WalkReady() && !cache_->Stale());
  return 0;
}

// Next() with the walk on and TNT bits at hand where no link leads (or a
// guess failed): the block looked up in the cache, and the link filled in,
// as NextFill() does; then WalkStepAt(): a conditional branch, a direct jump
// or call, or a compressed return, exactly as NextFill() takes them;
// anything else (a block that is not fast, another branch, a return whose
// bit is not taken) is NextFill()'s.
int FlowDecoder::WalkStep(FlowStep* step) {
  const uint32_t h = hint_;
  if (h - 1 < cache_->count() && cache_->block(h - 1).ip == ip_) return WalkStepAt(step, h);
  // No link, or a guess (the last target) that fails: the cache lookup
  // NextFill() would make, and the link it fills in.
  if (mode_ == ExecMode::kInvalid || cache_->Stale()) return NextFill(step);
  return WalkStepAt(step, FindAndLink() + 1);
}

// WalkStep() for block h (index + 1), whose IP is ip_.
__attribute__((noinline)) int FlowDecoder::WalkStepAt(FlowStep* step, uint32_t h) {
  const uint32_t bi = h - 1;
  const Block& b = cache_->block(bi);
  if (!b.fast_in(mode_)) return NextFill(step);
  const BranchClass branch = b.branch();
  if (branch == BranchClass::kDirectJump || branch == BranchClass::kDirectCall) {
    if (steps_without_packet_ >= options_.max_steps_without_packet) return NextFill(step);
    const uint64_t target = b.target();
    if (branch == BranchClass::kDirectCall && target != b.end()) PushReturn(b.end(), bi);
    ++steps_without_packet_;
    ip_ = target;
    Follow(b.next[1], h, 1);
    last_direct_ = true;
  } else if (branch == BranchClass::kReturn) {
    if (((tnt_bits_ >> (tnt_count_ - 1)) & 1) == 0 || ret_count_ == 0) return NextFill(step);
    --tnt_count_;
    PopReturn(b, bi);
    last_direct_ = false;
  } else if (branch == BranchClass::kCondJump) {  // (Next()'s, when called directly)
    const uint32_t k = TakeCondJump(b);
    Follow(b.next[k], h, static_cast<uint8_t>(k));
    last_direct_ = false;
  } else {
    return NextFill(step);
  }
  StepBlock(step, b);
  return 0;
}

// Next() with the walk on and no TNT bits left: NextFillBlock()'s moves
// (NextFill()'s entry tests hold: WalkReady() did when the walk began, and
// nothing since has read a packet) — with no control packet held, reading
// on to the next TNT or control packet. With TNT bits then, and the state
// still WalkReady(), the walk goes on (Next()'s step); else NextFillBlock()
// goes on from there.
int FlowDecoder::WalkRefill(FlowStep* step) {
  if (options_.stop_at_end && AtEndOfTrace()) [[unlikely]] return EndOfTrace();
  walk_gen_ = kNoWalk;
  if (ctl_ != Ctl::kNone) return NextFillHeld(step);  // (NextFillBlock()'s move for a held control packet)
  if (sticky_error_ != 0) return NextSlow(step);      // (and for a held error)
  const int err = FetchControl();
  if (err != 0) [[unlikely]] {
    if (err != ENODATA) sticky_error_ = err;
    return NextSlow(step);
  }
  if (!events_.empty() || !later_.empty() || bound_pending_) return NextSlow(step);
  if (tnt_count_ == 0 || !WalkReady()) [[unlikely]] return NextFillHeld(step);
  SetWalk(true);
  return WalkInline(step);
}

// The block's last instruction has no known successor (`err`): it is not
// reported — the block is cut before it, and the error comes after it (or
// now, if it was the only instruction).
int FlowDecoder::CutAtError(FlowBlock* out, const Block& b, int err) {
  error_ip_ = b.last().ip;
  if (out->ninsn == 1) {
    synced_ = false;
    return err;
  }
  deferred_error_ = err;
  --out->ninsn;
  out->end_ip = b.last().ip;
  out->truncated = true;
  out->last = Insn{.ip = b.last().ip - out->lengths[out->ninsn - 1], .length = out->lengths[out->ninsn - 1],
                   .mode = b.mode()};
  return 0;
}

}  // namespace perftest::pt
