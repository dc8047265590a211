// The Intel PT instruction-flow decoder: packets plus object code in,
// executed instructions (in basic blocks) and events out — the layer above
// packet_decoder.h, as libipt's block/instruction decoders sit above its
// packet decoder, with the same verbs (SyncForward, Next, offset).
//
//   pt::Image image;
//   image.AddBlob(0x401000, code);
//   pt::FlowDecoder decoder(trace, &image);          // views: both must outlive it
//   for (auto s = decoder.SyncForward(); s.ok(); s = decoder.SyncForward()) {
//     pt::FlowStep step;
//     int err;
//     while ((err = decoder.Next(&step)) == 0) {
//       if (step.kind == pt::FlowStep::kBlock)       // step.block: ninsn instructions from ip
//         for (pt::BlockInsns it(step.block); it.ok(); it.Advance()) Use(it.ip(), it.length());
//       else
//         Use(step.event);                            // enabled, disabled, async branch, ...
//     }
//     if (err == ENODATA) break;                      // end of the trace
//     Report(err, decoder.error_offset(), decoder.error_ip());  // then resync at the next PSB
//   }
//
// How the flow is rebuilt (Intel SDM Vol. 3C §33.3.5 "Decoder Requirements",
// §33.4.1 "Branch Tracing"): from the IP of a PSB+ FUP or a TIP.PGE, the
// decoder walks the code in the image. A basic block runs to the next
// instruction that can change the flow (insn.h); a conditional branch takes
// the next TNT bit; a near RET takes a TNT bit (taken: a compressed return,
// the target is the top of the return-compression stack, 64 entries as the
// hardware's; SDM §33.4.2.1) or a TIP; indirect branches and far transfers
// take a TIP; direct jumps and calls take nothing (calls push the return
// address, except a call to the next instruction). A FUP that is not part of
// a PSB+, MODE.TSX, PTW or EXSTOP context is an asynchronous event at its IP:
// with a TIP it is an interrupt or exception (the instruction at the FUP IP
// does not complete; flow continues at the TIP), with a TIP.PGD tracing stops
// there. A TIP.PGD after a branch disables tracing at that branch; TIP.PGE
// enables it again; OVF loses the flow until the next FUP (resume there) or
// TIP.PGE; MODE.Exec changes the execution mode at the next TIP.
//
// Speed: each basic block is decoded (libzydis, insn.h) once and cached by
// (IP, mode); a step is a hash lookup and one packet bit or IP. The cache is
// dropped when the image changes (Image::generation()). On the TNT bits of
// a packet Next() takes conditional branches, compressed returns, direct
// jumps and calls along the cache's successor links with a few tests each
// (walk_gen_), reading no packet; when the bits run out it reads on to the
// next TNT (WalkRefill()), taking the commonest packets (TNT, CYC, MTC,
// TSC, TIP) straight from their bytes (FetchControl()). libipt's read-ahead
// past each TNT (which fails a branch at a bad packet) is one compare: the
// packets ahead are checked once, a stretch at a time (CleanAhead()).
//
// Events come out where libipt's instruction decoder reports them: an
// event bound to an IP (a mid-flow PSB+'s MODE.Exec, PIP, VMCS; MWAIT,
// EXSTOP, MODE.TSX with a FUP) when the flow gets there, a PTW's after its
// PTWRITE, and the events behind a waiting one after it. CFE, EVD and TRIG
// (Event Trace, Trigger Tracing) are events too; a CFE with a FUP goes right
// before that FUP's asynchronous branch. Options::stop_at_end ends the flow
// where the trace runs out (end_of_trace()).
//
// Errors (Next returns them; the decoder then needs a SyncForward()):
//   ENOTCONN  not synchronized (no SyncForward/SyncSet succeeded)
//   ENODATA   end of the trace (also: a branch needs a packet beyond a held
//             asynchronous FUP, or an IP-less TIP.PGD, that does not bind to
//             it — libipt's -pte_eos when only PAD/timing follow)
//   ENXIO     no object code at the IP (error_ip()): not in the image
//   EILSEQ    the bytes at error_ip() are not a valid instruction (or are cut
//             off by the end of the image)
//   EBADMSG   the trace does not fit the code: a TNT bit where a TIP was
//             needed or the reverse, a compressed return with an empty
//             return stack or a not-taken return, an IP packet whose IP is
//             suppressed where one is needed, TIP/FUP while disabled, an
//             asynchronous event whose IP is never reached, a branch whose
//             packet lies behind an event that libipt holds for an IP the
//             flow has not reached (PTW/EXSTOP/MWAIT with a FUP, a mid-flow
//             PSB+'s status events), an MWAIT with no FUP for it, the reserved
//             execution mode (MODE.Exec CS.L=1 CS.D=1), a mid-flow PSB+ whose
//             MODE.Exec contradicts the mode (where the flow reaches its
//             FUP), an event packet where an indirect branch with TNT bits
//             cached needs its TIP, a packet cut by the end of the trace
//             that libipt's query meets by its opcode alone (a TIP.PGE or
//             TIP.PGD while an event is held; a TIP or TNT-64 after an
//             event waiting for its FUP), a 7th asynchronous FUP or MODE.Exec
//             waiting for one TIP (libipt's event queue holds 6), or more than
//             max_steps_without_packet blocks without a packet (a loop)
//   others    a packet error, as PacketDecoder::Next (EILSEQ, EBADMSG,
//             EMSGSIZE) at error_offset()
#pragma once

