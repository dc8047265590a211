// The decoded-block cache of the flow decoder: each basic block of an
// Image is decoded with libzydis (insn.h) once and kept, keyed by (IP,
// execution mode), with links to its successor blocks so that a walk
// through already-seen code needs neither decoding nor hashing.
//
//   pt::BlockCache cache(&image);                 // may be shared by decoders of one image
//   uint32_t b = cache.Find(0x401000, pt::ExecMode::k64Bit);
//   const pt::BlockCache::Block& block = cache.block(b);   // ninsn, end, last, error
//   const uint8_t* lengths = cache.lengths(block);         // one per instruction
//
// A block runs from its IP to the first instruction that can change the
// flow (Insn::ends_block()) or PTWRITE, at most 4096 instructions; an
// instruction that cannot be decoded (no image: ENXIO, bad bytes: EILSEQ)
// ends it before that instruction (`error`). Instructions may straddle
// sections. When the image changes (Image::generation()) the cache empties
// itself on the next Find(); indices and references are valid until then
// or until the next Find() that decodes (the vectors may grow).
// Not thread-safe: one cache per thread.
#pragma once

#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "harness/pt/image.h"
#include "harness/pt/insn.h"

namespace perftest::pt {

class BlockCache {
 public:
  // 32 bytes, aligned: two blocks per cache line, and a walk touches one
  // line per block (the working set of a large program stays in L2). Every
  // field the walk reads is a whole byte, word or dword: one load, no
  // shifting.
  struct alignas(32) Block {
    static constexpr uint32_t kLastWordMask = 0x03ffffff;  // (little-endian: the state's mode bits)
    uint64_t ip = 0;
    // Successor links (block index + 1, 0 = not known yet): [0] the block at
    // end() (fall-through, not-taken), [1] the block at the taken target of
    // a direct branch, or the last target of a return/indirect branch (a
    // guess the decoder checks). Same mode.
    uint32_t next[2] = {0, 0};
    uint32_t lengths = 0;  // offset of the instruction lengths in the pool
    int32_t rel = 0;       // direct branches: target - end(), the displacement
    uint16_t bytes = 0;    // end() - ip (at most 4096 instructions of 15 bytes)
    uint16_t ninsn_ = 0;
    // The last instruction's length, branch class and far kind, and the
    // block's state, in Insn's order of its length, branch, far and mode:
    // StoreLast() (flow_decoder.h) copies them as one word (LastWord()).
    // state: mode:2 error:2 (0, ENXIO, EILSEQ, EINVAL) fast:1 — kFastBit: at
    // least one instruction, no decode error, a valid mode; what the
    // decoder's fast path checks, with the mode, in one compare (FastState()).
    struct Last {
      uint8_t length = 0;
      BranchClass branch = BranchClass::kNone;
      FarKind far = FarKind::kNone;
      uint8_t state = 0;
    } last_;
    static constexpr uint8_t kFastBit = 0x10;
    static constexpr uint8_t FastState(ExecMode mode) { return static_cast<uint8_t>(mode) | kFastBit; }
    // True if fast() and in `mode`.
    bool fast_in(ExecMode mode) const { return (last_.state & (kFastBit | 0x3)) == FastState(mode); }
    bool fast() const { return (last_.state & kFastBit) != 0; }
    // fast_in(mode) and branch() == branch, in one compare of last_:
    // (LastState() & kEndingMask) == EndingKey(mode, branch). With
    // kDirectMask, EndingKey(mode, kDirectJump) also takes kDirectCall.
    static constexpr uint32_t kEndingMask = 0x1300ff00;
    static constexpr uint32_t kDirectMask = 0x1300fe00;
    static_assert(static_cast<uint8_t>(BranchClass::kDirectJump) == 2 &&
                  static_cast<uint8_t>(BranchClass::kDirectCall) == 3);
    static constexpr uint32_t EndingKey(ExecMode mode, BranchClass branch) {
      return (static_cast<uint32_t>(FastState(mode)) << 24) | (static_cast<uint32_t>(branch) << 8);
    }
    uint32_t LastState() const {
      uint32_t w;
      std::memcpy(&w, &last_, sizeof w);
      return w;
    }
    bool fast_in_ending(ExecMode mode, BranchClass branch) const {
      return (LastState() & kEndingMask) == EndingKey(mode, branch);
    }

    uint32_t ninsn() const { return ninsn_; }
    uint8_t last_length() const { return last_.length; }
    BranchClass branch() const { return last_.branch; }
    FarKind far() const { return last_.far; }
    ExecMode mode() const { return static_cast<ExecMode>(last_.state & 0x3); }
    bool has_error() const { return (last_.state & 0xc) != 0; }
    // last_ as Insn's bytes length, branch, far, mode (the state's error and
    // fast bits cleared), to be copied there in one store.
    uint32_t LastWord() const {
      uint32_t w;
      std::memcpy(&w, &last_, sizeof w);
      return w & kLastWordMask;
    }
    // 0, or why the instruction at end() is not in the block: ENXIO (no
    // image), EILSEQ (not an instruction).
    int error() const {
      static constexpr int kErrors[] = {0, ENXIO, EILSEQ, EINVAL};
      return kErrors[(last_.state >> 2) & 0x3];
    }
    uint64_t end() const { return ip + bytes; }
    uint64_t target() const { return end() + static_cast<uint64_t>(static_cast<int64_t>(rel)); }
    // The last instruction (kNone if the block was cut).
    Insn last() const {
      Insn x;
      x.length = last_length();
      x.ip = end() - x.length;
      x.branch = branch();
      x.far = far();
      x.mode = mode();
      if (x.has_target()) x.target = target();
      return x;
    }
  };
  static_assert(sizeof(Block) == 32);
  static_assert(sizeof(Block::Last) == 4);
  static_assert(std::endian::native == std::endian::little);  // (LastWord(), fast_in_ending(): byte i is bits 8i..8i+7)

