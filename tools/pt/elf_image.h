// ELF files for code that exists only in memory — the mock's simulated
// programs (mocks/pt_sim) — so that perf, reading a `perftest pt record`
// perf.data, finds the code an MMAP2 record names and resolves its
// functions by name; and the build id of an ELF file on disk (the MMAP2
// files of a kernel recording), for perf.data's HEADER_BUILD_ID.
//
//   std::vector<ElfSymbol> syms = FunctionSymbols(sections, "mock-task");
//   Result<std::vector<uint8_t>> id = WriteElfImage("t.data.mock-task.elf", sections, syms);
//   Result<std::vector<uint8_t>> id2 = ReadBuildId("/usr/bin/ls");
//
// The file (written with libelf, elfutils): ELF64 little endian, ET_EXEC,
// EM_X86_64; one PT_LOAD (R+X) per code section at its address, its bytes at
// a file offset congruent to the address modulo 4 KiB (the page a loader
// maps: MMAP2's pgoff is that offset rounded down to the page); a
// .note.gnu.build-id (NT_GNU_BUILD_ID, also a PT_NOTE) and .symtab/.strtab
// with one STT_FUNC per symbol. perf (tools/perf/util/symbol-elf.c) reads
// the symbols of an ET_EXEC file at their addresses and its code through
// the mapping's pgoff. The build id is 20 bytes of a content hash (three
// FNV-1a-64 passes over the addresses, code and symbols), not ld's SHA-1:
// any bytes are a valid build id, and equal content gives equal ids.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "harness/result.h"

namespace perftest::pt {

struct ElfCodeSection {
  uint64_t address = 0;
  std::vector<uint8_t> bytes;
};

struct ElfSymbol {
  std::string name;
  uint64_t address = 0;
  uint64_t size = 0;
  bool operator==(const ElfSymbol&) const = default;
};

// The functions of `sections` as a linear sweep of its instructions finds
// them (pt::InsnClassifier): the first section's first byte and every
// direct CALL target inside the sections start one; each runs to the next
// start or its section's end. Names: the program's `name` (non-identifier
// characters as '_') for the entry function, NAME_sub_OFFSET (hex, from the
// first section) for the others — the simulated programs carry no names of
// their own. Bytes that do not decode end the sweep of their section.
std::vector<ElfSymbol> FunctionSymbols(std::span<const ElfCodeSection> sections, const std::string& name);

// The 20-byte build id WriteElfImage() gives these contents.
std::vector<uint8_t> ContentBuildId(std::span<const ElfCodeSection> sections, std::span<const ElfSymbol> symbols);

// Writes the ELF file at `path` (mode 0644, replaced if it exists) and
// returns its build id. Errors: EINVAL, no sections or overlapping ones;
// the errno of open(2); EIO with libelf's message when libelf fails.
Result<std::vector<uint8_t>> WriteElfImage(const std::string& path, std::span<const ElfCodeSection> sections,
                                           std::span<const ElfSymbol> symbols);

// The NT_GNU_BUILD_ID note's bytes of the ELF file at `path` (its SHT_NOTE
// sections, else its PT_NOTE segments). Errors: the errno of open(2);
// ENOEXEC, not an ELF file; ENOENT, no build id note.
Result<std::vector<uint8_t>> ReadBuildId(const std::string& path);

// The file offset WriteElfImage() gives section `index`'s first byte.
uint64_t ElfCodeOffset(std::span<const ElfCodeSection> sections, size_t index);

}  // namespace perftest::pt
