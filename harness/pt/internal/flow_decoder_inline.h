// Internal to the flow decoder's sources (flow_decoder*.cc): constants and
// the small helpers inlined on both the fast path (flow_decoder.cc) and the
// slow and packet paths, which live in separate files.
#pragma once

#include <cerrno>
#include <cstdint>
#include <span>

#include "harness/pt/flow_decoder.h"

namespace perftest::pt {
namespace internal {

// The event a PIP, VMCS or CBR packet reports, bound to no IP: the same
// inside a PSB+ and in the stream (flow_decoder_packets.cc).
FlowEvent StatusEvent(const Packet& p);

// The packets libipt's query decoder decodes as status updates while it
// reads ahead to the next packet a query needs (pt_qry_read_ahead): PAD and
// the timing packets TSC, MTC, CYC and TMA. It stops, without decoding, at
// any other packet.
inline constexpr bool IsReadAheadStatus(PacketType t) {
  return t == PacketType::kPad || t == PacketType::kCyc || t == PacketType::kMtc || t == PacketType::kTsc ||
         t == PacketType::kTma;
}

// Whether the bytes at `at` open a packet IsReadAheadStatus() names, by its
// opcode alone (for a read-ahead that met a packet error there: libipt's
// decodes that packet, and fails, only if it is one of those).
inline bool OpensReadAheadStatus(std::span<const uint8_t> trace, uint64_t at) {
  if (at >= trace.size()) return false;
  const uint8_t b0 = trace[at];
  if (b0 == 0x00 || b0 == 0x19 || b0 == 0x59 || (b0 & 3) == 3) return true;  // PAD, TSC, MTC, CYC
  return b0 == 0x02 && at + 1 < trace.size() && trace[at + 1] == 0x73;       // TMA
}

// StoreLast(), kRetStackSize, PushReturn() and PopReturn(): flow_decoder.h
// (Next() inlines them; the return stack's arrays are sized by kRetStackSize).

}  // namespace internal

// The next packet: the one pushed back by Unread(), else the packet decoder's.
inline __attribute__((always_inline)) int FlowDecoder::ReadPacket(Packet* p) {
  if (have_unread_) [[unlikely]] {
    *p = unread_;
    have_unread_ = false;
    return 0;
  }
  const int err = packets_.Next(*p);
  if (err != 0) [[unlikely]] return FailPacket(err);
  return 0;
}

// After an IP packet has been used, read on to the next TNT or control
// packet at once, as libipt's query decoder does: a bad packet right after
// a TIP fails the branch that took the TIP. The end of the trace does not.
// A TIP.PGD there, or a TIP.PGE (tracing enabled again without a TIP.PGD:
// a corrupted trace), is an event packet: libipt's instruction decoder
// asks for it at once, and the event query reads ahead past it
// (pt_qry_event), so a bad packet after it fails that branch too
// (ReadAheadPastEventPacket()). (Inline: the fast path reads on after every
// TIP, TIP.PGD and TIP.PGE.)
inline __attribute__((always_inline)) int FlowDecoder::PeekAfterIp() {
  if (tnt_count_ != 0 || ctl_ != Ctl::kNone || sticky_error_ != 0) return 0;
  const uint64_t start = have_unread_ ? unread_.offset : packets_.offset();
  const int err = FetchControl();
  if (err == 0 && ((ctl_ == Ctl::kTipPge && !ctl_suppressed_ && !mode_pending_) || ctl_ == Ctl::kTipPgd) && enabled_ &&
      !have_unread_) [[unlikely]] {
    if (const int e = ReadAheadPastEventPacket()) return e;
  }
  // A packet cut off by the end of the trace is the end of the trace here
  // (libipt: -pte_eos).
  if (err == 0 || err == ENODATA || err == EMSGSIZE) [[likely]] return 0;
  return ReadAheadError(start, err);
}

// Hands out the next queued event, if any, into `step`; true if it did.
// The queue empties with its last event.
inline bool FlowDecoder::TakeQueuedEvent(FlowStep* step) {
  if (event_head_ >= events_.size()) return false;
  step->kind = FlowStep::kEvent;
  step->event = events_[event_head_++];
  if (event_head_ == events_.size()) {
    events_.clear();
    event_head_ = 0;
  }
  return true;
}

inline uint32_t FlowDecoder::FindAndLink() {
  const uint32_t bi = cache_->Find(ip_, mode_);
  if (link_block_ != 0 && link_ip_ == ip_ && cache_->block(link_block_ - 1).mode() == mode_)
    cache_->block(link_block_ - 1).next[link_k_] = bi + 1;
  link_block_ = 0;
  hint_ = bi + 1;
  return bi;
}

}  // namespace perftest::pt
