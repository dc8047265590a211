#include "tools/exec/sampler.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace perftest::exec {
namespace {

TEST(ParseMapsLine, FileAndAnonymousMappings) {
  std::optional<Mapping> m =
      ParseMapsLine("55d0c6a00000-55d0c6a21000 r-xp 00002000 fe:01 1835081                    /usr/bin/true");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->start, 0x55d0c6a00000u);
  EXPECT_EQ(m->end, 0x55d0c6a21000u);
  EXPECT_EQ(m->pgoff, 0x2000u);
  EXPECT_TRUE(m->exec);
  EXPECT_EQ(m->maj, 0xfeu);
  EXPECT_EQ(m->min, 1u);
  EXPECT_EQ(m->ino, 1835081u);
  EXPECT_EQ(m->path, "/usr/bin/true");
  std::optional<Mapping> a = ParseMapsLine("7ffd1000-7ffd2000 rw-p 00000000 00:00 0 ");
  ASSERT_TRUE(a.has_value());
  EXPECT_FALSE(a->exec);
  EXPECT_EQ(a->path, "//anon");
  EXPECT_FALSE(ParseMapsLine("garbage").has_value());
}

TEST(MappingScanner, ReportsEachExecutableMappingOnce) {
  MappingScanner s;
  std::vector<Mapping> first = s.NewExecutable(getpid());
  ASSERT_FALSE(first.empty());
  bool self = false;
  for (const Mapping& m : first) self |= m.path.find("exec_test") != std::string::npos;
  EXPECT_TRUE(self) << "this test binary's text is an executable mapping";
  EXPECT_TRUE(s.NewExecutable(getpid()).empty());
  const auto here = reinterpret_cast<uint64_t>(&ParseMapsLine);
  EXPECT_TRUE(s.Known(getpid(), here));
  EXPECT_FALSE(s.Known(getpid() + 1, here));
  EXPECT_FALSE(s.Known(getpid(), 0));
}

// A chain of frames built with frame pointers (this file is compiled with
// -fno-omit-frame-pointer): the walk from the innermost frame finds each
// caller's return address, innermost first.
__attribute__((noinline)) size_t Inner(std::vector<uint64_t>* callers, uint64_t* ret) {
  *ret = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  const auto rbp = reinterpret_cast<uint64_t>(__builtin_frame_address(0));
  const size_t n = WalkFramePointers(getpid(), rbp, 16, callers);
  asm volatile("" ::: "memory");
  return n;
}
__attribute__((noinline)) size_t Outer(std::vector<uint64_t>* callers, uint64_t* inner_ret, uint64_t* outer_ret) {
  *outer_ret = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  const size_t n = Inner(callers, inner_ret);
  asm volatile("" ::: "memory");
  return n;
}

TEST(WalkFramePointers, FindsTheCallersReturnAddresses) {
  std::vector<uint64_t> callers;
  uint64_t inner_ret = 0, outer_ret = 0;
  const size_t n = Outer(&callers, &inner_ret, &outer_ret);
  ASSERT_GE(n, 2u);
  EXPECT_EQ(callers[0], inner_ret);  // into Outer
  EXPECT_EQ(callers[1], outer_ret);  // into this test
  std::vector<uint64_t> none;
  EXPECT_EQ(WalkFramePointers(getpid(), 0, 16, &none), 0u);
  EXPECT_EQ(WalkFramePointers(getpid(), 8, 16, &none), 0u);  // unreadable
}

}  // namespace
}  // namespace perftest::exec