#include <array>
#include <cstddef>
#include <cstring>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <memory>

#include "harness/pt/block_cache.h"
#include "harness/pt/image.h"
#include "harness/pt/insn.h"
#include "harness/pt/last_ip.h"
#include "harness/pt/packet.h"
#include "harness/pt/packet_decoder.h"
#include "harness/result.h"

namespace perftest::pt {

// Time at a point of the trace (SDM §33.3.7 "Timing Information"): the last
// TSC, advanced by MTC (with TMA) and CYC. Units are TSC ticks; 0 before the
// first TSC.
// The estimate: TSC sets it; MTC (after a TMA) advances it by the CTC
// ticks since the last MTC/TMA times tsc_ctc_ratio_n/d (SDM §33.3.7.2 "MTC"
// and "TMA"; CPUID.15H); CYC advances it by cycles * max_nonturbo_ratio / CBR
// (§33.3.7.3 "CYC"), but never past the next MTC period's TSC.
struct FlowTime {
  uint64_t tsc = 0;       // estimated TSC
  uint64_t cyc = 0;       // CYC cycles counted since the decoder started (core clocks)
  uint8_t cbr = 0;        // the last core:bus ratio (CBR), 0 before the first
};

struct FlowEvent {
  enum class Type : uint8_t {
    kEnabled,        // TIP.PGE: tracing starts at `ip`
    kDisabled,       // TIP.PGD after a branch: tracing stops; `ip` its target (unless ip_suppressed)
    kAsyncDisabled,  // FUP+TIP.PGD: tracing stops at `from` (before it executes); `ip` as kDisabled
    kAsyncBranch,    // FUP+TIP: interrupt/exception at `from` (not executed), continues at `ip`
    kOverflow,       // OVF: flow lost; resumes at `ip` (FUP), or disabled if ip_suppressed
    kExecMode,       // MODE.Exec: `mode` from `ip` on
    kTsx,            // MODE.TSX: payload bit 0 InTX, bit 1 TXAbort; at `ip`
    kPaging,         // PIP: payload = CR3, nr = non-root
    kVmcs,           // VMCS: payload = VMCS base
    kStop,           // TraceStop
    kPtwrite,        // PTW: payload (payload_bytes 4 or 8); `ip` the PTWRITE's if !ip_suppressed
    kExStop,         // EXSTOP: at `ip` if !ip_suppressed
    kMwait,          // MWAIT: payload hints | ext << 32
    kPwre,           // PWRE: payload as Packet (state, sub state, hw)
    kPwrx,           // PWRX: payload as Packet (last, deepest, wake reason)
    kCbr,            // CBR: payload = ratio
    kMnt,            // MNT: payload
    kTsc,            // TSC (a new reference time)
    // Event Trace and Trigger Tracing (SDM §33.4.2.29-30, "TRIG Packet"):
    kCfe,            // CFE: payload = Type | Vector << 8; `ip` the FUP's with the IP bit, else suppressed
    kEvd,            // EVD: payload = the event data, evd_type its Type (0 CR2, 1 VMX exit qualification, 2 reason)
    kTrig,           // TRIG: payload = TRBV | ICNT << 8 | MULT << 24 | ICNTV << 25; `ip` the FUP's with the IP bit
  };
  Type type = Type::kEnabled;
  bool ip_suppressed = false;
  uint8_t payload_bytes = 0;
  uint8_t evd_type = 0;  // kEvd: the EVD Type field
  ExecMode mode = ExecMode::k64Bit;
  uint64_t ip = 0;
  uint64_t from = 0;
  uint64_t payload = 0;
  uint64_t offset = 0;  // of the packet that made the event
  FlowTime time;
};
// "enabled", "disabled", "async-disabled", "async-branch", "overflow",
// "exec-mode", "tsx", "paging", "vmcs", "stop", "ptwrite", "exstop", "mwait",
// "pwre", "pwrx", "cbr", "mnt", "tsc", "cfe", "evd", "trig".
std::string_view FlowEventName(FlowEvent::Type type);
std::string ToString(const FlowEvent& event);

// A run of executed instructions inside one cached basic block: `ninsn`
// instructions from `ip`, the i-th `lengths[i]` bytes long, all in `mode`.
// Every instruction but the last is straight-line (BranchClass::kNone); the
// last is `last` (its branch class, far kind, target). `lengths` stays valid
// until the next call of the decoder.
struct FlowBlock {
  uint64_t ip = 0;
  uint64_t end_ip = 0;  // the byte after the last instruction
  uint32_t ninsn = 0;
  ExecMode mode = ExecMode::k64Bit;
  bool truncated = false;  // cut short by an asynchronous event: `last` is then
                           // the last executed instruction, not a branch
  const uint8_t* lengths = nullptr;
  Insn last;
  // The time of the block's last instruction: after the timing packets up
  // to the packet that resolves its branch (which go out with that packet),
  // or up to the next control packet for a block that needs none.
  FlowTime time;
};

struct FlowStep {
  enum Kind : uint8_t { kBlock, kEvent } kind = kBlock;
  FlowBlock block;
  FlowEvent event;
};

// Walks the instructions of a FlowBlock: ip(), length(), and insn() (the
// classified instruction: kNone for all but the last).
class BlockInsns {
 public:
  explicit BlockInsns(const FlowBlock& b) : b_(b), ip_(b.ip) {}
  bool ok() const { return i_ < b_.ninsn; }
  void Advance() { ip_ += b_.lengths[i_++]; }
  uint64_t ip() const { return ip_; }
  uint8_t length() const { return b_.lengths[i_]; }
  bool is_last() const { return i_ + 1 == b_.ninsn; }
  Insn insn() const {
    if (is_last() && !b_.truncated) return b_.last;
    Insn x;
    x.ip = ip_;
    x.length = length();
    x.mode = b_.mode;
    return x;
  }