  explicit BlockCache(const Image* image) : image_(image), direct_(size_t{1} << kDirectMinBits, 0) {
    slots_.resize(1024);
  }

  // The index of the block at (ip, mode), decoding it on a miss. Call
  // CheckGeneration() first when the image may have changed.
  //
  // A direct-mapped table of recently found blocks (32 KiB, mostly
  // L1-resident, growing with the blocks to 512 KiB: DirectIndex()) sits in
  // front of the hash table, whose slots are spread over megabytes for a
  // large program: a hit there costs one load of the block, which the
  // caller needs anyway.
  uint32_t Find(uint64_t ip, ExecMode mode) {
    const uint64_t d = direct_[DirectIndex(ip)];
    // The entry's tag (IP bits 31:0) must match before the block is loaded.
    if ((d >> 32) == (ip & 0xffffffff) && static_cast<uint32_t>(d) != 0) {
      const uint32_t index = static_cast<uint32_t>(d) - 1;
      const Block& b = blocks_[index];
      if (b.ip == ip && b.mode() == mode) [[likely]] {
        ++hits_;
        return index;
      }
    }
    const uint32_t index = FindSlow(ip, mode);
    direct_[DirectIndex(ip)] = (ip << 32) | (index + 1);  // (after FindSlow(): a decode may grow the table)
    return index;
  }
  // Find()'s direct-mapped entry for `ip`, without a lookup further: the
  // block (index + 1) that it last found there, or 0 — a hint to be
  // checked (IP and mode) before use. PrefetchDirect() starts loading that
  // entry (for a DirectHint() of `ip` some work later: the entries of
  // indirect branch targets are mostly far from the cache).
  void PrefetchDirect(uint64_t ip) const { __builtin_prefetch(&direct_[DirectIndex(ip)]); }
  uint32_t DirectHint(uint64_t ip) const {
    const uint64_t d = direct_[DirectIndex(ip)];
    return (d >> 32) == (ip & 0xffffffff) ? static_cast<uint32_t>(d) : 0;
  }
  // True if the image changed since the last CheckGeneration() (which will
  // then empty the cache).
  bool Stale() const { return image_->generation() != generation_; }
  // Empties the cache if the image changed since the last call; true if it did.
  bool CheckGeneration() {
    if (image_->generation() == generation_) [[likely]] return false;
    Reset();
    return true;
  }

  const Block& block(uint32_t index) const { return blocks_[index]; }
  // Starts loading the block of a successor link (index + 1); a no-op for
  // 0, without a branch (a prefetch of any address is harmless).
  void Prefetch(uint32_t link) const {
    const uintptr_t base = reinterpret_cast<uintptr_t>(blocks_.data());
    __builtin_prefetch(reinterpret_cast<const void*>(base + (uintptr_t{link} - 1) * sizeof(Block)));
  }
  Block& block(uint32_t index) { return blocks_[index]; }
  const uint8_t* lengths(const Block& b) const { return lengths_.data() + b.lengths; }
  // The instruction lengths of all blocks (Block::lengths is an offset in it).
  const uint8_t* lengths_data() const { return lengths_.data(); }
  size_t size() const { return blocks_.size(); }
  // size() as one load (kept beside the vector): the flow decoder checks
  // the hint of each block it walks to against it.
  uint32_t count() const { return count_; }
  const Image* image() const { return image_; }

  uint64_t decoded() const { return decoded_; }  // blocks decoded (misses)
  uint64_t hits() const { return hits_; }        // Find() hits

 private:
  uint32_t FindSlow(uint64_t ip, ExecMode mode);
  uint32_t Decode(uint64_t ip, ExecMode mode);
  void Reset();
  static size_t Hash(uint64_t ip) { return static_cast<size_t>((ip * 0x9e3779b97f4a7c15ull) >> 40); }
  // The direct-mapped table has 2^12 entries (32 KiB) to start with, and
  // doubles (emptied: it is only a cache) while the blocks outnumber its
  // entries, up to 2^16 (512 KiB): a program with tens of thousands of
  // blocks, of which an indirect branch's targets are many, finds most of
  // them there. (Its entries are the IPs' hash, the top bits.)
  static constexpr unsigned kDirectMinBits = 12, kDirectMaxBits = 16;
  size_t DirectIndex(uint64_t ip) const { return static_cast<size_t>((ip * 0x9e3779b97f4a7c15ull) >> direct_shift_); }
  void GrowDirect();

  struct Slot {
    uint64_t ip;
    uint32_t block;  // index + 1; 0 = empty
    uint8_t mode;
  };
  const Image* image_;
  InsnClassifier classifier_;
  std::vector<uint64_t> direct_;  // by DirectIndex(ip): IP[31:0] << 32 | block index + 1 (0 = empty)
  unsigned direct_shift_ = 64 - kDirectMinBits;  // 64 - log2(direct_.size())
  std::vector<Slot> slots_;
  std::vector<Block> blocks_;
  std::vector<uint8_t> lengths_;
  uint32_t count_ = 0;  // blocks_.size()
  uint64_t generation_ = ~uint64_t{0};
  uint64_t decoded_ = 0;
  uint64_t hits_ = 0;
};

}  // namespace perftest::pt
