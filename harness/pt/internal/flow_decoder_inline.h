// Internal to the flow decoder's sources (flow_decoder*.cc): constants and
// the small helpers inlined on both the fast path (flow_decoder.cc) and the
// slow and packet paths, which live in separate files.
#pragma once

#include <cstdint>

#include "harness/pt/flow_decoder.h"

namespace perftest::pt {
namespace internal {

inline constexpr uint32_t kRetStackSize = 64;  // the hardware's return-compression depth

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

// StoreLast(): flow_decoder.h (Next() inlines it).

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

inline void FlowDecoder::PushReturn(uint64_t ret, uint32_t block) {
  ret_top_ = (ret_top_ + 1) % internal::kRetStackSize;
  retstack_[ret_top_] = ret;
  ret_block_[ret_top_] = block;
  ret_count_ += ret_count_ < internal::kRetStackSize ? 1 : 0;  // (an add, not a branch: calls nest unpredictably)
}

}  // namespace perftest::pt