 private:
  const FlowBlock& b_;
  uint64_t ip_;
  uint32_t i_ = 0;
};

namespace internal {
inline constexpr uint32_t kRetStackSize = 64;  // the hardware's return-compression depth

// The clean stretch's sub-intervals of a region (FlowDecoder::CleanAhead(),
// flow_decoder_lookahead.cc): the TNTs that end in [start, end) are vouched
// for (end <= start: none); `cur` the decoder's.
inline constexpr size_t kCleanSubs = 32;  // a region's at most (it ends early at one more)
struct CleanSub {
  uint64_t start = 0, end = 0;
};
struct CleanRegionSubs {
  uint32_t nsub = 0, cur = 0;
  std::array<CleanSub, kCleanSubs> sub{};
};

// Writes b.last() into `x` field by field: built in a local and copied, the
// Insn is written with narrow stores and read back with wide loads, a
// store-forwarding stall on every block. Its length, branch, far kind and
// mode are one word in both (Block::LastWord()): one load and one store.
// kTarget: b ends with a branch that has a target (a conditional branch, a
// direct jump or call).
static_assert(offsetof(Insn, branch) == offsetof(Insn, length) + 1 && offsetof(Insn, far) == offsetof(Insn, length) + 2 &&
              offsetof(Insn, mode) == offsetof(Insn, length) + 3);
template <bool kTarget = false>
inline void StoreLast(Insn& x, const BlockCache::Block& b) {
  const uint8_t length = b.last_length();
  const BranchClass branch = b.branch();
  x.ip = b.end() - length;
  x.target = (kTarget || branch == BranchClass::kCondJump || branch == BranchClass::kDirectJump ||
              branch == BranchClass::kDirectCall) ? b.target() : 0;
  const uint32_t w = b.LastWord();
  std::memcpy(&x.length, &w, sizeof w);
}
}  // namespace internal

class FlowDecoder {
 public:
  struct Options {
    PacketDecoder::Options packets;
    // Blocks walked with no packet consumed before EBADMSG (an endless loop
    // of direct jumps that no trace can describe).
    uint32_t max_steps_without_packet = 1u << 20;
    // MTC period (IA32_RTIT_CTL.MTCFreq, perf's mtc_period) and the TSC:CTC
    // ratio (CPUID.15H EBX/EAX) for MTC timing; with ratio 0 MTC is ignored.
    unsigned mtc_period = 3;
    uint32_t tsc_ctc_ratio_n = 0;
    uint32_t tsc_ctc_ratio_d = 1;
    // The maximum non-turbo ratio (MSR_PLATFORM_INFO[15:8], perf's
    // max_nonturbo_ratio): with it and a CBR, CYC cycles advance the TSC
    // estimate by cycles * max_nonturbo_ratio / CBR (perf-intel-pt.txt
    // "cyc"); 0: CYC does not move the TSC estimate.
    uint32_t max_nonturbo_ratio = 0;
    // A block cache of the same image to share (e.g. by the decoders of
    // several CPUs' traces, or decoding the same trace again); null: the
    // decoder has its own. Must outlive the decoder.
    BlockCache* cache = nullptr;
    // Stop at the end of the trace as libipt's query decoder reports it
    // (pts_eos) and ptxed stops there: once the TNT bits and control packets
    // are used up and only PAD and timing packets (TSC, MTC, TMA, CYC) are
    // left, Next() returns ENODATA with end_of_trace() set, instead of
    // walking on to the next instruction that needs a packet (instructions
    // the trace does not prove, and the spurious errors past them, such as
    // ENXIO where the walk leaves the image). Off by default: libipt's
    // pt_insn_next() itself walks on, and the libipt differential follows it.
    bool stop_at_end = false;
    // Packet errors reported where libipt 2.0.5 reports them (the libipt
    // differential and the libipt-rule tests set this):
    //  - a packet that cannot be decoded right after a PSB+ (an unknown
    //    opcode, a bad payload) with at most one PSB+ event fails the
    //    synchronization, as pt_insn_sync_forward() does (its read-ahead past
    //    the PSB+ meets it);
    //  - an event whose packet is followed right away by one that cannot be
    //    decoded is not reported: libipt's event query fetches the next
    //    packet with the event and fails instead (pt_qry_event ->
    //    pt_df_fetch / the next decode).
    // false (the default): the sync succeeds — the PSB+ itself is sound —
    // and every event the packets before the bad one make comes out, then
    // the error (libipt 2.1+'s event decoder reports an error with the next
    // event, too).
    bool libipt_errors = false;
  };

  FlowDecoder(std::span<const uint8_t> trace, const Image* image) : FlowDecoder(trace, image, Options{}) {}
  FlowDecoder(std::span<const uint8_t> trace, const Image* image, Options options);

