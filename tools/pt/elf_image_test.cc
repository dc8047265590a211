// elf_image.h: an ELF file of in-memory code that libelf reads back with
// its code at its addresses, its function symbols and its build id.
#include "tools/pt/elf_image.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <libelf.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "harness/syscall_matchers.h"

namespace perftest::pt {
namespace {

using ::testing::ElementsAre;

// main: call f; ret at 0x401000; f (0x401006): ret.
std::vector<ElfCodeSection> Program() {
  return {{0x401000, {0xe8, 0x01, 0x00, 0x00, 0x00, 0xc3, 0xc3}}};
}

TEST(ElfImage, FunctionsStartAtTheEntryAndEveryDirectCallTarget) {
  EXPECT_THAT(FunctionSymbols(Program(), "mock-task"),
              ElementsAre(ElfSymbol{"mock_task", 0x401000, 6}, ElfSymbol{"mock_task_sub_6", 0x401006, 1}));
}

TEST(ElfImage, WrittenFileHoldsCodeSymbolsAndBuildId) {
  const std::string path = ::testing::TempDir() + "/elf_image_test-" + std::to_string(::getpid()) + ".elf";
  const std::vector<ElfCodeSection> code = Program();
  const std::vector<ElfSymbol> syms = FunctionSymbols(code, "p");
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> id, WriteElfImage(path, code, syms));
  EXPECT_EQ(id.size(), 20u);
  EXPECT_EQ(id, ContentBuildId(code, syms));
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> read, ReadBuildId(path));
  EXPECT_EQ(read, id);

  // The code at ElfCodeOffset(), congruent to its address modulo the page.
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const uint64_t off = ElfCodeOffset(code, 0);
  EXPECT_EQ(off % 4096, 0x401000u % 4096);
  ASSERT_GE(bytes.size(), off + code[0].bytes.size());
  EXPECT_TRUE(std::equal(code[0].bytes.begin(), code[0].bytes.end(), bytes.begin() + static_cast<long>(off)));

  // libelf reads a PT_LOAD at the address and the symbols by name.
  ASSERT_NE(elf_version(EV_CURRENT), EV_NONE);
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  ASSERT_NE(elf, nullptr);
  GElf_Ehdr eh;
  ASSERT_NE(gelf_getehdr(elf, &eh), nullptr);
  EXPECT_EQ(eh.e_type, ET_EXEC);
  EXPECT_EQ(eh.e_machine, EM_X86_64);
  bool load = false;
  for (int i = 0; i < eh.e_phnum; ++i) {
    GElf_Phdr ph;
    ASSERT_NE(gelf_getphdr(elf, i, &ph), nullptr);
    if (ph.p_type == PT_LOAD) {
      load = true;
      EXPECT_EQ(ph.p_vaddr, 0x401000u);
      EXPECT_EQ(ph.p_offset, off);
    }
  }
  EXPECT_TRUE(load);
  std::map<std::string, uint64_t> names;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    gelf_getshdr(scn, &sh);
    if (sh.sh_type != SHT_SYMTAB) continue;
    Elf_Data* d = elf_getdata(scn, nullptr);
    for (size_t i = 1; i < sh.sh_size / sh.sh_entsize; ++i) {
      GElf_Sym s;
      gelf_getsym(d, static_cast<int>(i), &s);
      names[elf_strptr(elf, sh.sh_link, s.st_name)] = s.st_value;
    }
  }
  elf_end(elf);
  ::close(fd);
  EXPECT_EQ(names, (std::map<std::string, uint64_t>{{"p", 0x401000}, {"p_sub_6", 0x401006}}));
  std::filesystem::remove(path);
}

TEST(ElfImage, Errors) {
  EXPECT_THAT(WriteElfImage("/tmp/x.elf", {}, {}), FailsWithErrno(EINVAL));
  const std::vector<ElfCodeSection> overlap = {{0x1000, {0x90, 0x90}}, {0x1001, {0x90}}};
  EXPECT_THAT(WriteElfImage("/tmp/x.elf", overlap, {}), FailsWithErrno(EINVAL));
  EXPECT_THAT(WriteElfImage("/nonexistent-dir/x.elf", Program(), {}), FailsWithErrno(ENOENT));
  EXPECT_THAT(ReadBuildId("/nonexistent-file"), FailsWithErrno(ENOENT));
  EXPECT_THAT(ReadBuildId("/proc/self/status"), FailsWithErrno(ENOEXEC));
}

}  // namespace
}  // namespace perftest::pt
