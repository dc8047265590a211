#include "harness/pt/flow_decoder.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace perftest::pt {

namespace {
constexpr uint32_t kRetStackSize = 64;   // the hardware's return-compression depth

// The event a PIP, VMCS or CBR packet reports, bound to no IP: the same
// inside a PSB+ and in the stream.
FlowEvent StatusEvent(const Packet& p) {
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
}  // namespace


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
  }
  return "unknown";
}

std::string ToString(const FlowEvent& e) {
  std::string s = fmt::format("{} @{:#x}", FlowEventName(e.type), e.offset);
  if (e.type == FlowEvent::Type::kAsyncBranch || e.type == FlowEvent::Type::kAsyncDisabled)
    s += fmt::format(" from={:#x}", e.from);
  s += e.ip_suppressed ? std::string(" ip=suppressed") : fmt::format(" ip={:#x}", e.ip);
  if (e.payload != 0) s += fmt::format(" payload={:#x}", e.payload);
  return s;
}

FlowDecoder::FlowDecoder(std::span<const uint8_t> trace, const Image* image, Options options)
    : packets_(trace, options.packets), image_(image), options_(options), retstack_(kRetStackSize), ret_block_(kRetStackSize) {
  if (options.cache != nullptr) {
    cache_ = options.cache;
  } else {
    own_cache_ = std::make_unique<BlockCache>(image);
    cache_ = own_cache_.get();
  }
}

// ---------------------------------------------------------------------------
// Packets

// A packet error at the decoder's position (out of line: ReadPacket is inlined).
__attribute__((noinline, cold)) int FlowDecoder::FailPacket(int err) {
  error_offset_ = packets_.offset();
  error_ip_ = ip_;
  error_message_ = fmt::format("{} at offset {:#x}", PacketDecoder::ErrorDescription(err), error_offset_);
  return err;
}

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