  // Synchronizes at the next PSB (the first one, or the one after the
  // current position / last error) and reads its PSB+: MODE.Exec, and the
  // FUP that gives the current IP (tracing enabled) — without a FUP tracing
  // is disabled until a TIP.PGE. Returns the PSB's offset. Resets the flow
  // state (return stack, TNT bits, pending events).
  // Errors: ENODATA, no further PSB; a packet error inside the PSB+ (then
  // SyncForward again skips it).
  Result<uint64_t> SyncForward();
  // Synchronizes at `offset`, which must be a PSB. Errors: EINVAL past the
  // end; EBADMSG, no PSB there; as SyncForward.
  Result<uint64_t> SyncSet(uint64_t offset);

  // The next block or event. 0, or an errno (see the top of the file).
  // (Inline: most blocks are conditional branches on TNT bits at hand,
  // taken here along the cache's links; see walk_gen_.)
  __attribute__((always_inline)) int Next(FlowStep* step) {
    // (An image changed since the walk began — Image::generation() — goes
    // to NextFill(), which drops the cache: its blocks are the old code's.)
    if (walk_image_->generation() == walk_gen_) [[likely]] {
      if (tnt_count_ != 0) [[likely]] return WalkInline(step);
      return WalkRefill(step);
    }
    return NextFill(step);
  }

  // The packet offset the decoder has read up to.
  uint64_t offset() const { return packets_.offset(); }
  // After an error: the offset of the packet at fault (or the decoder's
  // position), and the IP the walk was at.
  uint64_t error_offset() const { return error_offset_; }
  uint64_t error_ip() const { return error_ip_; }
  // A sentence about the last error ("no object code at 0x401000", ...).
  const std::string& error_message() const { return error_message_; }
  // After Next() returned ENODATA: the flow reached the end of the trace
  // with nothing left to walk on (Options::stop_at_end), as opposed to an
  // instruction that needed a packet the trace does not have.
  bool end_of_trace() const { return end_of_trace_; }

  bool enabled() const { return enabled_; }
  // The IP of the next instruction (of the next block to hand out).
  uint64_t ip() const { return ip_; }
  ExecMode mode() const { return mode_; }
  const FlowTime& time() const { return time_; }
  // Blocks decoded with libzydis so far (cache misses) and cache hits.
  uint64_t blocks_decoded() const { return cache_->decoded(); }
  uint64_t block_cache_hits() const { return cache_->hits(); }

