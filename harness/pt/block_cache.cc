#include "harness/pt/block_cache.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace perftest::pt {

namespace {
constexpr uint32_t kMaxBlockInsns = 4096;
constexpr size_t kMaxInsnBytes = 15;
}  // namespace

void BlockCache::Reset() {
  std::fill(slots_.begin(), slots_.end(), Slot{0, 0, 0});
  std::fill(direct_.begin(), direct_.end(), 0);
  blocks_.clear();
  count_ = 0;
  lengths_.clear();
  generation_ = image_->generation();
}

void BlockCache::GrowDirect() {
  direct_.assign(direct_.size() * 2, 0);
  --direct_shift_;
}

uint32_t BlockCache::FindSlow(uint64_t ip, ExecMode mode) {
  const size_t mask = slots_.size() - 1;
  for (size_t i = Hash(ip) & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.block == 0) break;
    if (s.ip == ip && s.mode == static_cast<uint8_t>(mode)) [[likely]] {
      ++hits_;
      return s.block - 1;
    }
  }
  return Decode(ip, mode);
}

uint32_t BlockCache::Decode(uint64_t ip, ExecMode mode) {
  ++decoded_;
  uint32_t ninsn = 0;
  int error = 0;
  Insn last;
  const uint32_t first_length = static_cast<uint32_t>(lengths_.size());
  uint64_t cur = ip;
  for (;;) {
    std::span<const uint8_t> bytes = image_->Read(cur);
    if (bytes.empty()) {
      error = ENXIO;
      break;
    }
    uint8_t joined[kMaxInsnBytes];
    if (bytes.size() < kMaxInsnBytes) {  // the instruction may continue in the next section
      size_t n = bytes.size();
      std::memcpy(joined, bytes.data(), n);
      while (n < kMaxInsnBytes) {
        std::span<const uint8_t> more = image_->Read(cur + n);
        if (more.empty()) break;
        const size_t take = std::min(more.size(), kMaxInsnBytes - n);
        std::memcpy(joined + n, more.data(), take);
        n += take;
      }
      bytes = std::span<const uint8_t>(joined, n);
    }
    Insn insn;
    const int err = classifier_.ClassifyLenient(bytes, cur, mode, &insn);  // as libipt walks code
    if (err != 0) {
      error = err == ENODATA ? EILSEQ : err;
      break;
    }
    lengths_.push_back(insn.length);
    ++ninsn;
    cur += insn.length;
    last = insn;
    if (insn.ends_block() || insn.branch == BranchClass::kPtwrite || ninsn >= kMaxBlockInsns) break;
  }
  if (error != 0) last.branch = BranchClass::kNone;  // cut before the bad instruction
  Block b;
  b.ip = ip;
  b.lengths = first_length;
  // target = end + rel (rel is the displacement: Insn::target does not wrap).
  if (last.has_target()) b.rel = static_cast<int32_t>(static_cast<uint32_t>(last.target - cur));
  const uint32_t error_code = error == 0 ? 0 : error == ENXIO ? 1 : error == EILSEQ ? 2 : 3;
  b.bytes = static_cast<uint16_t>(cur - ip);
  b.ninsn_ = static_cast<uint16_t>(ninsn);
  b.last_.length = last.length;
  b.last_.branch = last.branch;
  b.last_.far = last.far;
  b.last_.state = static_cast<uint8_t>(static_cast<uint32_t>(mode) | (error_code << 2));
  if (ninsn != 0 && error == 0 && mode != ExecMode::kInvalid) b.last_.state |= Block::kFastBit;
  blocks_.push_back(b);
  count_ = static_cast<uint32_t>(blocks_.size());
  if (count_ > direct_.size() && direct_shift_ > 64 - kDirectMaxBits) GrowDirect();
  const uint32_t index = count_ - 1;

  if (blocks_.size() * 2 > slots_.size()) {  // grow at half load
    std::vector<Slot> old(slots_.size() * 2, Slot{0, 0, 0});
    old.swap(slots_);
    const size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.block == 0) continue;
      size_t i = Hash(s.ip) & mask;
      while (slots_[i].block != 0) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }
  const size_t mask = slots_.size() - 1;
  size_t i = Hash(ip) & mask;
  while (slots_[i].block != 0) i = (i + 1) & mask;
  slots_[i] = Slot{ip, index + 1, static_cast<uint8_t>(mode)};
  return index;
}

}  // namespace perftest::pt