// Reads the rest of a PSB+ (after the PSB) to PSBEND.
int FlowDecoder::ReadPsbPlus(uint64_t psb_offset, bool at_sync) {
  last_ip_.Reset();
  bool have_fup = false;
  uint64_t fup_ip = 0;
  for (;;) {
    Packet p;
    if (const int err = ReadPacket(&p)) return err;
    switch (p.type) {
      case PacketType::kPsbEnd:
        if (at_sync) {
          enabled_ = have_fup;
          ip_ = fup_ip;
        }
        return 0;
      case PacketType::kFup:
        if (!last_ip_.UpdateInline(p.ipbytes(), p.payload)) return Fail(EBADMSG, "bad FUP in PSB+");
        have_fup = p.ipbytes() != 0;
        fup_ip = last_ip_.raw();
        break;
      case PacketType::kModeExec:
        mode_ = p.exec_mode();
        break;
      case PacketType::kModeTsx:
        Queue(FlowEvent{.type = FlowEvent::Type::kTsx, .ip_suppressed = true, .payload = p.payload & 3,
                        .offset = p.offset});
        break;
      case PacketType::kPip:
      case PacketType::kVmcs:
        Queue(StatusEvent(p));
        break;
      case PacketType::kCbr:
        Timing(p);
        Queue(StatusEvent(p));
        break;
      case PacketType::kTsc:
      case PacketType::kTma:
      case PacketType::kMtc:
      case PacketType::kCyc:
        Timing(p);
        break;
      case PacketType::kPad:
      case PacketType::kMnt:
      case PacketType::kOvf:  // an overflow resolved at the PSB: the PSB+ gives the state
        break;
      default:
        return Fail(EBADMSG, fmt::format("{} inside the PSB+ at {:#x}", PacketName(p.type), psb_offset));
    }
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
        return 0;
      case PacketType::kFup: {
        if (!last_ip_.UpdateInline(p.ipbytes(), p.payload)) return Fail(EBADMSG, "bad FUP");
        if (p.ipbytes() == 0) return Fail(EBADMSG, fmt::format("FUP at {:#x} without an IP", p.offset));
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
        Queue(StatusEvent(p));
        break;
      case PacketType::kTraceStop:
        Queue(FlowEvent{.type = FlowEvent::Type::kStop, .ip_suppressed = true, .offset = p.offset});
        break;
      case PacketType::kMwait:
        Queue(FlowEvent{.type = FlowEvent::Type::kMwait, .ip_suppressed = true, .payload = p.payload,
                        .offset = p.offset});
        break;
      case PacketType::kPwre:
        Queue(FlowEvent{.type = FlowEvent::Type::kPwre, .ip_suppressed = true, .payload = p.payload,
                        .offset = p.offset});
        break;
      case PacketType::kPwrx:
        Queue(FlowEvent{.type = FlowEvent::Type::kPwrx, .ip_suppressed = true, .payload = p.payload,
                        .offset = p.offset});
        break;
      case PacketType::kMnt:
        Queue(FlowEvent{.type = FlowEvent::Type::kMnt, .ip_suppressed = true, .payload = p.mnt_payload(),
                        .offset = p.offset});
        break;
      case PacketType::kCbr:
        Timing(p);
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

// ---------------------------------------------------------------------------
// Sync

Result<uint64_t> FlowDecoder::Start(Result<uint64_t> psb) {
  synced_ = false;
  enabled_ = false;
  ret_top_ = ret_count_ = 0;
  tnt_count_ = 0;
  ctl_ = Ctl::kNone;
  have_unread_ = false;
  mode_pending_ = false;
  fup_pending_ = false;
  events_.clear();
  event_head_ = 0;
  deferred_error_ = 0;
  sticky_error_ = 0;
  steps_without_packet_ = 0;
  hint_ = link_block_ = 0;
  if (!psb.ok()) return psb;
  Packet p;
  if (packets_.Next(p) != 0 || p.type != PacketType::kPsb) {
    return Result<uint64_t>::Failure(EBADMSG, fmt::format("pt::FlowDecoder::Sync(offset={:#x})", *psb));
  }
  if (const int err = ReadPsbPlus(p.offset, true)) {
    return Result<uint64_t>::Failure(err, fmt::format("pt::FlowDecoder::Sync: PSB+ at {:#x}: {}", *psb,
                                                       error_message_));
  }
  synced_ = true;
  return psb;
}

Result<uint64_t> FlowDecoder::SyncForward() { return Start(packets_.SyncForward()); }

Result<uint64_t> FlowDecoder::SyncSet(uint64_t offset) {
  Result<void> r = packets_.SyncSet(offset);
  if (!r.ok()) return Start(Result<uint64_t>::FailureFrom(r));
  return Start(Result<uint64_t>::Ok(offset));
}

// ---------------------------------------------------------------------------
// Flow

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

// Decodes (without consuming) the packets after the current position up to
// the first one that is not PAD or timing; returns the error met, if any
// (the end of the trace, or a packet cut by it, is none).
int FlowDecoder::CheckAhead() {
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
      switch (q.type) {
        case PacketType::kPad: case PacketType::kCyc: case PacketType::kMtc: case PacketType::kTsc:
          off += size;
          continue;
        default:
          return 0;
      }
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
      default:
        return 0;
    }
  }
}

// After an IP packet has been used, read on to the next TNT or control
// packet at once, as libipt's query decoder does: a bad packet right after
// a TIP fails the branch that took the TIP. The end of the trace does not.
int FlowDecoder::PeekAfterIp() {
  if (tnt_count_ != 0 || ctl_ != Ctl::kNone || sticky_error_ != 0) return 0;
  const uint64_t start = have_unread_ ? unread_.offset : packets_.offset();
  const int err = FetchControl();
  // A packet cut off by the end of the trace is the end of the trace here
  // (libipt: -pte_eos).
  if (err == 0 || err == ENODATA || err == EMSGSIZE) [[likely]] return 0;
  return ReadAheadError(start, err);
}


// FetchControl() after an IP packet failed with `err` at error_offset_:
// whether libipt, which reads ahead after a TIP only through PAD, timing
// and PSB+ packets to the next TNT/TIP/event packet, meets the error now
// (then it fails the branch that took the IP) or only when a later query
// decodes that packet (then the error waits for the next branch that needs
// a packet: sticky_error_).
__attribute__((noinline, cold)) int FlowDecoder::ReadAheadError(uint64_t start, int err) {
  PacketDecoder ahead = packets_;
  if (!ahead.SyncSet(start).ok()) return err;
  uint64_t window_end = packets_.trace().size();
  bool in_psb = false;
  for (;;) {
    Packet q;
    const int e = ahead.Next(q);
    if (e != 0) {
      if (e != ENODATA && ReadAheadStopsAt(packets_.trace(), ahead.offset()) && !in_psb) window_end = ahead.offset();
      break;
    }
    if (q.type == PacketType::kPsb) {
      in_psb = true;
      continue;
    }
    if (in_psb) {
      if (q.type == PacketType::kPsbEnd) {
        window_end = q.offset;
        break;
      }
      continue;
    }
    switch (q.type) {
      case PacketType::kPad: case PacketType::kCyc: case PacketType::kMtc: case PacketType::kTsc:
      case PacketType::kTma: case PacketType::kCbr: case PacketType::kMnt: case PacketType::kFup:
        continue;
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
  switch (x.branch) {
    case BranchClass::kNone:
    case BranchClass::kPtwrite:
      ip_ = x.next_ip();
      link(0);
      if (++steps_without_packet_ > options_.max_steps_without_packet)
        return Fail(EBADMSG, fmt::format("{} blocks without a packet (endless loop?) at {:#x}",
                                         steps_without_packet_, x.ip));
      return 0;
    case BranchClass::kDirectCall:
      if (x.target != x.next_ip()) {
        ret_top_ = (ret_top_ + 1) % kRetStackSize;
        retstack_[ret_top_] = x.next_ip();
        ret_block_[ret_top_] = block;
        if (ret_count_ < kRetStackSize) ++ret_count_;
      }
      [[fallthrough]];
    case BranchClass::kDirectJump:
      ip_ = x.target;
      link(1);
      if (++steps_without_packet_ > options_.max_steps_without_packet)
        return Fail(EBADMSG, fmt::format("{} blocks without a packet (endless loop?) at {:#x}",
                                         steps_without_packet_, x.ip));
      return 0;
    case BranchClass::kCondJump:
      if (const int err = NeedControl()) return err;
      if (tnt_count_ != 0) [[likely]] {
        --tnt_count_;
        const int taken = static_cast<int>((tnt_bits_ >> tnt_count_) & 1);
        ip_ = taken ? x.target : x.next_ip();
        link(taken);
        return 0;
      }
      if (UnboundControl()) return BeyondControl(x);
      if (ctl_ == Ctl::kTipPgd) return TakeTip(nullptr);
      return Fail(EBADMSG, fmt::format("conditional branch at {:#x}: no TNT bit", x.ip));
    case BranchClass::kReturn:
      if (const int err = NeedControl()) return err;
      if (tnt_count_ != 0) {
        --tnt_count_;
        if (((tnt_bits_ >> tnt_count_) & 1) == 0)
          return Fail(EBADMSG, fmt::format("return at {:#x}: not-taken TNT bit", x.ip));
        if (ret_count_ == 0)
          return Fail(EBADMSG, fmt::format("compressed return at {:#x} with an empty return stack", x.ip));
        ip_ = retstack_[ret_top_];
        // The return goes to the call's fall-through block: follow (or
        // fill in) that block's link.
        const uint32_t call = ret_block_[ret_top_];
        ret_top_ = (ret_top_ + kRetStackSize - 1) % kRetStackSize;
        --ret_count_;
        if (call < cache_->size() && cache_->block(call).end() == ip_) {
          if (cache_->block(call).next[0] != 0) {
            hint_ = cache_->block(call).next[0];
          } else {
            link_block_ = call + 1;
            link_k_ = 0;
            link_ip_ = ip_;
          }
        } else {
          predict();
        }
        return 0;
      }
      if (UnboundControl()) return BeyondControl(x);
      if (const int err = TakeTip(nullptr)) return err;
      predict();
      return 0;
    case BranchClass::kIndirectCall:
    case BranchClass::kIndirectJump:
    case BranchClass::kFarTransfer:
      if (const int err = NeedControl()) return err;
      if (tnt_count_ != 0 && ctl_ == Ctl::kNone) [[unlikely]] {
        // libipt's indirect-branch query takes the next TIP while TNT bits
        // are still cached (it fails only if a TNT packet comes first): the
        // bits stay for the branches after it.
        const uint64_t bits = tnt_bits_;
        const uint32_t count = tnt_count_;
        tnt_count_ = 0;
        if (const int err = FetchControl()) return err;  // the end of the trace: -pte_eos
        tnt_bits_ = bits;  // (a TNT packet fetched instead of a TIP: the error below)
        tnt_count_ = count;
      }
      if (tnt_count_ != 0 && ctl_ != Ctl::kTip)
        return Fail(EBADMSG, fmt::format("{} at {:#x}: a TNT bit where a TIP was needed",
                                         BranchClassName(x.branch), x.ip));
      if (x.branch == BranchClass::kIndirectCall) {
        ret_top_ = (ret_top_ + 1) % kRetStackSize;
        retstack_[ret_top_] = x.next_ip();
        ret_block_[ret_top_] = block;
        if (ret_count_ < kRetStackSize) ++ret_count_;
      }
      if (x.branch != BranchClass::kFarTransfer ? UnboundControl() : IsAsync(ctl_)) return BeyondControl(x);
      if (const int err = TakeTip(nullptr)) return err;
      if (enabled_) predict();
      return 0;
  }
  return 0;
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

// A branch whose packet would come after the held, unbound control packet:
// the end of the trace if only PAD and timing packets follow (libipt:
// -pte_eos), else the trace does not fit (-pte_bad_query).
__attribute__((noinline, cold)) int FlowDecoder::BeyondControl(const Insn& x) {
  PacketDecoder ahead = packets_;
  if (!have_unread_) {
    for (;;) {
      Packet q;
      const int err = ahead.Next(q);
      if (err == ENODATA || err == EMSGSIZE)
        return Fail(ENODATA, fmt::format("{} at {:#x}: the trace ends after the {} at {:#x}",
                                         BranchClassName(x.branch), x.ip, IsAsync(ctl_) ? "FUP" : "TIP.PGD",
                                         ctl_offset_));
      if (err != 0) break;
      if (q.type == PacketType::kPad || q.type == PacketType::kCyc || q.type == PacketType::kMtc ||
          q.type == PacketType::kTsc || q.type == PacketType::kTma)
        continue;
      break;
    }
  }
  return Fail(EBADMSG, IsAsync(ctl_)
                           ? fmt::format("{} at {:#x}: the FUP at {:#x} (IP {:#x}) is never reached",
                                         BranchClassName(x.branch), x.ip, ctl_offset_, ctl_from_)
                           : fmt::format("{} at {:#x}: no packet (the TIP.PGD at {:#x} without an IP binds "
                                         "to far transfers only)", BranchClassName(x.branch), x.ip, ctl_offset_));
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
    if (mode_pending_) {
      mode_pending_ = false;
      if (pending_mode_ != mode_) {
        mode_ = pending_mode_;
        Queue(FlowEvent{.type = FlowEvent::Type::kExecMode, .mode = mode_, .ip = ip_, .offset = pending_mode_offset_});
      }
    }
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

// Writes b.last() into `x` field by field: built in a local and copied, the
// Insn is written with narrow stores and read back with wide loads, a
// store-forwarding stall on every block.
inline void StoreLast(Insn& x, const BlockCache::Block& b) {
  const uint8_t length = b.last_length();
  const BranchClass branch = b.branch();
  x.ip = b.end() - length;
  x.target = (branch == BranchClass::kCondJump || branch == BranchClass::kDirectJump ||
              branch == BranchClass::kDirectCall) ? b.target() : 0;
  x.length = length;
  x.branch = branch;
  x.far = b.far();
  x.mode = b.mode();
}

// The common steps, with nothing pending: a block from the hint whose
// branch is a conditional branch with a TNT bit at hand, a direct jump or
// call, or a compressed return. Does exactly what NextSlow() would (which
// takes everything else), in a small function that touches the block once.
int FlowDecoder::Next(FlowStep* step) {
  if (!enabled_ || !synced_ || deferred_error_ != 0 || event_head_ != events_.size() || hint_ == 0 ||
      mode_ == ExecMode::kInvalid || !(ctl_ == Ctl::kNone ? tnt_count_ != 0 : ctl_ == Ctl::kTip)) [[unlikely]] {
    return NextSlow(step);
  }
  const uint32_t bi = hint_ - 1;
  const Block blk = cache_->block(bi);
  if (blk.ip != ip_ || blk.mode() != mode_ || (blk.bits & 0x1fff) == 0 || ((blk.bits >> 27) & 0x3) != 0 ||
      cache_->Stale()) [[unlikely]] {
    return NextSlow(step);
  }
  const BranchClass branch = blk.branch();
  const bool have_tnt = tnt_count_ != 0;
  uint32_t taken = 0;
  switch (branch) {
    case BranchClass::kCondJump:
      if (!have_tnt) return NextSlow(step);
      taken = static_cast<uint32_t>((tnt_bits_ >> (tnt_count_ - 1)) & 1);
      break;
    case BranchClass::kDirectJump:
    case BranchClass::kDirectCall:
      if (steps_without_packet_ >= options_.max_steps_without_packet) return NextSlow(step);
      break;
    case BranchClass::kReturn:
      // A compressed return: a taken TNT bit and a return address at hand.
      if (!have_tnt || ((tnt_bits_ >> (tnt_count_ - 1)) & 1) == 0 || ret_count_ == 0) return NextSlow(step);
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
      --tnt_count_;
      ip_ = taken ? target : blk.end();
      break;
    case BranchClass::kDirectCall:
      if (target != blk.end()) {
        ret_top_ = (ret_top_ + 1) % kRetStackSize;
        retstack_[ret_top_] = blk.end();
        ret_block_[ret_top_] = bi;
        if (ret_count_ < kRetStackSize) ++ret_count_;
      }
      [[fallthrough]];
    case BranchClass::kDirectJump:
      ip_ = target;
      taken = 1;
      ++steps_without_packet_;
      break;
    default: {  // kReturn, compressed
      --tnt_count_;
      ip_ = retstack_[ret_top_];
      const uint32_t call = ret_block_[ret_top_];
      ret_top_ = (ret_top_ + kRetStackSize - 1) % kRetStackSize;
      --ret_count_;
      if (call < cache_->size() && cache_->block(call).end() == ip_) {
        const uint32_t next = cache_->block(call).next[0];
        if (next != 0) {
          hint_ = next;
        } else {
          link_block_ = call + 1;
          link_k_ = 0;
          link_ip_ = ip_;
        }
      } else {
        hint_ = blk.next[1];
        link_block_ = bi + 1;
        link_k_ = 1;
        link_ip_ = ip_;
      }
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
  return 0;
}

int FlowDecoder::NextSlow(FlowStep* step) {
  for (;;) {
    if (event_head_ < events_.size()) {
      step->kind = FlowStep::kEvent;
      step->event = events_[event_head_++];
      if (event_head_ == events_.size()) {
        events_.clear();
        event_head_ = 0;
      }
      return 0;
    }
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
          if (mode_pending_) {
            mode_pending_ = false;
            if (pending_mode_ != mode_) {
              mode_ = pending_mode_;
              Queue(FlowEvent{.type = FlowEvent::Type::kExecMode, .mode = mode_, .ip = ip_,
                              .offset = pending_mode_offset_});
            }
          }
          Queue(FlowEvent{.type = FlowEvent::Type::kEnabled, .mode = mode_, .ip = ip_, .offset = ctl_offset_});
          if (const int err = PeekAfterIp()) {
            synced_ = false;
            return err;
          }
          continue;
        case Ctl::kOverflow:
          break;  // below
        default:  // TIP, TIP.PGD, an asynchronous FUP: nothing to apply them to
          synced_ = false;
          return Fail(EBADMSG, fmt::format("IP packet at {:#x} while tracing is disabled", ctl_offset_));
      }
    } else if (tnt_count_ == 0 && ctl_ == Ctl::kNone && sticky_error_ == 0) {
      // At the end of the trace, or before a bad packet, walk on to the
      // next branch that needs a packet (as libipt does); the error comes then.
      const int err = FetchControl();
      if (err != 0 && err != ENODATA) sticky_error_ = err;
      if (event_head_ < events_.size()) continue;
    }

    if (ctl_ == Ctl::kOverflow) {
      ctl_ = Ctl::kNone;
      tnt_count_ = 0;
      Queue(FlowEvent{.type = FlowEvent::Type::kOverflow, .ip_suppressed = ctl_suppressed_, .ip = ctl_ip_,
                      .offset = ctl_offset_});
      enabled_ = !ctl_suppressed_;
      if (enabled_) ip_ = ctl_ip_;
      if (const int err = PeekAfterIp()) {
        synced_ = false;
        return err;
      }
      continue;
    }
    if (ctl_ == Ctl::kTipPge) {
      synced_ = false;
      return Fail(EBADMSG, fmt::format("TIP.PGE at {:#x} while tracing is enabled", ctl_offset_));
    }
    if (ctl_ == Ctl::kAsync || ctl_ == Ctl::kAsyncDisable) {
      if (ip_ == ctl_from_) {
        if (ctl_ == Ctl::kAsyncDisable) {
          Queue(FlowEvent{.type = FlowEvent::Type::kAsyncDisabled, .ip_suppressed = ctl_suppressed_, .ip = ctl_ip_,
                          .from = ip_, .offset = ctl_offset_});
          enabled_ = false;
          ctl_ = Ctl::kNone;
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
        ctl_ = Ctl::kNone;
        ip_ = ctl_ip_;
        if (mode_pending_) {
          mode_pending_ = false;
          if (pending_mode_ != mode_) {
            mode_ = pending_mode_;
            Queue(FlowEvent{.type = FlowEvent::Type::kExecMode, .mode = mode_, .ip = ip_,
                            .offset = pending_mode_offset_});
          }
        }
        if (const int err = PeekAfterIp()) {
          synced_ = false;
          return err;
        }
        continue;
      }
    } else if (ctl_ == Ctl::kTipPgd && tnt_count_ == 0 && last_direct_ && !ctl_suppressed_ && ctl_ip_ == ip_) {
      // A direct branch left the traced region (SDM §33.2.5.3 IP filtering).
      Queue(FlowEvent{.type = FlowEvent::Type::kDisabled, .ip = ctl_ip_, .offset = ctl_offset_});
      enabled_ = false;
      ctl_ = Ctl::kNone;
      continue;
    }

    if (mode_ == ExecMode::kInvalid) [[unlikely]] {
      synced_ = false;
      return Fail(EBADMSG, fmt::format("MODE.Exec gave the reserved mode CS.L=1 CS.D=1 at {:#x}", ip_));
    }
    if (cache_->CheckGeneration()) hint_ = link_block_ = 0;
    uint32_t bi;
    if (hint_ != 0 && cache_->block(hint_ - 1).ip == ip_ && cache_->block(hint_ - 1).mode() == mode_) [[likely]] {
      bi = hint_ - 1;
    } else {
      // A link to fill in (or a wrong guess to correct): the block found here.
      bi = cache_->Find(ip_, mode_);
      if (link_block_ != 0 && link_ip_ == ip_ && cache_->block(link_block_ - 1).mode() == mode_)
        cache_->block(link_block_ - 1).next[link_k_] = bi + 1;
    }
    hint_ = link_block_ = 0;
    // A copy: the stores to `step` below could alias the cache, and would
    // make the compiler load the block's fields again after each.
    const Block blk = cache_->block(bi);
    const Block* const b = &blk;
    // Start loading both possible successors while this block is handled:
    // the walk is bound by these loads.
    cache_->Prefetch(b->next[0]);
    cache_->Prefetch(b->next[1]);
    if (b->ninsn() == 0) [[unlikely]] {
      synced_ = false;
      return Fail(b->error(), b->error() == ENXIO ? fmt::format("no object code at {:#x}", ip_)
                                              : fmt::format("invalid instruction at {:#x}", ip_));
    }
    FlowBlock& out = step->block;
    step->kind = FlowStep::kBlock;
    out.ip = b->ip;
    out.mode = b->mode();
    out.lengths = cache_->lengths(*b);
    out.time = time_;

    if ((ctl_ == Ctl::kAsync || ctl_ == Ctl::kAsyncDisable) && ctl_from_ > b->ip && ctl_from_ < b->end()) {
      // The event is inside this block: run up to it.
      uint64_t x = b->ip;
      uint32_t i = 0;
      while (x < ctl_from_) x += out.lengths[i++];
      if (x == ctl_from_) {
        out.ninsn = i;
        out.end_ip = x;
        out.truncated = true;
        out.last = Insn{.ip = x - out.lengths[i - 1], .length = out.lengths[i - 1], .mode = b->mode()};
        ip_ = x;
        last_direct_ = false;
        return 0;
      }
    }

    const BranchClass last_branch = b->branch();
    out.ninsn = b->ninsn();
    out.end_ip = b->end();
    out.truncated = false;
    StoreLast(out.last, *b);
    last_direct_ = last_branch == BranchClass::kDirectJump || last_branch == BranchClass::kDirectCall;
    if (((b->bits >> 27) & 0x3) != 0) [[unlikely]] {
      // The block stops before an instruction that cannot be decoded: the
      // error comes after the block.
      ip_ = b->end();
      deferred_error_ = Fail(b->error(), b->error() == ENXIO ? fmt::format("no object code at {:#x}", ip_)
                                                         : fmt::format("invalid instruction at {:#x}", ip_));
      out.truncated = true;
      return 0;
    }
    // The common case inline: a conditional branch with a TNT bit at hand.
    if (last_branch == BranchClass::kCondJump && tnt_count_ != 0) [[likely]] {
      --tnt_count_;
      const int taken = static_cast<int>((tnt_bits_ >> tnt_count_) & 1);
      ip_ = taken ? b->target() : b->end();
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
    if (err != 0) [[unlikely]] {
      // The last instruction's successor is unknown: it is not reported.
      error_ip_ = b->last().ip;
      deferred_error_ = err;
      if (out.ninsn == 1) {
        deferred_error_ = 0;
        synced_ = false;
        return err;
      }
      --out.ninsn;
      out.end_ip = b->last().ip;
      out.truncated = true;
      out.last = Insn{.ip = b->last().ip - out.lengths[out.ninsn - 1], .length = out.lengths[out.ninsn - 1],
                      .mode = b->mode()};
    }
    return 0;
  }
}

}  // namespace perftest::pt