 private:
  using Block = BlockCache::Block;
  // Goes on along link `next` (block index + 1) from link k of block
  // `link` (index + 1) to ip_; with none (0), that link is the one to fill
  // in once the block at ip_ is found.
  void Follow(uint32_t next, uint32_t link, uint8_t k) {
    hint_ = next;
    if (next == 0) [[unlikely]] {
      link_block_ = link;
      link_k_ = k;
      link_ip_ = ip_;
    } else {
      link_block_ = 0;
    }
  }
  // The conditional branch that ends `b` takes the next TNT bit: ip_ goes
  // to its target (taken) or to the fall-through. Returns the bit, the
  // index of the successor link to follow.
  uint32_t TakeCondJump(const Block& b) {
    const uint32_t k = static_cast<uint32_t>((tnt_bits_ >> --tnt_count_) & 1);
    const uint64_t end = b.end();
    // (A select, not a branch: TNT bits are hard to predict.)
    ip_ = end ^ ((b.target() ^ end) & (uint64_t{0} - k));
    return k;
  }
  // The block at (ip_, mode_) from the cache (decoding it on a miss), made
  // the hint; it fills in the link that is waiting for it (link_block_).
  // internal/flow_decoder_inline.h.
  uint32_t FindAndLink();
  // A compressed return from `b` (block index bi), its TNT bit taken: pops
  // the return address into ip_ and follows the calling block's
  // fall-through link — or, if that block is gone, guesses b's last target
  // (next[1]), to be corrected if wrong.
  void PopReturn(const Block& b, uint32_t bi) {
    ip_ = retstack_[ret_top_];
    const uint32_t call = ret_block_[ret_top_];
    ret_top_ = (ret_top_ + internal::kRetStackSize - 1) % internal::kRetStackSize;
    --ret_count_;
    if (call < cache_->count() && cache_->block(call).end() == ip_) {
      Follow(cache_->block(call).next[0], call + 1, 0);
    } else {
      hint_ = b.next[1];
      link_block_ = bi + 1;
      link_k_ = 1;
      link_ip_ = ip_;
    }
  }
  // Next() with the walk on and TNT bits at hand: a conditional branch, a
  // direct jump or call, or a compressed return along a known link here (as
  // WalkStepAt()), anything else WalkStepAt()'s, or WalkStep()'s where no
  // link leads.
  __attribute__((always_inline)) int WalkInline(FlowStep* step) {
    const uint32_t h = hint_;
    // (h - 1 wraps for 0. A cache emptied meanwhile — the image changed,
    // through a decoder sharing it — fails the IP check or the bound.)
    if (h - 1 < cache_->count()) [[likely]] {
      const Block& b = cache_->block(h - 1);
      if (b.ip == ip_) [[likely]] {
        // (walk_key_: Block::EndingKey(mode_, kCondJump), kept by SetWalk().)
        const uint32_t state = b.LastState();
        if ((state & Block::kEndingMask) == walk_key_) [[likely]] {
          const uint32_t k = TakeCondJump(b);
          Follow(b.next[k], h, static_cast<uint8_t>(k));
          last_direct_ = false;
          StepBlock<true>(step, b);
          return 0;
        }
        if ((state & Block::kDirectMask) == walk_key_ + kDirectKeyDelta &&
            steps_without_packet_ < options_.max_steps_without_packet) {
          const uint64_t target = b.target();
          if (b.branch() == BranchClass::kDirectCall && target != b.end()) PushReturn(b.end(), h - 1);
          ++steps_without_packet_;
          ip_ = target;
          Follow(b.next[1], h, 1);
          last_direct_ = true;
          StepBlock<true>(step, b);
          return 0;
        }
        if ((state & Block::kEndingMask) == walk_key_ + kReturnKeyDelta &&
            ((tnt_bits_ >> (tnt_count_ - 1)) & 1) != 0 && ret_count_ != 0) {  // a compressed return
          --tnt_count_;
          PopReturn(b, h - 1);
          last_direct_ = false;
          StepBlock(step, b);
          return 0;
        }
        return WalkStepAt(step, h);
      }
    }
    return WalkStep(step);
  }
  // The walk on (walk_gen_) or off: on only where WalkReady() and the cache
  // is not stale.
  // (mode_ does not change while the walk is on: every path that turns it on
  // does so last, and the walk's own steps keep the mode.)
  void SetWalk(bool on) {
    walk_gen_ = on ? walk_image_->generation() : kNoWalk;
    walk_key_ = Block::EndingKey(mode_, BranchClass::kCondJump);
  }
  static constexpr uint32_t kDirectKeyDelta =
      Block::EndingKey(ExecMode::k64Bit, BranchClass::kDirectJump) - Block::EndingKey(ExecMode::k64Bit, BranchClass::kCondJump);
  static constexpr uint32_t kReturnKeyDelta =
      Block::EndingKey(ExecMode::k64Bit, BranchClass::kReturn) - Block::EndingKey(ExecMode::k64Bit, BranchClass::kCondJump);
  // Makes `step` the whole cache block `b`, at time_ (kTarget: as StoreLast()).
  template <bool kTarget = false>
  void StepBlock(FlowStep* step, const Block& b) const {
    FlowBlock& out = step->block;
    step->kind = FlowStep::kBlock;
    out.ip = b.ip;
    out.end_ip = b.end();
    out.ninsn = b.ninsn();
    out.mode = b.mode();
    out.truncated = false;
    out.lengths = cache_->lengths(b);
    internal::StoreLast<kTarget>(out.last, b);
    out.time = time_;
  }
  int ReadPacket(Packet* p);
  void Unread(const Packet& p);
  int FetchControl();
  int FetchControlPackets();
  int FetchControlRest();
  int TakeTnt(const Packet& p);
  int TakeTntField(uint64_t field, bool quiet = false);
  int TakeIpControl(const Packet& p);
  int TakeIpControl(PacketType type, uint8_t ipbytes, uint64_t payload, uint64_t offset);
  int HoldIpControl(PacketType type, uint8_t ipbytes, uint64_t offset);
  bool NoEventFor(const Packet& q) const;
  static bool BindsToFup(const Packet& q);
  int EventQueryAfterTnt(uint64_t from);
  int CutEventPacketAhead(uint64_t start, uint64_t at);
  int NextPastStatus(Packet* q) const;
  int NextPastModeQuery(Packet* q, bool fup_waiting) const;
  int FailEventQuery(const Packet& event, const Packet& q, std::string_view wanted);
  bool StartsEventQuery(const Packet& q) const;
  int ReadPsbPlus(uint64_t psb_offset, bool at_sync);
  int ReadAheadAfterSync();
  int NeedControl();
  int PeekAfterIp();
  bool TakeQueuedEvent(FlowStep* step);
  // Past the TIP.PGE or TIP.PGD in ctl_: libipt's event-query read-ahead;
  // an error met there (set as the decoder's error), else 0.
  int ReadAheadPastEventPacket();
  int ReadAheadError(uint64_t start, int err);
  int CheckAhead(uint64_t* next = nullptr);
  bool QuietAfterTnt();
  bool CleanAhead();
  uint64_t PsbPlusEnd(uint64_t psb) const;
  bool QuietAtFup(uint64_t off) const;
  int Resolve(uint32_t block);
  int NextFill(FlowStep* step);
  int NextFillBlock(FlowStep* step);
  int NextFillHeld(FlowStep* step);
  int WalkRefill(FlowStep* step);
  // Options::stop_at_end: the flow has used up the trace (nothing held, only
  // PAD and timing packets ahead). EndOfTrace() makes Next()'s ENODATA.
  bool AtEndOfTrace() const;
  int EndOfTrace();
  void DropEventsEndingAt(uint64_t at);
  void DropPsbEventsForError();
  bool EventPacketBefore(uint64_t offset, uint64_t at) const;
  uint64_t error_at_ = 0;  // DropEventsEndingAt(): the bad packet's offset
  int Enable(FlowStep* step);
  // After a fast step: whether the steps NextFill() would take next while
  // they need no packet — conditional branches and compressed returns on the
  // TNT bits at hand, direct jumps and calls between them — may be taken by
  // Next() and WalkStep() with no more than the block's own tests (NextFill()'s
  // conditions for a fast step that do not change while no packet is read).
  bool WalkReady() const {
    return events_.empty() && later_.empty() && !bound_pending_ && deferred_error_ == 0 && (ctl_ == Ctl::kNone || ctl_ == Ctl::kTip) &&
           enabled_ && synced_;
  }
  int WalkStep(FlowStep* step);
  int WalkStepAt(FlowStep* step, uint32_t h);
  int NextSlow(FlowStep* step);
  int CutAtError(FlowBlock* out, const Block& b, int err);
  // (Inline: an unbound event with none held changes nothing.)
  void NoteEvent(bool bound, uint64_t ip, bool ptwrite = false) {
    if (bound || bound_pending_) NoteEventHeld(bound, ip, ptwrite);
  }
  void NoteEventHeld(bool bound, uint64_t ip, bool ptwrite, bool fails = false, uint8_t binds = 0);
  static constexpr uint32_t kNoFail = ~uint32_t{0};
  uint32_t ReachBound(const Block& b, uint32_t from, uint32_t stop = kNoFail);
  int CheckBound(const Block& b);
  int TakeBoundAtIp();
  int FailStatusUpdate(uint64_t ip);
  int CutAtBoundFailure(FlowStep* step, const Block& b, uint32_t at);
  // Ends `out` (block `b`, its lengths set) at the instruction that starts at
  // `at`, truncated there (events or an asynchronous branch wait at that IP),
  // and moves ip_ to it. False, leaving `out` whole, when no instruction of
  // the block starts at `at`.
  bool CutBlockAt(const Block& b, uint64_t at, FlowBlock* out);
  int EventBeforeTip(const Insn& x);
  static constexpr int kNotPast = -1, kRetry = -2;
  int BranchPastAsync(const Insn& x);
  bool PgdHeldPast() const;
  int CondJumpPacketError(const Insn& x, int err);
  int TakeTip(uint64_t* target);
  bool UnboundControl() const;
  int BeyondControl(const Insn& x);
  int ReadAheadEnd(uint64_t* at) const;
  int ReadAheadEos(uint64_t* at) const;
  int DisabledControl();
  int Fail(int err, std::string message);
  int FailPacket(int err);
  void Queue(const FlowEvent& e);  // at time_ (behind later_, if it holds any)
  // An event bound to `ip` (libipt pt_insn_check_ip_event: it reports the
  // event when its instruction decoder gets to that IP, and takes no
  // further event meanwhile): it and every event queued after it wait in
  // later_ until the flow is at later_ip_ (blocks are cut there), or
  // tracing is disabled.
  void QueueAt(const FlowEvent& e, uint64_t ip);
  // Hands on the waiting events whose binding the flow has reached (all of
  // them with `all`: tracing disabled, a sync).
  void ReleaseLater(bool all = false);
  bool HoldPtwEvent(const FlowEvent& e);
  bool TakeFupHeld(const Packet& fup);
  int TakeEventTracePacket(const Packet& p);
  void QueueEventTraceHeld();
  void ApplyPendingMode(bool ip_suppressed = false);
  void Timing(const Packet& p);
  int TakeTma(const Packet& p, bool tsc_before);
  void TimingCyc(const Packet& p);
  void AddCycles(uint64_t cycles);
  void TimingTsc(uint64_t tsc);
  void TimingMtc(uint8_t ctc);
  Result<uint64_t> Start(Result<uint64_t> psb);

