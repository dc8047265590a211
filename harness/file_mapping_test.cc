// Unit tests of harness/file_mapping.h: maps lines as fs/proc/task_mmu.c
// show_map_vma() prints them, and this process's own maps.
#include "harness/file_mapping.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "harness/syscall_matchers.h"
#include "harness/workload.h"

namespace perftest {
namespace {

constexpr char kMaps[] =
    "555555554000-555555556000 r--p 00000000 fd:01 1311  /usr/bin/cat\n"
    "555555556000-55555555a000 r-xp 00002000 fd:01 1311  /usr/bin/cat\n"
    "7ffff7fc1000-7ffff7fc5000 r--p 00000000 00:00 0                          [vvar]\n"
    "7ffff7ff0000-7ffff7ff1000 r-xp 00001000 103:02 42 /tmp/a file (deleted)\n";

TEST(FileMapping, ParsesEveryField) {
  std::optional<MapsLine> m = ParseMapsLine("555555556000-55555555a000 r-xp 00002000 fd:01 1311  /usr/bin/cat");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->start, 0x555555556000u);
  EXPECT_EQ(m->end, 0x55555555a000u);
  EXPECT_EQ(m->perms, "r-xp");
  EXPECT_EQ(m->offset, 0x2000u);
  EXPECT_EQ(m->dev, makedev(0xfd, 1));
  EXPECT_EQ(m->inode, 1311u);
  EXPECT_EQ(m->path, "/usr/bin/cat");
  std::optional<MapsLine> anon = ParseMapsLine("7ffff7fc1000-7ffff7fc5000 rw-p 00000000 00:00 0 ");
  ASSERT_TRUE(anon.has_value());
  EXPECT_EQ(anon->path, "");
  EXPECT_FALSE(ParseMapsLine("not a maps line").has_value());
  EXPECT_FALSE(ParseMapsLine("1000-2000 r-xp 0 fd:01").has_value()) << "no inode";
}

TEST(FileMapping, OffsetIsAddressMinusStartPlusPgoff) {
  ASSERT_OK_AND_ASSIGN(FileLocation at, FileLocationIn(kMaps, 0x555555556abc));
  EXPECT_EQ(at.path, "/usr/bin/cat");
  EXPECT_EQ(at.offset, 0x2abcu);
  EXPECT_EQ(at.inode, 1311u);
  ASSERT_OK_AND_ASSIGN(FileLocation deleted, FileLocationIn(kMaps, 0x7ffff7ff0010));
  EXPECT_EQ(deleted.path, "/tmp/a file (deleted)") << "a path with a space";
  EXPECT_EQ(deleted.dev, makedev(0x103, 2));
  EXPECT_EQ(deleted.offset, 0x1010u);
}

TEST(FileMapping, NoMappingOrNoFile) {
  EXPECT_THAT(FileLocationIn(kMaps, 0x1000), FailsWithErrno(ENOENT));
  EXPECT_THAT(FileLocationIn(kMaps, 0x55555555a000), FailsWithErrno(ENOENT)) << "end is exclusive";
  EXPECT_THAT(FileLocationIn(kMaps, 0x7ffff7fc1000), FailsWithErrno(ENXIO)) << "[vvar] maps no file";
}

TEST(FileMapping, ThisProcessMapsTheExecuteTargetFromItsFile) {
  ASSERT_OK_AND_ASSIGN(FileLocation at, FileLocationOf(ExecuteTargetAddress()));
  struct stat st {};
  ASSERT_EQ(::stat(at.path.c_str(), &st), 0) << at.path;
  EXPECT_EQ(st.st_ino, at.inode);
  EXPECT_EQ(st.st_dev, at.dev);
  EXPECT_LT(at.offset, static_cast<uint64_t>(st.st_size));
}

}  // namespace
}  // namespace perftest
