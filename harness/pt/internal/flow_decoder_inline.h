// Internal to the flow decoder's sources (flow_decoder*.cc): constants and
// the small helpers inlined on both the fast path (flow_decoder.cc) and the
// slow and packet paths, which live in separate files.
#pragma once

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <span>

#include "harness/pt/flow_decoder.h"
#include "harness/pt/internal/opcodes.h"

namespace perftest::pt {
namespace internal {

// The event a PIP, VMCS or CBR packet reports, bound to no IP: the same
// inside a PSB+ and in the stream (flow_decoder_packets.cc).
FlowEvent StatusEvent(const Packet& p);

// Whether the bytes at `at` open an event packet by libipt's opcode table
// (pt_df_fetch; flow_decoder_packets.cc).
bool OpensEventPacket(std::span<const uint8_t> trace, uint64_t at, bool tip_bound, bool fup_bound);

// The packets libipt's query decoder decodes as status updates while it
// reads ahead to the next packet a query needs (pt_qry_read_ahead): PAD and
// the timing packets TSC, MTC, CYC and TMA. It stops, without decoding, at
// any other packet.
inline constexpr bool IsReadAheadStatus(PacketType t) {
  return t == PacketType::kPad || t == PacketType::kCyc || t == PacketType::kMtc || t == PacketType::kTsc ||
         t == PacketType::kTma;
}

// Whether the bytes at `at` open a packet IsReadAheadStatus() names, or a
// PSB, by its opcode alone (for a read-ahead that met a packet error there:
// libipt's decodes that packet, and fails, only if it is one of those — a
// PSB too, pt_decode_psb has no flags: pt_qry_read_ahead decodes it).
inline bool OpensReadAheadStatus(std::span<const uint8_t> trace, uint64_t at) {
  if (at >= trace.size()) return false;
  const uint8_t b0 = trace[at];
  if (b0 == 0x00 || b0 == 0x19 || b0 == 0x59 || (b0 & 3) == 3) return true;  // PAD, TSC, MTC, CYC
  return b0 == 0x02 && at + 1 < trace.size() && (trace[at + 1] == 0x73 || trace[at + 1] == 0x82);  // TMA, PSB
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

// A CYC packet's cycles.
inline void FlowDecoder::AddCycles(uint64_t cycles) {
  time_.cyc += cycles;
  cyc_since_ += cycles;
  if (options_.max_nonturbo_ratio != 0 && time_.cbr != 0 && tsc_base_ != 0) {
    const uint64_t est = tsc_mtc_ + cyc_since_ * options_.max_nonturbo_ratio / time_.cbr;
    time_.tsc = std::max(time_.tsc, est);
  }
}

// TSC: its value.
inline void FlowDecoder::TimingTsc(uint64_t tsc) {
  tsc_base_ = tsc;
  time_.tsc = tsc_mtc_ = tsc_base_;
  cyc_since_ = 0;
}

// MTC: its CTC payload.
inline void FlowDecoder::TimingMtc(uint8_t ctc) {
  if (options_.tsc_ctc_ratio_n != 0 && have_tma_) {
    // CTC[N+7:N] (N = mtc_period): advance by the 8-bit difference.
    const unsigned n = options_.mtc_period;
    const uint64_t last = (last_mtc_ctc_ >> n) & 0xff;
    const uint64_t delta = (uint64_t{ctc} - last) & 0xff;
    last_mtc_ctc_ += delta << n;
    tsc_mtc_ += ((delta << n) * options_.tsc_ctc_ratio_n) / std::max<uint32_t>(1, options_.tsc_ctc_ratio_d);
    time_.tsc = std::max(time_.tsc, tsc_mtc_);
    cyc_since_ = 0;
  }
}

// TakeTnt() for the TNT field (Packet::tnt_field(): the bits and the stop
// bit above them).
// `quiet`: QuietAfterTnt() is known to hold (the packets after the TNT lie
// in the clean stretch: CleanAhead()).
inline int FlowDecoder::TakeTntField(uint64_t field, bool quiet) {
  // (Packet::tnt_bits() and tnt_size() with the stop bit found once; the
  // decoder returns no TNT without one.)
  const unsigned n = static_cast<unsigned>(std::bit_width(field)) - 1;
  // As libipt's query decoder, look past the TNT at once: a bad packet
  // there fails the branch that fetched the TNT.
  // (Not while tracing is disabled: libipt then queries nothing and reports
  // the TNT itself, -pte_no_enable. Nor for an indirect branch with TNT bits
  // held: its query fails at the TNT, tnt_held_.)
  // (QuietAfterTnt(): the common case where both checks pass, mostly known
  // from the clean stretch.)
  const bool query = enabled_ && !tnt_held_ && !quiet && !QuietAfterTnt();
  uint64_t after_timing = 0;  // where CheckAhead()'s scan stopped: EventQueryAfterTnt() goes on there
  if (query) {
    if (const int err = CheckAhead(&after_timing)) return err;
  }
  tnt_bits_ = field & ~(uint64_t{1} << n);
  tnt_count_ = n;
  steps_without_packet_ = 0;
  if (query) {
    if (const int err = EventQueryAfterTnt(after_timing)) [[unlikely]] {
      // It fails the branch that takes the TNT's last bit: that branch
      // finds no bit, and the error.
      // (The bits go oldest first, from bit tnt_count_ - 1 down.)
      tnt_bits_ >>= 1;
      if (--tnt_count_ == 0) return err;
      sticky_error_ = err;
    }
  }
  return 0;
}

// TakeIpControl() for the packet's fields: type, IPBytes, IP payload, offset.
inline __attribute__((always_inline)) int FlowDecoder::TakeIpControl(PacketType type, uint8_t ipbytes,
                                                                     uint64_t payload, uint64_t offset) {
  if (!last_ip_.UpdateInline(ipbytes, payload)) return Fail(EBADMSG, "bad IP packet");
  return HoldIpControl(type, ipbytes, offset);
}

// TakeIpControl() once last_ip_ holds the packet's IP.
inline __attribute__((always_inline)) int FlowDecoder::HoldIpControl(PacketType type, uint8_t ipbytes,
                                                                     uint64_t offset) {
  ctl_ = type == PacketType::kTip ? Ctl::kTip : type == PacketType::kTipPge ? Ctl::kTipPge : Ctl::kTipPgd;
  if (fup_pending_ && type != PacketType::kTipPge) [[unlikely]] {  // the TIP of an earlier FUP
    fup_pending_ = false;
    ctl_ = ctl_ == Ctl::kTip ? Ctl::kAsync : Ctl::kAsyncDisable;
  }
  ctl_suppressed_ = ipbytes == 0;
  ctl_ip_ = last_ip_.raw();
  ctl_offset_ = offset;
  steps_without_packet_ = 0;
  if (ctl_ != Ctl::kTip) NoteEvent(false, 0);  // (libipt: a TIP alone is no event)
  return 0;
}

// Reads packets up to the next TNT or control packet (TIP, TIP.PGE,
// TIP.PGD, asynchronous FUP with its TIP/TIP.PGD, OVF), queueing events and
// timing on the way. Precondition: no TNT bits and no control packet held.
// (Inline: the fast path fetches after every TNT's last bit and every TIP;
// the packets its loop does not take, FetchControlPackets().)
inline __attribute__((always_inline)) int FlowDecoder::FetchControl() {
  // The commonest packets straight from their bytes where the packet decoder
  // would take them on its fast path (PacketDecoder::FastBytes()): CYC of
  // one or two bytes (SDM §33.4.2.14: opcode[1:0] = 11b, Exp = bit 2,
  // Cycle Counter[4:0] = bits 7:3; an extension byte's bit 0 is its Exp,
  // bits 7:1 the next 7 bits), TSC (19h, a 7-byte TSC), MTC (59h, a CTC
  // byte), TNT-8 (bit 0 clear; not 00h PAD, 02h), TNT-64 (02h A3h) and the
  // IP packets below.
  while (!have_unread_) {
    const uint8_t* const q = packets_.FastBytes();
    if (q == nullptr) break;
    const uint8_t b = q[0];
    if ((b & 3) == 3) {
      if ((b & 4) == 0) {
        packets_.Skip(1);
        AddCycles(b >> 3);
      } else if ((q[1] & 1) == 0) {
        packets_.Skip(2);
        AddCycles((uint64_t{b} >> 3) | (uint64_t{q[1]} >> 1 << 5));
      } else {
        break;
      }
      continue;
    }
    if (b == internal::kOpcTsc || b == internal::kOpcMtc) {
      uint64_t raw;
      std::memcpy(&raw, q + 1, sizeof raw);
      if (b == internal::kOpcTsc) {
        packets_.Skip(8);
        TimingTsc(raw & 0x00ffffffffffffff);
      } else {
        packets_.Skip(2);
        TimingMtc(static_cast<uint8_t>(raw));
      }
      continue;
    }
    if ((b & 1) == 0 && b > 2) {
      packets_.Skip(1);
      return TakeTntField(b >> 1, CleanHolds());
    }
    if (b == internal::kOpcExt && q[1] == internal::kExtTnt64) {  // TNT-64: 6 payload bytes
      uint64_t raw;  // (bytes 1..8 of the 9 readable: the payload is bytes 2..7)
      std::memcpy(&raw, q + 1, sizeof raw);
      const uint64_t field = (raw >> 8) & 0xffffffffffff;
      if (field == 0) break;  // (no stop bit: the packet decoder's error)
      packets_.Skip(8);
      return TakeTntField(field, CleanHolds());
    }
    // TIP (opcode[4:0] 0Dh), TIP.PGE (11h), TIP.PGD (01h) whose IPBytes
    // (opcode[7:5]) are not reserved (101b, 111b): the packet decoder's
    // tables give the size and the IP payload's bytes.
    const uint8_t op = b & 0x1f;
    if ((op == 0x0d || op == 0x11 || op == 0x01) && ((b >> 5) & 5) != 5) {
      const uint64_t offset = packets_.offset();
      uint64_t raw;
      std::memcpy(&raw, q + 1, sizeof raw);
      packets_.Skip(internal::kFast.size[b]);
      const PacketType type = op == 0x0d ? PacketType::kTip : op == 0x11 ? PacketType::kTipPge : PacketType::kTipPgd;
      const uint64_t mask = internal::kFast.mask[b];
      last_ip_.UpdateMasked(static_cast<uint8_t>(b >> 5), raw & mask, mask);
      return HoldIpControl(type, static_cast<uint8_t>(b >> 5), offset);
    }
    break;
  }
  return FetchControlPackets();
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