  PacketDecoder packets_;
  const Image* image_;
  Options options_;

  std::unique_ptr<BlockCache> own_cache_;
  BlockCache* cache_;
  // The block to run next when a link said so (index + 1), or the link to
  // fill in once the next block is found: block index + 1, which link, and
  // the IP it must lead to.
  uint32_t hint_ = 0;
  uint32_t link_block_ = 0;
  uint8_t link_k_ = 0;
  uint64_t link_ip_ = 0;

  // Flow state.
  bool synced_ = false;
  bool enabled_ = false;
  uint64_t ip_ = 0;
  ExecMode mode_ = ExecMode::k64Bit;
  // (Arrays in the decoder: a push or pop loads no vector's data pointer.)
  std::array<uint64_t, internal::kRetStackSize> retstack_{};  // a ring
  std::array<uint32_t, internal::kRetStackSize> ret_block_{};  // the block of each call on retstack_ (a cache index)
  uint32_t ret_top_ = 0, ret_count_ = 0;
  // A call pushes its return address `ret` (the IP after the call) and the
  // calling block (a cache index) onto the return-compression ring; a full
  // ring drops its oldest entry (SDM §33.4.2.1).
  void PushReturn(uint64_t ret, uint32_t block) {
    ret_top_ = (ret_top_ + 1) % internal::kRetStackSize;
    retstack_[ret_top_] = ret;
    ret_block_[ret_top_] = block;
    ret_count_ += ret_count_ < internal::kRetStackSize ? 1 : 0;  // (an add, not a branch: calls nest unpredictably)
  }
  uint64_t tnt_bits_ = 0;  // the next bit is bit tnt_count_-1
  uint32_t tnt_count_ = 0;
  LastIp last_ip_;
  bool mode_pending_ = false;
  ExecMode pending_mode_ = ExecMode::k64Bit;
  uint64_t pending_mode_offset_ = 0;

