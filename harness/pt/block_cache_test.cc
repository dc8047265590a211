// BlockCache: blocks found by (IP, mode), decoded once; the direct-mapped
// table in front of the hash table grows with the blocks (block_cache.h).
#include "harness/pt/block_cache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "harness/pt/testing/spec.h"

namespace perftest::pt {
namespace {

constexpr uint64_t kBase = 0x401000;

// 20000 RETs: each byte a block of its own — more blocks than the
// direct-mapped table's first 4096 entries, so that it grows (emptied)
// while they are found, and again past 8192 and 16384.
TEST(BlockCache, FindsEveryBlockOnceAcrossTheDirectTablesGrowth) {
  testing::Spec("pt.block_cache.find", "block_cache.h Find(): decoded once, then found");
  constexpr uint64_t kBlocks = 20000;
  Image image;
  ASSERT_TRUE(image.AddBlob(kBase, std::vector<uint8_t>(kBlocks, 0xc3)).ok());
  BlockCache cache(&image);
  ASSERT_TRUE(cache.CheckGeneration());  // (a new cache: empties itself once)
  std::vector<uint32_t> index(kBlocks);
  for (uint64_t i = 0; i < kBlocks; ++i) {
    index[i] = cache.Find(kBase + i, ExecMode::k64Bit);
    ASSERT_LT(index[i], cache.size());
    const BlockCache::Block& b = cache.block(index[i]);
    EXPECT_EQ(b.ip, kBase + i);
    EXPECT_EQ(b.ninsn(), 1u);
    EXPECT_EQ(b.branch(), BranchClass::kReturn);
  }
  EXPECT_EQ(cache.decoded(), kBlocks);
  // Found again, in another order (the table's entries and the hash
  // table's slots both answer): the same blocks, none decoded again.
  for (uint64_t k = 0; k < 3; ++k) {
    for (uint64_t j = 0; j < kBlocks; ++j) {
      const uint64_t i = (j * 7919 + k) % kBlocks;
      EXPECT_EQ(cache.Find(kBase + i, ExecMode::k64Bit), index[i]) << "block " << i;
      EXPECT_EQ(cache.DirectHint(kBase + i), index[i] + 1) << "block " << i;  // (just found: in the table)
    }
  }
  EXPECT_EQ(cache.decoded(), kBlocks);
  // Another mode is another block.
  const uint32_t other = cache.Find(kBase, ExecMode::k32Bit);
  EXPECT_NE(other, index[0]);
  EXPECT_EQ(cache.block(other).mode(), ExecMode::k32Bit);
  EXPECT_EQ(cache.decoded(), kBlocks + 1);
}

}  // namespace
}  // namespace perftest::pt
