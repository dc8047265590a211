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

#include <cstdint>
#include <vector>

#include "harness/pt/image.h"
#include "harness/pt/insn.h"

namespace perftest::pt {

class BlockCache {
 public:
  // One cache line each: a walk touches one line per block.
  struct alignas(64) Block {
    uint64_t ip = 0;
    uint64_t end = 0;      // the byte after the last instruction
    uint32_t ninsn = 0;
    uint32_t lengths = 0;  // offset of the lengths in the pool
    // Successor links (block index + 1, 0 = not known yet): [0] the block at
    // `end` (fall-through, not-taken), [1] the block at last.target (taken
    // direct branch). Same mode.
    uint32_t next[2] = {0, 0};
    int error = 0;         // 0, or why the instruction at `end` is not in the block
    ExecMode mode = ExecMode::k64Bit;
    Insn last;             // the last instruction (kNone if the block was cut)
  };

  explicit BlockCache(const Image* image) : image_(image) { slots_.resize(1024); }

  // The index of the block at (ip, mode), decoding it on a miss. Call
  // CheckGeneration() first when the image may have changed.
  uint32_t Find(uint64_t ip, ExecMode mode);
  // Empties the cache if the image changed since the last call; true if it did.
  bool CheckGeneration();

  const Block& block(uint32_t index) const { return blocks_[index]; }
  Block& block(uint32_t index) { return blocks_[index]; }
  const uint8_t* lengths(const Block& b) const { return lengths_.data() + b.lengths; }
  size_t size() const { return blocks_.size(); }
  const Image* image() const { return image_; }

  uint64_t decoded() const { return decoded_; }  // blocks decoded (misses)
  uint64_t hits() const { return hits_; }        // Find() hits

 private:
  uint32_t Decode(uint64_t ip, ExecMode mode);
  static size_t Hash(uint64_t ip) { return static_cast<size_t>((ip * 0x9e3779b97f4a7c15ull) >> 40); }

  struct Slot {
    uint64_t ip;
    uint32_t block;  // index + 1; 0 = empty
    uint8_t mode;
  };
  const Image* image_;
  InsnClassifier classifier_;
  std::vector<Slot> slots_;
  std::vector<Block> blocks_;
  std::vector<uint8_t> lengths_;
  uint64_t generation_ = ~uint64_t{0};
  uint64_t decoded_ = 0;
  uint64_t hits_ = 0;
};

}  // namespace perftest::pt