  // The next control packet (TIP, TIP.PGE, TIP.PGD, async FUP, OVF), when read.
  enum class Ctl : uint8_t { kNone, kTip, kTipPge, kTipPgd, kAsync, kAsyncDisable, kOverflow };
  static bool IsAsync(Ctl c) { return c == Ctl::kAsync || c == Ctl::kAsyncDisable; }
  Ctl ctl_ = Ctl::kNone;
  bool ctl_suppressed_ = false;
  uint64_t ctl_ip_ = 0;
  uint64_t ctl_from_ = 0;
  uint64_t ctl_offset_ = 0;

  // The events libipt's instruction decoder has not taken yet (NoteEvent):
  // the first is bound to an IP the flow has not reached; each entry holds
  // that IP (Held::ip), or kUnbound. bound_pending_: there is one; bound_wall_: and more
  // behind it.
  // A PTW's event binds to the PTWRITE instruction at its IP (without one:
  // the next PTWRITE), one at a time (`ptwrite`; ReachBound). An event that `fails` where it goes: a mid-flow
  // PSB+'s MODE.Exec that contradicts the mode (ReadPsbPlus; its offset
  // bad_mode_offset_), a TraceStop while tracing is enabled (bad_is_stop_).
  // bound_from_: the instruction of the block in hand after the last PTW let
  // go there (CheckBound goes on from it).
  static constexpr uint64_t kUnbound = ~uint64_t{0};
  // ptwrite: the event binds to an instruction — a PTW's to the PTWRITE at
  // its IP or the next one; with `binds` 1 or 2 a PIP's or VMCS's (while
  // enabled, not for an asynchronous branch) to the next MOV CR3 / VMPTRLD,
  // VMLAUNCH, VMRESUME or far branch (pt_insn_binds_to_pip, _vmcs).
  struct Held {
    uint64_t ip;
    bool ptwrite;
    bool fails;
    uint8_t binds = 0;
  };
  bool BindsHeld(const Block& b, uint32_t i, uint64_t x, uint8_t binds) const;
  bool AsyncHeldBack() const;
  std::vector<Held> bound_;
  uint32_t bound_from_ = 0;
  uint64_t bad_mode_offset_ = 0;
  bool bad_is_stop_ = false;  // the failing event is a TraceStop's while enabled (at bad_mode_offset_)
  bool bound_pending_ = false;
  bool bound_wall_ = false;
  // The events libipt's query decoder queues for the next FUP (evb_fup;
  // pt_qry_decode_ptw, _exstop, _mode_tsx, _mwait), in order, their IP not
  // yet known: a PTW or EXSTOP with IP=1, a MODE.TSX, an MWAIT. The next FUP
  // (not a PSB+'s) gives each its IP (TakeFupHeld); an OVF or a sync drops
  // them.
  std::vector<FlowEvent> fup_held_;
  // Event Trace (TakeEventTracePacket()): the EVDs read since the last CFE
  // (they add data to the CFE that follows them; their events go with it),
  // and a CFE with its IP bit whose FUP, read, is an asynchronous one: its
  // events (after its EVDs) go right before that FUP's asynchronous branch
  // or disable, where the flow gets to the FUP's IP (QueueEventTraceHeld()).
  std::vector<FlowEvent> evd_held_;
  std::vector<FlowEvent> cfe_held_;

  bool fup_pending_ = false;  // an asynchronous FUP read, its TIP/TIP.PGD not yet (ctl_from_ holds its IP)
  bool fup_cut_ = false;  // the packet after an asynchronous FUP failed to decode (CondJumpPacketError)
  // libipt queues the events bound to the next TIP in order on evb_tip (an
  // asynchronous branch per FUP, an exec-mode event per MODE.Exec) and
  // hands them out one at a time, the TIP consumed with the last:
  // fups_behind_, the IPs of the FUPs read after the first while it waits
  // (each an asynchronous branch from there to the same TIP; NextSlow);
  // mode_at_, how many of the group's FUPs came before the pending
  // MODE.Exec (0: before the first, whose event then binds to the TIP's IP).
  // libipt's event queue holds 6 events per binding (pt_evq_enqueue keeps
  // a gap in its 8 slots): a 7th for the TIP is -pte_nomem (FailTipQueueFull).
  // tip_status_: a PIP or VMCS read while an asynchronous FUP waits
  // (pt_qry_decode_pip, _vmcs: an async-paging/-vmcs event on evb_tip,
  // bound to the TIP's IP), with the number of the group's FUPs before it:
  // it goes right after that FUP's asynchronous branch (ReleaseTipStatus).
  std::vector<uint64_t> fups_behind_;
  uint32_t mode_at_ = 0;
  std::vector<std::pair<uint32_t, FlowEvent>> tip_status_;
  size_t mode_status_ = 0;  // the entries of tip_status_ read before the pending MODE.Exec
  static constexpr size_t kTipQueueMax = 6;
  bool TipQueueFull() const {
    return 1 + fups_behind_.size() + tip_status_.size() + (mode_pending_ ? 1 : 0) > kTipQueueMax;
  }
  void ReleaseTipStatus(bool ip_suppressed);
  int FailTipQueueFull(const Packet& fup);
  bool AsyncModeFirst() const { return mode_pending_ && mode_at_ == 0 && ctl_ == Ctl::kAsync && !ctl_suppressed_; }
  uint64_t AsyncBindIp() const { return AsyncModeFirst() ? ctl_ip_ : ctl_from_; }
  bool have_unread_ = false;
  uint32_t psb_events_ = 0;  // events of the last PSB+ at its PSBEND (ReadPsbPlus)
  Packet unread_;

