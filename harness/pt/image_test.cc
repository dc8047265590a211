// Image: blobs, file ranges, MMAP records, shadowing of overlaps.
#include "harness/pt/image.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

namespace perftest::pt {
namespace {

std::vector<uint8_t> Bytes(size_t n, uint8_t first) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(first + i);
  return v;
}

TEST(Image, ReadsToTheEndOfTheSection) {
  Image image;
  ASSERT_TRUE(image.AddBlob(0x1000, Bytes(16, 0)).ok());
  EXPECT_EQ(image.Read(0x1000).size(), 16u);
  EXPECT_EQ(image.Read(0x100f).size(), 1u);
  EXPECT_EQ(image.Read(0x100f)[0], 15);
  EXPECT_TRUE(image.Read(0x1010).empty());
  EXPECT_TRUE(image.Read(0xfff).empty());
}

TEST(Image, LaterSectionsShadowWhatTheyOverlap) {
  Image image;
  ASSERT_TRUE(image.AddBlob(0x1000, Bytes(0x100, 0)).ok());
  const uint64_t gen = image.generation();
  ASSERT_TRUE(image.AddBlob(0x1040, Bytes(0x10, 0xa0)).ok());
  EXPECT_GT(image.generation(), gen);
  ASSERT_EQ(image.sections().size(), 3u);  // below, the new one, above
  EXPECT_EQ(image.Read(0x103f).size(), 1u);
  EXPECT_EQ(image.Read(0x1040)[0], 0xa0);
  EXPECT_EQ(image.Read(0x1050)[0], 0x50);  // the old bytes above, at their own offset
  EXPECT_EQ(image.Read(0x1050).size(), 0xb0u);
}

TEST(Image, FilesAndMmapRecords) {
  char path[] = "/tmp/perftest-image-test-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::vector<uint8_t> content = Bytes(0x3000, 0);
  ASSERT_EQ(write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
  close(fd);

  Image image;
  ASSERT_TRUE(image.AddFile(path, 0x1000, 0x800, 0x400000).ok());
  EXPECT_EQ(image.Read(0x400000).size(), 0x800u);
  EXPECT_EQ(image.Read(0x400000)[0], static_cast<uint8_t>(0x1000 & 0xff));
  EXPECT_EQ(image.Read(0x400001)[0], 1);
  // MMAP: len past the end of the file is cut to it; pgoff is in bytes.
  ASSERT_TRUE(image.AddMmap(path, 0x7f0000000000, 0x10000, 0x2000).ok());
  EXPECT_EQ(image.Read(0x7f0000000000).size(), 0x1000u);
  EXPECT_EQ(image.AddMmap("[vdso]", 0x7fff0000, 0x1000, 0).error(), ENOENT);
  EXPECT_EQ(image.AddMmap("//anon", 0x7fff0000, 0x1000, 0).error(), ENOENT);
  EXPECT_EQ(image.AddFile(path, 0x3000, 0, 0).error(), EINVAL);  // offset at the end
  unlink(path);
  EXPECT_EQ(image.AddFile(path, 0, 0, 0).error(), ENOENT);
}

TEST(Image, BadBlobs) {
  Image image;
  EXPECT_EQ(image.AddBlob(0x1000, {}).error(), EINVAL);
  EXPECT_EQ(image.AddBlob(~uint64_t{0} - 3, Bytes(16, 0)).error(), EINVAL);
}

}  // namespace
}  // namespace perftest::pt