  std::vector<FlowEvent> events_;
  size_t event_head_ = 0;
  // later_: events waiting, in order, each for what it binds to (`at`):
  // an IP (QueueAt()), a PTWRITE (kAtPtwrite: a PTW's event, which libipt
  // binds to the PTWRITE its instruction decoder meets next — at the PTW's
  // IP, if it has one — and reports after that instruction with its IP,
  // pt_insn_check_insn_event; ReachBound() finds it: ptw_ready_), or nothing
  // (kAtNone: an event queued behind a waiting one). NextSlow() hands them
  // on (ReleaseLater()) as the flow gets there; blocks are cut at the IP
  // the first waits for.
  static constexpr uint64_t kAtNone = 0, kAtPtwrite = 1;
  struct Later {
    uint64_t at;
    FlowEvent event;
  };
  std::vector<Later> later_;
  std::vector<uint64_t> ptw_ready_;  // the PTWRITEs ReachBound() bound held PTW events to, in order
  int deferred_error_ = 0;
  int sticky_error_ = 0;  // a packet error met while reading ahead: reported when a packet is needed
  // The last FetchControl() error is libipt's event query failing (an event
  // packet whose binding packet never comes): libipt asks for the event as
  // soon as its read-ahead stops at the packet, so the error is never held
  // for a later query (ReadAheadError).
  bool event_query_failed_ = false;
  // FetchControl() for an indirect branch while TNT bits are held (Resolve).
  bool tnt_held_ = false;
  bool last_direct_ = false;  // the last block ended with a direct jump or call
  uint32_t steps_without_packet_ = 0;

  // On after a fast step (NextFill(), Enable()) when the state lets the
  // next steps take the TNT bits at hand without reading a packet
  // (WalkReady()): Next() then takes conditional branches, direct jumps,
  // calls and compressed returns along known links inline (WalkInline()),
  // WalkStepAt() and WalkStep() the same where no link leads, and
  // WalkRefill() reads on when the bits run out, exactly as NextFill()
  // would one by one. Off on every other path (NextFill() first thing).
  // The walk is on while walk_gen_ is the image's generation (of
  // walk_image_, the cache's image; SetWalk()): one compare in Next() both
  // tests the flag and that the image has not changed since the walk began.
  // kNoWalk (a generation the image never reaches): off.
  static constexpr uint64_t kNoWalk = ~uint64_t{0};
  const Image* walk_image_;
  uint64_t walk_gen_ = kNoWalk;
  uint32_t walk_key_ = 0;  // Block::EndingKey(mode_, kCondJump) while the walk is on

  // The clean stretch (CleanAhead()): regions of the packets ahead that
  // no read-ahead after a TNT finds fault with, in order. clean_end_: the
  // end of the decoder's sub-interval of the first region, in which
  // QuietAfterTnt() holds after a TNT that ends before it (0: none); it
  // answers only while no event is held (CleanHolds()). Each region starts
  // at the decoder's position or where the PSB+ of `psb` ends, and runs to
  // the PSB at `stop` (kNoPsb: none) or ends early (at `checked`: the
  // packets before it were checked). A FUP, TIP.PGE or TIP.PGD splits a
  // region: its sub-intervals (`sub`, `nsub`) run from one such packet to
  // the next, each vouching for the TNTs before its `end`, past its last
  // stopper; `cur` is the decoder's. psb_at_, psb_end_: the PSB of the last
  // PSB+ the decoder read mid-flow, and where it ended (ReadPsbPlus()).
  // All empty after a sync.
  static constexpr uint64_t kNoPsb = ~uint64_t{0};
  static constexpr size_t kCleanRegions = 4;
  using CleanSub = internal::CleanSub;
  struct CleanRegion : internal::CleanRegionSubs {
    uint64_t start = 0;
    uint64_t checked = 0;
    uint64_t psb = kNoPsb;
    uint64_t stop = kNoPsb;
  };
  bool CleanSubAt(CleanRegion& r, uint64_t at);
  std::array<CleanRegion, kCleanRegions> clean_{};
  uint32_t clean_regions_ = 0;
  uint64_t clean_end_ = 0;
  // Whether the clean stretch answers for the read-ahead after a TNT that
  // ends here: inside the decoder's sub-interval, and no event held (one
  // waiting for a FUP, or for an IP the flow has not reached, changes
  // where the read-ahead stops and what fails it).
  bool CleanHolds() const { return packets_.offset() < clean_end_ && fup_held_.empty() && !bound_pending_; }
  uint64_t psb_at_ = kNoPsb;
  uint64_t psb_end_ = 0;

  FlowTime time_;
  uint64_t tsc_base_ = 0;
  uint64_t tsc_mtc_ = 0;      // the TSC estimate at the last TSC/MTC (CYC adds to it)
  uint64_t cyc_since_ = 0;    // CYC cycles since then
  uint64_t last_mtc_ctc_ = 0;
  bool have_tma_ = false;

  bool end_of_trace_ = false;
  uint64_t error_offset_ = 0;
  uint64_t error_ip_ = 0;
  std::string error_message_;

  // tsc_base_ when the last TMA came, or at the sync: a TMA takes a TSC
  // after that (TakeTma()).
  uint64_t tma_tsc_ = 0;
};

}  // namespace perftest::pt
